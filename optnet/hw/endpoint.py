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
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.hw.alloc import RoundRobin
from optnet.hw.flit import KIND_CREDIT, KIND_DATA, FlitFormat

__all__ = ["Endpoint", "EndpointConfig", "LocalHub", "axis_rx_layout", "axis_tx_layout"]


@dataclass(frozen=True)
class EndpointConfig:
    """Parameters of one endpoint on one node.

    Attributes
    ----------
    fmt : FlitFormat
    node_id : int
    index : int
        Endpoint number (the header's ``dst_ep``/``src_ep``).
    width : int
        AXI4-Stream ``tdata`` bits; at most the flit width.
    max_packet : int
        Flits per network packet, header included.
    broadcast_flits : int or None
        Flits per broadcast packet, header included, at most ``max_packet`` (None: that):
        the deadlock proof's :func:`~optnet.routing.proof.broadcast_flits`, so a router can
        give a multicast credit for its whole packet on every branch.
    managed : bool
    buffer, credit, offset, init_budget : int
        Receive buffer in packets and the credit parameters (see the module docstring).
    priority : int
    """

    fmt: FlitFormat
    node_id: int
    index: int
    width: int
    max_packet: int
    broadcast_flits: int | None = None
    managed: bool = True
    buffer: int = 64
    credit: int = 16
    offset: int = 0
    init_budget: int = 1
    priority: int = 0

    def __post_init__(self):
        if self.width > self.fmt.width:
            raise ValueError(f"endpoint {self.index} is {self.width} bits wide, wider than the "
                             f"{self.fmt.width}-bit flit")
        if self.broadcast_flits is None:
            object.__setattr__(self, "broadcast_flits", self.max_packet)
        if not 2 <= self.broadcast_flits <= self.max_packet:
            raise ValueError("a packet needs room for a header and one beat, and a broadcast "
                             "packet is at most max_packet flits")
        if self.managed and not 0 <= self.offset < self.credit:
            raise ValueError(f"endpoint {self.index}: offset {self.offset} must be below "
                             f"credit {self.credit}")

    @property
    def beats(self) -> int:
        """Receive buffer depth in beats."""
        per = self.max_packet - 1
        return per * (self.buffer if self.managed else 2)

    @property
    def budget_bits(self) -> int:
        return max(self.init_budget * self.credit + self.credit, 2).bit_length() + 1


def axis_tx_layout(cfg: EndpointConfig) -> data.StructLayout:
    """AXI4-Stream from the user: ``tdest`` = destination node id, ``tuser`` = broadcast."""
    return data.StructLayout({"tdata": cfg.width, "tlast": 1, "tdest": cfg.fmt.id_bits,
                              "tuser": 1})


def axis_rx_layout(cfg: EndpointConfig) -> data.StructLayout:
    """AXI4-Stream to the user: ``tid`` = source node id."""
    return data.StructLayout({"tdata": cfg.width, "tlast": 1, "tid": cfg.fmt.id_bits})


class Endpoint(wiring.Component):
    """A managed or unmanaged endpoint.

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
        Packets to the network (``vc`` is set by the hub).
    net_rx : In(stream.Signature(flit))
        Packets from the network addressed to this endpoint.
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
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        f = cfg.fmt
        nodes = 1 << f.id_bits
        B = cfg.budget_bits

        # -- receive ---------------------------------------------------------------------
        # Each entry: a beat for m_axis and whether its packet is a broadcast (broadcasts
        # spend no budget, so taking one earns its source no credit).
        beat_bits = axis_rx_layout(cfg).size
        m.submodules.rx_buf = rx_buf = fifo.SyncFIFOBuffered(
            width=beat_bits + 1, depth=cfg.beats)
        rx_hdr = data.View(f.header, self.net_rx.payload.data[:f.header_bits])
        in_packet = Signal()
        src = Signal(f.id_bits)
        bcast = Signal()
        granted_add = Signal()          # a credit packet arrived: budget[src] += arg
        grant_from = Signal(f.id_bits)
        grant_amount = Signal(f.arg_bits)
        with m.If(~in_packet):
            m.d.comb += self.net_rx.ready.eq(1)
            with m.If(self.net_rx.valid):
                with m.If(rx_hdr.kind == KIND_CREDIT):
                    m.d.comb += [granted_add.eq(cfg.managed), grant_from.eq(rx_hdr.src),
                                 grant_amount.eq(rx_hdr.arg)]
                with m.Elif(~self.net_rx.payload.tail):
                    m.d.sync += [in_packet.eq(1), src.eq(rx_hdr.src), bcast.eq(rx_hdr.mcast)]
        with m.Else():
            m.d.comb += [
                self.net_rx.ready.eq(rx_buf.w_rdy),
                rx_buf.w_en.eq(self.net_rx.valid),
                rx_buf.w_data.eq(Cat(self.net_rx.payload.data[:cfg.width],
                                     self.net_rx.payload.tail, src, bcast)),
            ]
            with m.If(self.net_rx.valid & rx_buf.w_rdy & self.net_rx.payload.tail):
                m.d.sync += in_packet.eq(0)
        beat = data.View(axis_rx_layout(cfg), rx_buf.r_data[:beat_bits])

        # -- managed: count what the user takes, queue credit grants --------------------
        grants = None
        if cfg.managed:
            # Never full, so taking packets never waits for the network: a source can
            # have at most (init_budget * credit + offset) / credit + 1 grants owed to it.
            owed = cfg.init_budget + 2
            m.submodules.grants = grants = fifo.SyncFIFO(width=f.id_bits, depth=nodes * owed)
            m.submodules.taken = taken_mem = memory.Memory(
                shape=range(cfg.credit + 1), depth=nodes, init=[cfg.offset] * nodes)
            t_r, t_w = taken_mem.read_port(domain="comb"), taken_mem.write_port()
            m.d.comb += [t_r.addr.eq(beat.tid), t_w.addr.eq(beat.tid)]
            m.d.comb += [self.m_axis.valid.eq(rx_buf.r_rdy & grants.w_rdy),
                         rx_buf.r_en.eq(self.m_axis.ready & grants.w_rdy)]
            with m.If(self.m_axis.valid & self.m_axis.ready & beat.tlast
                      & ~rx_buf.r_data[beat_bits]):
                m.d.comb += t_w.en.eq(1)
                with m.If(t_r.data == cfg.credit - 1):
                    m.d.comb += [t_w.data.eq(0), grants.w_en.eq(1), grants.w_data.eq(beat.tid)]
                with m.Else():
                    m.d.comb += t_w.data.eq(t_r.data + 1)
        else:
            m.d.comb += [self.m_axis.valid.eq(rx_buf.r_rdy), rx_buf.r_en.eq(self.m_axis.ready)]
        m.d.comb += self.m_axis.payload.eq(beat)

        # -- transmit --------------------------------------------------------------------
        user = self.s_axis.payload
        sending = Signal()
        sending_bcast = Signal()
        beats = Signal(range(cfg.max_packet))
        may_send = Signal(init=1)
        if cfg.managed:
            # budget = init + granted - spent, kept as two counters so the two sides never
            # write the same memory in one cycle.
            m.submodules.granted = g_mem = memory.Memory(shape=B, depth=nodes, init=[])
            m.submodules.spent = s_mem = memory.Memory(shape=B, depth=nodes, init=[])
            g_tx, g_rx = g_mem.read_port(domain="comb"), g_mem.read_port(domain="comb")
            g_w, s_r, s_w = g_mem.write_port(), s_mem.read_port(domain="comb"), s_mem.write_port()
            m.d.comb += [g_tx.addr.eq(user.tdest), s_r.addr.eq(user.tdest),
                         s_w.addr.eq(user.tdest), s_w.data.eq(s_r.data + 1),
                         g_rx.addr.eq(grant_from), g_w.addr.eq(grant_from),
                         g_w.data.eq(g_rx.data + grant_amount), g_w.en.eq(granted_add)]
            left = Signal(B)
            m.d.comb += [left.eq(cfg.init_budget * cfg.credit + g_tx.data - s_r.data),
                         may_send.eq(user.tuser | (left != 0))]
        header = Signal(f.header)
        m.d.comb += [header.src.eq(self.node_id), header.dst_ep.eq(cfg.index),
                     header.src_ep.eq(cfg.index), header.prio.eq(cfg.priority)]
        with m.If(sending):
            m.d.comb += [
                self.net_tx.valid.eq(self.s_axis.valid),
                self.net_tx.payload.data.eq(user.tdata),
                self.net_tx.payload.tail.eq(user.tlast | (beats == Mux(
                    sending_bcast, cfg.broadcast_flits - 2, cfg.max_packet - 2))),
                self.s_axis.ready.eq(self.net_tx.ready),
            ]
            with m.If(self.net_tx.valid & self.net_tx.ready):
                m.d.sync += beats.eq(beats + 1)
                with m.If(self.net_tx.payload.tail):
                    m.d.sync += sending.eq(0)
        if grants is not None:
            with m.Elif(grants.r_rdy):   # a credit packet goes before new data
                m.d.comb += [header.dst.eq(grants.r_data), header.kind.eq(KIND_CREDIT),
                             header.arg.eq(cfg.credit), self.net_tx.valid.eq(1),
                             self.net_tx.payload.head.eq(1), self.net_tx.payload.tail.eq(1),
                             self.net_tx.payload.data.eq(header),
                             grants.r_en.eq(self.net_tx.ready)]
        with m.Elif(self.s_axis.valid & may_send):
            # A broadcast's group is its source: the multicast table is indexed by it.
            m.d.comb += [header.dst.eq(Mux(user.tuser, self.node_id, user.tdest)),
                         header.mcast.eq(user.tuser),
                         header.kind.eq(KIND_DATA), self.net_tx.valid.eq(1),
                         self.net_tx.payload.head.eq(1), self.net_tx.payload.data.eq(header)]
            with m.If(self.net_tx.ready):
                m.d.sync += [sending.eq(1), sending_bcast.eq(user.tuser), beats.eq(0)]
                if cfg.managed:
                    m.d.comb += s_w.en.eq(~user.tuser)
        return m


class LocalHub(wiring.Component):
    """Joins a node's endpoints to the router's local port.

    Sending, it picks an endpoint round robin at packet boundaries and injects on VC
    ``index % vcs`` while the router's local input has credit; receiving, it steers each
    packet to the endpoint named in its header and returns a credit per flit taken.

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
        ok = [credit[i % V] != 0 for i in range(E)]
        m.d.comb += arb.requests.eq(Cat(self.ep_tx[i].valid & ok[i] for i in range(E)))
        take = Signal(E)
        with m.If(busy):
            m.d.comb += take.eq(Cat((owner == i) & ok[i] for i in range(E)))
        with m.Else():
            m.d.comb += [take.eq(arb.grant), arb.advance.eq(1)]
        spent = Signal(V)
        for i in range(E):
            port = self.ep_tx[i]
            m.d.comb += port.ready.eq(take[i])
            with m.If(take[i] & port.valid):
                m.d.comb += [self.to_router.valid.eq(1), self.to_router.payload.eq(port.payload),
                             self.to_router.payload.vc.eq(i % V), spent[i % V].eq(1)]
                m.d.sync += [busy.eq(~port.payload.tail), owner.eq(i)]
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
