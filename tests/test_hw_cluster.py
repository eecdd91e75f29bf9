"""Whole clusters in simulation: YAML -> lint -> route -> plan -> NodeTop per node, links
joined by the link model, random traffic between all pairs on all endpoints.

Amaranth's simulator takes minutes per four-node run; the 16-node cascade torus runs under
Verilator instead (tests/test_sim.py, mixed load on tests/hw/torus4x4_cascade.yaml)."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from amaranth.hdl import ClockDomain, DomainRenamer, Module
from amaranth.sim import Simulator

from optnet.hw.linkmodel import LinkModel
from optnet.hw.top import NodeTop
from optnet.lint import lint_file
from optnet.plan import plan

from .conftest import ROOT


def build(name):
    result = lint_file(ROOT / "tests" / "hw" / f"{name}.yaml")
    assert not [d for d in result.diagnostics if d.severity == "error"]
    return result.routed, plan(result.routed)


def simulate(name, packets_per_endpoint, bcast=0.05, ber=0.0, seed=1, max_cycles=200_000,
             ready=0.7, stall=20_000, reset=None):
    """Simulate cluster ``name`` with random traffic: ``bcast`` of the packets broadcasts,
    each user ready to take a beat with probability ``ready``. Stops when everything has
    arrived, after ``max_cycles``, or after ``stall`` cycles without a delivery (a
    deadlock). ``reset``: ``(node, cycle)``, every domain of that node reset for 5 cycles
    from that cycle on, its user logic too (it goes on with its next packet). Returns the
    expected and received packets per flow and the run's state (``done["started"]``: the
    cycle each packet's first beat was taken, by (node, endpoint, index); ``done["arrived"]``:
    the cycles its last beat was taken at its destinations, by (source id, endpoint,
    index))."""
    _, plans = build(name)
    m = Module()
    tops = {}
    # The node that resets gets clock domains of its own (on clocks alike), reset through
    # their reset signals as the node's rst would be: a ResetInserter would reset an
    # AsyncFIFO's write counter but not its read side (which follows the domain's reset
    # signal), and the FIFO would then send out its old contents again.
    own = {}
    reset_node = reset[0] if reset else None
    for p in plans:
        tops[p.node] = top = NodeTop(p, phys="sim")
        if p.node == reset_node:
            own = {d: ClockDomain(f"{d}_r") for d in
                   ["sync"] + [f"phy{port.port}" for port in p.ports]}
            top = DomainRenamer({d: cd.name for d, cd in own.items()})(top)
        m.submodules[p.node] = top
    ports = {p.port for pl in plans for p in pl.ports}
    for port in sorted(ports):
        m.domains += ClockDomain(f"phy{port}")
    m.domains += list(own.values())
    sim = Simulator(m)
    for d, period in [("sync", 10e-9)] + [(f"phy{port}", 6e-9) for port in sorted(ports)]:
        sim.add_clock(period, domain=d)
        if d in own:
            sim.add_clock(period, domain=own[d].name)
    by_node = {p.node: p for p in plans}
    models = []
    for pl in plans:
        for port in pl.ports:
            peer_node, peer_port = port.peer.split(".", 1)
            far = next(q for q in by_node[peer_node].ports
                       if q.board_port == peer_port.split("[")[0] and q.peer.startswith(
                           pl.node + "."))
            domain = f"phy{port.port}"
            if pl.node == reset_node:
                domain = own[domain].name
            models.append(LinkModel(
                getattr(tops[pl.node], f"phy{port.port}_tx"),
                getattr(tops[peer_node], f"phy{far.port}_rx"),
                getattr(tops[pl.node], f"phy{port.port}_up"), domain,
                port.link.phy_width, latency=5, ber=ber, seed=seed + len(models)))
    for model in models:
        sim.add_testbench(model.process, background=True)

    rng = random.Random(seed)
    names = plans[0].endpoint_names
    ids = {p.node: p.node_id for p in plans}
    node_of = {v: k for k, v in ids.items()}
    # traffic[node][ep]: list of (dst id or None for broadcast, beats)
    traffic = {}
    for p in plans:
        for e, cfg in zip(names, p.endpoints, strict=True):
            items = []
            for i in range(packets_per_endpoint):
                is_b = rng.random() < bcast
                dst = None if is_b else rng.choice([q.node_id for q in plans])
                # a broadcast frame longer than broadcast_flits - 1 beats would be cut
                length = rng.randint(1, (cfg.broadcast_flits if is_b else cfg.max_packet) - 1)
                # node id, broadcast flag (bit 11) and packet number in the first beat
                tag = p.node_id << 12 | is_b << 11 | i
                beats = [tag] + [rng.getrandbits(cfg.width) for _ in range(length - 1)]
                items.append((dst, beats))
            traffic[p.node, e] = items
    received = defaultdict(list)   # (dst node, ep, src id) -> packets
    done = {}

    async def bench(ctx):
        cursor = {k: [0, 0] for k in traffic}          # packet index, beat index
        partial = defaultdict(list)
        expected_total = 0
        for items in traffic.values():
            for dst, _ in items:
                expected_total += (len(plans) - 1) if dst is None else 1
        got_total = 0
        last_progress = 0
        started = done["started"] = {}
        arrived = done["arrived"] = defaultdict(list)
        for cycle in range(max_cycles):
            resetting = reset is not None and reset[1] <= cycle < reset[1] + 5
            for cd in own.values():
                ctx.set(cd.rst, resetting)
            if resetting:
                # the reset node's user logic starts again too: with its next packet, and
                # without what it was receiving
                for (node, _), k in cursor.items():
                    if node == reset[0] and k[1]:
                        k[0], k[1] = k[0] + 1, 0
                for key in [key for key in partial if key[0] == reset[0]]:
                    del partial[key]
            for (node, e), items in traffic.items():
                s_axis = getattr(tops[node], f"{e}_s_axis")
                k = cursor[node, e]
                if k[0] < len(items) and rng.random() < 0.8:
                    dst, beats = items[k[0]]
                    ctx.set(s_axis.valid, 1)
                    ctx.set(s_axis.payload, {
                        "tdata": beats[k[1]], "tlast": k[1] == len(beats) - 1,
                        "tdest": 0 if dst is None else dst, "tuser": dst is None})
                else:
                    ctx.set(s_axis.valid, 0)
                m_axis = getattr(tops[node], f"{e}_m_axis")
                ctx.set(m_axis.ready, rng.random() < ready)
            for (node, e), items in traffic.items():
                s_axis = getattr(tops[node], f"{e}_s_axis")
                if ctx.get(s_axis.valid) and ctx.get(s_axis.ready):
                    k = cursor[node, e]
                    if k[1] == 0:
                        started[node, e, k[0]] = cycle
                    k[1] += 1
                    if k[1] == len(items[k[0]][1]):
                        k[0], k[1] = k[0] + 1, 0
                m_axis = getattr(tops[node], f"{e}_m_axis")
                if ctx.get(m_axis.valid) and ctx.get(m_axis.ready):
                    beat = ctx.get(m_axis.payload)
                    key = (node, e, beat.tid)
                    partial[key].append(beat.tdata)
                    if beat.tlast:
                        packet = tuple(partial.pop(key))
                        received[(*key, packet[0] >> 11 & 1)].append(packet)
                        arrived[packet[0] >> 12, e, packet[0] & 0x7FF].append(cycle)
                        got_total += 1
                        last_progress = cycle
            await ctx.tick()
            if cycle - last_progress > stall:
                break
            if got_total >= expected_total and cycle % 64 == 0:
                break
            if reset is not None and cycle % 64 == 0 and all(
                    k[0] == len(traffic[key]) for key, k in cursor.items()) and (
                    cycle - last_progress > 3000):
                break           # (some packets are lost to the reset: no total to wait for)
        done["cycles"] = cycle
        done["dropped"] = {n: ctx.get(t.dropped) for n, t in tops.items()}
        done["partial"] = dict(partial)
        done["flipped"] = sum(model.flipped for model in models)
        done["traffic"] = traffic

    sim.add_testbench(bench)
    sim.run()

    # Reference: per (destination, endpoint, source, broadcast or not) the packets in the
    # order sent; broadcasts reach every other node once. Unicasts and broadcasts take
    # different paths (or VC classes), so they are two flows with no order between them.
    expected = defaultdict(list)
    for (node, e), items in traffic.items():
        for dst, beats in items:
            targets = [q.node for q in plans if q.node != node] if dst is None \
                else [node_of[dst]]
            for t in targets:
                expected[t, e, ids[node], int(dst is None)].append(tuple(beats))
    return expected, received, done


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ring4", "torus2x2", "full4"])
def test_cluster_delivers_every_packet_once_in_order(name):
    # 50 packets per endpoint (about 460 deliveries) run each of these clusters through
    # thousands of cycles of contention in about two minutes under Amaranth's simulator.
    expected, received, done = simulate(name, packets_per_endpoint=50)
    assert not done["partial"]
    assert all(v == 0 for v in done["dropped"].values())
    assert set(received) <= set(expected)
    for key, packets in expected.items():
        assert received.get(key, []) == packets, f"flow {key} after {done['cycles']} cycles"
    assert sum(len(v) for v in expected.values()) >= 400


@pytest.mark.slow
@pytest.mark.parametrize("name, ready", [
    ("ring4", 0.7), ("torus2x2", 0.7), ("full4", 0.7), ("ring4_prio", 1.0)])
def test_every_node_broadcasting_heavily_delivers_everything(name, ready):
    # 60 % of packets are broadcasts, from every endpoint of every node at once: before
    # multicasts took their VCs with credit for all but the tail, two broadcasting nodes
    # of a ring deadlocked within a few hundred cycles (a branch held its VC while a
    # sibling waited for credit).
    expected, received, done = simulate(name, packets_per_endpoint=20, bcast=0.6, seed=3,
                                        ready=ready, stall=3000)
    assert not done["partial"]
    assert all(v == 0 for v in done["dropped"].values())
    for key, packets in expected.items():
        assert received.get(key, []) == packets, f"flow {key} after {done['cycles']} cycles"
    assert set(received) <= set(expected)
    sent = [item for items in done["traffic"].values() for item in items]
    assert sum(dst is None for dst, _ in sent) >= len(sent) // 2


@pytest.mark.slow
def test_a_short_ring_run_delivers_every_packet_once_in_order():
    # A few packets per endpoint, 20 % tree broadcasts (the fast tier's whole-cluster
    # simulation is the cascade ring below, unicasts and broadcasts alike).
    expected, received, done = simulate("ring4", packets_per_endpoint=6, bcast=0.2, seed=5)
    assert not done["partial"] and received == expected, f"after {done['cycles']} cycles"


def test_a_short_cascade_run_delivers_every_broadcast_once():
    # The fast tier's cascade flood: a ring whose nodes forward each broadcast on both
    # links and drop the copy that comes round the other way, among unicasts of two
    # priority classes.
    expected, received, done = simulate("ring3_cascade", packets_per_endpoint=3, bcast=0.5,
                                        seed=2)
    assert not done["partial"] and received == expected, f"after {done['cycles']} cycles"
    assert all(v == 0 for v in done["dropped"].values())


@pytest.mark.slow
def test_ring_with_bit_errors_loses_nothing():
    expected, received, done = simulate("ring4", packets_per_endpoint=30, ber=1e-4, seed=7)
    assert done["flipped"] > 0, "the run must actually inject errors"
    assert received == expected, f"after {done['cycles']} cycles"


@pytest.mark.slow
@pytest.mark.parametrize("name, node", [
    ("ring4", "n1"),
    ("torus2x2", "n0")])
def test_a_node_reset_under_traffic_rejoins(name, node):
    # Issue 18: one node resets while the others keep sending to it and it to them. Its
    # links resynchronise, its endpoints' budgets too, and traffic resumes: no flow stalls,
    # nothing is duplicated or reordered, only packets in flight around the reset are lost
    # (whole, or cut short by it and closed with a tail), and every packet sent once the
    # node is back arrives.
    # "Back" means its endpoints have synchronised with each peer, through the backlog the
    # network built up meanwhile: on the 2x2 torus under this load, up to about 4,000
    # cycles for the peer two hops away (its packets sent before the SYNC reaches it
    # belong to the old start and are dropped, as they must be).
    at, settle = 1500, 5000
    expected, received, done = simulate(name, packets_per_endpoint=60, bcast=0.0, seed=11,
                                        reset=(node, at), stall=6000)
    node_of = {i: n for n, i in _ids(name).items()}
    lost = cut = 0
    for key, packets in expected.items():
        dst, e, src_id, _ = key
        src = node_of[src_id]
        whole = {packet[0] & 0x7FF: packet for packet in packets}
        crosses = node in _through(name, src, dst)
        # A packet cut short where the node held it is closed by a tail flit whose data is
        # stale: every beat but the last is the packet's. A cut packet of one beat is that
        # stale beat alone, and says nothing of which packet it was.
        indices = []
        for packet in received.get(key, []):
            i = packet[0] & 0x7FF
            if packet == whole.get(i):
                indices.append(i)
                continue
            cut += 1
            assert crosses, f"flow {key}: corrupted"
            if len(packet) > 1:
                assert packet[:-1] == whole.get(i, ())[:len(packet) - 1], f"flow {key}: corrupted"
                indices.append(i)
        assert indices == sorted(set(indices)), f"flow {key}: duplicated or reordered"
        late = [i for i in whole if done["started"].get((src, e, i), 0) >= at + settle]
        assert set(late) <= set(indices), f"flow {key}: lost after the node was back"
        lost += len(packets) - len(indices)
        if not crosses:
            assert len(indices) == len(packets), f"flow {key} does not cross {node}"
    assert cut <= 2 * len(expected) and lost < sum(len(v) for v in expected.values()) // 4
    assert done["cycles"] > at + settle


def _ids(name):
    return {p.node: p.node_id for p in build(name)[1]}


def _through(name, src, dst):
    """The nodes a packet from ``src`` to ``dst`` crosses, both ends included."""
    routed = build(name)[0]
    names = [n.name for n in routed.cluster.nodes]
    net = routed.net
    path = routed.routing.path(net, names.index(src), names.index(dst))
    return {names[net.src[c]] for c in path} | {dst}
