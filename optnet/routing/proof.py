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

The user's logic is assumed to take every packet delivered to it and to finish every
packet it starts (the consumption assumption); everything else is an edge. By Dally and
Seitz, destination-based routing whose waits form no cycle cannot deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from optnet.routing.algorithms import Routing
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
        VCs the hub injects on (endpoint ``i`` on ``i % vcs``).
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
    def of(cls, network, endpoints: int) -> Waits:
        """The waits of the hardware optnet generates for a cluster's ``network`` section
        (:class:`~optnet.spec.models.NetworkDesc`) with ``endpoints`` endpoints per node."""
        buffer = int(network.router.buffer.value)
        flits = broadcast_flits(int(network.max_packet.value), buffer)
        vcs = network.vcs
        return cls(flits, flits - 1, tuple(sorted({i % vcs for i in range(endpoints)})))


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
    """Build the wait graph of ``routing`` and ``broadcast`` (its trees; a ``cascade``
    broadcast stores floods before forwarding them and adds no wait) with VC classes folded
    onto ``vcs`` VCs and the hardware's ``waits``, and look for a cycle."""
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
                     if broadcast is not None and broadcast.mode != "cascade" else (set(), set()))
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
    return Proof(vcs, len(used), graph.number_of_edges(), cycle, steps)


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
