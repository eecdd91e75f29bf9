"""Network metrics of a routed cluster: distances, bisection, channel load, path diversity.

Channel loads are in the usual normalised form (Dally & Towles): every node injects one
unit of traffic; the load of a channel is the traffic that crosses it; the busiest channel
bounds the saturation throughput at ``bandwidth(channel) / load(channel)`` bit/s injected
per node. Loads follow the actual routes, not ideal ones.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from fractions import Fraction

import networkx as nx
import numpy as np

from optnet.model import ModelParams, hop, model_params
from optnet.routing.algorithms import ahead
from optnet.routing.latency import Diameter, diameter
from optnet.routing.network import Network
from optnet.routing.route import Routed

__all__ = ["EXACT_BISECTION_NODES", "LATENCY_MODEL", "Capacity", "compute_metrics", "link_types",
           "through"]

#: How the diameter's latency is modelled (docs/report.md), for the printed metrics.
LATENCY_MODEL = ("zero load, endpoint to endpoint: 2 hub + (hops + 1) router + per hop "
                 "(link layers + PHY pair + one frame's serialisation + cable), the report's "
                 "model (docs/report.md)")

#: Clusters up to this size get their exact minimum bisection, by trying every balanced cut.
EXACT_BISECTION_NODES = 20


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
            load: list[int], vclass=None, vc_load: dict | None = None) -> None:
    """Add to ``load`` the traffic to ``d`` given per-source ``weight``; with ``vclass``
    (the routes' VC per node for ``d``), also to ``vc_load[channel, vc]``."""
    buckets: list[list[int]] = [[] for _ in range(max(hops) + 1)]
    for n, h in enumerate(hops):
        if h > 0:
            buckets[h].append(n)
    carried = list(weight)
    for bucket in reversed(buckets):
        for n in bucket:
            c = nxt[n]
            load[c] += carried[n]
            if vc_load is not None:
                vc_load[c, vclass[n]] += carried[n]
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


class Capacity:
    """What the hardware carries, in bit/s of flit data (a packet's header flit included):
    per channel its link's flits at the streaming rate (frames' headers left out,
    :meth:`~optnet.model.ModelParams.flit_time`), per VC of a channel a buffer's worth per
    credit loop (:meth:`~optnet.model.ModelParams.vc_share`), and per node a flit a network
    cycle into and out of its router's local port (a direct node's switch: its
    ``node_rate``)."""

    def __init__(self, net: Network, params: ModelParams):
        self.net, self.params = net, params
        self._link: dict[int, tuple[Fraction, Fraction]] = {}
        self.node = params.node_rate or params.clock * params.flit_bits
        self.vcs = params.vcs - 1     # the highest VC, onto which higher classes fold

    def vc(self, vclass: int) -> int:
        """The VC a hop of VC class ``vclass`` takes (classes above the VCs fold onto the
        highest, as the tables fold them)."""
        return min(vclass, self.vcs)

    def link(self, c: int) -> tuple[Fraction, Fraction]:
        """(channel rate, one VC's rate) of channel ``c``."""
        link = self.net.link(c)
        if link.index not in self._link:
            p = self.params
            rate = p.flit_bits / p.flit_time(link)
            self._link[link.index] = (rate, rate if p.direct else rate * p.vc_share(link))
        return self._link[link.index]

    @property
    def vc_limited(self) -> bool:
        """Some VC's credit loop caps it below its link's rate."""
        return self.params.direct is None and any(
            self.link(c)[1] < self.link(c)[0] for c in range(len(self.net.src)))


def _saturation(net: Network, load: list, capacity: Capacity, node_load: float,
                vc_load: dict | None = None) -> tuple[float, float, str | None]:
    """(max channel load, injection rate per node at saturation in bit/s of flit data, what
    saturates first), for channel loads ``load`` per unit a node injects, each node
    injecting and receiving at most ``node_load`` units."""
    worst, busiest = 0.0, "the routers' local ports" if capacity.params.direct is None \
        else "the direct switches"
    rate = float(capacity.node / node_load) if node_load else math.inf
    for c, value in enumerate(load):
        if value <= 0:
            continue
        worst = max(worst, float(value))
        bound = float(capacity.link(c)[0] / value)
        if bound < rate:
            rate, busiest = bound, net.name(c)
    for (c, vc), value in (vc_load or {}).items():
        bound = float(capacity.link(c)[1] / value) if value else math.inf
        if bound < rate:
            rate, busiest = bound, f"{net.name(c)} VC {vc}"
    return worst, (rate if rate < math.inf else 0.0), busiest


def _balanced(n: int) -> list[int]:
    """Sizes of the half holding node 0 in a balanced cut of ``n`` nodes (halves equal, or
    one node apart)."""
    return sorted({n // 2, n - n // 2})


def _subsets(count: int, sizes: list[int]) -> np.ndarray:
    """Every subset of ``count`` items that holds item 0 and has one of ``sizes`` items, as
    rows of a boolean matrix."""
    rows = []
    for size in sizes:
        combos = list(itertools.combinations(range(1, count), size - 1))
        picks = np.array(combos, dtype=np.int64).reshape(len(combos), size - 1)
        side = np.zeros((len(picks), count), dtype=bool)
        side[:, 0] = True
        side[np.arange(len(picks))[:, None], picks] = True
        rows.append(side)
    return np.concatenate(rows)


class _Cuts:
    """Balanced cuts of a cluster's nodes, scored by the bandwidth of the links they cross."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.n = len(cluster.nodes)
        index = {node.name: node.index for node in cluster.nodes}
        self.a = np.array([index[link.a.node] for link in cluster.links], dtype=np.int64)
        self.b = np.array([index[link.b.node] for link in cluster.links], dtype=np.int64)
        self.rate = np.array([float(link.bandwidth) for link in cluster.links])
        self.uniform = len({link.bandwidth for link in cluster.links}) <= 1

    def best(self, sides: np.ndarray) -> np.ndarray:
        """The side (boolean per node) of least bandwidth among the balanced rows of
        ``sides``; ties (to 12 digits) go to fewer links, then to the first row."""
        sides = sides[np.abs(2 * sides.sum(axis=1) - self.n) <= 1]
        cross = sides[:, self.a] != sides[:, self.b]
        rate = cross @ self.rate
        low = rate <= rate.min() * (1 + 1e-12)
        links = np.where(low, cross.sum(axis=1), np.iinfo(np.int64).max)
        return sides[int(np.argmin(links))]

    def result(self, side: np.ndarray, kind: str, method: str) -> dict:
        links = [link for link, a, b in zip(self.cluster.links, self.a, self.b, strict=True)
                 if side[a] != side[b]]
        half = int(side.sum())
        return {"links": len(links), "bandwidth_bps": float(sum(
                    (link.bandwidth for link in links), Fraction(0))),
                "halves": sorted([half, self.n - half]), "kind": kind, "method": method}


def _groups(cluster) -> tuple[str, list[list[int]]] | None:
    """Nodes by enclosure (or dragonfly group), when every node has one and all are the same
    size: whole groups are natural halves. Returns the kind of group and the groups."""
    for key in ("enclosure", "group"):
        labels = [getattr(node, key) for node in cluster.nodes]
        if any(label is None for label in labels):
            continue
        groups: dict = {}
        for node, label in zip(cluster.nodes, labels, strict=True):
            groups.setdefault(label, []).append(node.index)
        members = list(groups.values())
        if len(members) > 1 and len({len(m) for m in members}) == 1:
            return key, members
    return None


def _grid_cut(cluster) -> np.ndarray | None:
    """The cut across the middle of a generated grid's largest dimension, when it halves the
    nodes (1-D shapes, or an even largest dimension), else None."""
    if not (cluster.generated and cluster.topology in ("ring", "line", "mesh", "torus",
                                                       "hypercube")):
        return None
    coords = [node.coords for node in cluster.nodes]
    k = max(range(len(coords[0])), key=lambda i: max(c[i] for c in coords))
    size = max(c[k] for c in coords) + 1
    if len(coords[0]) > 1 and size % 2:
        return None
    return np.array([c[k] < size // 2 for c in coords])


def _bisection(routed: Routed) -> dict:
    """The least bandwidth across a balanced cut (halves of equal size, or one node apart),
    and how it was found: ``kind`` is ``exact`` (every balanced cut tried), ``closed_form``
    (a generated grid's known minimum) or ``upper_bound`` (the best of the cuts tried; the
    minimum may be lower)."""
    cluster = routed.cluster
    n = len(cluster.nodes)
    if n < 2 or not cluster.links:
        return {"links": 0, "bandwidth_bps": 0.0, "halves": [n // 2, n - n // 2],
                "kind": "exact", "method": "trivial: no link to cut"}
    cuts = _Cuts(cluster)
    if n <= EXACT_BISECTION_NODES:
        return cuts.result(cuts.best(_subsets(n, _balanced(n))), "exact",
                           "exact: the least over every balanced cut")
    grid = _grid_cut(cluster)
    if grid is not None and cuts.uniform:
        return cuts.result(grid, "closed_form",
                           "closed form: the cut across the middle of the largest dimension, "
                           "minimal for rings, lines and for meshes, tori and hypercubes whose "
                           "largest dimension is even, with equal links")
    sides, tried = [], []
    if grid is not None:
        sides.append(grid)
        tried.append("the cut across the largest dimension")
    grouped = _groups(cluster)
    if grouped is not None:
        key, groups = grouped
        count = [k for k in range(1, len(groups)) if len(groups[0]) * k in _balanced(n)]
        if count and len(groups) <= EXACT_BISECTION_NODES:
            for row in _subsets(len(groups), count):
                side = np.zeros(n, dtype=bool)
                side[[i for g, on in zip(groups, row, strict=True) if on for i in g]] = True
                sides.append(side)
            tried.append(f"every cut between whole {key}s")
    simple = nx.Graph()
    simple.add_nodes_from(range(n))
    for link, a, b in zip(cluster.links, cuts.a, cuts.b, strict=True):
        # parallel links add up; Kernighan-Lin minimises the weight it cuts
        weight = simple.get_edge_data(int(a), int(b), {"weight": 0.0})["weight"]
        simple.add_edge(int(a), int(b), weight=weight + float(link.bandwidth))
    starts = 3 if n <= 256 else 1
    for seed in range(starts):
        half, _ = nx.community.kernighan_lin_bisection(simple, seed=seed, weight="weight")
        sides.append(np.isin(np.arange(n), list(half)))
    tried.append(f"Kernighan-Lin weighted by bandwidth from {starts} start"
                 f"{'s' if starts > 1 else ''}")
    return cuts.result(cuts.best(np.array(sides)), "upper_bound",
                       "upper bound: the least of the balanced cuts tried ("
                       + "; ".join(tried) + "); the minimum may be lower")


def link_types(cluster, params: ModelParams) -> dict:
    """One link per type (:meth:`~optnet.model.ModelParams.link_type`), in link order."""
    kinds: dict = {}
    for link in cluster.links:
        kinds.setdefault(params.link_type(link), link)
    return kinds


def compute_metrics(routed: Routed, params: ModelParams | None = None,
                    far: Diameter | None = None) -> dict:
    """Every metric of ``routed`` as JSON-ready data (rates in bit/s, times in ns).

    The latency diameter is the model's (:mod:`optnet.model`) slowest pair along the routes,
    endpoint to endpoint at zero load, as the report gives it; ``params`` and ``far`` (its
    :func:`~optnet.routing.latency.diameter`) are computed when not given.
    """
    net, routing, cluster = routed.net, routed.routing, routed.cluster
    n = net.size
    params = params or model_params(cluster)
    far = far or diameter(routed, params)
    route_hops = [ahead(net, routing.next[d], d) for d in range(n)]
    dist, sigma = _shortest_counts(net)
    pairs = [(s, d) for s in range(n) for d in range(n) if s != d]
    count = max(1, len(pairs))
    result: dict = {
        "nodes": n,
        "links": len(cluster.links),
        "diameter_hops": max((route_hops[d][s] for s, d in pairs), default=0),
        "shortest_diameter_hops": max((dist[s][d] for s, d in pairs), default=0),
        # rounded as report.json rounds it, so the two print the same figure
        "diameter_ns": round(float(far.latency.total) * 1e9, 3) if far else 0.0,
        "diameter_pair": [far.src, far.dst] if far else None,
        "average_route_hops": sum(route_hops[d][s] for s, d in pairs) / count,
        "average_shortest_path_hops": sum(dist[s][d] for s, d in pairs) / count,
        "path_diversity": {
            "mean_shortest_paths": sum(sigma[s][d] for s, d in pairs) / count,
            "min_shortest_paths": min((sigma[s][d] for s, d in pairs), default=0),
        },
        "bisection": _bisection(routed),
        "latency_model": LATENCY_MODEL,
        # one hop per link type, as the report's per-hop table gives it
        "hop_ns": {kind: round(float(hop(params, link).total) * 1e9, 3)
                   for kind, link in link_types(cluster, params).items()},
    }
    traffic = {}
    if n > 1:
        capacity = Capacity(net, params)
        flows = [0] * len(net.src)
        # per (channel, VC) only where a VC's credit loop can be the limit
        vc_flows: dict | None = defaultdict(int) if capacity.vc_limited else None
        for d in range(n):
            vclass = [capacity.vc(v) for v in routing.vclass[d]] \
                if vc_flows is not None else None
            through(net, routing.next[d], route_hops[d], d,
                    [1 if s != d else 0 for s in range(n)], flows, vclass, vc_flows)
        # Uniform random traffic: each node spreads one unit over the n-1 others.
        uniform = [Fraction(f, n - 1) for f in flows]
        worst, rate, busiest = _saturation(
            net, uniform, capacity, 1,
            {k: Fraction(v, n - 1) for k, v in vc_flows.items()} if vc_flows else None)
        traffic["uniform"] = {"max_channel_load": worst, "saturation_bps_per_node": rate,
                              "busiest_channel": busiest}
        worst, rate, busiest = _saturation(net, flows, capacity, n - 1, vc_flows)
        traffic["all_to_all"] = {"max_flows_per_channel": round(worst),
                                 "saturation_bps_per_node": rate * (n - 1),
                                 "busiest_channel": busiest}
        for pattern in ("transpose", "tornado"):
            perm = _permutation(routed, pattern)
            if perm is None:
                traffic[pattern] = None
                continue
            load = [0] * len(net.src)
            vc_load: dict[tuple[int, int], int] = defaultdict(int)
            for s, d in enumerate(perm):
                if s != d:
                    for c in routing.path(net, s, d):
                        load[c] += 1
                        vc_load[c, capacity.vc(routing.vclass[d][net.src[c]])] += 1
            worst, rate, busiest = _saturation(net, load, capacity, 1,
                                               vc_load if capacity.vc_limited else None)
            traffic[pattern] = {"max_channel_load": worst, "saturation_bps_per_node": rate,
                                "busiest_channel": busiest}
    result["traffic"] = traffic
    return result
