"""Routing: every algorithm routes valid minimal paths, the proof holds, tables decode."""

from __future__ import annotations

import itertools
import math
import os
import random
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optnet.emit.tables import render_c_header, render_hex
from optnet.lint import lint_file
from optnet.report.collectives import collective
from optnet.report.params import model_params
from optnet.routing.metrics import compute_metrics
from optnet.routing.network import LOCAL
from optnet.routing.proof import Waits, describe_cycle, prove
from optnet.routing.tables import node_tables, to_json

from .conftest import linted_example

#: The default network's waits: 16-flit packets and buffers, one endpoint.
WAITS = Waits(broadcast_flits=16, branch_credits=16)

BOARDS = {"vc707": "{line_rate: 10Gbps}", "stratix10mx_optics":
          "{phy: serial_lite_3, line_rate: 25Gbps}"}


def _routed(tmp_path: Path, body: str, board: str = "vc707", vcs: int = 2, **routing):
    text = (f"optnet: 1\nname: t\ndefaults: {{board: {board}, link: {BOARDS[board]}}}\n"
            f"network: {{vcs: {vcs}}}\n{body}")
    if routing:
        text += "routing: {" + ", ".join(f"{k}: {v}" for k, v in routing.items()) + "}\n"
    path = tmp_path / "c.yaml"
    path.write_text(text)
    result = lint_file(path, hardware=False)  # routing only; hardware is E3xx
    return result


def _check_paths(routed, minimal: bool = True):
    net, routing = routed.net, routed.routing
    g = nx.Graph()
    g.add_edges_from((net.src[c], net.dst[c]) for c in range(len(net.src)))
    dist = dict(nx.all_pairs_shortest_path_length(g))
    for s, d in itertools.permutations(range(net.size), 2):
        path = routing.path(net, s, d)
        assert net.src[path[0]] == s and net.dst[path[-1]] == d
        assert all(net.dst[a] == net.src[b] for a, b in itertools.pairwise(path))
        if minimal:
            assert len(path) == dist[s][d], (s, d)
    assert routed.proof.ok


@pytest.mark.parametrize("topology", [
    "{kind: ring, nodes: 5}", "{kind: ring, nodes: 8}", "{kind: line, nodes: 4}",
    "{kind: mesh, dims: [3, 3]}", "{kind: mesh, dims: [4, 5]}", "{kind: torus, dims: [4, 4]}",
    "{kind: torus, dims: [5, 3]}", "{kind: torus, dims: [3, 4, 2]}",
    "{kind: hypercube, dimension: 4}"])
def test_dimension_order(tmp_path, topology):
    result = _routed(tmp_path, f"topology: {topology}\n", algorithm="dimension_order")
    assert [d.code for d in result.diagnostics] == []
    routed = result.routed
    _check_paths(routed)
    kind = topology.split(",")[0].split(": ")[1]
    assert routed.routing.vcs_needed == (2 if kind in ("ring", "torus") else 1)
    # DOR goes lowest dimension first
    net = routed.net
    coords = [n.coords for n in routed.cluster.nodes]
    for s, d in itertools.permutations(range(net.size), 2):
        dims = [net.link(c).dim for c in routed.routing.path(net, s, d)]
        assert dims == sorted(dims)
        assert set(dims) == {k for k in range(len(coords[s])) if coords[s][k] != coords[d][k]}


@pytest.mark.parametrize("dims", [[5, 5], [6], [3, 5], [4, 6]])
def test_torus_with_one_vc_deadlocks(tmp_path, dims):
    result = _routed(tmp_path, f"topology: {{kind: torus, dims: {dims}}}\n", vcs=1,
                     algorithm="dimension_order")
    [diag] = result.diagnostics
    assert diag.code == "E201"
    assert "needs 2 VCs" in diag.hint
    routed = result.routed
    cycle = routed.proof.cycle
    # the cycle is one ring of one dimension, all on VC 0
    assert {v for _, v in cycle} == {0}
    assert len({routed.net.link(c).dim for c, _ in cycle}) == 1
    assert len(cycle) == max(k for k in dims if k > 2)
    assert prove(routed.net, routed.routing, None, 2, WAITS).ok


def test_4_ary_torus_needs_no_dateline_with_parity_ties(tmp_path):
    # k = 4: one-hop paths, and two-hop paths only from even coordinates (up) or odd ones
    # (down), so no dependency chain goes round a ring; the proof sees that.
    result = _routed(tmp_path, "topology: {kind: torus, dims: [4, 4]}\n", vcs=1)
    assert result.diagnostics == [] and result.routed.proof.ok


def test_mesh_is_deadlock_free_with_one_vc(tmp_path):
    result = _routed(tmp_path, "topology: {kind: mesh, dims: [4, 4]}\n", vcs=1)
    assert result.diagnostics == [] and result.routed.proof.ok


@pytest.mark.parametrize("n", [2, 4, 8])
def test_direct(tmp_path, n):
    result = _routed(tmp_path, f"topology: {{kind: full, nodes: {n}}}\n",
                     board="stratix10mx_optics", vcs=1)
    routed = result.routed
    assert routed.routing.algorithm == "direct" and routed.reason.startswith("auto")
    _check_paths(routed)
    metrics = compute_metrics(routed)
    assert metrics["diameter_hops"] == 1 and metrics["average_shortest_path_hops"] == 1


def test_direct_multipath_lists_every_detour(tmp_path):
    result = _routed(tmp_path, "topology: {kind: full, nodes: 4}\n", board="stratix10mx_optics",
                     vcs=1, multipath="{max_hops: 2, above: 16KiB}")
    mp = result.routed.routing.multipath
    assert mp[(0, 3)] == [1, 2] and len(mp) == 12


@pytest.mark.parametrize(("g", "a", "h"), [(5, 2, 2), (4, 4, 3), (9, 4, 2), (3, 1, 2)])
def test_dragonfly_minimal(tmp_path, g, a, h):
    body = f"topology: {{kind: dragonfly, groups: {g}, routers: {a}, global_links: {h}}}\n"
    result = _routed(tmp_path, body, board="stratix10mx_optics", vcs=3)
    routed = result.routed
    assert routed.routing.algorithm == "dragonfly_minimal"
    _check_paths(routed, minimal=False)
    net = routed.net
    group = [n.group for n in routed.cluster.nodes]
    for s, d in itertools.permutations(range(net.size), 2):
        path = routed.routing.path(net, s, d)
        kinds = ["g" if group[net.src[c]] != group[net.dst[c]] else "l" for c in path]
        assert "".join(kinds) in ("l", "g", "lg", "gl", "lgl")
    assert routed.routing.vcs_needed == max(
        len(routed.routing.path(net, s, d)) for s, d in itertools.permutations(range(net.size), 2))


@pytest.mark.parametrize(("name", "vcs"), [("bee3_one_x8", 3), ("bee3_two_x4", 2),
                                           ("bee3_four_x2", 2), ("bee3_eight_x1", 2)])
def test_hierarchical_bee3(name, vcs):
    result = linted_example(name)
    routed = result.routed
    assert routed.routing.algorithm == "hierarchical" and routed.proof.ok
    assert routed.routing.vcs_needed == vcs
    _check_paths(routed, minimal=False)
    net = routed.net
    enc = [n.enclosure for n in routed.cluster.nodes]
    inter_hops = max(sum(enc[net.src[c]] != enc[net.dst[c]] for c in routed.routing.path(net, s, d))
                     for s, d in itertools.permutations(range(net.size), 2))
    assert inter_hops == vcs - 1  # One-x8 crosses two enclosure boundaries, the others one
    if name in ("bee3_one_x8", "bee3_two_x4"):
        # with one VC, the paper's configuration, the proof finds a cycle
        assert not prove(net, routed.routing, routed.broadcast, 1, WAITS).ok


def _random_graph_yaml(seed: int, n: int, extra: int) -> str:
    rnd = random.Random(seed)
    edges = {(rnd.randrange(i), i) for i in range(1, n)}
    for _ in range(extra):
        a, b = rnd.sample(range(n), 2)
        edges.add((min(a, b), max(a, b)))
    used = [0] * n
    lines = [f"  - {{name: v{i}}}" for i in range(n)]
    links = []
    for a, b in sorted(edges):
        ends = []
        for x in (a, b):
            ends.append(f"v{x}.optical{used[x] // 4}")
            used[x] += 1
        links.append(f"  - {{from: {ends[0]}, to: {ends[1]}}}")
    return "nodes:\n" + "\n".join(lines) + "\nlinks:\n" + "\n".join(links) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10**6), n=st.integers(3, 14), extra=st.integers(0, 14),
       algorithm=st.sampled_from(["up_down", "shortest"]))
def test_random_connected_graphs(tmp_path_factory, seed, n, extra, algorithm):
    tmp = tmp_path_factory.mktemp("g")
    body = _random_graph_yaml(seed, n, extra)
    result = _routed(tmp, body, board="stratix10mx_optics", vcs=16, algorithm=algorithm)
    assert {d.code for d in result.diagnostics} <= {"W103"}, result.diagnostics
    routed = result.routed
    _check_paths(routed, minimal=algorithm == "shortest")
    if algorithm == "up_down":
        assert routed.routing.vcs_needed == 1
        assert prove(routed.net, routed.routing, None, 1, WAITS).ok
    else:
        assert prove(routed.net, routed.routing, None, routed.routing.vcs_needed, WAITS).ok


def test_shortest_balances_load(tmp_path):
    # 4x4 torus, uniform traffic: the ideal is k/8 * N/(N-1) = 0.533 (dimension order gets
    # it); lowest-index tie-breaking would pile whole subtrees onto one channel into each
    # destination (1.33, as up*/down* shows); the balanced trees stay at 0.8.
    loads = {}
    for algorithm in ("shortest", "up_down"):
        result = _routed(tmp_path, "topology: {kind: torus, dims: [4, 4]}\n", vcs=8,
                         algorithm=algorithm)
        loads[algorithm] = compute_metrics(result.routed)["traffic"]["uniform"][
            "max_channel_load"]
    assert loads["shortest"] == pytest.approx(0.8)
    assert loads["up_down"] > 1.2


@pytest.mark.parametrize(("k", "n"), [(4, 2), (6, 2), (4, 3), (8, 1)])
def test_k_ary_n_cube_closed_forms(tmp_path, k, n):
    dims = [k] * n
    result = _routed(tmp_path, f"topology: {{kind: torus, dims: {dims}}}\n")
    metrics = compute_metrics(result.routed)
    nodes = k**n
    assert metrics["diameter_hops"] == metrics["shortest_diameter_hops"] == n * (k // 2)
    # average distance over distinct pairs: n*k/4 over all pairs (k even), rescaled
    expected = Fraction(n * k, 4) * nodes / (nodes - 1)
    assert metrics["average_shortest_path_hops"] == pytest.approx(float(expected))
    assert metrics["average_route_hops"] == pytest.approx(float(expected))
    # uniform traffic: k/8 per channel (Dally & Towles), again over distinct pairs; parity
    # tie-breaking balances the half-way ties exactly when k is a multiple of 4
    if k % 4 == 0:
        assert metrics["traffic"]["uniform"]["max_channel_load"] == pytest.approx(
            k / 8 * nodes / (nodes - 1))
    assert metrics["bisection"]["links"] == 2 * k ** (n - 1)


@pytest.mark.parametrize("d", [3, 4, 5])
def test_hypercube_bisection(tmp_path, d):
    result = _routed(tmp_path, f"topology: {{kind: hypercube, dimension: {d}}}\n",
                     board="stratix10mx_optics")
    metrics = compute_metrics(result.routed)
    assert metrics["bisection"]["links"] == 2 ** (d - 1)
    assert metrics["diameter_hops"] == d
    assert metrics["path_diversity"]["min_shortest_paths"] == 1
    assert metrics["path_diversity"]["mean_shortest_paths"] > 1


def test_transpose_and_tornado_on_a_square_torus(tmp_path):
    result = _routed(tmp_path, "topology: {kind: torus, dims: [4, 4]}\n")
    traffic = compute_metrics(result.routed)["traffic"]
    assert traffic["transpose"]["max_channel_load"] >= 1
    assert traffic["tornado"]["max_channel_load"] == 1  # each ring shifts by one
    # a link's flits at its streaming rate (the frame's headers left out): the buffers, sized
    # for the credit loop, let every VC use all of it
    params = model_params(result.routed.cluster)
    link = result.routed.cluster.links[0]
    assert params.vc_share(link) == 1
    assert traffic["tornado"]["saturation_bps_per_node"] == pytest.approx(
        float(params.flit_bits / params.flit_time(link)))
    assert traffic["tornado"]["saturation_bps_per_node"] < float(link.bandwidth)


def test_a_short_router_buffer_caps_saturation_at_its_credit_loop(tmp_path):
    # one VC of each link (the dateline class) carries a buffer's worth per credit loop
    result = _routed(tmp_path, "topology: {kind: torus, dims: [4, 4]}\n",
                     vcs="2, router: {buffer: 16 flits}")
    params = model_params(result.routed.cluster)
    link = result.routed.cluster.links[0]
    share = params.vc_share(link)
    assert share < 1
    tornado = compute_metrics(result.routed)["traffic"]["tornado"]
    # every tornado route stays in VC 0 or 1 of a ring and some VC carries it all
    assert tornado["saturation_bps_per_node"] == pytest.approx(
        float(params.flit_bits / params.flit_time(link) * share))
    assert tornado["busiest_channel"].endswith(("VC 0", "VC 1"))


def _simulate_broadcast(routed, s: int) -> list[int]:
    """Deliveries per node when node s broadcasts and every node applies its mask."""
    net = routed.net
    delivered = [0] * net.size
    queue = [(s, None)]
    while queue:
        node, _ = queue.pop()
        mask = routed.broadcast.masks[s][node]
        if mask >> LOCAL & 1:
            delivered[node] += 1
        for c in net.out[node]:
            if mask >> net.out_port[c] & 1:
                queue.append((net.dst[c], c))
        assert sum(delivered) <= net.size
    return delivered


@pytest.mark.parametrize(("topology", "algorithm"), [
    ("{kind: torus, dims: [4, 5]}", "dimension_order"), ("{kind: mesh, dims: [3, 4]}", "auto"),
    ("{kind: ring, nodes: 7}", "up_down"), ("{kind: torus, dims: [4, 4]}", "shortest")])
def test_broadcast_trees_reach_every_node_once(tmp_path, topology, algorithm):
    result = _routed(tmp_path, f"topology: {topology}\n", vcs=8, algorithm=algorithm)
    routed = result.routed
    assert routed.proof.ok and routed.broadcast.mode == "tree"
    for s in range(routed.net.size):
        expected = [0 if v == s else 1 for v in range(routed.net.size)]
        assert _simulate_broadcast(routed, s) == expected


def test_cascade_masks_send_each_nodes_copies_one_hop(tmp_path):
    # Every node sends the broadcasts it forwards under its own group: out on every link
    # at that node, into the local port (the cascade unit) at every other.
    result = _routed(tmp_path, "topology: {kind: torus, dims: [4, 4]}\n", broadcast="cascade")
    routed = result.routed
    assert routed.proof.ok
    assert all(mask == (0b11110 if node == group else 0b00001)
               for group, row in enumerate(routed.broadcast.masks)
               for node, mask in enumerate(row))


def test_tables_hex_and_json_agree(tmp_path):
    result = _routed(tmp_path, "topology: {kind: torus, dims: [4, 5]}\n")
    routed = result.routed
    for table in node_tables(routed):
        doc = to_json(table)
        w = doc["widths"]
        assert w["id_bits"] == math.ceil(math.log2(20)) and w["ports"] == 5
        assert w["port_bits"] == 3 and w["vc_bits"] == 1
        unicast, multicast = render_hex(table)
        words = [int(line, 16) for line in unicast.splitlines() if not line.startswith("//")]
        assert len(words) == 2 ** w["id_bits"]
        for entry in doc["unicast"]:
            word = words[entry["dst_id"]]
            assert word >> (w["port_bits"] + w["vc_bits"]) == 1
            assert word & (2 ** w["port_bits"] - 1) == entry["port"]
            assert word >> w["port_bits"] & 1 == entry["vc"]
            assert (entry["port"] == LOCAL) == (entry["dst"] == table.node)
        masks = [int(line, 16) for line in multicast.splitlines() if not line.startswith("//")]
        ports = w["ports"]
        assert [m & (2 ** ports - 1) for m in masks[:20]] == [g["mask"] for g in doc["multicast"]]
        for m, g in zip(masks, doc["multicast"], strict=False):
            vcs = [m >> (ports + p * w["vc_bits"]) & 1 for p in g["ports"]]
            assert vcs == g["vcs"]
        # a broadcast on the torus crosses some dateline, so class 1 appears in the tree
        assert any(1 in g["vcs"] for g in doc["multicast"])


def test_table_follows_the_route_of_every_flow(tmp_path):
    result = _routed(tmp_path, "topology: {kind: mesh, dims: [3, 3]}\n")
    routed = result.routed
    tables = {t.node: {e.dst: e for e in t.unicast} for t in node_tables(routed)}
    net = routed.net
    names = [n.name for n in routed.cluster.nodes]
    for s, d in itertools.permutations(range(net.size), 2):
        node = s
        for c in routed.routing.path(net, s, d):
            assert tables[names[node]][names[d]].port == net.out_port[c]
            node = net.dst[c]


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_c_header_compiles(tmp_path):
    result = _routed(tmp_path, "topology: {kind: ring, nodes: 5}\n")
    headers = []
    for table in node_tables(result.routed):
        path = tmp_path / f"{table.node}.h"
        path.write_text(render_c_header(table))
        headers.append(f'#include "{path}"')
    src = tmp_path / "main.c"
    src.write_text("\n".join(headers) + "\nint main(void) { return optnet_n0_unicast[1].port "
                   "+ (int)optnet_n4_multicast[0][0]; }\n")
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", str(src), "-o",
                    str(tmp_path / "a.out")], check=True)


def test_route_cli(run, tmp_path):
    result = run("route", "examples/bluedbm_20.yaml")
    assert result.exit_code == 0
    assert "routing: dimension_order (chosen in the cluster file)" in result.stdout
    assert "proof: the graph of the hardware's waits is acyclic" in result.stdout
    import json
    doc = json.loads(run("route", "--format", "json", "--tables", "--paths",
                         "examples/plasticnet_ring4.yaml").stdout)
    assert doc["algorithm"]["name"] == "up_down"
    assert doc["algorithm"]["reason"].startswith("auto: ")
    assert doc["proof"]["acyclic"] is True
    assert len(doc["tables"]) == 4 and len(doc["paths"]) == 12
    out = tmp_path / "tables"
    assert run("route", "--emit", str(out), "examples/ulx3s_ring4.yaml").exit_code == 0
    assert sorted(p.name for p in (out / "n0").iterdir()) == [
        "mcast.hex", "routes.h", "routes.hex", "routes.json"]
    bad = run("route", "tests/fixtures/bad/E201_deadlock.yaml")
    assert bad.exit_code == 1 and "error[E201]" in bad.stderr


def _ring4(tmp_path):
    return _routed(tmp_path, "topology: {kind: ring, nodes: 4}\n", algorithm="dimension_order",
                   broadcast="tree").routed


def test_sibling_waits_close_the_ring_broadcast_cycle(tmp_path):
    # The deadlock two broadcasting nodes of a ring reach when a multicast can hold one
    # branch while another waits for credit (issue 16): n0's broadcast holds n0 -> n3 and
    # waits for n0 -> n1, where n0's previous broadcast waits for n1 -> n2, held by n1's
    # broadcast, which waits for n1 -> n0, where n1's previous one waits for n0 -> n3.
    routed = _ring4(tmp_path)
    net = routed.net
    assert routed.proof.ok    # the hardware's own waits: no sibling wait
    holding = prove(net, routed.routing, routed.broadcast, 2,
                    Waits(broadcast_flits=16, branch_credits=4))
    assert not holding.ok and "sibling" in holding.waits
    hops = [(net.src[c], net.dst[c]) for c, _ in holding.cycle]
    assert all(net.dst[c] == net.src[d] or w == "sibling" for (c, _), (d, _), w in zip(
        holding.cycle, holding.cycle[1:] + holding.cycle[:1], holding.waits, strict=True))
    assert len(set(hops)) == len(hops)
    assert "[then a broadcast waits for credit on a sibling branch]" in \
        describe_cycle(net, holding)
    # one flit more than the credit a branch starts with is still safe, two are not
    assert prove(net, routed.routing, routed.broadcast, 2, Waits(5, 4)).ok
    assert not prove(net, routed.routing, routed.broadcast, 2, Waits(6, 4)).ok
    # without broadcasts, the same waits are acyclic
    assert prove(net, routed.routing, None, 2, Waits(16, 4)).ok


def test_an_endpoint_that_waits_for_its_sends_closes_a_cycle(tmp_path):
    # Two nodes' endpoints each waiting for their own sends before taking a packet: n0's
    # packets to n1 wait for n1's sends to n0, which wait for n0's.
    routed = _ring4(tmp_path)
    proof = prove(routed.net, routed.routing, None, 2,
                  Waits(16, 16, receive_waits_for_send=True))
    assert not proof.ok and "endpoint" in proof.waits


def test_the_proof_counts_the_hardware_waits(tmp_path):
    # Ring of 4, dateline VCs: 8 link channels; vertices W and F per used (channel, VC),
    # plus one inject and eject pair per node; every used channel has its credit edge.
    routed = _ring4(tmp_path)
    proof = routed.proof
    used = proof.channels
    assert used == len({(c, v) for c, v in _used_channels(routed)})
    assert proof.dependencies >= used + 2 * routed.net.size


def _used_channels(routed):
    net, routing = routed.net, routed.routing
    for d in range(net.size):
        for n, c in enumerate(routing.next[d]):
            if c >= 0:
                yield c, min(routing.vclass[d][n], 1)
    for s, masks in enumerate(routed.broadcast.masks):
        for x, mask in enumerate(masks):
            for c in net.out[x]:
                if mask >> net.out_port[c] & 1:
                    yield c, min(routed.broadcast.classes[s][c], 1)


def test_deadlock_message_does_not_depend_on_the_hash_seed():
    # The cycle E201 names is the first the search finds, so the graph must be built in an
    # order that string hashing does not change.
    outputs = {subprocess.run(
        [sys.executable, "-m", "optnet", "lint", "tests/fixtures/bad/E201_deadlock.yaml"],
        capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")}
    assert len(outputs) == 1 and "E201" in outputs.pop()


def test_broadcast_none_adds_no_wait_and_no_multicast_entry(tmp_path):
    # BlueDBM (issue 18): no broadcast in the network; the ring's waits that a broadcast
    # tree makes cyclic (see above) are acyclic, every multicast group is empty, and the
    # report's broadcast is the root's unicasts (as scatter).
    routed = _routed(tmp_path, "topology: {kind: ring, nodes: 4}\n",
                     algorithm="dimension_order", broadcast="none").routed
    assert routed.broadcast.mode == "none" and routed.proof.ok
    assert prove(routed.net, routed.routing, routed.broadcast, 2, Waits(6, 4)).ok
    for table in node_tables(routed):
        assert table.multicast_words() and not any(table.multicast_words())
    params = model_params(routed.cluster)
    bcast, scatter = (collective(routed, params, n) for n in ("broadcast", "scatter"))
    assert (bcast.startup, bcast.per_bit) == (scatter.startup, scatter.per_bit)
    tree = _ring4(tmp_path)
    assert collective(tree, model_params(tree.cluster), "broadcast").per_bit < bcast.per_bit
