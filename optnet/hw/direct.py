"""Direct switch for fully connected clusters (OPTWEB's "distributed switch").

In a fully connected cluster of ``N`` nodes every node has one link to each of its
``N - 1`` peers, so every path is one hop: no routing, no router, no packet header naming a
destination (the link is the destination) and, as in OPTWEB, no link layer: no
retransmission and no link-level credits. The PHY's ECC is trusted, and overflow is
prevented end to end, by message-level credit per destination.

Port words
----------
A word on a switch port is ``width + 1`` bits: the top bit is OPTWEB's "data active"
distinction made per word, ``0`` for a data word (the low ``width`` bits are one beat of
user data) and ``1`` for a control word. A control word holds an ``arg`` of
:attr:`DirectConfig.arg_bits` bits (low bits), ``op`` and, for EAGER and RTS, the endpoint
``ep`` the message is for (:attr:`DirectConfig.ep_bits`), so ``width`` must be at least
``arg_bits + 2 + ep_bits``::

    EAGER(n)   sender -> receiver   an eager message of n beats follows
    RTS(n)     sender -> receiver   request to send a rendezvous message of n beats
    CTS(g)     receiver -> sender   clear to send the pending rendezvous message; grants g
    CREDIT(g)  receiver -> sender   grants g beats of buffer space

Because every word says what it is, control words for the reverse direction go out any
cycle, between the data words of a message, and data needs no chunk headers: the receiver
knows where a message ends from the length in its EAGER or RTS word (so ``tlast`` does not
cross the link), and words of one link arrive in order.

Protocol
--------
The sender keeps ``credit[p]``, beats of peer ``p``'s receive buffer (``buffer`` beats per
source) that it may fill, initially ``buffer``. The receiver counts the beats the user takes
from each source's buffer (``freed[p]``) and returns them in CREDIT words. So, per pair,
``credit + data in flight + buffered beats + freed + credit in flight == buffer`` at all
times, and a receive buffer can never overflow: nothing is ever dropped or overwritten.

- Eager (length <= ``threshold``): once ``credit >= length``, send EAGER(length) and the
  beats, reserving ``length`` credit at once; the message then runs at one beat per cycle
  and never waits for the receiver midway. No round trip.
- Rendezvous (length > ``threshold``, up to ``2**max_length_bits - 1``): send RTS(length)
  and wait for the CTS, which the receiver returns as soon as the RTS arrives, granting what
  it has freed so far (possibly nothing); then send the beats as credit allows, one credit
  per beat, so the data goes in chunks of at most the granted amount. A message longer than
  the buffer streams through it.
- Credit returns are batched: a receiver returns ``freed[p]`` once it reaches
  :attr:`DirectConfig.batch` (or at once, in the CTS, when an RTS arrives), so the reverse
  link carries one control word per ``batch`` beats. ``batch <= buffer - threshold + 1``
  guarantees a sender waiting for credit is never left waiting on an unreturned remainder:
  once its buffer drains, a sender short of ``length <= threshold`` beats has
  ``freed >= buffer - threshold + 1`` outstanding.

Credit returns have priority over data on a link: they are rare, and a long message the
other way must not hold up the credits its own sender needs.

Transmit side: one message at a time from ``s_axis``, in order. Receive side: a
:class:`~amaranth.lib.fifo.SyncFIFOBuffered` of ``buffer`` beats per peer (block RAM
friendly) and a :class:`~optnet.hw.alloc.RoundRobin` choice among the peers with a beat
waiting. A message is delivered as its beats arrive, and ``m_axis`` stays locked to its
source until its last beat, so messages never interleave on ``m_axis``. That cannot
deadlock: the rest of the message needs only credit from the locked source's own buffer,
which the user is draining.

Latency (cycles, all ``ready``; measured in ``tests/test_hw_direct.py``): the first beat
presented on ``s_axis`` in cycle 0 puts the EAGER or RTS word on ``tx`` in cycle 1 and an
eager message's first data word in cycle 2. A rendezvous message's first data word leaves
in cycle ``2 * L + 5`` for a link latency of ``L`` cycles: the RTS on ``tx`` in cycle 1, its
CTS on the receiver's ``tx`` two cycles after the RTS arrived, the data two cycles after the
CTS arrived. A data word on ``rx`` in cycle ``t`` is on ``m_axis`` in cycle ``t + 2``. With
ready PHYs and users, and a buffer covering the credit round trip, a link carries a word
every cycle (eager messages back to back, or a rendezvous message once its CTS is in).

Limitations: a link that goes down with words in flight loses them, and with them the
credit they carried (there is no link layer to recover; OPTWEB relies on the PHY's ECC);
while ``up`` is low nothing is sent on it, and a message to that peer waits. A message
waiting for credit or a CTS holds up the messages behind it on ``s_axis``, even to other
peers.

On a node
---------
:class:`~optnet.hw.top.NodeTop` builds a direct node from its plan
(:attr:`optnet.plan.NodePlan.direct`): the switch, whose ports are the node's links in port
order and a last one looped back to itself (so a node's messages to itself go through it
too, a cycle of loop); a :class:`DirectLink` per link, which carries the port's words over
the PHY's user words (of another width, in another clock domain); and a
:class:`DirectHub`, which joins the endpoints to the switch, turns a destination node id
into the port that leads to it and a port back into the source node id. The endpoints'
streams are the switch's, with node ids: ``tdest`` the destination node, ``tuser`` the
message's length in beats on its first beat (:func:`~optnet.hw.endpoint.axis_tx_layout`),
``tid`` on ``m_axis`` the source node. A node adds no cycle to the switch's but its direct
links' (:data:`optnet.model.DIRECT_LINK_CYCLES`, measured in
``tests/test_hw_direct_node.py``).
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import cdc, data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.hw.alloc import RoundRobin
from optnet.plan.configs import DirectConfig, DirectLinkConfig

__all__ = ["OP_CREDIT", "OP_CTS", "OP_EAGER", "OP_RTS", "DirectConfig", "DirectHub",
           "DirectLink", "DirectSwitch"]

#: Control word opcodes (see the module docstring).
OP_EAGER = 0
OP_RTS = 1
OP_CTS = 2
OP_CREDIT = 3


class DirectSwitch(wiring.Component):
    """One node's switch (see the module docstring for the word format and protocol).

    Members
    -------
    s_axis : In(stream.Signature(DirectConfig.s_axis_layout))
        Messages to send: beats to ``tlast``; the first beat's ``tuser`` is the length in
        beats, which must match ``tlast`` (the switch frames by the length), its ``tid``
        the endpoint the message is for. A message with ``tdest >= peers`` or length 0 is
        discarded up to its ``tlast``.
    m_axis : Out(stream.Signature(DirectConfig.m_axis_layout))
        Messages received, whole and in order per source; ``tid`` = port, ``tdest`` =
        endpoint.
    tx : Out(stream.Signature(unsigned(phy_width))).array(peers)
        Words to each peer's PHY; ``valid`` is OPTWEB's per-cycle "data active".
    rx : In(stream.Signature(unsigned(phy_width), always_ready=True)).array(peers)
        Words from each peer's PHY; every word is taken.
    up : In(1).array(peers)
        Link usable; nothing is sent on a link that is down.
    sent_messages, received_messages, discarded : Out(16)
        Messages sent on ``tx``, delivered on ``m_axis`` and discarded from ``s_axis``
        (wrap around).
    """

    def __init__(self, config: DirectConfig):
        self.config = config
        super().__init__(self.signature_of(config))

    @staticmethod
    def signature_of(config: DirectConfig) -> wiring.Signature:
        """The signature of a direct switch of ``config`` (for
        :func:`~optnet.hw.verilog.instantiate`)."""
        c = config
        return wiring.Signature({
            "s_axis": In(stream.Signature(c.s_axis_layout)),
            "m_axis": Out(stream.Signature(c.m_axis_layout)),
            "tx": Out(stream.Signature(unsigned(c.phy_width))).array(c.peers),
            "rx": In(stream.Signature(unsigned(c.phy_width), always_ready=True)).array(c.peers),
            "up": In(1).array(c.peers),
            "sent_messages": Out(16),
            "received_messages": Out(16),
            "discarded": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        c = self.config
        P, W, B = c.peers, c.width, c.buffer
        word = data.StructLayout({"body": W, "ctrl": 1})
        beat = data.StructLayout({"tdata": W, "tlast": 1, "ep": c.ep_bits})

        def control(op, arg, ep=0):
            # arg zero-extended to arg_bits, op, endpoint, padding, and the control bit on top
            arg, ep = Value.cast(arg), Value.cast(ep)[:c.ep_bits]
            op = Const(op, 2) if isinstance(op, int) else op
            return Cat(arg, Const(0, c.arg_bits - len(arg)), op, ep,
                       Const(0, c.ep_bits - len(ep)), Const(0, W - c.control.size), Const(1, 1))

        # -- per link: output queue, credit, receive buffer --------------------------------
        # The output queue (two words: full rate) keeps the PHY's ready off every path to
        # s_axis.ready, and lets a credit return and data share the link cycle by cycle.
        outq, bufs = [], []
        credit = [Signal(range(B + 1), init=B, name=f"credit{i}") for i in range(P)]
        cts_seen = [Signal(name=f"cts_seen{i}") for i in range(P)]
        ret = [Signal(name=f"ret{i}") for i in range(P)]       # a credit return is due
        ok = Signal(P)          # the sender may write a word for port i this cycle
        spend = [Signal(range(B + 1), name=f"spend{i}") for i in range(P)]
        cts_done = Signal(P)    # the rendezvous message to port i is finished
        for i in range(P):
            q = fifo.SyncFIFO(width=c.phy_width, depth=2)
            m.submodules[f"txq{i}"] = q
            outq.append(q)
            m.d.comb += [self.tx[i].valid.eq(q.r_rdy & self.up[i]),
                         self.tx[i].payload.eq(q.r_data),
                         q.r_en.eq(self.tx[i].ready & self.up[i])]
            # SyncFIFOBuffered(depth=2) refuses a write while its one RAM word waits to
            # move to the output register, with one beat stored: it would refuse a beat the
            # credit allowed. Three entries hold two beats whenever asked.
            buf = fifo.SyncFIFOBuffered(width=beat.size, depth=3 if B == 2 else B)
            m.submodules[f"rxbuf{i}"] = buf
            bufs.append(buf)
            m.d.comb += ok[i].eq(q.w_rdy & ~ret[i] & self.up[i])

        # -- receive: decode words, fill buffers, credit from peers ---------------------
        took = Signal(P)        # the user took a beat from buffer i
        for i in range(P):
            rx, buf, q = self.rx[i], bufs[i], outq[i]
            w = data.View(word, rx.payload)
            cw = data.View(c.control, w.body[:c.control.size])
            remaining = Signal(c.max_length_bits, name=f"rx_rem{i}")
            ep = Signal(c.ep_bits, name=f"rx_ep{i}")        # the message's endpoint
            gain = Signal(c.arg_bits, name=f"gain{i}")
            rts, cts = Signal(name=f"rts{i}"), Signal(name=f"cts{i}")
            is_ctl = rx.valid & w.ctrl
            # CTS and CREDIT (op 2 and 3) both carry credit.
            m.d.comb += [rts.eq(is_ctl & (cw.op == OP_RTS)), cts.eq(is_ctl & (cw.op == OP_CTS)),
                         gain.eq(Mux(is_ctl & cw.op[1], cw.arg, 0))]
            with m.If(is_ctl & ((cw.op == OP_EAGER) | (cw.op == OP_RTS))):
                m.d.sync += [remaining.eq(cw.arg), ep.eq(cw.ep)]
            with m.If(rx.valid & ~w.ctrl):
                # Credit guarantees room: this write is never refused.
                m.d.comb += [buf.w_en.eq(1), buf.w_data.eq(Cat(w.body, remaining == 1, ep))]
                m.d.sync += remaining.eq(remaining - 1)
            m.d.sync += credit[i].eq(credit[i] + gain - spend[i])
            with m.If(cts):
                m.d.sync += cts_seen[i].eq(1)
            with m.Elif(cts_done[i]):
                m.d.sync += cts_seen[i].eq(0)

            # Credit returns to peer i: CTS(freed) answers an RTS at once, CREDIT(freed)
            # goes when a batch has been freed.
            freed = Signal(range(B + 1), name=f"freed{i}")
            cts_due = Signal(name=f"cts_due{i}")
            m.d.comb += ret[i].eq(cts_due | (freed >= c.batch))
            with m.If(ret[i] & q.w_rdy):
                m.d.comb += [q.w_en.eq(1),
                             q.w_data.eq(control(Mux(cts_due, OP_CTS, OP_CREDIT), freed))]
                m.d.sync += [freed.eq(took[i]), cts_due.eq(0)]
            with m.Else():
                m.d.sync += freed.eq(freed + took[i])
            with m.If(rts):
                m.d.sync += cts_due.eq(1)

        # -- transmit: one message at a time from s_axis -----------------------------------
        user = self.s_axis.payload
        dst = Signal(c.peer_bits)                   # port of the message being sent
        remaining = Signal(c.max_length_bits)       # its beats not yet sent
        port = Signal(c.peer_bits)                  # port written this cycle
        write = Signal()                            # a word for outq[port]
        out = Signal(c.phy_width)
        cost = Signal(range(B + 1))                 # credit it spends
        credits, oks, seen = Array(credit), Array(ok), Array(cts_seen)
        length = user.tuser
        last = Signal()
        with m.FSM(name="tx"):
            with m.State("IDLE"):
                m.d.comb += port.eq(user.tdest)
                with m.If(self.s_axis.valid):
                    with m.If((user.tdest >= P) | (length == 0)):
                        m.next = "DISCARD"
                    with m.Elif(length <= c.threshold):
                        # credit for the whole message up front: it never stalls midway
                        m.d.comb += [out.eq(control(OP_EAGER, length, user.tid)),
                                     cost.eq(length),
                                     write.eq((credits[user.tdest] >= length)
                                              & oks[user.tdest])]
                        with m.If(write):
                            m.d.sync += [dst.eq(user.tdest), remaining.eq(length)]
                            m.next = "EAGER"
                    with m.Else():
                        m.d.comb += [out.eq(control(OP_RTS, length, user.tid)),
                                     write.eq(oks[user.tdest])]
                        with m.If(write):
                            m.d.sync += [dst.eq(user.tdest), remaining.eq(length)]
                            m.next = "RENDEZVOUS"
            with m.State("EAGER"):
                m.d.comb += [port.eq(dst), out.eq(user.tdata), self.s_axis.ready.eq(oks[dst]),
                             write.eq(self.s_axis.valid & oks[dst])]
                with m.If(write):
                    m.d.sync += remaining.eq(remaining - 1)
                    with m.If(remaining == 1):
                        m.d.comb += last.eq(1)
                        m.next = "IDLE"
            with m.State("RENDEZVOUS"):
                go = seen[dst] & (credits[dst] != 0) & oks[dst]
                m.d.comb += [port.eq(dst), out.eq(user.tdata), self.s_axis.ready.eq(go),
                             write.eq(self.s_axis.valid & go), cost.eq(write)]
                with m.If(write):
                    m.d.sync += remaining.eq(remaining - 1)
                    with m.If(remaining == 1):
                        m.d.comb += [last.eq(1), cts_done.eq(Const(1, P) << dst)]
                        m.next = "IDLE"
            with m.State("DISCARD"):
                m.d.comb += self.s_axis.ready.eq(1)
                with m.If(self.s_axis.valid & user.tlast):
                    m.d.sync += self.discarded.eq(self.discarded + 1)
                    m.next = "IDLE"
        for i in range(P):
            mine = write & (port == i)
            m.d.comb += spend[i].eq(Mux(mine, cost, 0))
            with m.If(mine):     # a due credit return has the queue (ok[i] is low)
                m.d.comb += [outq[i].w_en.eq(1), outq[i].w_data.eq(out)]
        with m.If(last):
            m.d.sync += self.sent_messages.eq(self.sent_messages + 1)

        # -- deliver: round robin among the buffers, locked to a source until tlast ---------
        m.submodules.arb = arb = RoundRobin(P)
        ready = Cat(buf.r_rdy for buf in bufs)
        locked = Signal()
        owner = Signal(c.peer_bits)
        pick = Signal(c.peer_bits)
        for i in range(P):
            with m.If(arb.grant[i]):
                m.d.comb += pick.eq(i)
        sel = Signal(c.peer_bits)
        m.d.comb += [sel.eq(Mux(locked, owner, pick)), arb.requests.eq(ready),
                     arb.advance.eq(~locked)]
        head = data.View(beat, Array(buf.r_data for buf in bufs)[sel])
        m.d.comb += [
            self.m_axis.valid.eq(Mux(locked, ready.bit_select(owner, 1), ready.any())),
            self.m_axis.payload.tdata.eq(head.tdata),
            self.m_axis.payload.tlast.eq(head.tlast),
            self.m_axis.payload.tid.eq(sel),
            self.m_axis.payload.tdest.eq(head.ep),
        ]
        fire = self.m_axis.valid & self.m_axis.ready
        for i in range(P):
            m.d.comb += [bufs[i].r_en.eq(self.m_axis.ready & (sel == i)),
                         took[i].eq(fire & (sel == i))]
        # Lock as soon as a beat is offered, not when it is taken: a waiting beat must not
        # change when another source's beat arrives (AXI4-Stream keeps the payload stable).
        with m.If(~locked & self.m_axis.valid):
            m.d.sync += [locked.eq(~(fire & head.tlast)), owner.eq(pick)]
        with m.Elif(fire & head.tlast):
            m.d.sync += locked.eq(0)
        with m.If(fire & head.tlast):
            m.d.sync += self.received_messages.eq(self.received_messages + 1)
        return m


class DirectLink(wiring.Component):
    """One port of a direct switch on its PHY: the switch's words cross into the PHY's user
    clock domain and go out as PHY user words; the PHY's words are gathered into switch
    words again and cross back.

    A switch word is ``width + 1`` bits and a PHY word ``phy_width``; ``width`` is usually a
    multiple of ``phy_width`` (a 256-bit beat on a 128-bit SerialLite III x2 word), so the
    data/control bit does not fit in the PHY words a beat's data fills. It is not sent: a
    data word goes as its ``k = ceil(width / phy_width)`` data pieces, and everything else
    starts with the escape word ``E`` (:attr:`~optnet.plan.configs.DirectLinkConfig.escape`)
    followed by a marker bit, ``1`` for a control word, whose body follows the marker, and
    ``0`` for a data word whose first piece happens to equal ``E``::

        data word, first piece != E     d0 d1 ... d(k-1)
        data word, first piece == E     E 0 d1 ... d(k-1)
        control word                    E (body << 1 | 1), in PHY words

    So data keeps the PHY's whole rate (a beat of random data needs one word more once in
    ``2 ** phy_width`` beats), and a control word takes one word more than its body needs. The
    receiver tells words apart by what they start with; it starts again at a word boundary
    whenever the link is down, and so does the sender, which sends a word cut short by the
    link going down again whole.

    The switch side is in ``sync``, the PHY side in ``config.phy_domain``; the words cross
    in :class:`~amaranth.lib.fifo.AsyncFIFO` s of ``config.depth`` switch words. The sender
    and the receiver of PHY words run in the PHY's domain, so a beat of ``k`` PHY words
    takes ``k`` PHY clock cycles, not ``k`` network clock cycles. The receiving side has no
    back-pressure (neither has the PHY, nor OPTWEB's link): the switch takes a word every
    network cycle, so the receiving FIFO never fills as long as words arrive no faster than
    the far switch, on its own network clock, sends them.

    Members
    -------
    tx : In(stream.Signature(unsigned(width + 1)))
        Switch words to send (``sync``).
    rx : Out(stream.Signature(unsigned(width + 1), always_ready=True))
        Switch words received (``sync``).
    up : Out(1)
        The PHY's ``up``, synchronised to ``sync``.
    phy_tx : Out(stream.Signature(phy_width))
    phy_rx : In(stream.Signature(phy_width, always_ready=True))
    phy_up : In(1)
        The PHY side (``config.phy_domain``), as :class:`~optnet.hw.phy.PhyInterface`.
    """

    def __init__(self, config: DirectLinkConfig):
        self.config = config
        super().__init__(self.signature_of(config))

    @staticmethod
    def signature_of(config: DirectLinkConfig) -> wiring.Signature:
        """The signature of a direct link of ``config`` (for
        :func:`~optnet.hw.verilog.instantiate`)."""
        word = unsigned(config.width + 1)
        return wiring.Signature({
            "tx": In(stream.Signature(word)),
            "rx": Out(stream.Signature(word, always_ready=True)),
            "up": Out(1),
            "phy_tx": Out(stream.Signature(config.phy_width)),
            "phy_rx": In(stream.Signature(config.phy_width, always_ready=True)),
            "phy_up": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        c = self.config
        W, P, pd = c.width, c.phy_width, c.phy_domain
        k, j = c.data_words, c.control_words - 1       # data pieces, control body words
        escape = Const(c.escape, P)
        word = data.StructLayout({"body": W, "ctrl": 1})

        # -- send: one switch word at a time, a PHY word a PHY cycle --------------------------
        m.submodules.tx_fifo = txf = fifo.AsyncFIFO(width=W + 1, depth=c.depth,
                                                    w_domain="sync", r_domain=pd)
        m.d.comb += [txf.w_data.eq(self.tx.payload), txf.w_en.eq(self.tx.valid),
                     self.tx.ready.eq(txf.w_rdy)]
        head = data.View(word, txf.r_data)
        pieces = Cat(head.body, Const(0, k * P - W))
        body = Cat(Const(1, 1), head.body[:c.control_bits], Const(0, j * P - c.control_bits - 1))
        d = [pieces[i * P:(i + 1) * P] for i in range(k)]
        b = [body[i * P:(i + 1) * P] for i in range(j)]
        esc = Signal()          # a data word whose first piece is the escape word
        m.d.comb += esc.eq(~head.ctrl & (d[0] == escape))
        index = Signal(range(max(k, j) + 1))      # PHY word of the switch word being sent
        last = Signal()
        out = self.phy_tx.payload
        m.d.comb += last.eq(Mux(head.ctrl, index == j, Mux(esc, index == k, index == k - 1)))
        with m.Switch(index):
            with m.Case(0):
                # (an escaped data word's first piece is the escape word itself)
                m.d.comb += out.eq(Mux(head.ctrl, escape, d[0]))
            for i in range(1, max(k, j) + 1):
                with m.Case(i):
                    control = b[i - 1] if i <= j else 0
                    escaped = 0 if i == 1 else d[i - 1] if i <= k else 0
                    plain = d[i] if i < k else 0
                    m.d.comb += out.eq(Mux(head.ctrl, control, Mux(esc, escaped, plain)))
        m.d.comb += self.phy_tx.valid.eq(txf.r_rdy & self.phy_up)
        with m.If(~self.phy_up):
            m.d[pd] += index.eq(0)
        with m.Elif(self.phy_tx.valid & self.phy_tx.ready):
            with m.If(last):
                m.d.comb += txf.r_en.eq(1)
                m.d[pd] += index.eq(0)
            with m.Else():
                m.d[pd] += index.eq(index + 1)

        # -- receive: gather PHY words into switch words -------------------------------------
        m.submodules.rx_fifo = rxf = fifo.AsyncFIFO(width=W + 1, depth=c.depth,
                                                    w_domain=pd, r_domain="sync")
        first, marker, pieces_, control_ = range(4)    # what the next PHY word is
        state = Signal(2, init=first)
        at = Signal(range(max(k, j) + 1))              # its piece or body word
        slots = [Signal(P, name=f"slot{i}") for i in range(max(k, j) - 1)]
        w, valid = self.phy_rx.payload, self.phy_rx.valid
        tail = Signal(P)        # the word that completes a data word
        done_data, done_control = Signal(), Signal()
        received = Signal(word)
        m.d.comb += tail.eq(Mux(state == marker, escape, w))

        def keep(i, value):
            # slot i takes value
            if isinstance(i, int):
                m.d[pd] += slots[i].eq(value)
                return
            with m.Switch(i):
                for s, slot in enumerate(slots):
                    with m.Case(s):
                        m.d[pd] += slot.eq(value)

        def gather(kind, count, value):
            # the first word of a data word (pieces_) or control body (control_) is value
            if count == 1:
                m.d.comb += (done_data if kind == pieces_ else done_control).eq(1)
                m.d[pd] += state.eq(first)
            else:
                keep(0, value)
                m.d[pd] += [at.eq(1), state.eq(kind)]

        with m.If(valid), m.Switch(state):
            with m.Case(first):
                with m.If(w == escape):
                    m.d[pd] += state.eq(marker)
                with m.Else():
                    gather(pieces_, k, w)
            with m.Case(marker):
                with m.If(w[0]):
                    gather(control_, j, w)
                with m.Else():
                    gather(pieces_, k, escape)
            for kind, count, done in ((pieces_, k, done_data), (control_, j, done_control)):
                with m.Case(kind):
                    with m.If(at == count - 1):
                        m.d.comb += done.eq(1)
                        m.d[pd] += state.eq(first)
                    with m.Else():
                        keep(at, w)
                        m.d[pd] += at.eq(at + 1)
        with m.If(~self.phy_up):
            m.d[pd] += state.eq(first)
        data_body = Cat(*slots[:k - 1], tail)[:W]
        control_body = Cat(*slots[:j - 1], w)[1:c.control_bits + 1]
        m.d.comb += [
            received.ctrl.eq(done_control),
            received.body.eq(Mux(done_control, control_body, data_body)),
            rxf.w_data.eq(received),
            rxf.w_en.eq(done_data | done_control),
            self.rx.valid.eq(rxf.r_rdy),
            self.rx.payload.eq(rxf.r_data),
            rxf.r_en.eq(rxf.r_rdy),
        ]
        m.submodules.up_sync = cdc.FFSynchronizer(self.phy_up, self.up)
        return m


class DirectHub(wiring.Component):
    """Joins a direct node's endpoints to its switch.

    Sending, it picks an endpoint round robin at message boundaries and passes its
    messages on whole, each with the switch port that leads to its destination node
    (``tdest``, a node id, looked up in ``ports``) and the endpoint's index; receiving, it
    steers each message to the endpoint named in it, with the id of the node it came from
    (looked up in ``ids``). It adds no cycle either way.

    The two tables are one-word-per-entry ROMs, ``direct_port_rom`` and ``direct_id_rom``:
    they are what differs between nodes of one hardware role, which
    :mod:`optnet.emit.roles` rewrites.

    Parameters
    ----------
    config : DirectConfig
    id_bits : int
        Bits of a node id.
    ports : sequence of int
        Per node id (``2 ** id_bits`` of them), the switch port leading to it; ``peers``
        for an id no node has, which the switch discards.
    ids : sequence of int
        Per switch port, the id of the node behind it.

    Members
    -------
    ep_tx : In(stream.Signature(tx)).array(endpoints)
        Messages from the endpoints: ``tdata`` (``width`` bits), ``tlast``, ``tdest`` = node
        id, ``tuser`` = length in beats (first beat).
    ep_rx : Out(stream.Signature(rx)).array(endpoints)
        Messages to the endpoints: ``tdata``, ``tlast``, ``tid`` = source node id.
    to_switch : Out(stream.Signature(DirectConfig.s_axis_layout))
    from_switch : In(stream.Signature(DirectConfig.m_axis_layout))
    """

    def __init__(self, config: DirectConfig, id_bits: int, ports, ids):
        self.config, self.id_bits = config, id_bits
        self.ports, self.ids = tuple(ports), tuple(ids)
        c = config
        if len(self.ports) != 1 << id_bits or len(self.ids) != c.peers:
            raise ValueError(f"a direct hub needs a port for each of the {1 << id_bits} node "
                             f"ids and an id for each of the {c.peers} ports, not "
                             f"{len(self.ports)} and {len(self.ids)}")
        super().__init__({
            "ep_tx": In(stream.Signature(self.tx_layout(c, id_bits))).array(c.endpoints),
            "ep_rx": Out(stream.Signature(self.rx_layout(c, id_bits))).array(c.endpoints),
            "to_switch": Out(stream.Signature(c.s_axis_layout)),
            "from_switch": In(stream.Signature(c.m_axis_layout)),
        })

    @staticmethod
    def tx_layout(config: DirectConfig, id_bits: int) -> data.StructLayout:
        """A beat from an endpoint, as wide as the switch's."""
        return data.StructLayout({"tdata": config.width, "tlast": 1, "tdest": id_bits,
                                  "tuser": config.max_length_bits})

    @staticmethod
    def rx_layout(config: DirectConfig, id_bits: int) -> data.StructLayout:
        """A beat to an endpoint, as wide as the switch's."""
        return data.StructLayout({"tdata": config.width, "tlast": 1, "tid": id_bits})

    def elaborate(self, platform):
        m = Module()
        c = self.config
        E = c.endpoints
        m.submodules.direct_port_rom = port_rom = memory.Memory(
            shape=c.peer_bits, depth=len(self.ports), init=self.ports)
        m.submodules.direct_id_rom = id_rom = memory.Memory(
            shape=self.id_bits, depth=len(self.ids), init=self.ids)
        to_port = port_rom.read_port(domain="comb")
        to_id = id_rom.read_port(domain="comb")

        # -- send: one endpoint's message at a time ------------------------------------------
        sel = Signal(c.ep_bits)
        if E == 1:
            m.d.comb += sel.eq(0)
        else:
            m.submodules.arb = arb = RoundRobin(E)
            locked = Signal()
            owner = Signal(c.ep_bits)
            pick = Signal(c.ep_bits)
            for i in range(E):
                with m.If(arb.grant[i]):
                    m.d.comb += pick.eq(i)
            m.d.comb += [sel.eq(Mux(locked, owner, pick)),
                         arb.requests.eq(Cat(ep.valid for ep in self.ep_tx)),
                         arb.advance.eq(~locked)]
            fire = self.to_switch.valid & self.to_switch.ready
            # Locked from the first beat offered, so that the beat on offer stays the same.
            with m.If(~locked & self.to_switch.valid):
                m.d.sync += [locked.eq(~(fire & self.to_switch.payload.tlast)),
                             owner.eq(pick)]
            with m.Elif(fire & self.to_switch.payload.tlast):
                m.d.sync += locked.eq(0)
        beat = data.View(self.tx_layout(c, self.id_bits),
                         Array(Value.cast(ep.payload) for ep in self.ep_tx)[sel])
        out = self.to_switch.payload
        m.d.comb += [
            to_port.addr.eq(beat.tdest),
            self.to_switch.valid.eq(Array(ep.valid for ep in self.ep_tx)[sel]),
            out.tdata.eq(beat.tdata), out.tlast.eq(beat.tlast), out.tuser.eq(beat.tuser),
            out.tdest.eq(to_port.data), out.tid.eq(sel),
        ]
        for i, ep in enumerate(self.ep_tx):
            m.d.comb += ep.ready.eq(self.to_switch.ready & (sel == i))

        # -- receive: each message to its endpoint -------------------------------------------
        got = self.from_switch.payload
        m.d.comb += to_id.addr.eq(got.tid)
        for i, ep in enumerate(self.ep_rx):
            mine = got.tdest == i
            m.d.comb += [ep.valid.eq(self.from_switch.valid & mine),
                         ep.payload.tdata.eq(got.tdata), ep.payload.tlast.eq(got.tlast),
                         ep.payload.tid.eq(to_id.data)]
            with m.If(mine):
                m.d.comb += self.from_switch.ready.eq(ep.ready)
        return m
