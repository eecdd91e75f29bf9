"""Round-robin arbiters, flat and two-level: one-hot grants among the requests, and no
requester that keeps asking waits longer than the arbiter's bound."""

from __future__ import annotations

import math
import random

import pytest
from amaranth.sim import Simulator

from optnet.hw.alloc import RoundRobin


@pytest.mark.parametrize("count", [2, 5, 10, 11])
def test_round_robin_grants_one_request_and_never_starves(count):
    dut = RoundRobin(count)
    rng = random.Random(count)
    size = math.isqrt(count - 1) + 1
    # flat: each requester within ``count`` grants; two-level: groups x group size
    bound = count if count <= 6 else -(-count // size) * size
    waits = {"max": 0}

    async def bench(ctx):
        waiting = [0] * count
        persistent = {rng.randrange(count) for _ in range(3)}
        for _ in range(2000):
            requests = [i in persistent or rng.random() < 0.5 for i in range(count)]
            advance = rng.random() < 0.8
            ctx.set(dut.requests, sum(r << i for i, r in enumerate(requests)))
            ctx.set(dut.advance, advance)
            grant = ctx.get(dut.grant)
            if any(requests):
                assert grant and grant & (grant - 1) == 0, "grant must be one-hot"
                assert requests[grant.bit_length() - 1], "grant to a requester"
            else:
                assert grant == 0
            if advance and grant:
                for i in persistent:
                    waiting[i] = 0 if grant >> i & 1 else waiting[i] + 1
                    waits["max"] = max(waits["max"], waiting[i])
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert 0 < waits["max"] < bound


def _reference_grant(requests, last, priority, levels):
    """The first requester after ``last`` (an index; None: requester 0 first) in circular
    order among those of the highest requesting priority level; None if none requests."""
    n = len(requests)
    asking = [i for i in range(n) if requests[i]]
    if not asking:
        return None
    if levels > 1:
        top = max(priority[i] for i in asking)
        asking = [i for i in asking if priority[i] == top]
    start = (n - 1 if last is None else last) + 1
    return min(asking, key=lambda i: (i - start) % n)


@pytest.mark.parametrize(("count", "levels"), [(1, 1), (2, 1), (3, 1), (4, 1), (2, 2), (3, 2)])
def test_round_robin_grant_matches_reference(count, levels):
    """:func:`round_robin_grant`, the arbiter whose pointer the caller keeps (the router's
    choice of a VC per input in stage A), on every request pattern, pointer and priority."""
    from amaranth.hdl import Module, Signal

    from optnet.hw.alloc import round_robin_grant

    requests, last = Signal(count), Signal(count)
    prio = [Signal(1, name=f"prio{i}") for i in range(count)]
    grant = Signal(count)
    m = Module()
    m.d.comb += grant.eq(round_robin_grant(requests, last, prio, levels))
    lasts = [None, *range(count)]
    prios = range(1 << count) if levels > 1 else [0]

    async def bench(ctx):
        for pattern in range(1 << count):
            for ptr in lasts:
                for pr in prios:
                    ctx.set(requests, pattern)
                    ctx.set(last, 0 if ptr is None else 1 << ptr)
                    for i in range(count):
                        ctx.set(prio[i], pr >> i & 1)
                    want = _reference_grant([pattern >> i & 1 for i in range(count)], ptr,
                                            [pr >> i & 1 for i in range(count)], levels)
                    assert ctx.get(grant) == (0 if want is None else 1 << want), (
                        pattern, ptr, pr)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
