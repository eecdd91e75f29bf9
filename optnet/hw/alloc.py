"""Arbiters for the router's allocators.

Amaranth has no arbiter in its standard library (``lib`` has FIFOs, CRCs, CDC, memories
and streams), so this module is the one place that writes one.
"""

from __future__ import annotations

import math

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RoundRobin", "round_robin_grant"]


class RoundRobin(wiring.Component):
    """Round-robin arbiter with optional priority levels.

    The requester after the last one that was granted *and advanced* wins; among
    requesters of different priority, only those of the highest requesting level take
    part. The grant is combinational and one-hot (zero when nothing is requested).

    Parameters
    ----------
    count : int
        Requesters.
    levels : int
        Priority levels (1 = plain round robin).

    Members
    -------
    requests : In(count)
    priority : In(count * level bits), requester ``i`` at bits ``[i*b, (i+1)*b)``
        Only with ``levels > 1``.
    advance : In(1)
        The grant was used: the pointer moves past the granted requester. Holding the
        pointer when a grant is not used is what makes iSLIP's pointers desynchronise.
    grant : Out(count)
    """

    def __init__(self, count: int, levels: int = 1):
        self.count = count
        self.levels = levels
        self.level_bits = max(1, (levels - 1).bit_length())
        members = {"requests": In(count), "advance": In(1), "grant": Out(count)}
        if levels > 1:
            members["priority"] = In(count * self.level_bits)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        n = self.count
        if n == 1:
            m.d.comb += self.grant.eq(self.requests)
            return m
        requests = Signal(n)
        if self.levels > 1:
            b = self.level_bits
            top = Signal(b)
            # Highest requested level: a priority encoder over levels.
            present = Signal(self.levels)
            for i in range(n):
                level = self.priority[i * b:(i + 1) * b]
                for lv in range(self.levels):
                    with m.If(self.requests[i] & (level == lv)):
                        m.d.comb += present[lv].eq(1)
            for lv in range(self.levels):
                with m.If(present[lv]):
                    m.d.comb += top.eq(lv)
            m.d.comb += requests.eq(Cat(
                self.requests[i] & (self.priority[i * b:(i + 1) * b] == top) for i in range(n)))
        else:
            m.d.comb += requests.eq(self.requests)
        if n > _FLAT:
            m.d.comb += self.grant.eq(_arbitrate(m, requests, [n], self.advance, "last"))
            return m
        # Few requesters: ``last`` says which one was granted last; the requesters after it
        # go first, in circular order. Plain AND-OR terms per requester map onto fewer LUTs
        # than the vector form of :func:`_flat` (a 5-port router is 81 xc7 LUTs smaller),
        # and there are few. Up to four requesters, ``last`` is a number, so that a grant
        # depends on six bits (one LUT); beyond, one-hot, which decodes for free.
        binary = n <= 4
        last = Signal(range(n) if binary else n, init=n - 1 if binary else 1 << (n - 1))
        for i in range(n):
            wins = []
            for k in range(n):
                ahead = [j for j in range(n) if (j - k - 1) % n < (i - k - 1) % n]
                was = last == k if binary else last[k]
                wins.append(was & ~Cat(requests[j] for j in ahead).any() if ahead else was)
            m.d.comb += self.grant[i].eq(requests[i] & Cat(wins).any())
        with m.If(self.advance & self.grant.any()):
            m.d.sync += last.eq(Cat(Cat(self.grant[i] for i in range(n) if i >> b & 1).any()
                                    for b in range(len(last))) if binary else self.grant)
        return m


def round_robin_grant(requests, last, priority=None, levels=1):
    """The grant of a round-robin arbiter whose pointer is given rather than kept: the
    first requester after ``last`` in circular order, among those of the highest requesting
    priority level. Combinational, one-hot, zero when nothing is requested.

    Parameters
    ----------
    requests : Value
        One bit per requester.
    last : Value
        One-hot, as wide as ``requests``: the requester granted last (all zero: requester 0
        goes first).
    priority : list of Value, optional
        Per requester its level (only with ``levels > 1``).
    levels : int

    Written as AND-OR terms over the requests and the pointer, like :class:`RoundRobin`'s
    flat form: a grant depends on every request and pointer bit, so it is meant for few
    requesters (the VCs of one input).
    """
    n = len(requests)
    if levels > 1:
        present = [Cat(requests[i] & (priority[i] == lv) for i in range(n)).any()
                   for lv in range(levels)]
        top = [present[lv] & ~Cat(present[lv + 1:]).any() for lv in range(levels)]
        requests = Cat(requests[i] & Cat(top[lv] & (priority[i] == lv)
                                         for lv in range(levels)).any() for i in range(n))
    if n == 1:
        return requests
    # ``last`` all zero acts as ``last`` on the final requester
    last = Cat(last[:n - 1], last[n - 1] | ~last.any())
    grants = []
    for i in range(n):
        wins = []
        for k in range(n):
            ahead = [j for j in range(n) if (j - k - 1) % n < (i - k - 1) % n]
            wins.append(last[k] & ~Cat(requests[j] for j in ahead).any() if ahead else last[k])
        grants.append(requests[i] & Cat(wins).any())
    return Cat(grants)


def _arbitrate(m, requests, sizes, advance, name):
    """Round-robin arbiters side by side, built in ``m``: ``requests`` is cut into
    consecutive segments of ``sizes``, each its own arbiter, whose pointer moves past its
    grant when its bit of ``advance`` (one per segment) is set. Returns every segment's
    one-hot grant, as a signal as wide as ``requests``.

    Many requesters: round robin among groups, and within the chosen group. Each term of a
    flat arbiter grows with the square of the requesters; two levels keep the arbiter small
    and no deeper. A requester waits at most (groups x group size) grants. All the arbiters
    of one level are computed together, on vectors: a 64-port router has 65 arbiters of 64
    requesters, and Amaranth would lower their hundreds of groups slowly one by one.
    """
    grant = Signal(len(requests), name=f"{name}_grant")
    requests = _sig(m, requests, f"{name}_requests")
    advance = _sig(m, advance, f"{name}_advance")
    parts = list(zip(sizes, _segments(requests, sizes), advance, strict=True))
    # Flat and grouped segments are computed apart, each kind on the concatenation of its
    # segments, and put back in order; a segment of one requester grants it.
    got = {}
    small = [part for part in parts if 1 < part[0] <= _FLAT]
    if small:
        flat = _flat(m, Cat(seg for _, seg, _ in small), [n for n, _, _ in small],
                     [adv for _, _, adv in small], name)
        got.update(zip((id(seg) for _, seg, _ in small),
                       _segments(flat, [n for n, _, _ in small]), strict=True))
    big = [part for part in parts if part[0] > _FLAT]
    if big:
        groups, tops = [], []
        for n, _, _ in big:
            size = math.isqrt(n - 1) + 1
            tops.append(len(range(0, n, size)))
            groups += [min(size, n - start) for start in range(0, n, size)]
        members = _sig(m, Cat(seg for _, seg, _ in big), f"{name}_members")
        # per grouped segment, round robin among its groups (``top``), then within each
        top = _arbitrate(m, Cat(group.any() for group in _segments(members, groups)), tops,
                         Cat(adv for _, _, adv in big), f"{name}_top")
        top_adv = Cat(adv.replicate(k) for (_, _, adv), k in zip(big, tops, strict=True))
        inner = _arbitrate(m, members, groups, top_adv & top, f"{name}_in")
        chosen = _sig(m, inner & _spread(top, groups), f"{name}_chosen")
        got.update(zip((id(seg) for _, seg, _ in big),
                       _segments(chosen, [n for n, _, _ in big]), strict=True))
    m.d.comb += grant.eq(Cat(got.get(id(seg), seg) for _, seg, _ in parts))
    return grant


def _flat(m, requests, sizes, advance, name):
    """Flat round-robin arbiters (see :func:`_arbitrate`; ``advance`` is a list of bits),
    all in a few vector operations.

    Each segment's pointer ``last`` is one-hot; the requesters after it go first, in
    circular order: the first requester after ``last`` if there is one, else the first
    requester. Written as AND-OR terms (no ``x & -x`` trick): an adder would become a carry
    chain, which logic synthesis cannot merge with the surrounding LUTs.
    """
    requests = _sig(m, requests, f"{name}_flat_requests")
    ends = [sum(sizes[:i + 1]) - 1 for i in range(len(sizes))]
    last = Signal(len(requests), init=sum(1 << end for end in ends), name=name)
    later = _sig(m, requests & _before(m, last, sizes), f"{name}_later")
    seen_later, seen = _through(m, later, sizes), _through(m, requests, sizes)
    first_later = later & ~_shift_in(seen_later, sizes)
    first = requests & ~_shift_in(seen, sizes)
    any_later = _spread([seen_later[end] for end in ends], sizes)
    grant = _sig(m, (first_later & any_later) | (first & ~any_later), f"{name}_flat")
    # a segment's pointer moves on when it is advanced and grants (has a request)
    move = _spread([adv & seen[end] for adv, end in zip(advance, ends, strict=True)], sizes)
    m.d.sync += last.eq((grant & move) | (last & ~move))
    return grant


def _segments(value, sizes):
    """``value`` cut into consecutive slices of ``sizes``."""
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [value[start:start + n] for start, n in zip(starts, sizes, strict=True)]


def _spread(bits, sizes):
    """``bits[i]`` (small values of one bit: each is copied ``sizes[i]`` times) repeated
    over segment ``i``."""
    return Cat(bit.replicate(n) for bit, n in zip(bits, sizes, strict=True))


def _through(m, value, sizes):
    """Bit ``i``: some bit of ``value`` at or below ``i`` in its segment is set, by
    doubling steps (shifts within segments and ORs, as many as the longest segment's bits)."""
    width = len(value)
    offset = [i for n in sizes for i in range(n)]    # position within the segment
    step = 1
    while step < max(sizes):
        within = Const(sum(1 << i for i in range(width) if offset[i] >= step), width)
        value = _sig(m, value | (Cat(Const(0, step), value[:width - step]) & within),
                     "through")
        step *= 2
    return value


def _shift_in(seen, sizes):
    """``seen`` (see :func:`_through`) moved up one bit within each segment: bit ``i``,
    some bit below ``i`` in its segment is set."""
    width = len(seen)
    starts = Const(sum(1 << (sum(sizes[:i])) for i in range(len(sizes))), width)
    return Cat(0, seen[:width - 1]) & ~starts


def _before(m, value, sizes):
    """Bit ``i``: some bit of ``value`` below ``i`` in its segment is set."""
    return _shift_in(_through(m, value, sizes), sizes)


def _sig(m, value, name):
    """``value`` through a comb signal: Amaranth copies an expression into every use, and
    the levels of an arbiter use each other's results many times."""
    sig = Signal(len(value), name=name)
    m.d.comb += sig.eq(value)
    return sig


# Requesters up to which the arbiter is one flat level of AND-OR terms.
_FLAT = 6
