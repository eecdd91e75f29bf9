"""Broadcast: per-source replication trees, cascade flooding, unicast fan-out, or none.

The result is, for every source (multicast group = the source's node index), a port mask
per node: bit 0 delivers to the local port, bit p forwards on port p.

- ``tree``: the algorithm's own tree where it has one (up*/down*: up to the root, then
  down); else the union of the source's unicast routes when that is a tree; otherwise a
  breadth-first tree with VC classes decreasing towards the leaves. Every replication
  dependency goes into the proof.
- ``cascade`` (CusComNet): every node forwards a broadcast it sees for the first time on
  all its links and drops duplicates by sequence number (:mod:`optnet.hw.cascade`). A node
  stores the broadcast whole in its broadcast buffer and then sends it on as a multicast of
  its own group, so the routers' tables are one-hop fan-outs: group ``x`` leaves node ``x``
  on every link and is delivered to the local port of every other node. The slot of a new
  broadcast is always free (the hardware keeps one broadcast per source outstanding), so
  the local port takes every copy: the only waits are the one-hop multicasts' own (the
  local input to every link, each link to the local output), which the proof checks.
- ``unicast`` (OPTWEB): the source sends one copy per destination over the direct links
  (its router replicates the packet on every link); every path is one hop, so no new
  wait. Needs a fully connected network.
- ``none`` (BlueDBM): no broadcast in the network; every mask is empty, so the routers
  build no multicast logic and drop a broadcast packet at its source. No wait.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from optnet.routing.algorithms import Routing, TreeRule
from optnet.routing.arrays import chunks, matrix, transpose, walk
from optnet.routing.network import LOCAL, Network

__all__ = ["Broadcast", "plan_broadcast"]



@dataclass(frozen=True)
class Broadcast:
    """Broadcast plan.

    Attributes
    ----------
    mode : str
    masks : tuple of tuple of int
        ``masks[s][n]``: port mask at node ``n`` for broadcasts from source ``s`` (for
        ``cascade``: for copies sent by node ``s``, each node sending the broadcasts it
        forwards under its own group).
    note : str
    classes : tuple of array
        ``classes[s][c]``: VC class of channel ``c`` in the tree of source ``s`` (0 for
        channels outside it, and for every channel in the other modes).
    """

    mode: str
    masks: tuple[tuple[int, ...], ...]
    note: str
    classes: tuple[array, ...] = ()
    into: np.ndarray | None = field(default=None, repr=False, compare=False)
    """``into[s, d]``: the channel the tree of source ``s`` reaches node ``d`` on (-1 at
    ``s``), where the plan is one tree per source; None for floods and fan-outs."""
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


def _route_trees(net: Network, routing: Routing) -> tuple[np.ndarray, np.ndarray] | None:
    """If every source's unicast routes form a tree: the trees as ``(into, depth)``
    matrices, source by row (:func:`_plan`); else None.

    A source's routes form a tree when each is the route to its second-to-last node plus
    one hop. With destination-based routing that is the same as: for every ``x`` and ``d``
    whose route ends ``... p -> d`` with ``p != x``, ``x`` sends packets for ``d`` and for
    ``p`` on the same channel. Checking that costs O(N^2), not a walk of every route.
    """
    n = net.size
    dst, src = np.array(net.dst, dtype=np.int64), np.array(net.src, dtype=np.int32)
    nxt, _ = routing.matrices()
    if routing.walked is not None:
        hops, last = routing.walked
    else:
        last = np.empty((n, n), dtype=np.int32)
        hops = np.empty((n, n), dtype=np.int16)
        for start, stop in chunks(n, n):
            hops[start:stop], last[start:stop] = walk(dst, nxt[start:stop],
                                                      np.arange(start, stop))
        routing.walked = hops, last  # for the tables
    # Source by row from here: last[d, s] is the channel the tree of s reaches d on, and
    # hops[d, s] its depth there; and x's routes, so that the check reads within a row.
    into, depth, routes = transpose(last), transpose(hops), transpose(nxt)
    del last, hops, nxt
    for start, stop in chunks(n, n):
        mine = routes[start:stop]
        before = src[np.maximum(into[start:stop], 0)]
        if ((depth[start:stop] > 1) & (np.take_along_axis(mine, before, axis=1) != mine)).any():
            return None
    return into, depth


def _other_trees(net: Network, tree: Callable[[int], dict[int, int]]) -> tuple[np.ndarray,
                                                                                np.ndarray]:
    """The trees ``tree(s)`` (parent channel of every node, parents first) of every source
    as ``(into, depth)`` matrices (:func:`_plan`)."""
    n, src = net.size, net.src
    into = np.full((n, n), -1, dtype=np.int32)
    depth = np.zeros((n, n), dtype=np.int16)
    for s in range(n):
        parent = tree(s)
        level = [0] * n
        for v, c in parent.items():
            level[v] = level[src[c]] + 1
        into[s, list(parent)] = list(parent.values())
        depth[s] = level
    return into, depth


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
    """Plan broadcasts from every node in ``mode`` (``tree``, ``cascade``, ``unicast`` or
    ``none``)."""
    n = net.size
    if mode == "none":
        empty = (0,) * n
        return Broadcast(mode, (empty,) * n,
                         "the network makes no broadcasts (software sends one unicast per "
                         "destination), so they add no wait")
    everything = [sum(1 << p for p in range(len(net.ports[v]))) for v in range(n)]
    # One copy per link, made by the router of the node that sends it; each neighbour's
    # router delivers it to its local port. For unicast fan-out that node is the source;
    # in a cascade every node sends each broadcast on, under its own group.
    masks = tuple(tuple((1 << LOCAL) if v != s else everything[s] & ~(1 << LOCAL)
                        for v in range(n)) for s in range(n))
    if mode == "cascade":
        return Broadcast(mode, masks,
                         "cascade floods are stored whole in each node's broadcast buffer "
                         "(one outstanding broadcast per source, so a new one always finds "
                         "its slot free) and sent on to every neighbour, one hop at a time; "
                         "duplicates are dropped by sequence number; the one-hop copies' "
                         "waits are in the proof")
    if mode == "unicast":
        return Broadcast(mode, masks,
                         "the source's router sends one copy over each direct link and every "
                         "neighbour delivers it; one hop, so no wait beyond unicast's")
    channels = len(net.src)
    if routing.tree:
        trees, rule = _other_trees(net, routing.tree), TreeRule.flat(channels)
        note = ("each broadcast climbs to the up*/down* root and spreads down, so its "
                "replication turns are up*/down* legal too")
    elif (trees := _route_trees(net, routing)) is not None:
        rule = routing.tree_rule or TreeRule.height(channels)
        note = ("each source's broadcast follows its unicast routes (they form a tree) and is "
                "replicated where they branch, each tree channel in the highest VC class a "
                "unicast route gives it; the replication waits are in the proof")
    else:
        trees = _other_trees(net, lambda s: _bfs_tree(net, s))
        rule = TreeRule.height(channels)
        note = ("the unicast routes do not form per-source trees, so broadcasts use "
                "breadth-first trees (VC class = height of the subtree below); the "
                "replication waits are in the proof")
    masks, classes = _plan(net, *trees, rule)
    # row by row: one list of a whole large matrix costs twice the time and memory
    return Broadcast(mode, tuple(tuple(row.tolist()) for row in masks), note,
                     tuple(array("B", row.tobytes()) for row in classes), trees[0],
                     (masks, classes))


def _plan(net: Network, into: np.ndarray, depth: np.ndarray,
          rule: TreeRule) -> tuple[np.ndarray, np.ndarray]:
    """Port masks and VC classes of broadcast trees.

    Parameters
    ----------
    into : ndarray of int, shape (N, N)
        ``into[s, d]``: the channel the tree of source ``s`` reaches node ``d`` on; -1 at
        ``s`` and at nodes the tree misses.
    depth : ndarray of int16, shape (N, N)
        Channels from ``s`` to ``d`` in the tree.
    rule : TreeRule

    Returns
    -------
    masks : ndarray, shape (N, N)
        ``masks[s, v]``: the ports ``v`` forwards broadcasts from ``s`` on, and bit
        :data:`LOCAL` everywhere but at ``s``. Of the smallest unsigned type that holds
        every port, or of Python ints beyond 63 ports.
    classes : ndarray of uint8, shape (N, C)
        ``classes[s, c]``: VC class of channel ``c`` in the tree of ``s``, 0 outside it.
    """
    n, channels = net.size, len(net.src)
    src = np.array(net.src, dtype=np.int64)
    ports = max(map(len, net.ports), default=1)
    # int64, not uint64, which numpy will not shift by an int64
    kind = next((t for t, bits in ((np.uint8, 8), (np.uint16, 16), (np.uint32, 32),
                                   (np.int64, 63)) if ports <= bits), object)
    bit = np.array([1 << p for p in net.out_port], dtype=kind)
    masks = np.full((n, n), 1 << LOCAL, dtype=kind)
    masks[np.arange(n), np.arange(n)] = 0
    classes = np.zeros((n, channels), dtype=np.uint8)
    flat_classes = classes.reshape(-1)
    src32 = src.astype(np.int32)
    # Flat indices (row * width + column) throughout: numpy's scatters are fastest on them.
    for start, stop in chunks(n, n):
        block = into[start:stop].reshape(-1)
        at = np.flatnonzero(block >= 0).astype(np.int32)  # (source row, node) of each
        c = block[at]                                      # tree channel
        fork = at - at % n + src32[c]  # (source row, node it leaves)
        if kind is object:
            np.bitwise_or.at(masks[start:stop].reshape(-1), fork, bit[c])
        else:
            # the ports of a node's tree channels are distinct bits: their sum is their OR
            sums = np.bincount(fork, weights=bit[c], minlength=len(block))
            masks[start:stop] |= sums.astype(kind).reshape(stop - start, n)
        if not (rule.base.any() or rule.step.any()):
            continue  # every class is 0 (a mesh's, an up*/down* tree's)
        # Leaves first: a channel's class is final once every child has offered its own.
        # Sorted by level once, so that each level is a contiguous slice.
        order = np.argsort(depth[start:stop].reshape(-1)[at], kind="stable")
        at, c, fork = at[order], c[order], fork[order]
        level = depth[start:stop].reshape(-1)[at]
        bounds = np.searchsorted(level, np.arange(level.max(initial=0) + 2))
        offer = np.zeros(len(block), dtype=np.int32)
        for h in range(len(bounds) - 2, 0, -1):
            here = slice(bounds[h], bounds[h + 1])
            ci, up = c[here], fork[here]
            value = np.maximum(rule.base[ci], offer[at[here]])
            flat_classes[(at[here] // n + start).astype(np.int64) * channels + ci] = \
                np.minimum(value, 255)
            parent = block[up]  # the tree channel into the node this one leaves
            inner = parent >= 0
            if rule.line is not None:
                inner &= rule.line[np.where(inner, parent, 0)] == rule.line[ci]
            offered = rule.step[ci] + value
            inner &= offered > 0  # offers start at 0: only the others can raise them
            np.maximum.at(offer, up[inner], offered[inner])
    return masks, classes
