"""Arbiters for the router's allocators.

Amaranth has no arbiter in its standard library (``lib`` has FIFOs, CRCs, CDC, memories
and streams), so this module is the one place that writes one.
"""

from __future__ import annotations

import math

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RoundRobin"]


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
            self._groups(m, requests)
            return m
        # ``last`` is one-hot; the requesters after it go first, in circular order. Written
        # as plain AND-OR terms (no ``x & -x`` trick): an adder would become a carry chain,
        # which logic synthesis cannot merge with the surrounding LUTs.
        last = Signal(n, init=1 << (n - 1))
        for i in range(n):
            wins = []
            for k in range(n):
                ahead = [j for j in range(n) if (j - k - 1) % n < (i - k - 1) % n]
                wins.append(last[k] & ~Cat(requests[j] for j in ahead).any()
                            if ahead else last[k])
            m.d.comb += self.grant[i].eq(requests[i] & Cat(wins).any())
        with m.If(self.advance & self.grant.any()):
            m.d.sync += last.eq(self.grant)
        return m

    def _groups(self, m, requests):
        # Many requesters: round robin among groups, and within the chosen group. Each term
        # of a flat arbiter grows with the square of the requesters; two levels keep the
        # arbiter small and no deeper. A requester waits at most (groups x group size) grants.
        n = self.count
        size = math.isqrt(n - 1) + 1
        starts = range(0, n, size)
        top = RoundRobin(len(starts))
        m.submodules.top = top
        m.d.comb += top.advance.eq(self.advance)
        for g, start in enumerate(starts):
            members = requests[start:start + size]
            sub = RoundRobin(len(members))
            m.submodules[f"group{g}"] = sub
            m.d.comb += [top.requests[g].eq(members.any()), sub.requests.eq(members),
                         sub.advance.eq(self.advance & top.grant[g]),
                         self.grant[start:start + size].eq(
                             Mux(top.grant[g], sub.grant, 0))]


# Requesters up to which the arbiter is one flat level of AND-OR terms.
_FLAT = 6
