# amaranth: UnusedElaboratable=no
"""LvdsPhy: two adapters wired pad to pad in simulation; loss of lock; vendor Verilog."""

# (The marker above, which Amaranth reads from a file's first line only, is for the argument
# checks: an adapter whose constructor raises is never elaborated.)

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

import pytest
from amaranth.build import Attrs, DiffPairs, Pins, Resource, Subsignal
from amaranth.hdl import (
    C,
    Cat,
    ClockDomain,
    ClockSignal,
    Elaboratable,
    Fragment,
    Module,
    Signal,
)
from amaranth.lib import io
from amaranth.sim import Simulator
from amaranth.vendor import LatticeECP5Platform

from optnet.hw.phy.lvds import (
    CODE_IDLE,
    CODE_MARK,
    CODE_TRAIN,
    CONTROL_CODES,
    CYCLES_PER_WORD,
    HEADER_CTRL,
    HEADER_DATA,
    LINE_BITS,
    LvdsPhy,
)
from optnet.hw.verilog import to_verilog
from optnet.phys import user_width
from tests.hwtools import AMARANTH_LINT_CONFIG, lint_verilog

# A's and B's local clocks differ by 4 %: each receiver runs on the far end's forwarded
# clock and crosses into its own clock, so nothing may assume they are equal.
TA, TB = 10e-9, 10.4e-9


@dataclass(frozen=True)
class Path:
    """One direction of the channel: per-lane data delays and the forwarded clock delay,
    in bits (half clock periods). The clock gets another quarter period on top, so the
    receiver samples in the middle of each bit."""

    data_bits: tuple[int, ...]
    clock_bits: int


def _delay(m: Module, domain: str, signal, ticks: int):
    line = Signal(ticks)
    m.d[domain] += line.eq(Cat(signal, line[:-1]))
    return line[-1]


class Link(Elaboratable):
    """Adapter ``a`` (domain "a", clock "ta") and ``b`` (domain "b", clock "tb"), pads
    crossed over two channels. Each channel samples its transmitter's pads at four times
    the clock rate (domains "la", "lb", a quarter period off the clock edges) and delays
    them; ``stuck``/``invert``/``clock_stop`` disturb the A-to-B direction."""

    def __init__(self, lanes: int, ab: Path, ba: Path, **options):
        self.lanes = lanes
        self.a = LvdsPhy(lanes, "a", **options)
        self.b = LvdsPhy(lanes, "b", **options)
        self.ab, self.ba = ab, ba
        self.stuck = Signal(lanes)
        self.invert = Signal(lanes)
        self.clock_stop = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.a, m.submodules.b = self.a, self.b
        for name in ("ta", "tb", "la", "lb"):
            m.domains += ClockDomain(name)
        m.d.comb += [self.a.clk_in.eq(ClockSignal("ta")), self.b.clk_in.eq(ClockSignal("tb"))]
        zeros = C(0, self.lanes)
        self._wire(m, "la", self.a, self.b, self.ab, self.stuck, self.invert, self.clock_stop)
        self._wire(m, "lb", self.b, self.a, self.ba, zeros, zeros, C(0, 1))
        return m

    @staticmethod
    def _wire(m, domain, src, dst, path, stuck, invert, clock_stop):
        clock = _delay(m, domain, src.clk_p, 2 * path.clock_bits + 3)
        m.d.comb += dst.rclk_p.eq(clock & ~clock_stop)
        for i, bits in enumerate(path.data_bits):
            data = _delay(m, domain, src.tx_p[i], 2 * bits + 2)
            m.d.comb += dst.rx_p[i].eq((data ^ invert[i]) & ~stuck[i])


@dataclass
class Log:
    """What one adapter's user side saw."""

    words: list[int] = field(default_factory=list)
    up_at_word: list[bool] = field(default_factory=list)
    edges: list[tuple[int, bool]] = field(default_factory=list)  # (cycle, new up)
    cycles: int = 0
    up: bool = False


def _simulator(link: Link) -> tuple[Simulator, dict[str, Log]]:
    sim = Simulator(link)
    sim.add_clock(TA, domain="ta")
    sim.add_clock(TA / 4, phase=TA / 2 + TA / 8, domain="la")
    sim.add_clock(TB, domain="tb")
    sim.add_clock(TB / 4, phase=TB / 2 + TB / 8, domain="lb")
    logs = {"a": Log(), "b": Log()}
    for phy, domain, log in ((link.a, "ta", logs["a"]), (link.b, "tb", logs["b"])):
        sim.add_process(_monitor(phy, domain, log))
    return sim, logs


def _monitor(phy, domain, log):
    async def process(ctx):
        async for _, _, valid, payload, up in ctx.tick(domain).sample(
                phy.rx.valid, phy.rx.payload, phy.up):
            log.cycles += 1
            if valid:
                log.words.append(payload)
                log.up_at_word.append(bool(up))
            if bool(up) != log.up:
                log.up = bool(up)
                log.edges.append((log.cycles, log.up))
    return process


async def _wait(ctx, phy, domain, up: bool, limit: int) -> int:
    """Cycles of ``domain`` until ``phy.up == up``; fails after ``limit``."""
    for n in range(1, limit + 1):
        *_, now = await ctx.tick(domain).sample(phy.up)
        if bool(now) == up:
            return n
    raise AssertionError(f"up did not become {up} within {limit} cycles")


async def _send(ctx, phy, domain, words, rng, gaps=(0, 0, 0, 1, 2, 7)):
    """Offer ``words`` on ``phy.tx`` with random idle gaps between them."""
    for word in words:
        for _ in range(rng.choice(gaps)):
            await ctx.tick(domain)
        ctx.set(phy.tx.valid, 1)
        ctx.set(phy.tx.payload, word)
        for _ in range(1000):
            *_, ready = await ctx.tick(domain).sample(phy.tx.ready)
            if ready:
                break
        else:
            raise AssertionError("tx.ready never came")
        ctx.set(phy.tx.valid, 0)


async def _idle(ctx, domain, cycles):
    for _ in range(cycles):
        await ctx.tick(domain)


def _words(rng, lanes, count):
    return [rng.getrandbits(8 * lanes) for _ in range(count)]


# -- line code ----------------------------------------------------------------------------


def test_control_codes_cannot_alias():
    """Every misaligned window of a control stream is >= 3 bits from every code; codes are
    >= 5 bits apart; all carry the control header."""
    mask = (1 << LINE_BITS) - 1

    def dist(x, y):
        return bin(x ^ y).count("1")

    assert {code & 3 for code in CONTROL_CODES} == {HEADER_CTRL}
    assert HEADER_DATA != HEADER_CTRL
    assert len({CODE_MARK, CODE_TRAIN, CODE_IDLE}) == 3
    assert min(dist(x, y) for x, y in itertools.combinations(CONTROL_CODES, 2)) >= 5
    windows = [((x >> s) | (y << (LINE_BITS - s))) & mask
               for x in CONTROL_CODES for y in CONTROL_CODES for s in range(1, LINE_BITS)]
    assert min(dist(w, c) for w in windows for c in CONTROL_CODES) >= 3


def test_width_and_arguments():
    phy = LvdsPhy(3, "lvds")
    assert phy.width == user_width("lvds", 3) == 24
    assert len(phy.tx.payload) == len(phy.rx.payload) == 24
    assert len(phy.tx_p) == len(phy.rx_n) == 3
    Fragment.get(phy, None)  # elaborates without a platform
    with pytest.raises(ValueError, match="family"):
        LvdsPhy(1, "x", "stratix")
    with pytest.raises(ValueError, match="lanes"):
        LvdsPhy(0, "x")
    with pytest.raises(TypeError, match="bogus"):
        LvdsPhy(1, "x", bogus=1)
    with pytest.raises(ValueError, match="fifo_depth"):
        LvdsPhy(1, "x", fifo_depth=6)
    with pytest.raises(ValueError, match="ports"):
        LvdsPhy(1, "x", "platform")


# -- simulation: data integrity ------------------------------------------------------------

# (lanes, seed): seed 0 puts exactly one word of skew between the first and last lane, and
# the clock late by several bits; other seeds draw delays at random within one word.
CASES = [(1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1)]


def _path(rng, lanes, extreme):
    if extreme:
        base = rng.randrange(4)
        bits = [base + rng.randrange(LINE_BITS + 1) for _ in range(lanes)]
        bits[0], bits[-1] = base + LINE_BITS, base  # the last lane a whole word early
        return Path(tuple(bits), base + LINE_BITS + 3)
    base = rng.randrange(6)
    return Path(tuple(base + rng.randrange(LINE_BITS + 1) for _ in range(lanes)),
                rng.randrange(2 * LINE_BITS))


@pytest.mark.parametrize(("lanes", "seed"), CASES)
def test_random_traffic_both_ways(lanes, seed):
    rng = random.Random(seed * 100 + lanes)
    link = Link(lanes, _path(rng, lanes, seed == 0), _path(rng, lanes, seed == 0))
    sim, logs = _simulator(link)
    sent = {"a": _words(rng, lanes, 80), "b": _words(rng, lanes, 80)}
    lock = {}

    def sender(phy, domain, key):
        async def bench(ctx):
            lock[key] = await _wait(ctx, phy, domain, True, 1000)
            await _send(ctx, phy, domain, sent[key], random.Random(seed + len(key)))
            await _idle(ctx, domain, 60)
        return bench

    sim.add_testbench(sender(link.a, "ta", "a"))
    sim.add_testbench(sender(link.b, "tb", "b"))
    sim.run()
    assert logs["b"].words == sent["a"]
    assert logs["a"].words == sent["b"]
    for log in logs.values():
        assert all(log.up_at_word)
        assert [up for _, up in log.edges] == [True]  # never dropped once up
    # Both ends come up within ~40 words (5 cycles each) of the far end's clock.
    assert max(lock.values()) < 40 * CYCLES_PER_WORD


def test_full_rate_with_forced_control_words():
    """Back-to-back words: one per 5 cycles, minus one control word per ``ctrl_period``."""
    lanes, period, count = 2, 16, 200
    rng = random.Random(7)
    link = Link(lanes, Path((0, 3), 1), Path((2, 2), 0), ctrl_period=period)
    sim, logs = _simulator(link)
    sent = _words(rng, lanes, count)
    span = {}

    async def bench(ctx):
        await _wait(ctx, link.a, "ta", True, 1000)
        await _wait(ctx, link.b, "tb", True, 1000)  # sample B's up on its own clock
        start = logs["a"].cycles
        await _send(ctx, link.a, "ta", sent, rng, gaps=(0,))
        span["cycles"] = logs["a"].cycles - start
        await _idle(ctx, "ta", 60)

    sim.add_testbench(bench)
    sim.run()
    assert logs["b"].words == sent
    ideal = count * CYCLES_PER_WORD * (period + 1) / period
    assert abs(span["cycles"] - ideal) <= 2 * CYCLES_PER_WORD


def test_more_than_a_word_of_skew_never_comes_up():
    """Out of spec, the link must stay down rather than pair up the wrong words."""
    link = Link(2, Path((0, LINE_BITS + 4), 3), Path((0, 0), 3))
    sim, logs = _simulator(link)

    async def bench(ctx):
        await _idle(ctx, "tb", 1500)

    sim.add_testbench(bench)
    sim.run()
    assert logs["b"].edges == [] and logs["a"].edges == []


# -- simulation: loss of lock ----------------------------------------------------------------


@pytest.mark.parametrize("fault", ["stuck", "invert", "clock"])
def test_loss_of_lock_and_recovery(fault):
    lanes = 2
    rng = random.Random(11)
    link = Link(lanes, Path((1, 6), 4), Path((3, 0), 2))
    sim, logs = _simulator(link)
    first, second = _words(rng, lanes, 30), _words(rng, lanes, 30)
    seen = {}

    async def bench(ctx):
        await _wait(ctx, link.a, "ta", True, 1000)
        await _wait(ctx, link.b, "tb", True, 1000)
        await _send(ctx, link.a, "ta", first, rng)
        await _idle(ctx, "ta", 40)
        assert logs["b"].words == first
        if fault == "clock":
            ctx.set(link.clock_stop, 1)
        else:
            ctx.set(link.stuck if fault == "stuck" else link.invert, 0b10)
        seen["b_down"] = await _wait(ctx, link.b, "tb", False, 200)
        seen["a_down"] = await _wait(ctx, link.a, "ta", False, 200)
        await _idle(ctx, "ta", 300)
        assert not logs["b"].up and not logs["a"].up  # stays down while disturbed
        ctx.set(link.clock_stop, 0)
        ctx.set(link.stuck, 0)
        ctx.set(link.invert, 0)
        seen["relock"] = await _wait(ctx, link.a, "ta", True, 1000)
        await _wait(ctx, link.b, "tb", True, 1000)
        await _send(ctx, link.a, "ta", second, rng)
        await _idle(ctx, "ta", 60)

    sim.add_testbench(bench)
    sim.run()
    # Nothing lost, duplicated or corrupted around the outage (it hit an idle link).
    assert logs["b"].words == first + second
    assert [up for _, up in logs["b"].edges] == [True, False, True]
    assert seen["relock"] < 60 * CYCLES_PER_WORD


# -- Verilog with vendor primitives ----------------------------------------------------------

STUBS = {
    # Port lists of Lattice's FPGA Libraries Reference Guide (ECP5) and Xilinx UG953.
    "ecp5": """
module ODDRX1F #(parameter GSR = "ENABLED") (input SCLK, RST, D0, D1, output Q);
  assign Q = SCLK ? D0 : D1;
endmodule
module IDDRX1F #(parameter GSR = "ENABLED") (input D, SCLK, RST, output Q0, Q1);
  assign Q0 = D; assign Q1 = D;
endmodule
module OLVDS (input A, output Z, ZN);
  assign Z = A; assign ZN = ~A;
endmodule
module ILVDS (input A, AN, output Z);
  assign Z = A;
endmodule
""",
    "xilinx": """
module ODDR #(parameter DDR_CLK_EDGE = "OPPOSITE_EDGE", parameter INIT = 1'b0,
              parameter SRTYPE = "SYNC") (output Q, input C, CE, D1, D2, R, S);
  assign Q = C ? D1 : D2;
endmodule
module IDDR #(parameter DDR_CLK_EDGE = "OPPOSITE_EDGE", parameter INIT_Q1 = 1'b0,
              parameter INIT_Q2 = 1'b0, parameter SRTYPE = "SYNC")
             (output Q1, Q2, input C, CE, D, R, S);
  assign Q1 = D; assign Q2 = D;
endmodule
module OBUFDS #(parameter IOSTANDARD = "DEFAULT") (output O, OB, input I);
  assign O = I; assign OB = ~I;
endmodule
module IBUFDS #(parameter DIFF_TERM = "FALSE", parameter IOSTANDARD = "DEFAULT")
               (output O, input I, IB);
  assign O = I;
endmodule
module BUFG (output O, input I);
  assign O = I;
endmodule
module BUFIO (output O, input I);
  assign O = I;
endmodule
module BUFR #(parameter BUFR_DIVIDE = "BYPASS", parameter SIM_DEVICE = "7SERIES")
             (output O, input I, CE, CLR);
  assign O = I;
endmodule
""",
}

#: hwtools' waivers plus the other idioms of Amaranth's Verilog back end that a logic-heavy
#: design hits: comparisons with constants printed at their minimal width, `!x` on a
#: multi-bit value for `x == 0`, and `bit_select` as a wide `>>` truncated on assignment.
#: All are well defined (zero extension / truncation); pin-connection widths stay checked.
LINT_CONFIG = AMARANTH_LINT_CONFIG + """\
lint_off -rule WIDTH -file "*" -match "Operator EQ expects*CONST*"
lint_off -rule WIDTH -file "*" -match "Operator NEQ expects*CONST*"
lint_off -rule WIDTH -file "*" -match "Operator GTE expects*CONST*"
lint_off -rule WIDTH -file "*" -match "Logical operator LOGNOT expects 1 bit*"
lint_off -rule WIDTH -file "*" -match "Operator ASSIGNW expects*SHIFTR generates*"
"""


@pytest.mark.parametrize(("family", "options", "cells"), [
    ("ecp5", {}, {"ODDRX1F": "out", "OLVDS": "out", "IDDRX1F": "in", "ILVDS": "in+1"}),
    ("xilinx7", {}, {"ODDR": "out", "OBUFDS": "out", "IDDR": "in", "IBUFDS": "in+1",
                     "BUFIO": 1, "BUFR": 1}),
    ("virtex5", {"rx_clock_buffer": "BUFG"},
     {"ODDR": "out", "OBUFDS": "out", "IDDR": "in", "IBUFDS": "in+1", "BUFG": 1}),
])
def test_vendor_verilog_lints(tmp_path, family, options, cells):
    lanes = 3
    text = to_verilog(LvdsPhy(lanes, "lvds0", family, **options), "lvds_phy")
    expected = {"out": lanes + 1, "in": lanes, "in+1": lanes + 1}
    for cell, count in cells.items():
        instances = text.count(f"\n  {cell} ")
        assert instances == expected.get(count, count), (cell, instances)
    if family == "ecp5":
        assert ".D0(1'h1)" in text and ".D1(1'h0)" in text  # forwarded clock
    elif family == "xilinx7":
        assert '.SIM_DEVICE("7SERIES")' in text
    else:
        assert '.DDR_CLK_EDGE("SAME_EDGE_PIPELINED")' in text
        assert ".D1(1'h1)" in text and ".D2(1'h0)" in text
    stubs = tmp_path / "stubs.v"
    stubs.write_text("/* verilator lint_off UNUSEDPARAM */\n"
                     + STUBS["ecp5" if family == "ecp5" else "xilinx"])
    top = tmp_path / "lvds_phy.v"
    top.write_text(text)
    lint_verilog([stubs, top], "lvds_phy", config=LINT_CONFIG)


class _Ecp5Board(LatticeECP5Platform):
    device, package, speed = "LFE5U-85F", "BG381", "6"
    default_clk = None
    resources = [  # noqa: RUF012 (Amaranth's platform API)
        Resource("lvds_link", 0,
                 Subsignal("clk", DiffPairs("A1", "A2", dir="o")),
                 Subsignal("tx", DiffPairs("B1 C1", "B2 C2", dir="o")),
                 Subsignal("rclk", DiffPairs("D1", "D2", dir="i")),
                 Subsignal("rx", DiffPairs("E1 F1", "E2 F2", dir="i")),
                 Attrs(IO_TYPE="LVDS")),
        Resource("pll", 0, Pins("G1", dir="i"), Attrs(IO_TYPE="LVCMOS33")),
    ]
    connectors = []  # noqa: RUF012


class _PlatformTop(Elaboratable):
    def elaborate(self, platform):
        m = Module()
        names = ("clk", "tx", "rclk", "rx")
        pins = platform.request("lvds_link", 0, dir=dict.fromkeys(names, "-"))
        m.submodules.phy = phy = LvdsPhy(2, "lvds0", "platform",
                                         ports={n: getattr(pins, n) for n in names})
        m.submodules.pll = pll = io.Buffer("i", platform.request("pll", 0, dir="-"))
        m.d.comb += phy.clk_in.eq(pll.i)
        return m


def test_platform_family_uses_lib_io():
    """With ``family="platform"`` the Amaranth platform picks the DDR primitives."""
    plan = _Ecp5Board().prepare(_PlatformTop(), name="top")
    rtlil = plan.files["top.il"]
    assert rtlil.count("ODDRX1F") == 3  # two lanes and the forwarded clock
    assert rtlil.count("IDDRX1F") == 2
