"""The board top and its constraint files: pins only from the board file, every top port
constrained, PLL settings within the datasheet limits, Verilator lint, golden files
(``OPTNET_UPDATE_GOLDEN=1`` rewrites them)."""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from optnet.devices.plls import PLL_LIMITS
from optnet.emit.board import board_top_files, top_module
from optnet.emit.constraints import constraint_files
from optnet.emit.hdl import one_per_role, write_files
from optnet.hw.board import network_ports
from optnet.plan import plan as plan_hw
from optnet.plan.clocks import (
    AT_MOST_TOLERANCE,
    TOLERANCE,
    ClockRequest,
    PllError,
    clock_plan,
    solve_pll,
    speed_grade,
)
from optnet.plan.pins import (
    INTEL_TCK_PORT,
    board_pins,
    clock_constraints,
    constraint_format,
    top_ports,
)
from optnet.units import Dimension, parse_quantity

from .conftest import ROOT, UPDATE_GOLDEN, linted_example, role_files
from .hwtools import lint_verilog

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
GOLDEN = Path(__file__).resolve().parent / "golden" / "constraints"
MHZ = 1_000_000


@functools.cache
def _roles(stem: str):
    """(plan, board) of one node per hardware role of example ``stem``."""
    result = linted_example(stem)
    boards = {node.name: node.board for node in result.routed.cluster.nodes}
    return tuple((p, boards[p.node]) for p in one_per_role(plan_hw(result.routed)))


def _board_pins(board) -> set[str]:
    """Every pin and site the board file names."""
    pins = set()
    for clock in board.clocks.values():
        pins |= {clock.pin, clock.p, clock.n}
    if board.leds:
        pins |= set(board.leds.pins)
    if board.uart:
        pins |= {board.uart.tx, board.uart.rx}
    for port in board.ports.values():
        if port.refclk:
            pins |= {port.refclk.p, port.refclk.n, port.refclk.site}
        if port.clock:
            pins |= {port.clock.tx_p, port.clock.tx_n, port.clock.rx_p, port.clock.rx_n}
        for lane in port.lanes:
            pins |= {lane.site, lane.tx_p, lane.tx_n, lane.rx_p, lane.rx_n}
    return pins - {None}


def _verilog_ports(verilog: str, module: str) -> dict[str, tuple[str, int]]:
    """name -> (direction, width) of ``module``'s ports, from its header and declarations."""
    start = verilog.index(f"module {module}(")
    body = verilog[start:verilog.index("endmodule", start)]
    names = [n.strip() for n in body[body.index("(") + 1:body.index(");")].split(",")]
    ports = {}
    for m in re.finditer(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", body, re.M):
        ports[m.group(3)] = (m.group(1), int(m.group(2) or 0) + 1)
    assert set(names) == set(ports), "every port in the header is declared"
    return ports


# What each constraint format's location assignments look like: (port, pin).
_LOCATIONS = {
    "xdc": re.compile(r"^set_property -dict \{PACKAGE_PIN ([^\s}]+)[^}]*\} "
                      r"\[get_ports (\{[^}]+\}|\w+)\]", re.M),
    "ucf": re.compile(r'^NET "([\w<>]+)" LOC = "(\S+)"', re.M),
    "qsf": re.compile(r"^set_location_assignment PIN_(\S+) -to (\S+)", re.M),
    "lpf": re.compile(r'^LOCATE COMP "(\S+)" SITE "(\S+)";', re.M),
}


def _locations(fmt: str, text: str) -> dict[str, str]:
    """Port bit (``name`` or ``name[i]``) -> pin, for the location assignments of ``text``."""
    out = {}
    for m in _LOCATIONS[fmt].finditer(text):
        if fmt in ("xdc", "qsf"):
            pin, port = m.group(1), m.group(2).strip("{}")
        else:
            port, pin = m.group(1), m.group(2)
        port = re.sub(r"<(\d+)>$", r"[\1]", port)
        assert port not in out, f"{port} is placed twice"
        out[port] = pin
    return out


def _bit(name: str, index: int | None) -> str:
    return name if index is None else f"{name}[{index}]"


@pytest.mark.parametrize("example", [e.stem for e in EXAMPLES])
def test_constraints_place_every_top_port_with_board_pins(example):
    for plan, board in _roles(example):
        files = constraint_files(plan, board)
        top = board_top_files(plan, board)[f"rtl/{top_module(plan)}.v"]
        ports = _verilog_ports(top, top_module(plan))
        bits = {_bit(n, None if w == 1 else i) for n, (_, w) in ports.items() for i in range(w)}
        assignments = board_pins(plan, board)
        # board_pins accounts for exactly the top's ports, bit by bit.
        assert {_bit(a.port, a.index) for a in assignments} == bits
        expected = {_bit(a.port, a.index): a.pin for a in assignments if a.pin}
        missing = {_bit(a.port, a.index) for a in assignments if not a.pin}
        allowed = _board_pins(board)
        fmt = constraint_format(board)
        main = files[f"constraints/{plan.node}.{fmt}"]
        placed = _locations(fmt, main)
        assert placed == expected, f"{example}/{plan.node}: locations differ from the board"
        assert set(placed.values()) <= allowed
        assert set(placed) <= bits
        for bit in missing:
            shown = bit if fmt != "ucf" else re.sub(r"\[(\d+)\]$", r"<\1>", bit)
            assert re.search(rf"^# (NET \")?{re.escape(shown)}", main, re.M) or \
                re.search(rf"^# \{{?{re.escape(shown)}", main, re.M), \
                f"{example}/{plan.node}: {bit} has no pin and no comment saying so"
        # Sites named in comments are the board's too.
        for text in files.values():
            for site in re.findall(r"\b(GT\w+_CHANNEL_X\d+Y\d+|GTP_DUAL_\w+|DCU\d_CH\d)\b",
                                   text):
                assert site in allowed, f"{example}: site {site} is not in the board file"
            # Clocks are created on ports the top has (or Quartus adds: the device's TCK).
            for port in re.findall(r"get_ports \{?(\w+)\}?\]", text):
                assert port in ports or port == INTEL_TCK_PORT
            for port in re.findall(r'^(?:FREQUENCY PORT|NET) "(\w+)"', text, re.M):
                if not port.endswith("_clk") and port != "clk":
                    assert port in ports, f"{port} is not a port of the top"


def test_every_board_with_leds_gets_an_led_port():
    plan, board = _roles("ulx3s_ring4")[0]
    led = next(tp for tp in top_ports(plan, board) if tp.name == "led")
    assert led.width == 8 and led.pins[0] == "B2" and led.iostandard == "LVCMOS33"
    assert "LOCATE COMP \"led[7]\" SITE \"H3\";" in constraint_files(plan, board)[
        "constraints/n0.lpf"]


def test_shared_reference_clock_is_one_port():
    # zc706's sfp0 and sma share the Si5324 reference clock pins AC8/AC7.
    plan, board = _roles("plasticnet_ring4")[0]
    names = [tp.name for tp in top_ports(plan, board) if tp.kind == "refclk"]
    assert names == ["sfp0_refclk_p", "sfp0_refclk_n"]


def test_board_clock_choice():
    # The clock at the network frequency first, then 'sys', then none at all.
    assert clock_plan(*_roles("bluedbm_20")[0]).board_clock == "user"
    cp = clock_plan(*_roles("plasticnet_ring4")[0])
    assert cp.board_clock == "sys" and cp.init_source == "pll"
    cp = clock_plan(*_roles("cuscomnet_torus16")[0])
    assert cp.board_clock is None and cp.ref_hz == 100 * MHZ
    assert "lists no clock" in cp.notes[0]
    assert cp.init_source == "board"


def test_clock_plan_feeds_the_quartus_script():
    cp = clock_plan(*_roles("optweb_4")[0])
    assert cp.pll.kind == "IOPLL" and cp.iopll is not None
    assert cp.refclk_hz == 200 * MHZ
    assert [name for name, _ in cp.outputs] == ["net", "init", "sl3_0"]
    assert cp.iopll.parameters["gui_output_clock_frequency0"] == "200.0"
    assert cp.init_clk_hz == 100 * MHZ
    # Two GXT lanes per port: one ATX PLL each, on its GXT output.
    assert [(t.port, t.instances, t.output_port) for t in cp.tx_plls] == [
        (1, 1, "tx_serial_clk_gxt"), (2, 1, "tx_serial_clk_gxt"), (3, 1, "tx_serial_clk_gxt")]


def test_clock_groups_separate_every_crossing():
    plan, board = _roles("bluedbm_20")[0]
    clocks, groups = clock_constraints(plan, board)
    # One reference clock per quad master (fmc1 lanes 0-3, fmc2 lanes 0-3, as BlueDBM).
    assert [c.name for c in clocks] == ["clk_ref", "fmc1_hpc_refclk", "fmc2_hpc_refclk",
                                        "jtag_tck"]
    assert clocks[1].period_ns == pytest.approx(1.6)
    # The bring-up kit's JTAG bridge: the BSCANE2's TCK, timed at 33.3 MHz.
    assert (clocks[3].pin, clocks[3].period_ns) == ("bringup/jtag_tap/TCK", pytest.approx(30))
    names = [g.name for g in groups]
    # Ports 2 and 4 are slaves: their user clock is their master's (ports 1 and 3).
    assert [p.xcvr.role for p in plan.ports] == ["master", "slave", "master", "slave"]
    assert names == ["net", "clk_ref", "init", "port1_user", "port3_user", "jtag"]
    assert groups[3].clocks[0].path == "net/phy1/ip/user_clk_out"


def test_the_jtag_bridge_is_timed_on_every_family_as_its_primitive_clocks_it():
    # Virtex-5's BSCAN_VIRTEX5 gives the gated DRCK and the UPDATE strobe (one group), ISE
    # finds them by net; Intel's TAP clock is the device's TCK port; none without the kit.
    plan, board = _roles("bee3_four_x2")[0]
    clocks, groups = clock_constraints(plan, board)
    assert [(c.name, c.pin, c.net) for c in clocks if c.name.startswith("jtag")] == [
        ("jtag_tck", "bringup/jtag_tap/DRCK", "bringup/jtag_tck"),
        ("jtag_update", "bringup/jtag_tap/UPDATE", "bringup/jtag_update_clk")]
    assert [r.name for r in groups[-1].clocks] == ["jtag_tck", "jtag_update"]
    ucf = constraint_files(plan, board)[f"constraints/{plan.node}.ucf"]
    assert 'NET "bringup/jtag_update_clk" TNM_NET = "jtag_update";' in ucf
    assert 'TIMEGRP "jtag" = "jtag_tck" "jtag_update";' in ucf
    assert 'TIMESPEC "TS_jtag_TO_net" = FROM "jtag" TO "net"' in ucf
    plan, board = _roles("optweb_4")[0]
    clocks, _ = clock_constraints(plan, board)
    assert (clocks[-1].name, clocks[-1].port) == ("jtag_tck", "altera_reserved_tck")
    sdc = constraint_files(plan, board)[f"constraints/{plan.node}.sdc"]
    assert "create_clock -name jtag_tck -period 30.000 [get_ports altera_reserved_tck]" in sdc
    plan, board = _roles("plasticnet_ring4")[0]
    assert not any(c.name == "jtag_tck"
                   for c in clock_constraints(replace(plan, bringup=False), board)[0])


# ------------------------------------------------------------------------------------ PLLs

_CASES = [
    # kind, grade, input, requests
    ("MMCME2_BASE", 2, 200 * MHZ, [("net", Fraction(166_660_000)), ("init", 100 * MHZ)]),
    ("MMCME2_BASE", 1, Fraction(156_250_000), [("net", Fraction(156_250_000)),
                                               ("init", 100 * MHZ)]),
    ("MMCME2_BASE", 3, 100 * MHZ, [("net", 250 * MHZ), ("lvds0", 400 * MHZ, True)]),
    ("MMCME4_BASE", 2, 125 * MHZ, [("net", Fraction(156_250_000)), ("init", 100 * MHZ)]),
    ("MMCME4_BASE", 2, 300 * MHZ, [("net", Fraction(322_265_625)), ("init", 100 * MHZ)]),
    ("PLL_BASE", 1, 250 * MHZ, [("net", 250 * MHZ), ("init", 100 * MHZ),
                                ("lvds0", 250 * MHZ, True), ("lvds1", 500 * MHZ, True)]),
    ("PLL_BASE", 1, Fraction(97_500_000), [("user", Fraction(97_500_000)),
                                           ("sync", Fraction(195_000_000))]),
    ("EHXPLLL", 6, 25 * MHZ, [("net", 50 * MHZ), ("lvds0", 200 * MHZ, True)]),
    ("EHXPLLL", 6, 100 * MHZ, [("net", Fraction(133_333_333))]),
    ("IOPLL", 1, 200 * MHZ, [("net", 200 * MHZ), ("init", 100 * MHZ),
                             ("sl3_0", Fraction(372_952_000), True)]),
]


@pytest.mark.parametrize("kind,grade,fin,reqs", _CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(_CASES)])
def test_pll_settings_within_datasheet_limits(kind, grade, fin, reqs):
    requests = [ClockRequest(*r) for r in reqs]
    s = solve_pll(kind, fin, requests, grade=grade)
    lim = PLL_LIMITS[kind](grade)
    assert lim.fin[0] <= s.input_hz <= lim.fin[1]
    assert s.pfd_hz == s.input_hz / s.divide
    assert lim.pfd[0] <= s.pfd_hz <= lim.pfd[1]
    assert lim.vco[0] <= s.vco_hz <= lim.vco[1]
    assert lim.divide[0] <= s.divide <= lim.divide[1]
    assert lim.multiply[0] <= s.multiply <= lim.multiply[1]
    assert (s.multiply / lim.multiply_step).denominator == 1
    if kind == "EHXPLLL":
        # Feedback through CLKOP: VCO = PFD x CLKFB_DIV x CLKOP_DIV, CLKOP = PFD x CLKFB_DIV.
        assert s.vco_hz == s.pfd_hz * s.multiply * s.outputs[0].divide
        assert s.outputs[0].achieved_hz == s.pfd_hz * s.multiply
        p = s.parameters
        assert (p["CLKI_DIV"], p["CLKFB_DIV"]) == (s.divide, s.multiply)
        assert p["CLKOP_CPHASE"] == p["CLKOP_DIV"] // 2 and p["CLKOP_FPHASE"] == 0
    else:
        assert s.vco_hz == s.pfd_hz * s.multiply
    for i, (out, req) in enumerate(zip(s.outputs, requests, strict=True)):
        assert out.pin == lim.outputs[i]
        assert out.achieved_hz == s.vco_hz / out.divide
        assert lim.out_divide[0] <= out.divide <= lim.out_divide[1]
        step = lim.out0_step if i == 0 else 1
        assert (out.divide / step).denominator == 1
        assert lim.fout[0] <= out.achieved_hz <= lim.fout[1]
        if req.at_most:
            assert out.achieved_hz <= req.hz
            assert out.error <= AT_MOST_TOLERANCE
        else:
            assert out.error <= TOLERANCE


@pytest.mark.parametrize("fin,fout,expect", [
    # ecppll's search on single outputs: (CLKI_DIV, CLKFB_DIV, CLKOP_DIV).
    (12, 48, (1, 4, 12)), (20, 30, (2, 3, 20)), (100, 400, (1, 4, 1)), (25, 50, (1, 2, 12)),
])
def test_ecp5_pll_matches_ecppll(fin, fout, expect):
    s = solve_pll("EHXPLLL", fin * MHZ, [ClockRequest("net", Fraction(fout * MHZ))])
    p = s.parameters
    assert (p["CLKI_DIV"], p["CLKFB_DIV"], p["CLKOP_DIV"]) == expect
    assert s.outputs[0].achieved_hz == fout * MHZ


def test_exact_settings_where_they_exist():
    s = solve_pll("MMCME2_BASE", 200 * MHZ, [ClockRequest("net", 125 * MHZ),
                                             ClockRequest("init", 100 * MHZ)], grade=1)
    assert [o.achieved_hz for o in s.outputs] == [125 * MHZ, 100 * MHZ]


def test_impossible_clocks_raise_a_sentence():
    with pytest.raises(PllError, match=r"EHXPLLL on board 'ulx3s'.*'clk25'.*8 MHz to 400 MHz"):
        solve_pll("EHXPLLL", 2 * MHZ, [ClockRequest("net", 50 * MHZ)], board="ulx3s",
                  clock="clk25")
    with pytest.raises(PllError, match=r"No EHXPLLL setting on board 'ulx3s'"):
        solve_pll("EHXPLLL", 25 * MHZ, [ClockRequest("net", 600 * MHZ)], board="ulx3s",
                  clock="clk25")
    # 7 outputs only.
    with pytest.raises(PllError, match="has 7 outputs"):
        solve_pll("MMCME2_BASE", 100 * MHZ, [ClockRequest(f"c{i}", 100 * MHZ)
                                             for i in range(8)])
    # A board whose clock the PLL cannot take: the whole clock plan fails, naming both.
    plan, board = _roles("ulx3s_ring4")[0]
    clock = board.clocks["clk25"].model_copy(
        update={"freq": parse_quantity("2MHz", Dimension.FREQUENCY)})
    slow = board.model_copy(update={"clocks": {"clk25": clock}})
    with pytest.raises(PllError, match=r"board 'ulx3s'.*clock 'clk25'"):
        clock_plan(plan, slow)


def test_speed_grades():
    assert speed_grade("xc7vx485tffg1761-2") == 2
    assert speed_grade("xcvu9p-flga2104-2L-e") == 2
    assert speed_grade("xc5vlx155tff1136-1") == 1
    assert speed_grade("xc7a35t") == 1


# ------------------------------------------------------------------------------ lint, golden

#: The waivers .ci/run uses too (each one explained in the file).
LINT_CONFIG = (ROOT / ".ci" / "verilator.vlt").read_text()


# BEE3's four variants share a board: one of them in the fast tier.
@pytest.mark.parametrize("example", [
    pytest.param(e.stem, marks=pytest.mark.slow if e.stem.startswith("bee3_")
                 and e.stem != "bee3_two_x4" else ()) for e in EXAMPLES])
def test_board_top_lints_against_the_network_ports(example, tmp_path):
    """Every role's top, with a stub of the network module built from NodeTop's ports (the
    network's own Verilog takes long to generate; the next test lints two in full)."""
    for plan, board in _roles(example):
        decls = [f"    {'input ' if d == 'i' else 'output'} wire "
                 f"{f'[{w - 1}:0] ' if w > 1 else ''}{n}" for n, d, w in network_ports(plan)]
        outs = [f"    assign {n} = {w}'d0;" for n, d, w in network_ports(plan) if d == "o"]
        stub = "\n".join([f"(* blackbox *)\nmodule {plan.node} (", ",\n".join(decls), ");",
                          *outs, "endmodule", ""])
        files = {**board_top_files(plan, board), f"stubs/{plan.node}.v": stub}
        paths = write_files(tmp_path, plan.node, files)
        paths.sort(key=lambda p: (p.parent.name != "stubs", p.name))
        output = lint_verilog(paths, top_module(plan), waivers=(), config=LINT_CONFIG)
        assert "%Error" not in output and "%Warning" not in output


@pytest.mark.parametrize("example", ["ulx3s_ring4",
                                     pytest.param("bluedbm_20", marks=pytest.mark.slow),
                                     pytest.param("optweb_4", marks=pytest.mark.slow)])
def test_board_top_lints(example, tmp_path):
    plan, board = _roles(example)[0]
    files = {**role_files(ROOT / "examples" / f"{example}.yaml")[plan.node],
             **board_top_files(plan, board)}
    paths = write_files(tmp_path, plan.node, files)
    # Stubs first; the top's primitive stubs may repeat the network's (they are guarded).
    paths.sort(key=lambda p: (p.parent.name != "stubs", p.name))
    output = lint_verilog(paths, top_module(plan), waivers=(), config=LINT_CONFIG)
    assert "%Error" not in output and "%Warning" not in output


@pytest.mark.parametrize("example,ext", [("plasticnet_ring4", "xdc"), ("bee3_two_x4", "ucf"),
                                         ("optweb_4", "qsf"), ("optweb_4", "sdc"),
                                         ("ulx3s_ring4", "lpf")])
def test_constraint_golden(example, ext):
    plan, board = _roles(example)[0]
    text = constraint_files(plan, board)[f"constraints/{plan.node}.{ext}"]
    path = GOLDEN / f"{example}.{ext}"
    if UPDATE_GOLDEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.read_text() == text, f"regenerate with OPTNET_UPDATE_GOLDEN=1: {path}"


@pytest.mark.parametrize(("stem", "multicasts"), [("bluedbm_20", False),
                                                  ("plasticnet_ring4", True)])
def test_routers_have_multicast_logic_only_where_the_cluster_broadcasts(stem, multicasts):
    # BlueDBM's network has no broadcast (`broadcast: none`, issue 18): no multicast
    # logic in its routers; a ring's broadcast trees are made by its routers. (OPTWEB's
    # nodes have no router at all: a direct switch, with which the user sends a message
    # per peer, as OPTWEB's own collectives do.)
    assert {p.router.multicasts for p, _ in _roles(stem)} == {multicasts}
    assert {p.router for p, _ in _roles("optweb_4")} == {None}
