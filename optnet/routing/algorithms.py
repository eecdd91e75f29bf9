"""Routing algorithms: for every destination, the next channel and VC class at every node.

All algorithms here are *destination-based*: the next hop and VC class depend only on the
node a packet is at and its destination. That gives every (source, destination) pair
exactly one path — every flow, whatever its endpoint, is delivered in order without a
reorder buffer — and lets a router's table be indexed by destination alone.

VC classes are chosen so that the channel dependency graph is acyclic when the network
has as many VCs as the algorithm needs (:attr:`Routing.vcs_needed`); with fewer, classes
are folded onto the highest VC and the proof (:mod:`optnet.routing.proof`) decides.

- ``dimension_order``: mesh/torus/hypercube coordinates, lowest dimension first, shortest
  direction (half-way ties on even rings split by coordinate parity). Torus rings use
  dateline classes: a hop is class 1 while the packet still has to cross the ring's
  wrap-around link in this dimension, class 0 after (or if it never does), so neither
  class contains a whole ring.
- ``shortest``: minimal paths; among equally short next hops, the one that keeps the
  destination's in-tree balanced, then the least loaded channel (see :func:`_tree`).
  Class = hops still ahead, so classes strictly decrease along a path (needs
  diameter-many VCs).
- ``up_down``: up*/down* on a BFS spanning tree; no path turns from down to up, which
  makes the graph acyclic with one VC.
- ``direct``: the one link between source and destination (fully connected networks).
- ``dragonfly_minimal``: local, global, local; class = hops still ahead (<= 3 VCs).
- ``hierarchical``: least-latency paths (an inter-enclosure hop costs its PHY latency, an
  on-board hop a few tens of ns); class = inter-enclosure hops still ahead after this one.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from optnet.routing.arrays import chunks, matrix, walk
from optnet.routing.network import Network

__all__ = ["ALGORITHMS", "NotApplicable", "Routing", "TreeRule", "ahead", "pick_auto"]


class NotApplicable(Exception):
    """The algorithm cannot route this cluster; the message says why."""


@dataclass(frozen=True)
class TreeRule:
    """How the VC class of a broadcast tree channel follows from the channels below it.

    The class of tree channel ``c`` is the largest of ``base[c]`` and, over its child
    channels ``k`` (those leaving the node ``c`` leads to) on the same :attr:`line`,
    ``step[k] + class(k)``; leaves are ``base[c]``.

    Attributes
    ----------
    base, step : ndarray of int, one entry per channel
    line : ndarray of int or None
        Only children with ``line[k] == line[c]`` count; None: every child counts.
    """

    base: np.ndarray
    step: np.ndarray
    line: np.ndarray | None = None

    @classmethod
    def height(cls, channels: int) -> TreeRule:
        """Hops-ahead classes: the highest class of a tree channel is the height below it."""
        return cls(np.zeros(channels, dtype=np.int32), np.ones(channels, dtype=np.int32))

    @classmethod
    def flat(cls, channels: int) -> TreeRule:
        """Every tree channel in class 0."""
        zero = np.zeros(channels, dtype=np.int32)
        return cls(zero, zero)


@dataclass
class Routing:
    """Routes of a whole network.

    Attributes
    ----------
    algorithm : str
    next : list of array
        ``next[d][n]`` is the channel node ``n`` sends a packet for destination ``d`` on;
        -1 at ``d`` itself, -2 where ``d`` is unreachable.
    vclass : list of array
        ``vclass[d][n]``: VC class of that hop.
    vcs_needed : int
        VC classes the algorithm uses (the proof holds with at least this many VCs).
    note : str
        Why the VC classes make the routing deadlock-free.
    multipath : dict
        ``(s, d) -> list of intermediate nodes`` for OPTWEB 2-hop multipath.
    tree : callable or None
        ``tree(s)``: parent channel of every node in a broadcast tree from ``s`` that obeys
        the algorithm's own turn rules (all in VC class 0), where the algorithm has one.
    tree_rule : TreeRule or None
        The VC class a broadcast tree channel must use so that it matches every unicast
        route it stands in for (for a tree made of unicast routes, the highest class any of
        those routes gives it); None: the height of the subtree below it.
    """

    algorithm: str
    next: list[array]
    vclass: list[array]
    vcs_needed: int
    note: str
    multipath: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    tree: Callable[[int], dict[int, int]] | None = None
    tree_rule: TreeRule | None = None
    walked: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False,
                                                         compare=False)
    """Hops and last channel of every route (:func:`~optnet.routing.arrays.walk`, one row
    per destination), where the algorithm has computed them already."""

    def matrices(self, start: int = 0, stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:attr:`next` and :attr:`vclass` of destinations ``start`` up to ``stop`` as
        matrices (row = destination, column = node)."""
        return (matrix(self.next[start:stop], np.intc),
                matrix(self.vclass[start:stop], np.int8))

    def path(self, net: Network, s: int, d: int) -> list[int]:
        """Channels from ``s`` to ``d`` (empty when ``s == d``); raises if unreachable."""
        hops = []
        n = s
        while n != d:
            c = self.next[d][n]
            if c < 0 or len(hops) > net.size:
                raise ValueError(f"no route from node {s} to node {d}")
            hops.append(c)
            n = net.dst[c]
        return hops


def _empty(n: int) -> tuple[array, array]:
    return array("i", [-2] * n), array("b", [0] * n)


def _distances(net: Network, d: int, weight: Callable[[int], int] | None = None,
               legal: Callable[[int], bool] | None = None,
               into: list[list[int]] | None = None) -> list[int | None]:
    """Cost from every node to ``d`` over channels ``legal`` admits, or over ``into``
    (each node's admitted channels in, :func:`_into`) (BFS, or Dijkstra on reversed channels
    with ``weight``)."""
    if into is None:
        into = net.into if legal is None else _into(net, legal)
    dist: list[int | None] = [None] * net.size
    dist[d] = 0
    if weight is None:
        frontier = [d]
        while frontier:
            ahead = []
            for v in frontier:
                cost = dist[v] + 1
                for c in into[v]:
                    u = net.src[c]
                    if dist[u] is None:
                        dist[u] = cost
                        ahead.append(u)
            frontier = ahead
        return dist
    heap = [(0, d)]
    while heap:
        cost, v = heapq.heappop(heap)
        if cost > dist[v]:
            continue
        for c in into[v]:
            u = net.src[c]
            new = cost + weight(c)
            if dist[u] is None or new < dist[u]:
                dist[u] = new
                heapq.heappush(heap, (new, u))
    return dist


def _into(net: Network, legal: Callable[[int], bool]) -> list[list[int]]:
    into: list[list[int]] = [[] for _ in range(net.size)]
    for c in range(len(net.src)):
        if legal(c):
            into[net.dst[c]].append(c)
    return into


def _tree(net: Network, d: int, dist: list[int | None], load: list[int],
          weight: Callable[[int], int] | None = None,
          legal: Callable[[int, int], bool] | None = None) -> array:
    """Next channel at every node towards ``d`` along a cheapest path, balancing load.

    Nodes choose nearest first. Among equally cheap next hops a node joins the *branch*
    (the neighbour of ``d`` its path ends through) that has the fewest nodes so far, since
    the last hop into ``d`` carries a whole branch; ties go to the channel with the least
    load from the destinations routed before. Then the sources that cross each channel are
    added to ``load``.
    """
    nxt, _ = _empty(net.size)
    nxt[d] = -1
    branch = [-1] * net.size
    size = [0] * net.size
    order = sorted((n for n in range(net.size) if dist[n] is not None and n != d),
                   key=lambda n: (dist[n], n))
    for n in order:
        best, best_rank = None, ()
        for c in net.out[n]:
            v = net.dst[c]
            if dist[v] is None or (legal is not None and not legal(n, c)):
                continue
            if dist[v] + (weight(c) if weight else 1) != dist[n]:
                continue
            rank = (size[branch[v]] if v != d else 0, load[c], c)
            if best is None or rank < best_rank:
                best, best_rank = c, rank
        if best is None:
            continue
        nxt[n] = best
        v = net.dst[best]
        branch[n] = n if v == d else branch[v]
        size[branch[n]] += 1
    through = [1] * net.size
    for n in reversed(order):
        c = nxt[n]
        if c >= 0:
            load[c] += through[n]
            through[net.dst[c]] += through[n]
    return nxt


def ahead(net: Network, nxt: array, d: int,
          counts: Callable[[int], int] | None = None) -> list[int]:
    """For every node, the sum of ``counts`` (default 1) over the hops of its route to
    ``d``; -1 where ``d`` is unreachable."""
    total = [-1] * net.size
    total[d] = 0
    for start in range(net.size):
        # Walk to a node whose total is known, then fill the walked nodes backwards;
        # iterative, as paths may be long (a 1024-node ring).
        stack = []
        n = start
        while total[n] < 0 and nxt[n] >= 0:
            stack.append(n)
            n = net.dst[nxt[n]]
        if total[n] < 0:
            continue
        for m in reversed(stack):
            c = nxt[m]
            total[m] = total[net.dst[c]] + (counts(c) if counts else 1)
    return total


def _classes_by_remaining(net: Network, nxt: array, d: int,
                          counts: Callable[[int], int] | None = None) -> tuple[array, int]:
    """VC class of each hop = sum of ``counts`` over the hops *after* it; and the maximum."""
    after = ahead(net, nxt, d, counts)
    cls = array("b", [min(after[net.dst[c]], 127) if c >= 0 else 0 for c in nxt])
    return cls, max(cls, default=0)


@dataclass
class _Table:
    """A dict of lists as arrays: ``items[key][i]`` (-2 past the end) and ``count[key]``."""

    items: np.ndarray
    count: np.ndarray


def _table(lists: dict[tuple[int, int], list[int]], shape: tuple[int, int]) -> _Table:
    width = max(map(len, lists.values()), default=1)
    items = np.full((*shape, width), -2, dtype=np.intc)
    count = np.zeros(shape, dtype=np.intc)
    for key, values in lists.items():
        items[key][:len(values)] = values
        count[key] = len(values)
    return _Table(items, count)


def _classes_by_remaining_all(dst: np.ndarray, nxt: np.ndarray,
                              hops: np.ndarray) -> np.ndarray:
    """:func:`_classes_by_remaining` of a block of routing table rows (int8 classes), from
    the routes' ``hops``."""
    after = np.take_along_axis(hops, dst[np.maximum(nxt, 0)], axis=1)
    return np.where(nxt >= 0, np.minimum(after, 127), 0).astype(np.int8)


def _shortest(net: Network) -> Routing:
    load = [0] * len(net.src)
    nexts, classes, top = [], [], 0
    for d in range(net.size):
        dist = _distances(net, d)
        nxt = _tree(net, d, dist, load)
        cls, high = _classes_by_remaining(net, nxt, d)
        nexts.append(nxt)
        classes.append(cls)
        top = max(top, high)
    return Routing("shortest", nexts, classes, top + 1,
                   "VC class = hops still ahead, so classes strictly decrease along every "
                   "path and no dependency cycle can form within or across classes",
                   tree_rule=TreeRule.height(len(net.src)))


def _up_down(net: Network) -> Routing:
    # Root: the node of highest degree (lowest index on ties) keeps the tree shallow.
    root = min(range(net.size), key=lambda n: (-len(net.out[n]), n))
    level = _distances(net, root)
    key = [(level[n] if level[n] is not None else net.size, n) for n in range(net.size)]

    # whether each channel goes up: looked up millions of times below
    upward = [key[net.dst[c]] < key[net.src[c]] for c in range(len(net.src))]

    load = [0] * len(net.src)
    nexts, classes = [], []
    # the same for every destination: the down channels into each node, the up channels out
    downs = _into(net, lambda c: not upward[c])
    ups_of = [[c for c in net.out[n] if upward[c]] for n in range(net.size)]
    by_key = sorted(range(net.size), key=lambda n: key[n])
    for d in range(net.size):
        # Cost with down hops only, then up hops first where that is not possible.
        down = _distances(net, d, into=downs)
        cost = list(down)
        for n in by_key:
            if cost[n] is None:
                ups = [cost[net.dst[c]] for c in ups_of[n] if cost[net.dst[c]] is not None]
                cost[n] = 1 + min(ups) if ups else None

        def legal(n: int, c: int, down: list[int | None] = down) -> bool:
            # A node with a down-only path must take it (a packet may have arrived there on
            # a down hop, and the table cannot tell), to a node that has one too.
            if down[n] is None:
                return upward[c]
            return not upward[c] and down[net.dst[c]] is not None

        nexts.append(_tree(net, d, cost, load, legal=legal))
        classes.append(array("b", [0] * net.size))
    def tree(s: int) -> dict[int, int]:
        # Up from s to the root along s's route, then down from every node of that path:
        # the tree never turns from down to up, so its replication is up*/down* legal.
        parent: dict[int, int] = {}
        frontier = [s]
        n = s
        while n != root:
            c = nexts[root][n]
            n = net.dst[c]
            parent[n] = c
            frontier.append(n)
        seen = set(frontier)
        while frontier:
            ahead_ = []
            for v in frontier:
                for c in net.out[v]:
                    m = net.dst[c]
                    if m not in seen and not upward[c]:
                        seen.add(m)
                        parent[m] = c
                        ahead_.append(m)
            frontier = ahead_
        return parent

    return Routing("up_down", nexts, classes, 1,
                   f"up*/down* on a BFS tree rooted at {net.cluster.nodes[root].name}: no path "
                   "takes an up hop after a down hop, so one VC is acyclic", tree=tree)


def _grid(net: Network) -> Routing:
    cluster = net.cluster
    kind = cluster.topology
    if not cluster.generated or kind not in ("ring", "line", "mesh", "torus", "hypercube"):
        raise NotApplicable("dimension-order routing needs a generated ring, line, mesh, torus "
                            "or hypercube without explicit nodes or links added")
    topo = cluster.desc.topology
    dims = {"ring": lambda: [topo.nodes], "line": lambda: [topo.nodes],
            "hypercube": lambda: [2] * topo.dimension}.get(kind, lambda: list(topo.dims))()
    wrap = kind in ("ring", "torus")
    coords = [node.coords for node in cluster.nodes]
    # step[n, k, 0 or 1]: the channel from n one hop down or up dimension k
    step = np.full((net.size, len(dims), 2), -2, dtype=np.intc)
    for c in range(len(net.src)):
        link = net.link(c)
        a, b = coords[net.src[c]], coords[net.dst[c]]
        k = link.dim
        delta = (b[k] - a[k]) % dims[k]
        step[net.src[c], k, 1 if delta == 1 else 0] = c
        if dims[k] == 2:  # one link serves both directions
            step[net.src[c], k, 0] = c
    D = len(dims)
    at = np.array(coords, dtype=np.int32).reshape(net.size, D)
    sizes = np.array(dims, dtype=np.int32)
    node = np.arange(net.size, dtype=np.int32)[None, :]
    nexts, classes = [], []
    dateline = False
    for start, stop in chunks(net.size, net.size):
        t = at[start:stop]
        # the lowest dimension in which node and destination differ (-1: the destination)
        k = np.full((stop - start, net.size), -1, dtype=np.int32)
        for j in reversed(range(D)):
            np.copyto(k, j, where=at[None, :, j] != t[:, j, None])
        here = k < 0
        k[here] = 0
        x = at.reshape(-1)[node * D + k]
        to = t.reshape(-1)[np.arange(stop - start, dtype=np.int32)[:, None] * D + k]
        size = sizes[k]
        ring = wrap & (size > 2)
        forward = (to - x) % size
        # Half-way round an even ring: even coordinates go up, odd go down, which balances
        # the two directions; one hop on, the tie is gone, so the choice stays a function
        # of (node, destination).
        up = np.where(ring, (2 * forward < size) | ((2 * forward == size) & (x % 2 == 0)),
                      to > x)
        crosses = ring & np.where(up, to < x, to > x)
        dateline = dateline or bool(crosses.any())
        nxt = step.reshape(-1)[(node * D + k) * 2 + up]
        nxt[here] = -1
        nexts += [array("i", r.tobytes()) for r in nxt.astype(np.intc)]
        classes += [array("b", r.tobytes()) for r in crosses.astype(np.int8)]
    def ring_step(c: int) -> tuple[int, int, bool]:
        """Dimension, direction and whether ``c`` is its ring's wrap-around hop."""
        k = net.link(c).dim
        a, b = coords[net.src[c]][k], coords[net.dst[c]][k]
        size = dims[k]
        if not wrap or size <= 2:
            return k, 0, False
        up = (b - a) % size == 1
        return k, 1 if up else -1, (a == size - 1 and b == 0) or (a == 0 and b == size - 1)

    steps = [ring_step(c) for c in range(len(net.src))]
    # Class 1 while the broadcast still has to cross this ring's wrap-around link: at the
    # link itself, or before a child on the same ring in the same direction that does.
    rule = TreeRule(np.array([wraps for _, _, wraps in steps], dtype=np.int32),
                    np.zeros(len(steps), dtype=np.int32),
                    np.array([3 * k + direction + 1 for k, direction, _ in steps], dtype=np.int32))

    needed = 2 if dateline else 1
    note = ("dimension order removes turns from higher to lower dimensions; on each torus ring "
            "a hop is VC 1 until the packet has crossed the ring's dateline (wrap-around link) "
            "and VC 0 after, so neither VC holds a whole ring" if dateline else
            "dimension order on a mesh has no turn from a higher to a lower dimension")
    return Routing("dimension_order", nexts, classes, needed, note, tree_rule=rule)


def _direct(net: Network) -> Routing:
    n = net.size
    to: dict[tuple[int, int], int] = {}
    for c in range(len(net.src)):
        to.setdefault((net.src[c], net.dst[c]), c)
    missing = next(((s, d) for s in range(n) for d in range(n)
                    if s != d and (s, d) not in to), None)
    if missing is not None:
        names = [net.cluster.nodes[i].name for i in missing]
        raise NotApplicable(f"direct routing needs a link between every pair of nodes; "
                            f"{names[0]} and {names[1]} have none")
    nexts, classes = [], []
    for d in range(n):
        nxt, cls = _empty(n)
        nxt[d] = -1
        for s in range(n):
            if s != d:
                nxt[s] = to[(s, d)]
        nexts.append(nxt)
        classes.append(cls)
    routing = Routing("direct", nexts, classes, 1,
                      "every path is one hop, so no channel waits on another",
                      tree_rule=TreeRule.flat(len(net.src)))
    if net.cluster.desc.routing.multipath is not None:
        # OPTWEB §3.4: the intermediate stores the data in memory before forwarding, so the
        # two hops of a detour never hold a channel while waiting for the next.
        routing.multipath = {(s, d): [m for m in range(n) if m not in (s, d)]
                             for s in range(n) for d in range(n) if s != d}
    return routing


def _dragonfly(net: Network) -> Routing:
    cluster = net.cluster
    if cluster.topology != "dragonfly" or not cluster.generated:
        raise NotApplicable("minimal dragonfly routing needs a generated dragonfly topology")
    group = [node.group for node in cluster.nodes]
    groups = max(group) + 1
    # local[n, i]: the first channel from n to the i-th node of its group; options[n, g]:
    # n's channels into group g; gateways[g, h]: the routers of group g with such channels
    rank = [0] * net.size
    members: dict[int, list[int]] = {}
    for v, g in enumerate(group):
        rank[v] = len(members.setdefault(g, []))
        members[g].append(v)
    local = np.full((net.size, max(map(len, members.values()))), -2, dtype=np.intc)
    globals_: dict[tuple[int, int], list[int]] = {}
    for c in reversed(range(len(net.src))):  # the first channel of a pair wins
        s, t = net.src[c], net.dst[c]
        if group[s] == group[t]:
            local[s, rank[t]] = c
    for c in range(len(net.src)):
        s, t = net.src[c], net.dst[c]
        if group[s] != group[t]:
            globals_.setdefault((s, group[t]), []).append(c)
    gateways: dict[tuple[int, int], list[int]] = {}
    for s, g in sorted(globals_):
        gateways.setdefault((group[s], g), []).append(s)
    options = _table(globals_, (net.size, groups))
    via = _table(gateways, (groups, groups))
    g_of, rank_of = np.array(group), np.array(rank)
    node = np.arange(net.size)
    nexts, classes, top = [], [], 0
    dst = np.array(net.dst)
    hops = np.empty((net.size, net.size), dtype=np.int16)  # as broadcast keeps them
    last = np.empty((net.size, net.size), dtype=np.int32)
    for start, stop in chunks(net.size, net.size):
        d = np.arange(start, stop)[:, None]
        gd = g_of[d]
        # in d's group: the local hop; with a global channel to d's group: one of them,
        # chosen by d; else the local hop to one of the group's gateways, chosen by d
        count = options.count[node, gd]
        direct = options.items[node, gd, d % np.maximum(count, 1)]
        gateway = via.items[g_of[node], gd, d % np.maximum(via.count[g_of[node], gd], 1)]
        nxt = np.where(g_of[node] == gd, local[node, rank_of[d]],
                       np.where(count > 0, direct, local[node, rank_of[gateway]]))
        nxt[np.arange(stop - start), d[:, 0]] = -1
        hops[start:stop], last[start:stop] = walk(dst, nxt, d[:, 0])
        cls = _classes_by_remaining_all(dst, nxt, hops[start:stop])
        top = max(top, int(cls.max()))
        nexts += [array("i", r.astype(np.intc).tobytes()) for r in nxt]
        classes += [array("b", r.tobytes()) for r in cls]
    return Routing("dragonfly_minimal", nexts, classes, top + 1,
                   "minimal local-global-local paths; VC class = hops still ahead, so each "
                   "hop of a path uses a lower class than the one before",
                   tree_rule=TreeRule.height(len(net.src)), walked=(hops, last))


def _hierarchical(net: Network) -> Routing:
    cluster = net.cluster
    enclosure = [node.enclosure for node in cluster.nodes]
    if any(e is None for e in enclosure):
        raise NotApplicable("hierarchical routing needs every node in an enclosure")
    weight = net.latency_ps()

    def inter(c: int) -> int:
        return int(enclosure[net.src[c]] != enclosure[net.dst[c]])

    load = [0] * len(net.src)
    nexts, classes, top = [], [], 0
    for d in range(net.size):
        dist = _distances(net, d, weight=weight.__getitem__)
        nxt = _tree(net, d, dist, load, weight=weight.__getitem__)
        cls, high = _classes_by_remaining(net, nxt, d, inter)
        nexts.append(nxt)
        classes.append(cls)
        top = max(top, high)
    # a tree channel's class: the most inter-enclosure hops below it
    steps = np.array([inter(c) for c in range(len(net.src))], dtype=np.int32)
    return Routing("hierarchical", nexts, classes, top + 1,
                   "least-latency paths; VC class = inter-enclosure hops still ahead, so a "
                   "class only ever holds an inter-enclosure hop followed by an on-board hop",
                   tree_rule=TreeRule(np.zeros_like(steps), steps))


ALGORITHMS: dict[str, Callable[[Network], Routing]] = {
    "dimension_order": _grid,
    "shortest": _shortest,
    "up_down": _up_down,
    "direct": _direct,
    "dragonfly_minimal": _dragonfly,
    "hierarchical": _hierarchical,
}

_AUTO = {"ring": "dimension_order", "line": "dimension_order", "mesh": "dimension_order",
         "torus": "dimension_order", "hypercube": "dimension_order", "full": "direct",
         "dragonfly": "dragonfly_minimal", "hierarchical": "hierarchical"}


def pick_auto(net: Network) -> tuple[str, str]:
    """The algorithm ``auto`` chooses, and why."""
    cluster = net.cluster
    kind = cluster.topology
    if cluster.generated and kind in _AUTO:
        return _AUTO[kind], f"the topology is a generated {kind}"
    return "up_down", ("the network is not a pure generated shape, and up*/down* is "
                       "deadlock-free on any connected graph with one VC")
