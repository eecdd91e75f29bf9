"""The pure-Python routing code optnet had before issue 17 vectorised it, kept as the
reference the fast paths are tested against (tests/test_routing_fast.py).

Copied from optnet 744eab7 with two adaptations: the broadcast tree class rule is read from
the :class:`~optnet.routing.algorithms.TreeRule` that replaced the per-algorithm callables
(evaluated one channel at a time, as the callables were), and the functions return plain
values instead of the package's result classes.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

import networkx as nx

from optnet.routing.algorithms import Routing, TreeRule
from optnet.routing.broadcast import Broadcast
from optnet.routing.network import LOCAL, Network
from optnet.routing.proof import Channel, Waits, _channels_of


def prove_reference(net: Network, routing: Routing, broadcast: Broadcast | None, vcs: int,
          waits: Waits) -> tuple:
    """Build the wait graph of ``routing`` and ``broadcast`` (its trees, or for ``cascade``
    and ``unicast`` its one-hop fan-outs) with VC classes folded onto ``vcs`` VCs and the
    hardware's ``waits``, and look for a cycle."""
    ids = _Ids(len(net.src), vcs, net.size)
    V, top, dst, big = vcs, vcs - 1, net.dst, ids.size
    # (channel, VC) pairs as k = channel * V + vc; W(k) = 2k, F(k) = 2k + 1, and an edge
    # a -> b as a * big + b: plain integers hash fastest and the loops below run once per
    # (destination, node) and per (source, node).
    used: set[int] = set()
    route: set[int] = set()
    firsts: set[int] = set()
    into: set[int] = set()
    for d, (nxt, cls) in enumerate(zip(routing.next, routing.vclass, strict=True)):
        for n, c in enumerate(nxt):
            if c < 0:
                continue
            k = c * V + min(cls[n], top)
            used.add(k)
            firsts.add(n * big + k)
            m = dst[c]
            if m == d:
                into.add(k)
            else:
                route.add((2 * k + 1) * big + 2 * (nxt[m] * V + min(cls[m], top)))
    for nk in firsts:
        n, k = divmod(nk, big)
        route.update(ids.inject_f(n, v) * big + 2 * k for v in waits.inject_vcs)
    route.update((2 * k + 1) * big + ids.eject_w(dst[k // V]) for k in into)
    tree, sibling = (_branches(net, broadcast, top, waits, ids)
                     if broadcast is not None else (set(), set()))
    used.update(e % big >> 1 for e in tree if e % big < ids.links)
    graph = nx.DiGraph()
    for edges in (route, tree, sibling):
        graph.add_edges_from(divmod(e, big) for e in sorted(edges))
    graph.add_edges_from((2 * k, 2 * k + 1) for k in sorted(used))
    for n in range(net.size):
        graph.add_edges_from((ids.inject_w(n), ids.inject_f(n, v)) for v in waits.inject_vcs)
        graph.add_edge(ids.eject_w(n), ids.eject_f(n))
        if waits.receive_waits_for_send:
            graph.add_edge(ids.eject_f(n), ids.inject_w(n))
    cycle: tuple[Channel, ...] = ()
    steps: tuple[str, ...] = ()
    # A topological sort first: find_cycle's edge search is many times slower on the large
    # acyclic graphs that are the common case.
    if not nx.is_directed_acyclic_graph(graph):
        found = nx.find_cycle(graph)
        cycle, steps = _channels_of(found, ids, {divmod(e, big) for e in tree - route},
                                    {divmod(e, big) for e in sibling})
    return vcs, len(used), graph.number_of_edges(), cycle, steps


class _Ids:
    """Vertex numbers of the wait graph: ``W(c, v)`` is ``2 (c V + v)``, ``F(c, v)`` one
    more; each node's local input and output come after the links."""

    def __init__(self, channels: int, vcs: int, nodes: int):
        self.vcs, self.nodes = vcs, nodes
        self.links = 2 * channels * vcs
        self.size = self.links + 3 * nodes + nodes * vcs

    def inject_w(self, n: int) -> int:
        return self.links + 3 * n

    def eject_w(self, n: int) -> int:
        return self.links + 3 * n + 1

    def eject_f(self, n: int) -> int:
        return self.links + 3 * n + 2

    def inject_f(self, n: int, v: int) -> int:
        return self.links + 3 * self.nodes + n * self.vcs + v


def _branches(net: Network, broadcast: Broadcast, top: int, waits: Waits,
              ids: _Ids) -> tuple[set[int], set[int]]:
    """The waits of broadcast replication, as edges ``a * ids.size + b``: from the channel a
    broadcast arrives on (or the source's local input) to each of its branches, and between
    sibling branches."""
    out, out_port, dst, V, big = net.out, net.out_port, net.dst, ids.vcs, ids.size
    tree: set[int] = set()
    sibling: set[int] = set()
    for s, masks in enumerate(broadcast.masks):
        cls = broadcast.classes[s] if broadcast.classes else None

        def k_of(c, cls=cls):
            return c * V + (min(cls[c], top) if cls is not None else 0)

        # Only the nodes that forward on a link need a look at their ports; the others
        # (most of a tree) at most deliver, each reached by one channel.
        forks = {x: [c for c in out[x] if masks[x] >> out_port[c] & 1]
                 for x in [x for x, mask in enumerate(masks) if mask >> 1]}
        branches = {x: [2 * k_of(c) for c in outs]
                    + ([ids.eject_w(x)] if masks[x] >> LOCAL & 1 else [])
                    for x, outs in forks.items()}
        if s in branches:
            tree.update(ids.inject_f(s, v) * big + b for v in waits.inject_vcs
                        for b in branches[s])
        for outs in forks.values():
            for c in outs:
                m = dst[c]
                f = (2 * k_of(c) + 1) * big
                if m in branches:
                    tree.update(f + b for b in branches[m])
                elif masks[m] >> LOCAL & 1:
                    tree.add(f + ids.eject_w(m))
        if waits.siblings:
            for bs in branches.values():
                # a branch's F is the vertex after its W (the local output's too)
                sibling.update(a * big + b + 1 for a in bs for b in bs if a != b)
    return tree, sibling


def _empty(n: int) -> tuple[array, array]:
    return array("i", [-2] * n), array("b", [0] * n)


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


def grid_reference(net: Network) -> tuple[list[array], list[array]]:
    cluster = net.cluster
    kind = cluster.topology
    topo = cluster.desc.topology
    dims = {"ring": lambda: [topo.nodes], "line": lambda: [topo.nodes],
            "hypercube": lambda: [2] * topo.dimension}.get(kind, lambda: list(topo.dims))()
    wrap = kind in ("ring", "torus")
    coords = [node.coords for node in cluster.nodes]
    step: dict[tuple[int, int, int], int] = {}
    for c in range(len(net.src)):
        link = net.link(c)
        a, b = coords[net.src[c]], coords[net.dst[c]]
        k = link.dim
        delta = (b[k] - a[k]) % dims[k]
        step[(net.src[c], k, 1 if delta == 1 else -1)] = c
        if dims[k] == 2:  # one link serves both directions
            step[(net.src[c], k, -1)] = c
    nexts, classes = [], []
    dateline = False
    for d in range(net.size):
        nxt, cls = _empty(net.size)
        nxt[d] = -1
        t = coords[d]
        for n in range(net.size):
            x = coords[n]
            k = next((k for k in range(len(dims)) if x[k] != t[k]), None)
            if k is None:
                continue
            size = dims[k]
            if wrap and size > 2:
                forward = (t[k] - x[k]) % size
                # Half-way round an even ring: even coordinates go up, odd go down, which
                # balances the two directions; one hop on, the tie is gone, so the choice
                # stays a function of (node, destination).
                tie = 2 * forward == size
                direction = 1 if 2 * forward < size or (tie and x[k] % 2 == 0) else -1
                crosses = t[k] < x[k] if direction == 1 else t[k] > x[k]
                cls[n] = 1 if crosses else 0
                dateline = dateline or crosses
            else:
                direction = 1 if t[k] > x[k] else -1
            nxt[n] = step[(n, k, direction)]
        nexts.append(nxt)
        classes.append(cls)
    return nexts, classes


def dragonfly_reference(net: Network) -> tuple[list[array], list[array]]:
    cluster = net.cluster
    group = [node.group for node in cluster.nodes]
    local: dict[tuple[int, int], int] = {}
    globals_: dict[tuple[int, int], list[int]] = {}
    for c in range(len(net.src)):
        s, t = net.src[c], net.dst[c]
        if group[s] == group[t]:
            local.setdefault((s, t), c)
        else:
            globals_.setdefault((s, group[t]), []).append(c)
    gateways: dict[tuple[int, int], list[int]] = {}
    for s, g in sorted(globals_):
        gateways.setdefault((group[s], g), []).append(s)
    nexts, classes = [], []
    for d in range(net.size):
        nxt, _ = _empty(net.size)
        nxt[d] = -1
        gd = group[d]
        for n in range(net.size):
            if n == d:
                continue
            if group[n] == gd:
                nxt[n] = local[(n, d)]
            elif (n, gd) in globals_:
                options = globals_[(n, gd)]
                nxt[n] = options[d % len(options)]
            else:
                routers = gateways[(group[n], gd)]
                nxt[n] = local[(n, routers[d % len(routers)])]
        cls, _ = _classes_by_remaining(net, nxt, d)
        nexts.append(nxt)
        classes.append(cls)
    return nexts, classes


def _route_trees(net: Network, routing: Routing) -> list[array] | None:
    """If every source's unicast routes form a tree: ``last[d][x]``, the channel a route from
    ``x`` enters ``d`` on, so the tree of source ``s`` is ``{d: last[d][s]}``; else None.

    A source's routes form a tree when each is the route to its second-to-last node plus
    one hop. With destination-based routing that is the same as: for every ``x`` and ``d``
    whose route ends ``... p -> d`` with ``p != x``, ``x`` sends packets for ``d`` and for
    ``p`` on the same channel. Checking that costs O(N^2), not a walk of every route.
    """
    n, dst, src = net.size, net.dst, net.src
    last: list[array] = []
    for d in range(n):
        nxt = routing.next[d]
        into = array("i", [-1] * n)
        for x in sorted(range(n), key=ahead(net, nxt, d).__getitem__):
            c = nxt[x]
            if c >= 0:
                m = dst[c]
                into[x] = c if m == d else into[m]
        last.append(into)
    for d in range(n):
        for x in range(n):
            c = last[d][x]
            if c >= 0 and src[c] != x and routing.next[d][x] != routing.next[src[c]][x]:
                return None
    return last


def _bfs_tree(net: Network, s: int) -> dict[int, int]:
    parent: dict[int, int] = {}
    seen = {s}
    frontier = [s]
    while frontier:
        ahead = []
        for n in frontier:
            for c in net.out[n]:
                m = net.dst[c]
                if m not in seen:
                    seen.add(m)
                    parent[m] = c
                    ahead.append(m)
        frontier = ahead
    return parent


def broadcast_reference(net: Network, routing: Routing, mode: str) -> tuple:
    """Plan broadcasts from every node in ``mode`` (``tree``, ``cascade`` or ``unicast``)."""
    n = net.size
    everything = [sum(1 << p for p in range(len(net.ports[v]))) for v in range(n)]
    if mode in ("cascade", "unicast"):
        # One copy per link, made by the router of the node that sends it (in a cascade,
        # every node sends each broadcast on under its own group); each neighbour delivers it.
        masks = tuple(tuple((1 << LOCAL) if v != s else everything[s] & ~(1 << LOCAL)
                            for v in range(n)) for s in range(n))
        return Broadcast(mode, masks,
                         "the source's router sends one copy over each direct link and every "
                         "neighbour delivers it; one hop, so no wait beyond unicast's")
    trees = None if routing.tree else _route_trees(net, routing)
    rows, classes = [], []
    for s in range(n):
        if routing.tree:
            parent = routing.tree(s)
            cls = dict.fromkeys(parent.values(), 0)
        else:
            parent = ({d: trees[d][s] for d in range(n) if d != s} if trees is not None
                      else _bfs_tree(net, s))
        children: dict[int, list[int]] = {}
        for c in parent.values():
            children.setdefault(net.src[c], []).append(c)
        if not routing.tree:
            # Leaves first; a breadth-first tree (no route trees, or no class rule) takes
            # the height below a channel, decreasing towards the leaves.
            rule = _rule(routing.tree_rule if trees is not None and routing.tree_rule
                         else TreeRule.height(len(net.src)))
            cls = {}
            for v in reversed(_order(net, children, s)[1:]):
                c = parent[v]
                cls[c] = rule(c, [(k, cls[k]) for k in children.get(v, ())])
        mask = [(1 << LOCAL) if v != s else 0 for v in range(n)]
        for v, cs in children.items():
            for c in cs:
                mask[v] |= 1 << net.out_port[c]
        rows.append(tuple(mask))
        row = array("B", bytes(len(net.src)))
        for c, k in cls.items():
            row[c] = k
        classes.append(row)
    return tuple(rows), tuple(classes)


def _order(net: Network, children: dict[int, list[int]], s: int) -> list[int]:
    """Nodes of a tree rooted at ``s``, parents before children."""
    order = [s]
    for v in order:
        order.extend(net.dst[c] for c in children.get(v, ()))
    return order


def _rule(rule: TreeRule):
    """The tree class callable of a TreeRule, as the algorithms used to define them."""
    def tree_class(c: int, kids: list[tuple[int, int]]) -> int:
        return max([int(rule.base[c])] + [int(rule.step[k]) + cls for k, cls in kids
                    if rule.line is None or rule.line[k] == rule.line[c]])
    return tree_class


def tables_reference(routed) -> list[tuple]:
    """Per node: port, VC and hop arrays, multicast masks and packed multicast VCs."""
    net, routing = routed.net, routed.routing
    n = net.size
    top = routed.cluster.desc.network.vcs - 1
    port = [array("H", bytes(2 * n)) for _ in range(n)]
    vc = [array("B", bytes(n)) for _ in range(n)]
    hops = [array("H", bytes(2 * n)) for _ in range(n)]
    out_port = net.out_port
    for d in range(n):
        nxt, cls = routing.next[d], routing.vclass[d]
        for x, h in enumerate(ahead(net, nxt, d)):
            c = nxt[x]
            if c >= 0:
                port[x][d] = out_port[c]
                vc[x][d] = min(cls[x], top)
                hops[x][d] = h
    masks = routed.broadcast.masks
    classes = routed.broadcast.classes
    vc_bits = max(1, top.bit_length())
    tables = []
    for x in range(n):
        mvcs = tuple(
            sum(min(classes[s][c], top) << (out_port[c] * vc_bits) for c in net.out[x]
                if masks[s][x] >> out_port[c] & 1) if classes else 0
            for s in range(n))
        tables.append((port[x], vc[x], hops[x], tuple(masks[s][x] for s in range(n)), mvcs))
    return tables
