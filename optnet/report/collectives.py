"""Collective operations: start-up latency, completion time and bandwidth against message size.

Every collective is a set of unicast transfers of ``m`` bits each (MPI's counts: per
destination for scatter and alltoall, per source for gather and allgather), all started at
once, as optnet's endpoints and OPTWEB's one-hop collectives run them. At zero load it
completes after

    T(m) = startup + L + max over channels c of (transfers crossing c) * m / rate(c)

where ``L`` is the zero-load latency of its longest transfer
(:mod:`optnet.report.latency`) and the maximum is the channel load of its transfers under
the cluster's routing: on a fully connected cluster every transfer has a link of its own
(load 1), elsewhere the busiest channel serialises its transfers. ``rate(c)`` is the link's
payload rate, or on a direct cluster what its switch's beats get of it
(:meth:`~optnet.model.ModelParams.stream_rate`). A direct node's switch also sends its
endpoints' messages one at a time, and delivers them one at a time: there the busiest
node's transfers out, or in, at :attr:`~optnet.model.ModelParams.node_rate` bound the time
too. A direct cluster has no broadcast hardware: its broadcast is unicasts. A broadcast made by the
routers (tree or cascade) crosses each channel of its source's routes once. A barrier is a
zero-size allgather.

:func:`cuscomnet_broadcast` is the CusComNet paper's analytical broadcast model with its
own parameters (packetisation, per-link latency, queueing, retransmission).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from optnet.report.latency import latency_matrix
from optnet.report.params import ModelParams
from optnet.routing.algorithms import ahead
from optnet.routing.metrics import through
from optnet.routing.route import Routed

__all__ = [
    "COLLECTIVES",
    "Collective",
    "all_pairs_load",
    "collective",
    "cuscomnet_broadcast",
    "max_links",
]

#: The collectives, with how many transfers of ``m`` bits each node sends and receives
#: (OPTWEB's per-node bandwidth counts both directions).
COLLECTIVES = ("barrier", "sendrecv", "scatter", "gather", "broadcast", "allgather",
               "alltoall")


@dataclass(frozen=True)
class Collective:
    """One collective on one cluster.

    Attributes
    ----------
    name : str
    startup : Fraction
        Seconds until the last transfer's first bit arrives (``m`` = 0).
    per_bit : Fraction
        Seconds each bit of ``m`` adds (the busiest channel's load over its rate).
    node_bits : int
        Multiple of ``m`` the busiest node sends and receives: its endpoints' transfers,
        or for a broadcast the routers copy, what it receives and forwards.
    """

    name: str
    startup: Fraction
    per_bit: Fraction
    node_bits: int

    def time(self, m: int) -> Fraction:
        """Completion time for messages of ``m`` bits."""
        return self.startup + self.per_bit * m

    def node_rate(self, m: int | None = None) -> Fraction:
        """Bits per second through the busiest node's links for messages of ``m`` bits; the
        limit for large messages when ``m`` is None (OPTWEB's effective bandwidth per
        node)."""
        if m is None:
            return self.node_bits / self.per_bit
        return self.node_bits * m / self.time(m)


def _transfers(name: str, n: int, root: int) -> list[tuple[int, int]]:
    others = [d for d in range(n) if d != root]
    if name == "sendrecv":
        # every node sends to the next and receives from the one before (a shift)
        return [(s, (s + 1) % n) for s in range(n)]
    if name in ("scatter", "broadcast"):
        return [(root, d) for d in others]
    if name == "gather":
        return [(s, root) for s in others]
    return [(s, d) for s in range(n) for d in range(n) if s != d]


def collective(routed: Routed, params: ModelParams, name: str, root: int = 0,
               matrix: list[list[Fraction]] | None = None) -> Collective:
    """The model of collective ``name`` (one of :data:`COLLECTIVES`) rooted at node index
    ``root``; broadcast is the routers' tree or cascade when the cluster has one, else
    unicasts. ``matrix``: :func:`~optnet.report.latency.latency_matrix`, if computed."""
    net = routed.net
    matrix = matrix or latency_matrix(routed, params)
    pairs = _transfers(name, net.size, root)
    startup = params.startup + max((matrix[s][d] for s, d in pairs), default=Fraction(0))
    if name == "barrier":
        return Collective(name, startup, Fraction(0), 0)
    through: Counter[int] = Counter()
    if name in ("allgather", "alltoall"):
        load = all_pairs_load(routed)
    else:
        load = Counter()
        paths = [routed.routing.path(net, s, d) for s, d in pairs]
        if name == "broadcast" and routed.broadcast.mode in ("tree", "cascade") and (
                params.direct is None):
            # The routers copy the packet: each channel of the source's routes carries it
            # once, and every node receives it once and sends it on each loaded channel.
            load.update({c for path in paths for c in path})
            through.update(net.src[c] for c in load)
            through.update(d for _, d in pairs)
        else:
            for path in paths:
                load.update(path)
    if not through:
        # what each node's endpoints send and receive
        through.update(s for s, _ in pairs)
        through.update(d for _, d in pairs)
    per_bit = max((Fraction(k) / params.stream_rate(net.link(c))
                   for c, k in load.items()), default=Fraction(0))
    if params.node_rate is not None and pairs:
        # A direct node's switch takes its endpoints' messages one at a time and hands them
        # theirs one at a time: what the busiest node sends, or receives, at node_rate.
        ends = [Counter(s for s, _ in pairs), Counter(d for _, d in pairs)]
        busiest = max(max(count.values()) for count in ends)
        per_bit = max(per_bit, Fraction(busiest) / params.node_rate)
    return Collective(name, startup, per_bit, max(through.values(), default=0))


def all_pairs_load(routed: Routed) -> Counter[int]:
    """Transfers crossing each channel when every node sends to every other, accumulated
    down each destination's routing tree rather than route by route."""
    net = routed.net
    load = [0] * len(net.src)
    for d in range(net.size):
        hops = ahead(net, routed.routing.next[d], d)
        through(net, routed.routing.next[d], hops, d, [int(x != d) for x in range(net.size)],
                load)
    return Counter({c: k for c, k in enumerate(load) if k})


def cuscomnet_broadcast(data_bits: int, packet_bits: int, max_links: int, link_rate: Fraction,
                        link_latency: Fraction, routing_latency: Fraction,
                        app_latency: Fraction, error_rate: Fraction = Fraction(0),
                        queueing: Fraction = Fraction(0)) -> Fraction:
    """CusComNet's one-to-all broadcast time (their eq. 4; eq. 1 when ``error_rate`` and
    ``queueing`` are zero), in seconds::

        T_pkt = p / B_l                       one packet's serialisation
        T_L   = T_l + T_r + T_pkt             one link: transmission, routing, serialisation
        T_L'  = (T_L + T_q) (1 + rho)         with queueing and retransmission
        T     = ceil(d / p) (T_L' + T_a) + (k^ - 1) T_L' + T_a

    Parameters
    ----------
    data_bits, packet_bits : int
        ``d`` and ``p``.
    max_links : int
        ``k^``, the most links on any path from the source.
    link_rate : Fraction
        ``B_l``, bit/s.
    link_latency, routing_latency, app_latency : Fraction
        ``T_l``, ``T_r``, ``T_a``, seconds.
    error_rate : Fraction
        ``rho``, the share of packets resent on a link.
    queueing : Fraction
        ``T_q``, seconds (their eq. 2 for the background traffic).
    """
    t_link = link_latency + routing_latency + Fraction(packet_bits) / link_rate
    t_link = (t_link + queueing) * (1 + error_rate)
    packets = math.ceil(Fraction(data_bits, packet_bits))
    return packets * (t_link + app_latency) + (max_links - 1) * t_link + app_latency


def cuscomnet_queueing(packet_bits: int, link_rate: Fraction, window: Fraction,
                       packet_rate: Fraction, average_links: Fraction, nodes: int,
                       ports: int = 4) -> Fraction:
    """CusComNet's queueing delay (their eq. 2), seconds: the unicast packets created in
    ``window`` seconds at ``packet_rate`` per second each occupy ``average_links`` queue
    slots, spread over ``nodes`` x ``ports`` output queues, and each queued packet costs one
    serialisation ``p / B_l``: ``T_q = T_pkt (T' lambda k~) / N / ports``."""
    t_pkt = Fraction(packet_bits) / link_rate
    return t_pkt * window * packet_rate * average_links / nodes / ports


def max_links(routed: Routed, root: int, nodes: Iterable[int] | None = None) -> int:
    """``k^`` of :func:`cuscomnet_broadcast`: the most links on a route from ``root``."""
    net = routed.net
    targets = range(net.size) if nodes is None else nodes
    return max((len(routed.routing.path(net, root, d)) for d in targets if d != root),
               default=0)
