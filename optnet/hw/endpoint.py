"""Transport endpoints (AXI4-Stream to packets and back) and the hub on the router's
local port.

One AXI4-Stream packet (``tlast`` to ``tlast``) becomes one network packet: a header flit
and one flit per beat. A frame longer than ``max_packet - 1`` beats (a broadcast:
``broadcast_flits - 1``) is cut into several network packets, and the receiver sees
``tlast`` at each cut. Endpoint ``i`` of a node
talks to endpoint ``i`` of other nodes (endpoints are declared cluster-wide).

Managed endpoints (BlueDBM's end-to-end flow control) never send more packets to a node
than that node's endpoint has agreed to hold:

- every sender starts with ``init_budget * credit`` packets of budget per destination;
- a receiver counts the packets the user has taken from each source and, after
  ``credit - offset`` of them the first time and every ``credit`` after that, sends that
  source a credit packet granting ``credit`` more, so the grant arrives ``offset``
  packets before the budget runs out;
- so each source may have ``init_budget * credit + offset`` packets outstanding, and a
  receive buffer of ``buffer`` packets is safe for ``buffer // that`` sources sending at
  once (the plan reports that figure).

Broadcasts (``tuser`` = 1 on the send side) are not budgeted, so taking one earns its
source no credit: a full receiver holds them back in the network, as an unmanaged endpoint
does with every packet.

Reset. Each pair of nodes keeps a *session* per direction: the sender's budget and the
receiver's count of taken packets. A node's ``rst`` ends its sessions with every peer, but
the peers still hold theirs, and packets and grants of the old sessions may still be in
the network. After ``rst`` a managed endpoint first sweeps its per-peer memories (one
address a cycle, ``2 ** id_bits`` cycles, taking and sending nothing meanwhile), then
resynchronises with every other node of ``nodes`` by control packets: credit packets whose
``arg`` has its top bit set (:class:`Control`).

- The reset node X marks every peer Y *waiting* and sends it ``SYNC(tag)``, ``tag`` being
  the one X's SYNCs carry until its next reset. While X waits for Y it sends Y no unicast,
  ignores Y's grants and **drops** Y's unicast packets (they belong to Y's old session,
  which X's empty buffer can no longer account for; counted in ``dropped``).
- Y, on ``SYNC(tag)`` from X, starts new sessions with X both ways: its budget towards X
  is ``init_budget * credit`` again, its count of X's packets starts afresh, and it answers
  ``ACK(tag, held)`` behind any grants it still owes X, ``held`` being X's unicast packets
  still in Y's buffer, which Y will count when its user takes them. Everything Y sent X
  before the ACK is of the old sessions; everything after, of the new.
- X, on an ``ACK`` with its tag, stops waiting: its budget towards Y is
  ``init_budget * credit - held``, and from then on it counts Y's packets. ACKs with
  another tag are stale (answers to a SYNC of an earlier reset) and are ignored.
- A SYNC sent at the end of a sweep is *fresh*. X, still waiting for Y, that receives a
  fresh SYNC from Y learns that Y has been reset and may have lost X's SYNC; it sends Y a
  new (non-fresh) SYNC, and only then the ACK. Non-fresh SYNCs are answered only, so two
  nodes reset together settle after two exchanges.

The order matters. A node that ends its wait sends its peer new data at once, and the
peer drops it while it still waits for that node, whose ACKs (which end the peer's wait)
go out before the data: so a node must have answered every SYNC of its peer before an ACK
ends its wait. Hence X's second SYNC goes *before* its ACK to Y: Y answers it before the
ACK that ends Y's wait, and if Y too sends a second SYNC (both reset together, each
getting the other's fresh SYNC while it waits), X answers that before Y's ACK of X's fresh
SYNC, which may end X's wait. Both of X's SYNCs carry X's tag and either ACK will do: Y
takes both while it waits (its buffer emptied by its reset, X's unicasts dropped, none of
its own sent to X), so they start the same sessions and both ACKs say ``held`` = 0. (The
second SYNC used to follow the ACK, with a new tag from the same counter, so that X would
ignore the first ACK. But that counter steps for every peer: after a reset of the whole
cluster, ``2 ** tag_bits`` peers' second SYNCs brought it back to the fresh SYNC's tag, a
node took the first ACK for the second, ended its wait before it had answered the peer's
second SYNC, and the peer dropped what it then sent: BlueDBM's 20 nodes in ``optnet
sim``, with 4-bit tags for the ``data`` endpoint.)

So after any sequence of resets, once both nodes of a pair have processed each other's
latest SYNC, each direction again has at most ``init_budget * credit + offset`` packets
outstanding, exactly, and no grant of an old session counts in a new one. Tags come from a
``tag_bits`` counter that ``rst`` does not clear and that steps at every sweep; an ACK is
mistaken only if the node is reset ``2 ** tag_bits`` times while it is in flight.
Power-on (configuration) is not a reset: a cluster configured together starts in step,
with no handshake, so a node reconfigured while its peers run must assert ``rst`` once
after configuration. Packets held inside the reset node are lost, and so may be a stray
tail of a packet whose head was; the endpoint discards flits that arrive outside a packet
without a head (counted in ``dropped``). Unmanaged endpoints have no per-peer state and no
handshake.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.hw.alloc import RoundRobin
from optnet.plan.configs import KIND_CREDIT, KIND_DATA, EndpointConfig, FlitFormat

__all__ = ["Control", "Endpoint", "LocalHub", "axis_rx_layout", "axis_tx_layout"]


#: Tap positions (1 = least significant bit) of a maximal-length Fibonacci LFSR of each
#: width (Xilinx XAPP052): from any non-zero state it visits all ``2 ** k - 1`` of them.
_LFSR_TAPS = {2: (2, 1), 3: (3, 2), 4: (4, 3), 5: (5, 3), 6: (6, 5), 7: (7, 6), 8: (8, 6, 5, 4),
              9: (9, 5), 10: (10, 7), 11: (11, 9), 12: (12, 6, 4, 1), 13: (13, 4, 3, 1),
              14: (14, 5, 3, 1), 15: (15, 14), 16: (16, 15, 13, 4), 17: (17, 14), 18: (18, 11),
              19: (19, 6, 2, 1), 20: (20, 17), 21: (21, 19), 22: (22, 21), 23: (23, 18),
              24: (24, 23, 22, 17), 25: (25, 22), 26: (26, 6, 2, 1), 27: (27, 5, 2, 1),
              28: (28, 25), 29: (29, 27), 30: (30, 6, 4, 1), 31: (31, 28), 32: (32, 22, 2, 1)}

#: Bits of a block RAM (a Xilinx RAMB36: 36 Kib in aspects from 512 x 72 to 32K x 1).
_BLOCK_BITS = 36 * 1024


class _RamFIFO(wiring.Component):
    """A synchronous first-word-fall-through FIFO of ``depth`` entries, ``depth - 1`` of them
    in block RAM and one in an output register.

    Seen from its ports it is, cycle for cycle, an :class:`~amaranth.lib.fifo.SyncFIFOBuffered`
    of the same depth (``bypass`` False: an entry written in one cycle is readable two
    cycles later) or a :class:`~amaranth.lib.fifo.SyncFIFO` (``bypass`` True: one cycle
    later, through a register beside the RAM that takes an entry written while the FIFO is
    empty), but smaller: the RAM's addresses step as maximal-length LFSRs, one LUT each
    rather than an incrementer and a wrap-around comparator per address bit, and the RAM is
    cut into lanes that each fill a block RAM's full depth, so that no multiplexer follows
    banks of shallower ones (at 16K entries: 2-bit lanes, one RAMB36 each).

    Members
    -------
    w_data : In(width)
    w_en : In(1)
    w_rdy : Out(1)
    r_data : Out(width)
        Valid while ``r_rdy``.
    r_en : In(1)
    r_rdy : Out(1)
    """

    def __init__(self, width: int, depth: int, *, bypass: bool = False):
        self.width, self.depth, self.bypass = width, depth, bypass
        super().__init__({"w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
                          "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        inner = self.depth - 1              # entries in the RAM
        room = Signal()                     # the output register is free by the next cycle
        write = Signal()
        m.d.comb += [room.eq(~self.r_rdy | self.r_en), write.eq(self.w_en & self.w_rdy)]
        if inner == 0:
            # A register alone, written only when it is empty.
            m.d.comb += self.w_rdy.eq(~self.r_rdy)
            with m.If(write):
                m.d.sync += [self.r_data.eq(self.w_data), self.r_rdy.eq(1)]
            with m.Elif(self.r_en):
                m.d.sync += self.r_rdy.eq(0)
            return m

        # An LFSR never visits 0, so k address bits give 2 ** k - 1 usable entries.
        k = max(2, inner.bit_length())
        produce = Signal(k, init=1)
        consume = Signal(k, init=1)

        def step(lfsr):
            feedback = 0
            for tap in _LFSR_TAPS[k]:
                feedback ^= lfsr[tap - 1]
            return Cat(feedback, lfsr[:-1])

        empty, full = Signal(), Signal()    # of the RAM
        direct = Signal()                   # an entry goes straight to the output register
        read = Signal()                     # the RAM's oldest entry goes to it
        stow = Signal()                     # an entry goes into the RAM
        if self.bypass:
            # Entries only wait in the RAM behind a full output register, so a full RAM
            # means that all `depth` entries are taken.
            m.d.comb += direct.eq(write & empty & room)
        m.d.comb += [self.w_rdy.eq(~full), read.eq(~empty & room), stow.eq(write & ~direct)]
        if inner == (1 << k) - 1:
            # The LFSRs' whole cycle: equal addresses mean empty or full, told apart by
            # whether the last change of the count was up.
            rising = Signal()
            with m.If(stow & ~read):
                m.d.sync += rising.eq(1)
            with m.Elif(read & ~stow):
                m.d.sync += rising.eq(0)
            same = produce == consume
            m.d.comb += [empty.eq(same & ~rising), full.eq(same & rising)]
        else:
            level = Signal(range(inner + 1))
            with m.If(stow & ~read):
                m.d.sync += level.eq(level + 1)
            with m.Elif(read & ~stow):
                m.d.sync += level.eq(level - 1)
            m.d.comb += [empty.eq(level == 0), full.eq(level == inner)]
        lane = min(self.width, max(1, _BLOCK_BITS >> k))
        stored = []
        for i, lo in enumerate(range(0, self.width, lane)):
            bits = self.w_data[lo:lo + lane]
            ram = memory.Memory(shape=len(bits), depth=1 << k, init=[],
                                attrs={"ram_style": "block"})
            # Each RAM in a module of its own, where it is called `storage` as in
            # amaranth.lib.fifo, so that optnet.hw.verilog drops its zero initial contents.
            m.submodules[f"lane{i}"] = holder = Module()
            holder.submodules.storage = ram
            w_port, r_port = ram.write_port(), ram.read_port()
            m.d.comb += [w_port.addr.eq(produce), w_port.data.eq(bits), w_port.en.eq(stow),
                         r_port.addr.eq(consume), r_port.en.eq(read)]
            stored.append(r_port.data)
        if self.bypass:
            early = Signal(self.width)      # an entry that bypassed the RAM
            from_ram = Signal()
            with m.If(direct):
                m.d.sync += [early.eq(self.w_data), from_ram.eq(0)]
            with m.Elif(read):
                m.d.sync += from_ram.eq(1)
            m.d.comb += self.r_data.eq(Mux(from_ram, Cat(stored), early))
        else:
            m.d.comb += self.r_data.eq(Cat(stored))
        with m.If(stow):
            m.d.sync += produce.eq(step(produce))
        with m.If(read):
            m.d.sync += consume.eq(step(consume))
        with m.If(direct | read):
            m.d.sync += self.r_rdy.eq(1)
        with m.Elif(self.r_en):
            m.d.sync += self.r_rdy.eq(0)
        return m


class Control:
    """The ``arg`` of a managed endpoint's control packets (``kind`` = :data:`KIND_CREDIT`).

    A plain grant has ``arg`` = ``credit``, below ``2 ** (arg_bits - 1)``. A control packet
    has the top bit (``CTRL``) set; the next (``ACK``) tells an ACK from a SYNC; the next
    (``FRESH``) marks a SYNC sent by a sweep after ``rst``. The low ``tag_bits`` bits are
    the tag, and an ACK carries ``held`` in the ``held_bits`` bits above it.
    """

    @staticmethod
    def pack(cfg: EndpointConfig, *, ack: bool, tag: int, held: int = 0,
             fresh: bool = False) -> int:
        """The ``arg`` of a SYNC (``ack`` False) or an ACK, for test benches."""
        a = cfg.fmt.arg_bits
        assert 0 <= tag < 1 << cfg.tag_bits and 0 <= held < 1 << cfg.held_bits
        return (1 << a - 1 | int(ack) << a - 2 | int(fresh) << a - 3
                | held << cfg.tag_bits | tag)

    @staticmethod
    def unpack(cfg: EndpointConfig, arg: int) -> dict[str, int] | None:
        """Fields of a control ``arg``; None for a plain grant."""
        a = cfg.fmt.arg_bits
        if not arg >> a - 1 & 1:
            return None
        return {"ack": arg >> a - 2 & 1, "fresh": arg >> a - 3 & 1,
                "tag": arg & (1 << cfg.tag_bits) - 1,
                "held": arg >> cfg.tag_bits & (1 << cfg.held_bits) - 1}


def axis_tx_layout(cfg: EndpointConfig) -> data.StructLayout:
    """AXI4-Stream from the user: ``tdest`` = destination node id, ``tuser`` = broadcast; on
    a direct node (``cfg.length_bits``), ``tuser`` = the message's length in beats, on its
    first beat (:mod:`optnet.hw.direct`)."""
    return data.StructLayout({"tdata": cfg.width, "tlast": 1, "tdest": cfg.fmt.id_bits,
                              "tuser": cfg.length_bits or 1})


def axis_rx_layout(cfg: EndpointConfig) -> data.StructLayout:
    """AXI4-Stream to the user: ``tid`` = source node id."""
    return data.StructLayout({"tdata": cfg.width, "tlast": 1, "tid": cfg.fmt.id_bits})


class Endpoint(wiring.Component):
    """A managed or unmanaged endpoint.

    After ``rst`` a managed endpoint clears its per-peer state and resynchronises with its
    peers (module docstring); until a peer has answered it sends that peer no unicast and
    drops the peer's unicasts. Without a reset it behaves exactly as before any reset.

    Members
    -------
    node_id : In(id_bits)
        This node's id (``config.node_id`` when left undriven). A port rather than a
        constant, so that the endpoint's hardware is the same on every node and only the
        top level's one constant differs (see :mod:`optnet.emit.roles`).
    s_axis : In(stream.Signature(axis_tx_layout))
        Packets from the user's logic.
    m_axis : Out(stream.Signature(axis_rx_layout))
        Packets for the user's logic, each beat with its source in ``tid``.
    net_tx : Out(stream.Signature(flit))
        Packets to the network (``vc`` is set by the hub; a head flit's bits above the
        header are unspecified).
    net_rx : In(stream.Signature(flit))
        Packets from the network addressed to this endpoint.
    dropped : Out(16)
        Packets this endpoint discarded, saturating: unicasts from a peer it was waiting
        for after a reset, and stray flits that arrived outside a packet without a head.
    syncing : Out(1)
        High while a managed endpoint sweeps its memories or waits for any peer's ACK.
    """

    def __init__(self, config: EndpointConfig):
        self.config = config
        f = config.fmt
        super().__init__({
            "node_id": In(f.id_bits, init=config.node_id),
            "s_axis": In(stream.Signature(axis_tx_layout(config))),
            "m_axis": Out(stream.Signature(axis_rx_layout(config))),
            "net_tx": Out(stream.Signature(f.flit)),
            "net_rx": In(stream.Signature(f.flit)),
            "dropped": Out(16),
            "syncing": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        f = cfg.fmt
        HB, K, A = cfg.held_bits, cfg.tag_bits, f.arg_bits

        dropped = Signal(16)
        drop = Signal()                 # a packet (or stray flit) is discarded this cycle
        with m.If(drop & (dropped != 0xFFFF)):
            m.d.sync += dropped.eq(dropped + 1)
        m.d.comb += self.dropped.eq(dropped)

        # -- receive ---------------------------------------------------------------------
        # Each entry: a beat for m_axis and whether its packet is a broadcast (broadcasts
        # spend no budget, so taking one earns its source no credit).
        beat_bits = axis_rx_layout(cfg).size
        m.submodules.rx_buf = rx_buf = _RamFIFO(beat_bits + 1, cfg.beats)
        rx = self.net_rx
        rx_hdr = data.View(f.header, rx.payload.data[:f.header_bits])
        is_ctrl, is_ack, is_fresh = rx_hdr.arg[A - 1], rx_hdr.arg[A - 2], rx_hdr.arg[A - 3]
        rx_tag, rx_held = rx_hdr.arg[:K], rx_hdr.arg[K:K + HB]
        in_packet = Signal()
        discard = Signal()              # the packet being received goes nowhere
        src = Signal(f.id_bits)
        bcast = Signal()
        # What the header on net_rx does to the managed state this cycle (all exclusive).
        grant_in = Signal()             # a grant: budget towards its source += arg
        ack_in = Signal()               # an ACK
        sync_in = Signal()              # a SYNC, taken this cycle
        data_in = Signal()              # a unicast from a synced source: held[src] += 1
        rx_hold = Signal()              # sweeping: take no header
        sync_rx = Signal()              # a SYNC at the front of net_rx
        sync_hold = Signal()            # it must wait (grant FIFO full or in use, or our own
                                        # SYNC to its source goes first)
        src_waiting = Signal()          # we wait for the header's source's ACK
        with m.If(~in_packet & ~rx_hold):
            with m.If(rx.valid & ~rx.payload.head):
                # A body flit outside a packet: the tail of one whose head was lost in a
                # reset. Taking it as a header would corrupt what follows.
                m.d.comb += rx.ready.eq(1)
                with m.If(rx.payload.tail):
                    m.d.comb += drop.eq(1)
                with m.Else():
                    m.d.sync += [in_packet.eq(1), discard.eq(1)]
            with m.Elif(rx.valid & (rx_hdr.kind == KIND_CREDIT)):
                if cfg.managed:
                    with m.If(is_ctrl & ~is_ack):
                        m.d.comb += [sync_rx.eq(1), rx.ready.eq(~sync_hold),
                                     sync_in.eq(~sync_hold)]
                    with m.Else():
                        m.d.comb += [rx.ready.eq(1), ack_in.eq(is_ctrl), grant_in.eq(~is_ctrl)]
                else:
                    m.d.comb += rx.ready.eq(1)
            with m.Else():
                m.d.comb += rx.ready.eq(1)
                with m.If(rx.valid & ~rx.payload.tail):
                    # Unicasts from a peer we wait for are of its old session: drop them.
                    lose = ~rx_hdr.mcast & src_waiting if cfg.managed else 0
                    m.d.sync += [in_packet.eq(1), discard.eq(lose), src.eq(rx_hdr.src),
                                 bcast.eq(rx_hdr.mcast)]
                    m.d.comb += data_in.eq(~rx_hdr.mcast & ~lose if cfg.managed else 0)
        with m.Elif(in_packet & discard):
            m.d.comb += rx.ready.eq(1)
            with m.If(rx.valid & rx.payload.tail):
                m.d.sync += in_packet.eq(0)
                m.d.comb += drop.eq(1)
        with m.Elif(in_packet):
            m.d.comb += [rx.ready.eq(rx_buf.w_rdy), rx_buf.w_en.eq(rx.valid)]
            with m.If(rx.valid & rx_buf.w_rdy & rx.payload.tail):
                m.d.sync += in_packet.eq(0)
        # Driven outside the `If`s: written only under `w_en`, so a gate per bit zeroing it
        # elsewhere would be wasted.
        m.d.comb += rx_buf.w_data.eq(Cat(rx.payload.data[:cfg.width], rx.payload.tail, src,
                                         bcast))
        beat = data.View(axis_rx_layout(cfg), rx_buf.r_data[:beat_bits])

        user = self.s_axis.payload
        may_send = Signal(init=1)
        start_counted = Signal()        # a unicast packet starts: spent[tdest] += 1
        grants = None
        if cfg.managed:
            grants = self._managed(m, rx_hdr, rx_tag, rx_held, is_fresh, beat, beat_bits,
                                   rx_buf, grant_in, ack_in, sync_rx, sync_in, data_in,
                                   rx_hold, sync_hold, src_waiting, may_send, start_counted)
        else:
            m.d.comb += [self.m_axis.valid.eq(rx_buf.r_rdy), rx_buf.r_en.eq(self.m_axis.ready)]
        m.d.comb += self.m_axis.payload.eq(beat)

        # -- transmit --------------------------------------------------------------------
        sending = Signal()
        sending_bcast = Signal()
        beats = Signal(range(cfg.max_packet))
        header = Signal(f.header)
        if grants is not None:
            entry = data.View(self._entry_layout(), grants.r_data)
            ctrl_arg = Signal(A)
            m.d.comb += [ctrl_arg[:K].eq(entry.tag), ctrl_arg[K:K + HB].eq(entry.held),
                         ctrl_arg[A - 3].eq(entry.fresh), ctrl_arg[A - 2].eq(entry.ack),
                         ctrl_arg[A - 1].eq(1)]
        m.d.comb += [header.src.eq(self.node_id), header.dst_ep.eq(cfg.index),
                     header.src_ep.eq(cfg.index), header.prio.eq(cfg.priority)]
        # Only the header's bits of a flit choose between the header and the user's data:
        # above them a head flit carries whatever `tdata` holds (nobody reads it), which
        # saves a gate per bit of the flit.
        hb = f.header_bits
        tx_data = self.net_tx.payload.data
        if cfg.width > hb:
            m.d.comb += tx_data[hb:].eq(user.tdata[hb:])
        with m.If(sending):
            m.d.comb += [
                self.net_tx.valid.eq(self.s_axis.valid),
                tx_data[:hb].eq(user.tdata[:hb]),
                self.net_tx.payload.tail.eq(user.tlast | (beats == Mux(
                    sending_bcast, cfg.broadcast_flits - 2, cfg.max_packet - 2))),
                self.s_axis.ready.eq(self.net_tx.ready),
            ]
            with m.If(self.net_tx.valid & self.net_tx.ready):
                m.d.sync += beats.eq(beats + 1)
                with m.If(self.net_tx.payload.tail):
                    m.d.sync += sending.eq(0)
        if grants is not None:
            # A credit or control packet goes before new data, so that a SYNC's answer
            # precedes every packet of the new session.
            with m.Elif(grants.r_rdy):
                m.d.comb += [header.dst.eq(entry.dst), header.kind.eq(KIND_CREDIT),
                             header.arg.eq(Mux(entry.ctrl, ctrl_arg, cfg.credit)),
                             self.net_tx.valid.eq(1),
                             self.net_tx.payload.head.eq(1), self.net_tx.payload.tail.eq(1),
                             tx_data[:hb].eq(header),
                             grants.r_en.eq(self.net_tx.ready)]
        with m.Elif(self.s_axis.valid & may_send):
            # A broadcast's group is its source: the multicast table is indexed by it.
            m.d.comb += [header.dst.eq(Mux(user.tuser, self.node_id, user.tdest)),
                         header.mcast.eq(user.tuser),
                         header.kind.eq(KIND_DATA), self.net_tx.valid.eq(1),
                         self.net_tx.payload.head.eq(1), tx_data[:hb].eq(header)]
            with m.If(self.net_tx.ready):
                m.d.sync += [sending.eq(1), sending_bcast.eq(user.tuser), beats.eq(0)]
                m.d.comb += start_counted.eq(~user.tuser)
        return m

    def _entry_layout(self) -> data.StructLayout:
        # An entry of the grant FIFO: a grant of `credit`, or a SYNC or an ACK (`ctrl`).
        cfg = self.config
        return data.StructLayout({"dst": cfg.fmt.id_bits, "ctrl": 1, "ack": 1, "fresh": 1,
                                  "tag": cfg.tag_bits, "held": cfg.held_bits})

    def _managed(self, m, rx_hdr, rx_tag, rx_held, is_fresh, beat, beat_bits, rx_buf,
                 grant_in, ack_in, sync_rx, sync_in, data_in, rx_hold, sync_hold, src_waiting,
                 may_send, start_counted):
        """Budgets, counts, the grant FIFO and the reset handshake of a managed endpoint.

        Three memories of ``2 ** id_bits`` words, each written from one side only, so no
        two sides ever write one memory in the same cycle:

        - ``rxs`` (network receive side): ``granted`` (grants received), ``inn`` (unicasts
          put in the receive buffer) and ``wait`` (no ACK yet);
        - ``spent`` (transmit side): unicasts sent;
        - ``taken`` (user side): ``taken`` (packets taken towards the next grant, starting
          at ``offset``) and ``out`` (unicasts taken), so ``held = inn - out``.

        The budget towards a node is ``init_budget * credit + granted - spent``. A SYNC
        writes ``taken`` (the user side then writes nothing: the SYNC waits a cycle), and
        starting a new session sets ``granted`` from ``spent`` rather than clearing
        ``spent``. The sweep after ``rst`` writes all three.
        """
        cfg = self.config
        f = cfg.fmt
        nodes = 1 << f.id_bits
        B, HB, K = cfg.budget_bits, cfg.held_bits, cfg.tag_bits
        user = self.s_axis.payload
        me = self.node_id

        # -- the sweep after rst ---------------------------------------------------------
        # `powered` is not reset, `alive` is: both low only at power-on, which needs no
        # sweep (the memories hold their initial contents and every node starts in step).
        powered = Signal(reset_less=True)
        alive = Signal()
        sweeping = Signal()
        addr = Signal(range(nodes))
        m.d.sync += [powered.eq(1), alive.eq(1)]
        sweep = Signal()
        m.d.comb += sweep.eq(sweeping | (powered & ~alive))
        with m.If(sweep):
            m.d.sync += [addr.eq(addr + 1), sweeping.eq(addr != nodes - 1)]
        tag = Signal(K, reset_less=True)    # our tag counter; never cleared, see docstring
        sweep_tag = Signal(K)
        m.d.comb += sweep_tag.eq(Mux(sweeping, tag, tag + 1))
        with m.If(sweep & ~sweeping):
            m.d.sync += tag.eq(tag + 1)
        if cfg.nodes is None:
            is_peer = addr != me
        elif cfg.nodes == tuple(range(len(cfg.nodes))):
            is_peer = (addr < len(cfg.nodes)) & (addr != me)
        else:
            m.submodules.peers = peers = memory.Memory(
                shape=1, depth=nodes, init=[int(n in cfg.nodes) for n in range(nodes)])
            peer_r = peers.read_port(domain="comb")
            m.d.comb += peer_r.addr.eq(addr)
            is_peer = peer_r.data & (addr != me)

        # -- memories --------------------------------------------------------------------
        rxs_layout = data.StructLayout({"granted": B, "inn": HB, "wait": 1})
        take_layout = data.StructLayout({"taken": range(cfg.credit + 1), "out": HB})
        m.submodules.rxs = rxs = memory.Memory(shape=rxs_layout, depth=nodes, init=[])
        m.submodules.spent = spent = memory.Memory(shape=B, depth=nodes, init=[])
        m.submodules.taken = taken = memory.Memory(
            shape=take_layout, depth=nodes, init=[{"taken": cfg.offset, "out": 0}] * nodes)
        r_tx, r_rx, r_w = (rxs.read_port(domain="comb"), rxs.read_port(domain="comb"),
                           rxs.write_port())
        s_tx, s_rx, s_w = (spent.read_port(domain="comb"), spent.read_port(domain="comb"),
                           spent.write_port())
        t_user, t_rx, t_w = (taken.read_port(domain="comb"), taken.read_port(domain="comb"),
                             taken.write_port())
        m.d.comb += [r_tx.addr.eq(user.tdest), s_tx.addr.eq(user.tdest),
                     r_rx.addr.eq(rx_hdr.src), s_rx.addr.eq(rx_hdr.src),
                     t_rx.addr.eq(rx_hdr.src), t_user.addr.eq(beat.tid),
                     src_waiting.eq(r_rx.data.wait)]

        # Never full in steady state, so taking packets never waits for the network: a
        # source can have at most (init_budget * credit + offset) / credit + 1 grants owed
        # to it. After rst the sweep puts one SYNC per peer into the empty FIFO. Rounded up
        # to a power of two, which a block RAM holds as cheaply and _RamFIFO counts without
        # a level counter.
        owed = cfg.init_budget + 2
        m.submodules.grants = grants = _RamFIFO(self._entry_layout().size,
                                                1 << (nodes * owed - 1).bit_length(),
                                                bypass=True)
        push = data.View(self._entry_layout(), grants.w_data)

        # -- user side: count what the user takes, queue grants ------------------------
        m.d.comb += [self.m_axis.valid.eq(rx_buf.r_rdy & grants.w_rdy),
                     rx_buf.r_en.eq(self.m_axis.ready & grants.w_rdy)]
        took = Signal()                 # the user takes the tail of a unicast packet
        m.d.comb += took.eq(self.m_axis.valid & self.m_axis.ready & beat.tlast
                            & ~rx_buf.r_data[beat_bits])
        # Waiting for the SYNC's source, a fresh SYNC from it means it was reset and may have
        # lost ours: we send it another before we answer (see the module docstring).
        resync = Signal()               # the SYNC on net_rx needs our SYNC first
        resent = Signal()               # which is queued: the ACK follows
        m.d.comb += [resync.eq(src_waiting & is_fresh & ~resent), rx_hold.eq(sweep),
                     sync_hold.eq(took | ~grants.w_rdy | resync)]
        # Only one of these writes the taken memory and the FIFO in a cycle: the sweep runs
        # with an empty receive buffer, and SYNCs wait for a cycle without `took`.
        with m.If(sweep):
            m.d.comb += [t_w.addr.eq(addr), t_w.en.eq(1),
                         t_w.data.eq(take_layout.const({"taken": cfg.offset, "out": 0})),
                         push.dst.eq(addr), push.ctrl.eq(1), push.fresh.eq(1),
                         push.tag.eq(sweep_tag), grants.w_en.eq(is_peer)]
        with m.Elif(sync_in):
            held = Signal(HB)
            m.d.comb += [held.eq(r_rx.data.inn - t_rx.data.out),
                         t_w.addr.eq(rx_hdr.src), t_w.en.eq(1), t_w.data.taken.eq(cfg.offset),
                         t_w.data.out.eq(t_rx.data.out),
                         push.dst.eq(rx_hdr.src), push.ctrl.eq(1), push.ack.eq(1),
                         push.tag.eq(rx_tag), push.held.eq(held), grants.w_en.eq(1)]
            m.d.sync += resent.eq(0)
        with m.Elif(sync_rx & resync & ~took & grants.w_rdy):
            m.d.comb += [push.dst.eq(rx_hdr.src), push.ctrl.eq(1), push.tag.eq(tag),
                         grants.w_en.eq(1)]
            m.d.sync += resent.eq(1)
        with m.Elif(took):
            m.d.comb += [t_w.addr.eq(beat.tid), t_w.en.eq(1),
                         t_w.data.out.eq(t_user.data.out + 1)]
            with m.If(t_user.data.taken == cfg.credit - 1):
                m.d.comb += [t_w.data.taken.eq(0), grants.w_en.eq(1), push.dst.eq(beat.tid)]
            with m.Else():
                m.d.comb += t_w.data.taken.eq(t_user.data.taken + 1)

        # -- network receive side: grants, SYNCs, ACKs, held counts ----------------------
        now = r_rx.data
        acked = Signal()                # an ACK to a SYNC of ours since our latest rst
        m.d.comb += [r_w.addr.eq(rx_hdr.src), r_w.data.eq(now),
                     acked.eq(ack_in & now.wait & (rx_tag == tag))]
        # `granted` through one adder (the conditions exclude one another): zero in the
        # sweep; on a SYNC, new sessions both ways: what we have spent, so the budget is
        # init_budget * credit again (a packet we start towards the source in this very
        # cycle precedes our ACK, so the source drops it: it spends nothing); on the ACK,
        # that less what the peer still holds (plus the complement, in B bits, and a carry);
        # on a grant, plus its amount; otherwise unchanged.
        rebase = Signal()
        addend = Signal(B)
        m.d.comb += [rebase.eq(sync_in | acked),
                     r_w.data.granted.eq(Mux(sweep, 0, Mux(rebase, s_rx.data, now.granted))
                                         + addend
                                         + (acked | (sync_in & start_counted
                                                     & (user.tdest == rx_hdr.src))))]
        with m.If(acked):
            m.d.comb += addend.eq(rx_held ^ (1 << B) - 1)
        with m.Elif(grant_in):
            m.d.comb += addend.eq(rx_hdr.arg)
        with m.If(sweep):
            m.d.comb += [r_w.addr.eq(addr), r_w.en.eq(1), r_w.data.inn.eq(0),
                         r_w.data.wait.eq(is_peer)]
        with m.Elif(sync_in):
            m.d.comb += r_w.en.eq(1)
        with m.Elif(acked):
            m.d.comb += [r_w.en.eq(1), r_w.data.wait.eq(0)]
        with m.Elif(grant_in & ~now.wait):
            m.d.comb += r_w.en.eq(1)
        with m.Elif(data_in):
            m.d.comb += [r_w.en.eq(1), r_w.data.inn.eq(now.inn + 1)]

        # Waiting peers are tracked in one counter, for `syncing`.
        waits = Signal(range(nodes + 1))
        up = sweep & is_peer
        with m.If(up):
            m.d.sync += waits.eq(waits + 1)
        with m.Elif(acked):
            m.d.sync += waits.eq(waits - 1)
        m.d.comb += self.syncing.eq(sweep | (waits != 0))

        # -- transmit side: the budget ---------------------------------------------------
        left = Signal(B)
        m.d.comb += [left.eq(cfg.init_budget * cfg.credit + r_tx.data.granted - s_tx.data),
                     may_send.eq(~sweep & (user.tuser | (~r_tx.data.wait & (left != 0)
                                                          & ~left[B - 1])))]
        with m.If(sweep):
            m.d.comb += [s_w.addr.eq(addr), s_w.en.eq(1), s_w.data.eq(0)]
        with m.Else():
            m.d.comb += [s_w.addr.eq(user.tdest), s_w.data.eq(s_tx.data + 1),
                         s_w.en.eq(start_counted)]
        return grants


class LocalHub(wiring.Component):
    """Joins a node's endpoints to the router's local port.

    Sending, it picks an endpoint round robin at packet boundaries and injects a unicast on
    the VC its destination id's low bits give (a broadcast on ``index % vcs``) while the
    router's local input has credit on it; receiving, it steers each packet to the endpoint
    named in its header and returns a credit per flit taken.

    The router's input queues are FIFOs: a packet whose output is busy holds every packet
    behind it in its VC. An endpoint's packets to one destination share one VC, so they stay
    in order, while packets to destinations on other VCs go past a blocked head (a node with
    one endpoint would otherwise inject on one VC only).

    Members
    -------
    ep_tx : In(stream.Signature(flit)).array(E)
    ep_rx : Out(stream.Signature(flit)).array(E)
    to_router : Out(stream.Signature(flit, always_ready=True))
    to_router_cred : In(V)          the router's ``cred_out[0]``
    from_router : In(stream.Signature(flit))
    from_router_cred : Out(V)       the router's ``cred_in[0]``
    """

    def __init__(self, fmt: FlitFormat, endpoints: int, router_depth: int):
        self.fmt, self.endpoints, self.router_depth = fmt, endpoints, router_depth
        super().__init__({
            "ep_tx": In(stream.Signature(fmt.flit)).array(endpoints),
            "ep_rx": Out(stream.Signature(fmt.flit)).array(endpoints),
            "to_router": Out(stream.Signature(fmt.flit, always_ready=True)),
            "to_router_cred": In(fmt.vcs),
            "from_router": In(stream.Signature(fmt.flit)),
            "from_router_cred": Out(fmt.vcs),
        })

    def elaborate(self, platform):
        m = Module()
        f, E, V = self.fmt, self.endpoints, self.fmt.vcs
        # -- inject ----------------------------------------------------------------------
        credit = [Signal(range(self.router_depth + 1), init=self.router_depth,
                         name=f"credit{v}") for v in range(V)]
        m.submodules.arb = arb = RoundRobin(E)
        owner = Signal(range(max(E, 2)))
        busy = Signal()
        # the VC of the packet being sent (its head's), and of each endpoint's next head
        cur = Signal(range(max(V, 2)))
        vc_of = []
        for i in range(E):
            head = data.View(f.header, self.ep_tx[i].payload.data[:f.header_bits])
            vc = Signal.like(cur, name=f"inject_vc{i}")
            if V > 1:
                # The destination id's low bits, folded below V where V is no power of two
                # (no divider, and no operands of other widths for Verilator's lint).
                low = head.dst[:(V - 1).bit_length()]
                unicast = low if V & (V - 1) == 0 else Mux(low < V, low, low - V)
                m.d.comb += vc.eq(Mux(head.mcast, i % V, unicast))
            vc_of.append(vc)
        has = Cat(c != 0 for c in credit)
        ok = [has.bit_select(vc_of[i], 1) for i in range(E)]
        m.d.comb += arb.requests.eq(Cat(self.ep_tx[i].valid & ok[i] for i in range(E)))
        take = Signal(E)
        with m.If(busy):
            m.d.comb += take.eq(Cat(owner == i for i in range(E))
                                & has.bit_select(cur, 1).replicate(E))
        with m.Else():
            m.d.comb += [take.eq(arb.grant), arb.advance.eq(1)]
        spent = Signal(V)
        for i in range(E):
            port = self.ep_tx[i]
            vc = Mux(busy, cur, vc_of[i])
            m.d.comb += port.ready.eq(take[i])
            with m.If(take[i] & port.valid):
                m.d.comb += [self.to_router.valid.eq(1), self.to_router.payload.eq(port.payload),
                             self.to_router.payload.vc.eq(vc),
                             spent.eq(Const(1, V) << vc)]
                m.d.sync += [busy.eq(~port.payload.tail), owner.eq(i), cur.eq(vc)]
        for v in range(V):
            with m.If(spent[v] & ~self.to_router_cred[v]):
                m.d.sync += credit[v].eq(credit[v] - 1)
            with m.Elif(~spent[v] & self.to_router_cred[v]):
                m.d.sync += credit[v].eq(credit[v] + 1)
        # -- deliver ---------------------------------------------------------------------
        src = self.from_router
        header = data.View(f.header, src.payload.data[:f.header_bits])
        steer = Signal(range(max(E, 2)))
        target = Signal.like(steer)
        m.d.comb += target.eq(Mux(src.payload.head, header.dst_ep, steer))
        for i in range(E):
            with m.If(target == i):
                m.d.comb += [self.ep_rx[i].valid.eq(src.valid), src.ready.eq(self.ep_rx[i].ready)]
            m.d.comb += self.ep_rx[i].payload.eq(src.payload)
        with m.If(src.valid & src.ready):
            m.d.sync += steer.eq(target)
            for v in range(V):
                m.d.comb += self.from_router_cred[v].eq(src.payload.vc == v)
        return m
