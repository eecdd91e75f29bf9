"""``optnet build``: the tree, its determinism, atomic replacement and path safety."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from optnet.cli import cli
from optnet.emit import writer
from optnet.emit.writer import OutputError, check_relative, write_tree

ROOT = Path(__file__).resolve().parent.parent
RING = ROOT / "examples" / "ulx3s_ring4.yaml"
NODE_FILES = {"README.md", "rtl/{n}.v", "rtl/{n}_top.v", "stubs/primitives.v",
              "stubs/board_primitives.v", "constraints/{n}.lpf", "Makefile", "tables/mcast.hex",
              "tables/routes.h", "tables/routes.hex", "tables/routes.json", "{n}.core"}


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _build(*args: str) -> tuple[int, str]:
    verbose = [a for a in args if a == "-v"]
    args = tuple(a for a in args if a != "-v")
    result = CliRunner().invoke(cli, [*verbose, "build", *args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def ring_build(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ring") / "out"
    code, output = _build(str(RING), "-o", str(out))
    assert code == 0, output
    return out


def test_tree_has_every_file_and_the_manifest_hashes_them(ring_build):
    tree = _tree(ring_build)
    expected = {"manifest.json", "report.json", "report.md", "report.html", "cabling.csv",
                "cabling.md", "topology.svg", "host/optnet_host.py", "host/optnet_host.h",
                "host/optnet_openocd.tcl"}
    for n in ("n0", "n1", "n2", "n3"):
        expected |= {f"nodes/{n}/{f.format(n=n)}" for f in NODE_FILES}
    assert set(tree) == expected
    manifest = json.loads(tree["manifest.json"])
    assert manifest["optnet"] and manifest["cluster"] == "ulx3s_ring4"
    assert set(manifest["files"]) == expected - {"manifest.json"}
    for rel, digest in manifest["files"].items():
        assert hashlib.sha256(tree[rel]).hexdigest() == digest, rel
    (name,) = manifest["inputs"]
    assert name.endswith("examples/ulx3s_ring4.yaml")
    assert list(manifest["boards"]) == ["ulx3s"]


def test_cabling_plan_has_one_row_per_link(ring_build):
    rows = list(csv.DictReader((ring_build / "cabling.csv").open()))
    assert [(r["from"], r["to"]) for r in rows] == [
        ("n0.gpio_link0", "n1.gpio_link0"), ("n1.gpio_link1", "n2.gpio_link0"),
        ("n2.gpio_link1", "n3.gpio_link0"), ("n3.gpio_link1", "n0.gpio_link1")]
    assert {(r["from_lanes"], r["lanes"], r["length"], r["phy"], r["line_rate"],
             r["from_connector"]) for r in rows} == {("0-1", "2", "30cm", "lvds", "160Mbps",
                                                      "header")}
    md = (ring_build / "cabling.md").read_text()
    assert "| 3 | n3.gpio_link1 | 0-1 | header | n0.gpio_link1 |" in md


def test_topology_drawing_is_svg_with_every_node_and_link(ring_build):
    svg = ET.parse(ring_build / "topology.svg").getroot()
    ns = {"s": "http://www.w3.org/2000/svg"}
    assert len(svg.findall(".//s:circle", ns)) == 4
    assert len(svg.findall(".//s:g[@class='links']/s:line", ns)) == 4
    labels = {t.text for t in svg.findall(".//s:g[@class='nodes']//s:text", ns)}
    assert labels == {"n0", "n1", "n2", "n3"}


def test_node_readme_and_core(ring_build):
    readme = (ring_build / "nodes/n1/README.md").read_text()
    assert "| 1 | gpio_link0 | 0, 1 | lvds | 160Mbps | n0.gpio_link0 |" in readme
    assert "| app | 32 | yes | `app_s_axis_*` | `app_m_axis_*` |" in readme
    # the LED map and the bring-up registers (issue 21)
    assert "| 0 | B2 | heartbeat: about 1 Hz while the network clock runs" in readme
    assert "| 1 | C2 | link 0 (router port 1, gpio_link0) up |" in readme
    assert "| 3 | D2 | off (no link left to show) |" in readme
    assert "| 7 | H3 | trouble: a packet dropped, or a bring-up checker" in readme
    assert "| 0x1004 | `app.received` | r | packets checked |" in readme
    assert "FPGA TX L4, RX M1" in readme


def test_host_module_and_header(ring_build, tmp_path):
    """The host module names the nodes, endpoints and registers, and speaks the UART
    protocol (against a stand-in for the serial port); the header compiles."""
    namespace: dict = {}
    exec((ring_build / "host/optnet_host.py").read_text(), namespace)
    assert namespace["NODES"] == {"n0": 0, "n1": 1, "n2": 2, "n3": 3}
    assert namespace["ENDPOINTS"] == {"app": 0} and namespace["LINKS"]["n2"] == 2
    regs = namespace["REGISTERS"]
    assert (regs["magic"], regs["link1.crc_errors"], regs["app.bad_beats"]) == (
        0, 0x111, 0x1006)

    class Port:
        def __init__(self, answer):
            self.sent, self.answer = b"", answer

        def write(self, data):
            self.sent += data

        def read(self, n):
            out, self.answer = self.answer[:n], self.answer[n:]
            return out

    port = Port(b"OPTN")
    assert namespace["read"](port, 0) == namespace["MAGIC"] and port.sent == b"r\x00\x00"
    port = Port(b"k")
    namespace["write"](port, 0x1000, 1)
    assert port.sent == b"w\x10\x00\x00\x00\x00\x01"
    with pytest.raises(TimeoutError, match="no answer to a read of register 0x1004"):
        namespace["read"](Port(b""), 0x1004)
    header = ring_build / "host/optnet_host.h"
    test = tmp_path / "t.c"
    test.write_text(f'#include "{header}"\n'
                    "_Static_assert(OPTNET_REG_APP_RECEIVED == 0x1004u, \"address\");\n"
                    "_Static_assert(OPTNET_NODE_N3 == 3u, \"id\");\n")
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to check the header with")
    result = subprocess.run([cc, "-fsyntax-only", "-Wall", "-Werror", str(test)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_core_parses_with_fusesoc(ring_build):
    from fusesoc.capi2.core import CoreInterface
    from fusesoc.capi2.coreparser import Core2Parser

    core = CoreInterface(Core2Parser(), ring_build / "nodes/n2/n2.core")
    assert str(core.name) == "optnet:ulx3s_ring4:n2:0"
    flags = {"target": "lint", "is_toplevel": True, "tool": "verilator"}
    assert [f["name"] for f in core.get_files(flags)] == [
        "rtl/n2.v", "rtl/n2_top.v", "stubs/board_primitives.v", "stubs/primitives.v"]
    assert core.get_toplevel(flags) == "n2_top"
    synth = {"target": "synth", "is_toplevel": True, "tool": "trellis"}
    assert [(f["name"], f["file_type"]) for f in core.get_files(synth)] == [
        ("rtl/n2.v", "verilogSource"), ("rtl/n2_top.v", "verilogSource"),
        ("constraints/n2.lpf", "LPF")]
    assert core.get_tool_options(synth)["nextpnr_options"] == [
        "--85k", "--package", "CABGA381", "--speed", "6"]
    for target in ("default", "lint", "synth"):
        for f in core.get_files({"target": target, "is_toplevel": True}):
            assert (ring_build / "nodes/n2" / f["name"]).is_file()


@pytest.mark.slow     # test_writer checks the same on write_tree without lowering
def test_rebuild_keeps_unchanged_files_and_their_mtimes(ring_build, tmp_path):
    out = tmp_path / "out"
    code, _ = _build(str(RING), "-o", str(out), "--nodes", "n0,n1")
    assert code == 0
    before = {rel: (out / rel).stat().st_mtime_ns for rel in _tree(out)}
    code, output = _build("-v", str(RING), "-o", str(out), "--nodes", "n0,n1")
    assert code == 0 and "0 written" in output, output
    assert {rel: (out / rel).stat().st_mtime_ns for rel in _tree(out)} == before
    assert {p.name for p in (out / "nodes").iterdir()} == {"n0", "n1"}
    assert not [p for p in tmp_path.iterdir() if p.name != "out"]   # no staging left


def test_builds_are_byte_identical_across_hash_seeds(ring_build, tmp_path):
    trees = []
    for seed in ("1", "4242"):
        out = tmp_path / f"seed{seed}"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run([sys.executable, "-m", "optnet", "build", str(RING), "-o", str(out),
                        "--nodes", "n3", "--jobs", "2"], check=True, env=env,
                       capture_output=True)
        trees.append(_tree(out))
    assert trees[0] == trees[1]
    whole = _tree(ring_build)
    assert trees[0]["nodes/n3/rtl/n3.v"] == whole["nodes/n3/rtl/n3.v"]


def _manifest(files: dict[str, bytes]) -> dict[str, bytes]:
    # What write_tree will replace later: files with an optnet manifest listing them.
    return files | {"manifest.json": writer.manifest_text({"format": "optnet-test"},
                                                          files).encode()}


def test_failed_write_leaves_previous_build_intact(tmp_path, monkeypatch):
    out = tmp_path / "out"
    old = _manifest({"a/b.txt": b"old"})
    write_tree(out, old)
    calls = []
    real = writer._write_all

    def failing(fd, data):
        calls.append(data)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(writer, "_write_all", failing)
    with pytest.raises(OutputError, match="No space left on device"):
        write_tree(out, _manifest({"a/b.txt": b"new", "c.txt": b"x"}))
    monkeypatch.undo()
    assert _tree(out) == old
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_exchange_without_renameat2_still_replaces(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_tree(out, _manifest({"a": b"1"}))
    monkeypatch.setattr(writer.ctypes.util, "find_library", lambda name: None)
    write_tree(out, _manifest({"a": b"2", "x": b"y"}))
    assert _tree(out) == _manifest({"a": b"2", "x": b"y"})
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", "a/../../b", "a\\b", "", "a//b",
                                 "./a", "a\0b"])
def test_paths_that_would_leave_the_output_are_refused(rel, tmp_path):
    with pytest.raises(OutputError, match="would leave the output directory"):
        check_relative(rel)
    with pytest.raises(OutputError):
        write_tree(tmp_path / "out", {rel: b"x"})
    assert not (tmp_path / "out").exists()


def test_a_foreign_directory_is_not_replaced(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    code, output = _build(str(RING), "-o", str(out), "--nodes", "n0")
    assert code == 2
    assert f"The output directory '{out}' is not empty and holds no manifest.json" in output
    assert _tree(out) == {"thesis.tex": b"precious"}


def test_unknown_node_and_bad_cluster_exit_codes(tmp_path):
    code, output = _build(str(RING), "-o", str(tmp_path / "o"), "--nodes", "n0,../../x")
    assert code == 2 and "no node called '../../x'" in output
    bad = tmp_path / "bad.yaml"
    bad.write_text("optnet: 1\nname: x\nnodes: [{name: a, board: nosuchboard}]\n")
    code, output = _build(str(bad), "-o", str(tmp_path / "o"))
    assert code == 1 and "nosuchboard" in output
    assert not (tmp_path / "o").exists()
