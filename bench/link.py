#!/usr/bin/env python3
"""Link-layer efficiency measured in RTL simulation: payload bits per line bit.

Usage: python bench/link.py [--sizes 32,256,4096] [--configs bluedbm_20,...] [--window N]

For each configuration (the link of the first node of a shipped example: BlueDBM,
CusComNet, PlasticNet+ and OPTWEB) two link layers are joined by the link model
(:class:`optnet.hw.linkmodel.LinkModel`) with that link's one-way PHY and cable latency from
the report's model, the network clock the example asks for, and a PHY user clock that
carries exactly the link's payload capacity (lanes x line rate x line code, in words of the
PHY's user width). Side A sends back-to-back packets of one size on VC 0 whenever its link
layer takes a flit; side B's router frees every flit at once, so credits never limit (the
figure is the link's, not the router buffer's). Frames arrive whole, in bursts: from a
burst after 24 full frames' time (the queue, and with it the frames, has grown to full
size) to the first burst 16 full frames' time later, the payload B receives is divided by
the line bits the lanes carry in that time.

OPTWEB's example is a direct cluster (fully connected, ``flow_control: none``): there, two
direct switches of one port each, with their direct links, take the link layers' place;
side A sends back-to-back messages of one size, eager or rendezvous as the plan's
threshold says, and B's user takes every beat at once. The payload B's user receives over
200 messages' line time, after 20, is divided by the line bits in that time.

Printed per packet size: the measured payload bits per line bit, the same as a share of the
line code's payload capacity, and the report's bandwidth model
(:func:`optnet.report.bandwidth.optnet_packet`) for comparison. Targets (issue 18): on the
BlueDBM configuration >= 87 % of line bits (>= 90 % of the 64b/66b payload capacity) from
256 B up, beating BlueDBM's own 85 %; >= 70 % of line bits on the 32-bit-flit 8b/10b links
(CusComNet, PlasticNet+) at 512 B.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from fractions import Fraction
from pathlib import Path

from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optnet.hw.direct import DirectLink, DirectSwitch  # noqa: E402
from optnet.hw.link import LinkLayer  # noqa: E402
from optnet.hw.linkmodel import LinkModel  # noqa: E402
from optnet.lint import lint_file  # noqa: E402
from optnet.model import model_params  # noqa: E402
from optnet.plan import plan  # noqa: E402
from optnet.report.bandwidth import optnet_packet  # noqa: E402

CONFIGS = ("bluedbm_20", "cuscomnet_torus16", "plasticnet_ring4", "optweb_4")
SIZES = (32, 64, 128, 256, 512, 1024, 4096)

#: (configuration, packet bytes) -> least payload bits per line bit (issue 18).
TARGETS = {("bluedbm_20", s): 0.87 for s in SIZES if s >= 256} | {
    ("cuscomnet_torus16", 512): 0.70, ("plasticnet_ring4", 512): 0.70}

#: BlueDBM's own link (Aurora 64B/66B, its hand-written network): payload per line bit.
BLUEDBM = 0.85


class Config:
    """One example's link: its link-layer configuration, clocks and latency."""

    def __init__(self, stem: str, window: int = 0):
        result = lint_file(ROOT / "examples" / f"{stem}.yaml")
        if not result.ok:
            raise SystemExit(f"examples/{stem}.yaml does not lint clean")
        node = plan(result.routed, tables=False, one_per_role=True)[0]
        port = node.ports[0]
        params = model_params(result.cluster)
        link = next(lk for lk in result.cluster.links
                    if lk.a.node == node.node or lk.b.node == node.node)
        lp = params.link(link)
        self.stem = stem
        # a direct node's switch, with one port for the one link measured
        self.direct = None if node.direct is None else dataclasses.replace(node.direct,
                                                                           peers=1)
        # (a window other than the plan's, to see what the round trip costs)
        self.link = dataclasses.replace(port.link, window=window) if window else port.link
        self.lanes = len(port.lanes)
        self.line_rate = Fraction(port.line_rate)
        self.encoding = lp.encoding
        self.capacity = lp.payload_rate                    # payload bit/s of the lanes
        self.net_hz = Fraction(node.clock_hz)
        self.phy_hz = self.capacity / self.link.phy_width  # one user word per cycle
        self.latency_s = lp.latency + lp.length_m * params.cable_delay_per_m
        self.params = params
        self.cluster_link = link
        what = "flit" if self.direct is None else "direct switch beat"
        self.label = (f"{stem}: {port.phy} x{self.lanes} @ {float(self.line_rate) / 1e9:g} "
                      f"Gb/s, {what} {node.fmt.width} b, PHY word {self.link.phy_width} b, "
                      f"network {float(self.net_hz) / 1e6:g} MHz, PHY "
                      f"{float(self.phy_hz) / 1e6:.4g} MHz, one-way "
                      f"{float(self.latency_s) * 1e9:.0f} ns")

    @property
    def line_bps(self) -> Fraction:
        return self.lanes * self.line_rate


def measure(cfg: Config, size: int) -> float:
    """Payload bits per line bit of back-to-back ``size``-byte packets (see the module
    docstring)."""
    if cfg.direct is not None:
        return _measure_direct(cfg, size)
    link = cfg.link
    width = link.fmt.width
    body = max(1, math.ceil(8 * size / width))
    pd = link.phy_domain
    m = Module()
    m.domains += ClockDomain(pd)
    m.submodules.a = a = LinkLayer(link)
    m.submodules.b = b = LinkLayer(link)
    sim = Simulator(m)
    net_period = float(1 / cfg.net_hz)
    phy_period = float(1 / cfg.phy_hz)
    sim.add_clock(net_period)
    sim.add_clock(phy_period, domain=pd, phase=phy_period / 3)
    latency = max(1, round(float(cfg.latency_s) / phy_period))
    for tx, rx, up, seed in ((a.phy_tx, b.phy_rx, a.phy_up, 1),
                             (b.phy_tx, a.phy_rx, b.phy_up, 2)):
        sim.add_testbench(LinkModel(tx, rx, up, pd, link.phy_width, latency=latency,
                                    seed=seed).process, background=True)
    # Frames grow to their full size only as flits queue up (a few more per frame when the
    # network clock is a little faster than the line), and arrive whole, in bursts. So the
    # measurement starts at a burst after 24 full frames' time and ends at the first burst
    # 16 full frames' time later, counting what was delivered in between: whole frames,
    # over whole frame periods.
    frame_s = (link.frame.max_flits + link.frame.header_units) * link.fmt.width / cfg.capacity
    start_after = float(24 * frame_s + 4 * cfg.latency_s)
    span = float(16 * frame_s)
    per_flit = 8 * size / body           # payload bits of a body flit
    result: dict[str, float] = {}

    async def bench(ctx):
        sent = 0
        before = False
        t0 = payload = None
        cycle = 0
        while "rate" not in result:
            position = sent % (body + 1)
            ctx.set(a.tx_flit.valid, 1)
            ctx.set(a.tx_flit.payload, {"data": sent, "head": position == 0,
                                        "tail": position == body, "vc": 0})
            if ctx.get(a.tx_flit.ready):
                sent += 1
            received = ctx.get(b.rx_flit.valid)
            now = cycle * net_period
            if received and not before:           # a burst starts
                if t0 is None and now >= start_after:
                    t0, payload = now, 0.0
                elif t0 is not None and now >= t0 + span:
                    result["rate"] = payload / (now - t0)
            if received and t0 is not None and not ctx.get(b.rx_flit.payload).head:
                payload += per_flit
            before = received
            ctx.set(b.cred_local, 1 if received else 0)
            await ctx.tick()
            cycle += 1

    sim.add_testbench(bench)
    sim.run()
    return result["rate"] / float(cfg.line_bps)


def _measure_direct(cfg: Config, size: int) -> float:
    """Payload bits per line bit of back-to-back ``size``-byte messages between two direct
    switches (see the module docstring)."""
    link, switch = cfg.link, cfg.direct
    beats = max(1, math.ceil(8 * size / switch.width))
    pd = link.phy_domain
    m = Module()
    m.domains += ClockDomain(pd)
    nodes = []
    for name in "ab":
        m.submodules[f"{name}_switch"] = sw = DirectSwitch(switch)
        m.submodules[f"{name}_link"] = dl = DirectLink(link)
        m.d.comb += [dl.tx.valid.eq(sw.tx[0].valid), dl.tx.payload.eq(sw.tx[0].payload),
                     sw.tx[0].ready.eq(dl.tx.ready), sw.rx[0].valid.eq(dl.rx.valid),
                     sw.rx[0].payload.eq(dl.rx.payload), sw.up[0].eq(dl.up)]
        nodes.append((sw, dl))
    (a, a_link), (b, b_link) = nodes
    sim = Simulator(m)
    net_period = float(1 / cfg.net_hz)
    phy_period = float(1 / cfg.phy_hz)
    sim.add_clock(net_period)
    sim.add_clock(phy_period, domain=pd, phase=phy_period / 3)
    latency = max(1, round(float(cfg.latency_s) / phy_period))
    for tx, rx, up, seed in ((a_link.phy_tx, b_link.phy_rx, a_link.phy_up, 1),
                             (b_link.phy_tx, a_link.phy_rx, b_link.phy_up, 2)):
        sim.add_testbench(LinkModel(tx, rx, up, pd, link.phy_width, latency=latency,
                                    seed=seed).process, background=True)
    message_s = 8 * size / float(cfg.capacity)
    start_after = float(20 * message_s + 8 * cfg.latency_s)
    span = float(200 * message_s)
    result: dict[str, float] = {}

    async def bench(ctx):
        sent = 0
        t0 = payload = None
        cycle = 0
        ctx.set(b.m_axis.ready, 1)
        while "rate" not in result:
            k = sent % beats
            ctx.set(a.s_axis.valid, 1)
            ctx.set(a.s_axis.payload, {"tdata": sent, "tlast": k == beats - 1, "tdest": 0,
                                       "tuser": beats if k == 0 else 0, "tid": 0})
            if ctx.get(a.s_axis.ready):
                sent += 1
            now = cycle * net_period
            if t0 is None and now >= start_after:
                t0, payload = now, 0.0
            elif t0 is not None and now >= t0 + span:
                result["rate"] = payload / (now - t0)
            if t0 is not None and ctx.get(b.m_axis.valid):
                payload += 8 * size / beats
            await ctx.tick()
            cycle += 1

    sim.add_testbench(bench)
    sim.run()
    return result["rate"] / float(cfg.line_bps)


def modelled(cfg: Config, size: int) -> float:
    """The report's bandwidth model for the same packets, payload bits per line bit."""
    width = cfg.link.fmt.width if cfg.direct is None else cfg.direct.width
    beats = max(1, math.ceil(8 * size / width))
    payload, overhead = optnet_packet(cfg.params, cfg.cluster_link, beats, width)
    share = Fraction(8 * size, payload + overhead)
    return float(share * cfg.capacity / cfg.line_bps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="packet sizes in bytes, comma-separated")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="examples whose first link is measured")
    parser.add_argument("--window", type=int, default=0,
                        help="replay window in flits instead of the plan's (0: the plan's)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("Link-layer efficiency in RTL simulation (two optnet link layers through the link "
          "model): payload bits per line bit")
    print(f"Reference: BlueDBM's link carries {BLUEDBM:.0%} of the line rate; the 64b/66b "
          "limit is 97 %.")
    for stem in args.configs.split(","):
        cfg = Config(stem, args.window)
        print(f"\n{cfg.label}")
        print(f"{'packet B':>9} {'measured':>9} {'of capacity':>12} {'model':>7} "
              f"{'target':>7}")
        for size in sizes:
            eff = measure(cfg, size)
            cap = eff * float(cfg.line_bps / cfg.capacity)
            target = TARGETS.get((stem, size))
            shown = f"{target:>7.0%}" if target else f"{'':>7}"
            flag = "  (below target)" if target and eff < target else ""
            print(f"{size:>9} {eff:>9.1%} {cap:>12.1%} {modelled(cfg, size):>7.1%} {shown}"
                  f"{flag}", flush=True)


if __name__ == "__main__":
    main()
