"""NodeTop: one FPGA's network, assembled from its :class:`~optnet.plan.NodePlan`: a router
with link layers, or on a direct node (:attr:`optnet.plan.NodePlan.direct`) a direct switch
with direct links (:mod:`optnet.hw.direct`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from amaranth.hdl import Cat, Module
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.devices.families import family
from optnet.hw.cascade import CascadeUnit
from optnet.hw.direct import DirectHub, DirectLink, DirectSwitch
from optnet.hw.endpoint import Endpoint, LocalHub, axis_rx_layout, axis_tx_layout
from optnet.hw.link import LinkLayer
from optnet.hw.router import Router
from optnet.hw.verilog import instantiate
from optnet.plan import NodePlan
from optnet.plan.configs import DirectLinkConfig, LinkConfig
from optnet.plan.ip import ip_name

__all__ = ["LINK_COUNTERS", "SHARED_PHY_DOMAIN", "NodeTop", "Parts", "lvds_family", "parts"]

#: The PHY clock domain of a link layer lowered on its own (:func:`parts`).
SHARED_PHY_DOMAIN = "phy"
#: The counters of a :class:`~optnet.hw.link.LinkLayer` a node shows per link.
LINK_COUNTERS = ("crc_errors", "resent", "lost", "restarts")


@dataclass(frozen=True)
class Parts:
    """Module names of the parts of a node lowered apart from its :class:`NodeTop`, which
    instantiates them (see :func:`parts`).

    Attributes
    ----------
    router : str or None
        The router's module, ``<node>.router``; None on a direct node.
    buffer : str or None
        The router's input buffer, ``<node>.router_buf``, which it instantiates per port;
        None on a direct node.
    links : Mapping[LinkConfig or DirectLinkConfig, str]
        One module per distinct link layer (direct link) configuration,
        ``<node>.link_cfg<k>``, each configuration with the PHY clock domain
        :data:`SHARED_PHY_DOMAIN` (a link layer's only per-port difference is the name of
        its PHY's domain).
    switch : str or None
        A direct node's switch, ``<node>.switch``.
    """

    router: str | None
    buffer: str | None
    links: Mapping[LinkConfig | DirectLinkConfig, str]
    switch: str | None = None


def parts(plan: NodePlan) -> Parts:
    """The parts of ``plan``'s node to lower apart: its router, the router's input buffer,
    and each distinct link layer configuration once, in port order; on a direct node, its
    switch and each distinct direct link configuration once."""
    configs = dict.fromkeys(_shared(port.link) for port in plan.ports)
    links = {cfg: f"{plan.node}.link_cfg{k}" for k, cfg in enumerate(configs)}
    if plan.direct is not None:
        return Parts(None, None, links, f"{plan.node}.switch")
    return Parts(f"{plan.node}.router", f"{plan.node}.router_buf", links)


def _shared(cfg: LinkConfig | DirectLinkConfig) -> LinkConfig | DirectLinkConfig:
    return replace(cfg, phy_domain=SHARED_PHY_DOMAIN)


def lvds_family(name: str) -> str:
    """The I/O primitive family :class:`~optnet.hw.phy.lvds.LvdsPhy` uses for the board
    family ``name`` (:attr:`optnet.devices.families.Family.lvds`).

    Raises
    ------
    ValueError
        For a family optnet does not know, or one it has no LVDS primitives for.
    """
    lvds = family(name).lvds
    if lvds is None:
        raise ValueError(f"optnet has no LVDS I/O primitives for the {name} family.")
    return lvds


def _node_id_rom(m: Module, plan: NodePlan):
    """The node id, read from a one-word ROM added to ``m``.

    A ROM rather than logic: a constant would be folded into the logic that uses it,
    whereas a memory's contents appear once, in its own initial block, which
    :mod:`optnet.emit.roles` rewrites to turn one node's Verilog into another's of the same
    role (synthesis folds the ROM into a constant).
    """
    m.submodules.node_id_rom = rom = memory.Memory(shape=plan.fmt.id_bits, depth=1,
                                                   init=[plan.node_id])
    return rom.read_port(domain="comb").data


def _share_pad(pad: str) -> bool:
    """Whether adapter pad ``pad`` carries a master's clocks to a slave
    (:data:`optnet.devices.linkip.SHARED_CLOCKS`), which stay inside the node."""
    return pad.startswith("share_")


class NodeTop(wiring.Component):
    """Router (or nothing but a hub when the node has no links), link layers, PHY adapters
    and endpoints of one node, and with ``cascade`` broadcast the cascade unit between the
    endpoints and hub and the router's local port (:mod:`optnet.hw.cascade`); on a direct
    node, its direct switch, a direct link per link port, the PHY adapters and a
    :class:`~optnet.hw.direct.DirectHub` for the endpoints.

    Parameters
    ----------
    plan : NodePlan
    phys : str
        ``vendor``: instantiate the PHY adapters (vendor IP black boxes, LVDS in fabric)
        and expose their pads as ``port<p>_<pad>``. ``sim``: no adapters; each link port
        exposes its link layer's PHY side as ``phy<p>_tx``/``phy<p>_rx``/``phy<p>_up`` in
        domain ``phy<p>``, which the simulation provides and wires to a link model.
    parts : Parts, optional
        The router and link layers (direct switch and links) are lowered apart
        (:func:`parts`), and this design instantiates their modules instead of holding
        them. Without it, they are part of this design (as simulation needs).

    Members
    -------
    <endpoint>_s_axis, <endpoint>_m_axis
        AXI4-Stream ports of each endpoint (see :mod:`optnet.hw.endpoint`; on a direct
        node, ``tuser`` is the message length in beats, see :mod:`optnet.hw.direct`).
    link_up : Out(links)
    dropped : Out(16)
        Unroutable packets the router dropped (messages to no node the switch discarded).
    node_id : Out(id_bits)
        This node's id, from the one place the node's Verilog holds it (so that logic around
        the module, such as the board top's, needs no id of its own; see
        :mod:`optnet.emit.roles`).
    link<k>_crc_errors, link<k>_resent, link<k>_lost, link<k>_restarts : Out(16)
        The counters of link ``k``'s link layer (:data:`LINK_COUNTERS`; ``plan.ports[k]``),
        except on a direct node, whose links have none.
    """

    def __init__(self, plan: NodePlan, phys: str = "vendor",
                 parts: Parts | None = None):
        for port in plan.ports if plan.router is not None else ():
            if port.port not in plan.router.granted:
                # A link layer grants its far end's buffer by pulses: a router output that
                # also started with that credit would overflow the far end.
                raise ValueError(f"node {plan.node}: router port {port.port} is linked but "
                                 f"starts with credit (RouterConfig.granted)")
        self.plan = plan
        self.phys = phys
        self.parts = parts
        self._adapters = {}
        members = {}
        for name, ep in zip(plan.endpoint_names, plan.endpoints, strict=True):
            members[f"{name}_s_axis"] = In(stream.Signature(axis_tx_layout(ep)))
            members[f"{name}_m_axis"] = Out(stream.Signature(axis_rx_layout(ep)))
        members["link_up"] = Out(max(len(plan.ports), 1))
        members["dropped"] = Out(16)
        members["node_id"] = Out(plan.fmt.id_bits)
        if plan.direct is None:
            for k in range(len(plan.ports)):
                members.update((f"link{k}_{name}", Out(16)) for name in LINK_COUNTERS)
        for port in plan.ports:
            p, w = port.port, port.link.phy_width
            if phys == "sim":
                members[f"phy{p}_tx"] = Out(stream.Signature(w, always_ready=True))
                members[f"phy{p}_rx"] = In(stream.Signature(w, always_ready=True))
                members[f"phy{p}_up"] = In(1)
                members[f"phy{p}_flit"] = Out(1)
            else:
                adapter = self._adapter(port)
                self._adapters[p] = adapter
                for pad, member in adapter.signature.members.items():
                    if pad not in ("tx", "rx", "up") and not _share_pad(pad):
                        members[f"port{p}_{pad}"] = member
        super().__init__(members)

    def _adapter(self, port):
        if port.phy == "lvds":
            from optnet.hw.phy.lvds import LvdsPhy
            return LvdsPhy(len(port.lanes), f"phy{port.port}", lvds_family(self.plan.family))
        from optnet.hw.phy.vendor import make_vendor_phy
        x = port.xcvr
        share = {} if x is None else {"role": x.role, "quad": x.quad, "qpll": x.qpll,
                                      "channel": x.channel}
        return make_vendor_phy(port.phy, len(port.lanes), f"phy{port.port}", ip_name(port),
                               family=self.plan.family, **share)

    def elaborate(self, platform):
        m = Module()
        plan = self.plan
        if plan.direct is not None:
            self._direct(m)
            return m
        if self.parts is None:
            m.submodules.router = router = Router(plan.router)
        else:
            router = instantiate(m, "router", self.parts.router,
                                 Router.signature_of(plan.router), {"sync": "sync"})
        m.submodules.hub = hub = LocalHub(plan.fmt, len(plan.endpoints), plan.router.depth)
        wiring.connect(m, hub.to_router, router.inp[0])
        # (with block RAM tables, the id is the last word of the first table)
        node_id = router.node_id if plan.router.block_tables else _node_id_rom(m, plan)
        m.d.comb += [hub.to_router_cred.eq(router.cred_out[0]), self.dropped.eq(router.dropped),
                     self.node_id.eq(node_id)]
        ep_tx = list(hub.ep_tx)
        if plan.cascade is None:
            wiring.connect(m, router.out[0], hub.from_router)
            m.d.comb += router.cred_in[0].eq(hub.from_router_cred)
        else:
            m.submodules.cascade = cascade = CascadeUnit(plan.cascade)
            wiring.connect(m, router.out[0], cascade.net_in)
            wiring.connect(m, cascade.net_out, hub.from_router)
            m.d.comb += [router.cred_in[0].eq(cascade.net_cred), cascade.node_id.eq(node_id)]
            for i in range(len(plan.endpoints)):
                wiring.connect(m, cascade.ep_out[i], hub.ep_tx[i])
            ep_tx = list(cascade.ep_in)
        for i, (name, cfg) in enumerate(zip(plan.endpoint_names, plan.endpoints, strict=True)):
            ep = Endpoint(cfg)
            m.submodules[f"ep_{name}"] = ep
            m.d.comb += ep.node_id.eq(node_id)
            wiring.connect(m, ep.net_tx, ep_tx[i])
            wiring.connect(m, hub.ep_rx[i], ep.net_rx)
            wiring.connect(m, wiring.flipped(getattr(self, f"{name}_s_axis")), ep.s_axis)
            wiring.connect(m, ep.m_axis, wiring.flipped(getattr(self, f"{name}_m_axis")))
        ups = []
        for k, port in enumerate(plan.ports):
            p = port.port
            link = self._link(m, LinkLayer, port)
            wiring.connect(m, router.out[p], link.tx_flit)
            m.d.comb += router.room[p].eq(link.tx_room)
            wiring.connect(m, link.rx_flit, router.inp[p])
            m.d.comb += [link.cred_local.eq(router.cred_out[p]),
                         router.cred_in[p].eq(link.cred_remote)]
            ups.append(link.up)
            m.d.comb += [getattr(self, f"link{k}_{name}").eq(getattr(link, name))
                         for name in LINK_COUNTERS]
            self._phy(m, port, link, link.tx_flit)
        if ups:
            m.d.comb += self.link_up.eq(Cat(ups))
        return m

    def _link(self, m: Module, cls: type, port) -> wiring.Component:
        """Port ``port``'s link (``cls``: :class:`~optnet.hw.link.LinkLayer` or
        :class:`~optnet.hw.direct.DirectLink`), built here or, with shared parts, an
        instance of the part for its configuration."""
        p = port.port
        if self.parts is None:
            m.submodules[f"link{p}"] = link = cls(port.link)
            return link
        return instantiate(m, f"link{p}", self.parts.links[_shared(port.link)],
                           cls.signature_of(port.link),
                           {"sync": "sync", SHARED_PHY_DOMAIN: port.link.phy_domain})

    def _phy(self, m: Module, port, link, into) -> None:
        """Connect the PHY side of ``port``'s ``link`` (``phy_tx``, ``phy_rx``, ``phy_up``)
        to its adapter, or in simulation to this component's ``phy<p>_*`` members, with
        ``phy<p>_flit`` the handshakes of ``into``, the stream into the link."""
        p = port.port
        if self.phys == "sim":
            m.d.comb += getattr(self, f"phy{p}_flit").eq(into.valid & into.ready)
            # The link model takes a word every cycle. A constant rather than an input, and
            # the received words and the link state registered, as a PHY's outputs are:
            # then no logic depends on the module's inputs combinationally, and a simulator
            # evaluates the PHY side at its clock's edges only.
            tx, rx = getattr(self, f"phy{p}_tx"), getattr(self, f"phy{p}_rx")
            m.d.comb += [tx.valid.eq(link.phy_tx.valid), tx.payload.eq(link.phy_tx.payload),
                         link.phy_tx.ready.eq(1)]
            m.d[port.link.phy_domain] += [
                link.phy_rx.valid.eq(rx.valid), link.phy_rx.payload.eq(rx.payload),
                link.phy_up.eq(getattr(self, f"phy{p}_up"))]
            return
        adapter = self._adapters[p]
        m.submodules[f"phy{p}"] = adapter
        wiring.connect(m, link.phy_tx, adapter.tx)
        wiring.connect(m, adapter.rx, link.phy_rx)
        m.d.comb += link.phy_up.eq(adapter.up)
        for pad in adapter.signature.members:
            if pad in ("tx", "rx", "up"):
                continue
            if _share_pad(pad):
                # A slave's quad clocks (Virtex-5: its channel of the tile) come from its
                # master's adapter, inside the node; what a slave gives its master goes
                # the other way. A master's pads are wired with its slave's.
                if port.xcvr.role == "slave":
                    master = getattr(self._adapters[port.xcvr.master], pad)
                    if adapter.signature.members[pad].flow == In:
                        m.d.comb += getattr(adapter, pad).eq(master)
                    else:
                        m.d.comb += master.eq(getattr(adapter, pad))
                continue
            outer, inner = getattr(self, f"port{p}_{pad}"), getattr(adapter, pad)
            if adapter.signature.members[pad].flow == Out:
                m.d.comb += outer.eq(inner)
            else:
                m.d.comb += inner.eq(outer)

    def _direct(self, m: Module) -> None:
        """A direct node: the switch, a direct link per link port and a loopback port, the
        hub and the endpoints' streams, widened to the switch's beat and back."""
        plan = self.plan
        cfg = plan.direct
        if self.parts is None:
            m.submodules.switch = switch = DirectSwitch(cfg)
        else:
            switch = instantiate(m, "switch", self.parts.switch,
                                 DirectSwitch.signature_of(cfg), {"sync": "sync"})
        ports, ids = plan.direct_tables()
        m.submodules.hub = hub = DirectHub(cfg, plan.fmt.id_bits, ports, ids)
        m.d.comb += self.node_id.eq(_node_id_rom(m, plan))
        wiring.connect(m, hub.to_switch, switch.s_axis)
        wiring.connect(m, switch.m_axis, hub.from_switch)
        m.d.comb += self.dropped.eq(switch.discarded)
        for i, name in enumerate(plan.endpoint_names):
            s_axis, m_axis = getattr(self, f"{name}_s_axis"), getattr(self, f"{name}_m_axis")
            tx, rx = hub.ep_tx[i], hub.ep_rx[i]
            # an endpoint's beat is zero-extended to the switch's, and cut back to its width
            m.d.comb += [
                tx.valid.eq(s_axis.valid), s_axis.ready.eq(tx.ready),
                tx.payload.tdata.eq(s_axis.payload.tdata),
                tx.payload.tlast.eq(s_axis.payload.tlast),
                tx.payload.tdest.eq(s_axis.payload.tdest),
                tx.payload.tuser.eq(s_axis.payload.tuser),
                m_axis.valid.eq(rx.valid), rx.ready.eq(m_axis.ready),
                m_axis.payload.tdata.eq(rx.payload.tdata),
                m_axis.payload.tlast.eq(rx.payload.tlast),
                m_axis.payload.tid.eq(rx.payload.tid),
            ]
        ups = []
        for i, port in enumerate(plan.ports):
            link = self._link(m, DirectLink, port)
            wiring.connect(m, switch.tx[i], link.tx)
            wiring.connect(m, link.rx, switch.rx[i])
            m.d.comb += switch.up[i].eq(link.up)
            ups.append(link.up)
            self._phy(m, port, link, link.tx)
        if ups:
            m.d.comb += self.link_up.eq(Cat(ups))
        # The node's own messages go round through the switch's last port: its words come
        # back a cycle later, as over a link of its own.
        loop = len(plan.ports)
        back = switch.rx[loop]
        m.d.comb += [switch.tx[loop].ready.eq(1), switch.up[loop].eq(1)]
        m.d.sync += [back.valid.eq(switch.tx[loop].valid),
                     back.payload.eq(switch.tx[loop].payload)]
