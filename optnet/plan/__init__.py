"""The plan stage: every decision about a node's hardware, made before any is built.

``plan(routed)`` turns a routed cluster into one :class:`NodePlan` per FPGA: the flit
format, the router's ports, buffers, credits and table contents, each link port's PHY and
link-layer parameters, and the endpoints (the parameter classes are in
:mod:`optnet.plan.configs`). A direct cluster (:func:`optnet.model.is_direct`: fully
connected, ``flow_control: none``) gets OPTWEB's direct switch instead of a router and link
layers: its :class:`~optnet.plan.configs.DirectConfig`, and per link port a
:class:`~optnet.plan.configs.DirectLinkConfig`. Plans are immutable; the lowering
(:mod:`optnet.hw.top`) builds a :class:`~optnet.hw.top.NodeTop` from one. The rest of a
node's plan is made from its :class:`NodePlan` and board: its clocks
(:mod:`optnet.plan.clocks`), the board top's ports and pins (:mod:`optnet.plan.pins`) and
the vendor link IP (:mod:`optnet.plan.ip`).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from optnet.cluster import Cluster, Link
from optnet.devices import families
from optnet.devices.linkip import VENDOR_PHYS, ip_ports, user_width_for
from optnet.diagnostics import Finding
from optnet.model import (
    DIRECT_LENGTH_BITS,
    DirectParams,
    arg_bits,
    direct_params,
    endpoint_credits,
    model_params,
)
from optnet.plan.configs import (
    CascadeConfig,
    DirectConfig,
    DirectLinkConfig,
    EndpointConfig,
    FlitFormat,
    LinkConfig,
    RouterConfig,
    clog2,
)
from optnet.plan.transceivers import LinkPort, PortXcvr, XcvrPlan, transceiver_plan
from optnet.routing.proof import Waits
from optnet.routing.route import Routed
from optnet.routing.tables import NodeTable, node_tables
from optnet.spec.models import EndpointDesc

__all__ = ["HW_PHYS", "NodePlan", "PlanError", "PortPlan", "plan"]

#: PHYs the hardware generator has an adapter for.
HW_PHYS = ("aurora_8b10b", "aurora_64b66b", "serial_lite_3", "interlaken", "lvds")

#: Header bits reserved for the header's argument (credit grants).


class PlanError(Exception):
    """The cluster is valid but its hardware cannot be generated; ``args`` are the
    :class:`~optnet.diagnostics.Finding` s (E30x, and E33x for transceiver rules), one per
    problem."""


@dataclass(frozen=True)
class PortPlan:
    """One link port of a node.

    Attributes
    ----------
    port : int
        Router port number (1 ...; 0 is the local port).
    name : str
        Board port, with its lane range when the link uses part of it.
    board_port : str
    lanes : tuple of int
        Lanes of the board port the link uses.
    phy : str
    line_rate : int
        Per lane, bit/s.
    peer : str
        ``node.port`` at the far end.
    link : LinkConfig or DirectLinkConfig
        Its link layer's parameters; on a direct node, its direct link's.
    xcvr : PortXcvr or None
        Its transceiver plan (shared-logic role, PLL, quads); None for LVDS.
    """

    port: int
    name: str
    board_port: str
    lanes: tuple[int, ...]
    phy: str
    line_rate: int
    peer: str
    link: LinkConfig | DirectLinkConfig
    xcvr: PortXcvr | None = None


@dataclass(frozen=True)
class NodePlan:
    """Hardware plan of one FPGA.

    Attributes
    ----------
    node : str
    node_id : int
    board : str
    vendor, family, part : str
    clock_hz : float
        Network clock.
    fmt : FlitFormat
        On a direct node, only its ``width`` (the switch's beat) and ``id_bits`` are used.
    router : RouterConfig or None
        None on a direct node.
    ports : tuple of PortPlan
        Link ports in router port order (on a direct node, port ``p`` is the switch's
        port ``p - 1``).
    endpoints : tuple of EndpointConfig
    endpoint_names : tuple of str
    table : NodeTable or None
        The routing stage's tables (the router's memories are initialised from them); None
        in a plan made without tables (for lint).
    xcvr : XcvrPlan
        The transceiver plan (:mod:`optnet.plan.transceivers`).
    direct : DirectConfig or None
        A direct node's switch: its ports are the links in port order, then the node
        itself (a loopback).
    peer_ids : tuple of int
        On a direct node, the id of the node behind each switch port (the last its own).
    cascade : CascadeConfig or None
        The cascade broadcast unit between the endpoints and hub and the router's local
        port (``routing.broadcast: cascade`` on a node with links); None: none.
    bringup : bool
        The board top drives the endpoints with the bring-up kit (traffic generators and
        checkers, counters, and the UART registers where the board has a UART:
        :mod:`optnet.hw.bringup`); without it they are idle.
    """

    node: str
    node_id: int
    board: str
    vendor: str
    family: str
    part: str
    clock_hz: float
    fmt: FlitFormat
    router: RouterConfig | None
    ports: tuple[PortPlan, ...]
    endpoints: tuple[EndpointConfig, ...]
    endpoint_names: tuple[str, ...]
    table: NodeTable | None
    xcvr: XcvrPlan = dataclasses.field(default_factory=XcvrPlan)
    direct: DirectConfig | None = None
    peer_ids: tuple[int, ...] = ()
    cascade: CascadeConfig | None = None
    bringup: bool = True

    def role(self) -> tuple:
        """Everything but the tables and names: nodes with equal roles have identical
        hardware apart from table contents and the node id (on a direct node, the ids
        behind its ports)."""
        router = None if self.router is None else dataclasses.replace(
            self.router, unicast=(), multicast=(), node_id=0)
        return (self.board, self.fmt, router, self.direct, tuple(
            (p.port, p.board_port, p.lanes, p.phy, p.line_rate, p.link, p.xcvr)
            for p in self.ports),
            tuple(dataclasses.replace(e, node_id=0) for e in self.endpoints), self.cascade)

    def direct_tables(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """A direct node's two tables (:class:`~optnet.hw.direct.DirectHub`): per node id
        the switch port leading to it (``peers``, which discards, for an id no node has),
        and per switch port the id behind it."""
        peers = self.direct.peers
        port = {node_id: p for p, node_id in enumerate(self.peer_ids)}
        return (tuple(port.get(i, peers) for i in range(1 << self.fmt.id_bits)),
                self.peer_ids)


def plan(routed: Routed, *, tables: bool = True, one_per_role: bool = False,
         bringup: bool = True) -> list[NodePlan]:
    """Plan the hardware of every node of ``routed`` (whose proof must have passed).

    Without ``tables`` the routers' table words are left empty and ``table`` is None: what
    lint checks (clocks, projects, per hardware role) does not read them, and packing the
    tables of a thousand nodes takes longer than the rest of the plan. With
    ``one_per_role`` only the first node of each hardware role (:meth:`NodePlan.role`) is
    planned: a node's role is fixed by its board and its ports, which are known before its
    plan is made, and lint needs no more than one plan per role. ``bringup``: every plan's
    :attr:`NodePlan.bringup`.

    Raises
    ------
    PlanError
        With every reason the hardware cannot be generated.
    """
    cluster = routed.cluster
    desc = cluster.desc
    net = desc.network
    problems = _family_findings(cluster) + _link_findings(cluster)
    direct = direct_params(cluster)
    # A cluster that declares no endpoints gets one unmanaged endpoint, "user", as wide as
    # a flit, so every node still has a port for the user's logic.
    eps = desc.endpoints or [EndpointDesc(name="user", width=net.flit_width, managed=False)]
    fmt = FlitFormat(
        width=net.flit_width if direct is None else direct.width, vcs=net.vcs,
        id_bits=clog2(max(n.id for n in cluster.nodes) + 1),
        ep_bits=clog2(max(len(eps), 1)), prio_bits=clog2(net.priorities),
        arg_bits=arg_bits(desc.endpoints))
    if direct is None and fmt.header_bits > fmt.width:
        problems.append(Finding(
            "E302", f"The packet header needs {fmt.header_bits} bits but flits are "
            f"{fmt.width} bits wide in cluster '{cluster.name}'.", ("network", "flit_width"),
            hint=f"Use a flit_width of at least {-(-fmt.header_bits // 8) * 8}."))
    if direct is None and net.max_packet.value < 2:
        problems.append(Finding(
            "E305", f"A packet of at most {net.max_packet} has no room for data after its "
            f"header flit in cluster '{cluster.name}'.", ("network", "max_packet"),
            hint="Use a max_packet of at least 2 flits."))
    for i, ep in enumerate(desc.endpoints):
        if ep.width > fmt.width:
            problems.append(Finding(
                "E303", f"Endpoint '{ep.name}' is {ep.width} bits wide but flits are "
                f"{fmt.width} bits; one beat must fit one flit.", ("endpoints", i, "width"),
                hint=f"Make the endpoint at most {fmt.width} bits wide, or widen the flits."))
    if problems:
        raise PlanError(*problems)
    max_packet = int(net.max_packet.value)
    # Each link's replay window covers its round trip, and the routers' buffers its credit
    # loop, by the report's model.
    params = model_params(cluster)
    depth = params.buffer_depth
    waits = Waits.of(net, depth)
    plans = []
    configs: dict[tuple, LinkConfig] = {}
    roles: set[tuple] = set()
    xcvrs: dict[tuple, XcvrPlan] = {}
    xcvr_findings: list[Finding] = []
    for table, node in zip(node_tables(routed) if tables else [None] * len(cluster.nodes),
                           cluster.nodes, strict=True):
        x = node.index
        radix = len(routed.net.ports[x])
        links = []
        for c in routed.net.out[x]:
            # Channel 2i runs from link i's end a to its end b, 2i + 1 back.
            link = cluster.links[c // 2]
            own, far = (link.a, link.b) if c % 2 == 0 else (link.b, link.a)
            width = _user_width(link.phy, link.lanes, node.board.family)
            links.append((routed.net.out_port[c], own, far, link, width,
                          (params.replay_window(link), params.go_back_timeout(link))
                          if direct is None else (0, 0)))
        role = (node.board.name, tuple((p, own.port, own.lanes, link.phy, link.line_rate, w,
                                        win) for p, own, _, link, w, win in links))
        if one_per_role and role in roles:
            continue
        roles.add(role)
        if role not in xcvrs:
            # A role's transceivers are its board's and ports'; its first node speaks for it.
            xcvrs[role], found = transceiver_plan(node.name, node.board, [
                LinkPort(p, routed.net.ports[x][p], own.port, own.lanes, link.phy,
                         int(link.line_rate.value), link.origin, link.setting_paths("lanes"))
                for p, own, _, link, _, _ in links if link.phy in VENDOR_PHYS])
            xcvr_findings += found
        xcvr = xcvrs[role]
        if direct is not None:
            plans.append(_direct_plan(cluster, node, routed.net.ports[x], links, xcvr, fmt,
                                      eps, direct, table))
            continue
        ports = []
        fam = families.family(node.board.family)
        side_ram = fam.wide_ram
        for p, own, far, link, width, (window, timeout) in links:
            key = (width, p, window, timeout, side_ram)   # one per key is shared by all nodes
            if key not in configs:
                configs[key] = LinkConfig(fmt, width, f"phy{p}", depth, window=window,
                                          crc_bits=params.crc_bits, side_ram=side_ram,
                                          timeout=timeout)
            ports.append(PortPlan(
                p, routed.net.ports[x][p], own.port, own.lanes, link.phy,
                int(link.line_rate.value), str(far), configs[key], xcvr.ports.get(p)))
        # The local port's "receiver" is the hub, which takes flits straight into the
        # endpoints and returns each credit at once; two packets' worth keeps it streaming.
        router = RouterConfig(
            fmt, radix, depth, (2 * max_packet,) + (depth,) * (radix - 1),
            tuple(table.unicast_words()) if table else (),
            tuple(table.multicast_words()) if table else (),
            allocator=net.router.allocator, priorities=net.priorities,
            block_tables=fam.block_tables,
            multicast_credits=waits.branch_credits, node_id=node.id,
            block_buffers=(fmt.flit.size * depth * net.vcs >= _BLOCK_BUFFER_BITS),
            granted=tuple(p.port for p in ports),
            whole_inputs=tuple(p for p, _, _, link, _, _ in links
                               if depth >= max_packet and params.slow_link(link)),
            quiet=max_packet)
        endpoints = tuple(EndpointConfig(
            fmt, node.id, i, ep.width, max_packet, waits.broadcast_flits, managed=ep.managed,
            buffer=int(ep.buffer.value) if ep.buffer is not None else 64,
            **dict(zip(("init_budget", "credit", "offset"), endpoint_credits(ep),
                       strict=True)),
            priority=min(ep.priority, net.priorities - 1),
            nodes=tuple(n.id for n in cluster.nodes)) for i, ep in enumerate(eps))
        # The routers' cascade tables are one-hop fan-outs; the unit stores and sends on.
        cascade = CascadeConfig(fmt, len(eps), radix - 1, waits.broadcast_flits) \
            if routed.broadcast.mode == "cascade" and radix > 1 else None
        board = node.board
        plans.append(NodePlan(
            node.name, node.id, board.name, board.vendor, board.family, board.part,
            float(net.clock.value), fmt, router, tuple(ports), endpoints,
            tuple(ep.name for ep in eps), table, xcvr, cascade=cascade))
    if xcvr_findings:
        raise PlanError(*xcvr_findings)
    return [p if bringup else dataclasses.replace(p, bringup=False) for p in plans]


def _direct_plan(cluster: Cluster, node, names, links: list, xcvr: XcvrPlan, fmt: FlitFormat,
                 eps: list[EndpointDesc], sizes: DirectParams,
                 table: NodeTable | None) -> NodePlan:
    """The plan of a node of a direct cluster: a direct switch whose ports are its links in
    port order and then a loopback to itself, a direct link per link port, and endpoints
    whose ``tuser`` is the message length. ``table`` (the routing stage's one-hop routes)
    goes into the build's route files; the hardware's tables are
    :meth:`NodePlan.direct_tables`."""
    net = cluster.desc.network
    switch = DirectConfig(
        width=sizes.width, peers=len(links) + 1, threshold=sizes.threshold,
        buffer=sizes.buffer, phy_width=sizes.width + 1, max_length_bits=DIRECT_LENGTH_BITS,
        endpoints=sizes.endpoints)
    ports = tuple(PortPlan(
        p, names[p], own.port, own.lanes, link.phy,
        int(link.line_rate.value), str(far),
        DirectLinkConfig(sizes.width, switch.control.size, width, f"phy{p}"), xcvr.ports.get(p))
        for p, own, far, link, width, _ in links)
    # The message-level credit of the switch replaces the endpoints' packet credit, and
    # a message is as long as its sender says: max_packet and broadcast_flits do not apply.
    endpoints = tuple(EndpointConfig(
        fmt, node.id, i, ep.width, 2, managed=False,
        priority=min(ep.priority, net.priorities - 1), nodes=tuple(n.id for n in cluster.nodes),
        length_bits=DIRECT_LENGTH_BITS)
        for i, ep in enumerate(eps))
    peer_ids = (*(cluster.node(far.node).id for _, _, far, _, _, _ in links), node.id)
    board = node.board
    return NodePlan(
        node.name, node.id, board.name, board.vendor, board.family, board.part,
        float(net.clock.value), fmt, None, ports, endpoints, tuple(ep.name for ep in eps),
        table, xcvr, switch, peer_ids)


#: Input-buffer storage per router port from which it goes into block RAM: above this, LUT
#: RAM costs more than a quarter of a block (Xilinx 7-series: 128-bit flits, 32 words take
#: 88 LUTs per input, two RAMB36).
_BLOCK_BUFFER_BITS = 2048


# Thousands of ports share a handful of (PHY, lanes, family) user widths.
_user_width = functools.cache(user_width_for)


def _family_findings(cluster: Cluster) -> list[Finding]:
    """E320 for each board whose FPGA family optnet does not know
    (:mod:`optnet.devices.families`): no hardware of its can be planned."""
    findings = []
    seen: set[str] = set()
    for node in cluster.nodes:
        board = node.board
        if board.name in seen:
            continue
        seen.add(board.name)
        try:
            families.family(board.family)
        except ValueError as exc:
            findings.append(Finding(
                "E320", f"Node '{node.name}' is on board '{board.name}', a {board.vendor} "
                f"{board.family} part, whose hardware optnet cannot generate: {exc}",
                node.origin, hint="Give the board file a family optnet knows."))
    return findings


def _link_findings(cluster: Cluster) -> list[Finding]:
    """E301 for links whose PHY has no hardware adapter, whose vendor IP cannot be made
    (the lane count or FPGA family the core does not support) or whose LVDS primitives
    the family does not have, one finding per reason."""
    grouped: dict[tuple[str, str], list[Link]] = {}
    refusals: dict[tuple[str, int, str], str | None] = {}
    for link in cluster.links:
        if link.phy not in HW_PHYS:
            reason = ("phy", f"'{link.phy}', which optnet cannot generate hardware for "
                             f"yet; it has adapters for {', '.join(HW_PHYS)}.")
            grouped.setdefault(reason, []).append(link)
            continue
        if link.phy == "lvds":
            for family in sorted({cluster.node(e.node).board.family for e in (link.a, link.b)}):
                try:
                    lvds = families.family(family).lvds
                except ValueError:
                    continue        # an unknown family: _family_findings says so
                if lvds is None:
                    reason = ("phy", f"lvds on {family}, for which optnet has no LVDS I/O "
                                     f"primitives.")
                    grouped.setdefault(reason, []).append(link)
            continue
        if link.phy not in VENDOR_PHYS:
            continue
        for family in sorted({cluster.node(e.node).board.family for e in (link.a, link.b)}):
            # Thousands of links share a handful of (PHY, lanes, family) cores.
            core = (link.phy, link.lanes, family)
            if core not in refusals:
                try:
                    ip_ports(*core)
                    refusals[core] = None
                except ValueError as exc:
                    refusals[core] = str(exc)
            if refusals[core] is not None:
                key = "lanes" if "lanes" in refusals[core] else "phy"
                reason = (key, f"{link.phy} over {link.lanes} lane(s) on {family}, whose "
                               f"IP optnet cannot generate: {refusals[core]}.")
                grouped.setdefault(reason, []).append(link)
    findings = []
    for (key, reason), links in grouped.items():
        first = links[0]
        what = (f"{len(links)} links (first {first}) run" if len(links) > 1
                else f"Link {first} runs")
        findings.append(Finding("E301", f"{what} {reason}", first.origin,
                                settings=first.setting_paths(key)))
    return findings
