"""A register interface over a UART: how a host reads a node's bring-up counters.

Amaranth's library has no UART (amaranth-stdio's is not released on PyPI, which CI may not
leave), so this module is optnet's: 8 data bits, no parity, one stop bit, least
significant bit first, at ``divisor`` clock cycles per bit.

Protocol
--------
The host sends a command and the bridge answers it; registers are 32 bits at 16-bit
addresses, big-endian on the wire:

- ``'r' A1 A0`` reads the register at address ``A1 A0``; the answer is its four bytes.
- ``'w' A1 A0 D3 D2 D1 D0`` writes ``D3 D2 D1 D0`` to it; the answer is ``'k'``.

Any other first byte is ignored, so a host resynchronises by sending a few zero bytes
(fewer than seven, then a command). A read of an address with no register answers 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from optnet.plan.registers import Register

__all__ = ["READ", "WRITE", "WRITTEN", "RegisterBus", "RegisterFile", "UartBridge", "member_name"]

#: Command and answer bytes.
READ, WRITE, WRITTEN = ord("r"), ord("w"), ord("k")


class RegisterBus(wiring.Signature):
    """What the bridge drives (its direction): ``addr``, ``w_data``, ``w_en`` (one cycle per
    write), ``r_en`` (one cycle per read; ``r_data`` is taken in the same cycle)."""

    def __init__(self):
        super().__init__({"addr": Out(16), "w_data": Out(32), "w_en": Out(1), "r_en": Out(1),
                          "r_data": In(32)})


class UartBridge(wiring.Component):
    """Register reads and writes from UART commands (module docstring).

    Parameters
    ----------
    divisor : int
        Clock cycles per bit (the clock over the baud rate), at least 4.

    Members
    -------
    rx : In(1)
        The host's transmit line (asynchronous; synchronised here). Idle high.
    tx : Out(1)
        To the host's receive line. Idle high.
    bus : Out(RegisterBus())
    """

    def __init__(self, divisor: int):
        if divisor < 4:
            raise ValueError(f"a UART needs at least 4 clock cycles per bit, not {divisor}")
        self.divisor = divisor
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1), "bus": Out(RegisterBus())})

    def elaborate(self, platform):
        m = Module()
        div = self.divisor

        # -- receiver: a start bit's falling edge, then each bit sampled mid-way --------------
        rx = Signal(init=1)
        m.submodules.rx_sync = FFSynchronizer(self.rx, rx, init=1)
        r_timer = Signal(range(div * 3 // 2 + 1))
        r_bits = Signal(range(10))
        r_shift = Signal(8)
        r_byte = Signal(8)
        r_done = Signal()       # a byte arrived (one cycle)
        m.d.sync += r_done.eq(0)
        with m.If(r_bits == 0):
            # waiting for a start bit: the first data bit's middle is a bit and a half on
            m.d.sync += r_timer.eq(div * 3 // 2 - 1)
            with m.If(~rx):
                m.d.sync += r_bits.eq(9)
        with m.Elif(r_timer != 0):
            m.d.sync += r_timer.eq(r_timer - 1)
        with m.Else():
            m.d.sync += [r_bits.eq(r_bits - 1), r_timer.eq(div - 1)]
            with m.If(r_bits == 1):
                # the stop bit's middle: a byte if it is high (a framing error drops it)
                m.d.sync += [r_done.eq(rx), r_byte.eq(r_shift)]
            with m.Else():
                m.d.sync += r_shift.eq(Cat(r_shift[1:], rx))

        # -- transmitter: up to four bytes queued in a shift register -------------------------
        t_data = Signal(32)
        t_count = Signal(range(5))      # bytes left to send
        t_frame = Signal(10, init=0x3FF)
        t_bits = Signal(range(11))
        t_timer = Signal(range(div))
        m.d.comb += self.tx.eq(t_frame[0])
        with m.If(t_bits != 0):
            with m.If(t_timer != 0):
                m.d.sync += t_timer.eq(t_timer - 1)
            with m.Else():
                m.d.sync += [t_frame.eq(Cat(t_frame[1:], Const(1, 1))), t_bits.eq(t_bits - 1),
                             t_timer.eq(div - 1)]
        with m.Elif(t_count != 0):
            # start bit, the top byte (big-endian), stop bit
            m.d.sync += [t_frame.eq(Cat(Const(0, 1), t_data[24:], Const(1, 1))),
                         t_data.eq(t_data << 8), t_count.eq(t_count - 1), t_bits.eq(10),
                         t_timer.eq(div - 1)]

        # -- commands ---------------------------------------------------------------------------
        bus = self.bus
        command = Signal(8)
        got = Signal(range(7))          # bytes of the command received after its first
        addr, data = Signal(16), Signal(32)
        last = Signal()                 # the command's last byte arrives
        m.d.comb += [bus.addr.eq(addr), bus.w_data.eq(data),
                     last.eq(r_done & (((command == READ) & (got == 2)) | (got == 6)))]
        with m.If(r_done):
            with m.If(got == 0):
                m.d.sync += command.eq(r_byte)
                with m.If((r_byte == READ) | (r_byte == WRITE)):
                    m.d.sync += got.eq(1)
            with m.Else():
                m.d.sync += [got.eq(got + 1), data.eq(Cat(r_byte, data[:24]))]
                with m.If(got <= 2):
                    m.d.sync += addr.eq(Cat(r_byte, addr[:8]))
                with m.If(last):
                    m.d.sync += got.eq(0)
        # the command acts the cycle after its last byte (``data`` and ``addr`` are set)
        act = Signal()
        m.d.sync += act.eq(last)
        with m.If(act):
            with m.If(command == READ):
                m.d.comb += bus.r_en.eq(1)
                m.d.sync += [t_data.eq(bus.r_data), t_count.eq(4)]
            with m.Else():
                m.d.comb += bus.w_en.eq(1)
                m.d.sync += [t_data.eq(Cat(Const(0, 24), Const(WRITTEN, 8))), t_count.eq(1)]
        return m


def member_name(register: str) -> str:
    """The :class:`RegisterFile` member of the register named ``register``."""
    return register.replace(".", "_")


class RegisterFile(wiring.Component):
    """The registers of a register map (:func:`optnet.plan.registers.register_map`) on a
    :class:`RegisterBus`.

    Members
    -------
    bus : In(RegisterBus())
    <register> : In(32) or Out(32)
        Each register, named by :func:`member_name`: a read-only one is an input, read as
        it is; a writable one is an output, the register itself (from its ``init``).
    """

    def __init__(self, registers: Sequence[Register]):
        self.registers = tuple(registers)
        members = {"bus": In(RegisterBus())}
        for reg in self.registers:
            members[member_name(reg.name)] = Out(32, init=reg.init) if reg.writable else In(32)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        with m.Switch(bus.addr):
            for reg in self.registers:
                value = getattr(self, member_name(reg.name))
                with m.Case(reg.addr):
                    m.d.comb += bus.r_data.eq(value)
                    if reg.writable:
                        with m.If(bus.w_en):
                            m.d.sync += value.eq(bus.w_data)
        return m
