"""The cascade unit (:mod:`optnet.hw.cascade`) against a reference model of its rules.

The unit under test is node ``ME`` of a network it cannot see. Its neighbours are modelled
by the rules they keep: the neighbour on link ``j`` sends node ``ME`` one copy of every
broadcast of every source, in the source's order, and the copy of ``k + 1`` only once
``ME`` has forwarded ``k`` (rule 1 at the neighbour, which needs ``ME``'s copy of ``k``);
each of them returns one copy of every broadcast ``ME`` starts. That is every order the
network can produce and more (the neighbours wait for nothing else), with unicasts and the
copies of the node's own broadcasts mixed in, the local output one packet at a time with
random gaps, a hub that serves one input at a time, and random backpressure everywhere.

The reference checks what the unit promises: every broadcast delivered to its endpoint
exactly once and in its source's order, never the node's own; each forwarded exactly once,
whole, under the node's own group, to the hub input of its endpoint, only after it was
stored whole and after every copy of the source's previous broadcast had arrived (store
before forward, rule 1); the node's own broadcasts numbered in turn and started only once
every copy of the previous one came back (one outstanding broadcast per source, rule 2);
unicasts passed on in order; a credit per flit taken.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from amaranth.sim import Simulator

from optnet.hw.cascade import CascadeUnit
from optnet.plan.configs import CASCADE_SEQ_BITS, CascadeConfig, FlitFormat

FMT = FlitFormat(width=32, vcs=2, id_bits=3, ep_bits=1, prio_bits=1)
ME = 2
NEIGHBOURS = (1, 3, 6)              # the node on each link
SOURCES = (0, 1, 5, 7)              # other nodes that broadcast
MOD = 1 << CASCADE_SEQ_BITS


def _broadcast(src, k, group, cfg, rng_of):
    """The flits of broadcast ``k`` of ``src`` as the neighbour ``group`` sends it."""
    rng = rng_of(src, k)
    length = rng.randint(1, cfg.packet_flits - 1)
    ep = rng.randrange(cfg.endpoints)
    head = FMT.pack_header(dst=group, src=src, mcast=1, dst_ep=ep, src_ep=ep,
                           prio=rng.randrange(2), arg=k % MOD)
    return [(head, 1, 0)] + [(src << 20 | k << 8 | b, 0, b == length - 1)
                             for b in range(length)]


def _run(seed, links=3, per_source=5, own=4, unicasts=12, cycles=6000, pressure=0.7):
    rng = random.Random(seed)
    cfg = CascadeConfig(FMT, endpoints=2, links=links, packet_flits=5)
    neighbours = NEIGHBOURS[:links]
    dut = CascadeUnit(cfg)
    log = {"errors": []}

    def fail(message):
        log["errors"].append(message)

    def rng_of(src, k):
        return random.Random(seed * 1000 + src * 100 + k)

    # -- what the endpoints send: own packets per endpoint -------------------------------
    ep_packets = {i: [] for i in range(cfg.endpoints)}
    for n in range(own + 6):
        i = n % cfg.endpoints
        bcast = n < own or rng.random() < 0.3
        dst = rng.choice(SOURCES)
        head = FMT.pack_header(dst=ME if bcast else dst, src=ME, mcast=int(bcast),
                               dst_ep=i, src_ep=i, prio=i)
        body = [(ME << 20 | 0xF0 | n, 0, 1)]
        ep_packets[i].append([(head, 1, 0), *body])

    async def bench(ctx):
        ctx.set(dut.node_id, ME)
        sent_copies = {(s, j): 0 for s in SOURCES for j in range(links)}
        arrived = defaultdict(int)      # (src, k) -> copies taken whole
        stored_at = {}                  # (src, k) -> cycle its new copy's tail was taken
        forwarded = defaultdict(int)    # src -> broadcasts ME forwarded whole
        delivered = defaultdict(list)   # src -> k delivered on net_out
        own_started = []                # (cycle, seq) of ME's broadcasts
        own_back = defaultdict(int)     # own index -> copies back
        own_due = []                    # (earliest cycle, own index, link)
        uni_left = unicasts
        uni_sent, uni_got = [], []
        inbound = None                  # [kind, key, flits, index]
        ep_cursor = {i: [0, 0] for i in range(cfg.endpoints)}
        out_packets = {i: [] for i in range(cfg.endpoints)}
        net_packet = []
        hub = None                      # the hub's current input
        credits = [0] * FMT.vcs
        taken = [0] * FMT.vcs
        for cycle in range(cycles):
            # -- the router's local output: one packet at a time ---------------------------
            if inbound is None and rng.random() < 0.6:
                choices = [("copy", (s, j)) for (s, j), k in sent_copies.items()
                           if k < per_source and (k == 0 or forwarded[s] >= k)]
                choices += [("own", (q, j)) for t, q, j in own_due if t <= cycle]
                if uni_left:
                    choices.append(("uni", None))
                if choices:
                    kind, key = rng.choice(choices)
                    if kind == "copy":
                        s, j = key
                        k = sent_copies[s, j]
                        sent_copies[s, j] += 1
                        flits = _broadcast(s, k, neighbours[j], cfg, rng_of)
                        key = (s, k)
                    elif kind == "own":
                        q, j = key
                        own_due.remove(next(d for d in own_due if d[1:] == key))
                        head = FMT.pack_header(dst=neighbours[j], src=ME, mcast=1,
                                               arg=q % MOD)
                        flits = [(head, 1, 0), (0xABC, 0, 1)]
                    else:
                        uni_left -= 1
                        n = unicasts - uni_left
                        head = FMT.pack_header(dst=ME, src=rng.choice(SOURCES),
                                               dst_ep=n % 2)
                        flits = [(head, 1, 0), (0x5000 | n, 0, 1)]
                        uni_sent.append(0x5000 | n)
                    inbound = [kind, key, flits, 0, rng.randrange(FMT.vcs)]
            if inbound is not None and rng.random() < 0.8:
                data, head, tail = inbound[2][inbound[3]]
                ctx.set(dut.net_in.valid, 1)
                ctx.set(dut.net_in.payload, {"data": data, "head": head, "tail": tail,
                                             "vc": inbound[4]})
            else:
                ctx.set(dut.net_in.valid, 0)
            ctx.set(dut.net_out.ready, rng.random() < pressure)
            # -- the endpoints: each holds its flit until taken ----------------------------
            for i in range(cfg.endpoints):
                k, b = ep_cursor[i]
                if k < len(ep_packets[i]):
                    data, head, tail = ep_packets[i][k][b]
                    ctx.set(dut.ep_in[i].valid, 1)
                    ctx.set(dut.ep_in[i].payload, {"data": data, "head": head, "tail": tail,
                                                   "vc": 0})
                else:
                    ctx.set(dut.ep_in[i].valid, 0)
            # -- the hub: one input at a time, a packet at a time --------------------------
            if hub is None:
                offered = [i for i in range(cfg.endpoints) if ctx.get(dut.ep_out[i].valid)]
                hub = rng.choice(offered) if offered else None
            for i in range(cfg.endpoints):
                ctx.set(dut.ep_out[i].ready, i == hub and rng.random() < pressure)
            # -- what moved this cycle ----------------------------------------------------
            cred = ctx.get(dut.net_cred)
            for v in range(FMT.vcs):
                credits[v] += cred >> v & 1
            if ctx.get(dut.net_in.valid) and ctx.get(dut.net_in.ready):
                taken[inbound[4]] += 1
                inbound[3] += 1
                if inbound[3] == len(inbound[2]):
                    kind, key = inbound[0], inbound[1]
                    if kind == "copy":
                        if arrived[key] == 0:
                            stored_at[key] = cycle
                        arrived[key] += 1
                    elif kind == "own":
                        own_back[key[0]] += 1
                    inbound = None
            if ctx.get(dut.net_out.valid) and ctx.get(dut.net_out.ready):
                flit = ctx.get(dut.net_out.payload)
                net_packet.append((flit.data, flit.head, flit.tail))
                if flit.tail:
                    header = FMT.unpack_header(net_packet[0][0])
                    if header["mcast"]:
                        s, k = header["src"], net_packet[1][0] >> 8 & 0xFFF
                        if s == ME:
                            fail(f"own broadcast delivered at {cycle}")
                        elif delivered[s] != list(range(k)):
                            fail(f"({s}, {k}) delivered after {delivered[s]}")
                        expected = _broadcast(s, k, header["dst"], cfg, rng_of)
                        if net_packet != expected:
                            fail(f"({s}, {k}) delivered as {net_packet}")
                        delivered[s].append(k)
                    else:
                        uni_got.append(net_packet[1][0])
                    net_packet = []
            for i in range(cfg.endpoints):
                out = dut.ep_out[i]
                if not (ctx.get(out.valid) and ctx.get(out.ready)):
                    continue
                flit = ctx.get(out.payload)
                if ctx.get(dut.ep_in[i].valid) and ctx.get(dut.ep_in[i].ready):
                    ep_cursor[i][1] += 1
                    if ep_cursor[i][1] == len(ep_packets[i][ep_cursor[i][0]]):
                        ep_cursor[i] = [ep_cursor[i][0] + 1, 0]
                packet = out_packets[i]
                if flit.head:
                    header = FMT.unpack_header(flit.data)
                    if header["mcast"] and header["src"] == ME:
                        q = len(own_started)
                        if q and own_back[q - 1] != links:
                            fail(f"own broadcast {q} started at {cycle} with "
                                 f"{own_back[q - 1]} copies of {q - 1} back")
                        if header["arg"] % MOD != q % MOD:
                            fail(f"own broadcast {q} numbered {header['arg']}")
                        own_started.append((cycle, header["arg"]))
                    elif header["mcast"]:
                        s = header["src"]
                        k = forwarded[s]
                        if stored_at.get((s, k), cycle) >= cycle:
                            fail(f"({s}, {k}) forwarded at {cycle} before it was stored")
                        if k and arrived[s, k - 1] != links:
                            fail(f"({s}, {k}) forwarded at {cycle} with "
                                 f"{arrived[s, k - 1]} copies of {k - 1} in")
                packet.append((flit.data, flit.head, flit.tail))
                if flit.tail:
                    header = FMT.unpack_header(packet[0][0])
                    if header["mcast"] and header["src"] == ME:
                        # each neighbour stores it and sends a copy back
                        own_due.extend((cycle + rng.randint(5, 60), len(own_started) - 1, j)
                                       for j in range(links))
                    elif header["src"] != ME:
                        s = header["src"]
                        k = forwarded[s]
                        expected = _broadcast(s, k, ME, cfg, rng_of)
                        if packet != expected or header["dst_ep"] != i:
                            fail(f"({s}, {k}) forwarded as {packet} on input {i}")
                        forwarded[s] += 1
                    out_packets[i] = []
                    hub = None
                else:
                    out_packets[i] = packet
            await ctx.tick()
        log.update(delivered=dict(delivered), forwarded=dict(forwarded), own=own_started,
                   own_back=dict(own_back), uni=(uni_sent, uni_got), credits=credits,
                   taken=taken, stray=ctx.get(dut.stray),
                   sent_all=all(ep_cursor[i][0] == len(ep_packets[i]) for i in ep_packets))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return cfg, log


@pytest.mark.parametrize("seed, pressure", [(1, 0.7), (2, 1.0), (3, 0.4)])
def test_the_cascade_unit_keeps_its_rules(seed, pressure):
    cfg, log = _run(seed, pressure=pressure)
    assert not log["errors"], log["errors"][:5]
    assert log["delivered"] == {s: list(range(5)) for s in SOURCES}
    assert log["forwarded"] == dict.fromkeys(SOURCES, 5)
    assert [seq for _, seq in log["own"]] == [q % MOD for q in range(len(log["own"]))]
    assert len(log["own"]) >= 4 and all(n == cfg.links for n in log["own_back"].values())
    sent, got = log["uni"]
    assert got == sent
    assert log["credits"] == log["taken"] and log["stray"] == 0 and log["sent_all"]


def test_a_single_link_node_forwards_each_broadcast_once():
    # A node with one link (the end of a line): its one copy of each broadcast is new, and
    # it forwards it back on that link, where the neighbour drops it as a copy.
    _, log = _run(4, links=1, per_source=6)
    assert not log["errors"], log["errors"][:5]
    assert log["delivered"] == {s: list(range(6)) for s in SOURCES}
    assert log["forwarded"] == dict.fromkeys(SOURCES, 6)


def test_a_number_that_fits_no_rule_is_dropped_and_counted():
    cfg = CascadeConfig(FMT, endpoints=1, links=2, packet_flits=4)
    dut = CascadeUnit(cfg)
    out = []

    async def bench(ctx):
        ctx.set(dut.node_id, ME)
        ctx.set(dut.net_out.ready, 1)
        ctx.set(dut.ep_out[0].ready, 1)
        # broadcast 0 of source 5, then a copy numbered 2 (neither 0, 3 nor 1)
        packets = [_broadcast(5, 0, 1, cfg, lambda s, k: random.Random(1)),
                   _broadcast(5, 2, 3, cfg, lambda s, k: random.Random(1))]
        for data, head, tail in [f for p in packets for f in p]:
            ctx.set(dut.net_in.valid, 1)
            ctx.set(dut.net_in.payload, {"data": data, "head": head, "tail": tail, "vc": 0})
            assert ctx.get(dut.net_in.ready)
            if ctx.get(dut.net_out.valid):
                out.append((ctx.get(dut.net_out.payload.data), ctx.get(dut.net_out.payload.head)))
            await ctx.tick()
        ctx.set(dut.net_in.valid, 0)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.stray) == 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # delivered once, the stray copy not at all
    assert [FMT.unpack_header(word)["arg"] for word, head in out if head] == [0]
