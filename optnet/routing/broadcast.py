"""Broadcast: per-source replication trees, cascade flooding, or unicast fan-out.

The result is, for every source (multicast group = the source's node index), a port mask
per node: bit 0 delivers to the local port, bit p forwards on port p.

- ``tree``: the algorithm's own tree where it has one (up*/down*: up to the root, then
  down); else the union of the source's unicast routes when that is a tree; otherwise a
  breadth-first tree with VC classes decreasing towards the leaves. Every replication
  dependency goes into the proof.
- ``cascade`` (CusComNet): every node forwards a broadcast it sees for the first time on
  all its links and drops duplicates by packet id. The flood is stored in the node's
  broadcast buffer before it is forwarded, so it adds no channel dependency, provided the
  buffer holds one outstanding broadcast per source (the hardware enforces that limit).
- ``unicast`` (OPTWEB): the source sends one unicast packet per destination; no
  replication, no new dependency. Needs a fully connected network.
"""

from __future__ import annotations

from dataclasses import dataclass

from optnet.routing.algorithms import Routing
from optnet.routing.network import LOCAL, Network

__all__ = ["Broadcast", "plan_broadcast"]

Channel = tuple[int, int]


@dataclass(frozen=True)
class Broadcast:
    """Broadcast plan.

    Attributes
    ----------
    mode : str
    masks : tuple of tuple of int
        ``masks[s][n]``: port mask at node ``n`` for broadcasts from source ``s``.
    edges : set of ((channel, vc), (channel, vc))
        Dependencies the replication adds (unfolded VC classes).
    note : str
    """

    mode: str
    masks: tuple[tuple[int, ...], ...]
    edges: frozenset[tuple[Channel, Channel]]
    note: str


def _route_union(net: Network, routing: Routing, s: int
                 ) -> tuple[dict[int, int], dict[int, int]] | None:
    """If the source's unicast routes form a tree: the parent channel of every node and,
    per tree channel, the highest unicast VC class any route gives it; else None."""
    parent: dict[int, int] = {}
    cls: dict[int, int] = {}
    dst, nexts, classes = net.dst, routing.next, routing.vclass
    for d in range(net.size):
        n, nxt, vc = s, nexts[d], classes[d]
        while n != d:
            c = nxt[n]
            if c < 0:
                return None
            m = dst[c]
            if parent.setdefault(m, c) != c:
                return None
            if cls.get(c, -1) < vc[n]:
                cls[c] = vc[n]
            n = m
    return parent, cls


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


def plan_broadcast(net: Network, routing: Routing, mode: str) -> Broadcast:
    """Plan broadcasts from every node in ``mode`` (``tree``, ``cascade`` or ``unicast``)."""
    n = net.size
    everything = [sum(1 << p for p in range(len(net.ports[v]))) for v in range(n)]
    if mode == "cascade":
        masks = tuple(tuple(everything) for _ in range(n))
        return Broadcast(mode, masks, frozenset(),
                         "cascade floods are stored in each node's broadcast buffer (one "
                         "outstanding broadcast per source) before being forwarded, so they "
                         "add no channel dependency; duplicates are dropped by packet id")
    if mode == "unicast":
        masks = tuple(tuple((1 << LOCAL) if v != s else 0 for v in range(n)) for s in range(n))
        return Broadcast(mode, masks, frozenset(),
                         "the source sends one unicast per destination over the direct links; "
                         "no replication, so no dependency beyond unicast")
    rows, edges, fallback = [], set(), 0
    for s in range(n):
        union = None if routing.tree else _route_union(net, routing, s)
        if routing.tree:
            parent = routing.tree(s)
            cls = dict.fromkeys(parent.values(), 0)
        elif union is not None:
            parent, cls = union
        else:
            # Breadth-first tree; classes = subtree height, decreasing towards the leaves,
            # like the hops-ahead classes of unicast, so no dependency climbs a class.
            fallback += 1
            parent = _bfs_tree(net, s)
        children: dict[int, list[int]] = {}
        for c in parent.values():
            children.setdefault(net.src[c], []).append(c)
        if union is None and not routing.tree:
            height = _heights(net, children, s)
            cls = {c: height[v] for v, c in parent.items()}
        mask = [(1 << LOCAL) if v != s else 0 for v in range(n)]
        for v, cs in children.items():
            for c in cs:
                mask[v] |= 1 << net.out_port[c]
        for v, c in parent.items():
            for child in children.get(v, ()):
                edges.add(((c, cls[c]), (child, cls[child])))
        rows.append(tuple(mask))
    note = ("each source's broadcast follows its unicast routes and is replicated where they "
            "branch, each tree channel in the highest VC class a unicast route gives it; "
            "the replication dependencies are in the proof")
    if fallback:
        note = (f"{fallback} source(s) whose unicast routes do not form a tree broadcast on "
                "a breadth-first tree (VC class = height of the subtree below); the "
                "replication dependencies are in the proof")
    return Broadcast(mode, tuple(rows), frozenset(edges), note)


def _heights(net: Network, children: dict[int, list[int]], s: int) -> dict[int, int]:
    """Height of the subtree below every node of a tree rooted at ``s`` (leaves 0)."""
    order = [s]
    for v in order:
        order.extend(net.dst[c] for c in children.get(v, ()))
    height: dict[int, int] = {}
    for v in reversed(order):
        height[v] = max((height[net.dst[c]] + 1 for c in children.get(v, ())), default=0)
    return height
