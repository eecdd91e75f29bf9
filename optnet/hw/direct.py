"""Direct switch for fully connected clusters (OPTWEB's "distributed switch").

In a fully connected cluster of ``N`` nodes every node has one link to each of its
``N - 1`` peers, so every path is one hop: no routing, no router, no packet header naming a
destination (the link is the destination) and, as in OPTWEB, no link layer: no
retransmission and no link-level credits. The PHY's ECC is trusted, and overflow is
prevented end to end, by message-level credit per destination.

Link words
----------
A PHY word is ``width + 1`` bits: the top bit is OPTWEB's "data active" distinction made
per word, ``0`` for a data word (the low ``width`` bits are one beat of user data) and ``1``
for a control word. A control word holds ``op`` above an ``arg`` of
:attr:`DirectConfig.arg_bits` bits (low bits), so ``width`` must be at least
``arg_bits + 2``::

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
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.hw.alloc import RoundRobin
from optnet.plan.configs import clog2

__all__ = ["OP_CREDIT", "OP_CTS", "OP_EAGER", "OP_RTS", "DirectConfig", "DirectSwitch"]

#: Control word opcodes (see the module docstring).
OP_EAGER = 0
OP_RTS = 1
OP_CTS = 2
OP_CREDIT = 3


@dataclass(frozen=True)
class DirectConfig:
    """Parameters of one direct switch.

    Attributes
    ----------
    width : int
        User data bits per beat.
    peers : int
        Links, one per other node (``N - 1``); port ``i`` connects to the ``i``-th peer.
    threshold : int
        Messages of at most this many beats go eager, longer ones rendezvous (0: all
        rendezvous).
    buffer : int
        Receive buffer per peer, in beats; at least ``threshold`` (an eager message must fit).
    phy_width : int
        Bits per PHY word: ``width + 1`` (a data/control bit above the data).
    max_length_bits : int
        Width of the message length in ``tuser``; messages are 1 to
        ``2**max_length_bits - 1`` beats.
    """

    width: int
    peers: int
    threshold: int
    buffer: int
    phy_width: int
    max_length_bits: int = 16

    def __post_init__(self):
        if self.peers < 1:
            raise ValueError(f"a direct switch needs at least one peer, not {self.peers}")
        if self.width < 1:
            raise ValueError(f"the data width must be at least 1 bit, not {self.width}")
        if self.max_length_bits < 1:
            raise ValueError("max_length_bits must be at least 1")
        if self.threshold < 0:
            raise ValueError(f"the eager threshold cannot be negative ({self.threshold})")
        if self.buffer < 1:
            raise ValueError(f"the receive buffer must hold at least one beat, not {self.buffer}")
        if self.buffer < self.threshold:
            raise ValueError(f"the receive buffer ({self.buffer} beats) is smaller than the "
                             f"eager threshold ({self.threshold} beats); an eager message "
                             f"must fit in it")
        if self.threshold >= 1 << self.max_length_bits:
            raise ValueError(f"the eager threshold {self.threshold} does not fit "
                             f"{self.max_length_bits} length bits")
        if self.phy_width != self.width + 1:
            raise ValueError(f"phy_width must be width + 1 = {self.width + 1} (one data/control "
                             f"bit above the data), not {self.phy_width}")
        if self.width < self.arg_bits + 2:
            raise ValueError(f"a {self.width}-bit word cannot hold a control word (2-bit opcode "
                             f"and a {self.arg_bits}-bit length or credit); use a wider word "
                             f"or fewer max_length_bits")

    @property
    def peer_bits(self) -> int:
        """Bits of ``tdest``/``tid``."""
        return clog2(self.peers)

    @property
    def arg_bits(self) -> int:
        """Bits of a control word's argument: a message length or a credit grant."""
        return max(self.max_length_bits, self.buffer.bit_length())

    @property
    def batch(self) -> int:
        """Freed beats a receiver collects before it returns them in one CREDIT word.

        Half the threshold or a quarter of the buffer, whichever is larger, but at most
        ``buffer - threshold + 1`` (the bound that keeps waiting senders live, see the
        module docstring); so a buffer of at least ``threshold * 3 / 2`` returns credit in
        batches of at least ``threshold / 2``, and ``buffer == threshold`` one by one.
        """
        return max(1, min(max(self.threshold // 2, self.buffer // 4),
                          self.buffer - self.threshold + 1))

    @property
    def control(self) -> data.StructLayout:
        """Layout of the low bits of a control word."""
        return data.StructLayout({"arg": self.arg_bits, "op": 2})

    @property
    def s_axis_layout(self) -> data.StructLayout:
        """``tdest`` = port (peer index); ``tuser`` = message length in beats, first beat."""
        return data.StructLayout({"tdata": self.width, "tlast": 1, "tdest": self.peer_bits,
                                  "tuser": self.max_length_bits})

    @property
    def m_axis_layout(self) -> data.StructLayout:
        """``tid`` = port the message came in on."""
        return data.StructLayout({"tdata": self.width, "tlast": 1, "tid": self.peer_bits})

    # -- the word format as integers, for models and tests ----------------------------------

    def control_word(self, op: int, arg: int) -> int:
        return 1 << self.width | op << self.arg_bits | arg

    def data_word(self, value: int) -> int:
        return value & ((1 << self.width) - 1)

    def decode(self, word: int) -> tuple[int | None, int]:
        """``(op, arg)`` of a control word, ``(None, data)`` of a data word."""
        if not word >> self.width & 1:
            return None, word & ((1 << self.width) - 1)
        return word >> self.arg_bits & 3, word & ((1 << self.arg_bits) - 1)


class DirectSwitch(wiring.Component):
    """One node's switch (see the module docstring for the word format and protocol).

    Members
    -------
    s_axis : In(stream.Signature(DirectConfig.s_axis_layout))
        Messages to send: beats to ``tlast``; the first beat's ``tuser`` is the length in
        beats, which must match ``tlast`` (the switch frames by the length). A message
        with ``tdest >= peers`` or length 0 is discarded up to its ``tlast``.
    m_axis : Out(stream.Signature(DirectConfig.m_axis_layout))
        Messages received, whole and in order per source; ``tid`` = port.
    tx : Out(stream.Signature(unsigned(phy_width))).array(peers)
        Words to each peer's PHY; ``valid`` is OPTWEB's per-cycle "data active".
    rx : In(stream.Signature(unsigned(phy_width), always_ready=True)).array(peers)
        Words from each peer's PHY; every word is taken.
    up : In(1).array(peers)
        Link usable; nothing is sent on a link that is down.
    sent_messages, received_messages : Out(16)
        Messages sent on ``tx`` and delivered on ``m_axis`` (wrap around).
    """

    def __init__(self, config: DirectConfig):
        self.config = config
        c = config
        super().__init__({
            "s_axis": In(stream.Signature(c.s_axis_layout)),
            "m_axis": Out(stream.Signature(c.m_axis_layout)),
            "tx": Out(stream.Signature(unsigned(c.phy_width))).array(c.peers),
            "rx": In(stream.Signature(unsigned(c.phy_width), always_ready=True)).array(c.peers),
            "up": In(1).array(c.peers),
            "sent_messages": Out(16),
            "received_messages": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        c = self.config
        P, W, B = c.peers, c.width, c.buffer
        word = data.StructLayout({"body": W, "ctrl": 1})
        beat = data.StructLayout({"tdata": W, "tlast": 1})

        def control(op, arg):
            # arg zero-extended to arg_bits, op, padding, and the control bit on top
            arg = Value.cast(arg)
            op = Const(op, 2) if isinstance(op, int) else op
            return Cat(arg, Const(0, c.arg_bits - len(arg)), op,
                       Const(0, W - c.arg_bits - 2), Const(1, 1))

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
            gain = Signal(c.arg_bits, name=f"gain{i}")
            rts, cts = Signal(name=f"rts{i}"), Signal(name=f"cts{i}")
            is_ctl = rx.valid & w.ctrl
            # CTS and CREDIT (op 2 and 3) both carry credit.
            m.d.comb += [rts.eq(is_ctl & (cw.op == OP_RTS)), cts.eq(is_ctl & (cw.op == OP_CTS)),
                         gain.eq(Mux(is_ctl & cw.op[1], cw.arg, 0))]
            with m.If(is_ctl & ((cw.op == OP_EAGER) | (cw.op == OP_RTS))):
                m.d.sync += remaining.eq(cw.arg)
            with m.If(rx.valid & ~w.ctrl):
                # Credit guarantees room: this write is never refused.
                m.d.comb += [buf.w_en.eq(1), buf.w_data.eq(Cat(w.body, remaining == 1))]
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
                        m.d.comb += [out.eq(control(OP_EAGER, length)), cost.eq(length),
                                     write.eq((credits[user.tdest] >= length)
                                              & oks[user.tdest])]
                        with m.If(write):
                            m.d.sync += [dst.eq(user.tdest), remaining.eq(length)]
                            m.next = "EAGER"
                    with m.Else():
                        m.d.comb += [out.eq(control(OP_RTS, length)), write.eq(oks[user.tdest])]
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
