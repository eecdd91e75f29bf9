"""Link layer: reliable, credit-carrying transport of flits over one PHY.

Frame (one per flit, or a control frame with no flit), packed low bit first and padded
to whole PHY words::

    has_flit | seq | ack | nak | credit counters (one per VC) | flit | CRC

- ``seq`` numbers frames that carry a flit; the sender keeps each in a replay buffer of
  ``window`` entries until it is acknowledged.
- ``ack`` is cumulative: the sequence number the receiver expects next, so every frame
  acknowledges everything before it. ``nak`` asks the sender to go back to ``ack`` and
  resend from there (go-back-N); a lost NAK is covered by a timeout.
- Credits are cumulative counters (modulo ``2**C``) of flits freed in each VC of the
  receiving router's buffer, so a corrupted or lost frame loses no credit: the next frame
  carries the new total.
- The CRC (CRC-32/Ethernet, or CRC-16/CCITT) covers everything before it. A frame with a
  bad CRC is dropped and answered with a NAK; after eight bad frames in a row the receiver
  assumes it has lost word alignment and slips by one PHY word.

Everything except the word (de)serialisers runs in the network clock domain (``sync``);
whole frames cross to and from the PHY's user clock domain through
:class:`amaranth.lib.fifo.AsyncFIFO`.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import cdc, crc, data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.hw.flit import FlitFormat, clog2

__all__ = ["LinkConfig", "LinkLayer", "frame_layout"]

# Frames queued for the PHY clock domain: enough to cover the clock crossing's round trip.
_TX_DEPTH = 8

_CRC = {32: crc.catalog.CRC32_ETHERNET, 16: crc.catalog.CRC16_CCITT}


@dataclass(frozen=True)
class LinkConfig:
    """Parameters of one link layer.

    Attributes
    ----------
    fmt : FlitFormat
    phy_width : int
        PHY user word width.
    phy_domain : str
        The PHY's user clock domain.
    depth : int
        Receive buffer depth per VC of the router behind this link (sets the width of
        the credit counters).
    window : int
        Replay buffer entries (frames in flight); rounded up to a power of two.
    crc_bits : int
        32, 16 or 0 (no CRC: frames are not checked, nothing is retransmitted).
    timeout : int
        Cycles without progress on the oldest unacknowledged frame before resending it.
    keepalive : int
        Cycles of silence after which a control frame repeats the acknowledgement and
        credit counters.
    """

    fmt: FlitFormat
    phy_width: int
    phy_domain: str
    depth: int
    window: int = 32
    crc_bits: int = 32
    timeout: int = 512
    keepalive: int = 64

    @property
    def seq_bits(self) -> int:
        # One more bit than the window needs, so a full window and an empty one differ.
        return clog2(self.window) + 1

    @property
    def window_size(self) -> int:
        return 1 << clog2(self.window)

    @property
    def credit_bits(self) -> int:
        return clog2(self.depth) + 2

    @property
    def words(self) -> int:
        """PHY words per frame."""
        return -(-frame_layout(self).size // self.phy_width)

    @property
    def frame_bits(self) -> int:
        return self.words * self.phy_width


def frame_layout(cfg: LinkConfig) -> data.StructLayout:
    """Layout of a frame, CRC included (padding to whole PHY words is not part of it)."""
    fields = {
        "has_flit": 1, "seq": cfg.seq_bits, "ack": cfg.seq_bits, "nak": 1,
        "credits": cfg.credit_bits * cfg.fmt.vcs, "flit": cfg.fmt.flit,
    }
    if cfg.crc_bits:
        fields["crc"] = cfg.crc_bits
    return data.StructLayout(fields)


class LinkLayer(wiring.Component):
    """One end of a link (see the module docstring for the protocol).

    Members
    -------
    tx_flit : In(stream.Signature(flit))
        Flits to send, from the router's output port.
    rx_flit : Out(stream.Signature(flit, always_ready=True))
        Flits received in order, to the router's input port.
    cred_local : In(V)
        Credit pulses of the local router's input buffer, to send to the far end.
    cred_remote : Out(V)
        Credit pulses from the far end, one per VC per cycle, for the local router.
    phy_tx : Out(stream.Signature(phy_width))            (PHY domain)
    phy_rx : In(stream.Signature(phy_width, always_ready=True))  (PHY domain)
    phy_up : In(1)                                       (PHY domain)
    up : Out(1)
    crc_errors, resent : Out(16)
        Frames dropped for a bad CRC or out-of-order sequence number; frames resent.
    """

    def __init__(self, config: LinkConfig):
        self.config = config
        super().__init__(self.signature_of(config))

    @staticmethod
    def signature_of(config: LinkConfig) -> wiring.Signature:
        """The signature of a link layer of ``config``."""
        f = config.fmt
        return wiring.Signature({
            "tx_flit": In(stream.Signature(f.flit)),
            "rx_flit": Out(stream.Signature(f.flit, always_ready=True)),
            "cred_local": In(f.vcs),
            "cred_remote": Out(f.vcs),
            "phy_tx": Out(stream.Signature(config.phy_width)),
            "phy_rx": In(stream.Signature(config.phy_width, always_ready=True)),
            "phy_up": In(1),
            "up": Out(1),
            "crc_errors": Out(16),
            "resent": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        f = cfg.fmt
        layout = frame_layout(cfg)
        body_bits = layout.size - cfg.crc_bits
        S, C, V = cfg.seq_bits, cfg.credit_bits, f.vcs
        pd = cfg.phy_domain

        m.submodules.up_sync = cdc.FFSynchronizer(self.phy_up, self.up)
        m.submodules.tx_fifo = tx_fifo = fifo.AsyncFIFO(
            width=cfg.frame_bits, depth=_TX_DEPTH, w_domain="sync", r_domain=pd)
        m.submodules.rx_fifo = rx_fifo = fifo.AsyncFIFO(
            width=cfg.frame_bits, depth=8, w_domain=pd, r_domain="sync")
        slip = cdc.PulseSynchronizer(i_domain="sync", o_domain=pd)
        m.submodules.slip = slip
        self._serialise(m, tx_fifo, pd)
        self._deserialise(m, rx_fifo, slip, pd)

        # -- transmit state --------------------------------------------------------------
        W = cfg.window_size
        m.submodules.replay = replay = memory.Memory(shape=f.flit.size, depth=W, init=[])
        rp_w = replay.write_port()
        rp_r = replay.read_port(domain="comb")
        acked = Signal(S)       # oldest frame not acknowledged
        next_seq = Signal(S)    # sequence number of the next new flit
        send_seq = Signal(S)    # next frame to (re)transmit
        in_flight = Signal(S)
        m.d.comb += in_flight.eq(next_seq - acked)
        m.d.comb += [self.tx_flit.ready.eq(self.up & (in_flight < W)),
                     rp_w.addr.eq(next_seq[:S - 1]), rp_w.data.eq(self.tx_flit.payload)]
        with m.If(self.tx_flit.valid & self.tx_flit.ready):
            m.d.comb += rp_w.en.eq(1)
            m.d.sync += next_seq.eq(next_seq + 1)

        # -- receive state (written below, read by the transmitter) -----------------------
        expect = Signal(S)      # next sequence number expected
        nak_due = Signal()      # a NAK must go out
        nak_sent = Signal()     # one NAK per error episode
        local_cnt = [Signal(C, name=f"local_cnt{v}") for v in range(V)]
        for v in range(V):
            with m.If(self.cred_local[v]):
                m.d.sync += local_cnt[v].eq(local_cnt[v] + 1)
        sent_ack = Signal(S)
        sent_cnt = Signal(C * V)
        quiet = Signal(range(cfg.keepalive + 1))

        # -- build a frame ---------------------------------------------------------------
        body = Signal(data.StructLayout({k: v.shape for k, v in layout if k != "crc"}))
        have_data = send_seq != next_seq
        changed = (sent_ack != expect) | (sent_cnt != Cat(local_cnt)) | nak_due
        fire = Signal()
        staged = Signal()       # a frame is in the CRC stage
        m.d.comb += [
            rp_r.addr.eq(send_seq[:S - 1]),
            body.has_flit.eq(have_data), body.seq.eq(send_seq), body.ack.eq(expect),
            body.nak.eq(nak_due), body.credits.eq(Cat(local_cnt)), body.flit.eq(rp_r.data),
            # w_level is a register and a fired frame is written a cycle later, so up to
            # two frames are not in it yet: fire only while both would still fit.
            fire.eq(self.up & (tx_fifo.w_level < _TX_DEPTH - 2)
                    & (have_data | changed | (quiet == cfg.keepalive))),
        ]
        staged_body = Signal.like(body)
        m.d.sync += staged.eq(fire)
        with m.If(fire):
            m.d.sync += [staged_body.eq(body), sent_ack.eq(expect), sent_cnt.eq(Cat(local_cnt)),
                         quiet.eq(0)]
            with m.If(have_data):
                m.d.sync += send_seq.eq(send_seq + 1)
            with m.If(nak_due):
                m.d.sync += nak_due.eq(0)
        with m.Elif(quiet != cfg.keepalive):
            m.d.sync += quiet.eq(quiet + 1)
        crc_field = Cat()
        if cfg.crc_bits:
            m.submodules.tx_crc = tx_crc = _CRC[cfg.crc_bits](data_width=body_bits).create()
            m.d.comb += [tx_crc.data.eq(body), tx_crc.start.eq(fire), tx_crc.valid.eq(fire)]
            crc_field = tx_crc.crc
        m.d.comb += [tx_fifo.w_data.eq(Cat(staged_body, crc_field)), tx_fifo.w_en.eq(staged)]

        # -- receive a frame -------------------------------------------------------------
        frame = data.View(layout, rx_fifo.r_data[:layout.size])
        checking = Signal()
        got = Signal(layout)
        m.d.comb += rx_fifo.r_en.eq(1)
        m.d.sync += checking.eq(rx_fifo.r_rdy)
        with m.If(rx_fifo.r_rdy):
            m.d.sync += got.eq(frame)
        good = Signal()
        if cfg.crc_bits:
            m.submodules.rx_crc = rx_crc = _CRC[cfg.crc_bits](data_width=body_bits).create()
            m.d.comb += [rx_crc.data.eq(rx_fifo.r_data[:body_bits]),
                         rx_crc.start.eq(rx_fifo.r_rdy), rx_crc.valid.eq(rx_fifo.r_rdy),
                         good.eq(checking & (rx_crc.crc == got.crc))]
        else:
            # No CRC (``crc: none``): no checker either, rather than one whose result is
            # ignored. Lowering a CRC over a wide frame is slow (a chain of XORs per bit),
            # and a 63-link node would carry 126 unused ones.
            m.d.comb += good.eq(checking)

        seq_dist = Signal(S)
        m.d.comb += seq_dist.eq(got.seq - expect)
        bad_run = Signal(range(9))
        crc_errors, resent = Signal(16), Signal(16)
        m.d.comb += [self.crc_errors.eq(crc_errors), self.resent.eq(resent)]
        with m.If(checking & ~good):
            m.d.sync += crc_errors.eq(Mux(crc_errors == 0xFFFF, crc_errors, crc_errors + 1))
            with m.If(~nak_sent):
                m.d.sync += [nak_due.eq(1), nak_sent.eq(1)]
            with m.If(bad_run == 8):
                m.d.comb += slip.i.eq(cfg.words > 1)
                m.d.sync += bad_run.eq(0)
            with m.Else():
                m.d.sync += bad_run.eq(bad_run + 1)
        with m.If(good):
            m.d.sync += bad_run.eq(0)
            # Acknowledgements and NAKs apply only if they lie within what was sent.
            ack_dist = Signal(S)
            m.d.comb += ack_dist.eq(got.ack - acked)
            with m.If(ack_dist <= in_flight):
                m.d.sync += acked.eq(got.ack)
                with m.If(got.nak):
                    m.d.sync += [send_seq.eq(got.ack),
                                 resent.eq(Mux(resent == 0xFFFF, resent, resent + 1))]
            with m.If(got.has_flit):
                with m.If(got.seq == expect):
                    m.d.comb += [self.rx_flit.valid.eq(1), self.rx_flit.payload.eq(got.flit)]
                    m.d.sync += [expect.eq(expect + 1), nak_sent.eq(0)]
                with m.Elif(~nak_sent & ~seq_dist[S - 1]):
                    # A frame from the future: one was lost. (An old one is a duplicate
                    # of a resent frame and needs nothing.)
                    m.d.sync += [nak_due.eq(1), nak_sent.eq(1)]

        # -- timeout: nothing acknowledged for a while -----------------------------------
        idle = Signal(range(cfg.timeout + 1))
        progress = good & (got.ack != acked)
        with m.If((in_flight == 0) | progress):
            m.d.sync += idle.eq(0)
        with m.Elif(idle == cfg.timeout):
            m.d.sync += [idle.eq(0), send_seq.eq(acked),
                         resent.eq(Mux(resent == 0xFFFF, resent, resent + 1))]
        with m.Else():
            m.d.sync += idle.eq(idle + 1)

        # -- remote credits: counter deltas, paid out one per VC per cycle ---------------
        for v in range(V):
            last = Signal(C, name=f"remote_cnt{v}")
            owed = Signal(C + 1, name=f"owed{v}")
            count = got.credits[v * C:(v + 1) * C]
            delta = Signal(C, name=f"delta{v}")
            m.d.comb += [delta.eq(Mux(good, count - last, 0)),
                         self.cred_remote[v].eq((owed != 0) | (delta != 0))]
            with m.If(good):
                m.d.sync += last.eq(count)
            m.d.sync += owed.eq(owed + delta - self.cred_remote[v])
        return m

    def _serialise(self, m, tx_fifo, pd):
        n, w = self.config.words, self.config.phy_width
        shift = Signal(self.config.frame_bits)
        left = Signal(range(n + 1))
        m.d.comb += [self.phy_tx.payload.eq(shift[:w]), self.phy_tx.valid.eq(left != 0),
                     tx_fifo.r_en.eq((left == 0) | ((left == 1) & self.phy_tx.ready))]
        with m.If(tx_fifo.r_en & tx_fifo.r_rdy):
            m.d[pd] += [shift.eq(tx_fifo.r_data), left.eq(n)]
        with m.Elif(self.phy_tx.valid & self.phy_tx.ready):
            m.d[pd] += [shift.eq(shift >> w), left.eq(left - 1)]

    def _deserialise(self, m, rx_fifo, slip, pd):
        n, w = self.config.words, self.config.phy_width
        shift = Signal(self.config.frame_bits)
        count = Signal(range(max(n, 2)))   # never zero-width
        skip = Signal()
        with m.If(slip.o):
            m.d[pd] += skip.eq(1)
        m.d.comb += rx_fifo.w_data.eq(Cat(shift[w:], self.phy_rx.payload) if n > 1
                                      else self.phy_rx.payload)
        with m.If(self.phy_rx.valid):
            if n > 1:
                m.d[pd] += shift.eq(Cat(shift[w:], self.phy_rx.payload))
            with m.If(skip):
                m.d[pd] += skip.eq(0)
            with m.Elif(count == n - 1):
                m.d.comb += rx_fifo.w_en.eq(1)
                m.d[pd] += count.eq(0)
            with m.Else():
                m.d[pd] += count.eq(count + 1)
