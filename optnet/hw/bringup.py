"""Bring-up traffic: a generator and a checker per endpoint, to see a cluster carry data.

The generator (:class:`TrafficGen`) drives an endpoint's ``s_axis``: while ``enable`` is
set it sends packets of ``length`` beats to every other node of the cluster in turn
(:attr:`~optnet.plan.configs.EndpointConfig.nodes`, in id order), ``gap`` idle cycles
apart. The checker (:class:`TrafficCheck`) takes every beat of the endpoint's ``m_axis``
and counts what arrives whole and in order, what skipped or repeated a packet, and the
beats whose data differ from what was sent.

Packets
-------
Packet ``k`` from node ``s`` to node ``d`` (``k`` counted per destination, modulo
``2**16``, or ``2**width`` on an endpoint narrower than 16 bits) is ``length`` beats of
PRBS-31 (x^31 + x^28 + 1), continued from beat to beat, from a state made of ``k`` and the
two ids (:func:`seed`), except the first beat's low 16 bits (all its bits on a narrower
endpoint), which carry ``k``. The checker knows the
source (``tid``) and its own id, so it reads ``k`` from the first beat, remakes the state
and compares every other bit. A packet whose ``k`` is not the one after the last from the
same source counts as out of sequence (lost, repeated or reordered packets), and the
checker follows the new ``k`` (a corrupted ``k`` so shows as two packets out of sequence
and the packet's beats as bad). Nothing else is assumed: any mix of sources may arrive, each
packet whole (an endpoint delivers packets whole).

A generator's packets are at most ``max_packet - 1`` beats (an endpoint cuts longer frames,
which would then fail the check); on a direct node, whose ``tuser`` is the message length,
the first beat carries ``length`` there.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.hw.endpoint import axis_rx_layout, axis_tx_layout
from optnet.plan.configs import EndpointConfig

__all__ = ["PRBS_BITS", "SEQ_BITS", "TrafficCheck", "TrafficGen", "prbs_words", "seed"]

#: The PRBS's state bits (PRBS-31: x^31 + x^28 + 1).
PRBS_BITS = 31
_TAPS = (30, 27)
#: Bits of a packet's sequence number.
SEQ_BITS = 16
#: Bits of each node id in the seed (ids are folded above them).
_ID_SEED_BITS = (PRBS_BITS - 1 - SEQ_BITS) // 2


def _step_masks(width: int) -> tuple[list[int], list[int]]:
    """The PRBS advanced ``width`` bits as linear maps: for each of the ``width`` output bits
    and each of the next state's bits, the mask of current state bits whose XOR it is."""
    state = [1 << i for i in range(PRBS_BITS)]
    out = []
    for _ in range(width):
        new = state[_TAPS[0]] ^ state[_TAPS[1]]
        out.append(new)
        state = [new, *state[:-1]]
    return out, state


def _apply(masks: list[int], state) -> Cat:
    # each bit the XOR of the state bits its mask names
    return Cat(Cat(state[i] for i in range(PRBS_BITS) if mask >> i & 1).xor()
               for mask in masks)


def seed(src: int, dst: int, seq: int) -> int:
    """The PRBS state a packet starts from (a reference for the hardware's): bit 0 set (a
    PRBS state is never zero), then the sequence number, the destination's and the source's
    ids."""
    fold = (1 << _ID_SEED_BITS) - 1
    ids = (dst & fold) | (src & fold) << _ID_SEED_BITS
    return 1 | (seq % (1 << SEQ_BITS)) << 1 | ids << (1 + SEQ_BITS)


def prbs_words(state: int, width: int, count: int) -> tuple[list[int], int]:
    """``count`` words of ``width`` bits from PRBS state ``state``, and the state after them
    (the reference model of the hardware's parallel PRBS)."""
    words = []
    for _ in range(count):
        word = 0
        for bit in range(width):
            new = (state >> _TAPS[0] ^ state >> _TAPS[1]) & 1
            word |= new << bit
            state = (state << 1 | new) & ((1 << PRBS_BITS) - 1)
        words.append(word)
    return words, state


def expected_packet(src: int, dst: int, seq: int, width: int, length: int) -> list[int]:
    """The beats' ``tdata`` of packet ``seq`` from ``src`` to ``dst`` (reference model)."""
    low = min(width, SEQ_BITS)
    seq %= 1 << low
    words, _ = prbs_words(seed(src, dst, seq), width, length)
    words[0] = words[0] & ~((1 << low) - 1) | seq
    return words


def _seed_of(src, dst, seq) -> Cat:
    # (each field zero-extended to its place, as seed() lays them out)
    def field(value, bits):
        value = value[:bits]
        return Cat(value, Const(0, bits - len(value)))
    return Cat(Const(1, 1), field(seq, SEQ_BITS), field(dst, _ID_SEED_BITS),
               field(src, _ID_SEED_BITS))


class TrafficGen(wiring.Component):
    """Sends bring-up packets on an endpoint's ``s_axis`` (module docstring).

    Parameters
    ----------
    cfg : EndpointConfig
        The endpoint; its ``nodes`` (every id if None) less ``node_id`` are the destinations.
    node_id : int
        This node's id (the seed's source).

    Members
    -------
    s_axis : Out(stream.Signature(axis_tx_layout(cfg)))
        To the endpoint.
    enable : In(1)
        Send; cleared, the packet under way is finished first.
    length : In(16)
        Beats per packet (0 is taken as 1; more than the endpoint carries in one packet is
        cut to that).
    gap : In(16)
        Idle cycles after each packet.
    sent : Out(32)
        Packets sent.
    """

    def __init__(self, cfg: EndpointConfig, node_id: int):
        self.cfg, self.node_id = cfg, node_id
        nodes = cfg.nodes if cfg.nodes is not None else range(1 << cfg.fmt.id_bits)
        self.peers = [n for n in nodes if n != node_id]
        if not self.peers:
            raise ValueError(f"node {node_id} has no other node to send bring-up traffic to")
        super().__init__({"s_axis": Out(stream.Signature(axis_tx_layout(cfg))),
                          "enable": In(1), "length": In(16), "gap": In(16), "sent": Out(32)})

    def limit(self) -> int:
        """The most beats a packet may have: one network packet's (or a message's)."""
        cfg = self.cfg
        return (1 << cfg.length_bits) - 1 if cfg.length_bits else cfg.max_packet - 1

    def elaborate(self, platform):
        m = Module()
        cfg, w = self.cfg, self.cfg.width
        masks, step = _step_masks(w)
        ids = cfg.fmt.id_bits
        peers = len(self.peers)
        m.submodules.dests = dests = memory.Memory(shape=ids, depth=peers, init=self.peers)
        m.submodules.seqs = seqs = memory.Memory(shape=SEQ_BITS, depth=peers, init=[])
        turn = Signal(range(peers))
        dest_r, seq_r = dests.read_port(domain="comb"), seqs.read_port(domain="comb")
        seq_w = seqs.write_port()
        m.d.comb += [dest_r.addr.eq(turn), seq_r.addr.eq(turn), seq_w.addr.eq(turn)]

        limit = self.limit()
        beats = Signal(16)              # this packet's length, fixed at its start
        left = Signal(16)               # beats still to send after the one shown
        state = Signal(PRBS_BITS)
        idle = Signal(16)
        busy = Signal()
        payload = self.s_axis.payload
        first = left == beats - 1
        low = min(w, SEQ_BITS)
        seed_now = _seed_of(Const(self.node_id, ids), dest_r.data, seq_r.data[:low])
        first_word = _apply(masks, seed_now)
        word = Mux(first, Cat(seq_r.data[:low], first_word[low:]), _apply(masks, state))
        m.d.comb += [payload.tdata.eq(word), payload.tdest.eq(dest_r.data),
                     payload.tlast.eq(left == 0), self.s_axis.valid.eq(busy)]
        if cfg.length_bits:
            m.d.comb += payload.tuser.eq(Mux(first, beats, 0))
        with m.If(~busy):
            with m.If(idle != 0):
                m.d.sync += idle.eq(idle - 1)
            with m.Elif(self.enable):
                length = Mux(self.length == 0, 1, Mux(self.length > limit, limit, self.length))
                m.d.sync += [busy.eq(1), beats.eq(length), left.eq(length - 1)]
        with m.If(self.s_axis.valid & self.s_axis.ready):
            m.d.sync += state.eq(_apply(step, Mux(first, seed_now, state)))
            with m.If(first):
                m.d.comb += [seq_w.en.eq(1), seq_w.data.eq(seq_r.data + 1)]
            m.d.sync += left.eq(left - 1)
            with m.If(left == 0):
                m.d.sync += [busy.eq(0), idle.eq(self.gap), self.sent.eq(self.sent + 1),
                             turn.eq(Mux(turn == peers - 1, 0, turn + 1))]
        return m


class TrafficCheck(wiring.Component):
    """Checks the bring-up packets arriving on an endpoint's ``m_axis`` (module docstring);
    takes every beat at once.

    Members
    -------
    m_axis : In(stream.Signature(axis_rx_layout(cfg)))
        From the endpoint.
    packets : Out(32)
        Packets received.
    out_of_sequence : Out(32)
        Packets whose sequence number was not the one after the last from their source (the
        first from a source after reset counts if it is not 0).
    bad_beats : Out(32)
        Beats whose data differ from what the generator sends.
    """

    def __init__(self, cfg: EndpointConfig, node_id: int):
        self.cfg, self.node_id = cfg, node_id
        super().__init__({"m_axis": In(stream.Signature(axis_rx_layout(cfg))),
                          "packets": Out(32), "out_of_sequence": Out(32),
                          "bad_beats": Out(32)})

    def elaborate(self, platform):
        m = Module()
        cfg, w = self.cfg, self.cfg.width
        ids = cfg.fmt.id_bits
        masks, step = _step_masks(w)
        m.submodules.expect = expect = memory.Memory(shape=SEQ_BITS, depth=1 << ids, init=[])
        exp_r, exp_w = expect.read_port(domain="comb"), expect.write_port()
        beat = self.m_axis.payload
        low = min(w, SEQ_BITS)
        first = Signal(init=1)          # the next beat starts a packet
        state = Signal(PRBS_BITS)
        seq = beat.tdata[:low]
        seed_now = _seed_of(beat.tid, Const(self.node_id, ids), seq.as_unsigned())
        want = Mux(first, _apply(masks, seed_now), _apply(masks, state))
        # (the first beat's low bits are the sequence number, checked on their own)
        care = Const(((1 << w) - 1) ^ ((1 << low) - 1), w)
        m.d.comb += [self.m_axis.ready.eq(1), exp_r.addr.eq(beat.tid), exp_w.addr.eq(beat.tid),
                     exp_w.data.eq(seq + 1)]
        with m.If(self.m_axis.valid):
            m.d.sync += [first.eq(beat.tlast),
                         state.eq(_apply(step, Mux(first, seed_now, state)))]
            bad = Mux(first, (beat.tdata ^ want) & care, beat.tdata ^ want).any()
            with m.If(bad):
                m.d.sync += self.bad_beats.eq(self.bad_beats + 1)
            with m.If(first):
                m.d.comb += exp_w.en.eq(1)
                with m.If(seq != exp_r.data[:low]):
                    m.d.sync += self.out_of_sequence.eq(self.out_of_sequence + 1)
            with m.If(beat.tlast):
                m.d.sync += self.packets.eq(self.packets + 1)
        return m
