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
