"""The router's input buffer against a model of one queue per VC: random writes, pops and
reads; the fronts (stored and derived fields), whether an entry waits behind each, the data
read (synchronously, or asynchronously in the same cycle) and the local output's copy must
match the model. Shallow buffers keep their fronts in LUT RAM, deep ones (more than
``LUT_RAM_DEPTH`` per VC) in block RAM read synchronously; both must show the same fronts
in the same cycles, including where a written entry becomes the front at once (into an
empty queue, or beside the pop of a queue's last entry)."""

from __future__ import annotations

import random
from collections import deque

import pytest
from amaranth.lib import data
from amaranth.sim import Simulator

from optnet.hw.router import LUT_RAM_DEPTH, InputBuffer
from optnet.hw.verilog import to_verilog
from optnet.plan.configs import FlitFormat

FMT = FlitFormat(width=16, vcs=3, id_bits=2)
CTRL = data.StructLayout({"head": 1, "tail": 1, "tag": 6, "odd": 1})
#: ``odd`` is not stored but computed from the front's ``tag``.
DERIVED = {"odd": lambda c: c.tag.xor()}
DEEP = [LUT_RAM_DEPTH + 32, 2 * LUT_RAM_DEPTH, 4 * LUT_RAM_DEPTH]   # 96 (no power of two), 128, 256


@pytest.mark.parametrize(("depth", "local", "sync_read"), [
    (1, False, True), (2, False, True), (3, False, True), (4, False, True),
    (1, True, True), (3, True, True), (4, True, True),
    # (the router's LUT RAM buffers: the front of a queue read in the cycle it is asked for)
    (1, False, False), (3, False, False), (4, False, False),
    # deep buffers (fronts in block RAM), filled and drained in turn
    *[(d, local, True) for d in DEEP for local in (False, True)],
    (DEEP[1], False, False)])
def test_input_buffer_matches_queues(depth, local, sync_read):
    vcs = FMT.vcs
    dut = InputBuffer(FMT.flit, CTRL, vcs, depth, derived=DERIVED, local=local,
                      sync_read=sync_read)
    rng = random.Random(depth)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    checked = {"fronts": 0, "reads": 0, "local": 0}
    # cycles that test more than the entry behind a popped front: a write that is the front
    # next cycle, a pop that empties a queue, a full queue
    corners = {"into empty": 0, "pop and push the last": 0, "pop the last": 0, "full": 0}
    # A deep queue would neither fill nor empty again with writes at a constant rate: they
    # come in phases, each long enough to fill or drain every queue: mostly writes, then
    # mostly pops, then about as many writes as pops (near empty), often onto the queue
    # popped.
    deep = depth > LUT_RAM_DEPTH
    phase = 4 * depth * vcs if deep else None
    cycles = 3 * phase if deep else 3000

    async def bench(ctx):
        queues = [deque() for _ in range(vcs)]
        expect_data = None   # (data, head, tail) the last read must show this cycle
        expect_local = (0, 0, 0)   # the local copy: the flit read for it, held, or zero
        for cycle in range(cycles):
            stage = None if phase is None else ("fill", "drain", "hover")[cycle // phase]
            p_write = {None: 0.55, "fill": 0.9, "drain": 0.15, "hover": 0.5}[stage]
            p_pop = 0.6 if stage in (None, "fill") else 0.9
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
                    assert (front.head, front.tail, front.tag, front.odd) == (
                        head, tail, tag, tag.bit_count() % 2)
                    checked["fronts"] += 1
                corners["full"] += len(queues[v]) == depth
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
                if rng.random() < p_pop:
                    pop = 1 << v
            room = [v for v in range(vcs)
                    if len(queues[v]) - (pop >> v & 1) < depth]
            write = None
            if room and rng.random() < p_write:
                v = rng.choice(room)
                if stage == "hover" and pop and rng.random() < 0.5:
                    v = pop.bit_length() - 1
                entry = (rng.getrandbits(16), rng.getrandbits(1), rng.getrandbits(1),
                         rng.getrandbits(6))
                write = v
                ctx.set(dut.w_flit, {"data": entry[0], "head": entry[1], "tail": entry[2],
                                     "vc": v})
                # (``odd`` written is ignored)
                ctx.set(dut.w_ctrl, {"head": entry[1], "tail": entry[2], "tag": entry[3],
                                     "odd": rng.getrandbits(1)})
            for v in range(vcs):
                left = len(queues[v]) - (pop >> v & 1)
                if left == 0 and write == v:
                    corners["into empty" if not pop >> v & 1 else "pop and push the last"] += 1
                elif left == 0 and pop >> v & 1:
                    corners["pop the last"] += 1
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
    assert min(corners.values()) > (20 if deep else 0), corners


@pytest.mark.parametrize("depth", [4, LUT_RAM_DEPTH, LUT_RAM_DEPTH + 1])
@pytest.mark.parametrize("block", [False, True])
def test_block_buffers_ask_for_block_ram(block, depth):
    """``block`` only marks the flit storage for block RAM; the control memories stay LUT
    RAM (their reads are asynchronous) up to ``LUT_RAM_DEPTH`` and are block RAM, read
    synchronously, beyond it."""
    text = to_verilog(InputBuffer(FMT.flit, CTRL, FMT.vcs, depth, derived=DERIVED,
                                  block=block), "buf")
    deep = depth > LUT_RAM_DEPTH
    assert text.count('ram_style = "block"') == int(block) + deep * FMT.vcs
