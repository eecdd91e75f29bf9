"""A parallel CRC that maps onto LUTs in half the area of a plain XOR matrix.

:class:`CrcEngine` has the ports and timing of Amaranth's
:class:`amaranth.lib.crc.Processor` (``start``, ``data``, ``valid``, ``crc``,
``match_detected``) and computes the same CRC, but builds its next-state logic differently.
Each bit of the next CRC is an XOR of register and data bits; the processor writes every
bit's XOR out on its own. Over a wide word the bits share most of their inputs, so here
the XOR of the pair of inputs that most bits share becomes a signal of its own, repeatedly,
until no pair is shared (Paar's greedy common-subexpression elimination). Measured with
Yosys ``synth_xilinx -family xc7`` for 128 data bits per cycle: CRC-32/Ethernet 439 LUTs
(``lib.crc``: 744), CRC-16 209 LUTs (306). A link layer has one generator and one checker,
so this is most of the difference between a link layer that fits its budget and one that
does not.
"""

from __future__ import annotations

import itertools
from collections import Counter

from amaranth.hdl import Cat, Const, Elaboratable, Module, Mux, Signal
from amaranth.lib import crc

__all__ = ["CrcEngine", "next_state_terms"]

#: Widest data word the shared XORs are searched for. The greedy search counts every pair
#: of inputs of every bit on each step: 3 s at 128 bits, minutes beyond 256; wider words
#: (flits of 512 bits and more) get one XOR per bit, as ``lib.crc`` builds them.
SHARE_UP_TO = 256


def _next_state(params: crc.Parameters, register: int, data: int) -> int:
    """The register after one word, bit-serially (most significant data bit first, after
    the input reflection ``lib.crc`` applies)."""
    width, poly = params.algorithm.crc_width, params.algorithm.polynomial
    top, mask = 1 << (width - 1), (1 << width) - 1
    bits = params.data_width
    if params.algorithm.reflect_input:
        data = int(f"{data:0{bits}b}"[::-1], 2)
    for i in reversed(range(bits)):
        feedback = bool(register & top) ^ (data >> i & 1)
        register = (register << 1) & mask
        if feedback:
            register ^= poly
    return register


def next_state_terms(params: crc.Parameters) -> list[tuple[list[int], list[int]]]:
    """For each bit of the next register, the register bits and data bits it is the XOR of
    (the CRC is linear in both, so the columns are the images of single bits)."""
    width, bits = params.algorithm.crc_width, params.data_width
    state_cols = [_next_state(params, 1 << j, 0) for j in range(width)]
    data_cols = [_next_state(params, 0, 1 << j) for j in range(bits)]
    return [([j for j in range(width) if state_cols[j] >> i & 1],
             [j for j in range(bits) if data_cols[j] >> i & 1]) for i in range(width)]


def _shared_xors(rows: list[set[int]], first_free: int) -> list[tuple[int, int, int]]:
    """Greedy common-subexpression elimination over ``rows`` (sets of input numbers, each
    to be XORed together), in place: returns ``(new, a, b)`` for every shared pair made a
    signal of its own (``new = a ^ b``), most shared first. Ties go to the smallest pair,
    so the result, and the Verilog, is the same on every run."""
    gates = []
    new = first_free
    while True:
        counts: Counter[tuple[int, int]] = Counter()
        for row in rows:
            counts.update(itertools.combinations(sorted(row), 2))
        if not counts:
            break
        (a, b), n = min(counts.items(), key=lambda item: (-item[1], item[0]))
        if n < 2:
            break
        gates.append((new, a, b))
        for row in rows:
            if a in row and b in row:
                row -= {a, b}
                row.add(new)
        new += 1
    return gates


class CrcEngine(Elaboratable):
    """CRC generator and checker over ``data_width`` bits per cycle.

    Parameters
    ----------
    params : amaranth.lib.crc.Parameters
        The algorithm and data width, as ``crc.catalog.CRC32_ETHERNET(data_width=128)``.

    Attributes
    ----------
    start : Signal, in
        Restart from the initial value (with ``valid``: the first word of a new message).
    data : Signal(data_width), in
    valid : Signal, in
    crc : Signal(crc_width), out
        The CRC of the words so far, a cycle after the last of them.
    match_detected : Signal, out
        The words so far end with their own CRC (the register holds the residue).
    register : Signal(crc_width), out
        The register itself (``crc`` before output reflection and XOR).
    next : Signal(crc_width), out
        What the register becomes with this cycle's ``data`` (combinational).
    zero : Signal, in
        Take this cycle's word (with ``valid``) from a zero register rather than the
        register's value: the words before it ended with a word that made the message a
        codeword, which the register did not see as sent. (A sender that fills in such a
        word from :attr:`register` a cycle after the word went through with the field
        zero knows the register would have been zero after it.)
    """

    def __init__(self, params: crc.Parameters):
        self.params = params
        width = params.algorithm.crc_width
        self.start = Signal()
        self.data = Signal(params.data_width)
        self.valid = Signal()
        self.crc = Signal(width)
        self.match_detected = Signal()
        self.register = Signal(width)
        self.next = Signal(width)
        self.zero = Signal()

    def elaborate(self, platform):
        m = Module()
        alg = self.params.algorithm
        width, bits = alg.crc_width, self.params.data_width
        register = Signal(width, init=alg.initial_crc)
        source = Mux(self.start, Const(alg.initial_crc, width),
                     Mux(self.zero, Const(0, width), register))
        terms = next_state_terms(self.params)
        # Inputs 0..width-1 are register bits, width.. the data bits.
        rows = [set(state) | {width + j for j in data} for state, data in terms]
        values = {j: source[j] for j in range(width)}
        values.update({width + j: self.data[j] for j in range(bits)})
        shared_xors = _shared_xors(rows, width + bits) if bits <= SHARE_UP_TO else []
        for new, a, b in shared_xors:
            shared = Signal(name=f"x{new}")
            m.d.comb += shared.eq(values[a] ^ values[b])
            values[new] = shared
        m.d.comb += self.next.eq(Cat(*(Cat(*(values[k] for k in sorted(row))).xor()
                                       for row in rows)))
        with m.If(self.valid):
            m.d.sync += register.eq(self.next)
        with m.Elif(self.start):
            m.d.sync += register.eq(alg.initial_crc)
        out = register[::-1] if alg.reflect_output else register
        m.d.comb += [self.register.eq(register), self.crc.eq(self.output(register)),
                     self.match_detected.eq(out == self.params.residue())]
        return m

    def output(self, register):
        """The CRC that a register value stands for (the output reflection and XOR applied
        to it): a copy of :attr:`register` read through this costs nothing more where it
        is used, where a copy of :attr:`crc` costs an inverter per bit that the flip-flops
        holding it cannot absorb (CRC-16/USB and CRC-32 invert their output)."""
        alg = self.params.algorithm
        out = register[::-1] if alg.reflect_output else register
        return out ^ alg.xor_output
