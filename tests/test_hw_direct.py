"""Direct switch (OPTWEB's distributed switch) in a simulated fully connected cluster.

Every link is a Python delay line of fixed latency whose PHY ``ready`` is random; users
send random eager and rendezvous messages to all peers and take them with random
back-pressure. Two reference models judge the run: the delivery model (every message
arrives exactly once, whole, uninterleaved and in order per (source, destination), and a
receive buffer never holds more than ``buffer`` beats, counted in Python from the words on
``rx`` and the beats taken from ``m_axis``), and a protocol model that replays the words of
every link (:func:`check_protocol`)."""

from __future__ import annotations

import random
import re
from bisect import bisect_left
from collections import defaultdict, deque
from dataclasses import dataclass, field

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from optnet.hw.direct import (
    OP_CREDIT,
    OP_CTS,
    OP_EAGER,
    OP_RTS,
    DirectConfig,
    DirectLink,
    DirectSwitch,
)
from optnet.hw.verilog import to_verilog
from optnet.model import DIRECT_SWITCH_CYCLES
from optnet.plan.configs import DirectLinkConfig


def port_to(a: int, b: int) -> int:
    """Port of node ``a`` that leads to node ``b`` (the peers in node order, ``a`` left out)."""
    return b if b < a else b - 1


def peer_at(a: int, port: int) -> int:
    """Node at the far end of node ``a``'s ``port``."""
    return port if port < a else port + 1


@dataclass
class Message:
    src: int
    dst: int | None      # None: an invalid tdest (the switch must discard it)
    beats: list[int]
    start: int = 0       # first cycle it may be offered
    ep: int = 0          # endpoint it is for


@dataclass
class Run:
    cycles: int = 0
    trace: list = field(default_factory=list)          # (cycle, from node, to node, word)
    offered: dict = field(default_factory=dict)        # id(message) -> first cycle offered
    delivered: dict = field(default_factory=lambda: defaultdict(list))
    beats: list = field(default_factory=list)          # (cycle, node, from node, tdata)
    peak: int = 0                                      # most beats ever buffered per source
    sent: list = field(default_factory=list)           # sent_messages counters at the end
    received: list = field(default_factory=list)


def _fields(layout):
    return {name: (f.offset, f.width) for name, f in layout}


def _check_held(held, port, offer, ready, cycle):
    """A stream that offered a word last cycle which was not taken must offer it again
    (``offer`` is the word offered this cycle, None for none)."""
    before = held.pop(port, None)
    if before is not None:
        assert offer == before, (
            f"cycle {cycle}: {port} withdrew or changed {before:#x} before it was taken")
    if offer is not None and not ready:
        held[port] = offer


def run_cluster(cfg: DirectConfig, messages: list[Message], *, latency: int, phy_ready=1.0,
                sink_ready=(1.0,), src_valid=1.0, down=(), seed=0, max_cycles=20000,
                settle=30) -> Run:
    """Simulate ``cfg.peers + 1`` switches, fully connected, until every message is delivered
    (and ``settle`` cycles more); assert the delivery properties on the way.

    ``down`` is a list of ``(a, b, first, last)``: the link between nodes ``a`` and ``b`` is
    down from cycle ``first`` to ``last`` (both ends see it).
    """
    n = cfg.peers + 1
    duts = [DirectSwitch(cfg) for _ in range(n)]
    top = Module()
    for i, dut in enumerate(duts):
        top.submodules[f"node{i}"] = dut
    sim = Simulator(top)
    sim.add_clock(1e-8)
    rng = random.Random(seed)
    s_f, m_f = _fields(cfg.s_axis_layout), _fields(cfg.m_axis_layout)
    queues = [deque(msg for msg in messages if msg.src == a) for a in range(n)]
    expected = defaultdict(deque)
    for msg in messages:
        if msg.dst is not None:
            expected[msg.src, msg.dst].append((msg.ep, msg.beats))
    to_deliver = sum(len(q) for q in expected.values())
    links = [(a, p) for a in range(n) for p in range(cfg.peers)]
    lines = {key: deque() for key in links}         # (due cycle, word)
    occupancy = defaultdict(int)                    # (node, port) -> beats buffered
    sinks = [sink_ready[b % len(sink_ready)] for b in range(n)]
    run = Run()

    def pack(msg, k):
        dest = cfg.peers if msg.dst is None else port_to(msg.src, msg.dst)
        value = {"tdata": msg.beats[k], "tlast": int(k == len(msg.beats) - 1), "tdest": dest,
                 "tuser": len(msg.beats) if k == 0 else 0, "tid": msg.ep}
        return sum(value[name] << off for name, (off, _) in s_f.items())

    def field_of(word, name):
        off, width = m_f[name]
        return word >> off & ((1 << width) - 1)

    async def bench(ctx):
        current = [None] * n          # (message, next beat index)
        offering = [False] * n
        rx_valid = dict.fromkeys(links, False)
        up_state = dict.fromkeys(links, True)
        partial = [None] * n          # (source port, beats so far) of the message on m_axis
        # (stream, payload) offered but not taken last cycle: must be offered again unchanged
        held = {}
        remaining = to_deliver
        left = settle
        for dut in duts:
            for p in range(cfg.peers):
                ctx.set(dut.up[p], 1)
        for cycle in range(max_cycles):
            for a, p in links:
                b = peer_at(a, p)
                up = not any(first <= cycle <= last and {x, y} == {a, b}
                             for x, y, first, last in down)
                if up != up_state[a, p]:
                    ctx.set(duts[a].up[p], up)
                    up_state[a, p] = up
            # users offer beats
            for a, dut in enumerate(duts):
                if current[a] is None and queues[a] and queues[a][0].start <= cycle:
                    current[a] = (queues[a].popleft(), 0)
                offer = current[a] is not None and rng.random() < src_valid
                if offer:
                    msg, k = current[a]
                    run.offered.setdefault(id(msg), cycle)
                    ctx.set(dut.s_axis.payload.as_value(), pack(msg, k))
                if offer or offering[a]:
                    ctx.set(dut.s_axis.valid, offer)
                offering[a] = offer
            # words arrive after the link latency
            for a, p in links:
                b = peer_at(a, p)
                rx = duts[b].rx[port_to(b, a)]
                line = lines[a, p]
                if line and line[0][0] == cycle:
                    word = line.popleft()[1]
                    ctx.set(rx.payload, word)
                    ctx.set(rx.valid, 1)
                    rx_valid[a, p] = True
                    if cfg.decode(word)[0] is None:
                        occupancy[b, a] += 1
                        run.peak = max(run.peak, occupancy[b, a])
                        assert occupancy[b, a] <= cfg.buffer, (
                            f"cycle {cycle}: node {b} holds {occupancy[b, a]} beats from {a}")
                elif rx_valid[a, p]:
                    ctx.set(rx.valid, 0)
                    rx_valid[a, p] = False
            # the PHYs take words (or not)
            for a, p in links:
                tx = duts[a].tx[p]
                ready = rng.random() < phy_ready
                ctx.set(tx.ready, ready)
                valid = ctx.get(tx.valid)
                word = ctx.get(tx.payload) if valid else None
                if not up_state[a, p]:
                    held.pop(tx, None)      # a link going down may take back its word
                _check_held(held, tx, word, ready, cycle)
                if valid:
                    assert up_state[a, p], f"cycle {cycle}: node {a} sent on port {p} while down"
                    if ready:
                        lines[a, p].append((cycle + latency, word))
                        run.trace.append((cycle, a, peer_at(a, p), word))
            # users take messages
            for b, dut in enumerate(duts):
                ready = rng.random() < sinks[b]
                ctx.set(dut.m_axis.ready, ready)
                valid = ctx.get(dut.m_axis.valid)
                word = ctx.get(dut.m_axis.payload.as_value()) if valid else None
                _check_held(held, dut.m_axis, word, ready, cycle)
                if not (ready and valid):
                    continue
                port, tdata, tlast, ep = (field_of(word, f)
                                          for f in ("tid", "tdata", "tlast", "tdest"))
                a = peer_at(b, port)
                occupancy[b, a] -= 1
                run.beats.append((cycle, b, a, tdata))
                if partial[b] is None:
                    partial[b] = (port, ep, [])
                assert partial[b][:2] == (port, ep), (
                    f"cycle {cycle}: node {b} interleaves a message from port {port} for "
                    f"endpoint {ep} into one from port {partial[b][0]} for {partial[b][1]}")
                partial[b][2].append(tdata)
                if tlast:
                    beats = partial[b][2]
                    partial[b] = None
                    assert expected[a, b], f"node {b}: unexpected message from {a}: {beats}"
                    want = expected[a, b].popleft()
                    assert (ep, beats) == want, (
                        f"node {b} from {a}: got {(ep, beats)}, expected {want}")
                    run.delivered[a, b].append(beats)
                    remaining -= 1
            # the switches take beats
            for a, dut in enumerate(duts):
                if offering[a] and ctx.get(dut.s_axis.ready):
                    msg, k = current[a]
                    current[a] = None if k + 1 == len(msg.beats) else (msg, k + 1)
            await ctx.tick()
            run.cycles = cycle + 1
            if remaining == 0 and not any(queues) and current == [None] * n:
                left -= 1
                if left == 0:
                    break
        assert remaining == 0, f"{remaining} messages not delivered in {max_cycles} cycles"
        assert all(p is None for p in partial)
        run.sent = [ctx.get(dut.sent_messages) for dut in duts]
        run.received = [ctx.get(dut.received_messages) for dut in duts]

    sim.add_testbench(bench)
    sim.run()
    return run


def check_protocol(cfg: DirectConfig, run: Run, latency: int) -> None:
    """Replay the words of every link through a reference model of the protocol.

    Per flow (sender, receiver): words are framed as EAGER(n <= threshold) or
    RTS(n > threshold) followed by exactly n data words; the sender's credit (``buffer``
    plus the CTS/CREDIT grants that had reached it, counted from the cycle after they
    arrived, since the switch registers them) covers each eager message whole and each
    rendezvous beat, never goes negative and never exceeds ``buffer``; rendezvous data
    waits for the CTS, which comes once per RTS; and a receiver grants only beats its user
    has already taken.
    """
    events = []         # (cycle it takes effect, grants first, order, op, flow, arg)
    grants = defaultdict(list)      # (receiver, sender) -> (cycle sent, amount)
    for k, (cycle, a, b, word) in enumerate(run.trace):
        op, arg = cfg.decode(word)
        if op in (OP_CTS, OP_CREDIT):       # a grants b credit for b's flow to a
            events.append((cycle + latency + 1, 0, k, op, (b, a), arg))
            grants[a, b].append((cycle, arg))
        else:
            events.append((cycle, 1, k, op, (a, b), arg))
    credit = defaultdict(lambda: cfg.buffer)
    frame = defaultdict(lambda: (None, 0))   # flow -> (kind, data words still to come)
    cleared = {}                               # flow -> the CTS of its RTS has arrived
    for t, _, _, op, flow, arg in sorted(events):
        kind, left = frame[flow]
        where = f"cycle {t}, flow {flow}"
        if op is None:
            assert left > 0, f"{where}: data word outside a message"
            if kind == "rendezvous":
                assert cleared[flow], f"{where}: rendezvous data before the CTS"
                credit[flow] -= 1
                assert credit[flow] >= 0, f"{where}: data word without credit"
            frame[flow] = (kind, left - 1)
        elif op in (OP_EAGER, OP_RTS):
            assert left == 0, f"{where}: header inside a message"
            if op == OP_EAGER:
                assert 1 <= arg <= cfg.threshold, f"{where}: eager message of {arg}"
                assert credit[flow] >= arg, f"{where}: eager message of {arg} on {credit[flow]}"
                credit[flow] -= arg
                frame[flow] = ("eager", arg)
            else:
                assert arg > cfg.threshold, f"{where}: rendezvous message of {arg}"
                frame[flow] = ("rendezvous", arg)
                cleared[flow] = False
        else:
            credit[flow] += arg
            assert credit[flow] <= cfg.buffer, f"{where}: credit {credit[flow]}"
            if op == OP_CTS:
                assert kind == "rendezvous" and not cleared[flow], f"{where}: stray CTS"
                cleared[flow] = True
    assert all(left == 0 for _, left in frame.values())
    # Grants never run ahead of what the receiver's user took.
    for (b, a), sent in grants.items():
        taken = sorted(c for c, node, src, _ in run.beats if (node, src) == (b, a))
        granted = 0
        for cycle, amount in sent:
            granted += amount
            assert granted <= bisect_left(taken, cycle), (
                f"node {b} granted {granted} beats to {a} by cycle {cycle}")
    # At rest every sender has its credit back, but for returns smaller than a batch.
    for flow, value in credit.items():
        assert cfg.buffer - value < cfg.batch, f"flow {flow}: credit {value} at the end"


def random_messages(cfg: DirectConfig, rng: random.Random, count: int) -> list[Message]:
    """``count`` messages per node to random peers: half eager (1 to threshold beats), half
    rendezvous (up to three buffers), and one with an invalid ``tdest`` when there is one."""
    n = cfg.peers + 1
    out = []
    for a in range(n):
        for i in range(count):
            b = rng.choice([x for x in range(n) if x != a])
            if cfg.threshold and rng.random() < 0.5:
                length = rng.randint(1, cfg.threshold)
            else:
                length = rng.randint(cfg.threshold + 1, max(cfg.threshold + 1, 3 * cfg.buffer))
            if i == count // 2 and cfg.peers < 1 << cfg.peer_bits:
                b = None
            out.append(Message(a, b, [rng.getrandbits(cfg.width) for _ in range(length)],
                               ep=rng.randrange(cfg.endpoints)))
    return out


# (config, link latency, seed): an ordinary buffer (three endpoints); eager threshold ==
# buffer (credit returned beat by beat); the smallest buffers (2 and 1 beats); everything
# rendezvous.
CASES = [
    (DirectConfig(width=24, peers=3, threshold=4, buffer=8, phy_width=25, endpoints=3), 5, 1),
    (DirectConfig(width=24, peers=3, threshold=4, buffer=8, phy_width=25), 1, 6),
    (DirectConfig(width=20, peers=3, threshold=6, buffer=6, phy_width=21, max_length_bits=8),
     3, 2),
    (DirectConfig(width=12, peers=2, threshold=2, buffer=2, phy_width=13, max_length_bits=6),
     7, 3),
    (DirectConfig(width=12, peers=3, threshold=0, buffer=1, phy_width=13, max_length_bits=6),
     2, 4),
    (DirectConfig(width=24, peers=3, threshold=0, buffer=16, phy_width=25), 9, 5),
]


@pytest.mark.parametrize(("cfg", "latency", "seed"), [
    case if i in (0, 4) else pytest.param(*case, marks=pytest.mark.slow)
    for i, case in enumerate(CASES)])
def test_random_traffic(cfg, latency, seed):
    rng = random.Random(seed)
    messages = random_messages(cfg, rng, 25)
    n = cfg.peers + 1
    # One link goes down for a while: nothing may be sent on it meanwhile.
    down = [(0, 1, 200, 260)]
    run = run_cluster(cfg, messages, latency=latency, phy_ready=0.8,
                      sink_ready=[rng.uniform(0.3, 0.7) for _ in range(n)], src_valid=0.9,
                      down=down, seed=seed)
    valid = [msg for msg in messages if msg.dst is not None]
    assert sum(len(v) for v in run.delivered.values()) == len(valid)
    assert run.sent == [sum(m.src == a for m in valid) for a in range(n)]
    assert run.received == [sum(m.dst == b for m in valid) for b in range(n)]
    # the receive buffers were actually filled, so the bound was tested
    assert run.peak == cfg.buffer
    check_protocol(cfg, run, latency)


def _first(trace, src, dst, since, pred):
    """Cycle and word of the first word ``src`` sent ``dst`` from cycle ``since`` on that
    satisfies ``pred``."""
    for cycle, a, b, word in trace:
        if a == src and b == dst and cycle >= since and pred(word):
            return cycle, word
    raise AssertionError("word not found")


@pytest.mark.parametrize("latency", [4, 11])
def test_eager_skips_the_round_trip(latency):
    cfg = DirectConfig(width=24, peers=1, threshold=4, buffer=8, phy_width=25)
    eager = Message(0, 1, [0x111, 0x222, 0x333], start=5)
    rendezvous = Message(0, 1, list(range(1, 21)), start=100)
    run = run_cluster(cfg, [eager, rendezvous], latency=latency)
    trace = run.trace

    def is_op(op):
        return lambda word: cfg.decode(word)[0] == op

    def is_data(word):
        return cfg.decode(word)[0] is None

    t0 = run.offered[id(eager)]
    header, word = _first(trace, 0, 1, t0, is_op(OP_EAGER))
    assert cfg.decode(word) == (OP_EAGER, 3)
    data, word = _first(trace, 0, 1, t0, is_data)
    assert cfg.decode(word) == (None, 0x111)
    # Eager: header next cycle, data right behind it, no round trip (the report's model
    # books the switch's cycles, optnet.model.DIRECT_SWITCH_CYCLES, each way).
    assert (header - t0, data - t0) == (1, DIRECT_SWITCH_CYCLES)
    # Two cycles from rx to m_axis.
    assert run.beats[0] == (data + latency + DIRECT_SWITCH_CYCLES, 1, 0, 0x111)

    t1 = run.offered[id(rendezvous)]
    rts, word = _first(trace, 0, 1, t1, is_op(OP_RTS))
    assert cfg.decode(word) == (OP_RTS, 20)
    cts, _ = _first(trace, 1, 0, t1, is_op(OP_CTS))
    data, word = _first(trace, 0, 1, t1, is_data)
    assert cfg.decode(word) == (None, 1)
    assert rts - t1 == 1
    assert cts >= rts + latency            # the CTS answers the RTS ...
    assert data >= cts + latency           # ... and the data waits until it has arrived
    assert data - t1 == 2 * latency + 5
    # Credit came back in CREDIT words while the 20 beats streamed through 8 of buffer.
    assert any(a == 1 and cfg.decode(w)[0] == OP_CREDIT for _, a, _, w in trace)
    assert run.delivered[0, 1] == [eager.beats, rendezvous.beats]
    check_protocol(cfg, run, latency)


def test_streams_at_full_rate():
    """With ready PHYs and users and a buffer that covers the credit round trip, messages
    leave at one word a cycle: back-to-back eager messages, and a rendezvous message
    longer than the buffer once its CTS is in."""
    cfg = DirectConfig(width=24, peers=1, threshold=4, buffer=16, phy_width=25)
    run = run_cluster(cfg, [Message(0, 1, [i] * 4) for i in range(20)], latency=2)
    words = [c for c, a, _, _ in run.trace if a == 0]
    assert len(words) == 20 * 5 and words[-1] - words[0] == len(words) - 1
    run = run_cluster(cfg, [Message(0, 1, list(range(200)))], latency=2)
    words = [c for c, a, _, w in run.trace if a == 0 and cfg.decode(w)[0] is None]
    assert len(words) == 200 and words[-1] - words[0] == len(words) - 1


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"buffer": 3}, "smaller than the eager threshold"),
    ({"phy_width": 24}, "phy_width must be width + 1"),
    ({"width": 16, "phy_width": 17}, "cannot hold a control word"),
    ({"peers": 0}, "at least one peer"),
    ({"buffer": 0, "threshold": 0}, "at least one beat"),
    ({"threshold": -1}, "cannot be negative"),
    ({"threshold": 300, "buffer": 300, "max_length_bits": 8}, "does not fit"),
])
def test_config_validation(kwargs, words):
    args = {"width": 24, "peers": 3, "threshold": 4, "buffer": 8, "phy_width": 25}
    args.update(kwargs)
    with pytest.raises(ValueError, match=re.escape(words)):
        DirectConfig(**args)


def test_batch():
    assert DirectConfig(24, 3, 4, 8, 25).batch == 2
    assert DirectConfig(24, 3, 8, 8, 25).batch == 1
    assert DirectConfig(24, 3, 64, 1024, 25).batch == 256


def test_verilog():
    text = to_verilog(DirectSwitch(DirectConfig(24, 3, 4, 8, 25)), "direct")
    assert "module direct" in text


# ----------------------------------------------------------------------------- direct links

def run_link(cfg: DirectLinkConfig, words: list[int], *, latency=3, ready=0.7, seed=0,
             sync=10e-9, phy=7e-9) -> list[int]:
    """Send switch ``words`` through one direct link's sending side, a delay line of
    ``latency`` PHY cycles whose PHY takes a word with probability ``ready``, and another's
    receiving side; returns the words received."""
    a, b = DirectLink(cfg), DirectLink(cfg)
    top = Module()
    top.submodules.a, top.submodules.b = a, b
    top.domains += ClockDomain(cfg.phy_domain)
    sim = Simulator(top)
    sim.add_clock(sync)
    sim.add_clock(phy, domain=cfg.phy_domain)
    rng = random.Random(seed)
    out = []

    async def line(ctx):
        pending = deque()
        ctx.set(a.phy_up, 1)
        ctx.set(b.phy_up, 1)
        cycle = 0
        while True:
            take = rng.random() < ready
            ctx.set(a.phy_tx.ready, take)
            if take and ctx.get(a.phy_tx.valid):
                pending.append((cycle + latency, ctx.get(a.phy_tx.payload)))
            if pending and pending[0][0] == cycle:
                ctx.set(b.phy_rx.payload, pending.popleft()[1])
                ctx.set(b.phy_rx.valid, 1)
            else:
                ctx.set(b.phy_rx.valid, 0)
            await ctx.tick(cfg.phy_domain)
            cycle += 1

    async def bench(ctx):
        k = 0
        for _ in range(40 * len(words) + 200):
            if k < len(words):
                ctx.set(a.tx.valid, 1)
                ctx.set(a.tx.payload, words[k])
            else:
                ctx.set(a.tx.valid, 0)
            if k < len(words) and ctx.get(a.tx.ready):
                k += 1
            if ctx.get(b.rx.valid):
                out.append(ctx.get(b.rx.payload))
            await ctx.tick()
            if len(out) == len(words):
                break

    sim.add_testbench(line, background=True)
    sim.add_testbench(bench)
    sim.run()
    return out


@pytest.mark.parametrize(("width", "control_bits", "phy_width"), [
    (256, 18, 128),     # OPTWEB: a beat is two SerialLite III x2 words, a control word two
    (24, 18, 8),        # a control word's body takes three PHY words, a beat three
    (20, 18, 32),       # a beat narrower than a PHY word
    (64, 19, 64),       # a beat of one PHY word: the escape word takes one more
])
def test_direct_link_carries_every_word(width, control_bits, phy_width):
    cfg = DirectLinkConfig(width, control_bits, phy_width, "phy")
    rng = random.Random(width)
    escape = cfg.escape
    words = []
    for i in range(120):
        kind = i % 4
        if kind == 0:       # a control word
            words.append(1 << width | rng.getrandbits(control_bits))
        elif kind == 1:     # a data word starting with the escape word
            low = escape & ((1 << min(width, phy_width)) - 1)
            words.append(rng.getrandbits(width) >> phy_width << phy_width | low)
        else:
            words.append(rng.getrandbits(width))
    assert run_link(cfg, words, seed=width) == words


def test_direct_link_words():
    # OPTWEB's link: a 256-bit beat is two 128-bit words, a control word the escape word
    # and its body behind a marker bit; an escaped beat three words.
    cfg = DirectLinkConfig(256, 18, 128, "phy")
    assert (cfg.data_words, cfg.control_words) == (2, 2)
    assert DirectLinkConfig(24, 18, 8, "phy").control_words == 4
    assert cfg.escape == (0x9E3779B97F4A7C15 << 64 | 0x9E3779B97F4A7C15)
    with pytest.raises(ValueError, match="control word does not fit"):
        DirectLinkConfig(16, 18, 8, "phy")
