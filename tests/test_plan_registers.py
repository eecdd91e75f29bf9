"""The bring-up register map: addresses, blocks per link and endpoint, limits."""

from __future__ import annotations

import dataclasses

import pytest

from optnet.plan import plan
from optnet.plan.registers import register_map

from .conftest import linted_example


def test_map_of_a_router_node():
    node = plan(linted_example("ulx3s_ring4").routed)[0]
    regs = {r.name: (r.addr, r.writable) for r in register_map(node)}
    assert regs == {
        "magic": (0, False), "version": (1, False), "node_id": (2, False),
        "endpoints": (3, False), "links": (4, False), "link_up": (5, False),
        "dropped": (6, False),
        **{f"link{k}.{name}": (0x100 + 0x10 * k + i, False) for k in range(2)
           for i, name in enumerate(("up", "crc_errors", "resent", "lost", "restarts"))},
        "app.control": (0x1000, True), "app.length": (0x1001, True), "app.gap": (0x1002, True),
        "app.sent": (0x1003, False), "app.received": (0x1004, False),
        "app.out_of_sequence": (0x1005, False), "app.bad_beats": (0x1006, False)}


def test_direct_links_have_only_their_state():
    node = plan(linted_example("optweb_4").routed)[0]
    links = [r.name for r in register_map(node) if r.addr >= 0x100 and r.addr < 0x1000]
    assert links == ["link0.up", "link1.up", "link2.up"]


def test_a_map_without_room_is_refused():
    node = plan(linted_example("ulx3s_ring4").routed)[0]
    many = dataclasses.replace(node, endpoint_names=tuple(f"e{i}" for i in range(4000)))
    with pytest.raises(ValueError, match="node n0: the register map has blocks for 240 links "
                                         "and 3840 endpoints, not 2 and 4000"):
        register_map(many)
