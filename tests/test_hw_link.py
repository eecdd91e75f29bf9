"""Link layer over the link model: ordering, credits, recovery from bit errors and lane loss."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from optnet.hw.flit import FlitFormat
from optnet.hw.link import LinkConfig, LinkLayer
from optnet.hw.linkmodel import LinkModel

FMT = FlitFormat(width=32, vcs=2, id_bits=3)


def link_pair(cfg: LinkConfig, phy_period: float, phase: float = 0.0, **model):
    """Two link layers ``a`` and ``b`` joined by a link model each way (``model``: its
    keyword arguments), the network clock at 10 ns: ``(sim, a, b, ab, ba)``."""
    m = Module()
    m.domains.phy = ClockDomain()
    m.submodules.a = a = LinkLayer(cfg)
    m.submodules.b = b = LinkLayer(cfg)
    sim = Simulator(m)
    sim.add_clock(10e-9)
    sim.add_clock(phy_period, domain="phy", phase=phase)
    seed = model.pop("seed", 0)
    ab = LinkModel(a.phy_tx, b.phy_rx, a.phy_up, "phy", cfg.phy_width, seed=seed, **model)
    ba = LinkModel(b.phy_tx, a.phy_rx, b.phy_up, "phy", cfg.phy_width, seed=seed + 1, **model)
    sim.add_testbench(ab.process, background=True)
    sim.add_testbench(ba.process, background=True)
    return sim, a, b, ab, ba


def run_link(count=400, ber=0.0, fail=(), phy_width=32, seed=0, cycles=60000):
    cfg = LinkConfig(FMT, phy_width, "phy", depth=8, window=16, timeout=200)
    # PHY user clock unrelated to the network clock
    sim, a, b, ab, ba = link_pair(cfg, 7e-9, latency=6, ber=ber, fail=fail, seed=seed)
    rng = random.Random(seed)
    sent = [(rng.getrandbits(32), rng.randrange(2)) for _ in range(count)]
    got, credits = [], [0, 0]
    stats = {}

    async def bench(ctx):
        i = 0
        for _ in range(cycles):
            if i < len(sent) and rng.random() < 0.7:
                word, vc = sent[i]
                ctx.set(a.tx_flit.valid, 1)
                ctx.set(a.tx_flit.payload, {"data": word, "vc": vc, "head": 1, "tail": 1})
            else:
                ctx.set(a.tx_flit.valid, 0)
            took = ctx.get(a.tx_flit.valid) and ctx.get(a.tx_flit.ready)
            pulse = 0
            if ctx.get(b.rx_flit.valid):
                flit = ctx.get(b.rx_flit.payload)
                got.append((flit.data, flit.vc))
                pulse = 1 << flit.vc     # B's router frees the buffer at once
            ctx.set(b.cred_local, pulse)
            for v in range(2):
                credits[v] += ctx.get(a.cred_remote) >> v & 1
            await ctx.tick()
            i += took
            if len(got) == count and sum(credits) == count:
                break
        stats.update(crc=ctx.get(b.crc_errors) + ctx.get(a.crc_errors),
                     resent=ctx.get(a.resent), flipped=ab.flipped + ba.flipped)

    sim.add_testbench(bench)
    sim.run()
    return sent, got, credits, stats


def test_in_order_with_credits():
    sent, got, credits, stats = run_link()
    assert got == sent
    assert credits == [sum(1 for _, v in sent if v == k) for k in range(2)]
    assert stats["crc"] == 0


@pytest.mark.parametrize("phy_width", [16, 64, 128])
def test_frames_span_phy_widths(phy_width):
    sent, got, _, _ = run_link(count=100, phy_width=phy_width)
    assert got == sent


@pytest.mark.slow     # the fast tier's retransmission test is the lane failure below
def test_recovers_every_error_at_ber_1e_4():
    sent, got, credits, stats = run_link(count=1500, ber=1e-4, seed=3, cycles=200000)
    assert stats["flipped"] > 10, "the run must actually inject errors"
    assert stats["crc"] > 0 and stats["resent"] > 0
    assert got == sent, "loss, duplication or reordering"
    assert credits == [sum(1 for _, v in sent if v == k) for k in range(2)]


def test_recovers_from_lane_failure():
    sent, got, credits, _ = run_link(count=400, fail=((300, 900, 1),), cycles=100000)
    assert got == sent
    assert credits == [sum(1 for _, v in sent if v == k) for k in range(2)]
