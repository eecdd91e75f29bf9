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

#: The kinds of wait a step of a cycle can be (:attr:`Proof.waits`).
WAIT_KINDS = ("route", "branch", "sibling", "endpoint")


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
        For each channel of ``cycle``, the kind of wait that leads from it to the next
        (:data:`WAIT_KINDS`): ``route`` (a unicast's next hop), ``branch`` (a broadcast
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
    top = vcs - 1
    graph = nx.DiGraph()
    used: set[Channel] = set()
    edges: set[tuple] = set()
    firsts: list[set[Channel]] = [set() for _ in range(net.size)]
    into: set[Channel] = set()
    dst = net.dst
    for d, (nxt, cls) in enumerate(zip(routing.next, routing.vclass, strict=True)):
        for n, c in enumerate(nxt):
            if c < 0:
                continue
            here = (c, min(cls[n], top))
            used.add(here)
            firsts[n].add(here)
            m = dst[c]
            if m == d:
                into.add(here)
            else:
                edges.add((("F", *here), ("W", nxt[m], min(cls[m], top))))
    graph.add_edges_from(edges, kind="route")
    for n, hops in enumerate(firsts):
        graph.add_edges_from(((("F", "inject", n, v), ("W", *h)) for h in hops
                              for v in waits.inject_vcs), kind="route")
    graph.add_edges_from(((("F", *h), ("W", "eject", dst[h[0]])) for h in into), kind="route")
    if broadcast is not None and broadcast.mode != "cascade":
        _branches(graph, net, broadcast, top, waits, used)
    for c, v in used:
        graph.add_edge(("W", c, v), ("F", c, v), kind="credit")
    for n in range(net.size):
        graph.add_edges_from(((("W", "inject", n), ("F", "inject", n, v))
                              for v in waits.inject_vcs), kind="inject")
        graph.add_edge(("W", "eject", n), ("F", "eject", n), kind="credit")
        if waits.receive_waits_for_send:
            graph.add_edge(("F", "eject", n), ("W", "inject", n), kind="endpoint")
    cycle: tuple[Channel, ...] = ()
    steps: tuple[str, ...] = ()
    try:
        found = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        found = None
    if found:
        cycle, steps = _channels_of(found, graph)
    return Proof(vcs, len(used), graph.number_of_edges(), cycle, steps)


def _branches(graph: nx.DiGraph, net: Network, broadcast: Broadcast, top: int, waits: Waits,
              used: set[Channel]) -> None:
    """The waits of broadcast replication: from the channel a broadcast arrives on (or the
    source's local input) to each of its branches, and between sibling branches."""
    out_port, classes = net.out_port, broadcast.classes
    for s, masks in enumerate(broadcast.masks):
        vc_of = _tree_vcs(classes[s] if classes else None, top)
        arrive = {}
        for x, mask in enumerate(masks):
            for c in net.out[x]:
                if mask >> out_port[c] & 1:
                    arrive[net.dst[c]] = ("F", c, vc_of(c))
        for x, mask in enumerate(masks):
            branches = [("W", c, vc_of(c)) for c in net.out[x] if mask >> out_port[c] & 1]
            used.update((c, v) for _, c, v in branches)
            if mask >> LOCAL & 1:
                branches.append(("W", "eject", x))
            sources = [arrive[x]] if x in arrive else \
                [("F", "inject", x, v) for v in waits.inject_vcs] if x == s else []
            graph.add_edges_from(((a, b) for a in sources for b in branches), kind="branch")
            if waits.siblings and len(branches) > 1:
                graph.add_edges_from(((a, ("F", *b[1:])) for a in branches for b in branches
                                      if a != b), kind="sibling")


def _tree_vcs(cls, top: int):
    """The VC of each channel of a broadcast tree of VC classes ``cls`` (None: all 0)."""
    if cls is None:
        return lambda c: 0
    return lambda c: min(cls[c], top)


def _channels_of(found: list[tuple], graph: nx.DiGraph) -> tuple[tuple[Channel, ...],
                                                                tuple[str, ...]]:
    """The link channels of a cycle of the wait graph, in order, with the kind of wait
    that leads from each to the next (a channel's own credit wait is not a step)."""
    # Start at a W vertex of a link channel, so each channel is read as "wait for it,
    # then what its front waits for".
    start = next((i for i, (u, _) in enumerate(found) if u[0] == "W" and u[1] != "inject"
                  and u[1] != "eject"), 0)
    found = found[start:] + found[:start]
    cycle: list[Channel] = []
    steps: list[str] = []
    for u, v in found:
        kind = graph.edges[u, v]["kind"]
        if isinstance(u[1], int) and (not cycle or cycle[-1] != (u[1], u[2])):
            cycle.append((u[1], u[2]))
            steps.append("route")
        if kind in ("branch", "sibling", "endpoint") and steps:
            steps[-1] = kind
    # from the lowest channel, so that the message does not depend on where the search began
    first = cycle.index(min(cycle)) if cycle else 0
    return tuple(cycle[first:] + cycle[:first]), tuple(steps[first:] + steps[:first])


_STEP_NOTE = {
    "sibling": "held by a broadcast that waits for credit on its next branch",
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
