"""The vectorised routing stage (issue 17) against the pure-Python code it replaced.

Routes, broadcast trees and the deadlock proof's verdict, counts and named cycle must be
exactly what they were; ``routing_reference`` holds the old code.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from optnet.lint import lint_file
from optnet.routing import tables
from optnet.routing.arrays import distinct, has_cycle, join, walk
from optnet.routing.broadcast import plan_broadcast
from optnet.routing.proof import Waits, describe_cycle, prove
from optnet.routing.tables import node_tables

from . import routing_reference as ref
from .conftest import ROOT

VC707 = "{board: vc707, link: {line_rate: 10Gbps}}"
OPTICS = "{board: stratix10mx_optics, link: {phy: serial_lite_3, line_rate: 25Gbps}}"


def _random_graph(seed: int, n: int, extra: int) -> str:
    rnd = random.Random(seed)
    edges = {(rnd.randrange(i), i) for i in range(1, n)}
    for _ in range(extra):
        a, b = rnd.sample(range(n), 2)
        edges.add((min(a, b), max(a, b)))
    used = [0] * n
    links = []
    for a, b in sorted(edges):
        ends = []
        for x in (a, b):
            ends.append(f"v{x}.optical{used[x] // 4}")
            used[x] += 1
        links.append(f"  - {{from: {ends[0]}, to: {ends[1]}}}")
    nodes = "\n".join(f"  - {{name: v{i}}}" for i in range(n))
    return f"nodes:\n{nodes}\nlinks:\n" + "\n".join(links) + "\n"


CASES = {
    "ring5": (VC707, "topology: {kind: ring, nodes: 5}\n", ""),
    "ring8": (VC707, "topology: {kind: ring, nodes: 8}\n", ""),
    "line4": (VC707, "topology: {kind: line, nodes: 4}\n", ""),
    "mesh3x16": (VC707, "topology: {kind: mesh, dims: [3, 16]}\n", ""),
    "torus5x3": (VC707, "topology: {kind: torus, dims: [5, 3]}\n", ""),
    "torus6x6": (VC707, "topology: {kind: torus, dims: [6, 6]}\n", ""),
    "torus3x4x2": (VC707, "topology: {kind: torus, dims: [3, 4, 2]}\n", ""),
    "torus2x7": (VC707, "topology: {kind: torus, dims: [2, 7]}\n", ""),
    "hypercube4": (VC707, "topology: {kind: hypercube, dimension: 4}\n", ""),
    "torus4x4 shortest": (VC707, "topology: {kind: torus, dims: [4, 4]}\n", "shortest"),
    "torus4x4 up_down": (VC707, "topology: {kind: torus, dims: [4, 4]}\n", "up_down"),
    "full5": (OPTICS, "topology: {kind: full, nodes: 5}\n", ""),
    "full22": (OPTICS, "topology: {kind: full, nodes: 22}\n", ""),  # 22 ports x 3 bits
    "dragonfly 5,2,2": (OPTICS, "topology: {kind: dragonfly, groups: 5, routers: 2, "
                                "global_links: 2}\n", ""),
    "dragonfly 9,4,2": (OPTICS, "topology: {kind: dragonfly, groups: 9, routers: 4, "
                                "global_links: 2}\n", ""),
    "dragonfly 3,1,2": (OPTICS, "topology: {kind: dragonfly, groups: 3, routers: 1, "
                                "global_links: 2}\n", ""),
    "random shortest": (OPTICS, _random_graph(3, 13, 9), "shortest"),
    "random up_down": (OPTICS, _random_graph(4, 15, 8), "up_down"),
}

WAITS = [Waits(16, 16), Waits(16, 4), Waits(16, 16, receive_waits_for_send=True),
         Waits(16, 16, (0, 1))]


def _routed(tmp_path, name: str):
    defaults, body, algorithm = CASES[name]
    text = f"optnet: 1\nname: t\ndefaults: {defaults}\nnetwork: {{vcs: 3}}\n{body}"
    if algorithm:
        text += f"routing: {{algorithm: {algorithm}}}\n"
    path = tmp_path / "c.yaml"
    path.write_text(text)
    routed = lint_file(path).routed
    assert routed is not None
    return routed


def _bytes(rows) -> list[bytes]:
    return [bytes(row) for row in rows]


@pytest.mark.parametrize("name", list(CASES))
def test_routes_and_broadcast_trees_are_the_old_ones(tmp_path, name):
    routed = _routed(tmp_path, name)
    net, routing = routed.net, routed.routing
    old = {"dimension_order": ref.grid_reference,
           "dragonfly_minimal": ref.dragonfly_reference}.get(routing.algorithm)
    if old is not None:
        nexts, classes = old(net)
        assert _bytes(routing.next) == _bytes(nexts)
        assert _bytes(routing.vclass) == _bytes(classes)
    masks, classes = ref.broadcast_reference(net, routing, "tree")
    tree = plan_broadcast(net, routing, "tree")
    assert tree.masks == masks
    assert _bytes(tree.classes) == _bytes(classes)
    if routing.walked is not None:  # what the algorithm worked out on the way
        nxt, _ = routing.matrices()
        hops, last = walk(np.array(net.dst), nxt, np.arange(net.size))
        assert (routing.walked[0] == hops).all() and (routing.walked[1] == last).all()


@pytest.mark.parametrize("name", list(CASES))
def test_proof_is_the_old_one(tmp_path, name):
    routed = _routed(tmp_path, name)
    net, routing = routed.net, routed.routing
    plans = [None, plan_broadcast(net, routing, "tree"), plan_broadcast(net, routing, "cascade")]
    cycles = 0
    for vcs in (1, 2, 3):
        for waits in WAITS:
            if max(waits.inject_vcs) >= vcs:
                continue
            for broadcast in plans:
                proof = prove(net, routing, broadcast, vcs, waits)
                expected = ref.prove_reference(net, routing, broadcast, vcs, waits)
                got = (proof.vcs, proof.channels, proof.dependencies, proof.cycle, proof.waits)
                assert got == expected, (vcs, waits, broadcast and broadcast.mode)
                if not proof.ok:
                    cycles += 1
                    assert describe_cycle(net, proof)
    # the waits of trees read from the masks alone, as for plans without a tree table
    tree = plans[1]
    bare = dataclasses.replace(tree, into=None, _arrays=None)
    for waits in WAITS[:3]:
        a, b = prove(net, routing, tree, 2, waits), prove(net, routing, bare, 2, waits)
        assert (a.channels, a.dependencies, a.cycle, a.waits) == \
            (b.channels, b.dependencies, b.cycle, b.waits)
    # the waits above close cycles on every network but the one-hop full one
    assert cycles or name == "full5"


@pytest.mark.parametrize("name", ["torus6x6", "dragonfly 9,4,2", "full5", "random up_down"])
def test_tables_are_the_old_ones(tmp_path, name, monkeypatch):
    routed = _routed(tmp_path, name)
    expected = ref.tables_reference(routed)
    got = [(t.port, t.vc, t.hops, t.mask, t.mvcs) for t in node_tables(routed)]
    assert got == expected
    # two ports a group, as for nodes with more ports than a float64 holds VCs of
    monkeypatch.setattr(tables, "_PACK_BITS", 2 * max(1, (routed.cluster.desc.network.vcs - 1)
                                                      .bit_length()))
    assert [t.mvcs for t in node_tables(routed)] == [row[4] for row in expected]


@pytest.mark.parametrize("name", ["torus6x6", "dragonfly 9,4,2", "full5", "full22"])
def test_table_words_pack_every_entry(tmp_path, name):
    for table in node_tables(_routed(tmp_path, name)):
        unicast = [0] * (1 << table.widths.id_bits)
        for entry in table.unicast:
            unicast[entry.dst_id] = table.word(entry)
        multicast = [0] * (1 << table.widths.id_bits)
        for group in table.multicast:
            multicast[group.source_id] = group.word(table.widths)
        assert table.unicast_words() == unicast
        assert table.multicast_words() == multicast


def test_unicast_masks_of_a_full_network(tmp_path):
    routed = _routed(tmp_path, "full5")
    net = routed.net
    unicast = plan_broadcast(net, routed.routing, "unicast")
    for waits in WAITS[:3]:
        proof = prove(net, routed.routing, unicast, 3, waits)
        assert (proof.vcs, proof.channels, proof.dependencies, proof.cycle, proof.waits) == \
            ref.prove_reference(net, routed.routing, unicast, 3, waits)


def test_walk_counts_hops_and_finds_the_last_channel():
    # a line 0 - 1 - 2 - 3 with channels 2i: i -> i+1 and 2i+1: i+1 -> i, destination 0
    dst = np.array([1, 0, 2, 1, 3, 2])
    hops, last = walk(dst, np.array([[-1, 1, 3, 5], [0, -1, 3, 5]]), np.array([0, 1]))
    assert hops.tolist() == [[0, 1, 2, 3], [1, 0, 1, 2]]
    assert last.tolist() == [[-1, 1, 1, 1], [0, -1, 3, 3]]
    # routes that never arrive (1 -> 2 -> 1 -> ...) count as unreachable
    hops, last = walk(dst, np.array([[-1, 2, 3, 5]]), np.array([0]))
    assert hops.tolist() == [[0, -1, -1, -1]] and last.tolist() == [[-1, -1, -1, -1]]


def test_join_distinct_and_cycle_helpers():
    i, j = join(np.array([5, 7, 5]), np.array([7, 5, 9, 5]))
    assert sorted(zip(i.tolist(), j.tolist(), strict=True)) == \
        [(0, 1), (0, 3), (1, 0), (2, 1), (2, 3)]
    i, j = join(np.array([3, 1]), np.array([1, 1, 2]))  # distinct left keys: the lookup path
    assert sorted(zip(i.tolist(), j.tolist(), strict=True)) == [(1, 0), (1, 1)]
    assert distinct(np.array([4, 1, 4, 2, 1])).tolist() == [1, 2, 4]
    assert not has_cycle(np.array([0, 1, 0]), np.array([1, 2, 2]), 4)
    assert has_cycle(np.array([0, 1, 2]), np.array([1, 2, 1]), 3)


@pytest.mark.parametrize("name", ["bee3_one_x8", "bee3_two_x4"])
def test_hierarchical_examples_prove_as_before(name):
    routed = lint_file(ROOT / "examples" / f"{name}.yaml").routed
    net, routing = routed.net, routed.routing
    masks, classes = ref.broadcast_reference(net, routing, "tree")
    tree = plan_broadcast(net, routing, "tree")
    assert tree.masks == masks and _bytes(tree.classes) == _bytes(classes)
    for vcs in (1, 2):
        proof = prove(net, routing, tree, vcs, Waits(16, 16))
        assert (proof.vcs, proof.channels, proof.dependencies, proof.cycle, proof.waits) == \
            ref.prove_reference(net, routing, tree, vcs, Waits(16, 16))
