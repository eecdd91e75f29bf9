"""Topology generators and port assignment, checked against closed forms."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optnet.diagnostics import DiagnosticError
from optnet.spec import models as m
from optnet.topology.generators import generate

from .conftest import linted_example


def _graph(gen) -> nx.MultiGraph:
    g = nx.MultiGraph()
    g.add_nodes_from(range(len(gen.nodes)))
    g.add_edges_from((link.a, link.b) for link in gen.links)
    return g


def _topo(**kw):
    return m.ClusterDesc.model_validate({"optnet": 1, "name": "t", "topology": kw}).topology


@pytest.mark.parametrize("n", [3, 4, 7, 16])
def test_ring(n):
    gen = generate(_topo(kind="ring", nodes=n))
    g = _graph(gen)
    assert len(gen.links) == n
    assert all(d == 2 for _, d in g.degree())
    assert nx.diameter(nx.Graph(g)) == gen.diameter == n // 2


@pytest.mark.parametrize("dims", [[2, 2], [3, 3], [4, 5], [2, 3, 4], [8, 8]])
def test_torus_matches_k_ary_n_cube(dims):
    gen = generate(_topo(kind="torus", dims=dims))
    g = nx.Graph(_graph(gen))
    assert len(gen.nodes) == math.prod(dims)
    # a dimension of size 2 has one link per pair instead of two parallel ones
    per_node = sum(2 if k > 2 else 1 for k in dims)
    assert all(d == per_node for _, d in g.degree())
    assert nx.diameter(g) == gen.diameter == sum(k // 2 for k in dims)
    assert len(gen.links) == math.prod(dims) * per_node // 2


@pytest.mark.parametrize("dims", [[2], [3, 3], [4, 5], [2, 3, 4]])
def test_mesh(dims):
    gen = generate(_topo(kind="mesh", dims=dims))
    g = nx.Graph(_graph(gen))
    assert nx.diameter(g) == gen.diameter == sum(k - 1 for k in dims)
    n = math.prod(dims)
    assert len(gen.links) == sum(n // k * (k - 1) for k in dims)


def test_torus_coordinates_are_row_major_from_dimension_0():
    gen = generate(_topo(kind="torus", dims=[4, 5]))
    assert gen.nodes[0].coords == (0, 0)
    assert gen.nodes[1].coords == (1, 0)
    assert gen.nodes[4].coords == (0, 1)
    assert gen.nodes[19].name == "n19" and gen.nodes[19].coords == (3, 4)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 6])
def test_hypercube(d):
    gen = generate(_topo(kind="hypercube", dimension=d))
    g = nx.Graph(_graph(gen))
    assert len(gen.nodes) == 2**d and len(gen.links) == d * 2 ** (d - 1)
    assert nx.diameter(g) == d
    # bisection: cutting along any dimension leaves 2^(d-1) links
    half = {i for i in range(2**d) if not i & 1}
    assert nx.cut_size(g, half) == 2 ** (d - 1)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_full(n):
    gen = generate(_topo(kind="full", nodes=n))
    assert len(gen.links) == n * (n - 1) // 2
    assert nx.diameter(nx.Graph(_graph(gen))) == 1


@pytest.mark.parametrize(("g", "a", "h"), [(5, 2, 2), (9, 4, 2), (4, 4, 3), (3, 2, 1), (2, 1, 1)])
def test_dragonfly(g, a, h):
    gen = generate(_topo(kind="dragonfly", groups=g, routers=a, global_links=h))
    graph = _graph(gen)
    assert len(gen.nodes) == g * a
    glob = [link for link in gen.links if link.role == "global"]
    # every pair of groups is joined, and no router has more than h global links
    pairs = Counter(frozenset((gen.nodes[ln.a].group, gen.nodes[ln.b].group)) for ln in glob)
    assert set(pairs) == {frozenset(p) for p in itertools.combinations(range(g), 2)}
    per_router = Counter(x for ln in glob for x in (ln.a, ln.b))
    assert max(per_router.values()) <= h
    assert all(gen.nodes[ln.a].group == gen.nodes[ln.b].group
               for ln in gen.links if ln.role == "local")
    if gen.diameter is not None:
        assert nx.diameter(nx.Graph(graph)) == gen.diameter


def test_optweb_dragonfly_formula():
    # OPTWEB §5.3: g groups, k links per FPGA, g(k-g+2) FPGAs, each FPGA linked to every
    # member of its group and to one FPGA of every other group.
    g, k = 4, 6
    a = k - g + 2
    gen = generate(_topo(kind="dragonfly", groups=g, routers=a, global_links=g - 1))
    graph = nx.Graph(_graph(gen))
    assert len(gen.nodes) == g * (k - g + 2) == 16
    assert all(d == k for _, d in graph.degree())
    assert nx.diameter(graph) == gen.diameter == 2


def test_dragonfly_too_many_groups():
    with pytest.raises(DiagnosticError) as info:
        generate(_topo(kind="dragonfly", groups=6, routers=2, global_links=2))
    assert info.value.diagnostics[0].message == (
        "A dragonfly with 2 routers per group and 2 global links per router can join at most "
        "5 groups, not 6.")


@pytest.mark.parametrize(("name", "pattern", "channels", "plane", "group", "inter", "diameter"), [
    ("one_x8", "groups", 1, 4, 4, 16, 5),
    ("two_x4", "full", 2, 4, None, 28, 3),
    ("four_x2", "full", 4, 2, None, 56, 3),
    ("eight_x1", "full", 8, 1, None, 112, 2),
])
def test_bee3_topologies(name, pattern, channels, plane, group, inter, diameter):
    gen = generate(_topo(kind="hierarchical", enclosures=8, per_enclosure=4,
                         inter={"pattern": pattern, "channels": channels, "plane_size": plane,
                                "group_size": group}))
    g = _graph(gen)
    intra = [ln for ln in gen.links if ln.role == "intra"]
    links = [ln for ln in gen.links if ln.role == "inter"]
    assert len(intra) == 8 * 6 and len(links) == inter
    enc = [n.enclosure for n in gen.nodes]
    assert all(enc[ln.a] == enc[ln.b] for ln in intra)
    assert all(enc[ln.a] != enc[ln.b] for ln in links)
    per_fpga = Counter(x for ln in links for x in (ln.a, ln.b))
    assert max(per_fpga.values()) <= channels
    assert nx.diameter(nx.Graph(g)) == diameter
    if name == "eight_x1":  # FPGA X only ever talks to FPGA X of other enclosures
        assert all(gen.nodes[ln.a].position == gen.nodes[ln.b].position for ln in links)
    if name == "four_x2":  # A/B pair and C/D pair form separate planes
        assert all((gen.nodes[ln.a].position < 2) == (gen.nodes[ln.b].position < 2)
                   for ln in links)
    if name == "one_x8":  # every enclosure pair in a group joined once, cross links matched
        enclosure_pairs = Counter(frozenset((enc[ln.a], enc[ln.b])) for ln in links)
        assert len(enclosure_pairs) == 16 and set(enclosure_pairs.values()) == {1}


def test_hierarchical_not_enough_channels():
    with pytest.raises(DiagnosticError) as info:
        generate(_topo(kind="hierarchical", enclosures=8, per_enclosure=4,
                       inter={"pattern": "full", "channels": 1}))
    assert info.value.diagnostics[0].message == (
        "The 'full' pattern between 8 enclosures needs 7 inter-enclosure channels per plane, "
        "but a plane of 4 FPGAs with 1 channels each has 4.")


def test_port_assignment_is_deterministic_and_lane_exact():
    cluster = linted_example("bluedbm_20").cluster
    ends = Counter()
    for link in cluster.links:
        for end in (link.a, link.b):
            assert len(end.lanes) == 2 == link.lanes
            for lane in end.lanes:
                ends[(end.node, end.port, lane)] += 1
    assert max(ends.values()) == 1  # no lane used twice
    first = cluster.links[0]
    assert (str(first.a), first.a.lanes, str(first.b), first.b.lanes) == (
        "n0.fmc1_hpc", (0, 1), "n1.fmc1_hpc", (0, 1))
    assert all(link.phy == "aurora_64b66b" and str(link.line_rate) == "10Gbps"
               for link in cluster.links)


def test_bee3_onboard_ports_follow_board_wiring():
    cluster = linted_example("bee3_two_x4").cluster
    for link in cluster.links:
        if link.role != "intra":
            continue
        a, b = cluster.node(link.a.node), cluster.node(link.b.node)
        port = a.board.ports[link.a.port]
        assert (a.position + port.onboard.peer_offset) % 4 == b.position
        assert link.b.port == port.onboard.peer_port
        assert link.lanes == len(port.lanes)  # the whole on-board bus


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=2, max_value=6), min_size=1, max_size=3))
def test_torus_degree_property(dims):
    gen = generate(_topo(kind="torus", dims=dims))
    g = nx.Graph(_graph(gen))
    assert nx.is_connected(g)
    assert g.number_of_edges() == len(gen.links)  # no parallel links


def test_phy_names_match_phy_table():
    import typing

    from optnet.phys import PHYS
    from optnet.spec.models import Phy
    assert set(typing.get_args(Phy)) == set(PHYS)
