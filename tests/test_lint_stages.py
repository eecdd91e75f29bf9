"""Lint collects the findings of every stage in one run (issue 17, point 2): a schema
error leaves out only the node, link or endpoint it is in, and later stages check the rest;
a finding about a rate, buffer or credit does not stop routing."""

from __future__ import annotations

from pathlib import Path

from optnet.lint import lint_file


def _found(tmp_path: Path, text: str) -> list[tuple[str, int, int]]:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    result = lint_file(path)
    return sorted((d.code, d.location.line, d.location.column) for d in result.diagnostics)


MULTI = """\
optnet: 1
name: multi
defaults: {board: vc707, link: {line_rate: 10Gbps}}
nodes:
  - {name: a, id: 0}
  - {name: b, id: one}
  - {name: c, id: 2, bogus: 1}
  - {name: d, id: 3, board: vc70}
links:
  - {from: a.sfp0, to: b.sfp0}
  - {from: a.sma, to: c.sma}
  - {from: c.sfp0, to: d.sfp0, lanes: many}
  - {from: c.sma, to: e.sma}
endpoints:
  - {name: x, width: 32, credit: 99, buffer: 4 packets}
description: 7
"""


def test_schema_errors_leave_out_their_item_only(tmp_path):
    assert _found(tmp_path, MULTI) == [
        ("E010", 7, 22),    # unknown key: dropped, node c kept
        ("E012", 6, 19),    # node b left out; its link a -- b gets no E102
        ("E012", 12, 39),   # link c -- d left out
        ("E012", 16, 14),   # description left at its default
        ("E101", 8, 29),    # node d, found by elaboration after b was left out
        ("E102", 13, 23),   # e does not exist at all
        ("E117", 15, 34),   # endpoint checks run on the rest
    ]


def test_every_stage_reports_in_one_run(tmp_path):
    # A credit error (E117), a routing error (E201: a ring with one VC) and nothing else
    # blocking: both come out of one run.
    found = _found(tmp_path, """\
optnet: 1
name: ring
defaults: {board: vc707, link: {line_rate: 10Gbps}}
topology: {kind: ring, nodes: 5}
network: {vcs: 1}
routing: {algorithm: shortest}
endpoints:
  - {name: x, width: 32, credit: 99, buffer: 4 packets}
""")
    assert [code for code, _, _ in found] == ["E117", "E201"]
