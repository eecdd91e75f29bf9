"""The deadlock proof's wait rules (:class:`optnet.routing.proof.Waits`) against the RTL.

Each test puts a router, hub or endpoint in the state a rule is about and watches whether
the hardware waits as the proof assumes: a wait the proof leaves out would let it accept a
network that deadlocks, and the proof's sibling rule must hold exactly when the hardware
makes a multicast wait on one branch while it holds another.
"""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from optnet.hw.cascade import CascadeUnit
from optnet.hw.endpoint import Endpoint, LocalHub
from optnet.hw.router import Router
from optnet.plan.configs import CascadeConfig, EndpointConfig, FlitFormat, RouterConfig
from optnet.routing.proof import Waits, broadcast_flits

FMT = FlitFormat(width=32, vcs=2, id_bits=3)
PORTS = 4
CREDITS = 8


def _unicast(port, vc):
    return 1 << 3 | vc << 2 | port    # valid | vc | port, with 2 port bits and 1 VC bit


def _router(multicast_credits, quiet=0):
    # dst 1 -> port 1, dst 2 -> port 2, dst 0 -> local on VC 0, dst 3 -> local on VC 1;
    # group 0 -> ports 1 and 2, both on VC 0
    uni = [_unicast(0, 0), _unicast(1, 0), _unicast(2, 0), _unicast(0, 1)] + [0] * 4
    multi = [0b0110] + [0] * 7
    return Router(RouterConfig(FMT, PORTS, CREDITS, (CREDITS,) * PORTS, tuple(uni),
                               tuple(multi), multicast_credits=multicast_credits,
                               whole_inputs=(1, 2, 3) if quiet else (), quiet=quiet))


def _packet(dst, flits, mcast=0, tag=0):
    head = FMT.pack_header(dst=dst, src=0, mcast=mcast, arg=tag)
    return [(head, 1, flits == 1)] + [(tag << 8 | i, 0, i == flits - 1)
                                      for i in range(1, flits)]


def _run_router(dut, script, cycles, withheld=()):
    """Drive ``dut``: ``script[p]`` is a list of ``(cycle, vc, flits)``, each packet sent on
    input ``p`` flit by flit from ``cycle`` on. The outputs are always ready and every
    credit comes back at once, except on the ports in ``withheld``, whose credits come back
    from ``cycles // 2`` on. Returns the flits each output sent, with the cycle."""
    got = {q: [] for q in range(PORTS)}

    async def bench(ctx):
        pending = {p: [(t, vc, f) for t, vc, flits in packets for f in flits]
                   for p, packets in script.items()}
        for q in range(PORTS):
            ctx.set(dut.out[q].ready, 1)
        owed = {q: [] for q in range(PORTS)}
        for cycle in range(cycles):
            for p in range(PORTS):
                queue = pending.get(p, [])
                if queue and queue[0][0] <= cycle:
                    _, vc, (data, head, tail) = queue.pop(0)
                    ctx.set(dut.inp[p].valid, 1)
                    ctx.set(dut.inp[p].payload, {"data": data, "head": head, "tail": tail,
                                                 "vc": vc})
                else:
                    ctx.set(dut.inp[p].valid, 0)
            for q in range(PORTS):
                back = 0
                if q not in withheld or cycle >= cycles // 2:
                    for v in range(FMT.vcs):
                        if v in owed[q]:
                            owed[q].remove(v)
                            back |= 1 << v
                ctx.set(dut.cred_in[q], back)
            await ctx.tick()
            for q in range(PORTS):
                if ctx.get(dut.out[q].valid):
                    flit = ctx.get(dut.out[q].payload)
                    got[q].append((cycle, flit.data, flit.head, flit.tail))
                    owed[q].append(flit.vc)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return got


@pytest.mark.parametrize("packet, credits", [(4, 4), (4, 3), (4, 2), (4, 1), (3, 1), (2, 1)])
@pytest.mark.parametrize("short", [0, 1])
def test_a_multicast_holds_a_branch_while_waiting_for_another_exactly_when_the_proof_says(
        packet, credits, short):
    # Output 2 has ``credits - short`` credits left (a unicast took the others and they are
    # withheld); a multicast to outputs 1 and 2, then a unicast to output 1 on the same VC
    # arrive. With too little credit the multicast takes nothing; with enough, it takes
    # both outputs, and holds output 1 while output 2 waits only if output 2 runs out before
    # the tail.
    fill = CREDITS - (credits - short)
    script = {
        3: [(0, 0, _packet(2, fill, tag=1)), (40, 0, _packet(1, 2, tag=3))],
        0: [(20, 0, _packet(0, packet, mcast=1, tag=2))],
    }
    got = _run_router(_router(credits), script, cycles=400, withheld={2})
    unicast_out = [c for c, data, head, _ in got[1] if not head and data >> 8 == 3]
    blocked = unicast_out[0] >= 200     # out only once output 2's credits came back
    assert blocked == (Waits(packet, credits).siblings and not short)
    # whatever the order, every flit goes out once on each branch
    assert [d for _, d, h, _ in got[2] if not h and d >> 8 == 2] == list(
        range(2 << 8 | 1, 2 << 8 | packet))
    assert sorted(d >> 8 for _, d, h, _ in got[1] if not h) == [2] * (packet - 1) + [3]


def test_the_local_output_carries_one_packet_at_a_time_whatever_its_vc():
    # A 4-flit packet to the local output on VC 0 whose body arrives late, and a whole
    # packet to the local output on VC 1: the second waits for the first's tail.
    late = _packet(0, 4, tag=1)
    script = {
        1: [(0, 0, late[:2]), (150, 0, late[2:])],
        2: [(10, 1, _packet(3, 3, tag=2))],
    }
    got = _run_router(_router(None), script, cycles=300)
    tags = [data >> 8 for _, data, head, _ in got[0] if not head]
    assert tags == [1, 1, 1, 2, 2]
    assert got[0][3][0] >= 150


def _trickle(packet, start, every):
    # a packet's flits arriving one every ``every`` cycles from ``start`` on
    return [(start + i * every, 0, [flit]) for i, flit in enumerate(packet)]


def test_a_packet_streaming_in_waits_for_its_tail_while_the_local_output_is_in_use():
    # Input 2's 6-flit packet holds the local output from the start; input 1's 4-flit
    # packet streams in a flit every 4 cycles from cycle 2 (its tail at 14), input 3's
    # arrives whole at cycle 4. The whole packet goes next, and input 1's once its tail is
    # in, back to back (the output is not quiet for 6 cycles in between).
    script = {1: _trickle(_packet(0, 4, tag=1), 2, 4), 2: [(0, 0, _packet(0, 6, tag=2))],
              3: [(4, 0, _packet(0, 4, tag=3))]}
    got = _run_router(_router(None, quiet=6), script, cycles=120)[0]
    assert [data >> 8 for _, data, head, _ in got if not head] == [2] * 5 + [3] * 3 + [1] * 3
    times = [t for t, *_ in got]
    assert times[-4] > 14 and times[-1] - times[-4] == 3, times


def test_a_lone_packet_cuts_through_a_quiet_local_output():
    # The same streaming packet, alone: its head leaves before its second flit arrives.
    got = _run_router(_router(None, quiet=6), {1: _trickle(_packet(0, 4, tag=1), 20, 10)},
                      cycles=80)[0]
    assert len(got) == 4 and got[0][0] < 30


def test_the_hub_injects_one_packet_at_a_time():
    # Endpoint 0 (to node 0: VC 0) is mid-packet without router credit; endpoint 1 (to node
    # 1: VC 1, credit to spare) waits for it: W(inject) -> F(inject, 0) in the proof.
    hub = LocalHub(FMT, endpoints=2, router_depth=2)
    taken = []

    async def bench(ctx):
        ctx.set(hub.from_router.valid, 0)
        sent = [0, 0]
        for cycle in range(120):
            for e in range(2):
                ctx.set(hub.ep_tx[e].valid, sent[e] < 4 and (e == 0 or cycle >= 5))
                # (a head's low bits are its destination: node e)
                ctx.set(hub.ep_tx[e].payload, {"data": e << 8 | (sent[e] or e),
                                               "head": sent[e] == 0,
                                               "tail": sent[e] == 3, "vc": 0})
            ctx.set(hub.to_router_cred, (60 <= cycle < 64) | (90 <= cycle < 92) << 1)
            for e in range(2):
                if ctx.get(hub.ep_tx[e].valid) and ctx.get(hub.ep_tx[e].ready):
                    sent[e] += 1
            if ctx.get(hub.to_router.valid):
                flit = ctx.get(hub.to_router.payload)
                taken.append((cycle, flit.data >> 8, flit.vc))
            await ctx.tick()

    sim = Simulator(hub)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert [(e, vc) for _, e, vc in taken] == [(0, 0)] * 4 + [(1, 1)] * 4
    assert taken[2][0] >= 60 and taken[4][0] > taken[3][0]


def test_an_endpoint_receives_while_its_sends_are_blocked():
    # Waits.receive_waits_for_send is False: a managed endpoint whose network output never
    # takes a flit still hands every packet it may be sent to its user, credit grants piling
    # up in their FIFO, from every source at once.
    cfg = EndpointConfig(FMT, node_id=0, index=0, width=32, max_packet=4, buffer=16, credit=2,
                         offset=1, init_budget=2)
    ep = Endpoint(cfg)
    sources = range(1 << FMT.id_bits)
    per_source = cfg.init_budget * cfg.credit
    delivered = []

    async def bench(ctx):
        ctx.set(ep.net_tx.ready, 0)
        ctx.set(ep.m_axis.ready, 1)
        flits = [f for k in range(per_source) for s in sources
                 for f in [(FMT.pack_header(src=s, dst=0), 1, 0), (s << 8 | k, 0, 1)]]
        for _ in range(20 * len(flits)):
            if flits:
                data, head, tail = flits[0]
                ctx.set(ep.net_rx.valid, 1)
                ctx.set(ep.net_rx.payload, {"data": data, "head": head, "tail": tail, "vc": 0})
            else:
                ctx.set(ep.net_rx.valid, 0)
            if flits and ctx.get(ep.net_rx.ready):
                flits.pop(0)
            if ctx.get(ep.m_axis.valid):
                delivered.append(ctx.get(ep.m_axis.payload.tdata))
            await ctx.tick()
        assert not ctx.get(ep.net_tx.ready)

    sim = Simulator(ep)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert sorted(delivered) == sorted(s << 8 | k for s in sources for k in range(per_source))


def test_the_cascade_unit_receives_while_its_forwards_are_blocked():
    # The unit on the local output is a sink too: with the hub never taking a forward, it
    # still takes a new broadcast from every source (each into its own slot), every copy
    # and every unicast, passing the new broadcasts and unicasts on as the endpoints take
    # them; only its own endpoints' broadcasts wait (for their copies to come back).
    cfg = CascadeConfig(FMT, endpoints=2, links=3, packet_flits=4)
    unit = CascadeUnit(cfg)
    me = 0
    sources = [s for s in range(1 << FMT.id_bits) if s != me]
    delivered = []

    async def bench(ctx):
        ctx.set(unit.node_id, me)
        ctx.set(unit.net_out.ready, 1)
        for i in range(cfg.endpoints):
            ctx.set(unit.ep_out[i].ready, 0)
        packets = []
        for copy in range(cfg.links):
            for s in sources:
                head = FMT.pack_header(dst=(s + copy) % 8, src=s, mcast=1, dst_ep=s % 2,
                                       arg=0)
                packets.append([(head, 1, 0), (s << 8 | copy, 0, 0), (s << 8 | 9, 0, 1)])
            packets.append([(FMT.pack_header(dst=me, src=copy + 1), 1, 0),
                            (0xF00 | copy, 0, 1)])
        flits = [f for p in packets for f in p]
        for _ in range(4 * len(flits)):
            if flits:
                data, head, tail = flits[0]
                ctx.set(unit.net_in.valid, 1)
                ctx.set(unit.net_in.payload, {"data": data, "head": head, "tail": tail,
                                              "vc": 0})
            else:
                ctx.set(unit.net_in.valid, 0)
            if flits and ctx.get(unit.net_in.ready):
                flits.pop(0)
            if ctx.get(unit.net_out.valid) and not ctx.get(unit.net_out.payload.head):
                delivered.append(ctx.get(unit.net_out.payload.data))
            await ctx.tick()
        assert not flits
        # the forwards wait at the hub's inputs
        assert any(ctx.get(unit.ep_out[i].valid) for i in range(cfg.endpoints))

    sim = Simulator(unit)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # each broadcast once (its first copy), each unicast
    assert sorted(d for d in delivered if d >> 8 != 0xF) == sorted(
        [s << 8 for s in sources] + [s << 8 | 9 for s in sources])
    assert sorted(d for d in delivered if d >> 8 == 0xF) == [0xF00, 0xF01, 0xF02]


@pytest.mark.parametrize("max_packet, buffer", [(5, 3), (5, 8), (6, 1), (3, 2)])
def test_broadcast_packets_are_cut_to_the_broadcast_length(max_packet, buffer):
    # A 9-beat broadcast frame and a 9-beat unicast frame: broadcasts leave in packets of at
    # most broadcast_flits, unicasts of at most max_packet flits, headers included.
    flits = broadcast_flits(max_packet, buffer)
    cfg = EndpointConfig(FMT, node_id=2, index=0, width=32, max_packet=max_packet,
                         broadcast_flits=flits, managed=False)
    ep = Endpoint(cfg)
    packets = []

    async def bench(ctx):
        ctx.set(ep.net_tx.ready, 1)
        ctx.set(ep.m_axis.ready, 1)
        frames = [(1, k, k == 8) for k in range(9)] + [(0, 100 + k, k == 8) for k in range(9)]
        current = []
        for _ in range(200):
            if frames:
                bcast, data, last = frames[0]
                ctx.set(ep.s_axis.valid, 1)
                ctx.set(ep.s_axis.payload, {"tdata": data, "tlast": last, "tdest": 5,
                                            "tuser": bcast})
            else:
                ctx.set(ep.s_axis.valid, 0)
            if frames and ctx.get(ep.s_axis.ready):
                frames.pop(0)
            if ctx.get(ep.net_tx.valid):
                flit = ctx.get(ep.net_tx.payload)
                current.append(flit)
                if flit.tail:
                    packets.append(current)
                    current = []
            await ctx.tick()

    sim = Simulator(ep)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    heads = [FMT.unpack_header(p[0].data) for p in packets]
    bcast = [len(p) for p, h in zip(packets, heads, strict=True) if h["mcast"]]
    uni = [len(p) for p, h in zip(packets, heads, strict=True) if not h["mcast"]]
    assert sum(bcast) - len(bcast) == 9 and max(bcast) == flits
    assert sum(uni) - len(uni) == 9 and max(uni) == max_packet
