"""Input-queued virtual-channel router with table-based routing and multicast.

Pipeline (zero load, cycles after a head flit is presented on an input)::

    0  route lookup from the head flit's header; flit and route written to its VC buffer
    1  VC allocation: the head flit at the front of an idle VC claims its output VCs
    2  switch allocation and traversal into the output register
    3  flit valid on the output

so a head flit takes three cycles per hop and every following flit one more cycle each.

Flow control is credit based on every port: an output sends only when the downstream
buffer of the flit's VC has room (``credits`` per port, returned on ``cred_in``); an input
returns one credit per flit it frees on ``cred_out``. Outputs also honour ``ready``, so a
link layer that cannot take a flit this cycle simply stalls its port.

Routing is the routing stage's destination-based tables (:mod:`optnet.routing.tables`): the
unicast table maps a destination id to an output port and the VC to use on it; the
multicast table maps a multicast group (the source's id) to a port mask and a VC per port.
A multicast packet claims all its output VCs at once (so two multicasts can never each
hold half of what the other needs) and each flit leaves its input buffer once it has been
sent on every branch. A head flit whose destination has no valid entry is dropped with its
packet and counted in ``dropped``.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.hw.alloc import RoundRobin
from optnet.hw.flit import FlitFormat, clog2

__all__ = ["Router", "RouterConfig"]


@dataclass(frozen=True)
class RouterConfig:
    """Parameters of one router.

    Attributes
    ----------
    fmt : FlitFormat
    ports : int
        Ports, port 0 being the local (endpoint) port.
    depth : int
        Input buffer depth per VC, in flits.
    credits : tuple of int
        Buffer depth per VC of the receiver behind each output port (initial credits).
    unicast : tuple of int
        Table words indexed by destination id: ``valid << (pb + vb) | vc << pb | port``
        with ``pb = clog2(ports)``, ``vb = fmt.vc_bits``.
    multicast : tuple of int
        Table words indexed by group id: ``vcs << ports | mask``, the VC of port ``p`` at
        bits ``[p*vb, (p+1)*vb)`` of ``vcs``.
    allocator : str
        ``round_robin`` (separable, input first) or ``islip`` (one iteration).
    priorities : int
        Priority levels honoured by switch allocation.
    """

    fmt: FlitFormat
    ports: int
    depth: int
    credits: tuple[int, ...]
    unicast: tuple[int, ...]
    multicast: tuple[int, ...]
    allocator: str = "round_robin"
    priorities: int = 1

    def __post_init__(self):
        if len(self.credits) != self.ports:
            raise ValueError(f"router has {self.ports} ports but {len(self.credits)} credits")
        if self.allocator not in ("round_robin", "islip"):
            raise ValueError(f"unknown allocator {self.allocator!r}")
        if self.fmt.header_bits > self.fmt.width:
            raise ValueError(f"a {self.fmt.header_bits}-bit header does not fit a "
                             f"{self.fmt.width}-bit flit")

    @property
    def port_bits(self) -> int:
        return clog2(self.ports)

    @property
    def table_depth(self) -> int:
        return 1 << self.fmt.id_bits


class Router(wiring.Component):
    """A ``P x V`` router (see the module docstring for the pipeline and protocol).

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
        Packets dropped because their destination had no valid table entry (saturates).
    """

    def __init__(self, config: RouterConfig):
        self.config = config
        f, p, v = config.fmt, config.ports, config.fmt.vcs
        super().__init__({
            "inp": In(stream.Signature(f.flit, always_ready=True)).array(p),
            "cred_out": Out(v).array(p),
            "out": Out(stream.Signature(f.flit)).array(p),
            "cred_in": In(v).array(p),
            "dropped": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        f, P, V = cfg.fmt, cfg.ports, cfg.fmt.vcs
        vb, pb = f.vc_bits, cfg.port_bits
        levels = cfg.priorities
        route = data.StructLayout({"mask": P, "vcs": P * vb})
        entry = data.StructLayout({"flit": f.flit, "route": route})

        m.submodules.unicast = utab = memory.Memory(
            shape=pb + vb + 1, depth=cfg.table_depth, init=cfg.unicast)
        m.submodules.multicast = mtab = memory.Memory(
            shape=route.size, depth=cfg.table_depth, init=cfg.multicast)

        # Output state: register, credits and owner flag per output VC.
        out_free = [Signal(name=f"out{q}_free") for q in range(P)]
        credit = [[Signal(range(cfg.credits[q] + 1), init=cfg.credits[q], name=f"cr{q}_{w}")
                   for w in range(V)] for q in range(P)]
        busy = [[Signal(name=f"busy{q}_{w}") for w in range(V)] for q in range(P)]
        # An output VC whose tail flit leaves this cycle can be claimed again this cycle,
        # so back-to-back packets on one VC do not lose a cycle between them.
        release = [[Signal(name=f"release{q}_{w}") for w in range(V)] for q in range(P)]
        free_vc = [Cat(~busy[q][w] | release[q][w] for w in range(V)) for q in range(P)]
        for q in range(P):
            m.d.comb += out_free[q].eq(~self.out[q].valid | self.out[q].ready)
            with m.If(self.out[q].ready):
                m.d.sync += self.out[q].valid.eq(0)

        # Input side: route lookup, buffers, per-VC state.
        fronts, heads, states = [], [], []
        for p in range(P):
            inp = self.inp[p]
            header = data.View(f.header, inp.payload.data[:f.header_bits])
            uport, mport = utab.read_port(domain="comb"), mtab.read_port(domain="comb")
            m.d.comb += [uport.addr.eq(header.dst), mport.addr.eq(header.dst)]
            looked = Signal(route, name=f"route{p}")
            with m.If(header.mcast):
                m.d.comb += looked.eq(mport.data)
            with m.Elif(uport.data[pb + vb]):
                m.d.comb += [
                    looked.mask.eq(1 << uport.data[:pb]),
                    looked.vcs.eq(Cat(uport.data[pb:pb + vb] for _ in range(P))),
                ]
            row_f, row_h, row_s = [], [], []
            for v in range(V):
                buf = fifo.SyncFIFO(width=entry.size, depth=cfg.depth)
                m.submodules[f"buf{p}_{v}"] = buf
                m.d.comb += [
                    buf.w_data.eq(Cat(inp.payload, looked)),
                    buf.w_en.eq(inp.valid & (inp.payload.vc == v)),
                ]
                front = data.View(entry, buf.r_data)
                state = _VcState(f, P, vb, name=f"{p}_{v}")
                row_f.append((buf, front))
                row_h.append(buf.r_rdy & front.flit.head & ~state.active)
                row_s.append(state)
            fronts.append(row_f)
            heads.append(row_h)
            states.append(row_s)

        # VC allocation: one arbiter per output VC; a packet is granted only when it wins
        # every output VC it needs, and only asks when all of them are free.
        requesters = [(p, v) for p in range(P) for v in range(V)]
        needs = {}
        for p, v in requesters:
            r = fronts[p][v][1].route
            wants = []
            for q in range(P):
                vcq = r.vcs[q * vb:(q + 1) * vb]
                wants.append([r.mask[q] & (vcq == w) for w in range(V)])
            free = Cat(~r.mask[q] | free_vc[q].bit_select(r.vcs[q * vb:(q + 1) * vb], 1)
                       for q in range(P)).all()
            needs[p, v] = (wants, free)
        va_arb = {}
        for q in range(P):
            for w in range(V):
                arb = RoundRobin(len(requesters), levels)
                m.submodules[f"va{q}_{w}"] = arb
                if levels > 1:
                    m.d.comb += arb.priority.eq(Cat(
                        data.View(f.header, fronts[p][v][1].flit.data[:f.header_bits]).prio
                        for p, v in requesters))
                m.d.comb += arb.requests.eq(Cat(
                    heads[p][v] & needs[p, v][1] & needs[p, v][0][q][w] for p, v in requesters))
                va_arb[q, w] = arb
        won = {}
        for i, (p, v) in enumerate(requesters):
            wants = needs[p, v][0]
            won[p, v] = Signal(name=f"va_won{p}_{v}")
            m.d.comb += won[p, v].eq(heads[p][v] & needs[p, v][1] & Cat(
                ~wants[q][w] | va_arb[q, w].grant[i] for q in range(P) for w in range(V)).all())
        for q in range(P):
            for w in range(V):
                arb = va_arb[q, w]
                m.d.comb += arb.advance.eq(Cat(
                    won[p, v] & arb.grant[i] for i, (p, v) in enumerate(requesters)).any())

        # Switch allocation.
        want = {}
        for p, v in requesters:
            buf, front = fronts[p][v]
            st = states[p][v]
            want[p, v] = Signal(P, name=f"want{p}_{v}")
            m.d.comb += want[p, v].eq(Cat(
                st.active & buf.r_rdy & st.mask[q] & ~st.sent[q] & out_free[q]
                & (Cat(c != 0 for c in credit[q]).bit_select(st.vc(q), 1))
                if q != p or p == 0 else 0
                for q in range(P)))
        chosen, grant = self._switch_allocate(m, P, V, levels, want, states)

        # Traversal, credits, state updates.
        dropped = Signal(16)
        m.d.comb += self.dropped.eq(dropped)
        for q in range(P):
            sent_vc = Signal(vb, name=f"sent_vc{q}")
            send = Signal(name=f"send{q}")
            tail = Signal(name=f"tail{q}")
            for p, v in requesters:
                buf, front = fronts[p][v]
                with m.If(grant[q][p] & chosen[p][v]):
                    m.d.comb += [send.eq(1), sent_vc.eq(states[p][v].vc(q)),
                                 tail.eq(front.flit.tail)]
                    m.d.sync += [self.out[q].payload.eq(front.flit),
                                 self.out[q].payload.vc.eq(states[p][v].vc(q))]
            with m.If(send):
                m.d.sync += self.out[q].valid.eq(1)
            for w in range(V):
                spend = send & (sent_vc == w)
                with m.If(spend & ~self.cred_in[q][w]):
                    m.d.sync += credit[q][w].eq(credit[q][w] - 1)
                with m.Elif(~spend & self.cred_in[q][w]):
                    m.d.sync += credit[q][w].eq(credit[q][w] + 1)
                m.d.comb += release[q][w].eq(spend & tail)
                with m.If(release[q][w]):
                    m.d.sync += busy[q][w].eq(0)

        drops = []
        for p, v in requesters:
            buf, front = fronts[p][v]
            st = states[p][v]
            granted = Cat(grant[q][p] & chosen[p][v] for q in range(P))
            done = Signal(P, name=f"done{p}_{v}")
            m.d.comb += done.eq(st.sent | granted)
            dequeue = Signal(name=f"deq{p}_{v}")
            with m.If(st.active & (st.mask == 0)):
                m.d.comb += dequeue.eq(buf.r_rdy)          # dropping an unroutable packet
            with m.Elif(st.active & buf.r_rdy & (done == st.mask)):
                m.d.comb += dequeue.eq(1)
            with m.Elif(st.active):
                m.d.sync += st.sent.eq(done)
            with m.If(dequeue):
                m.d.comb += [buf.r_en.eq(1), self.cred_out[p][v].eq(1)]
                m.d.sync += st.sent.eq(0)
                with m.If(front.flit.tail):
                    m.d.sync += st.active.eq(0)
            with m.If(won[p, v]):
                r = front.route
                m.d.sync += [st.active.eq(1), st.mask.eq(r.mask), st.vcs.eq(r.vcs),
                             st.sent.eq(0),
                             st.prio.eq(data.View(f.header, front.flit.data[:f.header_bits])
                                        .prio)]
                for q in range(P):
                    for w in range(V):
                        with m.If(needs[p, v][0][q][w]):
                            m.d.sync += busy[q][w].eq(1)
            drop = heads[p][v] & (front.route.mask == 0)
            drops.append(drop)
            with m.If(drop):
                m.d.sync += [st.active.eq(1), st.mask.eq(0)]
        total = Signal(17)
        m.d.comb += total.eq(dropped + sum(drops))
        m.d.sync += dropped.eq(Mux(total > 0xFFFF, 0xFFFF, total))
        return m

    def _switch_allocate(self, m, P, V, levels, want, states):
        """Returns ``chosen[p][v]`` (the VC input ``p`` sends from) and ``grant[q][p]``."""
        prio_of = {key: st.prio for key, st in
                   (((p, v), states[p][v]) for p in range(P) for v in range(V))}
        chosen = [[Signal(name=f"chosen{p}_{v}") for v in range(V)] for p in range(P)]
        grant = [[Signal(name=f"grant{q}_{p}") for p in range(P)] for q in range(P)]
        out_arb = []
        for q in range(P):
            arb = RoundRobin(P, levels)
            m.submodules[f"sa_out{q}"] = arb
            out_arb.append(arb)
        in_arb = []
        for p in range(P):
            arb = RoundRobin(V, levels)
            m.submodules[f"sa_in{p}"] = arb
            in_arb.append(arb)
            if levels > 1:
                m.d.comb += arb.priority.eq(Cat(prio_of[p, v] for v in range(V)))
        port_prio = [Signal(states[0][0].prio.shape(), name=f"port_prio{p}") for p in range(P)]

        if self.config.allocator == "round_robin":
            # Input first: each input picks a VC that can send somewhere, then each output
            # picks among the inputs whose chosen VC wants it.
            for p in range(P):
                m.d.comb += in_arb[p].requests.eq(Cat(want[p, v].any() for v in range(V)))
                for v in range(V):
                    m.d.comb += chosen[p][v].eq(in_arb[p].grant[v])
                    with m.If(in_arb[p].grant[v]):
                        m.d.comb += port_prio[p].eq(prio_of[p, v])
            for q in range(P):
                arb = out_arb[q]
                m.d.comb += arb.requests.eq(Cat(
                    Cat(chosen[p][v] & want[p, v][q] for v in range(V)).any()
                    for p in range(P)))
                if levels > 1:
                    m.d.comb += arb.priority.eq(Cat(port_prio))
                m.d.comb += arb.advance.eq(1)
                for p in range(P):
                    m.d.comb += grant[q][p].eq(arb.grant[p])
            for p in range(P):
                m.d.comb += in_arb[p].advance.eq(Cat(grant[q][p] for q in range(P)).any())
            return chosen, grant

        # iSLIP, one iteration: outputs grant among requesting inputs, each input accepts
        # one granted output; pointers move only on accepted grants.
        accept = []
        for p in range(P):
            arb = RoundRobin(P)
            m.submodules[f"sa_acc{p}"] = arb
            accept.append(arb)
        for p in range(P):
            best = Signal(port_prio[p].shape(), name=f"best{p}")
            for v in range(V):
                with m.If(want[p, v].any() & (prio_of[p, v] > best)):
                    m.d.comb += best.eq(prio_of[p, v])
            m.d.comb += port_prio[p].eq(best)
        for q in range(P):
            arb = out_arb[q]
            m.d.comb += arb.requests.eq(Cat(
                Cat(want[p, v][q] for v in range(V)).any() for p in range(P)))
            if levels > 1:
                m.d.comb += arb.priority.eq(Cat(port_prio))
        for p in range(P):
            m.d.comb += accept[p].requests.eq(Cat(out_arb[q].grant[p] for q in range(P)))
            acc = accept[p].grant
            # The VC sent from: round robin among this input's VCs that want the accepted
            # output; a multicast VC also uses any other output granted to this input.
            m.d.comb += in_arb[p].requests.eq(Cat(
                (want[p, v] & acc).any() for v in range(V)))
            m.d.comb += in_arb[p].advance.eq(acc.any())
            m.d.comb += accept[p].advance.eq(1)
            for v in range(V):
                m.d.comb += chosen[p][v].eq(in_arb[p].grant[v])
            for q in range(P):
                m.d.comb += grant[q][p].eq(out_arb[q].grant[p] & Cat(
                    chosen[p][v] & want[p, v][q] for v in range(V)).any())
        for q in range(P):
            m.d.comb += out_arb[q].advance.eq(Cat(
                grant[q][p] & accept[p].grant[q] for p in range(P)).any())
        return chosen, grant


class _VcState:
    """Registers of one input VC: owner of which output VCs, which branches are done."""

    def __init__(self, f: FlitFormat, ports: int, vc_bits: int, name: str):
        self.vc_bits = vc_bits
        self.active = Signal(name=f"active{name}")
        self.mask = Signal(ports, name=f"mask{name}")
        self.vcs = Signal(ports * vc_bits, name=f"vcs{name}")
        self.sent = Signal(ports, name=f"sent{name}")
        self.prio = Signal(f.prio_bits, name=f"prio{name}")

    def vc(self, q: int):
        return self.vcs[q * self.vc_bits:(q + 1) * self.vc_bits]
