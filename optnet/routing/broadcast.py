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
- ``unicast`` (OPTWEB): the source sends one copy per destination over the direct links
  (its router replicates the packet on every link); every path is one hop, so no new
  wait. Needs a fully connected network.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np

from optnet.routing.algorithms import Routing, ahead, height_class
from optnet.routing.arrays import matrix
from optnet.routing.network import LOCAL, Network

__all__ = ["Broadcast", "plan_broadcast"]



@dataclass(frozen=True)
class Broadcast:
    """Broadcast plan.

    Attributes
    ----------
    mode : str
    masks : tuple of tuple of int
        ``masks[s][n]``: port mask at node ``n`` for broadcasts from source ``s``.
    note : str
    classes : tuple of array
        ``classes[s][c]``: VC class of channel ``c`` in the tree of source ``s`` (0 for
        channels outside it, and for every channel in ``cascade``/``unicast`` modes).
    """

    mode: str
    masks: tuple[tuple[int, ...], ...]
    note: str
    classes: tuple[array, ...] = ()
    _arrays: tuple[np.ndarray, np.ndarray | None] | None = field(
        default=None, repr=False, compare=False)

    def arrays(self) -> tuple[np.ndarray, np.ndarray | None]:
        """:attr:`masks` and :attr:`classes` (None when empty) as matrices, source by row.

        The masks are int64, or Python ints where a node has more ports than int64 has
        bits.
        """
        if self._arrays is not None:
            return self._arrays
        try:
            masks = np.array(self.masks, dtype=np.int64).reshape(len(self.masks), -1)
        except OverflowError:
            masks = np.array(self.masks, dtype=object).reshape(len(self.masks), -1)
        return masks, matrix(self.classes, np.uint8) if self.classes else None


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


def plan_broadcast(net: Network, routing: Routing, mode: str) -> Broadcast:
    """Plan broadcasts from every node in ``mode`` (``tree``, ``cascade`` or ``unicast``)."""
    n = net.size
    everything = [sum(1 << p for p in range(len(net.ports[v]))) for v in range(n)]
    if mode == "cascade":
        masks = tuple(tuple(everything) for _ in range(n))
        return Broadcast(mode, masks,
                         "cascade floods are stored in each node's broadcast buffer (one "
                         "outstanding broadcast per source) before being forwarded, so they "
                         "add no channel dependency; duplicates are dropped by packet id")
    if mode == "unicast":
        # One copy per direct link, made by the source's router; each neighbour delivers it.
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
            rule = routing.tree_class if trees is not None and routing.tree_class else height_class
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
    if routing.tree:
        note = ("each broadcast climbs to the up*/down* root and spreads down, so its "
                "replication turns are up*/down* legal too")
    elif trees is not None:
        note = ("each source's broadcast follows its unicast routes (they form a tree) and is "
                "replicated where they branch, each tree channel in the highest VC class a "
                "unicast route gives it; the replication waits are in the proof")
    else:
        note = ("the unicast routes do not form per-source trees, so broadcasts use "
                "breadth-first trees (VC class = height of the subtree below); the "
                "replication waits are in the proof")
    return Broadcast(mode, tuple(rows), note, tuple(classes))


def _order(net: Network, children: dict[int, list[int]], s: int) -> list[int]:
    """Nodes of a tree rooted at ``s``, parents before children."""
    order = [s]
    for v in order:
        order.extend(net.dst[c] for c in children.get(v, ()))
    return order
