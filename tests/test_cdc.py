"""Clock-domain crossings: synchroniser attributes, the per-crossing constraints, and every
crossing of a node's netlist covered by both.

The netlist tests lower a node and its board top, flatten them in Yosys
(:mod:`tests.cdc_netlist`) and find every path from a flip-flop or memory on one clock into
a state element on another. Each must end at the first stage of a synchroniser (marked with
the vendor's attribute; all stages of a reset synchroniser, whose input is an asynchronous
reset) that :func:`optnet.emit.cdc.clock_crossings` lists for that clock pair, or at the read
of an asynchronous FIFO's storage it lists; and the clock pairs found must be exactly those
the constraints name. The XDC runs under tclsh with mock Vivado commands that know the
netlist's clocks and flip-flops, so its clocks and bus-skew cells must exist, and its
max-delay clock pairs are compared with the netlist's crossings clock by clock. The fast tier
checks one node of a Xilinx example with vendor IP; the slow tier every example (see
:func:`_all_roles`).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.cdc import FFSynchronizer, PulseSynchronizer, ResetSynchronizer
from amaranth.lib.wiring import In, Out

from optnet.emit.board import board_top_files, top_module
from optnet.emit.cdc import clock_crossings
from optnet.emit.constraints import constraint_files
from optnet.emit.hdl import one_per_role, write_files
from optnet.hw.cdc import (
    FIRST_STAGE,
    SYNCHRONIZER_ATTRIBUTES,
    SynchronizerPlatform,
    synchronizer_platform,
)
from optnet.hw.verilog import to_verilog
from optnet.plan import plan as plan_hw
from optnet.plan.clocks import clock_plan
from optnet.plan.pins import clock_constraints

from .cdc_netlist import Crossing, Netlist, netlist
from .conftest import ROOT, linted_example, role_files
from .hwtools import missing_tool

EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.yaml"))
MOCKS = Path(__file__).resolve().parent / "tcl"

# ------------------------------------------------------------------- synchroniser attributes


class _Crossings(wiring.Component):
    """One of each synchroniser, and an asynchronous FIFO, between domains a and b."""

    def __init__(self):
        super().__init__({"i": In(4), "o": Out(4), "arst": In(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.level = FFSynchronizer(self.i, self.o, o_domain="b")
        m.submodules.reset = ResetSynchronizer(self.arst, domain="b")
        m.submodules.pulse = PulseSynchronizer("a", "b")
        m.submodules.fifo = fifo.AsyncFIFO(width=8, depth=4, w_domain="a", r_domain="b")
        return m


def _stage_regs(verilog: str) -> list[tuple[str, str]]:
    """(attribute lines before it, declaration) of every ``reg stage<k>``."""
    lines = verilog.splitlines()
    out = []
    for i, line in enumerate(lines):
        if re.match(r"\s*reg (\[\d+:0\] )?stage\d+ ", line):
            j = i
            while j > 0 and lines[j - 1].lstrip().startswith(("(*", "output")):
                j -= 1
            out.append(("\n".join(lines[j:i]), line))
    return out


@pytest.mark.parametrize("vendor", sorted(SYNCHRONIZER_ATTRIBUTES))
def test_every_synchroniser_stage_carries_the_vendor_attribute(vendor):
    platform = synchronizer_platform(vendor)
    text = to_verilog(_Crossings(), "crossings", ["a", "b"], platform=platform)
    stages = _stage_regs(text)
    # level 2, reset 2, pulse 2, FIFO: two pointers and its reset, 2 each
    assert len(stages) == 12
    ((key, value),) = SYNCHRONIZER_ATTRIBUTES[vendor].items()
    for attrs, decl in stages:
        assert f'(* {key} = "{value}" *)' in attrs, decl


@pytest.mark.parametrize("vendor", sorted(SYNCHRONIZER_ATTRIBUTES))
def test_the_attributes_are_the_only_difference(vendor):
    """Against Amaranth's own synchronisers (no platform, as simulation elaborates)."""
    plain = to_verilog(_Crossings(), "crossings", ["a", "b"])
    marked = to_verilog(_Crossings(), "crossings", ["a", "b"],
                        platform=synchronizer_platform(vendor))
    ((key, value),) = SYNCHRONIZER_ATTRIBUTES[vendor].items()
    attribute = f'  (* {key} = "{value}" *)\n'
    assert marked != plain
    assert marked.replace(attribute, "") == plain


def test_no_platform_for_lattice():
    """nextpnr has no synchroniser attribute: ECP5 Verilog stays what Amaranth makes."""
    assert synchronizer_platform("lattice") is None


def test_an_input_delay_is_refused():
    sync = FFSynchronizer(Signal(), Signal(), max_input_delay=1e-9)
    sync._MustUse__silence = True
    with pytest.raises(NotImplementedError, match="constrains per clock pair"):
        SynchronizerPlatform({"ASYNC_REG": "TRUE"}).get_ff_sync(sync)


# ------------------------------------------------------------------------ constraint files


@functools.cache
def _roles(stem: str) -> tuple:
    result = linted_example(stem)
    boards = {node.name: node.board for node in result.routed.cluster.nodes}
    return tuple((p, boards[p.node]) for p in one_per_role(plan_hw(result.routed)))


def _statements(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


@pytest.mark.parametrize("stem", ["plasticnet_ring4", "bluedbm_20"])
def test_xdc_constrains_each_crossing_and_cuts_no_clock_group(stem):
    plan, board = _roles(stem)[0]
    text = constraint_files(plan, board)[f"constraints/{plan.node}.xdc"]
    crossings = clock_crossings(plan, board)
    lines = _statements(text)
    assert not [s for s in lines if s.startswith(("set_clock_groups", "set_false_path"))]
    delays = [s for s in lines if s.startswith("set_max_delay")]
    skews = [s for s in lines if s.startswith("set_bus_skew")]
    assert len(delays) == len(crossings)
    assert len(skews) == sum(len(x.gray) for x in crossings) > 0
    for line, x in zip(delays, crossings, strict=True):
        assert line.startswith("set_max_delay -datapath_only -from ")
        assert line.endswith(f" {x.period_ns:.3f}")
        assert x.period_ns == min(x.source_ns, x.dest_ns)


def test_sdc_cuts_each_crossed_clock_pair_and_bounds_the_gray_pointers():
    plan, board = _roles("optweb_4")[0]
    text = constraint_files(plan, board)[f"constraints/{plan.node}.sdc"]
    crossings = clock_crossings(plan, board)
    lines = _statements(text)
    assert not [s for s in lines if s.startswith("set_clock_groups")]
    cuts = [s for s in lines if s.startswith("set_false_path")]
    assert len(cuts) == len(crossings)
    gray = [s for x in crossings for s in x.gray]
    for command in ("set_max_skew", "set_net_delay"):
        found = [s for s in lines if s.startswith(command)]
        assert len(found) == len(gray) > 0
        for line, s in zip(found, gray, strict=True):
            register = "|".join(s.register)
            first = "|".join((*s.path, FIRST_STAGE))
            assert re.search(rf"-from \[get_\w+ {{{re.escape(register)}\[\*\]}}\] "
                             rf"-to \[get_\w+ {{{re.escape(first)}\[\*\]}}\]", line), line


def test_ucf_gives_every_crossed_pair_a_datapath_only_timespec():
    plan, board = _roles("bee3_two_x4")[0]
    text = constraint_files(plan, board)[f"constraints/{plan.node}.ucf"]
    crossings = clock_crossings(plan, board)
    specs = re.findall(r'^TIMESPEC "TS_(\w+)_TO_(\w+)" = FROM "(\w+)" TO "(\w+)" '
                       r'([\d.]+) ns DATAPATHONLY;$', text, re.M)
    assert [(a, b) for a, b, _, _, _ in specs] == [(a, b) for _, _, a, b, _ in specs]
    assert [(a, b, float(ns)) for a, b, _, _, ns in specs] == [
        (x.source.name, x.dest.name, round(x.period_ns, 3)) for x in crossings]
    assert " TIG;" not in text


def test_crossings_name_only_clock_groups_of_the_node():
    for stem in EXAMPLES:
        for plan, board in _roles(stem):
            _, groups = clock_constraints(plan, board)
            names = {g.name for g in groups}
            pairs = [(x.source.name, x.dest.name) for x in clock_crossings(plan, board)]
            assert len(set(pairs)) == len(pairs)
            for a, b in pairs:
                assert a in names and b in names and a != b


# ------------------------------------------------------------------------------- netlists

def _node(stem: str, index: int, folder: Path) -> tuple:
    """(plan, board, node folder, Netlist) of role ``index`` of example ``stem``, written
    under ``folder`` (Yosys missing: skipped, or failed in CI)."""
    plan, board = _roles(stem)[index]
    # The node's Verilog as the session lowered it once (conftest.role_files).
    files = {**role_files(ROOT / "examples" / f"{stem}.yaml")[plan.node],
             **board_top_files(plan, board), **constraint_files(plan, board)}
    paths = write_files(folder, plan.node, files)
    node = folder / "nodes" / plan.node
    verilog = [p for p in paths if p.suffix == ".v"]
    verilog.sort(key=lambda p: (p.parent.name != "stubs", p.name))
    return plan, board, node, Netlist(netlist(verilog, top_module(plan)), node)


def _clock_groups(plan, board) -> dict[str, str]:
    """Netlist clock (see tests.cdc_netlist) -> clock group name; an IP instance whose every
    output clock is one group maps as ``<instance>.*``."""
    clocks, groups = clock_constraints(plan, board)
    ports = {c.name: c.port for c in clocks}
    out = {}
    for g in groups:
        for r in g.clocks:
            if r.kind == "port":
                out[f"port:{ports[r.name]}"] = g.name
            elif r.kind in ("pll", "pin") or r.path.count("/") == 3:
                out[r.path.replace("/", ".")] = g.name
            else:
                out[r.path.replace("/", ".") + ".*"] = g.name
    return out


def _group(clocks: dict[str, str], clock: str) -> str:
    if clock in clocks:
        return clocks[clock]
    instance = clock.rsplit(".", 1)[0] + ".*"
    assert instance in clocks, f"clock {clock} is in no clock group of the constraints"
    return clocks[instance]


def _check_netlist(plan, board, net: Netlist) -> list[Crossing]:
    """Every crossing of ``net`` is synchronised, marked and constrained (see the module
    docstring); returns them."""
    clocks = _clock_groups(plan, board)
    model = clock_crossings(plan, board)
    syncs = {".".join(s.path): s for x in model for s in x.synchronizers}
    stores = {".".join(m.path): m for x in model for m in x.storage}
    attrs = SYNCHRONIZER_ATTRIBUTES.get(plan.vendor, {})

    found = net.crossings()
    assert found, "a node with links crosses clock domains"
    pairs = set()
    for x in found:
        src, dst = _group(clocks, x.source_clock), _group(clocks, x.dest_clock)
        if src == dst:
            continue   # clocks of one group are related: timed as synchronous
        pairs.add((src, dst))
        where = f"{x.source} ({src}) -> {x.dest} ({dst}) via {x.via}"
        memory = x.via == "memory" or (x.source in stores and not x.source.endswith(".read"))
        if memory:
            storage = stores.get(x.source)
            assert storage is not None, f"{where}: not the storage of a FIFO"
            assert (storage.source, storage.dest) == (src, dst), where
            fifo_scope = x.source.rsplit(".", 1)[0] + "."
            assert x.dest.startswith(fifo_scope), f"{where}: read outside the FIFO"
            continue
        instance, _, stage = x.dest.rpartition(".")
        sync = syncs.get(instance)
        assert sync is not None, f"{where}: ends at no synchroniser the constraints list"
        assert (sync.source, sync.dest) == (src, dst), f"{where}: listed as {sync}"
        assert set(attrs.items()) <= set(net.netnames[x.dest]["attributes"].items()), \
            f"{where}: the stage lacks {attrs}"
        if x.via == "reset":
            assert sync.kind == "reset" and re.fullmatch(r"stage\d+", stage), where
            continue
        assert sync.kind != "reset" and stage == FIRST_STAGE, where
        if sync.kind == "gray":
            assert x.direct and x.source == ".".join(sync.register), where
        else:
            assert x.direct, f"{where}: logic between the source register and the synchroniser"

    assert pairs == {(x.source.name, x.dest.name) for x in model}
    for path in syncs:
        assert f"{path}.{FIRST_STAGE}" in net.netnames, f"no synchroniser {path}"
    memories = {net.cells[c]["parameters"]["MEMID"].lstrip("\\") for c in net.memories()}
    assert set(stores) <= memories
    # Every stage of every synchroniser is marked, and only synchroniser stages are.
    for name, n in net.netnames.items():
        marked = bool(attrs) and set(attrs.items()) <= set(n["attributes"].items())
        instance, _, reg = name.rpartition(".")
        if instance in syncs and re.fullmatch(r"stage\d+", reg):
            assert marked or not attrs, f"{name} lacks {attrs}"
        if marked and net.declared(name) == "reg":
            assert re.fullmatch(r"stage\d+", reg), f"{name} is marked but no synchroniser stage"
    return found


def _vivado_cells(net: Netlist) -> list[str]:
    """Every flip-flop of ``net`` named as Vivado names it: <path>/<register>_reg[<bit>]."""
    cells = []
    for cell in net.flops():
        name = net.flop_name(cell).replace(".", "/")
        width = len(net.cells[cell]["connections"]["Q"])
        cells += [f"{name}_reg"] if width == 1 else [f"{name}_reg[{i}]" for i in range(width)]
    return sorted(set(cells))


def _tcl_list(items) -> str:
    return "[list " + " ".join("{" + i + "}" for i in items) + "]"


def _run_xdc(node: Path, xdc: str, net: Netlist, found: list[Crossing], tmp: Path) -> list:
    """Run the node's XDC under tests/tcl/mock_xdc.tcl with the netlist's objects."""
    tclsh = shutil.which("tclsh")
    if tclsh is None:
        missing_tool("tclsh", "apt-get install tcl")
    clock_pins = sorted({c.replace(".", "/") for x in found
                         for c in (x.source_clock, x.dest_clock) if not c.startswith("port:")})
    ports = [p if len(d["bits"]) == 1 else f"{p}[{i}]"
             for p, d in net.ports.items() for i in range(len(d["bits"]))]
    objects = tmp / "objects.tcl"
    objects.write_text("\n".join([f"set mock_ports {_tcl_list(ports)}",
                                  f"set mock_clock_pins {_tcl_list(clock_pins)}",
                                  f"set mock_cells {_tcl_list(_vivado_cells(net))}", ""]))
    log = tmp / "xdc.log"
    proc = subprocess.run([tclsh, str(MOCKS / "mock_xdc.tcl"), str(log), str(node / xdc),
                           str(objects)], cwd=tmp, capture_output=True, text=True, timeout=120)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert proc.returncode == 0 and calls[-1] == ["SCRIPT_DONE"], proc.stderr + str(calls[-3:])
    return calls


def _check_xdc(plan, board, node: Path, net: Netlist, found: list[Crossing], tmp: Path):
    calls = _run_xdc(node, f"constraints/{plan.node}.xdc", net, found, tmp)
    created = {c[1]: c[2] for c in calls if c[0] == "create_clock"}

    def netlist_clock(token: str) -> str:
        # clock:pin:pll/CLKOUT0 -> pll.CLKOUT0; clock:clk_ref -> port:clk_ref_p; a clock
        # created on a primitive's pin (clock:jtag_tck -> pin:bringup/jtag_tap/TCK) -> its pin
        token = token.removeprefix("clock:")
        token = created.get(token, token)
        if token.startswith("pin:"):
            return token.removeprefix("pin:").replace("/", ".")
        return token

    delays = {(netlist_clock(c[1]), netlist_clock(c[2])): float(c[3])
              for c in calls if c[0] == "set_max_delay"}
    clocks = _clock_groups(plan, board)
    crossed = {(x.source_clock, x.dest_clock) for x in found
               if _group(clocks, x.source_clock) != _group(clocks, x.dest_clock)}
    assert set(delays) == crossed

    cp = clock_plan(plan, board)
    periods = {(x.source.name, x.dest.name): x for x in clock_crossings(plan, board, cp)}
    skews = [c for c in calls if c[0] == "set_bus_skew"]
    gray = [s for x in periods.values() for s in x.gray]
    assert len(skews) == len(gray) > 0
    for call, s in zip(skews, gray, strict=True):
        register, first = "/".join(s.register), "/".join((*s.path, FIRST_STAGE))
        sources, dests = call[1].split(), call[2].split()
        assert len(sources) == len(dests) > 1
        assert all(re.fullmatch(rf"{re.escape(register)}_reg\[\d+\]", c) for c in sources)
        assert all(re.fullmatch(rf"{re.escape(first)}_reg\[\d+\]", c) for c in dests)
        assert float(call[3]) == pytest.approx(periods[(s.source, s.dest)].dest_ns, abs=1e-3)


@functools.cache
def node_netlist(stem: str, index: int = 0) -> tuple:
    """:func:`_node` of role ``index`` of example ``stem``, made once per session (in a
    temporary folder of its own): the transceiver tests read the same netlist."""
    return _node(stem, index, Path(tempfile.mkdtemp(prefix=f"optnet-cdc-{stem}-")))


def test_every_crossing_of_a_xilinx_node_is_synchronised_and_constrained(tmp_path):
    plan, board, node, net = node_netlist("plasticnet_ring4")
    found = _check_netlist(plan, board, net)
    # Both link layers' FIFOs, pulse and resets, and the board's reset synchronisers.
    assert len(found) >= 20
    _check_xdc(plan, board, node, net, found, tmp_path)


def _all_roles():
    """Each role of the examples whose FPGA family and PHYs no earlier role has: roles that
    differ only in which ports carry which PHY, or in how many lanes, add no new crossing
    (BEE3's four clusters differ only so, and one of them stands for all). PlasticNet+'s
    first role is the fast tier's (test_every_crossing_of_a_xilinx_node_...)."""
    def kind(plan, board):
        return board.family, frozenset(p.phy for p in plan.ports)

    params, seen = [], {kind(*_roles("plasticnet_ring4")[0])}
    for stem in EXAMPLES:
        for i, (plan, board) in enumerate(_roles(stem)):
            key = kind(plan, board)
            if key not in seen:
                seen.add(key)
                params.append(pytest.param(stem, i, id=f"{stem}-{i}", marks=pytest.mark.slow))
    return params


@pytest.mark.parametrize("stem,index", _all_roles())
def test_every_crossing_of_every_example_is_synchronised_and_constrained(stem, index,
                                                                          tmp_path):
    plan, board, node, net = _node(stem, index, tmp_path)
    found = _check_netlist(plan, board, net)
    if board.vendor == "xilinx" and board.family != "virtex5":
        _check_xdc(plan, board, node, net, found, tmp_path)
    elif board.vendor == "intel":
        _check_sdc(plan, board, node, net)


def _check_sdc(plan, board, node: Path, net: Netlist):
    """Every register pattern of the SDC matches the flip-flops it is meant for, bit for
    bit, by Quartus' names (<path>|<register>[<bit>])."""
    text = (node / "constraints" / f"{plan.node}.sdc").read_text()
    regs = set()
    for cell in net.flops():
        name = net.flop_name(cell).replace(".", "|")
        width = len(net.cells[cell]["connections"]["Q"])
        regs |= {name} if width == 1 else {f"{name}[{i}]" for i in range(width)}
    patterns = re.findall(r"\[get_(?:keepers|registers) \{([^}]*)\}\]", text)
    assert patterns
    for pattern in patterns:
        rx = re.escape(pattern).replace(r"\[\*\]", r"\[\d+\]")
        matched = [r for r in regs if re.fullmatch(rx, r)]
        assert len(matched) > 1, f"{pattern} matches {matched}"
