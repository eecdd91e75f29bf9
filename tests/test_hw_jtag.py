"""The JTAG register bridge against a host model: the host's DR scans (command, then polls
until done) read and write a register file, with the TAP clock faster and slower than the
network clock, another bus master taking cycles, and the Virtex-5 form (DRCK ticking only
in Capture-DR and Shift-DR, Update-DR on a clock of its own); the bring-up kit answering
over JTAG and its UART at once; and the ECP5 adapter under a model of JTAGG."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import ClockDomain, ClockSignal, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In
from amaranth.sim import Simulator

from optnet.hw import bringup
from optnet.hw.jtag import ADDR_BITS, DATA_BITS, DR_BITS, JtagBridge, JtaggAdapter, Tap
from optnet.hw.uart import READ, RegisterFile
from optnet.plan import plan
from optnet.plan.registers import MAGIC, Register

from .conftest import linted_example
from .test_hw_uart import UartListener, uart_line

REGISTERS = (Register("magic", 0x0000, False, ""), Register("count", 0x0003, False, ""),
             Register("control", 0x1000, True, "", init=1), Register("gap", 0x1002, True, ""))
FIXED = {"magic": 0x4F50544E, "count": 0xDEADBEEF}
NET_NS = 10


def command(addr: int, data: int = 0, *, write: bool = False, go: bool = True) -> int:
    """The data register a host shifts in (optnet.hw.jtag's protocol table)."""
    return data | addr << DATA_BITS | write << (DATA_BITS + ADDR_BITS) | go << (DR_BITS - 1)


def result(captured: int) -> dict[str, int]:
    """The fields of a captured data register."""
    return {"data": captured & (1 << DATA_BITS) - 1,
            "addr": captured >> DATA_BITS & (1 << ADDR_BITS) - 1,
            "write": captured >> (DATA_BITS + ADDR_BITS) & 1, "done": captured >> (DR_BITS - 1)}


async def host_ops(ctx, tap, jtag_clk, update_clk, tck_ns: float, ops):
    """A JTAG host running ``ops`` (("r", addr) or ("w", addr, data)) through the bridge's TAP
    signals ``tap`` (``capture``, ``shift``, ``update``, ``tdi``, ``tdo``) at a TCK period of
    ``tck_ns``: a command scan, a few idle cycles, then polls until done. ``update_clk``: the
    Virtex-5 form, where ``jtag_clk`` (DRCK) ticks only in Capture-DR and Shift-DR and
    Update-DR has this clock of its own. Returns what each read gave and the polls each
    operation took."""
    half = tck_ns * 1e-9 / 2
    separate = update_clk is not None
    answers, polls = [], []

    async def cycle(*, capture=0, shift=0, update=0, tdi=0, ticks=True):
        ctx.set(tap.capture, capture)
        ctx.set(tap.shift, shift)
        ctx.set(tap.update, update if not separate else 1)
        ctx.set(tap.tdi, tdi)
        await ctx.delay(half)
        tdo = ctx.get(tap.tdo)
        if separate and update:
            ctx.set(update_clk, 1)
        elif ticks or not separate:
            ctx.set(jtag_clk, 1)
        await ctx.delay(half)
        ctx.set(jtag_clk, 0)
        if separate:
            ctx.set(update_clk, 0)
        return tdo

    async def scan(value: int) -> int:
        # Select-DR, Capture-DR, Shift-DR x DR_BITS, Exit1-DR, Update-DR, Run-Test/Idle
        await cycle(ticks=False)
        await cycle(capture=1)
        out = 0
        for i in range(DR_BITS):
            out |= await cycle(shift=1, tdi=value >> i & 1) << i
        await cycle(ticks=False)
        await cycle(update=1, ticks=False)
        for _ in range(4):
            await cycle(ticks=False)
        return out

    for op in ops:
        addr = op[1]
        await scan(command(addr, *op[2:], write=op[0] == "w"))
        got = {"done": 0}
        tries = 0
        while not (got["done"] and got["addr"] == addr):
            assert tries < 20, f"no answer to {op}"
            got = result(await scan(0))
            tries += 1
        assert got["write"] == (op[0] == "w")
        polls.append(tries)
        if op[0] == "r":
            answers.append(got["data"])
    return answers, polls


class _Dut(wiring.Component):
    def __init__(self, update_domain):
        self.bridge = JtagBridge(update_domain)
        self.registers = RegisterFile(REGISTERS)
        self.update_domain = update_domain
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.domains.jtag = self.jtag = ClockDomain("jtag", reset_less=True)
        if self.update_domain != "jtag":
            m.domains.jtag_update = self.upd = ClockDomain("jtag_update", reset_less=True)
        m.submodules.bridge, m.submodules.registers = self.bridge, self.registers
        wiring.connect(m, self.bridge.bus, self.registers.bus)
        for name, value in FIXED.items():
            m.d.comb += getattr(self.registers, name).eq(value)
        return m


def _run(ops, *, tck_ns: float, update_domain: str = "jtag", busy: float = 0.0, seed: int = 1):
    """Run the host's operations ``ops`` (("r", addr) or ("w", addr, data)) through the
    bridge, TCK period ``tck_ns``; another master holds the bus a fraction ``busy`` of the
    network cycles. Returns what each read gave and the number of polls each took."""
    dut = _Dut(update_domain)
    sim = Simulator(dut)
    sim.add_clock(NET_NS * 1e-9)
    rng = random.Random(seed)
    bridge, separate = dut.bridge, update_domain != "jtag"
    answers, polls = [], []

    async def other_master(ctx):
        while True:
            ctx.set(bridge.busy, rng.random() < busy)
            await ctx.tick()

    async def host(ctx):
        got = await host_ops(ctx, bridge, dut.jtag.clk, dut.upd.clk if separate else None,
                             tck_ns, ops)
        answers.extend(got[0])
        polls.extend(got[1])

    sim.add_process(other_master)
    sim.add_testbench(host)
    sim.run()
    return answers, polls


def _model(ops):
    regs = {r.addr: r.init for r in REGISTERS}
    regs.update({r.addr: FIXED[r.name] for r in REGISTERS if r.name in FIXED})
    out = []
    for op in ops:
        if op[0] == "r":
            out.append(regs.get(op[1], 0))
        elif next((r.writable for r in REGISTERS if r.addr == op[1]), False):
            regs[op[1]] = op[2]
    return out


def _ops(seed: int, n: int = 12):
    rng = random.Random(seed)
    addrs = [r.addr for r in REGISTERS] + [0x0777]
    return [("w", rng.choice(addrs), rng.getrandbits(32)) if rng.random() < 0.4
            else ("r", rng.choice(addrs)) for _ in range(n)]


@pytest.mark.parametrize("tck_ns,update_domain,busy", [
    (33, "jtag", 0.0),              # TCK slower than the network clock
    (4, "jtag", 0.5),               # faster, with the bus often taken
    (33, "jtag_update", 0.3),       # Virtex-5: DRCK and UPDATE
])
def test_reads_and_writes_match_the_register_model(tck_ns, update_domain, busy):
    ops = [("r", 0x0000), ("r", 0x1000), ("w", 0x1000, 0x12345678), ("r", 0x1000),
           ("r", 0x0003), ("w", 0x0003, 5), ("r", 0x0003), ("r", 0x0777), *_ops(tck_ns)]
    answers, _ = _run(ops, tck_ns=tck_ns, update_domain=update_domain, busy=busy)
    assert answers == _model(ops)
    assert answers[:3] == [0x4F50544E, 1, 0x12345678]


def test_a_command_is_done_by_the_first_poll_at_usual_clocks():
    # 30 MHz TCK, 100 MHz network clock, the host idling 4 TCK cycles after each command
    _, polls = _run([("r", 0x0000), ("w", 0x1002, 9), ("r", 0x1002)], tck_ns=33)
    assert polls == [1, 1, 1]


def test_a_poll_starts_nothing():
    # A scan with go clear is only a poll: the write is done once, later polls see it done
    # and the register keeps the value (a second write would not change it either, but a
    # repeated command would show as another request: the poll count would not settle).
    ops = [("w", 0x1002, 7), ("r", 0x1002), ("r", 0x1002)]
    answers, polls = _run(ops, tck_ns=33)
    assert answers == [7, 7] and polls == [1, 1, 1]


def test_the_kit_answers_over_jtag_and_uart_at_once(monkeypatch):
    """A ULX3S node's kit with both bridges (its board top has both): the JTAG host reads the
    magic word and the node id and writes and reads back a generator register while the
    UART reads the magic word, its accesses taking the bus first. The primitive is replaced
    by plain signals in a ``jtag`` domain (Amaranth cannot simulate JTAGG)."""
    node = plan(linted_example("ulx3s_ring4").routed)[2]
    fake = {}

    def user_tap(m, kind):
        assert kind == "jtagg"
        m.domains.jtag = fake["domain"] = ClockDomain("jtag", reset_less=True)
        fake["tap"] = Tap(*(Signal(name=f"t_{n}") for n in ("capture", "shift", "update",
                                                              "tdi", "tdo")), "jtag")
        return fake["tap"]

    monkeypatch.setattr(bringup, "user_tap", user_tap)
    kit = bringup.BringUp(node, 4, "jtagg")
    sim = Simulator(kit)
    sim.add_clock(NET_NS * 1e-9)
    got = {}

    async def uart_host(ctx):
        # 'r' 00 00, three times, 4 cycles a bit
        bits = uart_line([READ, 0x00, 0x00] * 3, 4, gap=20, idle=10)
        host = UartListener(4)
        for cycle in range(len(bits) + 400):
            ctx.set(kit.uart_rx, bits[cycle] if cycle < len(bits) else 1)
            host.step(ctx.get(kit.uart_tx))
            await ctx.tick()
        answer = host.received
        got["uart"] = bytes(answer)

    async def jtag_host(ctx):
        ctx.set(kit.node_id, node.node_id)
        ops = [("r", 0x0000), ("r", 0x0002), ("w", 0x1002, 77), ("r", 0x1002), ("r", 0x0000)]
        got["jtag"] = await host_ops(ctx, fake["tap"], fake["domain"].clk, None, 7, ops)

    sim.add_testbench(uart_host)
    sim.add_testbench(jtag_host)
    sim.run()
    assert got["jtag"][0] == [MAGIC, node.node_id, 77, MAGIC]
    assert got["uart"] == b"OPTN" * 3


# -- the ECP5 adapter under a model of JTAGG --------------------------------------------------

# IEEE 1149.1 TAP states (DR side, and the IR side collapsed: the model's IR is ER1) and the
# next state for TMS 0 / 1.
_TAP = {"reset": ("idle", "reset"), "idle": ("idle", "select_dr"),
        "select_dr": ("capture_dr", "select_ir"), "capture_dr": ("shift_dr", "exit1_dr"),
        "shift_dr": ("shift_dr", "exit1_dr"), "exit1_dr": ("pause_dr", "update_dr"),
        "pause_dr": ("pause_dr", "exit2_dr"), "exit2_dr": ("shift_dr", "update_dr"),
        "update_dr": ("idle", "select_dr"), "select_ir": ("idle", "reset")}


class _JtaggDut(wiring.Component):
    def __init__(self):
        self.adapter, self.bridge = JtaggAdapter(), JtagBridge()
        self.registers = RegisterFile(REGISTERS)
        super().__init__({"tck": In(1)})

    def elaborate(self, platform):
        m = Module()
        m.domains.jtag = ClockDomain("jtag", reset_less=True)
        m.domains.jtag_fall = ClockDomain("jtag_fall", clk_edge="neg", reset_less=True)
        m.d.comb += [ClockSignal("jtag").eq(self.tck), ClockSignal("jtag_fall").eq(self.tck)]
        m.submodules.adapter, m.submodules.bridge = self.adapter, self.bridge
        m.submodules.registers = self.registers
        wiring.connect(m, self.bridge.bus, self.registers.bus)
        a, b = self.adapter, self.bridge
        m.d.comb += [b.capture.eq(a.capture), b.shift.eq(a.shift), b.update.eq(a.update),
                     b.tdi.eq(a.tdi)]
        for name, value in FIXED.items():
            m.d.comb += getattr(self.registers, name).eq(value)
        return m


def test_the_ecp5_adapter_keeps_the_hosts_bits_under_a_model_of_jtagg():
    """JTAGG as LiteX's ECP5 core describes it: JTDI registered on TCK's rising edge, the TAP
    state outputs changing just after it, JTDO1 sampled on the falling edge in Shift-DR; the
    host changes TMS and TDI on falling edges and samples TDO on rising ones, as FTDI-based
    adapters do. The host's reads and writes must come out as with an ideal TAP."""
    dut = _JtaggDut()
    sim = Simulator(dut)
    sim.add_clock(NET_NS * 1e-9)
    adapter, bridge = dut.adapter, dut.bridge
    half = 33e-9 / 2
    model = {"state": "idle", "tdo": 0, "er1": True}
    answers, sim_regs = [], {}

    async def edge(ctx, tms: int, tdi: int) -> int:
        # one TCK cycle from low: the rising edge (host samples TDO, JTAGG registers TDI and
        # moves its TAP, its outputs following 1 ns later), then the falling edge
        tdo = model["tdo"]
        ctx.set(dut.tck, 1)
        await ctx.delay(1e-9)
        model["state"] = _TAP[model["state"]][tms]
        state = model["state"]
        ctx.set(adapter.jtdi, tdi)
        ctx.set(adapter.jce1, model["er1"] and state in ("capture_dr", "shift_dr"))
        ctx.set(adapter.jshift, state == "shift_dr")
        ctx.set(adapter.jupdate, state == "update_dr")
        await ctx.delay(half - 1e-9)
        if state == "shift_dr":
            model["tdo"] = ctx.get(bridge.tdo) if model["er1"] else tdi
        ctx.set(dut.tck, 0)
        await ctx.delay(half)
        return tdo

    async def scan(ctx, value: int) -> int:
        for tms in (1, 0, 0):                   # to Select-DR, Capture-DR, Shift-DR
            await edge(ctx, tms, 0)
        out = 0
        for i in range(DR_BITS):
            out |= await edge(ctx, int(i == DR_BITS - 1), value >> i & 1) << i
        for tms in (1, 0, 0, 0, 0, 0):          # to Update-DR, then idle
            await edge(ctx, tms, 0)
        return out

    async def host(ctx):
        ops = [("r", 0x0000), ("w", 0x1002, 0xA5A5F00F), ("r", 0x1002), ("r", 0x0003)]
        for op in ops:
            addr = op[1]
            await scan(ctx, command(addr, *op[2:], write=op[0] == "w"))
            if op[0] == "w":
                # a DR scan of another instruction or device (JCE1 low, JUPDATE pulses all
                # the same) with a write in it: the bridge takes neither it nor, again, the
                # command still in its register
                model["er1"] = False
                await scan(ctx, command(0x1002, 1, write=True))
                model["er1"] = True
            got = {"done": 0}
            tries = 0
            while not (got["done"] and got["addr"] == addr):
                assert tries < 5, f"no answer to {op}"
                got = result(await scan(ctx, 0))
                tries += 1
            if op[0] == "r":
                answers.append(got["data"])
        sim_regs["gap"] = ctx.get(dut.registers.gap)

    async def writes(ctx):
        async for _, _, w_en in ctx.tick().sample(bridge.bus.w_en):
            sim_regs["writes"] = sim_regs.get("writes", 0) + w_en

    sim.add_process(writes)
    sim.add_testbench(host)
    sim.run()
    assert answers == [FIXED["magic"], 0xA5A5F00F, FIXED["count"]]
    assert sim_regs["gap"] == 0xA5A5F00F and sim_regs["writes"] == 1
