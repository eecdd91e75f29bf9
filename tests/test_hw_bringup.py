"""Bring-up traffic generator and checker against their reference model."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from optnet.hw.bringup import (
    SEQ_BITS,
    BringUp,
    TrafficCheck,
    TrafficGen,
    expected_packet,
    seed,
)
from optnet.hw.uart import READ
from optnet.plan import plan
from optnet.plan.configs import EndpointConfig, FlitFormat

from .conftest import linted_example
from .test_hw_uart import UartListener, uart_line

FMT = FlitFormat(width=256, vcs=2, id_bits=2)


def _cfg(width, node, **kw):
    return EndpointConfig(FMT, node, 0, width, max_packet=8, nodes=(0, 1, 2, 3), **kw)


def _run(width, cycles, length=5, gap=0, corrupt=None, drop=None, ready_p=0.7, **kw):
    """Node 1's generator feeds the checkers of nodes 0, 2 and 3 (each beat to its
    ``tdest``'s), which take what their ready lets through. ``corrupt``: (packet, beat, bit)
    to flip in the n-th packet sent; ``drop``: a packet number not delivered. Returns the
    packets each checker saw (beats' tdata) and the checkers' counters."""
    m = Module()
    m.submodules.gen = gen = TrafficGen(_cfg(width, 1, **kw))
    checks = {n: TrafficCheck(_cfg(width, n)) for n in (0, 2, 3)}
    for n, c in checks.items():
        m.submodules[f"check{n}"] = c
    sim = Simulator(m)
    sim.add_clock(1e-8)
    seen = {n: [] for n in checks}
    counters = {}

    async def bench(ctx):
        rng = random.Random(width)
        ctx.set(gen.node_id, 1)
        for n, c in checks.items():
            ctx.set(c.node_id, n)
        ctx.set(gen.enable, 1)
        ctx.set(gen.length, length)
        ctx.set(gen.gap, gap)
        packet, beats, sent = 0, [], 0
        for _ in range(cycles):
            ready = rng.random() < ready_p
            ctx.set(gen.s_axis.ready, ready)
            for c in checks.values():
                ctx.set(c.m_axis.valid, 0)
            if ready and ctx.get(gen.s_axis.valid):
                beat = ctx.get(gen.s_axis.payload)
                data = beat.tdata
                if corrupt and corrupt[:2] == (packet, len(beats)):
                    data ^= 1 << corrupt[2]
                beats.append(data)
                if drop != packet:
                    c = checks[beat.tdest]
                    ctx.set(c.m_axis.valid, 1)
                    ctx.set(c.m_axis.payload, {"tdata": data, "tlast": beat.tlast, "tid": 1})
                if beat.tlast:
                    if drop != packet:
                        seen[beat.tdest].append(beats)
                    packet, beats = packet + 1, []
            await ctx.tick()
            sent = ctx.get(gen.sent)
        counters["sent"] = sent
        for n, c in checks.items():
            counters[n] = (ctx.get(c.packets), ctx.get(c.out_of_sequence), ctx.get(c.bad_beats))

    sim.add_testbench(bench)
    sim.run()
    return seen, counters


@pytest.mark.parametrize("width", [8, 32, 256])
def test_generator_sends_the_reference_packets_to_every_other_node_in_turn(width):
    seen, counters = _run(width, 300, length=5, gap=2)
    total = sum(len(p) for p in seen.values())
    assert total >= 12 and counters["sent"] == total
    for n, packets in seen.items():
        assert packets == [expected_packet(1, n, k, width, 5) for k in range(len(packets))]
        assert counters[n] == (len(packets), 0, 0)
    # in turn: 0, 2, 3, 0, ...
    assert [len(seen[n]) for n in (0, 2, 3)] == [total // 3 + (i < total % 3) for i in range(3)]


def test_checker_counts_a_flipped_bit_and_a_lost_packet():
    _, counters = _run(32, 400, length=4, corrupt=(4, 2, 17), drop=6)
    # packet 4 goes to node 2 (the second of its round), packet 6 to node 0
    assert counters[2][2] == 1 and counters[2][1] == 0
    assert counters[0][1] == 1 and counters[0][2] == 0
    assert counters[3][1:] == (0, 0)


def test_a_flipped_sequence_number_shows_as_both():
    # Bit 3 of the first beat is in the sequence number: the packet and the one after are
    # out of sequence (the checker follows the number it read), and the packet's beats
    # differ from the ones of the number read.
    _, counters = _run(32, 400, length=4, corrupt=(3, 0, 3))
    assert counters[0][1:] == (2, 4)


def test_length_is_cut_to_what_one_packet_carries():
    seen, _ = _run(32, 200, length=100)
    assert {len(p) for packets in seen.values() for p in packets} == {7}


def test_on_a_direct_node_the_first_beat_carries_the_length_in_tuser():
    gen = TrafficGen(_cfg(32, 1, length_bits=16))
    assert gen.limit() == (1 << 16) - 1
    sim = Simulator(gen)
    sim.add_clock(1e-8)
    users = []

    async def bench(ctx):
        ctx.set(gen.node_id, 1)
        ctx.set(gen.enable, 1)
        ctx.set(gen.length, 3)
        ctx.set(gen.s_axis.ready, 1)
        for _ in range(12):
            if ctx.get(gen.s_axis.valid):
                users.append(ctx.get(gen.s_axis.payload.tuser))
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert users[:6] == [3, 0, 0, 3, 0, 0]


def test_seed_is_never_zero_and_holds_the_sequence_number():
    assert seed(0, 0, 0) == 1
    assert seed(3, 2, 5) >> 1 & ((1 << SEQ_BITS) - 1) == 5
    assert seed(1, 0, 0) != seed(0, 1, 0)


def test_bring_up_kits_of_a_cluster_exchange_traffic_and_answer_over_the_uart():
    """The kits of the four ULX3S ring nodes, their endpoints joined by an ideal network
    (each beat to its ``tdest``'s kit, the source in ``tid``): every node's checker counts
    packets from the others and no error, and node 0's UART answers a read of its magic and
    of its received packets, which match its checker."""
    plans = plan(linted_example("ulx3s_ring4").routed)
    m = Module()
    kits = [BringUp(p, 4 if p.node_id == 0 else None) for p in plans]
    for p, kit in zip(plans, kits, strict=True):
        m.submodules[p.node] = kit
    sim = Simulator(m)
    sim.add_clock(1e-8)
    got = {}

    async def bench(ctx):
        for p, kit in zip(plans, kits, strict=True):
            ctx.set(kit.node_id, p.node_id)
            ctx.set(kit.link_up, 0b11)
        bits = uart_line([READ, 0x00, 0x00, READ, 0x10, 0x04], 4, gap=1, idle=5)
        host, owner = UartListener(4), {}
        for cycle in range(1200):
            ctx.set(kits[0].uart_rx, bits[cycle] if cycle < len(bits) else 1)
            host.step(ctx.get(kits[0].uart_tx))
            # the network: each beat to its destination's endpoint, a packet at a time
            for kit in kits:
                ctx.set(kit.app_rx.valid, 0)
            taken = set()
            for src, kit in enumerate(kits):
                ready = 0
                if ctx.get(kit.app_tx.valid):
                    beat = ctx.get(kit.app_tx.payload)
                    if owner.get(beat.tdest, src) == src and beat.tdest not in taken:
                        taken.add(beat.tdest)
                        owner[beat.tdest] = src
                        if beat.tlast:
                            del owner[beat.tdest]
                        dst = kits[beat.tdest]
                        ctx.set(dst.app_rx.valid, 1)
                        ctx.set(dst.app_rx.payload, {"tdata": beat.tdata, "tlast": beat.tlast,
                                                     "tid": src})
                        ready = 1
                ctx.set(kit.app_tx.ready, ready)
            await ctx.tick()
        got["answer"] = host.received
        got["trouble"] = [ctx.get(k.trouble) for k in kits]

    sim.add_testbench(bench)
    sim.run()
    answer = got["answer"]
    assert bytes(answer[:4]) == b"OPTN"
    assert int.from_bytes(bytes(answer[4:8]), "big") > 10     # app.received on node 0
    assert got["trouble"] == [0, 0, 0, 0]
