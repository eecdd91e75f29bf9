"""Network metrics of a routed cluster: distances, bisection, channel load, path diversity.

Channel loads are in the usual normalised form (Dally & Towles): every node injects one
unit of traffic; the load of a channel is the traffic that crosses it; the busiest channel
bounds the saturation throughput at ``bandwidth(channel) / load(channel)`` bit/s injected
per node. Loads follow the actual routes, not ideal ones.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import networkx as nx

from optnet.cluster import graph
from optnet.routing.algorithms import ahead
from optnet.routing.network import Network
from optnet.routing.route import Routed

__all__ = ["EXACT_BISECTION_NODES", "compute_metrics", "through"]

EXACT_BISECTION_NODES = 16


def _shortest_counts(net: Network) -> tuple[list[list[int]], list[list[int]]]:
    """Hop distance and number of distinct shortest channel paths between all pairs."""
    dists, counts = [], []
    for s in range(net.size):
        dist = [-1] * net.size
        sigma = [0] * net.size
        dist[s], sigma[s] = 0, 1
        frontier = [s]
        while frontier:
            ahead_ = []
            for v in frontier:
                for c in net.out[v]:
                    u = net.dst[c]
                    if dist[u] < 0:
                        dist[u] = dist[v] + 1
                        ahead_.append(u)
                    if dist[u] == dist[v] + 1:
                        sigma[u] += sigma[v]
            frontier = ahead_
        dists.append(dist)
        counts.append(sigma)
    return dists, counts


def through(net: Network, nxt, hops: list[int], d: int, weight: list[int],
            load: list[int]) -> None:
    """Add to ``load`` the traffic to ``d`` given per-source ``weight``."""
    buckets: list[list[int]] = [[] for _ in range(max(hops) + 1)]
    for n, h in enumerate(hops):
        if h > 0:
            buckets[h].append(n)
    carried = list(weight)
    for bucket in reversed(buckets):
        for n in bucket:
            c = nxt[n]
            load[c] += carried[n]
            carried[net.dst[c]] += carried[n]


def _permutation(routed: Routed, pattern: str) -> list[int] | None:
    cluster = routed.cluster
    n = len(cluster.nodes)
    topo = cluster.desc.topology
    grid = cluster.generated and cluster.topology in ("ring", "mesh", "torus", "line")
    if pattern == "transpose":
        if grid and len(cluster.nodes[0].coords) == 2 and topo.dims[0] == topo.dims[1]:
            k = topo.dims[0]
            return [node.coords[1] + k * node.coords[0] for node in cluster.nodes]
        k = math.isqrt(n)
        if k * k != n or n < 4:
            return None
        return [(i // k) + k * (i % k) for i in range(n)]
    # tornado: half-way minus one around every ring of a k-ary n-cube, else around the ids
    if grid and cluster.topology in ("torus", "ring"):
        dims = topo.dims if cluster.topology == "torus" else [topo.nodes]
        strides = [math.prod(dims[:k]) for k in range(len(dims))]
        return [sum(((x + math.ceil(k / 2) - 1) % k) * st
                    for x, k, st in zip(node.coords, dims, strides, strict=True))
                for node in cluster.nodes]
    return [(i + math.ceil(n / 2) - 1) % n for i in range(n)]


def _saturation(net: Network, load: list) -> tuple[float, float, str | None]:
    """(max load, injection rate per node at saturation in bit/s, busiest channel)."""
    worst, rate, busiest = 0.0, math.inf, None
    for c, value in enumerate(load):
        if value <= 0:
            continue
        worst = max(worst, float(value))
        bound = float(net.link(c).bandwidth / value)
        if bound < rate:
            rate, busiest = bound, net.name(c)
    return worst, (rate if busiest else 0.0), busiest


def _bisection(routed: Routed) -> dict:
    cluster = routed.cluster
    g = graph(cluster)
    n = g.number_of_nodes()
    names = [node.name for node in cluster.nodes]
    if n < 2:
        return {"links": 0, "bandwidth_bps": 0, "method": "trivial"}

    def cut(side: set[str]) -> tuple[int, float]:
        links = [cluster.links[k] for a, b, k in g.edges(keys=True) if (a in side) != (b in side)]
        return len(links), float(sum(link.bandwidth for link in links))

    if n <= EXACT_BISECTION_NODES:
        best = None
        for rest in itertools.combinations(names[1:], n // 2 - 1 if n % 2 == 0 else n // 2):
            value = cut({names[0], *rest})
            best = value if best is None or value < best else best
        links, bw = best
        method = "exact (every balanced partition)"
    elif cluster.generated and cluster.topology in ("ring", "line", "mesh", "torus",
                                                     "hypercube"):
        coords = [node.coords for node in cluster.nodes]
        k = max(range(len(coords[0])), key=lambda i: max(c[i] for c in coords))
        size = max(c[k] for c in coords) + 1
        links, bw = cut({names[i] for i, c in enumerate(coords) if c[k] < size // 2})
        method = ("closed form: the cut across the middle of the largest dimension, minimal "
                  "for k-ary n-cubes, meshes and hypercubes")
    else:
        simple = nx.Graph(g)
        best = None
        for seed in range(3 if n <= 256 else 1):
            a, _ = nx.community.kernighan_lin_bisection(simple, seed=seed)
            value = cut(set(a))
            best = value if best is None or value < best else best
        links, bw = best
        method = "heuristic: best Kernighan-Lin bisection (an upper bound on the minimum)"
    return {"links": links, "bandwidth_bps": bw, "method": method}


def compute_metrics(routed: Routed) -> dict:
    """Every metric of ``routed`` as JSON-ready data (rates in bit/s, times in ns)."""
    net, routing, cluster = routed.net, routed.routing, routed.cluster
    n = net.size
    latency_ps = net.latency_ps()
    route_hops = [ahead(net, routing.next[d], d) for d in range(n)]
    route_ps = [ahead(net, routing.next[d], d, latency_ps.__getitem__) for d in range(n)]
    dist, sigma = _shortest_counts(net)
    pairs = [(s, d) for s in range(n) for d in range(n) if s != d]
    count = max(1, len(pairs))
    result: dict = {
        "nodes": n,
        "links": len(cluster.links),
        "diameter_hops": max((route_hops[d][s] for s, d in pairs), default=0),
        "shortest_diameter_hops": max((dist[s][d] for s, d in pairs), default=0),
        "diameter_ns": max((route_ps[d][s] for s, d in pairs), default=0) / 1000,
        "average_route_hops": sum(route_hops[d][s] for s, d in pairs) / count,
        "average_shortest_path_hops": sum(dist[s][d] for s, d in pairs) / count,
        "path_diversity": {
            "mean_shortest_paths": sum(sigma[s][d] for s, d in pairs) / count,
            "min_shortest_paths": min((sigma[s][d] for s, d in pairs), default=0),
        },
        "bisection": _bisection(routed),
        "latency_model": "hop = router pipeline / clock + PHY latency + 5 ns/m of cable",
    }
    traffic = {}
    if n > 1:
        flows = [0] * len(net.src)
        for d in range(n):
            through(net, routing.next[d], route_hops[d], d,
                     [1 if s != d else 0 for s in range(n)], flows)
        # Uniform random traffic: each node spreads one unit over the n-1 others.
        uniform = [Fraction(f, n - 1) for f in flows]
        worst, rate, busiest = _saturation(net, uniform)
        traffic["uniform"] = {"max_channel_load": worst, "saturation_bps_per_node": rate,
                              "busiest_channel": busiest}
        worst, rate, busiest = _saturation(net, flows)
        traffic["all_to_all"] = {"max_flows_per_channel": round(worst),
                                 "saturation_bps_per_node": rate * (n - 1),
                                 "busiest_channel": busiest}
        for pattern in ("transpose", "tornado"):
            perm = _permutation(routed, pattern)
            if perm is None:
                traffic[pattern] = None
                continue
            load = [0] * len(net.src)
            for s, d in enumerate(perm):
                if s != d:
                    for c in routing.path(net, s, d):
                        load[c] += 1
            worst, rate, busiest = _saturation(net, load)
            traffic[pattern] = {"max_channel_load": worst, "saturation_bps_per_node": rate,
                                "busiest_channel": busiest}
    result["traffic"] = traffic
    return result
