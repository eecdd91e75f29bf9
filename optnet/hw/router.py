"""Input-queued virtual-channel router with table-based routing and multicast.

Pipeline (zero load, cycles after a head flit is presented on an input)::

    0  route lookup from the head flit's header; flit and route written to its VC buffer
    1  stage A: the flit at the front of each VC requests its outputs; each input chooses
       one VC (round robin, among the VCs a register marks as able to bid) and registers
       that VC and its outputs as its bid
    2  stage B: an arbiter per output picks among the registered bids; each winning input
       reads its flit from its buffer memory into the output register (one flit per input
       and cycle); a winning unicast head takes its output VC
    3  flit valid on the output

so a head flit takes three cycles per hop and every following flit one more cycle each.
With ``block_tables`` (see below) the lookup is a block RAM read, so the flit is registered
while its route is read and written to its buffer a cycle later: four cycles per hop.

Switch allocation is split over two cycles so that neither holds the whole separable
allocator (requests, input arbitration, output arbitration, state update: one path of 15
xc7 logic levels in one cycle, 11 to 17 on ECP5). Stage A computes each input's bid for the
next cycle from the state of this one; stage B arbitrates on registered bids and updates
the state. Stage A cannot know what stage B decides in the same cycle, so the next bid is
one of three, chosen by stage B's outcome at the clock edge: the same bid again if the
input's flit was not sent (withdrawn if it was sent on some branches of a multicast only,
or is a unicast head's, below); if the flit was sent and the next one of its packet is
there, the packet's outputs that will still have a credit even if one is spent now (only
the packet that holds an output VC spends its credits; if none has, the input makes no bid
for a cycle and then chooses again); else a new round-robin choice among the input's
other VCs. A VC so keeps its input while its packet streams, one flit a cycle, and the
input's other VCs take their turn at its end or when it stops. That choice is made among
the VCs that may bid by a register of the cycle before (they wanted to, got a flit into an
empty queue, or took their multicast VCs), not by this cycle's requests, which only select
the chosen VC's bid: a VC that cannot bid after all bids for nothing for a cycle. A VC
whose next packet is behind the one that ends waits a cycle: the new head's route is read
when it reaches the front; two if the packet that ends held its output VC (see
:meth:`Router._bid_allocate`).

Stage A's tests are never optimistic, so that stage B checks nothing after its arbiters but
the output free (``ready``) and, with block RAM buffers, the input's read register free.
A unicast head bids for an output VC that is idle and not bid for by a head that takes it
(one of a packet of several flits), with a credit left even if another head's one-flit
packet (which takes no VC) spends one now on it; its bid lasts one cycle: if it is not
granted, the input chooses again from the state of the next cycle, which shows the VC
taken if another head took it. The multicast candidate takes its VCs only where no head
bids for them and their credits are still there. A wrong guess costs a cycle, never a
flit sent without credit or into a VC another packet holds.

Flits are read asynchronously (LUT RAM buffers) when they are granted, into the output
register. With block RAM buffers (``block_buffers``, or more than 64 words per input, which
synthesis puts in block RAM; :func:`_held`) the read is synchronous: a granted flit is in
the input's read register the next cycle and the output shows that register through the
crossbar, so a stalled output holds its input, which is not read again (nor granted) until
the output takes the flit.

Output VC allocation is folded into switch allocation: tables give every packet one VC
per output, so a unicast head only has to find that VC idle, and the switch arbiter already
lets one head per output win a cycle. Multicast heads need several output VCs at once, each
idle and with ``multicast_credits`` credits (open). One multicast head at a time becomes the
candidate (round robin over registered bids), unicast heads are kept off its VCs for a
cycle, and it takes them all at once, or gives up if one was taken in the meantime; from
the next cycle it bids for switch allocation as the owner of its VCs. With one priority
level every multicast head bids and the round robin's winner becomes the candidate the
cycle after only if its VCs are all open, else the next head is tried: four cycles more per
hop than a unicast head. With priorities a head bids only when its VCs are all open (so
that a head of the higher class that cannot go does not win every time), a test per input
VC that saves the cycle: three more per hop. Each flit leaves its input buffer once it has
been sent on every branch, and a branch gives its VC back when it has sent the tail.

So a multicast never holds some output VCs while it waits to take others. Once it has
them, a branch that has sent a flit waits for the flit behind it, which comes to the front
only when every branch has sent the first: a branch short of credit would make its
siblings hold their VCs, a wait that closes cycles when several nodes broadcast (two nodes
of a ring broadcasting at once deadlock). With ``multicast_credits`` at least the packet's
length less one, no branch lacks credit before the tail, and the one that does then holds
only its own VC; its siblings have sent the tail and given theirs back. The endpoints cut
broadcast packets to fit (:func:`optnet.routing.proof.broadcast_flits`), and the deadlock
proof models the sibling wait wherever a packet could still be longer
(:class:`optnet.routing.proof.Waits`). A multicast waiting for credit holds nothing, so
under heavy unicast load on its VCs it can wait long (no starvation bound).

The local output (port 0) carries one packet at a time whatever its VC, so endpoints see
whole packets; link outputs interleave the packets of different VCs flit by flit. The port
that all of a node's traffic leaves by should not idle between packets (one cycle a packet is
6 % of it with 16-flit packets): once the packet holding it has its tail at its front, unicast
heads for it may bid, and the allocators let such a bid through only when the output is free
in its cycle (the tail was sent the cycle before), so a head never joins a packet that is
still going. With iSLIP, whose requests are every VC's, the next head follows the tail
directly; with round robin one cycle later, since an input chooses among the VCs that wanted
to bid the cycle before (letting a head waiting for the local output be chosen while the
tail waits too kept, with priorities, an input's other VCs from bidding, and stalled a
cascade-broadcast torus under load).

Flow control is credit based on every port: an output sends only when the downstream
buffer of the flit's VC has room (``credits`` per port, returned on ``cred_in``); an input
returns one credit per flit it frees on ``cred_out``, one cycle after the flit's last read
(with block RAM buffers, after its last traversal; a dropped flit: one cycle after it is
discarded). Outputs also honour ``ready``, so a link layer that cannot take a flit this
cycle stalls its port; ``ready`` feeds allocation directly and should come from a register.
With block RAM buffers a stalled output holds its input (above), so a receiver says with
``room`` whether it will take a flit offered next cycle (besides any it takes now): an
output takes no new flit while its receiver has no room (a link layer whose replay window is
full). Without ``room`` (all ones, as on the local port) an output stalls only when its
receiver stops taking flits.

Routing is the routing stage's destination-based tables (:mod:`optnet.routing.tables`): the
unicast table maps a destination id to an output port and the VC to use on it; the
multicast table maps a multicast group (the source's id) to a port mask and a VC per port.
A head flit whose destination has no valid entry, or whose entry sends it back out of the
link it came in on (no U-turns on links), is dropped with its packet and counted in
``dropped``. A router whose multicast table is empty (``broadcast: none``) has no multicast
logic at all, and drops broadcast packets so. The local port may send a packet back to
itself (a node's packets to itself).

Tables in block RAM
-------------------
By default the tables are memories with an asynchronous read (LUT RAM), so the lookup
costs no cycle. With :attr:`~optnet.plan.configs.RouterConfig.block_tables` each table is a
block RAM of at least 512 words read synchronously, and the last word of input 0's table
holds the node id, read through the RAM's second port onto :attr:`Router.node_id`. Then
everything that differs between two nodes of one role (their tables and their id) sits in
block RAM, whose contents can be replaced in a placed and routed bitstream: one place and
route serves every node of the role (:mod:`optnet.emit.bitstream`). 512 words is the depth
ECP5's ``ecpbram`` matches contents in; the words beyond the tables are zero (no route).
"""

from __future__ import annotations

import itertools
import operator
from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.hw.alloc import RoundRobin, round_robin_grant
from optnet.hw.verilog import instantiate
from optnet.plan.configs import FlitFormat, RouterConfig, table_layout

__all__ = ["InputBuffer", "Router", "mask_bits", "route_table"]

#: Depth per VC above which :class:`InputBuffer` keeps its queues' control fields in block
#: RAM read synchronously (its deep mode). LUT RAM primitives are 32 or 64 words deep (Xilinx
#: RAM32M and RAM64M; ECP5's are 16, Intel's MLABs 32 or 64): a deeper asynchronous read
#: takes several of them per bit and a multiplexer of their outputs, where block RAM costs
#: a LUT and a flip-flop per bit whatever the depth. On xc7 the BlueDBM router's input
#: buffer (two VCs of 7 control bits) takes 158 LUTs at 256 words per VC and 297 at 512 with
#: LUT RAM, 64 and 65 with block RAM.
LUT_RAM_DEPTH = 64


class Router(wiring.Component):
    """A ``P x V`` router (see the module docstring for the pipeline and protocol).

    Parameters
    ----------
    config : RouterConfig
    buffers : str, optional
        Module name of the input buffer (:meth:`input_buffer`) lowered apart: every port
        instantiates it instead of holding a buffer of its own (all are alike).

    Members
    -------
    inp : In(stream.Signature(flit, always_ready=True)).array(P)
        Flits arriving on each port; the sender holds a credit for the flit's VC.
    cred_out : Out(V).array(P)
        Per port, one pulse per VC whose buffer freed a flit this cycle.
    out : Out(stream.Signature(flit)).array(P)
        Flits leaving on each port, ``vc`` set to the VC of the next link.
    cred_in : In(V).array(P)
        Credits returned by the receiver behind each output port.
    dropped : Out(16)
        Packets dropped because their destination had no valid table entry (saturates). An
        unroutable head waits up to ``P * V`` cycles for its turn to be dropped.
    node_id : Out(id_bits)
        Only with ``block_tables``: the node id held in ``table0``, valid from the first
        clock edge (the read port has no reset, so the id is there while reset is held).
    """

    def __init__(self, config: RouterConfig, buffers: str | None = None):
        self.config = config
        self.buffers = buffers
        super().__init__(self.signature_of(config))

    @staticmethod
    def input_buffer(config: RouterConfig) -> InputBuffer:
        """The input buffer of every port of a router of ``config``."""
        derived = {} if config.multicasts else {"multi": lambda c: Const(0, 1)}
        return InputBuffer(config.fmt.flit, _control_layout(config), config.fmt.vcs,
                           config.depth, derived=derived,
                           block=config.block_buffers, local=_ored_local(config),
                           sync_read=_held(config), whole=bool(config.whole_inputs))

    @staticmethod
    def signature_of(config: RouterConfig) -> wiring.Signature:
        """The signature of a router of ``config``."""
        f, p, v = config.fmt, config.ports, config.fmt.vcs
        members = {
            "inp": In(stream.Signature(f.flit, always_ready=True)).array(p),
            "cred_out": Out(v).array(p),
            "out": Out(stream.Signature(f.flit)).array(p),
            "cred_in": In(v).array(p),
            "room": In(p, init=(1 << p) - 1),
            "dropped": Out(16),
        }
        if config.block_tables:
            members["node_id"] = Out(f.id_bits)
        return wiring.Signature(members)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        f, P, V = cfg.fmt, cfg.ports, cfg.fmt.vcs
        vb = f.vc_bits
        levels = cfg.priorities
        ctrl = _control_layout(cfg)
        requesters = [(p, v) for p in range(P) for v in range(V)]

        # -- output side: owner flag and credits per output VC; the traversal stage -------
        busy = [Signal(V, name=f"busy{q}") for q in range(P)]
        # Credits less one: no credit is -1, the sign bit, where a test for zero would cost a
        # LUT per counter.
        credit = [[Signal(range(-1, cfg.credits[q]), name=f"cr{q}_{w}",
                          init=-1 if q in cfg.granted else cfg.credits[q] - 1)
                   for w in range(V)] for q in range(P)]
        # An output stalls when it has a flit its receiver does not take: it keeps it.
        stall = _named(m, Cat(self.out[q].valid & ~self.out[q].ready for q in range(P)),
                       "stall")
        held = _held(cfg)
        # ``full``: outputs that take no new flit this cycle. With ``held`` a flit that would
        # stall next cycle keeps its input's read register, and so every other flit of that
        # input, waiting: an output whose receiver has no ``room`` for a flit next cycle
        # takes none.
        full = _named(m, stall | ~self.room, "full") if held else stall
        if held:
            # The flits are read synchronously (block RAM) and an output shows the read
            # register of the input granted to it (``stage[q]``, one-hot, and the flit's
            # next VC): a stalled output keeps that input's register, which may be read
            # again only if no stalled output shows it (``in_ok``).
            stage = [Signal(P, name=f"stage{q}") for q in range(P)]
            stage_vc = [Signal(vb, name=f"stage_vc{q}") for q in range(P)]
            in_ok = _named(m, ~_any_of([Mux(stall[q], stage[q], 0) for q in range(P)]),
                           "in_ok")
        else:
            # The flits are read asynchronously (LUT RAM) as they are granted, into an
            # output register: no input waits for an output.
            in_ok = Const(-1, P)
        # Credit outlook of the bids, which are computed a cycle before they are arbitrated:
        # ``ahead[s][w]``, bit q: output q's VC w will have a credit next cycle if ``s`` (0
        # or 1) flits are spent on it now, counting the credit returned now, and q is not
        # stalled now (a guess: the allocator checks it). Only the packet that holds an
        # output VC spends its credits, so nothing else is spent on the VC a bid needs.
        ahead = [[], []]
        for w in range(V):
            zero, one = [], []
            for q in range(P):
                c, back = credit[q][w], self.cred_in[q][w]
                u = c.as_unsigned()
                zero.append(~c[-1] | back)
                one.append((~c[-1] & u[:-1].any()) | (~u.any() & back))
            ahead[0].append(_named(m, Cat(zero) & ~full, f"ahead0_{w}"))
            ahead[1].append(_named(m, Cat(one) & ~full, f"ahead1_{w}"))

        # -- the bids (round robin; see _bid_allocate) ------------------------------------
        # ``head_bids[q]``, bit w: some input's registered bid is that of a unicast head that
        # takes VC w of output q (a packet of several flits; on the local output, which
        # carries one packet at a time, any VC). It may be granted now, so no other unicast
        # head bids for that VC next cycle, nor does the multicast candidate take it now
        # (nor one that a one-flit packet's head bids for: ``head_bids_any``, so that none
        # spends a credit the candidate counted on): then no grant needs checking against a
        # head granted or a VC taken since the bid was made (such a check, after the output
        # arbiters, was on the slowest path), and the bid of a head that takes a VC is never
        # kept for a second cycle (see _bid_allocate).
        occupied = busy
        head_bids = None
        if cfg.allocator == "round_robin":
            bid = [Signal(P, name=f"bid{p}") for p in range(P)]
            bid_head = [Signal(V, name=f"bid_head{p}") for p in range(P)]
            bid_single = [Signal(V, name=f"bid_single{p}") for p in range(P)]

            def bids_for(which, name):
                return [_named(m, _any_of([Mux(bid[p][q], which[p], 0) for p in range(P)]),
                               f"{name}{q}") for q in range(P)]

            head_bids = bids_for(bid_head, "head_bids")
            head_bids[0] = head_bids[0].any().replicate(V)
            # (per VC on every output: for credits, see ``ahead_head`` below)
            single_bids = bids_for(bid_single, "head_bids_any")
            head_bids_any = [single_bids[0].any().replicate(V), *single_bids[1:]]
        else:
            # iSLIP: every input VC's registered request, and the VC it is a unicast head's
            # for (see _islip_allocate)
            wants = {key: Signal(P, name=f"want_r{key[0]}_{key[1]}") for key in requesters}
            head_of = {key: Signal(V, name=f"want_head{key[0]}_{key[1]}")
                       for key in requesters}
            single_bids = [_named(m, _any_of([Mux(wants[key][q], head_of[key], 0)
                                              for key in requesters]), f"head_reqs{q}")
                           for q in range(P)]
        # ``ahead_head[w]``, bit q: the credit outlook of a head's bid for VC w of output q.
        # A one-flit packet's head takes no VC, so it may spend a credit of an idle VC that
        # another head bids for; a head bidding now on the same VC may: then the bid needs
        # a credit after one is spent (``ahead[1]``). Only such heads spend on an idle VC.
        # Where an output VC has two credits or more, a head always counts on one being
        # spent (no test of the other bids on the allocation's slowest path): it then waits
        # a cycle only when the VC is down to its last credit. On ports of one credit the
        # exact test stays.
        ahead_head = [_named(m, Cat(ahead[1][w][q] if cfg.credits[q] > 1 else
                                    Mux(single_bids[q][w], ahead[1][w][q], ahead[0][w][q])
                                    for q in range(P)), f"ahead_head{w}") for w in range(V)]
        if head_bids is not None:
            occupied = [_named(m, busy[q] | head_bids[q], f"occupied{q}") for q in range(P)]

        # -- the multicast candidate (see the module docstring) --------------------------
        vc_taken = occupied
        if cfg.multicasts:
            mc_pend = Signal()
            mc_who = Signal(len(requesters))
            mc_need = [Signal(V, name=f"mc_need{q}") for q in range(P)]
            vc_taken = [_named(m, occupied[q] | Mux(mc_pend, mc_need[q], 0), f"vc_taken{q}")
                        for q in range(P)]
            # The local output carries one packet at a time, whatever its VC: the endpoints
            # reassemble packets without per-VC state. Safe, because ejection is a sink.
            # closed[q]: the VCs of output q a multicast cannot take, being busy or short of
            # ``multicast_credits`` (on the local output, any VC's counts for all of them);
            # the counters hold credits less one, so "less than" is the sign or an unsigned
            # comparison (Verilator's lint rejects a signed one with a narrower constant)
            closed = [_named(m, busy[q] | Cat(
                c[-1] | (c.as_unsigned() < cfg.multicast_credits - 1) for c in credit[q]),
                f"mc_closed{q}") for q in range(P)]
            # The candidate takes its VCs if none was taken since its bid, none lost the
            # credits it counted (a one-flit packet spends a credit without taking the VC),
            # and no unicast head bids for one now.
            mc_occupied = closed if head_bids is None else [
                closed[q] | head_bids_any[q] for q in range(P)]

            def clear_of(blocked):
                # none of the candidate's VCs is in ``blocked`` (on the local output, none is)
                return Cat(~mc_need[0].any() | ~blocked[0].any(),
                           *(~mc_need[q] | ~blocked[q] for q in range(1, P))).all()

            complete = _named(m, clear_of(mc_occupied), "complete")

        # -- input side: route lookup, buffers, per-VC state ----------------------------
        bufs, fronts, valid, states, prios, cur_vcs, new_front = [], {}, {}, {}, {}, {}, {}
        for p in range(P):
            inp = self.inp[p]
            arriving = data.View(f.header, inp.payload.data[:f.header_bits])
            lookup = self._table(m, p, Cat(arriving.dst, arriving.mcast))
            if cfg.block_tables:
                # The route appears a cycle after the address: so does the flit.
                flit, flit_valid = Signal.like(inp.payload), Signal()
                m.d.sync += [flit.eq(inp.payload), flit_valid.eq(inp.valid)]
            else:
                flit, flit_valid = inp.payload, inp.valid
            header = data.View(f.header, flit.data[:f.header_bits])
            if self.buffers is None:
                m.submodules[f"buf{p}"] = buf = self.input_buffer(cfg)
            else:
                buf = instantiate(m, f"buf{p}", self.buffers,
                                  InputBuffer.signature_of(f.flit, ctrl, V, _ored_local(cfg),
                                                          bool(cfg.whole_inputs)),
                                  {"sync": "sync"})
            bufs.append(buf)
            # Every flit of a packet is written with its head's route (``carried``, per VC), so
            # that the front of a queue always shows its packet's route and no copy of it is
            # kept at the front when the head leaves.
            # (without multicast, only the first port's VC is kept: see _control_layout)
            route = buf.w_ctrl.route
            entry = Cat(lookup.route.mask, lookup.route.vcs[:len(route.vcs)])
            carried = [Signal(len(entry), name=f"carried{p}_{v}") for v in range(V)]
            for v in range(V):
                with m.If(flit_valid & flit.head & (flit.vc == v)):
                    m.d.sync += carried[v].eq(entry)
            m.d.comb += route.eq(Mux(flit.head, entry, _one_hot_or(
                [(flit.vc == v, carried[v]) for v in range(V)])))
            m.d.comb += [
                buf.w_flit.eq(flit),
                buf.w_ctrl.multi.eq(lookup.multi), buf.w_ctrl.tail.eq(flit.tail),
                buf.w_en.eq(flit_valid),
            ]
            if levels > 1:
                m.d.comb += buf.w_ctrl.prio.eq(header.prio)
            for v in range(V):
                fr = buf.front[v]
                st = _VcState(f, P, name=f"{p}_{v}")
                fronts[p, v], valid[p, v], states[p, v] = fr, buf.valid[v], st
                # a flit written into an empty queue: a new front next cycle
                new_front[p, v] = flit_valid & (flit.vc == v) & ~buf.valid[v]
                prios[p, v] = _named(m, Mux(st.active, st.prio, fr.prio), f"prio{p}_{v}") \
                    if levels > 1 else 0
                cur = fr.route.vcs
                # (without multicast, one VC for every port)
                cur_vcs[p, v] = cur if cfg.multicasts else cur.replicate(P)

        def vc_of(key, q):
            return cur_vcs[key][q * vb:(q + 1) * vb]

        # The per-output logic of an input VC is written on P-bit vectors (bit q for output
        # q) rather than output by output: the same gates, but a few wide expressions per
        # input VC instead of a few per input VC and output, which for 64 ports Amaranth
        # would take minutes to lower. ``vc_is[key][w]``: the outputs where ``key`` uses
        # VC ``w`` (none where its VC field names no VC).
        vc_is = {}
        for p, v in requesters:
            planes = [Cat(cur_vcs[p, v][q * vb + b] for q in range(P)) for b in range(vb)]
            vc_is[p, v] = [_named(m, _all_of([pl if w >> b & 1 else ~pl
                                              for b, pl in enumerate(planes)]),
                                  f"vc_is{p}_{v}_{w}") for w in range(V)]

        def per_vc(key, vectors):
            # bit q: bit q of ``vectors[w]`` for the VC ``w`` that ``key`` uses on output q
            return _any_of([vc_is[key][w] & vectors[w] for w in range(V)])

        def taken_by(key, taken):
            # bit q: the output VC ``key`` needs on q is taken; on the local port, any VC
            return Cat(taken[0].any(), per_vc(key, [
                Cat(taken[q][w] for q in range(P)) for w in range(V)])[1:])

        # ``closing``: the packet that holds the local output has its tail at its front, so
        # the output may be free from the next cycle. Unicast heads then bid for it already
        # (``free0``), so that the next packet follows the tail with no idle cycle; the
        # allocators keep a head's bid off the local output while it is still held
        # (``ctx.held0``, a register: set when the tail was not sent after all).
        closing = _named(m, _any_of([states[key].active & valid[key] & fronts[key].tail
                                     & fronts[key].route.mask[0] for key in requesters]),
                         "closing0")
        free0 = _named(m, ~(vc_taken[0] & ~busy[0]).any() & (~busy[0].any() | closing), "free0")
        # ``head_go[w]``, bit q: a unicast head may bid for VC w of output q: the VC is not
        # taken (on the local output, no VC is) and has the credit (``ahead_head``). Once per
        # output VC rather than per input VC.
        head_go = [_named(m, Cat(free0 & ahead_head[w][0], *(
            ~vc_taken[q][w] & ahead_head[w][q] for q in range(1, P))), f"head_go{w}")
            for w in range(V)]

        # A head from a slow link may take the local output once its packet's tail is in
        # its buffer, or while that output has been quiet for ``cfg.quiet`` cycles: the
        # output carries one packet at a time, and a packet still streaming in over a link
        # much slower than the router holds it for its whole arrival (docs/hardware.md,
        # "Under load").
        if cfg.whole_inputs:
            idle0 = Signal(range(cfg.quiet + 1), name="idle0", init=cfg.quiet)
            with m.If(self.out[0].valid | busy[0].any()):
                m.d.sync += idle0.eq(0)
            with m.Elif(idle0 != cfg.quiet):
                m.d.sync += idle0.eq(idle0 + 1)
            quiet = _named(m, idle0 == cfg.quiet, "quiet0")

            def ready0(p, v):
                return bufs[p].whole[v] | quiet if p in cfg.whole_inputs else Const(1)
        else:
            def ready0(p, v):
                return Const(1)

        # -- stage A: every input VC's request, for the bid of the next cycle -------------
        # ``want[key]``: an active VC bids for the branches it has not sent yet; an idle VC
        # with a unicast head at its front bids for its output if that output VC is idle.
        # ``then[key]`` (iSLIP only): the outputs the flit behind the front bids for if the
        # front is sent now, known only while it belongs to the same packet.
        want, then, uni_heads, heads = {}, {}, {}, {}
        for p, v in requesters:
            fr, st = fronts[p, v], states[p, v]
            uni_head = uni_heads[p, v] = _named(
                m, valid[p, v] & ~st.active & ~fr.multi, f"uni_head{p}_{v}")
            # no U-turns: a link input never bids for its own output
            others = Const(((1 << P) - 1) ^ (1 << p if p else 0), P)
            want[p, v] = _named(m, others & (
                Mux(st.active & valid[p, v], fr.route.mask & ~st.sent & per_vc((p, v), ahead[0]),
                    0)
                | Mux(uni_head, fr.route.mask & per_vc((p, v), head_go)
                      & Cat(ready0(p, v), Const(-1, P - 1)), 0)), f"want{p}_{v}")
            if cfg.allocator == "islip":
                cur_mask = fr.route.mask
                follows = bufs[p].more[v] & ~fr.tail & (st.active | uni_head)
                then[p, v] = _named(m, Mux(follows, others & cur_mask
                                           & per_vc((p, v), ahead[1]), 0), f"then{p}_{v}")
                heads[p, v] = Cat(uni_head & (vc_is[p, v][w] & fr.route.mask).any()
                                  for w in range(V))

        if cfg.multicasts:
            # a multicast head that takes its VCs now bids for its branches next cycle
            for i, key in enumerate(requesters):
                new_front[key] = new_front[key] | (mc_pend & mc_who[i] & complete)
        ctx = SimpleNamespace(P=P, V=V, levels=levels, want=want, then=then, new_front=new_front,
                              held0=busy[0].any(),
                              uni_heads=uni_heads, heads=heads, prios=prios, taken=vc_taken,
                              stall=full, in_ok=in_ok, bufs=bufs, fronts=fronts,
                              states=states, vc_is=vc_is, ahead=ahead)
        if cfg.allocator == "round_robin":
            ctx.bid, ctx.bid_head, ctx.bid_single = bid, bid_head, bid_single
            ctx.head_bids = head_bids
            chosen, grant, bid_update = self._bid_allocate(m, ctx)
        else:
            ctx.wants, ctx.head_of = wants, head_of
            chosen, grant, bid_update = self._islip_allocate(m, ctx)

        # -- what was granted: read address per input, stage per output, credits, owners ---
        granted_to = [_named(m, Cat(grant[q][p] for q in range(P)), f"granted_to{p}")
                      for p in range(P)]
        for p in range(P):
            m.d.comb += [bufs[p].read.eq(granted_to[p].any()), bufs[p].read_vc.eq(Cat(
                Cat(chosen[p][v] for v in range(V) if v >> b & 1).any()
                for b in range(len(bufs[p].read_vc))))]
        chosen_all = Cat(chosen[p][v] for p, v in requesters)
        # Head and tail of the flit each input sends (if any), chosen once per input and
        # shared by every output, rather than picked from all input VCs per output.
        heads = _named(m, Cat(_any_of([chosen[p][v] & ~states[p, v].active for v in range(V)])
                              for p in range(P)), "chosen_head")
        tails = _named(m, Cat(_any_of([chosen[p][v] & fronts[p, v].tail for v in range(V)])
                              for p in range(P)), "chosen_tail")
        # without multicast, the VC each input sends on (the same on every port)
        in_vc = None if cfg.multicasts else [
            _named(m, _any_of([Mux(chosen[p][v], cur_vcs[p, v][:vb], 0) for v in range(V)]),
                   f"in_vc{p}") for p in range(P)]
        for q in range(P):
            # the input VC whose flit goes to output q, one-hot over ``requesters``
            pick = _named(m, Cat(grant[q][p] for p, v in requesters) & chosen_all, f"pick{q}")
            if cfg.multicasts:
                sent_vc = _named(m, Cat(
                    (pick & Cat(vc_of(key, q)[b] for key in requesters)).any()
                    for b in range(vb)), f"sent_vc{q}")
            else:
                sent_vc = _named(m, _any_of([Mux(grant[q][p], in_vc[p], 0) for p in range(P)]),
                                 f"sent_vc{q}")
            head = _named(m, (Cat(grant[q]) & heads).any(), f"sent_head{q}")
            tail = _named(m, (Cat(grant[q]) & tails).any(), f"sent_tail{q}")
            send = _named(m, Cat(grant[q]).any(), f"send{q}")
            with m.If(self.out[q].ready):
                m.d.sync += self.out[q].valid.eq(0)
            with m.If(send):
                m.d.sync += self.out[q].valid.eq(1)
            # Traversal (never input q itself on a link port, so link outputs mux P - 1
            # inputs): the flit read now into the output register, or with ``held`` the
            # read register of the input granted last, through the crossbar. One case per
            # source rather than a tree of 2:1 muxes: the netlist then holds each flit-wide
            # source once, where a tree adds a flit-wide mux per source (for 64 ports and
            # 256-bit flits, a million bits that Amaranth lowers slowly). The last source
            # also takes the index values no grant produces.
            sources = _others(P, q)
            index = Signal(range(len(sources)), name=f"index{q}")
            choice = Cat(Cat(grant[q][p] for i, p in enumerate(sources) if i >> b & 1).any()
                         for b in range(len(index)))
            payload = self.out[q].payload
            if not held:
                m.d.comb += index.eq(choice)
                with m.If(send):
                    m.d.sync += payload.vc.eq(sent_vc)
                    with m.Switch(index):
                        for i, p in enumerate(sources):
                            with m.Case(i) if i + 1 < len(sources) else m.Default():
                                m.d.sync += [payload.data.eq(bufs[p].data.data),
                                             payload.head.eq(bufs[p].data.head),
                                             payload.tail.eq(bufs[p].data.tail)]
            else:
                with m.If(self.out[q].ready):
                    m.d.sync += stage[q].eq(0)
                with m.If(send):
                    m.d.sync += [stage[q].eq(Cat(grant[q])), stage_vc[q].eq(sent_vc),
                                 index.eq(choice)]
                m.d.comb += payload.vc.eq(stage_vc[q])
                if q == 0 and _ored_local(cfg):
                    # Every input's copy of the flit read for this output is zero but the
                    # shown one's (see InputBuffer's ``local``).
                    for p in sources:
                        m.d.comb += [bufs[p].local_read.eq(grant[q][p]),
                                     bufs[p].local_hold.eq(stage[q][p] & stall[q])]
                    flit = _any_of([bufs[p].local_data.as_value() for p in sources])
                    m.d.comb += [payload.data.eq(flit[:f.width]),
                                 payload.head.eq(flit[f.width]),
                                 payload.tail.eq(flit[f.width + 1])]
                else:
                    with m.Switch(index):
                        for i, p in enumerate(sources):
                            with m.Case(i) if i + 1 < len(sources) else m.Default():
                                m.d.comb += [payload.data.eq(bufs[p].data.data),
                                             payload.head.eq(bufs[p].data.head),
                                             payload.tail.eq(bufs[p].data.tail)]
            for w in range(V):
                spend = send & (sent_vc == w)
                with m.If(spend ^ self.cred_in[q][w]):
                    # one adder of 1 or -1 (all ones) rather than two and a multiplexer
                    c = credit[q][w]
                    m.d.sync += c.eq(c + Cat(1, spend.replicate(len(c) - 1)))
                # A unicast head takes the output VC, the tail gives it back (one enable for
                # both, shared with the credit's).
                with m.If(spend):
                    m.d.sync += busy[q][w].eq(~tail & (head | busy[q][w]))

        # -- per input VC: dequeue, state, drops, credit return -----------------------------
        # A popped flit's slot is free (and its credit returned) once its last read is no
        # longer needed: at once when the flit went to an output register; with ``held``
        # once its last traversal is done (``release[p]``: the VC of the flit input p last
        # popped after a grant).
        release = [Signal(V, name=f"release{p}") if held else Const(0, V) for p in range(P)]
        for p in range(P):
            if held:
                with m.If(in_ok[p]):
                    m.d.sync += release[p].eq(0)
        # Unroutable heads start being dropped one at a time, each input VC in its turn
        # (``turn``, one-hot, rotating), so ``dropped`` counts by one with no adder tree.
        turn = Signal(len(requesters), init=1)
        m.d.sync += turn.eq(turn.rotate_left(1))
        # The flit an input sends is done (popped) when it has been sent on every branch: a
        # unicast head's one branch, or an active VC's branches not sent yet (registers).
        popped = []
        for p in range(P):
            sent = granted_to[p].any()
            if cfg.multicasts:
                rest = _any_of([Mux(chosen[p][v] & states[p, v].active,
                                    fronts[p, v].route.mask & ~states[p, v].sent, 0)
                                for v in range(V)])
                sent = sent & ~(rest & ~granted_to[p]).any()
            popped.append(_named(m, sent, f"popped{p}"))
        drops = []
        for i, (p, v) in enumerate(requesters):
            fr, st = fronts[p, v], states[p, v]
            granted = _named(m, Mux(chosen[p][v], granted_to[p], 0), f"granted{p}_{v}")
            dequeue = _named(m, chosen[p][v] & popped[p], f"deq{p}_{v}")
            dropping = Signal(name=f"dropping{p}_{v}")
            take_vcs = [st.active.eq(1), st.prio.eq(prios[p, v])]
            with m.If(st.active & (fr.route.mask == 0)):
                # dropping an unroutable packet, one flit a cycle when no credit of this
                # VC is being returned for a sent flit
                m.d.comb += dropping.eq(valid[p, v] & ~(release[p][v] & in_ok[p]))
            with m.Elif(granted.any() & ~st.active & ~fr.tail):   # a unicast head took its VC
                m.d.sync += take_vcs
            m.d.comb += bufs[p].pop[v].eq(dequeue | dropping)
            if held:
                m.d.sync += self.cred_out[p][v].eq(dropping | (release[p][v] & in_ok[p]))
                with m.If(dequeue):
                    m.d.sync += release[p][v].eq(1)
            else:
                m.d.sync += self.cred_out[p][v].eq(dropping | dequeue)
            with m.If((dequeue | dropping) & fr.tail):
                m.d.sync += st.active.eq(0)
            if cfg.multicasts:
                # (otherwise no branch is ever sent before its flit is done: `sent` stays 0)
                with m.If(dequeue | dropping):
                    m.d.sync += st.sent.eq(0)
                with m.Elif(granted.any()):
                    m.d.sync += st.sent.eq(st.sent | granted)
                with m.If(mc_pend & mc_who[i] & complete):
                    # the candidate's output VCs are all still idle: it takes them
                    m.d.sync += [*take_vcs, st.sent.eq(0)]
            drop = turn[i] & valid[p, v] & ~st.active & (fr.route.mask == 0)
            drops.append(drop)
            with m.If(drop):
                m.d.sync += st.active.eq(1)

        bid_update(popped, granted_to)

        # -- multicast VC allocation --------------------------------------------------------
        if cfg.multicasts:
            # The bids are registered, so that looking at the fronts and the round robin
            # among all input VCs are a cycle each. A registered bid stays true: a multicast
            # head waits at its front until it takes its VCs (which withdraws its bid).
            # With one priority level, every multicast head bids, and the winner is tested
            # the cycle after it won (``mc_sel``), on its registered needs: if one of its VCs
            # is closed, the round robin, which moved past it, tries the next head, and no
            # unicast head was kept off its VCs. With priorities, a head of the higher class
            # that cannot go would win every time and keep the lower class's heads that could
            # waiting, a wait the deadlock proof does not model: a head then bids only when
            # all its VCs are open, a test per input VC (66 xc7 LUTs for the bench's router)
            # that the winner need not repeat.
            if levels > 1:
                def bids(key):
                    return ~(fronts[key].route.mask & taken_by(key, closed)).any()
                mc_sel = Const(0)
            else:
                def bids(key):
                    return 1
                mc_sel = Signal()
            mc_bid = Signal(len(requesters))
            m.d.sync += mc_bid.eq(Cat(
                valid[key] & ~states[key].active & fronts[key].multi
                & bids(key) & ~(mc_pend & mc_who[i] & complete)
                for i, key in enumerate(requesters)))
            m.submodules.mc_arb = mc_arb = RoundRobin(len(requesters), levels)
            if levels > 1:
                m.d.comb += mc_arb.priority.eq(Cat(prios[key] for key in requesters))
            waiting = mc_sel | mc_pend
            m.d.comb += [mc_arb.requests.eq(mc_bid), mc_arb.advance.eq(~waiting)]
            # need[w]: the outputs where the granted multicast head needs VC w
            need = [_named(m, _any_of([Mux(mc_arb.grant[i], fronts[key].route.mask & vc_is[key][w],
                                           0) for i, key in enumerate(requesters)]), f"need{w}")
                    for w in range(V)]
            with m.If(~waiting & mc_arb.grant.any()):
                m.d.sync += [(mc_pend if levels > 1 else mc_sel).eq(1), mc_who.eq(mc_arb.grant)]
                for q in range(P):
                    m.d.sync += mc_need[q].eq(Cat(need[w][q] for w in range(V)))
            if levels == 1:
                with m.If(mc_sel):
                    m.d.sync += [mc_sel.eq(0), mc_pend.eq(clear_of(closed))]
            with m.If(mc_pend):
                m.d.sync += mc_pend.eq(0)       # claimed, or given up if a VC went meanwhile
            with m.If(mc_pend & complete):
                for q in range(P):
                    for w in range(V):
                        with m.If(mc_need[q][w]):   # bit by bit: a tail may free another VC
                            m.d.sync += busy[q][w].eq(1)

        dropped = Signal(16)
        m.d.comb += self.dropped.eq(dropped)
        with m.If(Cat(drops).any() & ~dropped.all()):
            m.d.sync += dropped.eq(dropped + 1)
        return m

    def _table(self, m, p, address):
        """Input ``p``'s route table, looked up at ``address``: the entry (a view of
        :func:`~optnet.plan.configs.table_layout`) in the same cycle, or with
        ``block_tables`` in the next."""
        cfg = self.config
        layout = table_layout(cfg)
        attrs = {"ram_style": "block"} if cfg.block_tables else None
        m.submodules[f"table{p}"] = table = memory.Memory(
            shape=cfg.table_width, depth=cfg.table_words, init=route_table(cfg, p),
            attrs=attrs)
        lookup = table.read_port(domain="sync" if cfg.block_tables else "comb")
        m.d.comb += lookup.addr.eq(address)
        if cfg.block_tables and p == 0:
            # The RAM's second port reads the id word, constantly.
            id_port = table.read_port()
            m.d.comb += [id_port.addr.eq(cfg.table_words - 1),
                         self.node_id.eq(id_port.data[:cfg.fmt.id_bits])]
        return data.View(layout, lookup.data[:layout.size])

    def _bid_allocate(self, m, ctx):
        """Separable input-first round robin over two cycles (see the module docstring).

        Each input holds a registered bid: the VC it sends from (``bid_vc``), the outputs
        that VC's front flit requests (``ctx.bid``) and whether that flit is a unicast head
        (``ctx.bid_single``) of a packet that takes the VC (``ctx.bid_head``). Stage B
        (this cycle) arbitrates the outputs among the bids and checks, after the arbiters,
        only that the output and the input's read register are free. Stage A (this cycle
        too, from other registers) prepares the next bids: the same bid less what was sent
        if the flit stays (not a unicast head's), the next flit's if it leaves and its
        packet goes on, else a round-robin choice among the input's other VCs. A VC so
        keeps its input while its packet goes on. Returns ``chosen[p][v]`` (the VC input
        ``p`` bids from, a register), ``grant[q][p]`` and the function that registers the
        next bids from ``popped`` and ``granted_to``.
        """
        P, V, levels = ctx.P, ctx.V, ctx.levels
        pb = self.config.fmt.prio_bits
        sources = [_others(P, q) for q in range(P)]
        # the VC (one-hot; kept when the bid is withdrawn, as the round robin's pointer)
        bid_vc = [Signal(V, name=f"bid_vc{p}", init=1 << (V - 1)) for p in range(P)]
        # ``bid[p]``: its outputs; ``bid_head[p]``, ``bid_single[p]``: one-hot, the VC a
        # unicast head bids for if it takes the VC (a packet of several flits), and if it
        # is any unicast head, meaningful only while it bids; made by the caller, which
        # needs them earlier
        bid, bid_head, bid_single = ctx.bid, ctx.bid_head, ctx.bid_single
        bid_prio = [Signal(pb, name=f"bid_prio{p}") for p in range(P)]

        # -- stage B: an arbiter per output over the bids, then the checks ----------------
        # A link output never takes its own input's flits (no U-turns): its arbiter leaves
        # that requester out rather than get a request that is always 0 (the arbiters are
        # lowered apart, so synthesis would not see the constant). ``_widen`` puts the
        # grants back in place. An arbiter's pointer moves whenever its output is free: a
        # winner that fails a check has had its turn.
        grant, out_arb = [], []
        for q in range(P):
            m.submodules[f"sa_out{q}"] = arb = RoundRobin(len(sources[q]), levels)
            out_arb.append(arb)
            # (a head's bid for the local output counts once the packet holding it is gone)
            held = ctx.held0 if q == 0 else Const(0)
            m.d.comb += [arb.requests.eq(Cat(bid[p][q] & ~(held & bid_single[p].any())
                                             for p in sources[q])),
                         arb.advance.eq(~ctx.stall[q])]
            if levels > 1:
                m.d.comb += arb.priority.eq(Cat(bid_prio[p] for p in sources[q]))
        for q in range(P):
            grant.append(_named(m, _widen(out_arb[q].grant, sources[q], P) & ctx.in_ok
                                & ~ctx.stall[q].replicate(P), f"grant{q}"))
        chosen = [[bid_vc[p][v] for v in range(V)] for p in range(P)]

        # -- stage A: what each input bids next -------------------------------------------
        nxt = []
        for p in range(P):
            b, bidding = bid_vc[p], _named(m, bid[p].any(), f"bidding{p}")
            want = [ctx.want[p, v] for v in range(V)]
            pr = [ctx.prios[p, v] for v in range(V)]
            # The new choice is made among the VCs that may bid (``may_bid``, a register):
            # those that wanted to in the cycle before, or have a new front (a flit written
            # into an empty queue, a multicast head that took its VCs). The requests of
            # this cycle then only select the chosen VC's bid rather than decide the choice
            # too, which put the requests, the arbitration among the VCs and the bid's
            # multiplexer on one path. A VC that cannot bid after all makes an empty bid for
            # a cycle (and is not chosen again until it wants to: a head that cannot bid is
            # never chosen over and over, which with priorities would keep the input's
            # other VCs from ever bidding). A packet that gives its output VC back with
            # this tail leaves its VC unable to bid next cycle: the next head behind it
            # then chooses in the same cycle as a head that waited for that VC on another
            # input, and the two bid together; otherwise the next head would always bid
            # first and keep the waiting head off the VC (``head_bids``) for good.
            fr = [ctx.fronts[p, v] for v in range(V)]
            st = [ctx.states[p, v] for v in range(V)]
            may_bid = Signal(V, name=f"may_bid{p}")
            m.d.sync += may_bid.eq(Cat(
                (want[v].any() & ~(b[v] & bidding & st[v].active & fr[v].tail))
                | ctx.new_front[p, v] for v in range(V)))
            # (among the VCs but the bidding one, the VC after it first)
            choice = _named(m, round_robin_grant(
                Cat(may_bid[v] & ~(b[v] & bidding) for v in range(V)), b, pr, levels),
                f"choice{p}")
            fresh = _named(m, _any_of([Mux(choice[v], want[v], 0) for v in range(V)]),
                           f"fresh{p}")
            # (a unicast entry has the same VC on every port: port 0's says which)
            single = Cat(_any_of([choice[v] & ctx.uni_heads[p, v] & ctx.vc_is[p, v][w][0]
                                  for v in range(V)]) for w in range(V))
            head = single & ~_any_of([choice[v] & ctx.fronts[p, v].tail
                                      for v in range(V)]).replicate(V)
            prio = (_any_of([Mux(choice[v], pr[v], 0) for v in range(V)]) if levels > 1
                    else Const(0, pb))
            # The bidding VC's next flit, if it belongs to the same packet: the packet's
            # outputs, each with a credit even if one is spent now.
            # (a unicast packet's outputs are its bid's; an active multicast's, its mask)
            goes_on = _any_of([b[v] & ctx.bufs[p].more[v] & ~fr[v].tail for v in range(V)])
            if self.config.multicasts:
                route = bid[p] | _any_of([Mux(b[v] & st[v].active, fr[v].route.mask, 0)
                                          for v in range(V)])
                on = [_any_of([Mux(b[v], ctx.vc_is[p, v][w], 0) for v in range(V)])
                      for w in range(V)]
                credit = _any_of([on[w] & ctx.ahead[1][w] for w in range(V)])
            else:
                # A unicast flit that was popped had its one output in its bid, and its
                # packet has one VC on every port (port 0's field): the VC is chosen once
                # per input, not per output.
                route = bid[p]
                on = [_named(m, _any_of([b[v] & ctx.vc_is[p, v][w][0] for v in range(V)]),
                             f"follow_vc{p}_{w}") for w in range(V)]
                credit = _any_of([on[w].replicate(P) & ctx.ahead[1][w] for w in range(V)])
            follow = _named(m, route & credit, f"follow{p}")
            nxt.append((bidding, choice, fresh, head, single, prio, follow, goes_on))

        def update(popped, granted_to):
            for p in range(P):
                bidding, choice, fresh, head, single, prio, follow, more = nxt[p]
                renew = _named(m, popped[p] | ~bidding, f"renew{p}")
                goes_on = _named(m, popped[p] & more, f"goes_on{p}")
                # The same bid again if the flit was not sent; withdrawn if it was sent on
                # some branches only (the rest are bid from the next cycle), if its input's
                # read register is held, or if it is a unicast head's: a head bids for one
                # cycle only (``head_bids`` keeps others off its VC for that cycle alone),
                # and chooses again from the VCs' state, which shows any VC taken meanwhile.
                kept = Mux(ctx.in_ok[p] & ~granted_to[p].any() & ~bid_single[p].any(), bid[p], 0)
                m.d.sync += bid[p].eq(Mux(renew, Mux(goes_on, follow, fresh), kept))
                with m.If(renew & ~goes_on):
                    m.d.sync += [bid_vc[p].eq(choice), bid_head[p].eq(head),
                                 bid_single[p].eq(single), bid_prio[p].eq(prio)]
                with m.If(goes_on):
                    m.d.sync += [bid_head[p].eq(0), bid_single[p].eq(0)]

        return chosen, grant, update

    def _islip_allocate(self, m, ctx):
        """One iteration of iSLIP on every input VC's registered request: outputs grant
        among requesting inputs, each input accepts one granted output, then picks the VC
        that sends; pointers move only on accepted grants. The requests are computed a cycle
        ahead as in :meth:`_bid_allocate` (every VC's, in both cases: its flit sent or not),
        the accept and the VC choice stay in the allocation cycle. Same returns."""
        P, V, levels = ctx.P, ctx.V, ctx.levels
        requesters = [(p, v) for p in range(P) for v in range(V)]
        sources = [_others(P, q) for q in range(P)]
        wants, head_of = ctx.wants, ctx.head_of
        taken = [Cat(ctx.taken[0].any() if q == 0 else ctx.taken[q][w] for q in range(P))
                 for w in range(V)]
        want = {key: _named(m, wants[key] & ~_any_of([head_of[key][w].replicate(P) & taken[w]
                                                      for w in range(V)])
                            & ~ctx.stall & ctx.in_ok[key[0]].replicate(P),
                            f"want_ok{key[0]}_{key[1]}")
                for key in requesters}
        chosen = [[Signal(name=f"chosen{p}_{v}") for v in range(V)] for p in range(P)]
        out_arb, in_arb, accept = [], [], []
        for q in range(P):
            m.submodules[f"sa_out{q}"] = arb = RoundRobin(len(sources[q]), levels)
            out_arb.append(arb)
        for p in range(P):
            m.submodules[f"sa_in{p}"] = arb = RoundRobin(V, levels)
            in_arb.append(arb)
            if levels > 1:
                m.d.comb += arb.priority.eq(Cat(ctx.prios[p, v] for v in range(V)))
            m.submodules[f"sa_acc{p}"] = arb = RoundRobin(len(sources[p]))
            accept.append(arb)
        port_prio = [Signal(self.config.fmt.prio_bits, name=f"port_prio{p}") for p in range(P)]
        for p in range(P):
            # The highest priority among the VCs that want an output, as a chain of
            # maxima: comparing with the signal being assigned would be a combinational loop.
            best = Const(0, port_prio[p].shape())
            for v in range(V):
                best = Mux(want[p, v].any() & (ctx.prios[p, v] > best), ctx.prios[p, v], best)
            m.d.comb += port_prio[p].eq(best)
        # wants_of[p]: the outputs some VC of input p wants
        wants_of = [_named(m, _any_of([want[p, v] for v in range(V)]), f"wants{p}")
                    for p in range(P)]
        for q in range(P):
            arb = out_arb[q]
            m.d.comb += arb.requests.eq(Cat(wants_of[p][q] for p in sources[q]))
            if levels > 1:
                m.d.comb += arb.priority.eq(Cat(port_prio[p] for p in sources[q]))
        offered = [_widen(arb.grant, sources[q], P) for q, arb in enumerate(out_arb)]
        bids, accepted = [], []
        for p in range(P):
            # (an input's own link output never offers it a grant: ``sources`` is symmetric)
            m.d.comb += accept[p].requests.eq(Cat(offered[q][p] for q in sources[p]))
            acc = _widen(accept[p].grant, sources[p], P)
            accepted.append(acc)
            # The VC sent from: round robin among this input's VCs that want the accepted
            # output; a multicast VC also uses any other output granted to this input.
            m.d.comb += in_arb[p].requests.eq(Cat(
                (want[p, v] & acc).any() for v in range(V)))
            m.d.comb += in_arb[p].advance.eq(acc.any())
            m.d.comb += accept[p].advance.eq(1)
            for v in range(V):
                m.d.comb += chosen[p][v].eq(in_arb[p].grant[v])
            bids.append(_named(m, _any_of([Mux(chosen[p][v], want[p, v], 0)
                                           for v in range(V)]), f"bids{p}"))
        grant = [_named(m, offered[q] & Cat(bids[p][q] for p in range(P)), f"grant{q}")
                 for q in range(P)]
        for q in range(P):
            m.d.comb += out_arb[q].advance.eq(
                (grant[q] & Cat(accepted[p][q] for p in range(P))).any())

        def update(popped, granted_to):
            for p, v in requesters:
                with m.If(chosen[p][v] & popped[p]):
                    m.d.sync += [wants[p, v].eq(ctx.then[p, v]), head_of[p, v].eq(0)]
                with m.Else():
                    m.d.sync += [wants[p, v].eq(ctx.want[p, v] & ~Mux(chosen[p][v],
                                                                       granted_to[p], 0)),
                                 head_of[p, v].eq(ctx.heads[p, v])]

        return chosen, grant, update


class InputBuffer(wiring.Component):
    """The buffers of one router input: a queue per VC, one storage for all of them.

    Each queue is first-word-fall-through: its front's control fields (the router's: tail,
    several branches, priority, route) are read asynchronously from a small LUT RAM per VC
    at the read pointer, so they appear the cycle after the write, as a register copy
    would, without that copy's load multiplexer (a LUT per bit). Deeper than
    :data:`LUT_RAM_DEPTH` (deep mode), where that read takes several LUT RAM primitives per
    bit, they are kept in block RAM read synchronously, with the same fronts in the same
    cycles (:meth:`_deep_front`). Flit data sits in one memory of
    ``vcs * depth`` words per input. With ``sync_read`` its read port is synchronous:
    :attr:`read` reads a VC's front, which appears on :attr:`data` from the next cycle until
    the next :attr:`read`, so the router needs no latch or VC multiplexer per input besides
    the memory's own output register, and deep buffers become block RAM. Without, :attr:`data`
    is the front of :attr:`read_vc`'s queue in the same cycle (LUT RAM), for the router to
    register where it goes. Amaranth's FIFOs keep one memory per queue and expose no
    addresses, hence this component.

    A slot is reused only after its flit was popped and its last read is no longer needed
    (the router returns the credit for it then).

    Parameters
    ----------
    flit, ctrl : data.Layout
    vcs : int
    depth : int
        Slots per VC; above :data:`LUT_RAM_DEPTH` the control fields are in block RAM.
    block : bool, optional
        Flit storage in block RAM (see :attr:`~optnet.plan.configs.RouterConfig.block_buffers`).
    local : bool, optional
        A second, zeroed copy of the flit read for the local output (``local_*`` members),
        for a local output that ORs its inputs (only with ``sync_read``).
    sync_read : bool, optional
        The flit data is read synchronously (see above); by default.
    derived : dict of str to callable, optional
        Fields of ``ctrl`` that are not stored but computed, as ``derived[name](entry)``
        from the stored fields of the front entry (``w_ctrl``'s value of them is ignored).
    whole : bool, optional
        Count the tails in each queue, for :attr:`whole`.

    Members
    -------
    w_en : In(1)
        Append ``w_flit``/``w_ctrl`` to the queue of ``w_flit.vc``. The sender holds a
        credit, so the queue is never full.
    w_flit, w_ctrl : In(flit), In(ctrl)
    valid : Out(vcs)
        The queue of each VC is not empty.
    more : Out(vcs)
        The queue of each VC holds an entry behind its front.
    whole : Out(vcs)
        Only with ``whole``: the queue of each VC holds its front packet's tail.
    front : Out(ctrl).array(vcs)
        Control fields of each queue's front (meaningful when ``valid``).
    pop : In(vcs)
        Remove the front of these queues.
    read : In(1)
        Read the front of the queue of :attr:`read_vc` (the one before a ``pop`` of the
        same cycle); only with ``sync_read``.
    read_vc : In(range(max(vcs, 2)))
        (At least a bit wide: a zero-width port is not Verilog.)
    data : Out(flit)
        With ``sync_read``, the flit read last; without, the front of :attr:`read_vc`'s
        queue (its ``vc`` field reads as 0).
    local_read : In(1)
        Only with ``local``: this cycle's :attr:`read` is also for the local output.
    local_hold : In(1)
        Only with ``local``: keep the flit on :attr:`local_data` another cycle.
    local_data : Out(flit)
        Only with ``local``: the flit read for the local output from the cycle after
        :attr:`local_read` while :attr:`local_hold`, else zero (``vc`` reads as 0).
    """

    def __init__(self, flit: data.Layout, ctrl: data.Layout, vcs: int, depth: int,
                 derived: dict | None = None, block: bool = False, local: bool = False,
                 sync_read: bool = True, whole: bool = False):
        self.vcs, self.depth = vcs, depth
        self.sync_read = sync_read
        self.derived = dict(derived or {})
        self.block = block
        self.local = local
        self.whole_packets = whole
        super().__init__(self.signature_of(flit, ctrl, vcs, local, whole))

    @staticmethod
    def signature_of(flit: data.Layout, ctrl: data.Layout, vcs: int,
                     local: bool = False, whole: bool = False) -> wiring.Signature:
        """The signature of an input buffer of these layouts and ``vcs`` queues (with the
        ``local_*`` members if ``local``, :attr:`whole` if ``whole``)."""
        members = {
            "w_en": In(1), "w_flit": In(flit), "w_ctrl": In(ctrl),
            "valid": Out(vcs), "more": Out(vcs), "front": Out(ctrl).array(vcs),
            "pop": In(vcs), "read": In(1), "read_vc": In(range(max(vcs, 2))),
            "data": Out(flit),
        }
        if local:
            members.update({"local_read": In(1), "local_hold": In(1),
                            "local_data": Out(flit)})
        if whole:
            members["whole"] = Out(vcs)
        return wiring.Signature(members)

    def elaborate(self, platform):
        m = Module()
        V, D = self.vcs, self.depth
        ctrl = self.w_ctrl.shape()
        kept = data.StructLayout({name: field.shape for name, field in ctrl
                                  if name not in self.derived})
        # ``vc`` is not stored: the router rewrites it on the way out.
        stored = Cat(self.w_flit.data, self.w_flit.head, self.w_flit.tail)
        attrs = {"ram_style": "block"} if self.block else None
        # (addresses within the queues' words)
        raddr, raddr_low, waddr_low = [], Signal(range(V * D)), Signal(range(V * D))
        # With ``local``, the queues take the upper half of twice the words their addresses
        # span, and the lower half, never written, is zero, for the local copy to read when
        # it holds nothing (block RAM has the room).
        m.submodules.store = store = memory.Memory(
            shape=len(stored), depth=2 << len(raddr_low) if self.local else V * D, init=[],
            attrs=attrs)
        # A synchronous read port with enable: block RAM for deep buffers, LUT RAM and a
        # register for shallow ones.
        wport = store.write_port()
        rport = store.read_port(domain="sync" if self.sync_read else "comb")
        w = len(self.w_flit.data)
        # One enable and a VC number per port rather than one-hot vectors: the memory's
        # enables need no OR, and the address multiplexers select by the number.
        m.d.comb += [wport.data.eq(stored), wport.en.eq(self.w_en)]
        if self.sync_read:
            m.d.comb += rport.en.eq(self.read)
        outputs = [(self.data, rport.data)]
        if self.local:
            # A second copy of the flit read, for the local output alone, zero unless it
            # holds that output's flit: the local output, the one output with an input more
            # than a link output has, then takes the OR of every input's copy (a LUT per
            # bit) rather than a 5:1 multiplexer (two). The copy is a second read port (the
            # block RAM is duplicated, no LUT spent) that reads a zero word when it holds
            # nothing: a multiplexer or reset after the port would cost a LUT per bit.
            lport = store.read_port()
            m.d.comb += [lport.en.eq(self.local_read | ~self.local_hold),
                         lport.addr.eq(Cat(raddr_low, self.local_read))]
            outputs.append((self.local_data, lport.data))
        for flit, word in outputs:
            m.d.comb += [flit.data.eq(word[:w]), flit.head.eq(word[w]), flit.tail.eq(word[w + 1])]

        taps = _de_bruijn_taps(D.bit_length() - 1) if D > 1 and D & (D - 1) == 0 else None

        def wrap(ptr):
            # The slot after ``ptr``. Any order of the slots will do: with a power of two, a
            # shift register through all of them (a new bit from a LUT, the others moved
            # along) rather than an adder (a LUT per bit).
            if taps is None:
                return Mux(ptr == D - 1, 0, ptr + 1)
            low = ptr[:len(ptr) - 1]
            return Cat(_balanced(operator.xor, [ptr[t] for t in taps]) ^ ~low.any(), low)

        waddr = []
        deep = D > LUT_RAM_DEPTH
        for v in range(V):
            m.submodules[f"ctrl{v}"] = cmem = memory.Memory(
                shape=kept, depth=D, init=[], attrs={"ram_style": "block"} if deep else None)
            cw = cmem.write_port()
            wptr, rptr = Signal(range(D), name=f"wptr{v}"), Signal(range(D), name=f"rptr{v}")
            # rnext, the slot after rptr (1 after 0 in either order), kept rather than
            # computed: the emptiness test after a pop
            rnext = Signal(range(D), init=1 % D, name=f"rnext{v}")
            push = self.w_en & (self.w_flit.vc == v)
            pop, front, more = self.pop[v], self.front[v], self.more[v]
            m.d.comb += [cw.addr.eq(wptr), cw.en.eq(push)]
            m.d.comb += [cw.data[name].eq(self.w_ctrl[name]) for name, _ in kept]
            if deep:
                word = self._deep_front(m, v, cmem, kept, push, pop, rnext)
            else:
                # The front's control fields are read from the LUT RAM at rptr as they are
                # needed: a register copy of them, loaded from the memory or from the write
                # side, costs a LUT per bit for its multiplexer.
                cr = cmem.read_port(domain="comb")
                m.d.comb += cr.addr.eq(rptr)
                word = cr.data
            m.d.comb += [front[name].eq(word[name]) for name, _ in kept]
            m.d.comb += [front[name].eq(derive(word)) for name, derive in self.derived.items()]
            waddr.append((self.w_flit.vc == v, v * D + wptr))
            with m.If(push):
                m.d.sync += wptr.eq(wrap(wptr))
            # ``more`` is a register, updated like ``valid``: the allocator's requests start
            # from it, where a comparison of pointers would be two more logic levels.
            after = wrap(rnext)
            with m.If(pop):
                m.d.sync += [rptr.eq(rnext), rnext.eq(after), self.valid[v].eq(more | push)]
                if D > 2:
                    # a third entry: the slot after rnext is not free (a full queue has
                    # wptr == rptr, which is neither rnext nor the slot after it)
                    with m.If(~push):
                        m.d.sync += more.eq(more & (after != wptr))
                elif D == 2:
                    with m.If(~push):
                        m.d.sync += more.eq(0)
            with m.Elif(push):
                m.d.sync += [self.valid[v].eq(1), more.eq(self.valid[v])]
            raddr.append((self.read_vc == v, v * D + rptr))
            if self.whole_packets:
                # tails in the queue: the first is the front packet's
                tails = Signal(range(D + 1), name=f"tails{v}")
                up, down = push & self.w_flit.tail, pop & front.tail
                with m.If(up & ~down):
                    m.d.sync += tails.eq(tails + 1)
                with m.Elif(down & ~up):
                    m.d.sync += tails.eq(tails - 1)
                m.d.comb += self.whole[v].eq(tails != 0)
        top = Const(1, 1) if self.local else Const(0, 0)
        m.d.comb += [waddr_low.eq(_one_hot_or(waddr)), wport.addr.eq(Cat(waddr_low, top)),
                     raddr_low.eq(_one_hot_or(raddr)), rport.addr.eq(Cat(raddr_low, top))]
        return m

    def _deep_front(self, m, v, cmem, kept, push, pop, rnext):
        """The control word of VC ``v``'s front, kept in block RAM ``cmem`` (deep mode).

        Returns
        -------
        data.View
            A ``kept`` word that, in every cycle in which the queue is not empty, is the
            front's, as an asynchronous read at the read pointer would give it: the entry
            written into an empty queue from the next cycle, after a pop the entry behind,
            or the one written beside the pop of the last.

        Notes
        -----
        The read port is synchronous and reads the slot behind the front (``rnext``) on a
        pop only: its output is the new front's word from the next cycle and holds it until
        the next pop. So its address needs no multiplexer between ``rptr`` and ``rnext`` (a
        LUT per address bit), and the port no transparency to the write port (which Xilinx
        block RAM does not have between its ports: synthesis emulates it with a comparator
        of the addresses, a register of the written word and a multiplexer). The one word
        the read cannot give is one that becomes the front as it is written: it is caught
        in ``hold`` and shown while ``bypass`` is set, until the next pop. A read of the
        slot written in the same cycle (the last entry popped beside that write) may give
        anything the memory gives on such a collision: ``bypass`` hides it. (The port is
        not marked so, which Amaranth cannot: where the block RAM does not give the old
        word either, as ECP5's, synthesis emulates that, about 20 LUTs per VC.)
        """
        cr = cmem.read_port(domain="sync")
        m.d.comb += [cr.addr.eq(rnext), cr.en.eq(pop)]
        hold = Signal(kept, name=f"hold{v}")
        bypass = Signal(name=f"bypass{v}")
        # The word written now is the front next cycle when the queue is empty after this
        # cycle's pop; a full queue takes a write only beside a pop, into the slot freed.
        catch = push & Mux(pop, ~self.more[v], ~self.valid[v])
        with m.If(catch):
            m.d.sync += [hold[name].eq(self.w_ctrl[name]) for name, _ in kept]
            m.d.sync += bypass.eq(1)
        with m.Elif(pop):
            m.d.sync += bypass.eq(0)
        return kept(Mux(bypass, hold.as_value(), cr.data.as_value()))


def _de_bruijn_taps(bits: int) -> tuple[int, ...]:
    """Taps of a ``bits``-wide shift register that visits every value from 0 in turn.

    Each step shifts left and brings in the XOR of the tapped bits, inverted when all bits
    but the top one are 0: a maximal-length LFSR with the all-zero state spliced in (a
    de Bruijn counter). Found by trying the fewest taps first.
    """
    for count in range(bits):
        for others in itertools.combinations(range(bits - 1), count):
            taps = (bits - 1, *others)
            value, seen = 0, 0
            while True:
                low = value & ((1 << (bits - 1)) - 1)
                new = sum(value >> t & 1 for t in taps) % 2 ^ (low == 0)
                value = low << 1 | new
                seen += 1
                if value == 0:
                    break
            if seen == 1 << bits:
                return taps
    raise AssertionError(f"no de Bruijn counter of {bits} bits")   # (there always is one)


class _VcState:
    """Registers of one input VC: whether its packet owns its output VCs (``active``; its
    route is the front flit's, which every flit of the packet carries), which branches of
    the front flit are sent, its priority."""

    def __init__(self, f: FlitFormat, ports: int, name: str):
        self.active = Signal(name=f"active{name}")
        self.sent = Signal(ports, name=f"sent{name}")
        self.prio = Signal(f.prio_bits, name=f"prio{name}")


def _control_layout(cfg: RouterConfig) -> data.StructLayout:
    """What the input buffers keep per flit besides its data: its packet's table entry (every
    flit carries its head's) and the tail bit.

    No head bit: the front of a queue is a head exactly when its VC is not active (a
    packet's head either leaves alone, as a one-flit packet, or makes the VC active until
    its tail leaves), and the entry's ``multi`` (several branches) takes its place in the
    memory, where deriving it from the mask costs two logic levels on the allocation's
    path. Without multicast ``multi`` is 0 and not kept, and ``vcs`` holds one VC rather
    than one per port; ``prio`` is kept only when allocation honours it: each bit less in
    the queue memories counts (LUT RAM primitives come 6 bits wide).
    """
    fields = {"tail": 1, **table_layout(cfg).members}
    if not cfg.multicasts:
        # A unicast entry has the same VC on every port: one copy of it is kept.
        fields["route"] = data.StructLayout({"mask": cfg.ports, "vcs": cfg.fmt.vc_bits})
    if cfg.priorities > 1:
        fields["prio"] = cfg.fmt.prio_bits
    return data.StructLayout(fields)


def mask_bits(cfg: RouterConfig) -> range:
    """The bits of a table word (:func:`~optnet.plan.configs.table_layout`) holding the
    output-port mask."""
    route = table_layout(cfg)["route"]
    start = route.offset + route.shape["mask"].offset
    return range(start, start + cfg.ports)


def route_table(cfg: RouterConfig, port: int) -> list[int]:
    """The contents of input ``port``'s route table (memory ``table<port>``), one integer
    per word as its Verilog initialises it, indexed by ``mcast << id_bits | dst``.

    The unicast entries come first, then the multicast ones, each a
    :func:`~optnet.plan.configs.table_layout` value; unicast entries come decoded to a
    one-bit mask, so one lookup serves both kinds. A link ``port`` is left out of every mask
    (no U-turns on links), so an entry naming it, like an invalid one, has an empty mask and
    its packets are dropped. With ``block_tables`` zero words follow up to
    :attr:`~optnet.plan.configs.RouterConfig.table_words`, the last of which holds the node
    id in ``table0``.
    """
    P, pb, vb = cfg.ports, cfg.port_bits, cfg.fmt.vc_bits
    layout = table_layout(cfg)
    # Packed by hand from the layout's offsets: Layout.const is too slow for thousands of
    # nodes with hundreds of entries each.
    mask_at = mask_bits(cfg).start
    vcs_at = layout["route"].offset + layout["route"].shape["vcs"].offset
    multi_at = layout["multi"].offset
    keep = ((1 << P) - 1) ^ (1 << port if port else 0)
    every_port = sum(1 << (q * vb) for q in range(P))   # times a VC: that VC on every port
    routes = []
    for word in cfg.unicast:
        out, vc = word & ((1 << pb) - 1), word >> pb & ((1 << vb) - 1)
        valid = word >> (pb + vb) & 1 and out < P
        routes.append((1 << out if valid else 0, vc * every_port))
    for word in cfg.multicast:
        mask = word & keep
        # An entry left with one branch is read as a unicast one, whose VC the allocator
        # takes from port 0's field (the same on every port): it gets its branch's VC on
        # every port, or its head would keep other heads off the wrong output VC.
        vcs = (word >> P >> (mask.bit_length() - 1) * vb & ((1 << vb) - 1)) * every_port \
            if mask.bit_count() == 1 else word >> P
        routes.append((word & ((1 << P) - 1), vcs))
    words = [((mask & keep).bit_count() > 1) << multi_at | (mask & keep) << mask_at
             | vcs << vcs_at for mask, vcs in routes]
    if cfg.block_tables:
        words += [0] * (cfg.table_words - len(words))
        words[-1] = cfg.node_id if port == 0 else 0
    return words


def _held(cfg: RouterConfig) -> bool:
    """The flits are read synchronously and held in the inputs' read registers for the
    outputs (block RAM: ``block_buffers``, or more than 64 words per input, which synthesis
    puts in block RAM); otherwise they are read asynchronously (LUT RAM) into output
    registers."""
    return cfg.block_buffers or cfg.fmt.vcs * cfg.depth > 64


def _ored_local(cfg: RouterConfig) -> bool:
    """The local output ORs zeroed copies of its inputs' flits (:class:`InputBuffer`'s
    ``local``) rather than multiplexing them: with block-RAM buffers, where a copy is one
    more block RAM and no LUT, and more than four ports (up to four inputs, the
    multiplexer is a LUT per bit as well)."""
    return cfg.block_buffers and cfg.ports > 4


def _others(ports, port):
    """The ports a flit may pass between and ``port``: all but ``port`` itself if it is a
    link (no U-turns on links), all if it is the local port."""
    return [p for p in range(ports) if p != port or port == 0]


def _widen(grant, members, ports):
    """``grant``, one bit per port of ``members``, as ``ports`` bits (0 for the others)."""
    bits = dict(zip(members, grant, strict=True))
    return Cat(bits.get(p, Const(0, 1)) for p in range(ports))


def _named(m, value, name):
    """``value`` through a comb signal called ``name``. Amaranth copies an expression into
    every statement that uses it (its domain lowering rebuilds each statement's values), so
    an expression shared by many statements becomes that many copies of its logic in the
    netlist; a signal is computed once and only referred to."""
    sig = Signal(len(value), name=name)
    m.d.comb += sig.eq(value)
    return sig


def _any_of(values):
    """Bitwise OR of ``values`` (at least one) as a balanced tree."""
    return _balanced(operator.or_, values)


def _all_of(values):
    """Bitwise AND of ``values`` (at least one) as a balanced tree."""
    return _balanced(operator.and_, values)


def _balanced(op, values):
    # A tree rather than a chain: Amaranth computes the width of an operator by walking its
    # operands, at every level of a chain.
    values = list(values)
    while len(values) > 1:
        values = [op(values[i], values[i + 1]) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def _one_hot_or(cases):
    """``value`` of the one ``(select, value)`` pair whose select is set (0 if none): an
    AND-OR mux, the cheapest form when the selects are already one-hot."""
    result = 0
    for select, value in cases:
        result = result | Mux(select, value, 0)
    return result
