"""The latency and credit model (:mod:`optnet.model`) over a routed cluster's paths: every
pair's zero-load latency, the diameter, round trips and the endpoints' credit loops.

``optnet route`` prints the diameter, lint's W101 and the report's credit table take the
credit verdicts, and the report its matrix and breakdowns, all from here, so the commands
agree. Paths are the routes (one per pair, destination-based), not ideal shortest paths.

The slowest pair is searched for in floating point over all pairs at once (numpy, a few
destinations at a time), and its figures are then summed exactly; pairs whose latencies
agree to 12 digits count as a tie, which goes to the first pair in node order, so the search
finds the pair exact arithmetic would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from optnet.diagnostics import Diagnostic
from optnet.model import (
    ENDPOINT_CREDIT_CYCLES,
    Breakdown,
    CreditCheck,
    ModelParams,
    endpoint_credits,
    ends,
    hop,
    hop_times,
)
from optnet.routing.route import Routed
from optnet.spec.models import EndpointDesc
from optnet.spec.source import SourceMap

__all__ = ["CreditLoop", "Diameter", "check_credit", "credit_loop", "diameter",
           "latency_matrix", "path_latency", "round_trip"]

# Relative difference below which two float sums of exact latencies count as equal.
_TIE = 1e-12

# Destinations per block of the all-pairs search: bounds its working memory (a few arrays
# of this many rows by the node count).
_BLOCK = 256


def path_latency(routed: Routed, params: ModelParams, s: int, d: int) -> Breakdown:
    """Zero-load latency from node index ``s`` to ``d`` along the route."""
    net = routed.net
    total = ends(params)
    for channel in routed.routing.path(net, s, d):
        total = total + hop(params, net.link(channel))
    return total


def round_trip(routed: Routed, params: ModelParams, s: int, d: int) -> Fraction:
    """BlueDBM's measurement: a packet from ``s`` to ``d`` and the reply, sent as soon as it
    arrives, back (seconds)."""
    return path_latency(routed, params, s, d).total + path_latency(routed, params, d, s).total


def latency_matrix(routed: Routed, params: ModelParams) -> list[list[Fraction]]:
    """Zero-load latency (seconds, exact) of every pair, ``[source][destination]``; the
    diagonal is an endpoint sending to its own node (hub and router only).

    Routes are per destination, so a node's latency to ``d`` is its first hop's plus that of
    the node the hop leads to: each column takes one pass over the nodes, not a walk of
    every route (a 256-node torus has 65,280 routes).
    """
    net, nxt = routed.net, routed.routing.next
    per_link = hop_times(params, routed.cluster.links)
    channel = [per_link[net.link(c).index][0] for c in range(len(net.src))]
    base = ends(params).total
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
    return [[base + columns[d][s] for d in range(net.size)] for s in range(net.size)]


def _blocks(routed: Routed, params: ModelParams
            ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For blocks of destinations ``ds``: the hop latency (float seconds, ends excluded) and
    the slowest flit time on the route of every source to each, as ``(ds, latency[i][s],
    flit_time[i][s])``.

    Pointer doubling: after round k every node knows the sum (and maximum) over the first
    2**k hops of its route and the node they lead to, so ``log2`` of the longest route
    rounds cover every route.
    """
    net, routing = routed.net, routed.routing
    n = net.size
    channels = len(net.src)
    per_link = {i: (float(t), float(f))
                for i, (t, f) in hop_times(params, routed.cluster.links).items()}
    # index -1 (a node that is the destination) reads the appended zero
    lat = np.array([*(per_link[net.link(c).index][0] for c in range(channels)), 0.0])
    flit = np.array([*(per_link[net.link(c).index][1] for c in range(channels)), 0.0])
    dst = np.array([*net.dst, 0], dtype=np.int64)
    for first in range(0, n, _BLOCK):
        ds = np.arange(first, min(n, first + _BLOCK))
        nxt = np.stack([np.frombuffer(routing.next[d], dtype=np.intc) for d in ds]
                       ).astype(np.int64)
        if (nxt < -1).any():
            raise ValueError("a node has no route to some destination")
        a, b = lat[nxt], flit[nxt]
        jump = np.where(nxt >= 0, dst[nxt], ds[:, None])
        for _ in range(n.bit_length() + 1):
            if (jump == ds[:, None]).all():
                break
            a = a + np.take_along_axis(a, jump, axis=1)
            b = np.maximum(b, np.take_along_axis(b, jump, axis=1))
            jump = np.take_along_axis(jump, jump, axis=1)
        if not (jump == ds[:, None]).all():
            raise ValueError("a route runs in a loop")
        yield ds, a, b


def _slowest(blocks: Iterator[tuple[np.ndarray, np.ndarray]], n: int) -> tuple[int, int]:
    """``(s, d)`` of the largest ``value[i][s]`` over blocks of destinations ``(ds, value)``
    (``value[i][s]`` belongs to ``s -> ds[i]``); ties to 12 digits go to the first pair in
    node order."""
    best = -np.inf
    found = []                       # per block: its near-largest values and their pairs
    for ds, value in blocks:
        top = float(value.max())
        if top < best - abs(best) * _TIE:
            continue
        best = max(best, top)
        rows, cols = np.nonzero(value >= top - abs(top) * _TIE)
        found.append((value[rows, cols], cols * n + ds[rows]))
    values = np.concatenate([v for v, _ in found])
    keys = np.concatenate([k for _, k in found])
    key = int(keys[values >= best - abs(best) * _TIE].min())
    return divmod(key, n)


@dataclass(frozen=True)
class Diameter:
    """The slowest pair at zero load (the form of the BEE3 paper's Table I)."""

    src: str
    dst: str
    latency: Breakdown


def diameter(routed: Routed, params: ModelParams) -> Diameter | None:
    """The pair with the largest zero-load latency along the routes (None for a single
    node); ties go to the first pair in node order."""
    n = routed.net.size
    if n < 2:
        return None
    s, d = _slowest(((ds, np.where(ds[:, None] == np.arange(n), -np.inf, a))
                     for ds, a, _ in _blocks(routed, params)), n)
    names = [node.name for node in routed.cluster.nodes]
    return Diameter(names[s], names[d], path_latency(routed, params, s, d))


@dataclass(frozen=True)
class CreditLoop:
    """The pair whose credit loop holds the most packets, and every managed endpoint's
    verdict on it.

    Attributes
    ----------
    src, dst : str
        Sender and receiver.
    round_trip : Fraction
        The packet's head there and a grant back, seconds.
    loop : Fraction
        ``round_trip``, the packet's tail behind its head and the endpoints' own cycles
        (:attr:`~optnet.model.CreditCheck.loop`).
    packet_time : Fraction
        Seconds per packet on the route's slowest link.
    checks : tuple of (EndpointDesc, CreditCheck)
        One per managed endpoint, in file order.
    """

    src: str
    dst: str
    round_trip: Fraction
    loop: Fraction
    packet_time: Fraction
    checks: tuple[tuple[EndpointDesc, CreditCheck], ...]


def credit_loop(routed: Routed, params: ModelParams) -> CreditLoop | None:
    """The credit loops of ``routed``'s managed endpoints on its worst pair: the one whose
    loop (a packet there, a grant back) lasts the most packet times. None without managed
    endpoints (whose offset is below their credit, else E117), with a single node, or on a
    direct cluster, whose switch's message credit replaces the endpoints' packet credit."""
    # an offset that is not below the credit is E117's; its loop has no meaning
    managed = [ep for ep in routed.cluster.desc.endpoints
               if ep.managed and endpoint_credits(ep)[2] < endpoint_credits(ep)[1]]
    n = routed.net.size
    if not managed or n < 2 or params.direct is not None:
        return None
    there = np.zeros((n, n))             # [destination][source]
    flit = np.zeros((n, n))
    for ds, a, b in _blocks(routed, params):
        there[ds], flit[ds] = a, b
    flits = params.packet_flits
    base = float(2 * ends(params).total + params.cycles(ENDPOINT_CREDIT_CYCLES))
    # there[d][s] is s -> d, so its transpose is d -> s; flit[d][s] > 0 off the diagonal
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (there + there.T + base + (flits - 1) * flit) / (flits * flit)
    np.fill_diagonal(ratio, -np.inf)
    s, d = _slowest([(np.arange(n), ratio)], n)
    net = routed.net
    slowest = max(params.flit_time(net.link(c)) for c in routed.routing.path(net, s, d))
    trip = round_trip(routed, params, s, d)
    loop = trip + (flits - 1) * slowest + params.cycles(ENDPOINT_CREDIT_CYCLES)
    packet = flits * slowest
    names = [node.name for node in routed.cluster.nodes]
    return CreditLoop(names[s], names[d], trip, loop, packet, tuple(
        (ep, CreditCheck(*endpoint_credits(ep), loop, packet)) for ep in managed))


def _time(seconds: Fraction) -> str:
    # as the report prints times
    ns = float(seconds) * 1e9
    return f"{ns / 1000:.3f} us" if ns >= 10000 else f"{ns:.1f} ns"


def check_credit(routed: Routed, params: ModelParams, smap: SourceMap) -> list[Diagnostic]:
    """W101 for every managed endpoint whose credits cannot cover the worst credit loop
    (:func:`credit_loop`): the verdicts the report's credit table prints."""
    loop = credit_loop(routed, params)
    if loop is None:
        return []
    endpoints = routed.cluster.desc.endpoints
    diags = []
    for ep, check in loop.checks:
        if check.sufficient:
            continue
        i = endpoints.index(ep)
        need = check.needed
        budget = -(-(need - 1 - check.offset) // check.credit) + 1
        diags.append(Diagnostic(
            "W101", f"Endpoint '{ep.name}' lets a source send {check.window} packet"
            f"{'s' if check.window != 1 else ''} before it needs the credit the first of "
            f"them earns ((init_budget - 1) x credit + offset + 1, with init_budget "
            f"{check.init_budget}, credit {check.credit} and offset {check.offset}), but on "
            f"the slowest credit loop, {loop.src} to {loop.dst} and the grant back, that "
            f"credit takes {_time(check.loop)}, the time of {need} packets of "
            f"{params.packet_flits} flits ({_time(check.packet_time)} each); the endpoint "
            f"reaches {100 * float(check.share):.1f} % of the path's rate.",
            smap.at(("endpoints", i, "credit") if ep.credit is not None
                    else ("endpoints", i)),
            hint=f"Raise init_budget to {budget}, or credit and offset so that "
            f"(init_budget - 1) x credit + offset + 1 is at least {need}; the receive buffer "
            "holds init_budget x credit + offset packets per sending node."))
    return diags
