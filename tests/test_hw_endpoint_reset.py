"""Managed endpoints across resets of their own node or of a peer (the endpoint module's
reset handshake): three endpoints joined by an in-order network model with latency, random
unicast traffic, and resets at random moments, with packets and grants in flight, twice in a
row, of several nodes at once. After each reset every flow resumes; per pair at most
``init_budget * credit + offset`` packets that the receiver accepts are ever outstanding (so
a receive buffer sized for that never fills mid-packet); every pair's packets arrive at most
once and in order, and every packet sent after the last resynchronisation arrives."""

from __future__ import annotations

import random
from collections import deque

import pytest
from amaranth.hdl import Module, ResetInserter, Signal
from amaranth.sim import Simulator

from optnet.hw.endpoint import Control, Endpoint
from optnet.plan.configs import KIND_CREDIT, KIND_DATA, EndpointConfig, FlitFormat


def _word(src: int, dst: int, seq: int, beat: int) -> int:
    return src << 28 | dst << 24 | seq << 4 | beat


def _unword(word: int) -> tuple[int, int, int, int]:
    return word >> 28 & 0xF, word >> 24 & 0xF, word >> 4 & 0xFFFFF, word & 0xF


class Bench:
    """``len(ids)`` managed endpoints, each behind a ResetInserter, joined by one FIFO per
    (source, destination) with a random latency per packet (in order per pair), users that
    send full-length unicasts to random peers and take with random back-pressure.

    ``resets`` is a list of ``(cycle, node, cycles)``: the node's endpoint is held in reset
    for that many cycles; its user drops the frame it was sending, and a packet its endpoint
    had not finished sending is lost with it (the model takes packets into the network whole,
    at their tails), as are the flits the endpoint takes while in reset. Flits already in
    the network are delivered, including the rest of a packet that was being delivered to
    it (which the endpoint must discard as stray flits).
    """

    def __init__(self, fmt, ids, *, credit=4, offset=2, init_budget=1, max_packet=3,
                 nodes=None, seed=0, latency=(1, 25), p_send=0.6, p_take=0.6, p_net=0.9):
        self.fmt, self.ids = fmt, list(ids)
        self.bound = init_budget * credit + offset
        self.beats = max_packet - 1
        # Exactly room for every other node's bound, in full-length packets.
        self.cfgs = {i: EndpointConfig(fmt, node_id=i, index=0, width=32, max_packet=max_packet,
                                       buffer=self.bound * (len(self.ids) - 1), credit=credit,
                                       offset=offset, init_budget=init_budget,
                                       **({"nodes": nodes} if nodes is not None else {}))
                     for i in self.ids}
        self.rng = random.Random(seed)
        self.latency, self.p_send, self.p_take, self.p_net = latency, p_send, p_take, p_net
        self.m = Module()
        self.eps, self.rst = {}, {}
        for i in self.ids:
            self.eps[i] = Endpoint(self.cfgs[i])
            self.rst[i] = Signal(name=f"rst{i}")
            self.m.submodules[f"ep{i}"] = ResetInserter(self.rst[i])(self.eps[i])
        # results
        self.sent: dict[tuple, int] = {}       # (src, dst, seq) -> cycle its head left
        self.taken: dict[tuple, int] = {}      # (src, dst, seq) -> cycle its tail was taken
        self.order: dict[tuple, list] = {}     # (src, dst) -> seqs in the order taken
        self.stalls: list = []                 # (cycle, node): a body flit refused
        self.stray: list = []                  # packets to ids without a node
        self.quiet: int | None = None          # first cycle after the last resync
        self.dropped: dict[int, int] = {}      # node -> its endpoint's `dropped` at the end

    def run(self, cycles, resets=(), stop_sending=None, pauses=()):
        """Simulate ``cycles`` cycles; users stop offering frames at ``stop_sending`` and
        node ``n``'s user takes nothing in the cycles ``a <= t < b`` of ``(n, a, b)`` in
        ``pauses``."""
        resets = sorted(resets)
        last_reset = max((t + n for t, _, n in resets), default=0)
        sweep = 1 << self.fmt.id_bits        # cycles after rst that take no flit

        async def bench(ctx):
            rng, eps = self.rng, self.eps
            queues = {(a, b): deque() for a in self.ids for b in self.ids}
            last_arrival = dict.fromkeys(queues, 0)
            frame = dict.fromkeys(self.ids)            # (dst, seq, beat) being sent
            seq = {(a, b): 0 for a in self.ids for b in self.ids}
            # [pair, flits, arrival] of the packet a node is sending: the network takes a
            # packet whole at its tail, so one cut by a reset of its source is lost whole.
            out_pkt = dict.fromkeys(self.ids)
            in_pair = dict.fromkeys(self.ids)          # pair being delivered to a node
            pending_head = dict.fromkeys(self.ids)     # cycle a data head left, body next
            for i in self.ids:
                ctx.set(eps[i].m_axis.ready, 0)
            for t in range(cycles):
                in_reset = {i: any(a <= t < a + n and b == i for a, b, n in resets)
                            for i in self.ids}
                for i in self.ids:
                    ctx.set(self.rst[i], in_reset[i])
                    if in_reset[i]:
                        frame[i] = None
                        out_pkt[i] = None            # lost inside the node
                        pending_head[i] = None
                if self.quiet is None and t > last_reset and not any(
                        ctx.get(eps[i].syncing) for i in self.ids
                        if hasattr(eps[i], "syncing")):
                    self.quiet = t
                sending = stop_sending is None or t < stop_sending
                # users: offer frames
                for i in self.ids:
                    if frame[i] is None and sending and not in_reset[i] \
                            and rng.random() < self.p_send:
                        dst = rng.choice([j for j in self.ids if j != i])
                        frame[i] = [dst, seq[i, dst], 0]
                        seq[i, dst] += 1
                    if frame[i] is None:
                        ctx.set(eps[i].s_axis.valid, 0)
                    else:
                        dst, s, b = frame[i]
                        ctx.set(eps[i].s_axis.valid, 1)
                        ctx.set(eps[i].s_axis.payload, {
                            "tdata": _word(i, dst, s, b), "tlast": b == self.beats - 1,
                            "tdest": dst, "tuser": 0})
                    paused = any(n == i and a <= t < b for n, a, b in pauses)
                    ctx.set(eps[i].m_axis.ready, not paused and rng.random() < self.p_take)
                    ctx.set(eps[i].net_tx.ready, rng.random() < self.p_net)
                # network: deliver
                offered = {}
                for j in self.ids:
                    if in_pair[j] is None:
                        ready = [p for p in queues if p[1] == j and queues[p]
                                 and queues[p][0][0] <= t]
                        if ready:
                            in_pair[j] = rng.choice(ready)
                    p = in_pair[j]
                    if p is not None and queues[p][0][0] <= t and rng.random() < 0.9:
                        flit = queues[p][0][1]
                        ctx.set(eps[j].net_rx.valid, 1)
                        ctx.set(eps[j].net_rx.payload, flit)
                        offered[j] = flit
                    else:
                        ctx.set(eps[j].net_rx.valid, 0)
                # sample
                for j, flit in offered.items():
                    if ctx.get(eps[j].net_rx.ready):
                        queues[in_pair[j]].popleft()
                        if flit["tail"]:
                            in_pair[j] = None
                    elif not flit["head"] and not any(
                            b == j and a <= t < a + n + sweep for a, b, n in resets):
                        self.stalls.append((t, j))
                for i in self.ids:
                    ep = eps[i]
                    if frame[i] is not None and ctx.get(ep.s_axis.ready):
                        frame[i][2] += 1
                        if frame[i][2] == self.beats:
                            frame[i] = None
                    if ctx.get(ep.m_axis.valid) and ctx.get(ep.m_axis.ready) \
                            and not in_reset[i]:
                        beat = ctx.get(ep.m_axis.payload)
                        src, dst, s, b = _unword(beat.tdata)
                        assert (beat.tid, dst) == (src, i), (t, i, beat)
                        if beat.tlast:
                            assert b == self.beats - 1
                            self.taken[src, dst, s] = t
                            self.order.setdefault((src, dst), []).append(s)
                    if ctx.get(ep.net_tx.valid) and ctx.get(ep.net_tx.ready):
                        f = ctx.get(ep.net_tx.payload)
                        flit = {"data": f.data, "head": f.head, "tail": f.tail, "vc": 0}
                        if f.head:
                            hdr = self.fmt.unpack_header(f.data)
                            if hdr["dst"] not in self.ids:
                                self.stray.append((t, i, hdr))
                                continue
                            pair = (i, hdr["dst"])
                            arrival = max(t + rng.randint(*self.latency), last_arrival[pair])
                            last_arrival[pair] = arrival
                            out_pkt[i] = [pair, [], arrival]
                            if hdr["kind"] == KIND_DATA:
                                pending_head[i] = t
                        pair, flits, arrival = out_pkt[i]
                        flits.append((arrival, flit))
                        if not f.head and pending_head[i] is not None:
                            src, dst, s, b = _unword(f.data)
                            assert (src, dst, b) == (i, pair[1], 0)
                            self.sent[src, dst, s] = pending_head[i]
                            pending_head[i] = None
                        if f.tail:
                            queues[pair].extend(flits)
                            out_pkt[i] = None
                await ctx.tick()
            self.dropped = {i: ctx.get(eps[i].dropped) for i in self.ids}

        sim = Simulator(self.m)
        sim.add_clock(1e-8)
        sim.add_testbench(bench)
        sim.run()
        return self

    # ------------------------------------------------------------------------- checks
    def max_outstanding(self) -> dict:
        """Per pair, the most packets ever outstanding (sent, not yet taken) among those
        that were taken: what the receiver accepted, wherever it was at the time."""
        worst = {}
        for (a, b) in self.order:
            events = sorted([(self.sent[a, b, s], 1) for s in self.order[a, b]]
                            + [(self.taken[a, b, s], -1) for s in self.order[a, b]])
            level = top = 0
            for _, d in events:
                level += d
                top = max(top, level)
            worst[a, b] = top
        return worst

    def check(self, min_after=5):
        assert not self.stray, self.stray[:3]
        assert not self.stalls, f"receive buffer full mid-packet: {self.stalls[:5]}"
        for pair, seqs in self.order.items():
            assert seqs == sorted(set(seqs)), f"{pair}: duplicated or reordered {seqs}"
        worst = self.max_outstanding()
        assert all(v <= self.bound for v in worst.values()), (worst, self.bound)
        assert self.quiet is not None, "some endpoint never finished its resynchronisation"
        for a in self.ids:
            for b in self.ids:
                if a == b:
                    continue
                after = [k for k, t in self.sent.items() if k[:2] == (a, b) and t > self.quiet]
                missing = [k for k in after if k not in self.taken]
                assert not missing, f"{a}->{b}: sent after the resync, never taken {missing[:5]}"
                assert len(after) >= min_after, f"{a}->{b} did not resume ({len(after)})"


FMT1 = FlitFormat(width=32, vcs=2, id_bits=1)
FMT2 = FlitFormat(width=32, vcs=2, id_bits=2)


@pytest.mark.parametrize("pause", [(1, 0, 0), (1, 200, 300), (1, 280, 310)])
def test_receiver_reset_with_packets_and_grants_in_flight(pause):
    # The defect: n0 -> n1 over a long network, n1 reset while data and grants are
    # in flight and its buffer holds n0's packets (its user paused before the reset). Before
    # the handshake the packets lost in n1 were never taken, so never granted, and n0's
    # flow stalled for good (granted 0, spent 8).
    bench = Bench(FMT1, (0, 1), seed=1, latency=(15, 15), p_send=1.0, p_take=1.0, p_net=1.0)
    bench.run(900, resets=[(300, 1, 3)], stop_sending=750, pauses=[pause])
    bench.check()


@pytest.mark.parametrize("resume", [405, 900])
def test_sender_reset_while_the_receiver_holds_its_packets(resume):
    # n1's user stops taking, so n1 holds a whole budget of n0's packets (and owes it
    # grants) when n0 resets: n0's new budget must leave room for what n1 still holds,
    # whether n1 resumes taking during n0's resync or long after.
    bench = Bench(FMT1, (0, 1), seed=2, latency=(10, 20), p_send=1.0, p_take=0.5)
    bench.run(1800, resets=[(400, 0, 2)], stop_sending=1400, pauses=[(1, 250, resume)])
    bench.check()
    assert bench.max_outstanding()[0, 1] == bench.bound


def test_quiet_reset_and_a_reset_during_the_resync():
    bench = Bench(FMT1, (0, 1), seed=3, p_send=0.0)
    bench.run(300, resets=[(20, 0, 1), (100, 1, 2), (104, 1, 1)])
    assert bench.quiet is not None and not bench.stray
    bench = Bench(FMT1, (0, 1), seed=4, latency=(20, 30))
    bench.run(1400, resets=[(200, 0, 2), (215, 0, 1), (600, 1, 1), (600, 0, 1)],
              stop_sending=1100)
    bench.check()


def test_syncs_go_only_to_nodes_that_exist():
    # Nodes 0, 1 and 2 of a 2-bit id space: no SYNC may go to id 3.
    bench = Bench(FMT2, (0, 1, 2), nodes=(0, 1, 2), seed=5)
    bench.run(700, resets=[(100, 2, 2)], stop_sending=550)
    bench.check(min_after=3)
    assert bench.cfgs[0].nodes == (0, 1, 2)


# 3-bit tags (the least, MIN_TAG_BITS): a 10-bit argument less 3 flag bits and 4 of `held`.
FMT_NARROW = FlitFormat(width=32, vcs=2, id_bits=4, arg_bits=10)


@pytest.mark.parametrize("seed", [22, 25])
def test_nodes_reset_together_lose_no_packet(seed):
    # Every node reset at once, before any traffic (BlueDBM's 20 nodes after the power-on
    # reset in `optnet sim`): each gets every peer's fresh SYNC while it waits for that peer
    # and answers it with a SYNC of its own. Before the fix that SYNC followed the ACK and
    # took a new tag from a counter shared by all peers: after 2 ** tag_bits peers (here 8
    # of 9) it came round to the fresh SYNC's tag, so a node took the peer's ACK of its
    # fresh SYNC for the answer to the new one and ended its wait before it had answered
    # the peer's own second SYNC; the peer, still waiting, dropped what the node then sent
    # it. No packet here predates the reset: none may be dropped and every one must arrive.
    ids = range(10)
    bench = Bench(FMT_NARROW, ids, nodes=tuple(ids), seed=seed, latency=(1, 12), p_send=1.0)
    assert 1 << bench.cfgs[0].tag_bits < len(ids) - 1
    bench.run(700, resets=[(0, i, 2) for i in ids], stop_sending=450)
    bench.check(min_after=1)
    assert bench.dropped == dict.fromkeys(ids, 0)
    assert not [k for k in bench.sent if k not in bench.taken]


@pytest.mark.parametrize("seed", [11, pytest.param(12, marks=pytest.mark.slow),
                                  pytest.param(13, marks=pytest.mark.slow)])
def test_random_resets_under_random_traffic(seed):
    rng = random.Random(seed)
    resets, t = [], 150
    while t < 2600:
        node = rng.randrange(3)
        resets.append((t, node, rng.randint(1, 4)))
        if rng.random() < 0.3:            # again while its resync is under way
            resets.append((t + rng.randint(3, 30), node, 1))
        if rng.random() < 0.3:            # another node at about the same time
            resets.append((t + rng.randint(0, 10), (node + 1) % 3, rng.randint(1, 3)))
        t += rng.randint(40, 400)
    bench = Bench(FMT2, (0, 1, 2), nodes=(0, 1, 2), seed=seed, latency=(1, 40))
    bench.run(3400, resets=resets, stop_sending=3050)
    bench.check()


def test_control_arg_round_trip():
    cfg = EndpointConfig(FMT2, node_id=0, index=0, width=32, max_packet=3, credit=16,
                         offset=8)
    assert cfg.tag_bits + cfg.held_bits + 3 <= FMT2.arg_bits and cfg.tag_bits >= 3
    for ack, tag, held, fresh in [(0, 5, 0, 1), (1, 2, 24, 0), (1, 0, 0, 0)]:
        arg = Control.pack(cfg, ack=ack, tag=tag, held=held, fresh=fresh)
        assert Control.unpack(cfg, arg) == {"ack": ack, "tag": tag, "held": held,
                                            "fresh": fresh}
    assert Control.unpack(cfg, cfg.credit) is None
    assert KIND_CREDIT != KIND_DATA
    with pytest.raises(ValueError, match="reset handshake"):
        EndpointConfig(FMT2, node_id=0, index=0, width=32, max_packet=3, credit=4096)
