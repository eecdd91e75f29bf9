"""The UART register bridge against a host model (reads, writes, noise before a command),
and the register file behind it."""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from optnet.hw.uart import READ, WRITE, WRITTEN, RegisterFile, UartBridge
from optnet.plan import plan
from optnet.plan.registers import register_map

from .conftest import linted_example

DIV = 7     # clock cycles per bit (odd: the sampling point is not on a cycle boundary)


def uart_line(sent, divisor: int, gap: int = 3, idle: int = 5) -> list[int]:
    """The host's transmit line, a value per clock cycle: ``idle`` bits high, then each byte
    of ``sent`` (start bit, 8 bits least significant first, stop bit) and ``gap`` idle bits,
    ``divisor`` cycles a bit."""
    line = [1] * idle
    for byte in sent:
        line += [0, *(byte >> i & 1 for i in range(8)), 1] + [1] * gap
    return [b for b in line for _ in range(divisor)]


class UartListener:
    """The host's receiver: given the bridge's ``tx`` every clock cycle (:meth:`step`), it
    samples each bit in its middle and collects the bytes in :attr:`received`."""

    def __init__(self, divisor: int):
        self.divisor, self.frame, self.timer, self.received = divisor, None, 0, []

    def step(self, tx: int) -> None:
        if self.frame is None:
            if not tx:
                self.frame, self.timer = [], self.divisor // 2
            return
        self.timer -= 1
        if self.timer == 0:
            self.frame.append(tx)
            self.timer = self.divisor
            if len(self.frame) == 10:
                assert self.frame[0] == 0 and self.frame[9] == 1, "framing"
                self.received.append(sum(b << i for i, b in enumerate(self.frame[1:9])))
                self.frame = None


def _talk(sent: list[int], registers: dict[int, int], answers: int, gap: int = 3):
    """The host sends ``sent`` (bytes, ``gap`` idle bits between them); the bridge's bus
    reads ``registers`` and records writes. Returns the bytes the host received and the
    writes (address, data) in order."""
    dut = UartBridge(DIV)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    host, writes = UartListener(DIV), []

    async def bench(ctx):
        bits = uart_line(sent, DIV, gap)
        for cycle in range(len(bits) + 60 * DIV * answers):
            ctx.set(dut.rx, bits[cycle] if cycle < len(bits) else 1)
            ctx.set(dut.bus.r_data, registers.get(ctx.get(dut.bus.addr), 0))
            if ctx.get(dut.bus.w_en):
                writes.append((ctx.get(dut.bus.addr), ctx.get(dut.bus.w_data)))
            host.step(ctx.get(dut.tx))
            if len(host.received) == answers:
                return
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    return host.received, writes


def test_read_answers_the_register_big_endian():
    received, writes = _talk([READ, 0x12, 0x34], {0x1234: 0xDEADBEEF}, 4)
    assert received == [0xDE, 0xAD, 0xBE, 0xEF] and writes == []


def test_write_then_read_back_and_an_unknown_address_reads_zero():
    received, writes = _talk([WRITE, 0x01, 0x02, 0xCA, 0xFE, 0x00, 0x01, READ, 0x00, 0x07],
                             {}, 5, gap=40)
    assert writes == [(0x0102, 0xCAFE0001)]
    assert received == [WRITTEN, 0, 0, 0, 0]


def test_bytes_before_a_command_are_ignored():
    received, _ = _talk([0x00, 0x55, 0xFF, READ, 0x00, 0x00], {0: 0x4F50544E}, 4)
    assert bytes(received) == b"OPTN"


def test_too_fast_a_uart_is_refused():
    with pytest.raises(ValueError, match="at least 4 clock cycles per bit"):
        UartBridge(3)


def test_register_file_reads_writes_and_keeps_read_only_registers():
    node = plan(linted_example("ulx3s_ring4").routed)[0]
    regs = RegisterFile(register_map(node))
    sim = Simulator(regs)
    sim.add_clock(1e-8)
    got = {}

    async def bench(ctx):
        ctx.set(regs.magic, 0x4F50544E)
        ctx.set(regs.link1_crc_errors, 9)

        async def read(addr):
            ctx.set(regs.bus.addr, addr)
            await ctx.delay(1e-9)
            return ctx.get(regs.bus.r_data)

        got["init"] = await read(0x1001)                  # app.length
        for addr, value in ((0x1000, 1), (0x1001, 5), (0x0000, 0), (0x0110, 3)):
            ctx.set(regs.bus.addr, addr)
            ctx.set(regs.bus.w_data, value)
            ctx.set(regs.bus.w_en, 1)
            await ctx.tick()
        ctx.set(regs.bus.w_en, 0)
        got["after"] = [await read(a) for a in (0x0000, 0x0111, 0x1000, 0x1001, 0x0007)]
        got["control"] = ctx.get(regs.app_control)

    sim.add_testbench(bench)
    sim.run()
    assert got["init"] == node.endpoints[0].max_packet - 1
    # magic and link1.crc_errors read their inputs; a write to them, or to no register,
    # changes nothing; app.control and app.length keep what was written
    assert got["after"] == [0x4F50544E, 9, 1, 5, 0] and got["control"] == 1
