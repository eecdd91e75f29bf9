"""The deadlock proof: the graph of every wait the generated hardware can make must be
acyclic.

A channel ``c`` with VC ``v`` is two resources in the hardware, so two vertices here:
``("W", c, v)``, the output VC at the upstream router that a packet waits to take (or,
once it has it, to send on), and ``("F", c, v)``, the front of that VC's queue in the
downstream router's input buffer. An edge ``a -> b`` says "what waits at ``a`` can wait for
``b``". The edges are the hardware's rules (:class:`Waits`, docs/routing.md):

- ``W(c) -> F(c)``: sending on ``c`` needs a credit, that is room in ``c``'s downstream
  buffer, which the flit at its front makes when it moves on.
- ``F(a) -> W(b)``: the flit at the front of ``a`` needs the output VC its table names:
  the next hop of a unicast route, or every branch of a broadcast tree (a multicast leaves
  its input queue once it has gone out on all its branches). The local input (what the
  hub injected) and the local output (ejection into the endpoints) are channels too.
- ``W(b_i) -> F(b_j)`` between sibling branches of a multicast, when the hardware can make
  one branch wait for another: when a broadcast packet can be more than one flit longer
  than the credit a multicast takes its branches with (:attr:`Waits.siblings`).
- ``W(inject) -> F(inject, v)``: the hub injects one packet at a time, on its endpoint's
  VC, so every endpoint of a node waits for the one being injected.
- ``W(eject) -> F(eject)``: the local output carries one packet at a time whatever its VC;
  ``F(eject)`` is the endpoints taking packets, a sink unless an endpoint's receive side
  can wait for its own sends (``F(eject) -> W(inject)``, :attr:`Waits.receive_waits_for_send`).
  With ``cascade`` broadcast the node's cascade unit takes the local output first: it
  drops copies and stores each new broadcast in its source's slot, which the one
  outstanding broadcast per source keeps free, so it waits for nothing but the endpoints
  either (:mod:`optnet.hw.cascade`); its forwards are multicasts from the local input, one
  hop each, like the source's own (the broadcast plan's masks).

The user's logic is assumed to take every packet delivered to it and to finish every
packet it starts (the consumption assumption); everything else is an edge. By Dally and
Seitz, destination-based routing whose waits form no cycle cannot deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from optnet.routing.algorithms import Routing
from optnet.routing.arrays import chunks, distinct, has_cycle, join
from optnet.routing.broadcast import Broadcast
from optnet.routing.network import LOCAL, Network

__all__ = ["Proof", "Waits", "broadcast_flits", "describe_cycle", "prove"]

Channel = tuple[int, int]  # (channel, vc)

def broadcast_flits(max_packet: int, buffer: int) -> int:
    """The longest broadcast packet the endpoints send, header included: at most one flit
    more than the router's ``buffer`` (flits per VC), so that a multicast can take every
    branch with credit for all its flits but the tail (the router's ``multicast_credits``)
    and no branch holds its VC while waiting for another's credit."""
    return min(max_packet, buffer + 1)


@dataclass(frozen=True)
class Waits:
    """The rules by which optnet's router, hub and endpoints wait, as the proof models them.

    ``tests/test_hw_waits.py`` checks each rule against the RTL in simulation.

    Attributes
    ----------
    broadcast_flits : int
        Longest broadcast packet, header included (:func:`broadcast_flits`).
    branch_credits : int
        Credits a multicast needs on every branch VC before it takes them (the router's
        ``multicast_credits``); the smallest downstream buffer of a link branch bounds it.
    inject_vcs : tuple of int
        VCs the hub injects on (a unicast on the VC its destination id's low bits give, a broadcast
        of endpoint ``i`` on ``i % vcs``: every VC).
    receive_waits_for_send : bool
        An endpoint's receive side can wait for its transmit side (it cannot: credit grants
        queue in a FIFO that is never full).
    """

    broadcast_flits: int
    branch_credits: int
    inject_vcs: tuple[int, ...] = (0,)
    receive_waits_for_send: bool = False

    @property
    def siblings(self) -> bool:
        """A multicast can hold one branch while it waits for credit on another: a branch
        can run out of credit before the tail (the branch that runs out at the tail holds
        only its own VC; the others have sent the tail and given theirs back)."""
        return self.broadcast_flits - 1 > self.branch_credits

    @classmethod
    def of(cls, network, buffer: int) -> Waits:
        """The waits of the hardware optnet generates for a cluster's ``network`` section
        (:class:`~optnet.spec.models.NetworkDesc`) with router input buffers of ``buffer``
        flits per VC (:attr:`optnet.model.ModelParams.buffer_depth`)."""
        flits = broadcast_flits(int(network.max_packet.value), buffer)
        return cls(flits, flits - 1, tuple(range(network.vcs)))


@dataclass(frozen=True)
class Proof:
    """Result of the proof.

    Attributes
    ----------
    vcs : int
        VCs the routing was folded onto (``network.vcs``).
    channels : int
        (channel, VC) pairs that carry traffic.
    dependencies : int
        Edges of the wait graph.
    cycle : tuple of (channel, vc)
        The link channels of one cycle of waits, in order; empty when there is none.
    waits : tuple of str
        For each channel of ``cycle``, the kind of wait that leads from it to the next:
        ``route`` (a unicast's next hop), ``branch`` (a broadcast
        tree's next channel), ``sibling`` (a multicast holding it waits for credit on
        another branch), ``endpoint`` (delivered packets wait for the node's own sends).
    """

    vcs: int
    channels: int
    dependencies: int
    cycle: tuple[Channel, ...]
    waits: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.cycle


def prove(net: Network, routing: Routing, broadcast: Broadcast | None, vcs: int,
          waits: Waits) -> Proof:
    """Build the wait graph of ``routing`` and ``broadcast`` (its trees, or for ``cascade``
    and ``unicast`` its one-hop fan-outs) with VC classes folded onto ``vcs`` VCs and the
    hardware's ``waits``, and look for a cycle."""
    ids = _Ids(len(net.src), vcs, net.size)
    big = ids.size
    # (channel, VC) pairs as k = channel * V + vc; W(k) = 2k, F(k) = 2k + 1, and an edge
    # a -> b as the integer a * big + b, so that each kind of wait is one sorted array of
    # distinct edges, built for many destinations or sources at once.
    slots = _Slots(net, ids)
    route, used = _route_edges(net, routing, vcs, waits, slots)
    tree = sibling = np.zeros(0, dtype=np.int64)
    if broadcast is not None and broadcast.into is not None and not waits.siblings:
        tree = _tree_waits(net, broadcast, vcs - 1, waits, slots)
    elif broadcast is not None and broadcast.mode != "none":
        tree, sibling = _branches(net, broadcast, vcs - 1, waits, slots)
    heads = tree % big
    used = distinct(np.concatenate([used, heads[heads < ids.links] >> 1]))
    nodes = np.arange(net.size, dtype=np.int64)
    own = [2 * used * big + 2 * used + 1, ids.eject_w(nodes) * big + ids.eject_f(nodes)]
    own += [ids.inject_w(nodes) * big + ids.inject_f(nodes, v) for v in waits.inject_vcs]
    if waits.receive_waits_for_send:
        own.append(ids.eject_f(nodes) * big + ids.inject_w(nodes))
    edges = distinct(np.concatenate([route, tree, sibling, *own]))
    cycle: tuple[Channel, ...] = ()
    steps: tuple[str, ...] = ()
    if has_cycle(edges // big, edges % big, big):
        cycle, steps = _find_cycle(net, route, tree, sibling, used, waits, ids)
    return Proof(vcs, len(used), len(edges), cycle, steps)


def _find_cycle(net: Network, route: np.ndarray, tree: np.ndarray, sibling: np.ndarray,
                used: np.ndarray, waits: Waits,
                ids: _Ids) -> tuple[tuple[Channel, ...], tuple[str, ...]]:
    """The cycle E201 names: the one NetworkX's ``find_cycle`` finds first, on the graph
    built with its edges in this order (E201's text must not change with the hash seed, or
    with how the edges were computed)."""
    big = ids.size
    graph = nx.DiGraph()
    for edges in (route, tree, sibling):
        graph.add_edges_from(zip(*divmod(edges, big), strict=True))
    graph.add_edges_from((2 * k, 2 * k + 1) for k in used.tolist())
    for n in range(net.size):
        graph.add_edges_from((ids.inject_w(n), ids.inject_f(n, v)) for v in waits.inject_vcs)
        graph.add_edge(ids.eject_w(n), ids.eject_f(n))
        if waits.receive_waits_for_send:
            graph.add_edge(ids.eject_f(n), ids.inject_w(n))
    found = [(int(u), int(v)) for u, v in nx.find_cycle(graph)]
    codes = np.array([u * big + v for u, v in found], dtype=np.int64)
    branch = np.isin(codes, tree) & ~np.isin(codes, route)
    held = np.isin(codes, sibling)
    return _channels_of(found, ids, {e for e, b in zip(found, branch, strict=True) if b},
                        {e for e, h in zip(found, held, strict=True) if h})


class _Slots:
    """Waits marked in bitmaps rather than collected as edge lists.

    Every wait in the graph leads from a *waiter* -- the front ``F(k)`` of a (channel, VC)
    pair ``k``, or a node's local input ``F(inject, v)`` -- to an output of the node the
    waiter is at: a *slot*, ``port * V + vc``, where port 0 is the local output. So the
    waits of N^2 routes or tree branches fit in a bitmap of waiters x slots (x slots, for
    sibling waits), and marking them is one pass over the routes instead of a sort.
    """

    def __init__(self, net: Network, ids: _Ids):
        self.ids, self.n, V = ids, net.size, ids.vcs
        self.src = np.array(net.src, dtype=np.int64)
        self.dst = np.array(net.dst, dtype=np.int64)
        self.port = np.array(net.out_port, dtype=np.int64)
        self.slots = max(map(len, net.ports), default=1) * V
        self.pairs = len(net.src) * V  # waiters 0 .. pairs-1 are link fronts, then inputs
        self.channel = np.full((self.n, self.slots // V), -1, dtype=np.int64)
        self.channel[self.src, self.port] = np.arange(len(net.src))

    def inject(self, node, v: int):
        """The waiter number of ``node``'s local input on VC ``v``."""
        return self.pairs + node * self.ids.vcs + v

    def marks(self, sibling: bool = False) -> np.ndarray:
        """An empty bitmap, with one bit more at the end that is not a wait: where the
        entries of a block that are not waits can be marked without being picked out."""
        waiters = self.pairs + self.n * self.ids.vcs
        return np.zeros((self.n * self.slots ** 2 if sibling else waiters * self.slots) + 1,
                        dtype=bool)

    def output(self, node: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """The W vertex of an output slot at a node (the local output's for port 0)."""
        V, ids = self.ids.vcs, self.ids
        port, v = np.divmod(slot, V)
        return np.where(port == 0, ids.eject_w(node),
                        2 * (self.channel[node, port] * V + v))

    def edges(self, marks: np.ndarray) -> np.ndarray:
        """The marked waits as sorted edge codes ``a * ids.size + b``."""
        V, ids = self.ids.vcs, self.ids
        waiter, slot = np.divmod(np.flatnonzero(marks[:-1]), self.slots)
        link = waiter < self.pairs
        inject = waiter - self.pairs
        node = np.where(link, self.dst[np.minimum(waiter, self.pairs - 1) // V], inject // V)
        tail = np.where(link, 2 * waiter + 1, ids.inject_f(inject // V, inject % V))
        return np.sort(tail * ids.size + self.output(node, slot))

    def sibling_edges(self, marks: np.ndarray) -> np.ndarray:
        """The marked sibling waits, ``W(a) -> F(b)`` for slots a, b of a node."""
        node, pair = np.divmod(np.flatnonzero(marks[:-1]), self.slots ** 2)
        a, b = np.divmod(pair, self.slots)
        # a branch's F is the vertex after its W (the local output's too)
        return np.sort(self.output(node, a) * self.ids.size + self.output(node, b) + 1)


def _route_edges(net: Network, routing: Routing, vcs: int, waits: Waits,
                 slots: _Slots) -> tuple[np.ndarray, np.ndarray]:
    """The waits of unicast routes as sorted edge codes, and the (channel, VC) pairs they
    use: each hop's front waits for the next hop's output VC (or the local output at the
    destination), and each node's injected packets wait for the first hop's."""
    V, top, n, Q = vcs, vcs - 1, net.size, slots.slots
    marks, used = slots.marks(), np.zeros(slots.pairs + 1, dtype=bool)
    # int32 indices: the bitmaps are small, and the blocks are not
    port, dst = slots.port.astype(np.int32), slots.dst.astype(np.int32)
    node = np.arange(n, dtype=np.int32)[None, :]
    for start, stop in chunks(n, n):
        nxt, cls = routing.matrices(start, stop)
        hop = nxt >= 0
        c = np.maximum(nxt, 0)
        v = np.minimum(cls, top).astype(np.int32)
        k, slot = c * V + v, port[c] * V + v
        then = dst[c]
        onward = hop & (then != np.arange(start, stop)[:, None])
        # onward: the next hop's output at the next node; at the destination: slot 0
        then_slot = np.where(onward, np.take_along_axis(slot, then, axis=1), 0)
        marks[np.where(hop, k * Q + then_slot, len(marks) - 1)] = True
        used[np.where(hop, k, slots.pairs)] = True
        for iv in waits.inject_vcs:
            marks[np.where(hop, slots.inject(node, iv) * Q + slot, len(marks) - 1)] = True
    return slots.edges(marks), np.flatnonzero(used[:-1])


class _Ids:
    """Vertex numbers of the wait graph: ``W(c, v)`` is ``2 (c V + v)``, ``F(c, v)`` one
    more; each node's local input and output come after the links. Node arguments may be
    numpy arrays."""

    def __init__(self, channels: int, vcs: int, nodes: int):
        self.vcs, self.nodes = vcs, nodes
        self.links = 2 * channels * vcs
        self.size = self.links + 3 * nodes + nodes * vcs

    def inject_w(self, n):
        return self.links + 3 * n

    def eject_w(self, n):
        return self.links + 3 * n + 1

    def eject_f(self, n):
        return self.links + 3 * n + 2

    def inject_f(self, n, v: int):
        return self.links + 3 * self.nodes + n * self.vcs + v


def _tree_waits(net: Network, broadcast: Broadcast, top: int, waits: Waits,
                slots: _Slots) -> np.ndarray:
    """The waits of broadcast replication along trees given channel by channel
    (:attr:`Broadcast.into`), as sorted edge codes: what :func:`_branches` finds from the
    masks, with the tree channel into each node read from the table instead of joined."""
    V, n, Q = slots.ids.vcs, net.size, slots.slots
    src, port = slots.src.astype(np.int32), slots.port.astype(np.int32)
    masks, classes = broadcast.arrays()
    marks = slots.marks()
    for start, stop in chunks(n, len(net.src)):
        into = broadcast.into[start:stop].astype(np.int32)
        tree, c = into >= 0, np.maximum(into, 0)
        v = (np.minimum(np.take_along_axis(classes[start:stop], c, axis=1), top)
             .astype(np.int32) if classes is not None else np.zeros_like(c))
        k, slot = c * V + v, port[c] * V + v
        # What waits for each tree channel: the front of the tree channel into the node it
        # leaves, or at the source, its local input.
        up = src[c]
        parent = np.take_along_axis(into, up, axis=1)
        inner = tree & (parent >= 0)
        waiter = np.take_along_axis(k, up, axis=1)
        marks[np.where(inner, waiter * Q + slot, len(marks) - 1)] = True
        at_root = tree & (up == np.arange(start, stop)[:, None])
        root = np.broadcast_to(np.arange(start, stop)[:, None], into.shape)[at_root]
        for iv in waits.inject_vcs:
            marks[slots.inject(root, iv) * Q + slot[at_root]] = True
        # a node that delivers: the front of its tree channel waits for the local output,
        # and a source that forwards and delivers too, its local input
        local = (masks[start:stop] >> LOCAL & 1).astype(bool)
        marks[np.where(local & tree, k * Q, len(marks) - 1)] = True
        rows = np.arange(stop - start)
        forks = (masks[start:stop][rows, rows + start] >> 1 != 0).astype(bool)
        sources = (rows + start)[local[rows, rows + start] & forks]
        for iv in waits.inject_vcs:
            marks[slots.inject(sources, iv) * Q] = True
    return slots.edges(marks)


def _branches(net: Network, broadcast: Broadcast, top: int, waits: Waits,
              slots: _Slots) -> tuple[np.ndarray, np.ndarray]:
    """The waits of broadcast replication as sorted edge codes: from the channel a broadcast
    arrives on (or the source's local input, where the source forwards on a link) to each
    of its branches at the node, and between sibling branches."""
    V, n, Q = slots.ids.vcs, net.size, slots.slots
    src, dst, channel = slots.src, slots.dst, slots.channel
    masks, classes = broadcast.arrays()
    tree, sibling = slots.marks(), slots.marks(sibling=True) if waits.siblings else None
    for start, stop in chunks(n, len(net.src)):
        # rows of this block of sources; (row, node) keys are row * n + node
        mask = masks[start:stop]
        forks = (mask >> 1 != 0).astype(bool)
        # The tree channels: the port bits of the nodes that forward (a few per tree).
        fr, fx = np.nonzero(forks)
        fork_mask = mask[fr, fx]
        on = [(fork_mask >> p & 1).astype(bool) for p in range(1, Q // V)]
        r = np.concatenate([fr[b] for b in on] + [np.zeros(0, dtype=np.intp)])
        c = np.concatenate([channel[fx[b], p] for p, b in enumerate(on, 1)]
                           + [np.zeros(0, dtype=np.intp)])
        r, c = r[c >= 0], c[c >= 0]
        v = np.minimum(classes[start:stop][r, c], top) if classes is not None else 0
        k = c * V + v
        # A node's branches: its tree channels' outputs, and its local output if it delivers.
        lr, x = np.nonzero((mask >> LOCAL & 1).astype(bool))
        branch_key = np.concatenate([r * n + src[c], lr * n + x])
        branch = np.concatenate([slots.port[c] * V + v, np.zeros(len(x), dtype=np.int64)])
        # What waits for them: the front of each tree channel into the node, and at the
        # source, its local input when it forwards on a link.
        i, j = join(r * n + dst[c], branch_key)
        tree[k[i] * Q + branch[j]] = True
        roots = np.flatnonzero(forks[np.arange(stop - start), np.arange(start, stop)])
        i, j = join(roots * n + roots + start, branch_key)
        for iv in waits.inject_vcs:
            tree[slots.inject(roots[i] + start, iv) * Q + branch[j]] = True
        if sibling is not None:
            at_fork = np.concatenate([np.ones(len(c), dtype=bool), forks[lr, x]])
            key, slot = branch_key[at_fork], branch[at_fork]
            i, j = join(key, key)
            i, j = i[i != j], j[i != j]
            sibling[(key[i] % n * Q + slot[i]) * Q + slot[j]] = True
    return (slots.edges(tree),
            slots.sibling_edges(sibling) if sibling is not None else np.zeros(0, np.int64))


def _channels_of(found: list[tuple[int, int]], ids: _Ids, tree: set[tuple[int, int]],
                 sibling: set[tuple[int, int]]) -> tuple[tuple[Channel, ...], tuple[str, ...]]:
    """The link channels of a cycle of the wait graph, in order, with the kind of wait
    that leads from each to the next (a channel's own credit wait is not a step)."""
    V = ids.vcs
    # Start at a link channel's W, so each channel is read as "wait for it, then what its
    # front waits for".
    start = next((i for i, (u, _) in enumerate(found) if u < ids.links and not u & 1), 0)
    found = found[start:] + found[:start]
    cycle: list[Channel] = []
    steps: list[str] = []
    for u, v in found:
        if u < ids.links and (not cycle or cycle[-1] != divmod(u >> 1, V)):
            cycle.append(divmod(u >> 1, V))
            steps.append("route")
        if not steps:
            continue
        if (u, v) in sibling:
            steps[-1] = "sibling"
        elif u >= ids.links and v >= ids.links and (u - ids.links) % 3 == 2 \
                and u < ids.links + 3 * ids.nodes:
            steps[-1] = "endpoint"
        elif (u, v) in tree and steps[-1] == "route":
            steps[-1] = "branch"
    # from the lowest channel, so that the message does not depend on where the search began
    first = cycle.index(min(cycle)) if cycle else 0
    return tuple(cycle[first:] + cycle[:first]), tuple(steps[first:] + steps[:first])


_STEP_NOTE = {
    "sibling": "then a broadcast waits for credit on a sibling branch",
    "endpoint": "delivered packets wait for the node's own sends",
}


def describe_cycle(net: Network, proof: Proof, limit: int = 12) -> str:
    """``n0.sfp0 -> n1.sfp0 (vc0), n1.sma -> n2.sma (vc0), ...``, each wait that is not a
    route's or a broadcast tree's next hop named in brackets."""
    steps = proof.waits or ("route",) * len(proof.cycle)
    shown = [f"{net.name(c)} (vc{v})" + (f" [{_STEP_NOTE[k]}]" if k in _STEP_NOTE else "")
             for (c, v), k in list(zip(proof.cycle, steps, strict=True))[:limit]]
    more = f", ... ({len(proof.cycle)} channels in all)" if len(proof.cycle) > limit else ""
    return ", ".join(shown) + more
