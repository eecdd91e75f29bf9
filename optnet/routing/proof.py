"""The deadlock proof: the channel dependency graph over (channel, VC) must be acyclic.

A dependency (a, b) exists when some packet may hold channel ``a`` while waiting for
channel ``b``: consecutive hops of a unicast route, and a tree channel and each of its
child channels for a broadcast that is replicated in the network. By Dally and Seitz, a
deterministic routing function whose dependency graph is acyclic cannot deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from optnet.routing.algorithms import Routing
from optnet.routing.network import Network

__all__ = ["Proof", "prove"]

Channel = tuple[int, int]  # (channel, vc)


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
    cycle : tuple of (channel, vc)
        One dependency cycle, empty when the graph is acyclic.
    """

    vcs: int
    channels: int
    dependencies: int
    cycle: tuple[Channel, ...]

    @property
    def ok(self) -> bool:
        return not self.cycle


def prove(net: Network, routing: Routing, tree_edges: set[tuple[Channel, Channel]],
          vcs: int) -> Proof:
    """Build the dependency graph of ``routing`` (plus broadcast ``tree_edges``) with VC
    classes folded onto ``vcs`` VCs, and look for a cycle."""
    top = vcs - 1
    edges: set[tuple[Channel, Channel]] = set(tree_edges)
    used: set[Channel] = set()
    dst = net.dst
    for d, (nxt, cls) in enumerate(zip(routing.next, routing.vclass, strict=True)):
        for n, c in enumerate(nxt):
            if c < 0:
                continue
            here = (c, min(cls[n], top))
            used.add(here)
            m = dst[c]
            if m != d:
                edges.add((here, (nxt[m], min(cls[m], top))))
    graph = nx.DiGraph()
    graph.add_nodes_from(used)
    graph.add_edges_from(edges)
    cycle: tuple[Channel, ...] = ()
    if not nx.is_directed_acyclic_graph(graph):
        cycle = tuple(u for u, _ in nx.find_cycle(graph))
    return Proof(vcs, graph.number_of_nodes(), graph.number_of_edges(), cycle)


def describe_cycle(net: Network, cycle: tuple[Channel, ...], limit: int = 12) -> str:
    """``n0.sfp0 -> n1.sfp0 (vc0), n1.sma -> n2.sma (vc0), ...``"""
    shown = [f"{net.name(c)} (vc{v})" for c, v in cycle[:limit]]
    more = f", ... ({len(cycle)} channels in all)" if len(cycle) > limit else ""
    return ", ".join(shown) + more
