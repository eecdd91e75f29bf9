"""Direct clusters (fully connected, ``flow_control: none``) in simulation through
:class:`~optnet.hw.top.NodeTop`: YAML -> lint -> route -> plan -> one NodeTop per node, its
direct switch, direct links (gearbox and clock crossings) and hub, the links joined by the
link model; random eager and rendezvous messages between all pairs (a node to itself
included) on all endpoints. And the cycles the report's model books for a direct cluster
(:data:`optnet.model.DIRECT_SWITCH_CYCLES`, :data:`~optnet.model.DIRECT_LINK_CYCLES`,
:data:`~optnet.model.DIRECT_HUB_CYCLES`), measured here on the RTL."""

from __future__ import annotations

import random
from collections import defaultdict
from fractions import Fraction

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from optnet.hw.linkmodel import LinkModel
from optnet.hw.top import NodeTop
from optnet.lint import lint_file
from optnet.model import (
    DIRECT_HUB_CYCLES,
    DIRECT_LINK_CYCLES,
    DIRECT_SWITCH_CYCLES,
    hop,
    model_params,
)
from optnet.plan import plan

from .conftest import ROOT


def build(name):
    result = lint_file(ROOT / "tests" / "hw" / f"{name}.yaml")
    assert not [d for d in result.diagnostics if d.severity == "error"]
    return result.routed, plan(result.routed)


def cluster(plans, *, sync=10e-9, phy=6e-9, latency=5):
    """The nodes of ``plans`` as NodeTops joined by links of ``latency`` PHY cycles (the
    link model's and the register in which each node takes what it receives): the simulator
    (not yet run), the tops by node name."""
    m = Module()
    tops = {}
    for p in plans:
        tops[p.node] = m.submodules[p.node] = NodeTop(p, phys="sim")
    ports = sorted({q.port for p in plans for q in p.ports})
    for port in ports:
        m.domains += ClockDomain(f"phy{port}")
    sim = Simulator(m)
    sim.add_clock(sync)
    for port in ports:
        sim.add_clock(phy, domain=f"phy{port}")
    by_node = {p.node: p for p in plans}
    for pl in plans:
        for port in pl.ports:
            peer_node, peer_port = port.peer.split(".", 1)
            far = next(q for q in by_node[peer_node].ports
                       if q.board_port == peer_port.split("[")[0] and q.peer.startswith(
                           pl.node + "."))
            model = LinkModel(getattr(tops[pl.node], f"phy{port.port}_tx"),
                              getattr(tops[peer_node], f"phy{far.port}_rx"),
                              getattr(tops[pl.node], f"phy{port.port}_up"),
                              f"phy{port.port}", port.link.phy_width,
                              # (the node registers what it receives: one of the cycles)
                              latency=latency - 1)
            sim.add_testbench(model.process, background=True)
    return sim, tops


def simulate(name, messages, *, seed=1, ready=0.7, valid=0.8, longest=None,
             max_cycles=200_000, stall=20_000):
    """Simulate cluster ``name`` with ``messages`` random messages per endpoint and node,
    to random nodes (itself included), of 1 beat to ``longest`` (default: three times the
    eager threshold, so about two thirds go rendezvous), each beat offered with probability
    ``valid`` and taken with probability ``ready``. Returns what was sent and received per
    flow (destination, endpoint, source id) and the run's state."""
    _, plans = build(name)
    sim, tops = cluster(plans)
    cfg = plans[0].direct
    longest = longest or 3 * max(cfg.threshold, 1)
    rng = random.Random(seed)
    traffic = {}
    for p in plans:
        for e, ep in zip(p.endpoint_names, p.endpoints, strict=True):
            items = []
            for i in range(messages):
                dst = rng.choice([q.node_id for q in plans])
                length = rng.randint(1, longest)
                # node id and message number in the first beat (endpoints are >= 16 bits)
                tag = p.node_id << 12 | i
                items.append((dst, [tag] + [rng.getrandbits(ep.width)
                                            for _ in range(length - 1)]))
            traffic[p.node, e] = items
    node_of = {p.node_id: p.node for p in plans}
    received = defaultdict(list)
    done = {}

    async def bench(ctx):
        cursor = {k: [0, 0] for k in traffic}
        partial = defaultdict(list)
        total = sum(len(items) for items in traffic.values())
        got = last = 0
        for cycle in range(max_cycles):
            for (node, e), items in traffic.items():
                s_axis = getattr(tops[node], f"{e}_s_axis")
                k = cursor[node, e]
                if k[0] < len(items) and rng.random() < valid:
                    dst, beats = items[k[0]]
                    ctx.set(s_axis.valid, 1)
                    ctx.set(s_axis.payload, {"tdata": beats[k[1]],
                                             "tlast": k[1] == len(beats) - 1, "tdest": dst,
                                             "tuser": len(beats) if k[1] == 0 else 0})
                else:
                    ctx.set(s_axis.valid, 0)
                ctx.set(getattr(tops[node], f"{e}_m_axis").ready, rng.random() < ready)
            for (node, e), items in traffic.items():
                s_axis = getattr(tops[node], f"{e}_s_axis")
                if ctx.get(s_axis.valid) and ctx.get(s_axis.ready):
                    k = cursor[node, e]
                    k[1] += 1
                    if k[1] == len(items[k[0]][1]):
                        k[0], k[1] = k[0] + 1, 0
                m_axis = getattr(tops[node], f"{e}_m_axis")
                if ctx.get(m_axis.valid) and ctx.get(m_axis.ready):
                    beat = ctx.get(m_axis.payload)
                    key = (node, e, beat.tid)
                    partial[key].append(beat.tdata)
                    if beat.tlast:
                        received[key].append(partial.pop(key))
                        got, last = got + 1, cycle
            await ctx.tick()
            if got == total or cycle - last > stall:
                break
        done["cycles"] = cycle
        done["partial"] = dict(partial)
        done["dropped"] = {n: ctx.get(t.dropped) for n, t in tops.items()}

    sim.add_testbench(bench)
    sim.run()
    expected = defaultdict(list)
    ids = {p.node: p.node_id for p in plans}
    for (node, e), items in traffic.items():
        for dst, beats in items:
            expected[node_of[dst], e, ids[node]].append(beats)
    return expected, received, done, traffic


def _check(expected, received, done):
    assert not done["partial"], f"messages cut short after {done['cycles']} cycles"
    assert all(v == 0 for v in done["dropped"].values())
    assert set(received) <= set(expected)
    for key, messages in expected.items():
        assert received.get(key, []) == messages, f"flow {key} after {done['cycles']} cycles"


def test_a_short_direct_run_delivers_every_message_once_in_order():
    # The fast tier's: two endpoints of 64 and 16 bits over 32-bit PHY words (a data word
    # is two of them), eager and rendezvous messages, a node's messages to itself.
    expected, received, done, traffic = simulate("direct4", 6, seed=5)
    _check(expected, received, done)
    cfg = build("direct4")[1][0].direct
    lengths = [len(beats) for items in traffic.values() for _, beats in items]
    assert max(lengths) > cfg.threshold >= min(lengths)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "ready", "seed"), [
    ("direct4", 0.7, 1), ("direct4", 1.0, 2), ("optweb4", 0.7, 3), ("optweb4", 0.3, 4)])
def test_direct_cluster_delivers_every_message_once_in_order(name, ready, seed):
    expected, received, done, traffic = simulate(name, 40, seed=seed, ready=ready)
    _check(expected, received, done)
    cfg = build(name)[1][0].direct
    lengths = [len(beats) for items in traffic.values() for _, beats in items]
    # rendezvous messages longer than the receive buffer stream through it
    assert max(lengths) > cfg.buffer and sum(n > cfg.threshold for n in lengths) > 50
    assert sum(len(v) for v in expected.values()) >= 40 * len(traffic)


# ------------------------------------------------------------------------ the model's cycles

def _first_beat(name, latency, length):
    """Cycles from the first beat of a lone ``length``-beat message offered on n0's first
    endpoint's ``s_axis`` to that beat on n1's ``m_axis``, with the PHY clocks at the
    network clock; and the plan of n0."""
    _, plans = build(name)
    sim, tops = cluster(plans, phy=10e-9, latency=latency)
    ep = plans[0].endpoint_names[0]
    to = next(p.node_id for p in plans if p.node == "n1")
    out = {}

    async def bench(ctx):
        s_axis = getattr(tops["n0"], f"{ep}_s_axis")
        m_axis = getattr(tops["n1"], f"{ep}_m_axis")
        ctx.set(m_axis.ready, 1)
        for _ in range(20):      # the links come up
            await ctx.tick()
        k = 0
        for cycle in range(400):
            if k < length:
                ctx.set(s_axis.valid, 1)
                ctx.set(s_axis.payload, {"tdata": 0x55 + k, "tlast": k == length - 1,
                                         "tdest": to, "tuser": length if k == 0 else 0})
            else:
                ctx.set(s_axis.valid, 0)
            if k < length and ctx.get(s_axis.ready):
                k += 1
            if ctx.get(m_axis.valid):
                assert ctx.get(m_axis.payload).tdata == 0x55
                out["cycles"] = cycle
                return
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    return out["cycles"], plans[0]


@pytest.mark.parametrize(("name", "latency"), [("optweb4", 3), ("direct4", 7)])
def test_the_model_books_the_measured_cycles(name, latency):
    # A lone eager message's first beat, end to end: the model's hub, switch and link
    # cycles and its serialisation (the EAGER word's PHY words and the beat's, at one PHY
    # word a network cycle here) and the link's latency add up to what the RTL takes, on a
    # 128-bit and a 32-bit PHY word (two PHY words a beat on both).
    cycles, p = _first_beat(name, latency, 3)
    link = p.ports[0].link
    words = link.control_words + link.data_words
    assert cycles == (2 * DIRECT_HUB_CYCLES + 2 * DIRECT_SWITCH_CYCLES + DIRECT_LINK_CYCLES
                      + words + latency)
    # ... and the report's model counts them so: a hop's parts on this cluster, with the
    # PHY at one word per network cycle and no PHY or cable time
    routed, _ = build(name)
    params = model_params(routed.cluster)
    assert params.direct is not None
    lk = routed.cluster.links[0]
    breakdown = hop(params, lk).parts
    clock = params.clock
    assert breakdown["router"] * clock == DIRECT_SWITCH_CYCLES
    assert breakdown["link_layer"] * clock == DIRECT_LINK_CYCLES
    assert breakdown["serialisation"] / params.word_time(lk) == words
    assert params.hub_cycles == DIRECT_HUB_CYCLES
    assert Fraction(params.flit_bits) == p.direct.width
