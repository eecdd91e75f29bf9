"""Injection through board and cluster text fields (issue 17, point 4).

Board files come from users' repositories, and their values end up in Tcl scripts,
constraint files, Makefiles, FuseSoC cores, CSV, Markdown and HTML. Two defences are tested:

1. the schema refuses every payload in every field that reaches a tool file, with the exact
   diagnostic (code, line, column, message);
2. with the schema bypassed (model objects changed without validation), the emitters escape
   the payload for each language, or refuse to write it (:class:`EscapeError`, or the
   :class:`ProjectError` or :class:`PllError` of a value a flow must parse): the Tcl
   scripts and constraint files run under ``tclsh`` with the mock vendor commands
   (``tests/tcl``) without running the payload and with the same recorded commands as the
   unchanged board, ``make -n`` runs no payload, CSV parses back to the same cells,
   Markdown table rows keep their column count, YAML loads back to the same keys and
   values, HTML carries no markup from a value.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from optnet.boards import load_board_file
from optnet.emit.build import CableRow, fusesoc_core, node_readme
from optnet.emit.constraints import constraint_files
from optnet.emit.env import EscapeError, render_template
from optnet.emit.escape import Raw
from optnet.emit.projects import project_files
from optnet.emit.stubs import port_stub
from optnet.lint import lint_file
from optnet.plan import plan as plan_hw
from optnet.plan.clocks import PllError
from optnet.plan.ip import ProjectError, ip_name
from optnet.report.render import report_files
from optnet.spec import models as m
from optnet.spec.names import check_identifier

from .conftest import ROOT
from .hwtools import missing_tool

MOCKS = Path(__file__).resolve().parent / "tcl"

#: Each payload attacks one language; every one is tried in every field.
PAYLOADS = {
    "tcl_brace": "x}; exec touch PWNED; #",
    "tcl_command": "[exec touch PWNED]",
    "make_shell": "$(shell touch PWNED)",
    "make_rule": '"\nall:\n\ttouch PWNED',
    "pipe": "a|b",
    "markup": "<script>",
    "newline": "x\ny",
    "nul": "x\x00y",
}
IDS = list(PAYLOADS)
#: Payloads holding a control character: even free text (descriptions) refuses them.
CONTROL = {k for k, v in PAYLOADS.items() if re.search(r"[\x00-\x1f]", v)}


# --------------------------------------------------------------------------- schema

_BOARD = """\
optnet_board: 1
name: {name}
description: {description}
vendor: xilinx
family: {family}
part: {part}
resources: {{lut: 1, ff: 1, bram: {{blocks: 1, size: 36Kib}}}}
transceivers: {{type: {type}, max_line_rate: 10Gbps}}
clocks:
  {clock}: {{freq: 200MHz, p: {clock_p}, n: E18, iostandard: {clock_std}}}
leds: {{pins: [{led}], iostandard: LVCMOS18}}
ports:
  {port}:
    kind: serial
    connector: {connector}
    refclk: {{freq: 156.25MHz, p: {refclk_p}, n: AH7, site: {refclk_site}}}
    lanes:
      - {{site: {site}, tx_p: {tx_p}, tx_n: AM3, rx_p: AL6, rx_n: AL5}}
source: {source}
"""
_BOARD_OK = {"name": "evil", "description": "A test board", "family": "virtex7",
             "part": "xc7vx485tffg1761-2", "type": "GTX", "clock": "sys", "clock_p": "E19",
             "clock_std": "LVDS", "led": "AM39", "port": "sfp0", "connector": "SFP+",
             "refclk_p": "AH8", "refclk_site": "IBUFDS_GTE2_X1Y6",
             "site": "GTXE2_CHANNEL_X1Y13", "tx_p": "AM4", "source": "test"}

#: Board fields with a strict form: placeholder -> (shown path, form).
BOARD_FORMS = {
    "part": ("'part'", m.PART),
    "family": ("'family'", m.FAMILY),
    "type": ("'transceivers.type'", m.TRANSCEIVER),
    "clock_p": ("'clocks.sys.p'", m.PIN),
    "clock_std": ("'clocks.sys.iostandard'", m.IOSTANDARD),
    "led": ("'leds.pins[0]'", m.PIN),
    "connector": ("'ports.sfp0.connector'", m.CONNECTOR),
    "refclk_p": ("'ports.sfp0.refclk.p'", m.PIN),
    "refclk_site": ("'ports.sfp0.refclk.site'", m.SITE),
    "site": ("'ports.sfp0.lanes[0].site'", m.SITE),
    "tx_p": ("'ports.sfp0.lanes[0].tx_p'", m.PIN),
    "description": ("'description'", m.LINE),
    "source": ("'source'", m.TEXT),
}
#: Board names (keys of mappings, or the file's own name) that must be identifiers.
BOARD_NAMES = {"name": "board name", "clock": "clock name on board 'evil'",
               "port": "port name on board 'evil'"}


def _yaml_text(template: str, ok: dict[str, str], field: str, value: str
               ) -> tuple[str, int, int]:
    """The file with ``field`` set to ``value`` (a YAML double-quoted scalar), and the line
    and column where that value starts."""
    values = {k: (json.dumps(value) if k == field else v) for k, v in ok.items()}
    text = template.format(**values)
    marker = template.format(**{k: ("\0" if k == field else v) for k, v in ok.items()})
    before = marker[:marker.index("\0")]
    return text, before.count("\n") + 1, len(before) - before.rfind("\n")


def _bad_form(subject: str, value: str, form: m.Form) -> str:
    return (f"{subject} is {value!r}, which is not {form.what}: {form.rule} (for example "
            f"{form.example}).")


def _at(diags, line: int, column: int):
    return [(d.code, d.message) for d in diags
            if d.location is not None and (d.location.line, d.location.column) == (line, column)]


def test_the_test_board_is_valid(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text(_BOARD.format(**_BOARD_OK))
    library = load_board_file(path)
    assert library.diagnostics == []
    assert "evil" in library.boards


@pytest.mark.parametrize("payload", IDS)
@pytest.mark.parametrize("field", list(BOARD_FORMS))
def test_board_schema_refuses(tmp_path, field, payload):
    value = PAYLOADS[payload]
    subject, form = BOARD_FORMS[field]
    text, line, column = _yaml_text(_BOARD, _BOARD_OK, field, value)
    path = tmp_path / "evil.yaml"
    path.write_text(text)
    library = load_board_file(path)
    if form is m.LINE:
        refused = payload in CONTROL
    elif form is m.TEXT:
        # A board's source may run over several lines (and hold tabs).
        refused = payload in CONTROL - {"newline", "make_rule"}
    else:
        refused = True
    if refused:
        assert _at(library.diagnostics, line, column) == [
            ("E014", _bad_form(subject, value, form))]
        assert "evil" not in library.boards
    else:
        assert _at(library.diagnostics, line, column) == []


@pytest.mark.parametrize("payload", IDS)
@pytest.mark.parametrize("field", list(BOARD_NAMES))
def test_board_names_are_identifiers(tmp_path, field, payload):
    value = PAYLOADS[payload]
    text, line, column = _yaml_text(_BOARD, _BOARD_OK, field, value)
    path = tmp_path / "evil.yaml"
    path.write_text(text)
    library = load_board_file(path)
    expected = check_identifier(value, BOARD_NAMES[field], None)[0]
    assert ("E020", expected.message) in _at(library.diagnostics, line, column)
    assert "evil" not in library.boards


def test_board_schema_message_in_full(tmp_path):
    text, _, _ = _yaml_text(_BOARD, _BOARD_OK, "part", PAYLOADS["tcl_brace"])
    path = tmp_path / "evil.yaml"
    path.write_text(text)
    [diag] = load_board_file(path).diagnostics
    assert (diag.code, diag.location.line, diag.location.column) == ("E014", 6, 7)
    assert diag.message == (
        "'part' is 'x}; exec touch PWNED; #', which is not a part number: letters and digits "
        "in groups joined by single dashes (for example xc7vx485tffg1761-2).")


@pytest.mark.parametrize(("field", "value"), [
    ("clock_p", "E19\n"), ("site", "GTXE2_CHANNEL_X1Y13\n"), ("part", "xc7vx485tffg1761-2\n"),
    ("led", "PIN_AB12\n")])
def test_board_schema_refuses_a_trailing_newline(tmp_path, field, value):
    subject, form = BOARD_FORMS[field]
    text, line, column = _yaml_text(_BOARD, _BOARD_OK, field, value)
    path = tmp_path / "evil.yaml"
    path.write_text(text)
    assert _at(load_board_file(path).diagnostics, line, column) == [
        ("E014", _bad_form(subject, value, form))]


@pytest.mark.parametrize(("vendor", "family", "refused"), [
    ("xilinx", "virtex7", True), ("lattice", "ecp5", True), ("intel", "stratix10", False)])
def test_iostandard_words_only_on_intel(tmp_path, vendor, family, refused):
    # Quartus names I/O standards with spaces ("1.8 V"); Vivado, ISE and nextpnr with one
    # word, which UCF and LPF could not even quote.
    text, line, column = _yaml_text(_BOARD, _BOARD_OK, "clock_std", "1.8 V")
    text = text.replace("vendor: xilinx", f"vendor: {vendor}").replace("family: virtex7",
                                                                      f"family: {family}")
    path = tmp_path / "evil.yaml"
    path.write_text(text)
    found = _at(load_board_file(path).diagnostics, line, column)
    assert found == ([("E030", "The I/O standard '1.8 V' at clocks.sys.iostandard of board "
                               f"'evil' has a space; {vendor} I/O standards are one word "
                               "(LVDS_25, LVCMOS33).")] if refused else [])


def test_every_shipped_board_value_has_its_form():
    # The strict forms keep every value the shipped boards use (pins like AB12 and P3, the
    # sites of four families, "2x CX4", "H-tile", LVCMOS33D, ...).
    for path in sorted((ROOT / "boards").glob("*.yaml")):
        assert load_board_file(path).diagnostics == [], path.name


_CLUSTER = """\
optnet: 1
name: {name}
description: {description}
nodes:
  - {{name: {node}, board: {board}, enclosure: {enclosure}}}
  - {{name: b, board: zc706}}
links:
  - {{from: {end}, to: b.sfp0, line_rate: 5Gbps}}
endpoints:
  - {{name: {endpoint}, width: 64}}
"""
_CLUSTER_OK = {"name": "evil", "description": "Two boards", "node": "a", "board": "zc706",
               "enclosure": "box0", "end": "a.sfp0", "endpoint": "data"}
CLUSTER_FORMS = {"description": ("'description'", m.LINE),
                 "board": ("'board' of node 'a'", m.BOARD),
                 "enclosure": ("'enclosure' of node 'a'", m.ENCLOSURE)}
CLUSTER_NAMES = {"name": "cluster name", "node": "node name", "endpoint": "endpoint name"}


def _lint(tmp_path: Path, text: str):
    path = tmp_path / "evil.yaml"
    path.write_text(text)
    return lint_file(path).diagnostics


def test_the_test_cluster_is_valid(tmp_path):
    assert [d.code for d in _lint(tmp_path, _CLUSTER.format(**_CLUSTER_OK))] == []


@pytest.mark.parametrize("payload", IDS)
@pytest.mark.parametrize("field", list(CLUSTER_FORMS) + list(CLUSTER_NAMES) + ["end"])
def test_cluster_schema_refuses(tmp_path, field, payload):
    value = PAYLOADS[payload]
    text, line, column = _yaml_text(_CLUSTER, _CLUSTER_OK, field, value)
    found = _at(_lint(tmp_path, text), line, column)
    if field in CLUSTER_NAMES:
        what = CLUSTER_NAMES[field]
        assert ("E020", check_identifier(value, what, None)[0].message) in found
    elif field == "end":
        assert ("E023", f"The link end '{value}' is not written as node.port, node.port[lane] "
                        "or node.port[first..last].") in found
    elif field == "description" and payload not in CONTROL:
        assert found == []
    else:
        subject, form = CLUSTER_FORMS[field]
        assert found == [("E014", _bad_form(subject, value, form))]


@pytest.mark.parametrize(("field", "code"), [("name", "E020"), ("node", "E020"),
                                              ("endpoint", "E020"), ("end", "E023")])
def test_cluster_names_refuse_a_trailing_newline(tmp_path, field, code):
    value = _CLUSTER_OK[field] + "\n"
    text, line, column = _yaml_text(_CLUSTER, _CLUSTER_OK, field, value)
    assert code in [c for c, _ in _at(_lint(tmp_path, text), line, column)]


# --------------------------------------------------------------------------- emitters

@functools.cache
def _example(name: str):
    result = lint_file(ROOT / "examples" / f"{name}.yaml")
    assert result.routed is not None
    return result.routed, plan_hw(result.routed)


#: What the example boards lack for every kind of pin to reach the constraints.
_EXTRA = {
    "optweb_4": {
        "clocks": {"sys": {"freq": "100MHz", "p": "AB12", "n": "AB13", "iostandard": "LVDS"}},
        "leds": {"pins": ["C1", "C2"], "iostandard": "1.8 V"}},
    "bee3_two_x4": {
        "clocks": {"sys": {"freq": "100MHz", "p": "AB12", "n": "AB13",
                           "iostandard": "LVDS_25"}},
        "leds": {"pins": ["C1", "C2"], "iostandard": "LVCMOS25"}},
}


def _node(name: str, index: int = 0):
    routed, plans = _example(name)
    board = routed.cluster.nodes[index].board
    if name in _EXTRA:
        board = m.BoardDesc.model_validate({**board.model_dump(mode="json", exclude_none=True),
                                            **_EXTRA[name]})
    return plans[index], board


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        missing_tool(name, f"install {name}")
    return found


def _replace_model(obj, path: tuple, value):
    """``obj`` (pydantic models, dicts and lists) with the item at ``path`` replaced,
    without validation; a ``("key", old)`` step renames mapping key ``old``."""
    head, rest = path[0], path[1:]
    if isinstance(head, tuple):
        _, old = head
        return {(value if k == old else k): v for k, v in obj.items()}
    if isinstance(obj, dict):
        return {**obj, head: _replace_model(obj[head], rest, value) if rest else value}
    if isinstance(obj, list):
        return [(_replace_model(v, rest, value) if rest else value) if i == head else v
                for i, v in enumerate(obj)]
    new = _replace_model(getattr(obj, head), rest, value) if rest else value
    return obj.model_copy(update={head: new})


#: Board fields tried in the emitters: name -> path in BoardDesc (see _replace_model).
def _board_paths(plan, board) -> dict[str, tuple]:
    port, lane = plan.ports[0].board_port, plan.ports[0].lanes[0]
    paths = {"name": ("name",), "part": ("part",), "description": ("description",),
             "family": ("family",), "connector": ("ports", port, "connector")}
    if board.ports[port].lanes[lane].site:
        paths["site"] = ("ports", port, "lanes", lane, "site")
    if board.transceivers is not None:
        paths["transceiver type"] = ("transceivers", "type")
    clock = "sys" if "sys" in board.clocks else next(iter(board.clocks))
    paths["clock name"] = ("clocks", ("key", clock))
    for key in ("pin", "p", "iostandard"):
        if getattr(board.clocks[clock], key):
            paths[f"clock {key}"] = ("clocks", clock, key)
    assert board.leds is not None
    paths["led pin"] = ("leds", "pins", 0)
    if board.leds.iostandard:
        paths["led iostandard"] = ("leds", "iostandard")
    refclk = board.ports[port].refclk
    if refclk is not None and refclk.p:
        paths["refclk pin"] = ("ports", port, "refclk", "p")
    if board.ports[port].lanes[lane].tx_p:
        paths["lane pin"] = ("ports", port, "lanes", lane, "tx_p")
    if board.ports[port].iostandard:
        paths["port iostandard"] = ("ports", port, "iostandard")
    if board.ports[port].clock is not None:
        paths["forwarded clock pin"] = ("ports", port, "clock", "tx_p")
    return paths


def _original(board, path: tuple) -> str:
    obj = board
    for step in path:
        if isinstance(step, tuple):
            return step[1]
        obj = obj[step] if isinstance(obj, dict | list) else getattr(obj, step)
    return obj


def _render_node(plan, board) -> dict[str, str]:
    """The node's constraints and vendor project (with placeholder RTL and tables, and the
    lint stubs, whose ports the mocks give the IP they generate)."""
    files = {f"rtl/{plan.node}.v": f"module {plan.node}; endmodule\n",
             f"rtl/{plan.node}_top.v": f"module {plan.node}_top; endmodule\n",
             "tables/routes.hex": "", "tables/mcast.hex": "", "tables/routes.h": "",
             "tables/routes.json": "{}\n"}
    for port in plan.ports:
        if port.phy != "lvds":
            files[f"stubs/{ip_name(port)}.v"] = port_stub(port, plan.family)
    files.update(constraint_files(plan, board))
    files.update(project_files(plan, board, sorted(files)))
    return files


def _write(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)


def _tclsh(mock: str, folder: Path, script: str) -> list[list[str]]:
    """Run ``folder/script`` under ``tests/tcl/mock_<mock>.tcl`` from a sibling folder;
    the logged calls."""
    elsewhere = folder.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    log = folder.parent / f"{mock}-{script.replace('/', '_')}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTNET_")}
    # Values a board file may leave out (reference clocks) come from the environment; the
    # vendor scripts leave them to the IP script they source.
    env.update(dict.fromkeys(re.findall(r"\bOPTNET_REFCLK_MHZ_\w+", "".join(
        (folder / f).read_text() for f in (script, "ip.tcl") if (folder / f).exists())), "100"))
    subprocess.run([_tool("tclsh"), str(MOCKS / f"mock_{mock}.tcl"), str(log),
                    str(folder / script)], cwd=elsewhere, env=env, capture_output=True,
                   timeout=60)
    return [json.loads(line, strict=False) for line in log.read_text().splitlines()]


def _swap(calls, payload: str, original: str):
    """``calls`` with the payload put back to the original value."""
    return [[a.replace(payload, original) for a in call] for call in calls]


def _tile(value: str) -> str:
    # How the Quartus script spells a transceiver type (H-tile) for SerialLite III.
    return value.lower().replace("-", "")


#: The mock of each script, and which files run under the generic recording mock.
_SCRIPTS = {"vivado.tcl": "vivado", "ise.tcl": "ise", "quartus.tcl": "quartus"}
_CONSTRAINTS = (".xdc", ".sdc", ".qsf")


def _runs(folder: Path, files: dict[str, str]) -> dict[str, list]:
    runs = {}
    for rel in sorted(files):
        if rel in _SCRIPTS:
            runs[rel] = _tclsh(_SCRIPTS[rel], folder, rel)
        elif rel.endswith(_CONSTRAINTS):
            runs[rel] = _tclsh("record", folder, rel)
    return runs


_TCL_EXAMPLES = {"bluedbm_20": "vivado.tcl", "optweb_4": "quartus.tcl",
                 "bee3_two_x4": "ise.tcl"}


_BENIGN: dict[str, dict[str, list]] = {}


def _benign_runs(example: str, factory) -> dict[str, list]:
    """The logged calls of the example's first node, as shipped."""
    if example not in _BENIGN:
        plan, board = _node(example)
        folder = factory.mktemp("benign") / "node"
        files = _render_node(plan, board)
        _write(folder, files)
        _BENIGN[example] = _runs(folder, files)
    return _BENIGN[example]


@pytest.mark.parametrize("payload", IDS)
@pytest.mark.parametrize("example", list(_TCL_EXAMPLES))
def test_tcl_never_runs_a_payload(tmp_path_factory, example, payload):
    """Every board field of the node, one at a time: the vendor script and the constraints
    run under tclsh with the same commands as with the shipped board, or are refused."""
    plan, board = _node(example)
    value = PAYLOADS[payload]
    benign = _benign_runs(example, tmp_path_factory)
    assert benign[_TCL_EXAMPLES[example]][-1] == ["SCRIPT_DONE"]
    outcomes = {}
    for field, path in _board_paths(plan, board).items():
        tmp = tmp_path_factory.mktemp(field.replace(" ", "_"))
        evil = _replace_model(board, path, value)
        try:
            files = _render_node(plan, evil)
        except (EscapeError, ProjectError, PllError) as exc:
            outcomes[field] = f"refused: {exc}"
            continue
        folder = tmp / "node"
        _write(folder, files)
        runs = _runs(folder, files)
        assert not list(tmp.rglob("PWNED")), f"{field}: the payload ran"
        original = _original(board, path)
        for rel, calls in runs.items():
            if field == "transceiver type":
                calls = _swap(calls, _tile(value), _tile(original))
            assert _swap(calls, value, original) == benign[rel], (field, rel)
        outcomes[field] = "escaped"
    # The fields a vendor flow parses are refused, not escaped; the others always render.
    assert all(v == "escaped" for f, v in outcomes.items()
               if f in ("name", "description", "clock name", "connector")), outcomes


def test_tcl_harness_sees_an_unescaped_value(tmp_path):
    # The check above must fail when a value reaches Tcl unescaped (as on main before the
    # escaping): Raw marks the payload as Tcl already, so it goes in as it is, and runs.
    plan, board = _node("bluedbm_20")
    evil = board.model_copy(update={"part": Raw(PAYLOADS["tcl_command"], "tcl")})
    _write(tmp_path / "node", _render_node(plan, evil))
    _tclsh("vivado", tmp_path / "node", "vivado.tcl")
    assert list(tmp_path.rglob("PWNED"))


def _makefile_folder(tmp: Path, plan, board) -> Path:
    files = {f"rtl/{plan.node}.v": "", f"rtl/{plan.node}_top.v": "",
             f"constraints/{plan.node}.lpf": ""}
    files.update(project_files(plan, board, sorted(files)))
    _write(tmp / "node", files)
    return tmp / "node"


def _make_n(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("make"), "-n", "-C", str(folder)], capture_output=True,
                          text=True, timeout=60, cwd=folder.parent)


@pytest.mark.parametrize("payload", IDS)
def test_make_never_runs_a_payload(tmp_path, payload):
    plan, board = _node("ulx3s_ring4")
    value = PAYLOADS[payload]
    benign = _make_n(_makefile_folder(tmp_path / "benign", plan, board))
    assert benign.returncode == 0, benign.stderr
    cases = {"board name": (plan, board.model_copy(update={"name": value})),
             "part": (plan, board.model_copy(update={"part": value})),
             "node": (dataclasses.replace(plan, node=value), board)}
    outcomes = {}
    for field, (p, b) in cases.items():
        tmp = tmp_path / field.replace(" ", "_")
        try:
            folder = _makefile_folder(tmp, p, b)
        except (EscapeError, ProjectError) as exc:
            outcomes[field] = type(exc).__name__
            continue
        proc = _make_n(folder)
        assert not list(tmp.rglob("PWNED")), field
        assert proc.returncode == 0, (field, proc.stderr)
        here = str(folder.resolve())
        assert (proc.stdout.replace(here, "HERE")
                == benign.stdout.replace(str((tmp_path / "benign" / "node").resolve()),
                                         "HERE")), field
        outcomes[field] = "escaped"
    # The board name only reaches comments; a part must parse, a node name is a target.
    assert outcomes == {"board name": "escaped", "part": "ProjectError",
                        "node": "EscapeError"}


@pytest.mark.parametrize("payload", IDS)
@pytest.mark.parametrize("example", ["ulx3s_ring4", "bee3_two_x4"])
def test_lpf_and_ucf_keep_their_statements(example, payload):
    plan, board = _node(example)
    value = PAYLOADS[payload]
    [rel] = constraint_files(plan, board)

    def statements(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("#")]

    benign = statements(constraint_files(plan, board)[rel])
    for field, path in _board_paths(plan, board).items():
        try:
            text = constraint_files(plan, _replace_model(board, path, value))[rel]
        except (EscapeError, PllError):
            continue
        # Neither language has escapes: a value passes only as it is, so putting the
        # original back must give the shipped statements (comments may wrap differently).
        assert [line.replace(value, _original(board, path)) for line in statements(text)] \
            == benign, field


# --------------------------------------------------------------------------- CSV, Markdown

def _rows(value: str) -> list[CableRow]:
    return [CableRow(0, value, value, value, "n1.sfp0", "0", value, 1, value, value, value),
            CableRow(1, "n0.sfp0", "0", "SFP+", "n1.sfp0", "0", "SFP+", 1, "1m", "x", "5Gbps")]


@pytest.mark.parametrize("payload", IDS)
def test_csv_parses_back_to_the_same_cells(payload):
    value = PAYLOADS[payload]
    text = render_template("docs/cabling.csv.j2", rows=_rows(value))
    parsed = list(csv.reader(io.StringIO(text, newline="")))
    assert parsed[1] == ["0", value, value, value, "n1.sfp0", "0", value, "1", value, value,
                         value]
    assert parsed[2][0] == "1" and len(parsed) == 3


def _cells(row: str) -> list[str]:
    """The cells of a GFM table row: split at pipes no backslash escapes."""
    assert row.startswith("|") and row.endswith("|"), row
    return re.split(r"(?<!\\)\|", row[1:-1])


def _tables(text: str) -> list[list[int]]:
    """Per table of a Markdown text, the cell count of each of its rows."""
    tables, current = [], None
    for line in text.splitlines():
        if line.startswith("|"):
            if current is None:
                current = []
                tables.append(current)
            current.append(len(_cells(line)))
        else:
            current = None
    return tables


@pytest.mark.parametrize("payload", IDS)
def test_markdown_rows_keep_their_columns(payload):
    value = PAYLOADS[payload]
    text = render_template("docs/cabling.md.j2", rows=_rows(value), cluster=value)
    [table] = _tables(text)
    assert table == [11] * 4
    assert "<script" not in text
    assert len(text.splitlines()) == len(
        render_template("docs/cabling.md.j2", rows=_rows("x"), cluster="x").splitlines())


def _readme(plan, board) -> str:
    return node_readme(plan, board, ["a"], "c")


@pytest.mark.parametrize("payload", IDS)
def test_node_readme_keeps_its_structure(payload):
    plan, board = _node("bluedbm_20")
    value = PAYLOADS[payload]
    benign = _readme(plan, board)
    evil_plan = dataclasses.replace(plan, part=value)
    evil_board = board.model_copy(update={"name": value, "description": value})
    text = _readme(evil_plan, evil_board)
    assert len(text.splitlines()) == len(benign.splitlines())
    assert _tables(text) == _tables(benign)
    # HTML in a code span is text.
    assert "<script" not in re.sub(r"(`+).*?\1", "", text)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)


def _tags(html: str) -> list[str]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


@pytest.mark.parametrize("payload", IDS)
def test_report_keeps_its_structure(payload):
    routed, _ = _example("ulx3s_ring4")
    value = PAYLOADS[payload]
    cluster = routed.cluster
    evil = dataclasses.replace(routed, cluster=dataclasses.replace(
        cluster, desc=cluster.desc.model_copy(update={"description": value})))
    # optnet build's part of the report: Markdown already, which report.html shows as text.
    build_md = "| a | b |\n|---|---|\n| <b>x</b> | 1 |\n"
    benign = report_files([routed], None, build_md)
    files = report_files([evil], None, build_md)
    assert _tables(files["report.md"]) == _tables(benign["report.md"])
    assert len(files["report.md"].splitlines()) == len(benign["report.md"].splitlines())
    assert "<script" not in files["report.md"]
    assert build_md in files["report.md"]
    assert _tags(files["report.html"]) == _tags(benign["report.html"])
    assert "<script" not in files["report.html"] and "<b>" not in files["report.html"]


@pytest.mark.parametrize("payload", IDS)
def test_fusesoc_core_loads_back(payload):
    plan, board = _node("bluedbm_20")
    value = PAYLOADS[payload]

    def core(p, b) -> dict:
        return yaml.safe_load(fusesoc_core(
            p, b, ["stubs/a.v", "tables/routes.hex", f"constraints/{p.node}.xdc", "ip.tcl"],
            "c"))

    benign = core(plan, board)
    evil = core(dataclasses.replace(plan, part=value),
                board.model_copy(update={"name": value, "part": value}))
    assert evil["description"] == f"optnet network of node {plan.node} ({value}, {value})"
    assert evil["targets"]["synth"]["tools"]["vivado"]["part"] == value
    assert evil.keys() == benign.keys() and evil["filesets"] == benign["filesets"]
    assert evil["targets"]["synth"]["filesets"] == ["rtl", "top", "constraints", "ip"]


def test_lint_reports_a_refused_value(monkeypatch):
    # A value the schema let through but an emitter refuses is an E320 finding of lint,
    # not a crash of the build.
    import optnet.emit.checks as checks
    routed, plans = _example("ulx3s_ring4")

    def refuse(plan, board):
        raise EscapeError("The value 'a b' cannot be written into a Makefile.")

    monkeypatch.setattr(checks, "constraint_files", refuse)
    [finding, *_] = checks.hardware_findings(routed.cluster, plans)
    assert (finding.code, finding.message) == (
        "E320", "The project of node 'n0' (board 'ulx3s') cannot be generated: The value "
                "'a b' cannot be written into a Makefile.")


def test_raw_of_another_language_is_escaped():
    # Markdown marked Raw reaches an HTML page as text.
    text = render_template("report/report.html.j2", title="t", intro="i", sections=[],
                           build_md=Raw("<script>x</script>", "md"))
    assert "&lt;script&gt;" in text and "<script" not in text
