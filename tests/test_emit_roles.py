"""Deriving a node's Verilog from another node of the same role."""

from __future__ import annotations

from pathlib import Path

import pytest

from optnet.emit.roles import RoleError, retarget
from optnet.hw.top import NodeTop
from optnet.hw.verilog import to_verilog
from optnet.lint import lint_file
from optnet.plan import plan

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ring():
    return plan(lint_file(ROOT / "examples" / "ulx3s_ring4.yaml").routed)


def test_retarget_equals_direct_lowering(ring):
    rep, other = ring[0], ring[2]
    assert rep.role() == other.role()
    first = to_verilog(NodeTop(rep), rep.node)
    direct = to_verilog(NodeTop(other), other.node)
    assert first != direct
    assert retarget(first, rep, other) == direct
    assert retarget(first, rep, rep) == first


def test_retarget_refuses_other_roles_and_unknown_shapes(ring):
    import dataclasses
    rep = ring[0]
    wider = dataclasses.replace(rep, board="ulx3s_45f")
    with pytest.raises(ValueError, match="different roles"):
        retarget("", rep, wider)
    with pytest.raises(RoleError, match="'node_id_rom' has 0 initial blocks"):
        retarget("module n0(a);\nendmodule\n", rep, ring[1])
