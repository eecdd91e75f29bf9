"""The router's input buffer against a model of one queue per VC: random writes, pops and
reads; the fronts, whether an entry waits behind each, the data read (synchronously, or
asynchronously in the same cycle) and the local output's copy must match the model."""

from __future__ import annotations

import random
from collections import deque

import pytest
from amaranth.lib import data
from amaranth.sim import Simulator

from optnet.hw.router import InputBuffer
from optnet.hw.verilog import to_verilog
from optnet.plan.configs import FlitFormat

FMT = FlitFormat(width=16, vcs=3, id_bits=2)
CTRL = data.StructLayout({"head": 1, "tail": 1, "tag": 6})


@pytest.mark.parametrize(("depth", "local", "sync_read"), [
    (1, False, True), (2, False, True), (3, False, True), (4, False, True),
    (1, True, True), (3, True, True), (4, True, True),
    # (the router's LUT RAM buffers: the front of a queue read in the cycle it is asked for)
    (1, False, False), (3, False, False), (4, False, False)])
def test_input_buffer_matches_queues(depth, local, sync_read):
    vcs = FMT.vcs
    dut = InputBuffer(FMT.flit, CTRL, vcs, depth, local=local, sync_read=sync_read)
    rng = random.Random(depth)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    checked = {"fronts": 0, "reads": 0, "local": 0}

    async def bench(ctx):
        queues = [deque() for _ in range(vcs)]
        expect_data = None   # (data, head, tail) the last read must show this cycle
        expect_local = (0, 0, 0)   # the local copy: the flit read for it, held, or zero
        for _ in range(3000):
            if local:
                got = ctx.get(dut.local_data)
                assert (got.data, got.head, got.tail) == expect_local
                checked["local"] += expect_local != (0, 0, 0)
            # the fronts and the data read last cycle
            for v in range(vcs):
                assert ctx.get(dut.valid[v]) == bool(queues[v])
                assert ctx.get(dut.more[v]) == (len(queues[v]) > 1)
                if queues[v]:
                    word, head, tail, tag = queues[v][0]
                    front = ctx.get(dut.front[v])
                    assert (front.head, front.tail, front.tag) == (head, tail, tag)
                    checked["fronts"] += 1
            if expect_data is not None and sync_read:
                got = ctx.get(dut.data)
                assert (got.data, got.head, got.tail) == expect_data
                checked["reads"] += 1
            # this cycle: maybe read and/or pop one non-empty VC, maybe write one VC
            full = [v for v in range(vcs) if queues[v]]
            read = pop = 0
            if full and rng.random() < 0.6:
                v = rng.choice(full)
                word, head, tail, _ = queues[v][0]
                if rng.random() < 0.7:
                    read = 1
                    ctx.set(dut.read_vc, v)
                    expect_data = (word, head, tail)
                    if not sync_read:
                        got = ctx.get(dut.data)
                        assert (got.data, got.head, got.tail) == expect_data
                        checked["reads"] += 1
                if rng.random() < 0.6:
                    pop = 1 << v
            room = [v for v in range(vcs)
                    if len(queues[v]) - (pop >> v & 1) < depth]
            write = None
            if room and rng.random() < 0.55:
                v = rng.choice(room)
                entry = (rng.getrandbits(16), rng.getrandbits(1), rng.getrandbits(1),
                         rng.getrandbits(6))
                write = v
                ctx.set(dut.w_flit, {"data": entry[0], "head": entry[1], "tail": entry[2],
                                     "vc": v})
                ctx.set(dut.w_ctrl, {"head": entry[1], "tail": entry[2], "tag": entry[3]})
            ctx.set(dut.read, read)
            ctx.set(dut.pop, pop)
            ctx.set(dut.w_en, write is not None)
            if local:
                to_local, hold = read and rng.random() < 0.5, rng.random() < 0.5
                ctx.set(dut.local_read, to_local)
                ctx.set(dut.local_hold, hold)
                expect_local = expect_data if to_local else expect_local if hold else (0, 0, 0)
            await ctx.tick()
            for v in range(vcs):
                if pop >> v & 1:
                    queues[v].popleft()
            if write is not None:
                queues[write].append(entry)

    sim.add_testbench(bench)
    sim.run()
    assert checked["fronts"] > 2000 and checked["reads"] > 500
    assert checked["local"] > 300 or not local


@pytest.mark.parametrize("block", [False, True])
def test_block_buffers_ask_for_block_ram(block):
    """``block`` only marks the flit storage for block RAM; the control memories stay LUT
    RAM (their reads are asynchronous)."""
    text = to_verilog(InputBuffer(FMT.flit, CTRL, FMT.vcs, 4, block=block), "buf")
    assert text.count('ram_style = "block"') == int(block)
