"""Cascade broadcast (CusComNet): store, deliver once, forward to every neighbour, drop
duplicates.

The :class:`CascadeUnit` sits between a node's endpoints and hub and the router's local
port. Every broadcast travels one hop at a time as a multicast whose group (the header's
``dst``) is the node that sent it: the router of that node copies it onto every link, and
the router of each neighbour hands it to its local port, where the unit sees it
(:func:`~optnet.routing.broadcast.plan_broadcast`'s ``cascade`` tables). A source's
broadcasts carry a sequence number (:data:`~optnet.plan.configs.CASCADE_SEQ_BITS` bits of
the header's ``arg``), so each node tells a source's next broadcast from copies of ones it
has seen:

- a **new** broadcast (the number after the last one stored from that source) is stored
  whole in the source's slot of the broadcast buffer while it is delivered to the local
  endpoint it names, and forwarded from the slot, under the node's own group, once stored;
- a **copy** of a stored one is dropped; so is a copy of the node's own broadcast, and a
  number that fits none of these (counted in ``stray``; none arrives while every node keeps
  the rules below, and a node reset alone breaks them).

Every node forwards each broadcast once on every link, so a node receives exactly one copy
of every broadcast on each of its links, the first of them new. The rules that keep a
source to one outstanding broadcast, in hardware:

1. A node forwards a source's broadcast ``k + 1`` only once it has received, whole (up to
   the tail), the copy of ``k`` from every link.
2. A node starts a broadcast of its own (an endpoint's broadcast head waits at the unit;
   the hub serves the other endpoints meanwhile) only once all copies of its previous one
   have come back, one from every link.

The copy of ``k`` from neighbour ``y`` has arrived whole only after ``y`` read the tail of
``k`` out of its slot, so by rule 1 (rule 2 at the source) a node sends ``k + 1`` to ``y``
only when ``y``'s slot for the source is free: **a new broadcast always finds its slot
free**, and the receive side of the unit never waits for its forwards or its buffer. That
is the routing stage's premise (stored before forwarded, one outstanding broadcast per
source): the unit's receive side is a sink like the endpoints', and the proof needs only
the one-hop multicasts' own waits (:func:`~optnet.routing.proof.prove`). When ``k + 1``
arrives new, copies of ``k`` may still be on their way, but of no broadcast before it (``k``
left this node only after every copy of ``k - 1`` had come in): the numbers a node can see
are the last one stored, the one before and the one after, three values modulo 4. Per
source the unit keeps the last number, the copies of it received, and the copies of the
one before still to come.

Each broadcast is delivered to every node but its source exactly once, in the source's
order. Rule 2 costs throughput: a source sends a broadcast packet per round trip to its
neighbours and back (a neighbour's store and forward included), not one per packet time.

Forwarded packets enter the hub through the input of the endpoint they are addressed to,
taking turns with that endpoint's own packets at packet boundaries, so they travel on the
VCs the endpoints inject on and keep their priority class (the header's ``prio``).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, enum, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.plan.configs import CASCADE_SEQ_BITS, KIND_DATA, CascadeConfig

__all__ = ["CascadeUnit", "slot_layout", "state_layout"]


class _Mode(enum.Enum, shape=3):
    """What the receive side does with the packet it is taking."""

    PASS = 0        # not a broadcast: to the hub
    NEW = 1         # store and deliver
    COPY = 2        # a copy of the last one stored: count it, drop it
    LATE = 3        # a copy of the one before: count it, drop it
    OWN = 4         # a copy of this node's own broadcast: count it, drop it
    STRAY = 5       # a number that fits none of these: drop it


def slot_layout(config: CascadeConfig) -> data.StructLayout:
    """A word of the broadcast buffer: a flit without its ``vc`` (the hub picks the VC a
    forward leaves on, as for the endpoint's own packets).

    Parameters
    ----------
    config : CascadeConfig

    Returns
    -------
    data.StructLayout
        ``data`` (``config.fmt.width`` bits), ``head``, ``tail``.
    """
    return data.StructLayout({"data": config.fmt.width, "head": 1, "tail": 1})


def state_layout(config: CascadeConfig) -> data.StructLayout:
    """A source's entry of the state memory.

    Parameters
    ----------
    config : CascadeConfig

    Returns
    -------
    data.StructLayout
        ``last``: the number of the broadcast stored last (:data:`CASCADE_SEQ_BITS` bits);
        ``got``: the copies of it received whole, ``0 .. config.links``; ``pend``: the
        copies of the one before still to come, ``0 .. config.links``. A source is ready to
        forward ``last`` when ``pend`` is 0; a new number is taken only then.
    """
    copies = range(config.links + 1)
    return data.StructLayout({"last": CASCADE_SEQ_BITS, "got": copies, "pend": copies})


def _times(value, factor: int):
    """``value * factor`` as a sum of shifts: a constant multiplier that synthesis does not
    put in a DSP block.

    Parameters
    ----------
    value : Value
        Unsigned.
    factor : int
        At least 1.

    Returns
    -------
    Value
        Wide enough for the product (each shift and sum widens it).
    """
    terms = [value << b for b in range(factor.bit_length()) if factor >> b & 1]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


class CascadeUnit(wiring.Component):
    """A node's cascade broadcast unit (module docstring).

    Parameters
    ----------
    config : CascadeConfig

    Members
    -------
    node_id : In(id_bits)
        This node's id (the group of the copies it forwards; its own broadcasts' source).
    ep_in : In(stream.Signature(flit)).array(E)
        Each endpoint's ``net_tx``. A broadcast head waits here until the node's previous
        broadcast has come back from every link; it leaves with the next sequence number.
    ep_out : Out(stream.Signature(flit)).array(E)
        To the hub's ``ep_tx``: each endpoint's packets and the forwarded broadcasts
        addressed to that endpoint, whole packets in turn. Contract: at most one of them is
        ready in a cycle (the hub takes one packet at a time,
        :class:`~optnet.hw.endpoint.LocalHub`), so two endpoints' broadcast heads never
        leave in the same cycle with the same number.
    net_in : In(stream.Signature(flit))
        The router's local output (one packet at a time).
    net_out : Out(stream.Signature(flit))
        To the hub's ``from_router``: every packet but broadcast copies, and each new
        broadcast once.
    net_cred : Out(V)
        The router's ``cred_in[0]``: a credit per flit taken from ``net_in``, passed on or
        dropped.
    stray : Out(16)
        Broadcast packets dropped because their sequence number fitted no rule (saturates).
    """

    def __init__(self, config: CascadeConfig):
        self.config = config
        f, E = config.fmt, config.endpoints
        super().__init__({
            "node_id": In(f.id_bits),
            "ep_in": In(stream.Signature(f.flit)).array(E),
            "ep_out": Out(stream.Signature(f.flit)).array(E),
            "net_in": In(stream.Signature(f.flit)),
            "net_out": Out(stream.Signature(f.flit)),
            "net_cred": Out(f.vcs),
            "stray": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        f, L, BF, S = cfg.fmt, cfg.links, cfg.packet_flits, CASCADE_SEQ_BITS
        hb = f.header_bits
        me = self.node_id
        dst_at = f.header["dst"].offset
        arg_at = f.header["arg"].offset

        # -- storage: a slot per source; per-source state; slots ready to forward ----------
        slot = slot_layout(cfg)
        store = memory.Memory(shape=slot, depth=cfg.slots * BF, init=[])
        # In a module of its own, where it is called `storage` as in amaranth.lib.fifo, so
        # that optnet.hw.verilog drops its zero initial contents: a slot is read only once
        # written.
        m.submodules.buffer = holder = Module()
        holder.submodules.storage = store
        w_slot, r_slot = store.write_port(), store.read_port()
        st_layout = state_layout(cfg)
        m.submodules.state = states = memory.Memory(
            shape=st_layout, depth=cfg.slots,
            init=[{"last": (1 << S) - 1, "got": L, "pend": 0}] * cfg.slots)
        # Written by the receive side alone, read where the header arrives.
        r_state, w_state = states.read_port(domain="comb"), states.write_port()
        # At most one entry per source: a source's slot holds one broadcast at a time.
        m.submodules.ready = ready = fifo.SyncFIFOBuffered(width=f.id_bits, depth=cfg.slots)

        # -- this node's own broadcasts (rule 2) -----------------------------------------
        own_seq = Signal(S)                         # the number of the next one
        own_got = Signal(range(L + 1), init=L)      # copies of the last one back
        own_free = Signal()
        own_start = Signal()                        # an own broadcast head leaves
        own_back = Signal()                         # a copy of the last one came back
        m.d.comb += own_free.eq(own_got == L)
        with m.If(own_start):
            m.d.sync += [own_seq.eq(own_seq + 1), own_got.eq(0)]
        with m.Elif(own_back):
            m.d.sync += own_got.eq(own_got + 1)

        # -- receive side ----------------------------------------------------------------
        rx = self.net_in
        hdr = data.View(f.header, rx.payload.data[:hb])
        in_packet = Signal()
        cur_src = Signal(f.id_bits)
        cur_seq = Signal(S)
        cur_mode = Signal(_Mode)
        waddr = Signal(range(cfg.slots * BF))
        src = Signal(f.id_bits)
        seq = Signal(S)
        mode = Signal(_Mode)
        head_mode = Signal(_Mode)
        m.d.comb += [src.eq(Mux(in_packet, cur_src, hdr.src)),
                     seq.eq(Mux(in_packet, cur_seq, hdr.arg[:S])),
                     mode.eq(Mux(in_packet, cur_mode, head_mode)),
                     r_state.addr.eq(src)]
        st = data.View(st_layout, r_state.data)
        is_broadcast = rx.payload.head & hdr.mcast & (hdr.kind == KIND_DATA)
        with m.If(~is_broadcast):
            # (a body flit outside a packet too, which the router never sends: the
            # endpoint discards it)
            m.d.comb += head_mode.eq(_Mode.PASS)
        with m.Elif(hdr.src == me):
            m.d.comb += head_mode.eq(_Mode.OWN)
        with m.Elif((seq == (st.last + 1)[:S]) & (st.pend == 0)):
            m.d.comb += head_mode.eq(_Mode.NEW)
        with m.Elif((seq == st.last) & (st.got != L)):
            m.d.comb += head_mode.eq(_Mode.COPY)
        with m.Elif((seq == (st.last - 1)[:S]) & (st.pend != 0)):
            m.d.comb += head_mode.eq(_Mode.LATE)
        with m.Else():
            m.d.comb += head_mode.eq(_Mode.STRAY)

        passing = (mode == _Mode.PASS) | (mode == _Mode.NEW)
        m.d.comb += [self.net_out.valid.eq(rx.valid & passing),
                     self.net_out.payload.eq(rx.payload),
                     rx.ready.eq(~passing | self.net_out.ready)]
        take = Signal()
        m.d.comb += take.eq(rx.valid & rx.ready)
        for v in range(f.vcs):
            m.d.comb += self.net_cred[v].eq(take & (rx.payload.vc == v))

        # A new broadcast goes into its source's slot as it is delivered, its group
        # rewritten to this node's for the forward.
        base = Signal.like(waddr)
        m.d.comb += base.eq(_times(hdr.src, BF))
        stored = data.View(slot, w_slot.data)
        m.d.comb += [w_slot.addr.eq(Mux(in_packet, waddr, base)),
                     w_slot.en.eq(take & (mode == _Mode.NEW)),
                     stored.data.eq(rx.payload.data), stored.head.eq(rx.payload.head),
                     stored.tail.eq(rx.payload.tail)]
        with m.If(~in_packet):
            m.d.comb += stored.data[dst_at:dst_at + f.id_bits].eq(me)
        with m.If(take):
            with m.If(rx.payload.tail):
                m.d.sync += in_packet.eq(0)
            with m.Else():
                m.d.sync += [in_packet.eq(1), waddr.eq(w_slot.addr + 1)]
                with m.If(~in_packet):
                    m.d.sync += [cur_src.eq(hdr.src), cur_seq.eq(hdr.arg[:S]),
                                 cur_mode.eq(head_mode)]

        # A copy counts once it has arrived whole (rule 1's "received"): at its tail, when
        # its sender has read the whole of it out of its slot.
        done = Signal()
        m.d.comb += [done.eq(take & rx.payload.tail),
                     w_state.addr.eq(src), w_state.data.eq(st),
                     ready.w_data.eq(src), own_back.eq(done & (mode == _Mode.OWN))]
        with m.If(done), m.Switch(mode):
            with m.Case(_Mode.NEW):
                # the copies of the one before that are still to come
                m.d.comb += [w_state.en.eq(1), w_state.data.last.eq(seq),
                             w_state.data.got.eq(1), w_state.data.pend.eq(L - st.got),
                             ready.w_en.eq(st.got == L)]
            with m.Case(_Mode.COPY):
                m.d.comb += [w_state.en.eq(1), w_state.data.got.eq(st.got + 1)]
            with m.Case(_Mode.LATE):
                m.d.comb += [w_state.en.eq(1), w_state.data.pend.eq(st.pend - 1),
                             ready.w_en.eq(st.pend == 1)]
        stray = Signal(16)
        m.d.comb += self.stray.eq(stray)
        with m.If(done & (mode == _Mode.STRAY) & ~stray.all()):
            m.d.sync += stray.eq(stray + 1)

        # -- forward: a ready slot read out, one flit a cycle ----------------------------
        fwd_valid = Signal()
        fwd_ready = Signal()
        fwd = data.View(slot, r_slot.data)
        fwd_hdr = data.View(f.header, fwd.data[:hb])
        active = Signal()
        raddr = Signal.like(waddr)
        left = Signal(range(BF + 1))        # flits of the slot not read yet
        advance = Signal()
        # (reads stop at the slot's end: the word after a short packet's tail is read and
        # not sent, the one after the last slot is never read)
        m.d.comb += [advance.eq(~fwd_valid | fwd_ready), r_slot.addr.eq(raddr),
                     r_slot.en.eq(active & advance & (left != 0))]
        with m.If(~active):
            m.d.comb += ready.r_en.eq(1)
            with m.If(ready.r_rdy):
                m.d.sync += [active.eq(1), raddr.eq(_times(ready.r_data, BF)), left.eq(BF)]
        with m.Elif(advance):
            with m.If(left != 0):
                m.d.sync += [fwd_valid.eq(1), raddr.eq(raddr + 1), left.eq(left - 1)]
            with m.Else():
                m.d.sync += fwd_valid.eq(0)
        with m.If(fwd_valid & fwd_ready & fwd.tail):
            # the slot is free; the word read behind the tail is not sent
            m.d.sync += [active.eq(0), fwd_valid.eq(0)]

        # -- per endpoint: its packets and the forwards addressed to it, in turn ---------
        to_fwd = []
        starts = []
        for i in range(cfg.endpoints):
            ep, out = self.ep_in[i], self.ep_out[i]
            ep_hdr = data.View(f.header, ep.payload.data[:hb])
            ep_lock, fw_lock = Signal(name=f"ep_lock{i}"), Signal(name=f"fw_lock{i}")
            fw_first = Signal(name=f"fw_first{i}")      # forwards go first next time
            broadcast = ep.payload.head & ep_hdr.mcast
            ep_can = ep.valid & (~broadcast | own_free)
            fw_can = fwd_valid & fwd.head & (fwd_hdr.dst_ep == i)
            sel_fw, sel_ep = Signal(name=f"sel_fw{i}"), Signal(name=f"sel_ep{i}")
            m.d.comb += [
                sel_fw.eq(fw_lock | (~ep_lock & fw_can & (fw_first | ~ep_can))),
                sel_ep.eq(ep_lock | (~fw_lock & ~sel_fw & ep_can)),
                out.valid.eq((sel_fw & fwd_valid) | (sel_ep & ep.valid)),
                ep.ready.eq(sel_ep & out.ready),
            ]
            with m.If(sel_fw):
                m.d.comb += [out.payload.data.eq(fwd.data), out.payload.head.eq(fwd.head),
                             out.payload.tail.eq(fwd.tail)]
            with m.Else():
                m.d.comb += out.payload.eq(ep.payload)
                with m.If(broadcast):
                    m.d.comb += out.payload.data[arg_at:arg_at + S].eq(own_seq)
            sent = out.valid & out.ready
            with m.If(sent):
                m.d.sync += [ep_lock.eq(sel_ep & ~out.payload.tail),
                             fw_lock.eq(sel_fw & ~out.payload.tail)]
                with m.If(out.payload.tail):
                    m.d.sync += fw_first.eq(sel_ep)
            to_fwd.append(sel_fw & out.ready)
            starts.append(sent & sel_ep & broadcast)
        m.d.comb += [fwd_ready.eq(Cat(to_fwd).any()), own_start.eq(Cat(starts).any())]
        return m
