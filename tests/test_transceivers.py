"""The transceiver model (optnet.devices.transceivers) and plan (optnet.plan.transceivers):
PLL reach from the data sheets' figures, one core with the shared logic per quad, one buffer
per reference clock pad, slaves wired to their master, and the generated IP, RTL and Tcl
following the plan, on every example and on generated 8- and 16-node clusters of every
board with transceivers."""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import tempfile
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from optnet.devices.linkip import SHARED_CLOCKS, ip_ports
from optnet.devices.transceivers import GBPS, RefclkSite, Site, gxt_refclk_site, transceiver
from optnet.emit.projects import IP_SCRIPT, _clock_plan, _expected_modules, _init_clock, _mhz
from optnet.lint import LintResult, lint_file
from optnet.plan import NodePlan, plan
from optnet.plan.clocks import clock_plan
from optnet.plan.ip import IpParam, atx_pll, ip_name, link_ips
from optnet.plan.pins import top_ports

from .conftest import ROOT, linted, linted_example
from .test_cdc import node_netlist
from .test_emit_projects import _node, _ok, _qsys, _run, _vivado_config, lint_on_board, node_folder

EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.yaml"))

# ----------------------------------------------------------------------------- the model


@pytest.mark.parametrize(("family", "kind", "pll", "gbps", "reaches"), [
    # UG476: GTX CPLL 3.2-6.6 Gb/s at D = 1 and down by halves; QPLL bands 5.93-8.0 and
    # 9.8-12.5 GHz (line rate = VCO / D).
    ("virtex7", "GTX", "CPLL", 5, True),
    ("virtex7", "GTX", "CPLL", 6.6, True),
    ("virtex7", "GTX", "CPLL", 10, False),
    ("virtex7", "GTX", "QPLL", 10, True),
    ("virtex7", "GTX", "QPLL", 8, True),
    ("virtex7", "GTX", "QPLL", 9, False),         # between the bands
    ("virtex7", "GTX", "QPLL", 13, False),
    ("zynq7000", "GTX", "CPLL", 0.5, True),
    # UG578: GTY QPLL0 full rate 19.6-32.75 Gb/s at D = 1; the CPLL tops at 12.5 Gb/s.
    ("ultrascale_plus", "GTY", "QPLL0", 25.78125, True),
    ("ultrascale_plus", "GTY", "CPLL", 25.78125, False),
    ("ultrascale_plus", "GTY", "CPLL", 10.3125, True),
    ("virtex5", "GTP", "PLL", 1.95, True),
    ("stratix10", "H-tile", "ATX", 25, True),
    ("stratix10", "H-tile", "fPLL", 25, False),
])
def test_pll_reach(family, kind, pll, gbps, reaches):
    gt = transceiver(family, kind)
    assert gt.pll(pll).reaches(round(Fraction(str(gbps)) * GBPS)) is reaches


def test_sites_and_groups():
    gtx = transceiver("virtex7", "GTX")
    assert gtx.locate("GTXE2_CHANNEL_X1Y25") == Site(1, 6, 1)
    assert gtx.locate("GTYE4_CHANNEL_X1Y25") is None
    assert gtx.locate_refclk("IBUFDS_GTE2_X1Y13") == (1, 6)
    assert (gtx.common, gtx.refclk_buffer, gtx.refclk_reach) == (
        "GTXE2_COMMON", "IBUFDS_GTE2", 1)
    gty = transceiver("ultrascale_plus", "GTY")
    assert gty.locate_refclk("IBUFDS_GTE4_X0Y21") == (0, 10)   # U280 QSFP0 MGTREFCLK1
    assert gty.refclk_reach == 2
    tile = transceiver("virtex5", "GTP")
    assert tile.locate("GTP_DUAL_X0Y3_CH1") == Site(0, 3, 1)
    assert transceiver("ecp5", "DCU") is None


def test_stratix10_refclk_sites():
    """Stratix 10 dedicated reference clock pins name side, tile, bank and triplet
    (REFCLK_GXBL1C_CHT: top triplet of bank 1C); the bank is the channel sites' group."""
    s10 = transceiver("stratix10", "H-tile")
    assert s10.refclk_at("REFCLK_GXBL1C_CHT") == RefclkSite(1, 0, 1, "L")
    assert s10.refclk_at("REFCLK_GXBR4F_CHB") == RefclkSite(4, 3, 0, "R")
    assert s10.refclk_at("REFCLK_GXB1D_CHBP") == RefclkSite(1, 1, 0, "")   # Quartus' CHBP
    assert s10.locate_refclk("REFCLK_GXBL1D_CHT") == (1, 1)
    assert s10.locate("GXB1D_CH4") == Site(1, 1, 4)
    for bad in ("REFCLK_GXBL1C_CH0", "REFCLK_GXBL1B_CHT", "IBUFDS_GTE2_X1Y13"):
        assert s10.refclk_at(bad) is None
    assert gxt_refclk_site(4, 3, 0, "R") == "REFCLK_GXBR4F_CHB"
    gtx = transceiver("virtex7", "GTX")
    assert gtx.refclk_at("IBUFDS_GTE2_X1Y13") == RefclkSite(1, 6)
    assert gtx.refclk_at("REFCLK_GXBL1C_CHT") is None


def test_positions_and_refclk_inputs():
    """The model numbers channels up the column as their sites do (the link IP's lane grid
    reads it) and tells which of a quad's two reference clock inputs a buffer site is."""
    gtx = transceiver("virtex7", "GTX")
    for site in ("GTXE2_CHANNEL_X1Y25", "GTXE2_CHANNEL_X0Y0", "GTXE2_CHANNEL_X1Y43"):
        assert f"GTXE2_CHANNEL_X{gtx.locate(site).column}Y{gtx.position(gtx.locate(site))}" \
            == site
    assert (gtx.refclk_input("IBUFDS_GTE2_X1Y13"), gtx.refclk_input("IBUFDS_GTE2_X1Y12")) \
        == (1, 0)
    assert gtx.refclk_input("IBUFDS_GTE4_X0Y21") is None
    gty = transceiver("ultrascale_plus", "GTY")
    assert gty.refclk_input("IBUFDS_GTE4_X0Y21") == 1 and gty.position(Site(0, 10, 0)) == 40
    tile = transceiver("virtex5", "GTP")
    assert tile.position(tile.locate("GTP_DUAL_X0Y3_CH1")) == 7
    assert tile.refclk_input("IBUFDS") is None
    s10 = transceiver("stratix10", "H-tile")
    assert (s10.refclk_input("REFCLK_GXBL1C_CHB"), s10.refclk_input("REFCLK_GXB1D_CHT")) \
        == (0, 1)


# ------------------------------------------------------------------------------ the plan


def _plans(source: Path | LintResult) -> tuple[list[NodePlan], dict]:
    result = lint_file(source) if isinstance(source, Path) else source
    assert result.routed is not None and result.ok, [str(d) for d in result.diagnostics]
    nodes = {n.name: n for n in result.routed.cluster.nodes}
    plans = plan(result.routed, tables=False, one_per_role=True)
    return plans, {p.node: nodes[p.node].board for p in plans}


def _check_plan(p: NodePlan, board) -> None:
    """The device rules on one node's plan."""
    vendor = [q for q in p.ports if q.phy != "lvds"]
    if not vendor:
        return
    by_port = {q.port: q for q in vendor}
    gt = transceiver(board.family, board.transceivers.type)
    sharing = gt.common is not None
    owners: Counter = Counter()
    for q in vendor:
        x = q.xcvr
        assert x is not None and x.role in ("single", "master", "slave")
        if x.role == "slave":
            master = by_port[x.master]
            # A slave sits in its master's quads, runs its protocol, and buffers no pad.
            assert set(x.groups) <= set(master.xcvr.groups)
            assert master.xcvr.role == "master" and master.phy == q.phy
            assert x.refclk == master.xcvr.refclk
        elif sharing:
            owners.update(set(x.groups))
        assert gt.pll(x.pll).reaches(q.line_rate)
    if not sharing and gt.name == "GTP_DUAL":
        # Virtex-5: every one-lane core on a sited board gets its lane's channel and optnet
        # wraps its tile; each tile is wrapped once (a master or a single), with at most one
        # slave on the other channel.
        tiles: Counter = Counter()
        for q in vendor:
            x = q.xcvr
            site = board.ports[q.board_port].lanes[q.lanes[0]].site
            assert (x.channel is not None) == (len(q.lanes) == 1 and bool(x.groups))
            if x.channel is not None:
                assert x.channel == gt.locate(site).channel
                if x.role == "slave":
                    assert by_port[x.master].xcvr.channel == 1 - x.channel
                else:
                    tiles.update(x.groups)
        assert set(tiles.values()) <= {1}
    if sharing:
        # One core with the shared logic per used quad: one COMMON per quad.
        used = {g for q in vendor for g in q.xcvr.groups}
        assert set(owners) == used and set(owners.values()) <= {1}
        # One buffer per reference clock pad: one non-slave core per pad.
        pads = Counter(q.xcvr.refclk for q in vendor if q.xcvr.role != "slave")
        assert set(pads.values()) <= {1}
        # The board top has one reference clock input per buffered pad, none for a slave.
        refclks = [t for t in top_ports(p, board) if t.kind == "refclk" and t.name.endswith("_p")]
        assert len(refclks) == len(pads)


def _check_ip(p: NodePlan, board) -> None:
    """The IP the vendor script generates follows the plan and the clock plan."""
    if board.vendor != "xilinx" or board.family == "virtex5":
        return
    init = clock_plan(p, board).init_hz
    for ip in link_ips(p, board):
        params = {x.name: x.value for x in ip.params}
        roles = {q.xcvr.role for q in ip.ports}
        assert len(roles) == 1 and ip.role in roles
        assert params["SupportLevel"] == ("0" if ip.role == "slave" else "1")
        assert params["SINGLEEND_INITCLK"] == "true"
        assert params["C_INIT_CLK"] == "$init_clk_mhz" and init is not None
        assert {board.ports[q.board_port].refclk.freq.value for q in ip.ports} == {ip.refclk_hz}
        ports = {x.name: x for x in ip_ports(ip.phy, ip.lanes, ip.family, role=ip.role,
                                                quad=ip.quad, qpll=ip.qpll)}
        if ip.role == "slave":
            # PG046/PG074 without shared logic: no pad inputs, its master's clocks instead.
            assert not {"gt_refclk1_p", "gt_refclk1_n"} & set(ports)
            assert {"user_clk", "sync_clk"} <= set(ports)
            assert {"refclk1_in", "gt_refclk1"} & set(ports)
        else:
            assert {"gt_refclk1_p", "gt_refclk1_n", "gt_refclk1_out", "user_clk_out",
                    "sync_clk_out"} <= set(ports)


@pytest.mark.parametrize("stem", EXAMPLES)
def test_examples_follow_the_device_rules(stem):
    plans, boards = _plans(ROOT / "examples" / f"{stem}.yaml")
    for p in plans:
        _check_plan(p, boards[p.node])
        _check_ip(p, boards[p.node])


# A link each board's transceivers and the link IP can run, per board.
_LINKS = {
    "vc707": "{phy: aurora_64b66b, lanes: 1, line_rate: 10Gbps}",
    "zc706": "{phy: aurora_8b10b, lanes: 1, line_rate: 5Gbps}",
    "vcu118": "{phy: aurora_64b66b, lanes: 1, line_rate: 25.78125Gbps}",
    "alveo_u280": "{phy: aurora_64b66b, lanes: 1, line_rate: 25.78125Gbps}",
    "bee3_lx155t": "{phy: aurora_8b10b, lanes: 1, line_rate: 1.95Gbps}",
    "v5_lx330t_card": "{phy: aurora_8b10b, lanes: 1, line_rate: 2Gbps}",
    "stratix10mx_optics": "{phy: serial_lite_3, lanes: 2, line_rate: 25Gbps}",
}


def test_bee3_eight_x1_pairs_its_tiles():
    """BEE3 Eight-x1 (seven one-lane links per FPGA on four GTP_DUAL tiles): three tiles hold
    two links each (master on channel 0, slave on channel 1), the fourth one link; all use
    one core, whose tile optnet wraps."""
    plans, _ = _plans(ROOT / "examples" / "bee3_eight_x1.yaml")
    mgt = [q for q in plans[0].ports if q.phy == "aurora_8b10b"]
    assert [(q.xcvr.role, q.xcvr.channel, q.xcvr.groups) for q in mgt] == [
        ("master", 0, ((0, 0),)), ("slave", 1, ((0, 0),)), ("master", 0, ((0, 1),)),
        ("slave", 1, ((0, 1),)), ("master", 0, ((0, 2),)), ("slave", 1, ((0, 2),)),
        ("single", 0, ((0, 3),))]
    assert [q.xcvr.master for q in mgt if q.xcvr.role == "slave"] == [
        mgt[0].port, mgt[2].port, mgt[4].port]
    assert {ip_name(q) for q in mgt} == {"optnet_aurora_8b10b_x1"}


def test_every_transceiver_board_is_covered():
    boards = {p.stem for p in (ROOT / "boards").glob("*.yaml")}
    with_gts = {b for b in boards if "\ntransceivers:" in (ROOT / "boards" / f"{b}.yaml")
                .read_text() and "type: DCU" not in (ROOT / "boards" / f"{b}.yaml").read_text()}
    assert with_gts == set(_LINKS)


_TOPOLOGIES = pytest.mark.parametrize(
    "topology", ["{kind: ring, nodes: 8}", "{kind: torus, dims: [4, 4]}"], ids=["ring8", "torus16"])


@functools.cache
def _generated(board: str, topology: str) -> LintResult:
    """The generated cluster of ``board`` in ``topology`` linted once per session (the file
    goes into a folder removed at exit); skips the test when the board has too few ports."""
    folder = Path(tempfile.mkdtemp(prefix="optnet-gen-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / f"{board}.yaml"
    path.write_text(f"optnet: 1\nname: gen\ndefaults: {{board: {board}, link: {_LINKS[board]}}}"
                    f"\nnetwork: {{clock: 100MHz}}\ntopology: {topology}\n")
    return linted(path)


def _generated_ok(board: str, topology: str) -> LintResult:
    result = _generated(board, topology)
    errors = [d for d in result.diagnostics if d.severity.name == "ERROR"]
    if any(d.code == "E112" for d in errors):
        pytest.skip(f"board {board} has too few ports for {topology}")    # not a GT rule
    assert not errors, [str(d) for d in errors]
    return result


@_TOPOLOGIES
@pytest.mark.parametrize("board", sorted(_LINKS))
def test_generated_clusters_follow_the_device_rules(board, topology):
    result = _generated_ok(board, topology)
    plans, boards = _plans(result)
    for p in plans:
        _check_plan(p, boards[p.node])
        _check_ip(p, boards[p.node])


# ------------------------------------------------------- vendor scripts under the mocks

#: The vendor script of a node folder and the mock tool that runs it.
_TOOLS = {"vivado.tcl": "vivado", "ise.tcl": "ise", "quartus.tcl": "quartus"}

#: Per mock, the logged calls that name a file the tool reads, and which of their arguments.
_READS = {"add_files": 2, "read_xdc": 1, "read_verilog": 1, "xfile": 2, "source": 1,
          "coregen": 2, "qsys-script": 1, "qsys-generate": 1}


def _resolved(param: IpParam, values: dict[str, str]) -> str:
    """The value Tcl gives ``param``: a substituting word with the script's variables."""
    if not param.var:
        return param.value
    return re.sub(r"\$(\w+(?:\(\w+\))?)", lambda m: values[m.group(1)], param.value.strip('"'))


def _coregen(calls) -> dict[str, dict[str, str]]:
    """Per core CORE Generator made: its SELECT line (as "component") and CSET values."""
    cores: list[dict[str, str]] = []
    for c in calls:
        if c[0] == "coregen":
            cores.append({})
        elif c[0] == "coregen_select":
            cores[-1]["component"] = c[1]
        elif c[0] == "coregen_cset":
            cores[-1][c[1]] = c[2]
    return {core["component_name"]: core for core in cores}


def _scripts_follow_the_plan(tmp_path: Path, result: LintResult) -> int:
    """Run the vendor script of the first node of every hardware role of ``result`` under
    its mock tool (placeholder RTL, the real lint stubs and project files) and check the
    logged calls against the plan: the run ends with the bitstream, every file the tool is
    given exists, the project script sources ip.tcl before building, the IP made is the
    planned IP (names, components, every parameter with the script's values substituted),
    and every module the RTL instantiates has its ports checked, without a warning. Returns
    the number of scripts run."""
    routed = result.routed
    boards = {n.name: n.board for n in routed.cluster.nodes}
    runs = 0
    for p in plan(routed, tables=False, one_per_role=True):
        board = boards[p.node]
        folder, files = node_folder(tmp_path / p.node, p, board, routed.cluster.name)
        script = next((s for s in _TOOLS if s in files), None)
        if script is None:                  # the open ECP5 flow: test_makefile_ulx3s
            assert board.vendor == "lattice" and "Makefile" in files, p.node
            continue
        ips = link_ips(p, board)
        # A value the board file lacks is set as the script asks (test_ise_bee3_virtex5).
        env = {ip.refclk_env: "156.25" for ip in ips if ip.refclk_hz is None}
        values = {ip.refclk_var: env.get(ip.refclk_env) or _mhz(ip.refclk_hz) for ip in ips}
        if board.vendor == "xilinx" and board.family != "virtex5":
            values["init_clk_mhz"] = _init_clock(board, _clock_plan(p, board))[0]
        proc, calls = _run(_TOOLS[script], folder, script, env)
        runs += 1
        where = f"{routed.cluster.name} {p.node} ({board.name}): {proc.stdout[-2000:]}"
        _ok(proc, calls)
        assert "WARNING" not in proc.stdout, where
        bitstream = f"{p.node}.sof" if board.vendor == "intel" else f"{p.node}.bit"
        assert (folder / bitstream).is_file(), where

        # Every file the tool reads is in the node folder (the mocks also fail on one that
        # is not there when read), and the node's RTL and constraints are among them.
        read = {c[_READS[c[0]]] for c in calls if c[0] in _READS and len(c) > _READS[c[0]]}
        read |= {c[2] for c in calls if c[0] == "set_global_assignment" and c[1].endswith("FILE")}
        assert all((folder / f).is_file() for f in read), (where, read)
        given = {f for f in files if f.startswith(("rtl/", "constraints/"))}
        assert given <= read, (where, given - read)

        build = next(i for i, c in enumerate(calls)
                     if c[0] in ("launch_runs", "process", "execute_flow"))
        sourced = [i for i, c in enumerate(calls) if c == ["source", IP_SCRIPT]]
        assert (IP_SCRIPT in files) == bool(sourced), where
        assert all(i < build for i in sourced), where

        expected = {ip.name: {"component": ip.component,
                              **{q.name: _resolved(q, values) for q in ip.params}}
                    for ip in ips}
        if script == "vivado.tcl":
            made = _vivado_config(calls)
        elif script == "ise.tcl":
            made = _coregen(calls)
        else:
            systems = _qsys(calls)
            expected |= {pll.name: {"component": pll.component,
                                    **{q.name: _resolved(q, values) for q in pll.params}}
                         for pll in map(atx_pll, ips)}
            assert "optnet_iopll" in systems, where
            made = {name: s for name, s in systems.items() if name != "optnet_iopll"}
        assert made == expected, where

        modules = [m for ip in ips for m in _expected_modules(ip)]
        for module, ports in modules:
            assert f"the {len(ports)} ports of {module} match the RTL's black box" in \
                proc.stdout, (where, module)
        assert proc.stdout.count("match the RTL's black box") == len(modules), where
    return runs


@pytest.mark.parametrize("stem", [
    stem if stem == "plasticnet_ring4" else pytest.param(stem, marks=pytest.mark.slow)
    for stem in EXAMPLES])
def test_example_scripts_under_the_mocks(tmp_path, stem):
    """Every example: each hardware role's vendor script under its mock (the fast tier keeps
    PlasticNet, two Aurora cores sharing a quad)."""
    runs = _scripts_follow_the_plan(tmp_path, linted_example(stem))
    assert runs or stem == "ulx3s_ring4"


@pytest.mark.slow
@_TOPOLOGIES
@pytest.mark.parametrize("board", sorted(_LINKS))
def test_generated_cluster_scripts_under_the_mocks(tmp_path, board, topology):
    """Generated 8-node rings and 16-node tori of every board with transceivers: each
    hardware role's vendor script under its mock, as for the examples."""
    assert _scripts_follow_the_plan(tmp_path, _generated_ok(board, topology))


# ----------------------------------------------------------------- generated RTL and Tcl


# Per protocol: each slave input and the master output that drives it (7 series).
_WIRED = {
    "aurora_64b66b": {"refclk1_in": "gt_refclk1_out", "user_clk": "user_clk_out",
                      "sync_clk": "sync_clk_out", "mmcm_not_locked": "mmcm_not_locked_out",
                      "gt_qpllclk_quad{q}_in": "gt_qpllclk_quad{q}_out",
                      "gt_qpllrefclk_quad{q}_in": "gt_qpllrefclk_quad{q}_out",
                      "gt_qplllock_in": "gt_pll_lock"},
    "aurora_8b10b": {"gt_refclk1": "gt_refclk1_out", "user_clk": "user_clk_out",
                     "sync_clk": "sync_clk_out", "pll_not_locked": "pll_not_locked_out"},
}


@pytest.mark.parametrize("stem", ["plasticnet_ring4",
                                  pytest.param("bluedbm_20", marks=pytest.mark.slow)])
def test_slaves_take_their_masters_clocks(stem):
    """In the node's real Verilog with its board top (the netlist the CDC tests flatten),
    each slave core's reference clock, quad PLL and user clock inputs are nets of its master
    core's outputs, and only masters take the board's reference clock pins."""
    p, board, _, net = node_netlist(stem)
    cells = {c["type"]: c for c in net.cells.values() if c["type"].startswith("optnet_")}
    names = {q.port: ip_name(q) for q in p.ports}
    assert sorted(cells) == sorted(names.values())
    roles = [q.xcvr.role for q in p.ports]
    assert "slave" in roles and "master" in roles
    pins = {n: d["bits"] for n, d in net.netnames.items() if "." not in n}
    refclk_pins = [t.name for t in top_ports(p, board) if t.kind == "refclk"]
    for q in p.ports:
        cell = cells[names[q.port]]["connections"]
        if q.xcvr.role == "master":
            assert cell["gt_refclk1_p"] in [pins[n] for n in refclk_pins]
            continue
        master = cells[names[q.xcvr.master]]["connections"]
        for into, out_of in _WIRED[q.phy].items():
            quad = q.xcvr.quad
            assert cell[into.format(q=quad)] == master[out_of.format(q=quad)], into
        assert "gt_refclk1_p" not in cell
    assert set(SHARED_CLOCKS) >= {"refclk", "user_clk", "qpllclk"}


@pytest.mark.slow
def test_virtex5_tiles_in_the_node_netlist():
    """BEE3 Eight-x1 node with its board top: one GTP_TILE per used tile, one lane logic per
    link, each link's serial pins on the channel of its lane's site, and only tile owners
    take a reference clock."""
    p, board, _, net = node_netlist("bee3_eight_x1")
    cells: dict[str, list[dict]] = {}
    for c in net.cells.values():
        cells.setdefault(c["type"], []).append(c["connections"])
    mgt = [q for q in p.ports if q.phy == "aurora_8b10b"]
    assert len(cells["optnet_aurora_8b10b_x1_GTP_TILE"]) == len({q.xcvr.groups for q in mgt})
    assert len(cells["optnet_aurora_8b10b_x1_AURORA_LANE"]) == len(mgt)
    assert "optnet_aurora_8b10b_x1" not in cells
    pins = {n: d["bits"] for n, d in net.netnames.items() if "." not in n}
    for q in mgt:
        rxp = next(t.name for t in top_ports(p, board) if t.name.endswith(f"port{q.port}_rxp"))
        tile = [t for t in cells["optnet_aurora_8b10b_x1_GTP_TILE"]
                if t[f"RXP{q.xcvr.channel}_IN"] == pins[rxp]]
        assert len(tile) == 1, q.name


def test_u280_vivado_script_under_mocks(tmp_path):
    """A U280 ring: quad 134 has a master and a slave core clocked from MGTREFCLK1 (the
    SI546, whose FS and OE_B pins the board top drives), created by vivado.tcl as planned."""
    path = tmp_path / "u280.yaml"
    path.write_text("optnet: 1\nname: u280\ndefaults: {board: alveo_u280, link: {phy: "
                    "aurora_64b66b, lanes: 2, line_rate: 25.78125Gbps}}\nnetwork: {clock: "
                    "250MHz}\ntopology: {kind: ring, nodes: 4}\n")
    p, board, _, folder, _ = _node(tmp_path, path)
    proc, calls = _run("vivado", folder, "vivado.tcl")
    _ok(proc, calls)
    config = _vivado_config(calls)
    assert sorted(config) == ["optnet_aurora_64b66b_x2_master_x0q10",
                              "optnet_aurora_64b66b_x2_slave_x0q10"]
    for cfg in config.values():
        assert cfg["C_REFCLK_SOURCE"] == "MGTREFCLK1_of_Quad_X0Y10"
        assert Fraction(cfg["C_REFCLK_FREQUENCY"]) == Fraction("161.1328125")
    drives = {t.pins[0]: t.level for t in top_ports(p, board) if t.kind == "drive"}
    assert drives == {"G32": 1, "H32": 0}
    # ... and the board top does hold them there, on ports the XDC puts on those pins.
    from optnet.emit.board import board_top_files, top_module
    from optnet.emit.constraints import constraint_files

    verilog = board_top_files(p, board)[f"rtl/{top_module(p)}.v"]
    xdc = constraint_files(p, board)[f"constraints/{p.node}.xdc"]
    for t in top_ports(p, board):
        if t.kind != "drive":
            continue
        assert re.search(rf"^\s*output {t.name};", verilog, re.M), t.name
        assert re.search(rf"^\s*assign {t.name} = 1'h{t.level};", verilog, re.M), t.name
        assert re.search(rf"PACKAGE_PIN {t.pins[0]} [^}}]*\}} \[get_ports \{{?{t.name}\}}?\]",
                         xdc), t.name


def test_stratix10_gxt_channels_and_banks():
    """With channel sites, GXT lanes must sit on channels 0, 1, 3 or 4 of a bank
    (UG-683621 3.1.1.2), at most four per bank; lanes of one port count in their own banks."""
    from optnet.boards import load_library
    from optnet.plan.transceivers import LinkPort, transceiver_plan

    board = load_library([ROOT / "boards"]).boards["stratix10mx_optics"]
    ports = dict(board.ports)

    def sited(name, sites):
        lanes = [lane.model_copy(update={"site": site})
                 for lane, site in zip(ports[name].lanes, sites, strict=True)]
        ports[name] = ports[name].model_copy(update={"lanes": lanes})

    sited("optical0", ["GXB1C_CH0", "GXB1C_CH1", "GXB1C_CH3", "GXB1C_CH4"])
    sited("optical1", ["GXB1D_CH0", "GXB1D_CH1", "GXB1D_CH2", "GXB1D_CH3"])
    b = board.model_copy(update={"ports": ports})
    gxt = 25_000_000_000

    def run(*links):
        return transceiver_plan("n0", b, [LinkPort(k + 1, f"{bp}[{lanes}]", bp, lanes,
                                                   "serial_lite_3", gxt)
                                          for k, (bp, lanes) in enumerate(links)])

    plan_, found = run(("optical0", (0, 1)), ("optical0", (2, 3)))
    assert found == [] and {x.pll for x in plan_.ports.values()} == {"ATX"}
    _, found = run(("optical1", (2, 3)))
    assert [f.code for f in found] == ["E335"]
    assert "channel 2 of its bank (GXB1D_CH2), which is GX only" in found[0].message
    _, found = run(("optical1", (0, 1)))
    assert found == []


def test_stratix10_gxt_refclk_triplet():
    """A GXT link's reference clock pin is in the triplet of its lanes (UG-683621 3.1.1.2):
    either triplet when the lanes fill both, never another bank; without a pin site the
    rule is noted as unchecked. The E335 fixture has the other triplet's pin."""
    from optnet.boards import load_library
    from optnet.plan.transceivers import LinkPort, transceiver_plan
    from optnet.spec.models import RefClkDesc

    board = load_library([ROOT / "boards"]).boards["stratix10mx_optics"]
    ports = dict(board.ports)

    def sited(name, sites, refclk):
        lanes = [lane.model_copy(update={"site": site})
                 for lane, site in zip(ports[name].lanes, sites, strict=True)]
        rc = None if refclk is None else RefClkDesc.model_validate(
            {"freq": "644.53125MHz", "site": refclk})
        ports[name] = ports[name].model_copy(update={"lanes": lanes, "refclk": rc})

    four = ["GXB1C_CH0", "GXB1C_CH1", "GXB1C_CH3", "GXB1C_CH4"]
    sited("optical0", four, "REFCLK_GXBL1C_CHB")
    sited("optical1", four, "REFCLK_GXBL1D_CHB")      # another bank
    sited("optical2", four, None)
    b = board.model_copy(update={"ports": ports})

    def run(*links, rate=25_000_000_000):
        return transceiver_plan("n0", b, [LinkPort(k + 1, f"{bp}[{lanes}]", bp, lanes,
                                                   "serial_lite_3", rate)
                                          for k, (bp, lanes) in enumerate(links)])

    # Lanes 0-1 in the bottom triplet (its pin): fine; lanes 2-3 in the top: E335.
    plan_, found = run(("optical0", (0, 1)))
    assert found == [] and not any("triplet" in n for n in plan_.notes)
    _, found = run(("optical0", (2, 3)))
    assert [f.code for f in found] == ["E335"]
    assert ("on GXB1C_CH3, GXB1C_CH4 (the top triplet of bank 1C), but its reference clock "
            "is REFCLK_GXBL1C_CHB, the bottom triplet's pin of bank 1C") in found[0].message
    assert "REFCLK_GXBL1C_CHT" in found[0].hint
    # Four lanes over both triplets: either triplet's ATX PLL may be the master.
    _, found = run(("optical0", (0, 1, 2, 3)))
    assert found == []
    _, found = run(("optical1", (0, 1, 2, 3)))
    assert [f.code for f in found] == ["E335"]
    assert "REFCLK_GXBL1C_CHB or REFCLK_GXBL1C_CHT" in found[0].hint
    # GX rates are not bound to the triplet; a GXT link without a pin site is noted.
    _, found = run(("optical1", (0, 1)), rate=10_312_500_000)
    assert found == []
    plan_, found = run(("optical2", (0, 1)))
    assert found == [] and any("optical2[(0, 1)]" in n and "not checked" in n
                               for n in plan_.notes)


def test_generated_gxt_links_take_their_refclk_triplet(tmp_path):
    """Topology links take lanes in the triplet of their port's reference clock pin first,
    so a ring on ports clocked from one triplet each meets the GXT triplet rule (E335)."""
    board = (ROOT / "tests/fixtures/bad/boards/s10_triplet.yaml").read_text()
    board = board.replace("name: s10_triplet", "name: s10_two")
    ports = board[board.index("ports:"):board.index("source:")]
    board = board.replace(ports, """ports:
  qsfp0:
    kind: serial
    connector: QSFP28
    refclk: {freq: 644.53125MHz, site: REFCLK_GXBL1C_CHT}
    lanes: [{site: GXB1C_CH0}, {site: GXB1C_CH1}, {site: GXB1C_CH3}, {site: GXB1C_CH4}]
  qsfp1:
    kind: serial
    connector: QSFP28
    refclk: {freq: 644.53125MHz, site: REFCLK_GXBL1D_CHB}
    lanes: [{site: GXB1D_CH0}, {site: GXB1D_CH1}, {site: GXB1D_CH3}, {site: GXB1D_CH4}]
""")
    result = lint_on_board(tmp_path, "s10_two", board,
                           "{phy: serial_lite_3, line_rate: 25Gbps, lanes: 2}", 3)
    ends = {(e.port, e.lanes) for link in result.routed.cluster.links for e in (link.a, link.b)}
    assert ends == {("qsfp0", (2, 3)), ("qsfp1", (0, 1))}


def test_stratix10_atx_placement():
    """The plan places a GXT link's ATX PLLs one to each triplet of its lanes, a GX link's
    one in its first lane's bank, and without sites a GXT link's in pairs of lanes; the
    two-per-bank rule (E335) counts these PLLs."""
    from optnet.boards import load_library
    from optnet.plan.transceivers import LinkPort, TxPllPlan, transceiver_plan

    board = load_library([ROOT / "boards"]).boards["stratix10mx_optics"]
    ports = dict(board.ports)
    lanes = [lane.model_copy(update={"site": site}) for lane, site in zip(
        ports["optical0"].lanes, ["GXB1C_CH0", "GXB1C_CH1", "GXB1C_CH3", "GXB1C_CH4"],
        strict=True)]
    ports["optical0"] = ports["optical0"].model_copy(update={"lanes": lanes})
    b = board.model_copy(update={"ports": ports})

    def run(*links, rate=25_000_000_000):
        return transceiver_plan("n0", b, [LinkPort(k + 1, f"{bp}[{lanes}]", bp, lanes,
                                                   "serial_lite_3", rate)
                                          for k, (bp, lanes) in enumerate(links)])

    plan_, found = run(("optical0", (0, 1, 2, 3)))
    assert found == [] and plan_.ports[1].tx_plls == (
        TxPllPlan("ATX", (0, 1), True, (1, 0), 0), TxPllPlan("ATX", (2, 3), True, (1, 0), 1))
    plan_, found = run(("optical0", (1, 2)))
    assert found == [] and [(t.lanes, t.triplet) for t in plan_.ports[1].tx_plls] == [
        ((0,), 0), ((1,), 1)]
    plan_, found = run(("optical0", (0, 1, 2, 3)), rate=10_312_500_000)
    assert found == [] and plan_.ports[1].tx_plls == (
        TxPllPlan("ATX", (0, 1, 2, 3), False, (1, 0), None),)
    plan_, found = run(("optical2", (0, 1, 2)))
    assert found == [] and plan_.ports[1].tx_plls == (
        TxPllPlan("ATX", (0, 1), True), TxPllPlan("ATX", (2,), True))
    # One lane in each triplet needs both of the bank's ATX PLLs: a third link is one too many.
    _, found = run(("optical0", (0, 2)), ("optical0", (1,)))
    assert [f.code for f in found] == ["E335"]
    assert "needs 3 ATX PLLs in bank X1 #0" in found[0].message


@pytest.mark.parametrize(("channels", "placed"), [
    ((0, 1, 3, 4), [((0, 1), 0), ((2, 3), 1)]),
    ((0, 3, 1, 4), [((0, 2), 0), ((1, 3), 1)]),
])
def test_board_top_instantiates_the_planned_atx_plls(tmp_path, channels, placed):
    """The board top's ATX PLL instances are the transceiver plan's, lane for lane: each
    lane's serial clock comes from the ATX PLL of its triplet, whatever the lane order."""
    from optnet.emit.board import board_top_files

    board = (ROOT / "tests/fixtures/bad/boards/s10_triplet.yaml").read_text()
    board = board.replace("name: s10_triplet", "name: s10_sited")
    ports = board[board.index("ports:"):board.index("source:")]
    sites = ", ".join(f"{{site: GXB1C_CH{c}}}" for c in channels)
    board = board.replace(ports, f"""ports:
  qsfp0:
    kind: serial
    connector: QSFP28
    refclk: {{freq: 644.53125MHz, site: REFCLK_GXBL1C_CHB}}
    lanes: [{sites}]
""")
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "s10_sited.yaml").write_text(board)
    path = tmp_path / "pair.yaml"
    path.write_text("optnet: 1\nname: pair\ndefaults: {board: s10_sited, link: {phy: "
                    "serial_lite_3, line_rate: 25Gbps, lanes: 4}}\n"
                    "nodes: [{name: a, id: 0}, {name: b, id: 1}]\n"
                    "links: [{from: a.qsfp0, to: b.qsfp0}]\n")
    result = lint_file(path)
    assert result.ok, [str(d) for d in result.diagnostics]
    p, b = plan(result.routed)[0], result.routed.cluster.nodes[0].board
    (tx,) = clock_plan(p, b).tx_plls
    assert tx.placement == p.ports[0].xcvr.tx_plls
    assert [(t.lanes, t.bank, t.triplet) for t in tx.placement] == [
        (lanes, (1, 0), triplet) for lanes, triplet in placed]
    assert (tx.instances, tx.lanes_per_instance, tx.output_port) == (2, 2, "tx_serial_clk_gxt")
    top = board_top_files(p, b)["rtl/a_top.v"]
    serial = {lane: f"port1_atx_pll{k}_serial" for k, (lanes, _) in enumerate(placed)
              for lane in lanes}
    assert (f"assign net_port1_tx_serial_clk = {{ "
            f"{', '.join(serial[lane] for lane in (3, 2, 1, 0))} }};") in top
