"""What a cluster simulation is made of, as data: clocks, roles, links and traffic.

:func:`sim_setup` takes a routed cluster and its node plans to a :class:`SimSetup`: the
clocks the simulator drives (the network clock and one per distinct PHY word rate), the
hardware roles (one Verilated model each), every node's role and the contents of the
memories in which nodes of one role differ, and both directions of every link with its
latency in PHY clock cycles. The latency is the report's model of the PHY pair and the cable
(:meth:`optnet.model.ModelParams.link`), so that the simulated network's zero-load latency
and the report's predictions can be compared: the link layers, routers and endpoints are the
generated RTL and take the cycles they take.

A link port's PHY word rate is its payload rate (:attr:`optnet.model.LinkParams.payload_rate`)
over the link layer's PHY word width: the PHY's user clock. Clocks are simulated with a
whole number of picoseconds per half period.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from optnet.cluster import Link
from optnet.model import ModelParams, model_params
from optnet.plan import NodePlan
from optnet.routing.route import Routed

__all__ = ["PAIR", "PATTERNS", "Failure", "LineSetup", "SimSetup", "Traffic", "TrafficError",
           "parse_loads", "permutation", "read_messages", "read_pairs", "sim_setup"]

#: The synthetic traffic patterns (besides pairs, a CSV file of messages and ``bringup``).
PATTERNS = ("uniform", "alltoall", "transpose", "tornado", "broadcast")

#: The prefix of pair traffic, ``pair:SRC:DST[,SRC:DST...]`` (:func:`read_pairs`).
PAIR = "pair:"


class TrafficError(ValueError):
    """The traffic asked for cannot run on this cluster; the message says why."""


@dataclass(frozen=True)
class Failure:
    """Link ``link`` (its index in the cluster file) is down from ``start_ns`` to
    ``end_ns`` after the traffic starts: a failed lane of a bonded link takes it down."""

    link: int
    start_ns: float
    end_ns: float


@dataclass(frozen=True)
class Traffic:
    """The traffic of a run.

    Attributes
    ----------
    pattern : str
        One of :data:`PATTERNS`, ``pairs`` (``pairs`` gives them), ``messages``
        (``messages`` gives them) or ``bringup``.
    load : float
        Offered load per endpoint, in beats per network cycle (0 to 1).
    packets : int
        Packets per endpoint (0: no limit; then ``cycles`` ends the run).
    cycles : int
        Network cycles of traffic (0: until every packet has arrived).
    beats : int
        Beats per packet (0: the endpoint's longest packet).
    ready : float
        Chance that a receiving endpoint takes a beat in a cycle (1: always ready).
    messages : tuple of (int, int, int, int, int)
        ``(node index, endpoint, cycle, destination index or -1, beats)``, for ``messages``.
    pairs : tuple of (int, int, int)
        ``(node index, endpoint, destination index)``, for ``pairs``: the only endpoints
        that send, each every packet to its destination.
    """

    pattern: str = "uniform"
    load: float = 0.1
    packets: int = 0
    cycles: int = 0
    beats: int = 0
    ready: float = 1.0
    messages: tuple[tuple[int, int, int, int, int], ...] = ()
    pairs: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True)
class LineSetup:
    """One direction of one link.

    Attributes
    ----------
    tx, rx : tuple of (int, int)
        Node index and link port index (the ``k`` of :attr:`NodePlan.ports`) at each end.
    link : int
        The link's index in the cluster.
    clock : int
        The simulator clock of both ends' PHY domains.
    latency : int
        PHY clock cycles of the delay line (at least 1): the PHY pair's and the cable's
        latency, less the cycle of the register through which the network module takes
        what it receives (:class:`~optnet.hw.top.NodeTop` with ``phys="sim"``).
    bits : int
        PHY word width.
    """

    tx: tuple[int, int]
    rx: tuple[int, int]
    link: int
    clock: int
    latency: int
    bits: int


@dataclass(frozen=True)
class SimSetup:
    """A cluster, ready to simulate.

    Attributes
    ----------
    plans : tuple of NodePlan
        Every node, in cluster order (node index = position).
    roles : tuple of NodePlan
        The first node of each hardware role; ``role_of[i]`` is node ``i``'s.
    role_of : tuple of int
    clocks_hz : tuple of Fraction
        Clock 0 is the network clock; the others PHY word clocks.
    half_ps : tuple of int
        Each clock's half period, picoseconds.
    port_clocks : tuple of tuple of int
        Per node, the clock of each link port.
    lines : tuple of LineSetup
    links : tuple of Link
        The cluster's links, by index.
    params : ModelParams
        The report's model of the cluster (predictions, link rates).
    """

    plans: tuple[NodePlan, ...]
    roles: tuple[NodePlan, ...]
    role_of: tuple[int, ...]
    clocks_hz: tuple[Fraction, ...]
    half_ps: tuple[int, ...]
    port_clocks: tuple[tuple[int, ...], ...]
    lines: tuple[LineSetup, ...]
    links: tuple[Link, ...]
    params: ModelParams

    @property
    def network_hz(self) -> Fraction:
        return self.clocks_hz[0]

    def cycles_of_ns(self, ns: float) -> int:
        """Network clock cycles in ``ns`` nanoseconds (rounded up)."""
        return math.ceil(Fraction(ns) * self.network_hz / 10**9)


def _port_links(routed: Routed) -> dict[tuple[str, str, tuple[int, ...]], Link]:
    # each link by either end: (node, board port, lanes)
    ends = {}
    for link in routed.cluster.links:
        for end in (link.a, link.b):
            ends[end.node, end.port, tuple(end.lanes)] = link
    return ends


def _half_ps(hz: Fraction) -> int:
    return max(1, round(Fraction(10**12, 2) / hz))


def sim_setup(routed: Routed, plans: Sequence[NodePlan]) -> SimSetup:
    """The simulation of ``routed`` with its node ``plans`` (every node, in cluster order)."""
    params = model_params(routed.cluster)
    ends = _port_links(routed)
    roles, role_of, seen = [], [], {}
    for p in plans:
        key = p.role()
        if key not in seen:
            seen[key] = len(roles)
            roles.append(p)
        role_of.append(seen[key])
    clocks = [Fraction(plans[0].clock_hz).limit_denominator(10**6)]
    port_clocks, by_end = [], {}
    for i, p in enumerate(plans):
        row = []
        for k, port in enumerate(p.ports):
            link = ends[p.node, port.board_port, tuple(port.lanes)]
            hz = params.link(link).payload_rate / port.link.phy_width
            # a PHY clock within a part per million of another is that clock
            match = next((c for c, f in enumerate(clocks) if abs(f - hz) <= f / 10**6), None)
            if match is None:
                clocks.append(hz)
                match = len(clocks) - 1
            row.append(match)
            by_end[p.node, port.board_port, tuple(port.lanes)] = (i, k, port, link, match)
        port_clocks.append(tuple(row))
    lines = []
    for link in routed.cluster.links:
        a = by_end[link.a.node, link.a.port, tuple(link.a.lanes)]
        b = by_end[link.b.node, link.b.port, tuple(link.b.lanes)]
        lp = params.link(link)
        seconds = lp.latency + lp.length_m * params.cable_delay_per_m
        for tx, rx in ((a, b), (b, a)):
            # (the network module registers what it receives: one of the cycles)
            cycles = max(1, round(seconds * clocks[tx[4]]) - 1)
            lines.append(LineSetup((tx[0], tx[1]), (rx[0], rx[1]), link.index, tx[4], cycles,
                                   tx[2].link.phy_width))
    return SimSetup(tuple(plans), tuple(roles), tuple(role_of), tuple(clocks),
                    tuple(_half_ps(hz) for hz in clocks), tuple(port_clocks), tuple(lines),
                    tuple(routed.cluster.links), params)


def permutation(pattern: str, n: int) -> tuple[int, ...]:
    """The destination of each node index under ``transpose`` or ``tornado``; a node whose
    destination is itself sends nothing (-2).

    ``transpose``: the nodes as a square of ``k x k`` in cluster order (row by row), node
    ``(r, c)`` sends to ``(c, r)``; for a power of two that is not a square, the id's bits
    rotated by half their number. ``tornado``: node ``i`` sends to ``(i + ceil(n/2) - 1) mod
    n``, halfway round a ring less one.

    Raises
    ------
    TrafficError
        For ``transpose`` on a node count that is neither a square nor a power of two.
    """
    if pattern == "tornado":
        dest = [(i + -(-n // 2) - 1) % n for i in range(n)]
    else:
        k = math.isqrt(n)
        if k * k == n:
            dest = [(i % k) * k + i // k for i in range(n)]
        elif n & (n - 1) == 0:
            bits = n.bit_length() - 1
            half = bits // 2
            dest = [((i << half) | (i >> (bits - half))) & (n - 1) for i in range(n)]
        else:
            raise TrafficError(f"The transpose pattern needs a square number of nodes or a "
                               f"power of two; this cluster has {n}.")
    return tuple(-2 if d == i else d for i, d in enumerate(dest))


def read_messages(path: Path, setup: SimSetup) -> tuple[tuple[int, int, int, int, int], ...]:
    """The messages of CSV file ``path``: rows ``src,dst,bytes,t`` (a header row is
    allowed), ``src`` a node or ``node.endpoint`` (the first endpoint otherwise), ``dst`` a
    node or ``*`` for a broadcast, ``bytes`` the message size and ``t`` when it is sent, in
    nanoseconds after the traffic starts. A message longer than the endpoint's longest packet
    goes as several packets.

    Raises
    ------
    TrafficError
        Naming the file, row and field of the first row that is not a message.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TrafficError(f"Cannot read the traffic file {path}: {err}.") from err
    plans = setup.plans
    nodes = {p.node: i for i, p in enumerate(plans)}
    eps = {name: e for e, name in enumerate(plans[0].endpoint_names)}
    out = []
    for row_no, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or all(not cell.strip() for cell in row):
            continue
        if row_no == 1 and [c.strip().lower() for c in row][:4] == ["src", "dst", "bytes", "t"]:
            continue
        where = f"{path}, row {row_no}"
        if len(row) != 4:
            raise TrafficError(f"{where}: a message has 4 fields (src,dst,bytes,t), not "
                               f"{len(row)}.")
        src, dst, size, t = (cell.strip() for cell in row)
        node, ep = _source(where, src, nodes, eps)
        if dst != "*" and dst not in nodes:
            raise TrafficError(f"{where}: the destination {dst!r} names no node of the cluster "
                               f"(or '*' for a broadcast).")
        if dst == node:
            raise TrafficError(f"{where}: node {node} sends a message to itself; the network "
                               f"carries messages between nodes.")
        try:
            size_bytes, ns = int(size), float(t)
        except ValueError:
            raise TrafficError(f"{where}: bytes must be a whole number and t a time in "
                               f"nanoseconds, not {size!r} and {t!r}.") from None
        if size_bytes < 1 or not 0 <= ns < 1e12:
            raise TrafficError(f"{where}: a message has at least 1 byte and a time from 0 to "
                               f"1e12 ns.")
        e = eps[ep] if ep else 0
        width = plans[nodes[node]].endpoints[e].width
        beats = -(-size_bytes * 8 // width)
        out.append((nodes[node], e, setup.cycles_of_ns(ns), -1 if dst == "*" else nodes[dst],
                    beats))
    if not out:
        raise TrafficError(f"The traffic file {path} holds no messages.")
    return tuple(sorted(out, key=lambda m: (m[0], m[1], m[2])))


def _source(where: str, src: str, nodes, eps) -> tuple[str, str]:
    """``(node, endpoint)`` of a traffic source ``node`` or ``node.endpoint`` (endpoint ''
    for every endpoint of the node), or a TrafficError located at ``where``."""
    node, dot, ep = src.partition(".")
    if node not in nodes:
        raise TrafficError(f"{where}: the source {src!r} names no node of the cluster.")
    if dot and ep not in eps:
        raise TrafficError(f"{where}: node {node} has no endpoint {ep!r} (it has "
                           f"{', '.join(eps)}).")
    return node, ep


def read_pairs(text: str, setup: SimSetup) -> tuple[tuple[int, int, int], ...]:
    """The pairs of pair traffic ``text``, ``pair:SRC:DST`` or several ``SRC:DST`` joined by
    commas after the prefix (:data:`PAIR`), as ``(node index, endpoint, destination index)``
    in the order given: ``SRC`` is ``node.endpoint``, or a node for every endpoint of it;
    ``DST`` a node.

    Raises
    ------
    TrafficError
        Naming the first pair that is malformed, names no node or endpoint of the cluster,
        sends to its own node, or repeats an endpoint already sending.
    """
    plans = setup.plans
    nodes = {p.node: i for i, p in enumerate(plans)}
    eps = plans[0].endpoint_names
    where = f"--traffic {text}"
    items = [item.strip() for item in text.removeprefix(PAIR).split(",")]
    if items == [""]:
        raise TrafficError(f"{where}: no pair given; write pair:SRC:DST (SRC a node or "
                           f"node.endpoint, DST a node), several joined by commas.")
    out: list[tuple[int, int, int]] = []
    for item in items:
        src, colon, dst = item.partition(":")
        if not colon or not src or not dst or ":" in dst:
            raise TrafficError(f"{where}: {item!r} is not SRC:DST (SRC a node or "
                               f"node.endpoint, DST a node).")
        node, ep = _source(where, src, nodes, eps)
        if dst not in nodes:
            raise TrafficError(f"{where}: the destination {dst!r} names no node of the "
                               f"cluster.")
        if dst == node:
            raise TrafficError(f"{where}: node {node} sends to itself; the network carries "
                               f"packets between nodes.")
        for e in [eps.index(ep)] if ep else range(len(eps)):
            if any(p[:2] == (nodes[node], e) for p in out):
                raise TrafficError(f"{where}: endpoint {node}.{eps[e]} is in two pairs; each "
                                   f"endpoint sends to one destination.")
            out.append((nodes[node], e, nodes[dst]))
    return tuple(out)


def parse_loads(text: str) -> tuple[float, ...]:
    """The offered loads of ``text``: one number, or several joined by commas, each above 0
    and at most 1 (beats per network cycle per endpoint), in the order given.

    Raises
    ------
    ValueError
        Naming the first item that is not such a number.
    """
    loads = []
    for item in (part.strip() for part in text.split(",")):
        try:
            load = float(item)
        except ValueError:
            load = math.nan
        if not 0 < load <= 1:
            raise ValueError(f"{item!r} is not an offered load: each of the comma-separated "
                             "loads is a number above 0 and at most 1 (beats per network "
                             "cycle per endpoint).")
        loads.append(load)
    return tuple(loads)
