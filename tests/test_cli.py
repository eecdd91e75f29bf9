"""The command line: exit codes, output formats, schema, library listings."""

from __future__ import annotations

import json

import jsonschema
import pytest

from optnet import __version__
from optnet.diagnostics import CODES
from optnet.schema import board_schema, cluster_schema

from .conftest import FIXTURES, ROOT

BAD = "tests/fixtures/bad"


def test_version(run):
    result = run("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"optnet, version {__version__}"


@pytest.mark.parametrize("command", ["lint", "route", "schema", "boards", "topologies"])
def test_every_command_has_help(run, command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Usage: cli " + command in result.output


def test_clean_file_exits_0(run):
    result = run("lint", "examples/bluedbm_20.yaml")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""


def test_errors_exit_1_with_source_line_and_caret(run):
    result = run("lint", f"{BAD}/E103_unknown_port.yaml")
    assert result.exit_code == 1
    assert result.stdout == (
        f"{BAD}/E103_unknown_port.yaml:6:12: error[E103]: The link end 'a.qsfp0' names port "
        "'qsfp0', but node 'a' is a vc707, which has no such port. Did you mean 'sfp0'?\n"
        " 6 |   - {from: a.qsfp0, to: b.sfp0}\n"
        "   |            ^^^^^^^\n"
        "   = hint: Ports of vc707: sfp0, sma, fmc1_hpc, fmc2_hpc.\n")


def test_related_location_is_shown(run):
    result = run("lint", f"{BAD}/E021_duplicate_name.yaml")
    assert f"   = note: {BAD}/E021_duplicate_name.yaml:5:12: first defined here" in result.output


def test_warnings_exit_0_unless_strict(run):
    path = f"{BAD}/W102_packet_exceeds_buffer.yaml"
    assert run("lint", path).exit_code == 0
    assert run("lint", "--strict", path).exit_code == 1


def test_missing_file_exits_2(run):
    result = run("lint", "does/not/exist.yaml")
    assert result.exit_code == 2
    assert "optnet: cannot read does/not/exist.yaml: No such file or directory" in result.output


def test_unknown_option_exits_2(run):
    assert run("lint", "--format", "xml", "x.yaml").exit_code == 2


def test_json_format(run):
    result = run("lint", "--format", "json", f"{BAD}/E104_port_reused.yaml")
    doc = json.loads(result.output)
    assert doc["summary"] == {"errors": 1, "warnings": 0, "files": 1}
    [diag] = doc["diagnostics"]
    assert diag["code"] == "E104" and diag["name"] == "port-reused"
    assert diag["location"] == {"file": f"{BAD}/E104_port_reused.yaml", "line": 7,
                                "column": 12, "end_line": 7, "end_column": 18}


def test_sarif_validates_against_2_1_0_schema(run):
    files = [str(p.relative_to(ROOT)) for p in sorted((FIXTURES / "bad").glob("*.yaml"))]
    result = run("lint", "--format", "sarif", *files)
    assert result.exit_code == 1
    doc = json.loads(result.output)
    schema = json.loads((FIXTURES.parent / "data" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(doc, schema)
    run_ = doc["runs"][0]
    assert {r["id"] for r in run_["tool"]["driver"]["rules"]} == set(CODES)
    assert {r["ruleId"] for r in run_["results"]} == set(CODES)
    for res in run_["results"]:
        rule = run_["tool"]["driver"]["rules"][res["ruleIndex"]]
        assert rule["id"] == res["ruleId"]


def test_github_format(run):
    result = run("lint", "--format", "github", f"{BAD}/E109_self_loop.yaml")
    assert result.stdout == (
        f"::error file={BAD}/E109_self_loop.yaml,line=7,col=5,endColumn=39,"
        "title=E109 self-loop::Link a.fmc1_hpc -- a.fmc2_hpc connects node 'a' to itself.\n")


def test_schema_matches_shipped_files(run):
    assert json.loads(run("schema").output) == cluster_schema()
    shipped = json.loads((ROOT / "schema" / "cluster.schema.json").read_text())
    assert shipped == cluster_schema(), "regenerate: optnet schema > schema/cluster.schema.json"
    shipped = json.loads((ROOT / "schema" / "board.schema.json").read_text())
    assert shipped == board_schema(), "regenerate: optnet schema --board > schema/board.schema.json"


def test_examples_validate_against_json_schema():
    import yaml
    schema = cluster_schema()
    for path in sorted((ROOT / "examples").glob("*.yaml")) + sorted(
            (ROOT / "topologies").glob("*.yaml")):
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    schema = board_schema()
    for path in sorted((ROOT / "boards").glob("*.yaml")):
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_boards_listing(run):
    result = run("boards", "--format", "json")
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert rows["vc707"]["part"] == "xc7vx485tffg1761-2"
    assert rows["vc707"]["transceivers"] == "GTX 10.3125Gbps"
    assert rows["ulx3s"]["transceivers"] == ""
    assert rows["ulx3s_12f"]["part"].startswith("LFE5U-12F")
    text = run("boards").output
    assert "alveo_u280" in text and "stratix10mx_optics" in text


def test_topologies_listing(run):
    rows = {row["name"]: row for row in json.loads(run("topologies", "--format", "json").output)}
    assert rows["bee3_two_x4"] == {
        "name": "bee3_two_x4", "kind": "hierarchical", "nodes": 32, "links": 76,
        "board": "bee3_lx155t", "ok": True,
        "description": "BEE3 Two-x4, 8 enclosures x 4 FPGAs, every enclosure pair joined by one "
                       "x4 channel"}
    assert all(row["ok"] for row in rows.values())


def test_format_reference_is_current(run):
    """docs/format.md is generated from the schema (OPTNET_UPDATE_GOLDEN=1 rewrites it)."""
    from .conftest import UPDATE_GOLDEN
    generated = run("schema", "--markdown").stdout
    path = ROOT / "docs" / "format.md"
    if UPDATE_GOLDEN:
        path.write_text(generated)
    assert path.read_text() == generated
    assert "| E104 | port-reused | error |" in generated
    assert "| `vcs` | integer 1..16 |  | `2` | Virtual channels per link. |" in generated


def test_no_route_skips_the_deadlock_proof(run):
    path = "tests/fixtures/bad/E201_deadlock.yaml"
    assert run("lint", path).exit_code == 1
    assert run("lint", "--no-route", path).exit_code == 0


def test_examples_and_init(run, tmp_path, monkeypatch):
    listed = json.loads(run("examples", "--format", "json").stdout)
    assert {row["name"] for row in listed} == {p.stem for p in (ROOT / "examples").glob("*.yaml")}
    ring = next(row for row in listed if row["name"] == "ulx3s_ring4")
    assert (ring["nodes"], ring["board"]) == (4, "ulx3s")
    monkeypatch.chdir(tmp_path)
    made = run("init", "--from", "ulx3s_ring4")
    assert made.exit_code == 0, made.output
    text = (tmp_path / "ulx3s_ring4.yaml").read_text()
    # the same cluster, with the modeline pointing at the installed schema
    shipped = (ROOT / "examples" / "ulx3s_ring4.yaml").read_text().splitlines()
    assert text.splitlines()[1:] == shipped[1:]
    assert text.startswith("# yaml-language-server: $schema=file://")
    assert run("lint", "ulx3s_ring4.yaml").exit_code == 0
    again = run("init", "--from", "ulx3s_ring4")
    assert again.exit_code == 2 and "does not overwrite" in again.stderr
    assert (tmp_path / "ulx3s_ring4.yaml").read_text() == text
    unknown = run("init", "mine.yaml", "--from", "ulx3s")
    assert unknown.exit_code == 2 and "no example called 'ulx3s'" in unknown.stderr
    assert not (tmp_path / "mine.yaml").exists()


def test_python_m_optnet_without_a_dependency_says_what_to_install():
    """``python -m optnet`` from an interpreter lacking a dependency: a sentence, exit 2."""
    import subprocess
    import sys

    code = ("import runpy, sys; sys.modules['rich'] = None; sys.argv = ['optnet', 'lint']; "
            "runpy.run_module('optnet', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "the package 'rich' optnet needs is not installed" in proc.stderr
    # every missing one is named at once, so one install fixes it
    proc = subprocess.run([sys.executable, "-c", code.replace(
        "sys.modules['rich'] = None", "sys.modules['rich'] = sys.modules['numpy'] = None")],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "the packages 'numpy', 'rich' optnet needs are not installed" in proc.stderr
