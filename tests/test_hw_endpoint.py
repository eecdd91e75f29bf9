"""Managed endpoint credit accounting: a receiver grants credit for the unicast packets its
user takes, never for broadcasts (which spend no budget at the sender); and the sender's
rate is what the model's credit rule says."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from amaranth.hdl import Module
from amaranth.lib import fifo
from amaranth.sim import Simulator

from optnet.hw.endpoint import _LFSR_TAPS, Endpoint, _RamFIFO
from optnet.model import ENDPOINT_CREDIT_CYCLES, CreditCheck
from optnet.plan.configs import KIND_CREDIT, EndpointConfig, FlitFormat

FMT = FlitFormat(width=32, vcs=2, id_bits=2)


def _grants_for(packets):
    """Feed ``packets`` (mcast flags, each from source 2, one beat) to a managed endpoint
    whose user takes everything; return the credit packets it sends as (dst, amount)."""
    cfg = EndpointConfig(FMT, node_id=0, index=0, width=16, max_packet=3, buffer=8,
                         credit=2, offset=0, init_budget=1)
    dut = Endpoint(cfg)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    grants, delivered = [], []

    async def bench(ctx):
        flits = []
        for i, mcast in enumerate(packets):
            flits += [(FMT.pack_header(dst=0, src=2, mcast=mcast), 1, 0), (100 + i, 0, 1)]
        ctx.set(dut.m_axis.ready, 1)
        ctx.set(dut.net_tx.ready, 1)
        for _ in range(len(flits) + 40):
            if flits:
                data, head, tail = flits[0]
                ctx.set(dut.net_rx.valid, 1)
                ctx.set(dut.net_rx.payload, {"data": data, "head": head, "tail": tail})
            else:
                ctx.set(dut.net_rx.valid, 0)
            if flits and ctx.get(dut.net_rx.ready):
                flits.pop(0)
            if ctx.get(dut.m_axis.valid):
                delivered.append(ctx.get(dut.m_axis.payload).tdata)
            if ctx.get(dut.net_tx.valid):
                header = FMT.unpack_header(ctx.get(dut.net_tx.payload).data)
                if header["kind"] == KIND_CREDIT:
                    grants.append((header["dst"], header["arg"]))
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert delivered == [100 + i for i in range(len(packets))]
    return grants


def test_unicast_packets_earn_credit():
    assert _grants_for([0, 0, 0, 0]) == [(2, 2), (2, 2)]


def test_broadcasts_earn_no_credit():
    assert _grants_for([1, 0, 1, 1, 0, 1]) == [(2, 2)]


# ------------------------------------------------------------------- the credit rule on RTL

def _sender_starts(init_budget: int, credit: int, offset: int, delay: int, max_packet: int,
                   cycles: int) -> list[int]:
    """Cycles at which a managed endpoint starts packets to another whose user takes every
    packet at once, over a network that delays every flit ``delay`` cycles each way."""
    from amaranth.hdl import Module

    cfgs = [EndpointConfig(FMT, node_id=i, index=0, width=16, max_packet=max_packet, buffer=64,
                           credit=credit, offset=offset, init_budget=init_budget)
            for i in (0, 1)]
    m = Module()
    m.submodules.tx = tx = Endpoint(cfgs[0])
    m.submodules.rx = rx = Endpoint(cfgs[1])
    sim = Simulator(m)
    sim.add_clock(1e-8)
    starts: list[int] = []

    async def bench(ctx):
        # (cycle it arrives, flit) per direction
        lines: dict = {rx.net_rx: [], tx.net_rx: []}
        beat = 0
        for port in (tx.net_tx, rx.net_tx):
            ctx.set(port.ready, 1)
        ctx.set(rx.m_axis.ready, 1)
        ctx.set(tx.s_axis.valid, 1)
        for t in range(cycles):
            ctx.set(tx.s_axis.payload, {"tdata": beat, "tdest": 1, "tuser": 0,
                                        "tlast": int(beat % (max_packet - 1) == max_packet - 2)})
            for port, line in lines.items():
                ready = bool(line) and line[0][0] <= t
                ctx.set(port.valid, ready)
                if ready:
                    ctx.set(port.payload, line[0][1])
            beat += ctx.get(tx.s_axis.ready)
            for port, line in ((tx.net_tx, lines[rx.net_rx]), (rx.net_tx, lines[tx.net_rx])):
                if ctx.get(port.valid):
                    flit = ctx.get(port.payload)
                    if port is tx.net_tx and flit.head:
                        starts.append(t)
                    line.append((t + delay, {"data": flit.data, "head": flit.head,
                                             "tail": flit.tail, "vc": flit.vc}))
            for port, line in lines.items():
                if line and line[0][0] <= t and ctx.get(port.ready):
                    line.pop(0)
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    return starts


@pytest.mark.parametrize(("init_budget", "credit", "offset", "delay"), [
    (1, 8, 5, 6),      # the window (6 packets) just covers the loop
    (1, 8, 5, 7),      # one cycle more: the sender waits
    (1, 4, 0, 10),     # no offset: one packet's window
    (2, 8, 3, 20),     # a second budget adds a whole credit to the window
    (3, 4, 1, 40)])
def test_credit_rule_matches_the_rtl(init_budget, credit, offset, delay):
    """The model's credit rule (:class:`optnet.model.CreditCheck`) gives the sender's
    steady-state rate that the RTL reaches, cycle for cycle."""
    flits = 3
    starts = _sender_starts(init_budget, credit, offset, delay, flits, 600)
    # the loop: the head there, its tail, the grant back, and the endpoints' own cycles
    loop = Fraction(2 * delay + flits - 1 + ENDPOINT_CREDIT_CYCLES)
    check = CreditCheck(init_budget, credit, offset, loop, Fraction(flits))
    # one budget's worth of packets, from late in the run (the pattern repeats every one)
    burst = init_budget * credit
    span = starts[-1] - starts[-1 - burst]
    assert Fraction(burst * flits, span) == check.share
    assert check.sufficient == (span == burst * flits)


# ------------------------------------------------------------- the endpoints' block RAM FIFO

@pytest.mark.parametrize("k", sorted(k for k in _LFSR_TAPS if k <= 16))
def test_lfsr_taps_are_maximal(k):
    """Each LFSR of _RamFIFO visits every non-zero state before it repeats."""
    state, steps = 1, 0
    while True:
        feedback = 0
        for tap in _LFSR_TAPS[k]:
            feedback ^= state >> tap - 1 & 1
        state = (state << 1 | feedback) & (1 << k) - 1
        steps += 1
        if state == 1:
            break
    assert steps == (1 << k) - 1


@pytest.mark.parametrize("bypass", [False, True])
@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5, 8, 17, 32])
def test_ram_fifo_is_amaranths_fifo_cycle_for_cycle(depth, bypass):
    """_RamFIFO behaves at its ports as SyncFIFOBuffered (or with ``bypass`` as SyncFIFO) of
    the same depth, under random writes and reads, full and empty."""
    m = Module()
    m.submodules.dut = dut = _RamFIFO(8, depth, bypass=bypass)
    m.submodules.ref = ref = (fifo.SyncFIFO if bypass else fifo.SyncFIFOBuffered)(
        width=8, depth=depth)
    sim = Simulator(m)
    sim.add_clock(1e-8)
    rng = random.Random(depth)

    async def bench(ctx):
        for t in range(3000):
            # phases that fill the FIFO and phases that drain it
            bias = 0.8 if t // 200 % 2 else 0.2
            w_en, r_en, value = rng.random() < bias, rng.random() > bias, rng.randrange(256)
            for f in (dut, ref):
                ctx.set(f.w_en, w_en)
                ctx.set(f.w_data, value)
                ctx.set(f.r_en, r_en)
            assert ctx.get(dut.w_rdy) == ctx.get(ref.w_rdy), t
            assert ctx.get(dut.r_rdy) == ctx.get(ref.r_rdy), t
            if ctx.get(ref.r_rdy):
                assert ctx.get(dut.r_data) == ctx.get(ref.r_data), t
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
