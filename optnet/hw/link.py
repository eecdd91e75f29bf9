"""Link layer: reliable, credit-carrying transport of flits over one PHY, in frames.

The frame format is :mod:`optnet.frame`'s: a header of ``h`` units and up to ``B`` flits,
one unit (a flit's data) each. This module is the hardware that sends and receives it.

Transmit (network clock domain ``sync``), three stages:

A. *Framer.* Flits from the router are written into the replay buffer (block RAM, one
   entry per sequence number, with the flit's side bits). When flits wait, or the
   previous frame's check is owed, or the acknowledgement or credits changed, the framer
   starts a frame: it latches the header's early fields (count, seq, ack, nak, credits)
   and then reads the frame's flits out of the replay buffer, one unit per cycle. Stage A
   holds a header unit or a flit just read; the side bits (``tail``, ``vc``) of each flit
   passing it are written into their place in the next header.
B. *Check engine.* The unit from stage A, a header unit built from the registers holding
   its fields or a flit, is registered here; the check engine
   (:class:`~optnet.hw.crc.CrcEngine`) runs over the units from here: it restarts at each
   header, so that its value at the next header is the check of the flits in between. The
   ``crc`` field, in a later header unit than the first, is taken from the engine as that
   unit passes stage A; in a one-unit header it is written in stage B.
C. *Header check.* With the header's ``hec`` bits left zero the engine ends the header in a
   state from which a fixed linear map gives the ``hec`` that makes the header a codeword
   (the engine's register is then zero after it); it is written into the last header unit
   as it enters stage C, on its way to the PHY.

Units cross to the PHY clock through an :class:`~amaranth.lib.fifo.AsyncFIFO` in block RAM
and are sent as one or more PHY words each. Receive: units cross back the same way and are
checked by the same kind of engine; a header whose check holds (register zero) is trusted;
a frame's flits wait in a staging buffer (block RAM) until the next header brings their
side bits and check. A frame that checks is committed: its count and side bits go into a
small block RAM queue, and its flits are delivered to the router in order, one per cycle,
each with its side bits picked from the queue's output by its place in the frame (on
Xilinx parts, read from a block RAM written a frame at a time,
:attr:`~optnet.plan.configs.LinkConfig.side_ram`).
A bad check, or a frame whose first flit is not the one expected, makes the receiver drop
the frame and send a NAK; the far end goes back to the acknowledged flit (go-back-N), or
resends after a timeout when a NAK is lost.

The logic is laid out for area (issue 18: one link layer of the BlueDBM configuration in
1,000 Xilinx 7-series LUTs, ``bench/link_area.py``): wide data is stored in block RAM
rather than LUT RAM, and no 128-bit value is shifted or muxed more than once per direction.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import cdc, crc, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.frame import HEADER_MARKER, FrameFormat
from optnet.hw.crc import CrcEngine, next_state_terms
from optnet.plan.configs import LinkConfig, clog2

__all__ = ["LinkLayer"]

# Units queued for the PHY clock domain: enough to cover the clock crossing's round trip.
_TX_DEPTH = 16


class _BlockRamAsyncFIFO(fifo.AsyncFIFO):
    """An :class:`~amaranth.lib.fifo.AsyncFIFO` whose storage is block RAM.

    Sixteen units of 128 bits would take 22 LUT RAM cells (88 LUTs) per FIFO; a block RAM
    costs none, and a link's few are cheap beside the part's hundreds. The depth stays
    small, so that a frame waits in the replay buffer (where it can still grow) rather than
    in the clock crossing."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        # Yosys and Vivado both take `ram_style` from the memory's attributes.
        m.submodules.storage.attrs["ram_style"] = "block"
        return m

_CRC = {32: crc.catalog.CRC32_ETHERNET, 16: crc.catalog.CRC16_USB}


def _field_slices(fmt: FrameFormat) -> dict[str, list[slice]]:
    """Where each field of the header lies: its segments, low bits first (a field spread
    over several header units has one per unit, see :attr:`FrameFormat.fields`)."""
    out: dict[str, list[slice]] = {}
    at = 0
    for name, bits in fmt.fields:
        out.setdefault(name, []).append(slice(at, at + bits))
        at += bits
    return out


def _field(vector, where: list[slice]):
    """The value of a field lying at ``where`` (:func:`_field_slices`) in ``vector``."""
    return Cat(*(vector[s] for s in where))


def _gf2_inverse(columns: list[int], n: int) -> list[int]:
    """Columns of the inverse of the n x n matrix over GF(2) whose column ``j`` is the bit
    mask ``columns[j]``."""
    # Gauss-Jordan on rows [A | I].
    rows = [sum(((columns[j] >> i) & 1) << j for j in range(n)) | (1 << (n + i))
            for i in range(n)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if rows[r] >> col & 1)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(n):
            if r != col and rows[r] >> col & 1:
                rows[r] ^= rows[col]
    inverse_rows = [row >> n for row in rows]
    return [sum(((inverse_rows[i] >> j) & 1) << i for i in range(n)) for j in range(n)]


def _up_down(value, up, down):
    """``value + up - down`` (``up`` and ``down`` single bits) in one adder, its carry in
    doing the increment: Amaranth's ``value + up - down`` is two."""
    width = len(value)
    step = Mux(down, (1 << width) - 1, 0)
    cin = up   # +1 = 0 + 1, -1 = ~0 + 0, 0 = 0 + 0 or ~0 + 1
    return (Cat(cin, value) + Cat(cin, step))[1:width + 1]


def _sticky_add(counter, add):
    """``counter + add`` for a statistics counter whose top bit is sticky: once set it stays,
    and the counter reads as at least half its range while its low bits count on. One adder
    and no comparator, where saturating at all ones takes a comparator and a mux too."""
    width = len(counter)
    total = counter[:width - 1] + add
    return Cat(total[:width - 1], counter[width - 1] | total[width - 1])


def hec_map(params: crc.Parameters) -> list[int]:
    """For each bit of the engine's register, the mask of ``hec`` bits it flips: ``hec``
    takes the top ``crc_width`` bits of a unit, and the map takes the register after the
    unit with those bits zero to the ``hec`` that leaves the register zero."""
    width, bits = params.algorithm.crc_width, params.data_width
    terms = next_state_terms(params)
    # H: hec bit j (data bit bits - width + j) -> register bits it flips.
    h_cols = [sum(1 << i for i, (_, data) in enumerate(terms) if bits - width + j in data)
              for j in range(width)]
    inverse = _gf2_inverse(h_cols, width)   # register bit -> hec bits
    return inverse


class LinkLayer(wiring.Component):
    """One end of a link (see the module docstring for the protocol).

    Members
    -------
    tx_flit : In(stream.Signature(flit))
        Flits to send, from the router's output port.
    tx_room : Out(1)
        A flit offered next cycle will be taken: the replay window has room for it besides
        any taken now (the router's :attr:`~optnet.hw.router.Router.room`).
    rx_flit : Out(stream.Signature(flit, always_ready=True))
        Flits received in order, to the router's input port.
    cred_local : In(V)
        Credit pulses of the local router's input buffer, to send to the far end.
    cred_remote : Out(V)
        Credit pulses from the far end, one per VC per cycle, for the local router, which
        starts with no credit on this link's output
        (:attr:`~optnet.plan.configs.RouterConfig.granted`): the far end's buffer depth is
        paid once the link is up, and after a restart of the far end as much of it as its
        router has free.
    phy_tx : Out(stream.Signature(phy_width))            (PHY domain)
    phy_rx : In(stream.Signature(phy_width, always_ready=True))  (PHY domain)
    phy_up : In(1)                                       (PHY domain)
    up : Out(1)
        The link layer is synchronised with the far end's (not only the PHY up): flits
        flow.
    crc_errors, resent : Out(16)
        Frames dropped for a bad check or an unexpected sequence number; go-backs.
    lost, restarts : Out(16)
        Flits this end discarded because the far end restarted (its replay buffer, and the
        rest of packets cut short), and the far end's restarts.

    The four counters saturate by a sticky top bit: past 32,767 it stays set (read: "at
    least 32,768") while the low bits count on.
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
            "tx_room": Out(1),
            "rx_flit": Out(stream.Signature(f.flit, always_ready=True)),
            "cred_local": In(f.vcs),
            "cred_remote": Out(f.vcs),
            "phy_tx": Out(stream.Signature(config.phy_width)),
            "phy_rx": In(stream.Signature(config.phy_width, always_ready=True)),
            "phy_up": In(1),
            "up": Out(1),
            "crc_errors": Out(16),
            "resent": Out(16),
            "lost": Out(16),
            "restarts": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        pd = cfg.phy_domain
        unit = cfg.fmt.width
        phy_ok = Signal()
        m.submodules.up_sync = cdc.FFSynchronizer(self.phy_up, phy_ok)
        m.submodules.tx_fifo = tx_fifo = _BlockRamAsyncFIFO(
            width=unit, depth=_TX_DEPTH, w_domain="sync", r_domain=pd)
        m.submodules.rx_fifo = rx_fifo = _BlockRamAsyncFIFO(
            width=unit, depth=_TX_DEPTH, w_domain=pd, r_domain="sync")
        slip = cdc.PulseSynchronizer(i_domain="sync", o_domain=pd)
        m.submodules.slip = slip
        self._serialise(m, tx_fifo, pd)
        self._deserialise(m, rx_fifo, slip, pd)
        rx = self._receiver(m, rx_fifo, slip)
        m.d.comb += self.up.eq(phy_ok & rx["joined"])
        self._transmitter(m, tx_fifo, rx, phy_ok)
        return m

    # ------------------------------------------------------------------------ transmit

    def _transmitter(self, m: Module, tx_fifo, rx: dict, phy_ok: Signal) -> None:
        cfg, fr = self.config, self.config.frame
        f = cfg.fmt
        unit, h, B = f.width, fr.header_units, fr.max_flits
        S, C, V = cfg.seq_bits, cfg.credit_bits, f.vcs
        sb, vb = fr.side_bits, fr.vc_bits
        W = cfg.window_size
        fs = _field_slices(fr)

        # -- replay buffer: flits by sequence number -----------------------------------
        entry = unit + sb
        m.submodules.replay = replay = memory.Memory(shape=entry, depth=W, init=[])
        wp = replay.write_port()
        rp = replay.read_port(domain="sync")
        acked = Signal(S)        # oldest flit not acknowledged
        next_seq = Signal(S)     # sequence number of the next flit from the router
        in_flight = Signal(S)
        m.d.comb += in_flight.eq(next_seq - acked)
        flit = self.tx_flit.payload
        # (No flit is taken in the cycle the far end's restart is seen, so that the restart's
        # bookkeeping below need not count one.)
        rf = rx["restart_first"]
        m.d.comb += [self.tx_flit.ready.eq(self.up & (in_flight < W) & ~rf),
                     wp.addr.eq(next_seq[:S - 1]),
                     wp.data.eq(Cat(flit.data, flit.tail, flit.vc if vb else Cat()))]
        # After the far end restarts, the rest of a packet this end was sending on a VC has
        # lost its head: it is taken from the router and dropped (and credited at once, see
        # the receiver), up to its tail.
        accept = Signal()
        m.d.comb += [accept.eq(self.tx_flit.valid & self.tx_flit.ready),
                     self.tx_room.eq(self.up & ~rf & (in_flight + accept < W))]
        open_tx = Signal(V)      # the last flit taken on the VC was not a tail
        dropping = Signal(V)
        with m.If(rf):
            m.d.sync += dropping.eq(open_tx)
        vc_of = flit.vc if vb else Const(0, 1)
        dropped = Signal()
        for v in range(V):
            with m.If(accept & (vc_of == v)):
                m.d.comb += rx["accepted"][v].eq(1)
                m.d.sync += open_tx[v].eq(~flit.tail)
                with m.If(dropping[v]):
                    m.d.comb += [rx["drop_credit"][v].eq(1), dropped.eq(1)]
                    with m.If(flit.tail):
                        m.d.sync += dropping[v].eq(0)
        with m.If(accept & ~dropped):
            m.d.comb += wp.en.eq(1)
            m.d.sync += next_seq.eq(next_seq + 1)
        with m.If(rf):
            # Numbering starts again at zero with the far end's restart (see `acked` below).
            m.d.sync += next_seq.eq(0)

        rewind = Signal()        # go back to `acked` at the next frame
        resent = Signal(16)
        m.d.comb += self.resent.eq(resent)
        lost, restarts = Signal(16), Signal(16)
        m.d.comb += [self.lost.eq(lost), self.restarts.eq(restarts)]
        # (The counters saturate by a sticky top bit, `_sticky_add`.)
        m.d.sync += lost.eq(_sticky_add(lost, Mux(rf, in_flight, dropped)))
        with m.If(rf):
            m.d.sync += restarts.eq(_sticky_add(restarts, 1))

        # -- local credit counters -----------------------------------------------------
        # The count sent for VC v is the far end's credit for the local router's buffer
        # since its current start, less the flits it has sent since: `depth + cur -
        # occupied`, with `occupied` the flits of this link the router holds and `cur` those
        # delivered since the far end's start (zero at its restart; the frames it committed
        # before, and the tails that close its cut packets, are not counted). The far end's
        # router starts with no credit and is paid up to the count (see the receiver). Until
        # a restart, `cur - occupied` is the flits freed; after one, the router may still
        # hold old flits (up to a buffer's depth), and the count starts
        # that far below `depth`, so the far end is never given room they occupy. The
        # receiver keeps `room` (`depth - occupied`) rather than `occupied`, so the count is
        # one adder.
        local_cnt = []
        for v in range(V):
            cur = Signal(C, name=f"delivered_cur{v}")
            m.d.sync += cur.eq(Mux(rf, 0, cur + (rx["delivered"][v] & ~rx["closing"])))
            count = Signal(C, name=f"local_cnt{v}")
            m.d.comb += count.eq(cur + rx["room"][v])
            local_cnt.append(count)
        sent_ack = Signal(S)
        sent_cnt = Signal(C * V)
        quiet = Signal(range(cfg.keepalive + 1))

        # -- stage A: the framer -------------------------------------------------------
        go = Signal()            # the pipeline advances (the last stage can write)
        # Stage A holds a header unit (number `a_hidx`) or, with `a_data`, the flit the
        # replay buffer's read port has just read.
        a_valid, a_data, a_first = Signal(), Signal(), Signal()
        a_hidx = Signal(range(max(h, 2)))
        dleft = Signal(range(B + 1))
        # The next flit to read out of the replay buffer; between frames, the first flit of
        # the next frame unless it goes back.
        cur = Signal(S)
        owe = Signal()           # a frame with flits was sent: a header must follow
        sent_nak = Signal()

        start_seq = Signal(S)
        m.d.comb += start_seq.eq(Mux(rewind, acked, cur))
        avail = Signal(S)
        m.d.comb += avail.eq(next_seq - start_seq)
        count = Signal(range(B + 1))
        # While the far end's restart is acknowledged, no flits go out, so that this end's
        # numbering stays at zero, where the far end's restarted one expects it.
        m.d.comb += count.eq(Mux(rx["hold"], 0, Mux(avail > B, B, avail)))
        restart, sent_restart, sent_rack = Signal(), Signal(), Signal()
        m.d.comb += restart.eq(~rx["joined"])
        changed = ((sent_ack != rx["expect"]) | (sent_cnt != Cat(local_cnt)) | rx["nak_due"]
                   | (sent_restart != restart) | (sent_rack != rx["hold"]))
        # A restarted end sends headers before it is up, to be acknowledged. Until both
        # ends have joined (this one after its reset, `restart`; the far end after its,
        # `hold`) and while this end's receiver hunts for the far end's headers, headers go
        # back to back: the far end is then most likely hunting for ours, and slips a word
        # whenever its search window passes without a header, a window shorter than the
        # keepalive period. With headers only every keepalive, the slips and the headers
        # can keep missing each other (seen: a 4-node ring whose restarted node's link
        # stayed down for 3,000 cycles, and a link pair that never came back up).
        want = phy_ok & ((count != 0) | owe | changed | restart | rx["hold"] | ~rx["synced"]
                         | (quiet == cfg.keepalive))
        phase_idle = Signal(init=1)
        phase_hdr = Signal()
        phase_data = Signal()
        m.d.comb += [rp.en.eq(go), rp.addr.eq(cur[:S - 1])]
        with m.If(go):
            m.d.sync += [a_valid.eq(0), a_data.eq(0), a_first.eq(0)]
            with m.If(phase_idle & want):
                m.d.sync += [a_valid.eq(1), a_first.eq(1), a_hidx.eq(0),
                             dleft.eq(count), cur.eq(start_seq),
                             rewind.eq(0),
                             owe.eq(count != 0), quiet.eq(0), sent_ack.eq(rx["expect"]),
                             sent_cnt.eq(Cat(local_cnt)), sent_nak.eq(rx["nak_due"]),
                             sent_restart.eq(restart), sent_rack.eq(rx["hold"])]
                m.d.comb += rx["sent_nak"].eq(rx["nak_due"])
                if h > 1:
                    m.d.sync += [phase_idle.eq(0), phase_hdr.eq(1)]
                else:
                    with m.If(count != 0):
                        m.d.sync += [phase_idle.eq(0), phase_data.eq(1)]
            with m.Elif(phase_idle & (quiet != cfg.keepalive)):
                m.d.sync += quiet.eq(quiet + 1)
            with m.If(phase_hdr):
                m.d.sync += [a_valid.eq(1), a_hidx.eq(a_hidx + 1)]
                with m.If(a_hidx == max(h - 2, 0)):
                    m.d.sync += phase_hdr.eq(0)
                    with m.If(dleft != 0):
                        m.d.sync += phase_data.eq(1)
                    with m.Else():
                        m.d.sync += phase_idle.eq(1)
            with m.If(phase_data):
                # The replay buffer's read port registers `cur` at this edge: its data is
                # the unit in stage A next cycle.
                m.d.sync += [a_valid.eq(1), a_data.eq(1), cur.eq(cur + 1),
                             dleft.eq(dleft - 1)]
                with m.If(dleft == 1):
                    m.d.sync += [phase_data.eq(0), phase_idle.eq(1)]
        # -- acknowledgements from the receiver ----------------------------------------
        # (After the framer: a go-back asked for in the cycle a frame starts must stay.)
        # A go-back, asked for by a NAK or after a timeout (one counter increment for
        # both, so one incrementer).
        back = Signal()
        ack_dist = Signal(S)
        m.d.comb += ack_dist.eq(rx["ack"] - acked)
        with m.If(rf):
            # The far end restarted: what it had not acknowledged went into a node that no
            # longer holds its packets. The numbering starts again at zero (as the far end's
            # did with its reset), so that neither end loads the other's.
            m.d.sync += [acked.eq(0), rewind.eq(1)]
        with m.Elif(rx["take"] & (ack_dist <= in_flight)):
            m.d.sync += acked.eq(rx["ack"])
            m.d.comb += back.eq(rx["nak"])
        idle = Signal(range(cfg.timeout + 1))
        progress = rx["take"] & (rx["ack"] != acked)
        with m.If((in_flight == 0) | progress | rx["hold"]):
            m.d.sync += idle.eq(0)
        with m.Elif(idle == cfg.timeout):
            m.d.sync += idle.eq(0)
            m.d.comb += back.eq(1)
        with m.Else():
            m.d.sync += idle.eq(idle + 1)
        with m.If(back):
            m.d.sync += [rewind.eq(1), resent.eq(_sticky_add(resent, 1))]

        # Side bits of a frame's flits, each written in its header position as its flit
        # passes stage A: `slot` is one-hot at the flit's place in the frame while stage A
        # holds a flit (so the write needs no decoder), zero otherwise. A header in stage
        # A therefore sees the side bits of the frame before it, all of them: the next
        # frame's flits reach stage A only after its header has left.
        side_acc = Signal(B * sb)
        slot = Signal(B)
        # (Clearing apart from shifting lets the clear be the flip-flops' reset.)
        with m.If(go & ~phase_data):
            m.d.sync += slot.eq(0)
        with m.Elif(go):
            m.d.sync += slot.eq(Cat(~a_data, slot[:-1]))
        for k in range(B):
            # A stalled flit is written again with the same bits (the read port holds).
            with m.If(slot[k]):
                m.d.sync += side_acc[k * sb:(k + 1) * sb].eq(rp.data[unit:])

        # The header, built where it is sent: each field from the register that holds it
        # while the header passes stage A (`dleft` and `cur` change only with the flits).
        c_bits = cfg.crc_bits
        if c_bits:
            params = _CRC[c_bits](data_width=unit)
            m.submodules.tx_crc = engine = CrcEngine(params)
            # The engine's register holds the previous frame's check while the first
            # header unit is in stage B (it restarts with that unit); later header units
            # take it from `crc_hold`.
            # (It holds the register rather than the check: see `CrcEngine.output`.)
            crc_hold = Signal(c_bits)
            hold_crc = engine.output(crc_hold)
        values = {"marker": Const(HEADER_MARKER, 4), "count": dleft, "seq": cur,
                  "ack": sent_ack, "nak": sent_nak, "restart": sent_restart,
                  "restart_ack": sent_rack, "credits": sent_cnt, "side": side_acc}
        units = [[Const(0, 1)] * unit for _ in range(h)]
        crc_first = []   # (bit of the first header unit, bit of the check)
        for name, where in fs.items():
            for b, at in enumerate(at for s in where for at in range(s.start, s.stop)):
                j, i = divmod(at, unit)
                if name in values:
                    units[j][i] = values[name][b]
                elif name == "crc" and j == 0:
                    crc_first.append((i, b))
                elif name == "crc":
                    units[j][i] = engine.crc[b] if j == 1 else hold_crc[b]
        hdr_unit = Signal(unit)
        with m.Switch(a_hidx):
            for j in range(h):
                with m.Case(j):
                    m.d.comb += hdr_unit.eq(Cat(*units[j]))

        # -- stage B: check engine -----------------------------------------------------
        b_valid, b_first, b_last_hdr = Signal(), Signal(), Signal()
        b_unit = Signal(unit)
        with m.If(go):
            m.d.sync += [b_valid.eq(a_valid), b_first.eq(a_valid & a_first),
                         b_unit.eq(Mux(a_data, rp.data[:unit], hdr_unit)),
                         b_last_hdr.eq(a_valid & ~a_data & (a_hidx == h - 1))]
        # Columns that every header unit leaves zero here (padding, and the hec filled in at
        # stage C; the frame format leaves the top columns of every unit so) take a flit's
        # bit or zero: the flip-flops' synchronous reset rather than a LUT each.
        zero = [i for i in range(unit)
                if all(isinstance(units[j][i], Const) and not units[j][i].value
                       for j in range(h))]
        runs: list[list[int]] = []      # [first, last + 1] of each run of such columns
        for i in zero:
            if runs and runs[-1][1] == i:
                runs[-1][1] = i + 1
            else:
                runs.append([i, i + 1])
        with m.If(go & ~a_data):
            m.d.sync += [b_unit[lo:hi].eq(0) for lo, hi in runs]
        with m.Elif(go):
            m.d.sync += [b_unit[lo:hi].eq(rp.data[lo:hi]) for lo, hi in runs]
        out_b = Signal(unit)
        m.d.comb += out_b.eq(b_unit)
        if c_bits:
            with m.If(go & b_valid & b_first):
                m.d.sync += crc_hold.eq(engine.register)
            # A check that falls in the first header unit (one-unit headers) is written
            # here, where the engine holds it.
            with m.If(b_first):
                for i, b in crc_first:
                    m.d.comb += out_b[i].eq(engine.crc[b])
            m.d.comb += [engine.data.eq(out_b), engine.valid.eq(go & b_valid),
                         engine.start.eq(go & b_valid & b_first)]

        # -- stage C: header check, to the PHY -----------------------------------------
        c_valid, c_last_hdr = Signal(), Signal()
        c_unit = Signal(unit)
        with m.If(go):
            m.d.sync += [c_valid.eq(b_valid), c_unit.eq(out_b),
                         c_last_hdr.eq(b_valid & b_last_hdr)]
        w_data = Signal(unit)
        m.d.comb += w_data.eq(c_unit)
        if c_bits:
            # The last header unit passes stage B with its hec bits zero, and the engine's
            # register then holds the check of the header so far: from it `hec_map` gives
            # the hec that makes the header a codeword, filled in here. (From the register
            # rather than from the engine's next state in stage B: Yosys would build that
            # as a second check matrix over the unit.) The receiver's register is then zero,
            # so the next unit (a flit of the frame) goes through from a zero register.
            columns = hec_map(params)
            with m.If(c_last_hdr):
                for i in range(c_bits):
                    terms = [engine.register[j] for j in range(c_bits) if columns[j] >> i & 1]
                    m.d.comb += w_data[unit - c_bits + i].eq(Cat(*terms).xor() if terms else 0)
            m.d.comb += engine.zero.eq(c_last_hdr)
        m.d.comb += [go.eq(~c_valid | tx_fifo.w_rdy), tx_fifo.w_data.eq(w_data),
                     tx_fifo.w_en.eq(c_valid & go)]

    # ------------------------------------------------------------------------- receive

    def _receiver(self, m: Module, rx_fifo, slip) -> dict:
        """Check, stage and deliver received frames; returns what the transmitter needs:
        ``take`` (an ordinary trusted header this cycle) with its ``ack`` and ``nak``; this
        end's ``expect`` and ``nak_due``; ``joined``, ``hold`` (the far end's restart is
        being acknowledged) and ``restart_first`` (it has just restarted); and the
        transmitter's ``accepted`` and ``drop_credit`` pulses per VC to drive; per VC, the
        flits ``delivered`` (``closing`` tails among them) and the ``room`` left in the
        local router's buffer."""
        cfg, fr = self.config, self.config.frame
        f = cfg.fmt
        unit, h, B = f.width, fr.header_units, fr.max_flits
        S, C, V = cfg.seq_bits, cfg.credit_bits, f.vcs
        sb, vb = fr.side_bits, fr.vc_bits
        fs = _field_slices(fr)
        hbits = fr.header_bits
        c_bits = cfg.crc_bits
        u, uv = rx_fifo.r_data, rx_fifo.r_rdy
        m.d.comb += rx_fifo.r_en.eq(1)

        hunting = Signal(init=1)   # looking for a header
        synced = Signal()          # the last header was good: the next one is trusted
        in_hdr = Signal()          # receiving header units after the first
        in_data = Signal()
        hidx = Signal(range(max(h, 2)))
        dleft = Signal(range(B + 1))
        hvec = Signal(hbits)       # the header, its units shifted in
        hnext = Signal(hbits)
        m.d.comb += hnext.eq(Cat(hvec[unit:], u) if h > 1 else u)
        field = {name: _field(hvec, where) for name, where in fs.items()}
        checking = Signal()        # the header completed last cycle: its check is ready
        marker = _field(u, fs["marker"]) == HEADER_MARKER
        starts = uv & ~in_hdr & ~in_data & (marker | ~hunting)
        last = Signal()
        m.d.comb += last.eq(uv & ((starts & (h == 1)) | (in_hdr & (hidx == h - 1))))

        if c_bits:
            params = _CRC[c_bits](data_width=unit)
            m.submodules.rx_crc = engine = CrcEngine(params)
            m.d.comb += [engine.data.eq(u), engine.valid.eq(uv & (starts | in_hdr | in_data)),
                         engine.start.eq(starts)]
            header_good = engine.register == 0
        else:
            header_good = Const(1)
        # The check of the frame before this header, as the engine's register (its
        # `CrcEngine.output` is the check).
        crc_calc = Signal(max(c_bits, 1))
        if c_bits:
            with m.If(starts):
                m.d.sync += crc_calc.eq(engine.register)

        with m.If(starts):
            m.d.sync += [hvec.eq(hnext), hidx.eq(1)]
            if h > 1:
                m.d.sync += in_hdr.eq(1)
        with m.If(uv & in_hdr):
            m.d.sync += [hvec.eq(hnext), hidx.eq(hidx + 1)]
            with m.If(hidx == h - 1):
                m.d.sync += in_hdr.eq(0)
        m.d.sync += checking.eq(last)
        with m.If(last):
            count = _field(hnext, fs["count"])
            m.d.sync += [in_data.eq(count != 0), dleft.eq(count)]
        with m.If(uv & in_data):
            m.d.sync += dleft.eq(dleft - 1)
            with m.If(dleft == 1):
                m.d.sync += in_data.eq(0)

        # -- the header's verdict, one cycle after its last unit --------------------------
        ok = Signal()
        m.d.comb += ok.eq(checking & header_good)
        bad = Signal()
        m.d.comb += bad.eq(checking & ~header_good)
        expect = Signal(S)
        nak_due, nak_sent = Signal(), Signal()
        crc_errors = Signal(16)
        m.d.comb += self.crc_errors.eq(crc_errors)
        prev_count = Signal(range(B + 1))
        prev_seq = Signal(S)
        commit = Signal()
        drop = Signal()
        ask = Signal()     # a NAK is owed, unless one has been sent since the last commit
        error = Signal()   # a frame is lost to a bad check
        hdr_ok = Signal()
        m.d.comb += hdr_ok.eq(ok & synced)

        # -- restarts (docs/link-frame.md, "Resets and rejoin") ---------------------------
        # `joined`: this end has synchronised since it left reset. `rack`: the far end has
        # restarted and this end has reset its state for it; no flits go out until the far
        # end's headers come without `restart`.
        joined, rack = Signal(), Signal()
        far_restart, restart_first, join_now, take = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [far_restart.eq(hdr_ok & field["restart"]),
                     restart_first.eq(far_restart & ~rack),
                     join_now.eq(hdr_ok & field["restart_ack"] & ~joined),
                     # an ordinary header: its acknowledgement, credits and check count
                     take.eq(hdr_ok & joined & ~field["restart"])]
        with m.If(join_now):
            m.d.sync += joined.eq(1)
        with m.If(far_restart):
            m.d.sync += rack.eq(1)
        with m.Elif(hdr_ok):
            m.d.sync += rack.eq(0)
        seq_dist = Signal(S)
        m.d.comb += seq_dist.eq(prev_seq - expect)
        frame_fine = Signal()
        if c_bits:
            m.d.comb += frame_fine.eq((field["crc"] == engine.output(crc_calc))
                                   & (seq_dist == 0))
        else:
            m.d.comb += frame_fine.eq(seq_dist == 0)
        with m.If(ok):
            m.d.sync += [synced.eq(1), hunting.eq(0), prev_count.eq(field["count"]),
                         prev_seq.eq(field["seq"])]
            with m.If(synced & (prev_count != 0)):
                with m.If(take & frame_fine):
                    m.d.comb += commit.eq(1)
                    m.d.sync += [expect.eq(expect + prev_count), nak_sent.eq(0)]
                with m.Else():
                    # (Before this end has joined, or behind a restart, a frame is only
                    # dropped.)
                    m.d.comb += drop.eq(1)
                    with m.If(take):
                        # A frame from behind is a duplicate after a go-back; nothing is
                        # owed.
                        m.d.comb += [ask.eq(~seq_dist[S - 1]), error.eq(seq_dist == 0)]
            with m.If(far_restart | join_now):
                # Numbering starts afresh, at zero on both ends: the restarted end's with
                # its reset, the other's with the restart (the transmitter's `next_seq`).
                m.d.sync += [expect.eq(0), nak_sent.eq(0)]
        with m.If(bad):
            m.d.comb += [drop.eq(1), ask.eq(1), error.eq(1)]
            m.d.sync += [hunting.eq(1), synced.eq(0), in_data.eq(0)]
        with m.If(ask & ~nak_sent):
            m.d.sync += [nak_due.eq(1), nak_sent.eq(1)]
        with m.If(error):
            m.d.sync += crc_errors.eq(_sticky_add(crc_errors, 1))
        tx_sent_nak = Signal()   # set by the transmitter when a header carried the NAK
        with m.If(tx_sent_nak | far_restart | join_now):
            m.d.sync += nak_due.eq(0)

        # -- staging: a frame's flits wait for the next header ----------------------------
        depth = 1 << clog2(4 * B)
        m.submodules.staging = staging = memory.Memory(shape=unit, depth=depth, init=[])
        sw = staging.write_port()
        sr = staging.read_port(domain="sync")
        wp = Signal(clog2(depth) + 1)       # next free entry
        fstart = Signal(clog2(depth) + 1)   # first entry of the frame being received
        d_valid = Signal()
        d_unit = Signal(unit)
        # Units are written a cycle late, after the verdict on the header before them.
        m.d.sync += [d_valid.eq(uv & in_data & ~bad), d_unit.eq(u)]
        base = Mux(drop, fstart, wp)
        m.d.comb += [sw.addr.eq(base[:-1]), sw.data.eq(d_unit), sw.en.eq(d_valid)]
        m.d.sync += wp.eq(base + d_valid)
        with m.If(checking):
            # The next frame's flits start where the kept ones end.
            m.d.sync += fstart.eq(base)

        # Committed frames: their flit count and side bits, delivered in order. A frame's
        # count stays on the read port of `commits` while its flits go out, and each flit
        # takes its side bits by its place in the frame: from that same entry through a
        # multiplexer, or, with `side_ram`, from `sides`, a word per flit, whose B write
        # ports (one per place) write one frame's words in one cycle and are merged by
        # synthesis into one wide port of a block RAM whose two ports differ in width, so
        # that no multiplexer is needed (BlueDBM's 2 bits of 128 by place: about 40 LUTs).
        # Delivery takes a cycle more per frame than the frame's flits, so a burst of
        # committed flits followed by frames of one or two flits (after a go-back) keeps
        # many frames waiting: as many as the staging buffer holds flits, which costs no
        # more block RAM than four would.
        cdepth = depth
        cwidth = clog2(B + 1)
        wide = cfg.side_ram
        block = {"ram_style": "block"}
        m.submodules.commits = commits = memory.Memory(
            shape=cwidth + (0 if wide else B * sb), depth=cdepth, init=[], attrs=block)
        cw = commits.write_port()
        cr = commits.read_port(domain="sync")
        c_wp = Signal(clog2(cdepth) + 1)
        c_rp = Signal(clog2(cdepth) + 1)
        m.d.comb += [cw.addr.eq(c_wp[:-1]), cw.en.eq(commit), cr.addr.eq(c_rp[:-1]),
                     cw.data.eq(Cat(prev_count, Cat() if wide else field["side"]))]
        with m.If(commit):
            m.d.sync += c_wp.eq(c_wp + 1)
        fetched = Signal()    # the read port has just read a frame's entry
        busy = Signal()       # in the middle of a frame
        place = Signal(range(B))
        active = Signal()
        last = Signal()
        m.d.comb += [active.eq(fetched | busy), last.eq(place + 1 == cr.data[:cwidth])]
        side_read = Signal(sb)    # the side bits of the flit read from staging last
        if wide:
            frame = Signal(clog2(cdepth))   # the frame whose count is on the read port
            with m.If(cr.en):
                m.d.sync += frame.eq(c_rp[:-1])
            m.submodules.sides = sides = memory.Memory(
                shape=sb, depth=cdepth << len(place), init=[], attrs=block)
            for k in range(B):
                sides_w = sides.write_port()
                m.d.comb += [sides_w.addr.eq(Cat(Const(k, len(place)), c_wp[:-1])),
                             sides_w.data.eq(field["side"][k * sb:(k + 1) * sb]),
                             sides_w.en.eq(commit)]
            sides_r = sides.read_port(domain="sync")
            m.d.comb += [sides_r.addr.eq(Cat(place, frame)), sides_r.en.eq(active),
                         side_read.eq(sides_r.data)]
        else:
            with m.If(active):
                m.d.sync += side_read.eq(cr.data[cwidth:].word_select(place, sb))
        # The next entry is read as the last flit of a frame goes out. (A read port's
        # enable is on unless driven.)
        # After the far end restarts, the frames committed before it are delivered, and
        # then every packet it left open is closed with a tail flit (its data stale), so
        # that no wormhole through the router waits for the rest; only then come the
        # frames of the far end's new start.
        closing = Signal()
        close_mark = Signal.like(c_wp)
        at_mark = Signal()
        m.d.comb += at_mark.eq(closing & (c_rp == close_mark))
        with m.If(restart_first):
            m.d.sync += [closing.eq(1), close_mark.eq(c_wp)]
        m.d.comb += cr.en.eq((c_wp != c_rp) & (~active | last) & ~at_mark)
        with m.If(cr.en):
            m.d.sync += c_rp.eq(c_rp + 1)
        m.d.sync += fetched.eq(cr.en)
        rp = Signal(clog2(depth) + 1)
        out_valid = Signal()
        closer = Signal()     # the flit out is a tail that closes a cut packet
        closer_vc = Signal(max(vb, 1))
        out_side = Signal(sb)
        m.d.comb += [sr.addr.eq(rp[:-1]), sr.en.eq(1),
                     out_side.eq(Mux(closer, Cat(Const(1, 1), closer_vc[:vb]), side_read))]
        m.d.sync += [out_valid.eq(active), closer.eq(0)]
        with m.If(active):
            m.d.sync += [rp.eq(rp + 1), busy.eq(~last), place.eq(Mux(last, 0, place + 1))]
        head_next = Signal(V, init=(1 << V) - 1)
        vc = out_side[1:] if vb else Const(0, 1)
        tail = out_side[0]
        payload = self.rx_flit.payload
        m.d.comb += [self.rx_flit.valid.eq(out_valid), payload.data.eq(sr.data),
                     payload.tail.eq(tail), payload.head.eq(head_next.bit_select(vc, 1))]
        if vb:
            m.d.comb += payload.vc.eq(vc)
        with m.If(out_valid):
            m.d.sync += head_next.bit_select(vc, 1).eq(tail)
        delivered = Signal(V)
        m.d.comb += delivered.eq(Mux(out_valid, 1 << vc, 0))
        # The free entries of the local router's buffer for this link, per VC.
        room = [Signal(C, init=cfg.depth, name=f"room{v}") for v in range(V)]
        for v in range(V):
            m.d.sync += room[v].eq(_up_down(room[v], self.cred_local[v], delivered[v]))
        with m.If(at_mark & ~active & ~out_valid):
            with m.If(head_next.all()):
                m.d.sync += closing.eq(0)
            with m.Else():
                # (the lowest open VC with room in the router's buffer, which may still be
                # full of the far end's old flits)
                for v in reversed(range(V)):
                    with m.If(~head_next[v] & (room[v] != 0)):
                        m.d.sync += [out_valid.eq(1), closer.eq(1), closer_vc.eq(v)]

        # -- the far end's credits: its counters, paid out one per VC per cycle ----------
        # The local router starts with no credit for the far end's buffer: `paid` counts
        # the pulses given, and chases the count of the last trusted header (the far end's
        # buffer depth and the flits it has freed since, see the transmitter), until the
        # far end has joined the last count of its restart (`remote`, set to its depth).
        # It can never fall half a counter period behind, as the far end frees at most its
        # buffer's depth of flits between two of its headers. Nor can a count fall behind
        # it: a restarted far end's starts at its depth (or, at power-on, where this end's
        # `paid` is zero, at the room its router has). A flit dropped after the far end's
        # restart is owed as it is taken (`paid` steps back).
        #
        # The router's credit is `paid - kept`, with `kept` the flits taken and not dropped
        # since the far end's last restart: each pulse and each take keep that true. When
        # the far end restarts, its buffers are empty: the credit the router has then,
        # `paid - kept`, becomes the new `paid`, and `kept` starts again; the chase to the
        # new count (the depth) pays the rest. (The far end's count stays at its depth
        # until it has joined and has been delivered flits, so a restart header seen
        # again, or the `restart_ack` header it joins on, changes nothing here; no flit is
        # taken in the restart's cycle.)
        accepted, drop_credit = Signal(V), Signal(V)
        for v in range(V):
            remote = Signal(C, name=f"remote_cnt{v}")
            paid = Signal(C, name=f"paid{v}")
            kept = Signal(C, name=f"kept{v}")
            count = field["credits"][v * C:(v + 1) * C]
            pulse = self.cred_remote[v]
            dc = drop_credit[v]
            # (from the count of the header before: a cycle later, but no multiplexer)
            m.d.comb += pulse.eq((remote != paid) & ~restart_first)
            m.d.sync += kept.eq(Mux(restart_first, 0, kept + (accepted[v] & ~dc)))
            with m.If(take):
                m.d.sync += remote.eq(count)
            with m.If(restart_first):
                m.d.sync += remote.eq(cfg.depth)
            # paid + (-kept on a restart, else pulse - dc), one adder with a carry in:
            # -kept = ~kept + 1, +1 = 0 + 1, -1 = ~0 + 0, and 0 = 0 + 0 or ~0 + 1.
            cin = Signal(name=f"paid_cin{v}")
            step = Signal(C, name=f"paid_step{v}")
            m.d.comb += [cin.eq(restart_first | pulse),
                         step.eq(Mux(restart_first, ~kept, Mux(dc, (1 << C) - 1, 0)))]
            paid_sum = Signal(C + 1, name=f"paid_sum{v}")
            m.d.comb += paid_sum.eq(Cat(cin, paid) + Cat(cin, step))
            m.d.sync += paid.eq(paid_sum[1:])

        # -- lost alignment: slip a PHY word when no header turns up ----------------------
        if cfg.words_per_unit > 1:
            searched = Signal(range(4 * (B + h) + 1))
            with m.If(~hunting | ok):
                m.d.sync += searched.eq(0)
            with m.Elif(uv):
                with m.If(searched == 4 * (B + h)):
                    m.d.comb += slip.i.eq(1)
                    m.d.sync += searched.eq(0)
                with m.Else():
                    m.d.sync += searched.eq(searched + 1)
        return {"take": take, "ack": field["ack"], "nak": field["nak"],
                "expect": expect, "nak_due": nak_due, "sent_nak": tx_sent_nak,
                "joined": joined, "hold": rack, "restart_first": restart_first,
                "closing": closing, "delivered": delivered, "room": room, "synced": synced,
                "accepted": accepted, "drop_credit": drop_credit}

    # ------------------------------------------------------------------ PHY word width

    def _serialise(self, m, tx_fifo, pd):
        n, w = self.config.words_per_unit, self.config.phy_width
        if n == 1:
            # A unit is one word: the FIFO's output is the PHY's.
            m.d.comb += [self.phy_tx.payload.eq(tx_fifo.r_data), self.phy_tx.valid.eq(
                tx_fifo.r_rdy), tx_fifo.r_en.eq(self.phy_tx.ready)]
            return
        shift = Signal(n * w)
        left = Signal(range(n + 1))
        m.d.comb += [self.phy_tx.payload.eq(shift[:w]), self.phy_tx.valid.eq(left != 0),
                     tx_fifo.r_en.eq((left == 0) | ((left == 1) & self.phy_tx.ready))]
        with m.If(tx_fifo.r_en & tx_fifo.r_rdy):
            m.d[pd] += [shift.eq(tx_fifo.r_data), left.eq(n)]
        with m.Elif(self.phy_tx.valid & self.phy_tx.ready):
            m.d[pd] += [shift.eq(shift >> w), left.eq(left - 1)]

    def _deserialise(self, m, rx_fifo, slip, pd):
        n, w = self.config.words_per_unit, self.config.phy_width
        unit = self.config.fmt.width
        shift = Signal(n * w)
        count = Signal(range(max(n, 2)))   # never zero-width
        skip = Signal()
        with m.If(slip.o):
            m.d[pd] += skip.eq(1)
        m.d.comb += rx_fifo.w_data.eq((Cat(shift[w:], self.phy_rx.payload) if n > 1
                                       else self.phy_rx.payload)[:unit])
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
