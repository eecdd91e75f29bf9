"""Deriving a node's Verilog from another node of the same role."""

from __future__ import annotations

from pathlib import Path

import pytest

from optnet.emit.hdl import node_verilog
from optnet.emit.roles import RoleError, retarget
from optnet.plan import plan

from .conftest import linted_example, role_files

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ring():
    return plan(linted_example("ulx3s_ring4").routed)


# ECP5 keeps the tables and the node id in block RAM; the Zynq (ZC706) ring in LUT RAM, with
# the id in a ROM of its own; OPTWEB's direct nodes have no router, and their hubs' tables
# (the port to each node id, the id behind each port) are what differs.
@pytest.mark.parametrize("example", [
    "ulx3s_ring4", "optweb_4", pytest.param("plasticnet_ring4", marks=pytest.mark.slow)])
def test_retarget_equals_direct_lowering(example):
    plans = plan(linted_example(example).routed)
    rep = plans[0]
    other = next(p for p in plans[1:] if p.role() == rep.role())
    if example == "optweb_4":
        assert rep.router is None and rep.direct_tables() != other.direct_tables()
    else:
        assert rep.router.block_tables == (example == "ulx3s_ring4")
    first = role_files(ROOT / "examples" / f"{example}.yaml")[rep.node][f"rtl/{rep.node}.v"]
    direct = node_verilog(other)
    # the shared link layer modules are renamed with the node
    assert f"module \\{rep.node}.link_cfg0 " in first
    assert f"module \\{other.node}.link_cfg0 " in direct
    assert first != direct
    assert retarget(first, rep, other) == direct
    assert retarget(first, rep, rep) == first


def test_retarget_refuses_other_roles_and_unknown_shapes(ring):
    import dataclasses
    rep = ring[0]
    wider = dataclasses.replace(rep, board="ulx3s_45f")
    with pytest.raises(ValueError, match="different roles"):
        retarget("", rep, wider)
    with pytest.raises(RoleError, match="'table0' has 0 initial blocks"):
        retarget("module n0(a);\nendmodule\n", rep, ring[1])
