"""Zero-load latency model: per-hop components, all-pairs matrix, diameter, round trip.

A packet's head goes, at zero load, from the sending endpoint through the local hub into its
node's router, then per hop over one link (link layer out, PHY pair, cable, link layer in)
into the next router, and at the destination out through the hub to the endpoint::

    latency(s, d) = 2 hub + (hops + 1) router + sum over hops of
                    (link layer + PHY + serialisation of one frame + cable)

Every component is a parameter (:class:`~optnet.report.params.ModelParams`): cycles at the
network clock for the router, link layer and hub, a latency per PHY protocol, the cable's
delay per metre; or a measured hop per protocol, which replaces the link's part of the sum.
Serialisation is one link-layer frame (the head flit with its framing) at the link's
payload rate. All times are exact fractions of a second.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from optnet.cluster import Link
from optnet.report.params import ModelParams
from optnet.routing.route import Routed

__all__ = ["COMPONENTS", "Breakdown", "Diameter", "diameter", "hop", "latency_matrix",
           "path_latency", "round_trip"]

#: The components of a latency, in the order reports list them.
COMPONENTS = ("hub", "router", "link_layer", "phy", "serialisation", "cable")


@dataclass(frozen=True)
class Breakdown:
    """A latency split by component (seconds), with how many of each part it crosses.

    Attributes
    ----------
    parts : Mapping[str, Fraction]
        Seconds per component of :data:`COMPONENTS`.
    routers : int
        Routers crossed (hops + 1).
    hops : Mapping[str, int]
        Links crossed, by link type (:meth:`ModelParams.link_type`).
    """

    parts: Mapping[str, Fraction]
    routers: int
    hops: Mapping[str, int]

    @property
    def total(self) -> Fraction:
        return sum(self.parts.values(), Fraction(0))

    def __add__(self, other: Breakdown) -> Breakdown:
        hops = dict(self.hops)
        for kind, count in other.hops.items():
            hops[kind] = hops.get(kind, 0) + count
        return Breakdown({c: self.parts.get(c, Fraction(0)) + other.parts.get(c, Fraction(0))
                          for c in COMPONENTS}, self.routers + other.routers, hops)


def hop(params: ModelParams, link: Link) -> Breakdown:
    """One hop over ``link``: the router it leaves, both link layers, the PHY pair, one
    frame's serialisation and the cable."""
    lp = params.link(link)
    router = params.cycles(params.router_cycles)
    if lp.hop is not None:
        # a measured hop stands for everything but the router; it is booked as the PHY's
        parts = dict.fromkeys(COMPONENTS, Fraction(0)) | {"router": router, "phy": lp.hop}
    else:
        parts = {
            "hub": Fraction(0),
            "router": router,
            "link_layer": params.cycles(params.link_layer_cycles),
            "phy": lp.latency,
            "serialisation": Fraction(params.frame_bits) / lp.payload_rate,
            "cable": lp.length_m * params.cable_delay_per_m,
        }
    return Breakdown(parts, 1, {params.link_type(link): 1})


def _ends(params: ModelParams) -> Breakdown:
    # The hub at both ends and the destination's router (the one a path's hops do not count).
    return Breakdown({c: Fraction(0) for c in COMPONENTS}
                     | {"hub": 2 * params.cycles(params.hub_cycles),
                        "router": params.cycles(params.router_cycles)}, 1, {})


def path_latency(routed: Routed, params: ModelParams, s: int, d: int) -> Breakdown:
    """Zero-load latency from node index ``s`` to ``d`` along the route."""
    net = routed.net
    total = _ends(params)
    for channel in routed.routing.path(net, s, d):
        total = total + hop(params, net.link(channel))
    return total


def latency_matrix(routed: Routed, params: ModelParams) -> list[list[Fraction]]:
    """Zero-load latency (seconds) of every pair, ``[source][destination]``; the diagonal is
    an endpoint sending to its own node (hub and router only).

    Routes are per destination, so a node's latency to ``d`` is its first hop's plus that of
    the node the hop leads to: each column takes one pass over the nodes, not a walk of
    every route (a 256-node torus has 65,280 routes).
    """
    net, nxt = routed.net, routed.routing.next
    per_link = {link.index: hop(params, link).total for link in routed.cluster.links}
    channel = [per_link[net.link(c).index] for c in range(len(net.src))]
    ends = _ends(params).total
    columns = []
    for d in range(net.size):
        to_d: list[Fraction | None] = [None] * net.size
        to_d[d] = Fraction(0)
        for start in range(net.size):
            walked, x = [], start
            while to_d[x] is None:
                if nxt[d][x] < 0:
                    raise ValueError(f"no route from node {start} to node {d}")
                walked.append(x)
                x = net.dst[nxt[d][x]]
            for y in reversed(walked):
                to_d[y] = channel[nxt[d][y]] + to_d[net.dst[nxt[d][y]]]
        columns.append(to_d)
    return [[ends + columns[d][s] for d in range(net.size)] for s in range(net.size)]


@dataclass(frozen=True)
class Diameter:
    """The slowest pair at zero load (the form of the BEE3 paper's Table I)."""

    src: str
    dst: str
    latency: Breakdown


def diameter(routed: Routed, params: ModelParams,
             matrix: list[list[Fraction]] | None = None) -> Diameter | None:
    """The pair with the largest zero-load latency (None for a single node); ties go to the
    first pair in node order. ``matrix``: :func:`latency_matrix`, if already computed."""
    matrix = matrix or latency_matrix(routed, params)
    n = len(matrix)
    pairs = [(matrix[s][d], s, d) for s in range(n) for d in range(n) if s != d]
    if not pairs:
        return None
    _, s, d = max(pairs, key=lambda item: item[0])
    names = [node.name for node in routed.cluster.nodes]
    return Diameter(names[s], names[d], path_latency(routed, params, s, d))


def round_trip(routed: Routed, params: ModelParams, s: int, d: int) -> Fraction:
    """BlueDBM's measurement: a packet from ``s`` to ``d`` and the reply, sent as soon as it
    arrives, back (seconds)."""
    return path_latency(routed, params, s, d).total + path_latency(routed, params, d, s).total
