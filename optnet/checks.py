"""Semantic checks of an elaborated cluster that need no routing: the elaborate stage's
checks, beside :mod:`optnet.elaborate` (the checks of the files themselves are
:mod:`optnet.spec`'s).

Each check reads the :class:`~optnet.cluster.Cluster` and returns diagnostics; none
changes anything. Findings on generated links are grouped (one diagnostic for all torus
links that exceed a port's rate, not one per link), so a 1024-node cluster with one wrong
setting gives one message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction

import networkx as nx

from optnet.cluster import Cluster, Link
from optnet.diagnostics import Diagnostic
from optnet.model import (
    DirectParams,
    ModelParams,
    direct_params,
    endpoint_credits,
    is_direct,
    model_params,
)
from optnet.phys import PARALLEL_REACH, PHYS
from optnet.spec.names import check_identifier
from optnet.spec.source import Path, SourceMap
from optnet.units import Dimension, Quantity, format_quantity

__all__ = ["CHECKS", "check_cluster"]

def _q(value: Fraction, dim: Dimension) -> str:
    return format_quantity(Quantity(Fraction(value), dim))


class _Collector:
    """Diagnostics, with findings on generated links grouped by reason."""

    def __init__(self, smap: SourceMap) -> None:
        self.smap = smap
        self.diags: list[Diagnostic] = []
        self.grouped: dict[tuple[str, str], list[Link]] = defaultdict(list)

    def link(self, link: Link, code: str, reason: str, key: str | None = None) -> None:
        """A finding on ``link`` about its setting ``key`` (``phy``, ``line_rate`` ...),
        located where that setting is written, or at the link when it is about no one
        setting or the setting is not written anywhere."""
        where = setting_path(link, key, self.smap) if key else None
        if link.role == "explicit":
            self.diags.append(Diagnostic(code, f"Link {link}: {reason}",
                                         self.smap.at(where or link.origin)))
        else:
            self.grouped[(code, reason, where)].append(link)

    def done(self) -> list[Diagnostic]:
        for (code, reason, where), links in self.grouped.items():
            first = links[0]
            many = (f"{len(links)} generated {first.role} links (first {first})"
                    if len(links) > 1 else f"Generated {first.role} link {first}")
            self.diags.append(Diagnostic(code, f"{many}: {reason}", self.smap.at(where)
                                         if where else self.smap.at(first.origin, key=True)))
        return self.diags


def setting_path(link: Link, key: str, smap: SourceMap) -> Path | None:
    """Where setting ``key`` of ``link`` is written (:meth:`Link.setting_paths`), or None.

    A finding about a generated link's lanes belongs on the ``lanes`` the user would change,
    not on the topology that generated the link.
    """
    return next((path for path in link.setting_paths(key) if path in smap.values), None)


def _check_phy(cluster: Cluster, out: _Collector) -> None:
    # Links with the same PHY, lanes, rate, length and board ports have the same findings;
    # a generated cluster has thousands of links and a handful of such kinds.
    kinds: dict[tuple, list[tuple[str, str, str | None]]] = {}
    for link in cluster.links:
        ends = tuple((cluster.node(e.node).board.name, e.port) for e in (link.a, link.b))
        kind = (link.phy, link.lanes, link.line_rate, link.length, ends)
        if kind not in kinds:
            kinds[kind] = _phy_findings(cluster, link)
        for code, reason, key in kinds[kind]:
            out.link(link, code, reason, key)


def _phy_findings(cluster: Cluster, link: Link) -> list[tuple[str, str, str | None]]:
    """(code, reason, setting) of every PHY, rate and reach finding on ``link``."""
    found: list[tuple[str, str, str | None]] = []
    phy = PHYS[link.phy]
    rate = link.line_rate
    for end in (link.a, link.b):
        board = cluster.node(end.node).board
        port = board.ports[end.port]
        if phy.port_kind != port.kind:
            found.append(("E110", f"{link.phy} needs a {phy.port_kind} port, but "
                          f"{board.name} port {end.port} is {port.kind}.", "phy"))
        elif phy.vendors and board.vendor not in phy.vendors:
            found.append(("E110", f"{link.phy} is not available on {board.vendor} FPGAs "
                          f"({board.name}); it runs on {', '.join(sorted(phy.vendors))}.",
                          "phy"))
        limits = []
        if port.max_line_rate is not None:
            limits.append((port.max_line_rate, f"port {end.port} of {board.name}"))
        if port.kind == "serial" and board.transceivers is not None:
            limits.append((board.transceivers.max_line_rate,
                           f"the {board.transceivers.type} transceivers of {board.name}"))
        for limit, what in limits:
            if rate.value > limit.value:
                found.append(("E106", f"the line rate {rate} exceeds the {limit} limit of "
                              f"{what}.", "line_rate"))
                break
    if not phy.min_rate.value <= rate.value <= phy.max_rate.value:
        found.append(("E107", f"the line rate {rate} is outside the {phy.min_rate} to "
                      f"{phy.max_rate} range of {link.phy}.", "line_rate"))
    if link.lanes > phy.max_lanes:
        found.append(("E107", f"{link.phy} bonds at most {phy.max_lanes} lanes, not "
                      f"{link.lanes}.", "lanes"))
    reach = _reach(cluster, link)
    if reach is not None and link.length is not None and link.length.value > reach:
        found.append(("W104", f"a source-synchronous parallel link of {link.length} is longer "
                      f"than the {_q(reach, Dimension.LENGTH)} its pairs stay deskewed over.",
                      "length"))
    return found


def _reach(cluster: Cluster, link: Link) -> Fraction | None:
    if PHYS[link.phy].port_kind != "parallel":
        return None
    connectors = {cluster.node(e.node).board.ports[e.port].connector for e in (link.a, link.b)}
    return PARALLEL_REACH["onboard" if "onboard" in connectors else None]


def _check_onboard(cluster: Cluster, out: _Collector) -> None:
    for link in cluster.links:
        for end, other in ((link.a, link.b), (link.b, link.a)):
            node, peer = cluster.node(end.node), cluster.node(other.node)
            port = node.board.ports[end.port]
            if port.connector != "onboard":
                continue
            if node.enclosure is None or node.enclosure != peer.enclosure:
                out.link(link, "E115", f"port {end} is an on-board connection, so "
                         f"{end.node} and {other.node} must be in the same enclosure "
                         f"(they are in {node.enclosure or 'none'} and "
                         f"{peer.enclosure or 'none'}).")
            elif port.onboard and other.port != port.onboard.peer_port:
                out.link(link, "E115", f"port {end} is wired on the board to port "
                         f"{port.onboard.peer_port} of its peer, not to {other.port}.")
            break


def _check_connected(cluster: Cluster, smap: SourceMap) -> list[Diagnostic]:
    # Union-find over the links: a multigraph of 16,000 links only to ask this took a tenth
    # of a second.
    parts_of = nx.utils.UnionFind(node.name for node in cluster.nodes)
    for link in cluster.links:
        parts_of.union(link.a.node, link.b.node)
    components = list(parts_of.to_sets())
    if len(components) < 2:
        return []
    parts = sorted((sorted(c, key=lambda n: cluster.node(n).index) for c in components),
                   key=lambda c: (-len(c), cluster.node(c[0]).index))
    shown = "; ".join(f"{{{', '.join(p[:4])}{', ...' if len(p) > 4 else ''}}}"
                      for p in parts[:4])
    return [Diagnostic("E111", f"The cluster falls apart into {len(parts)} parts that cannot "
                       f"reach each other: {shown}.", smap.at(("links",), key=True),
                       hint="Add links between the parts.")]


def _check_endpoints(cluster: Cluster, smap: SourceMap) -> list[Diagnostic]:
    diags = []
    seen: dict[str, int] = {}
    for i, ep in enumerate(cluster.desc.endpoints):
        path = ("endpoints", i)
        diags += check_identifier(ep.name, "endpoint name", smap.at((*path, "name")))
        if ep.name in seen:
            diags.append(Diagnostic("E021", f"Two endpoints are named '{ep.name}'.",
                                    smap.at((*path, "name"))))
        seen.setdefault(ep.name, i)
        if not ep.managed:
            given = [k for k in ("buffer", "credit", "offset", "init_budget")
                     if getattr(ep, k) is not None]
            if given:
                diags.append(Diagnostic(
                    "E117", f"Endpoint '{ep.name}' is unmanaged, so {', '.join(given)} "
                    "would have no effect: unmanaged endpoints have no end-to-end credits.",
                    smap.at((*path, given[0]))))
            continue
        buffer = ep.buffer.count if ep.buffer is not None else 64
        _, credit, offset = endpoint_credits(ep)
        if credit > buffer:
            diags.append(Diagnostic(
                "E117", f"Endpoint '{ep.name}' grants {credit} packets per credit but has "
                f"only {buffer} packets of buffer to grant them from.",
                smap.at((*path, "credit"))))
        elif offset >= credit:
            diags.append(Diagnostic(
                "E117", f"Endpoint '{ep.name}' sends a credit {offset} packets before the "
                f"sender's budget runs out, but one credit is only {credit} packets: the "
                "offset must be smaller than the credit.", smap.at((*path, "offset"))))
    return diags


def _check_buffers(cluster: Cluster, smap: SourceMap) -> list[Diagnostic]:
    net = cluster.desc.network
    direct = direct_params(cluster)
    if direct is not None:
        return _check_direct_buffers(cluster, direct, smap)
    params = model_params(cluster)
    depth = params.buffer_depth
    packet = net.max_packet.count * net.flit_width
    ports: dict[str, int] = defaultdict(int)
    for link in cluster.links:
        ports[link.a.node] += 1
        ports[link.b.node] += 1
    endpoint_bits = 0
    for ep in cluster.desc.endpoints:
        if ep.managed:
            buffer = ep.buffer.count if ep.buffer is not None else 64
            init = ep.init_budget if ep.init_budget is not None else 1
            endpoint_bits += (buffer + init * len(cluster.nodes)) * packet
    # A cascade broadcast's buffer: a slot per source id, of the longest broadcast packet
    # (optnet.routing.proof.broadcast_flits), each flit with its head and tail bits.
    cascade = 0
    if cluster.desc.routing.broadcast == "cascade":
        ids = 1 << max(1, max(n.id for n in cluster.nodes).bit_length())
        flits = min(net.max_packet.count, depth + 1)
        cascade = ids * flits * (net.flit_width + 2)
    diags = []
    reported: set[tuple] = set()
    for node in cluster.nodes:
        radix = ports[node.name] + 1
        router = radix * net.vcs * depth * net.flit_width
        replay = ports[node.name] * net.reliability.window * packet \
            if net.reliability.retransmit != "none" else 0
        need = router + replay + endpoint_bits + cascade
        bram = node.board.resources.bram
        have = bram.blocks * bram.size.value
        key = (node.board.name, need)
        if need > have and key not in reported:
            reported.add(key)
            broadcast = f", cascade {_q(cascade, Dimension.SIZE)}" if cascade else ""
            diags.append(Diagnostic(
                "E113", f"Node '{node.name}' needs {_q(need, Dimension.SIZE)} of buffer "
                f"(router {_q(router, Dimension.SIZE)}, replay {_q(replay, Dimension.SIZE)}, "
                f"endpoints {_q(endpoint_bits, Dimension.SIZE)}{broadcast}), but board "
                f"'{node.board.name}' has {_q(have, Dimension.SIZE)} of block RAM.",
                smap.at(node.origin)))
    if depth < net.max_packet.count:
        diags.append(Diagnostic(
            "W102", f"A packet of up to {net.max_packet} does not fit an input buffer of "
            f"{net.router.buffer}, so a blocked packet holds links on several hops.",
            smap.at(("network", "router", "buffer")),
            hint="Make the router buffer at least max_packet deep."))
    if net.router.buffer is not None:
        diags += _check_credit_loops(cluster, params, smap)
    return diags


def _check_credit_loops(cluster: Cluster, params: ModelParams,
                        smap: SourceMap) -> list[Diagnostic]:
    """W107 per kind of link whose credit loop the file's router buffer does not cover."""
    kinds: dict[tuple, list[Link]] = defaultdict(list)
    for link in cluster.links:
        kinds[(link.phy, link.lanes, link.line_rate.value, link.length)].append(link)
    depth = params.buffer_depth
    diags = []
    for links in kinds.values():
        link = links[0]
        need = params.credit_depth(link)
        if depth >= need:
            continue
        share = params.vc_share(link)
        loop = params.credit_loop(link)
        what = (f"{len(links)} links ({link.phy} x{link.lanes}, first {link})"
                if len(links) > 1 else f"Link {link} ({link.phy} x{link.lanes})")
        rate = _q(depth * params.flit_bits / loop, Dimension.RATE)
        diags.append(Diagnostic(
            "W107", f"{what}: a credit takes {float(loop) * 1e6:.2f} us to come back, the "
            f"time of {need} flits at the link's rate, but the router buffer holds "
            f"{depth} flits per VC, so one VC carries at most {rate} of flits "
            f"({100 * float(share):.0f} % of the link).",
            smap.at(("network", "router", "buffer")),
            hint=f"Make the router buffer at least {need} flits, or leave it out: optnet "
            f"then sizes it for every link ({1 << (need - 1).bit_length()} flits here)."))
    return diags


def _check_direct_buffers(cluster: Cluster, direct: DirectParams,
                          smap: SourceMap) -> list[Diagnostic]:
    # A direct node's switch holds a receive buffer of words (a beat and its last bit and
    # endpoint) per peer and one for itself; it has no router, replay buffer or endpoints.
    word = direct.width + 1 + direct.ep_bits
    need = len(cluster.nodes) * direct.buffer * word
    diags = []
    reported: set[str] = set()
    for node in cluster.nodes:
        bram = node.board.resources.bram
        have = bram.blocks * bram.size.value
        if need > have and node.board.name not in reported:
            reported.add(node.board.name)
            diags.append(Diagnostic(
                "E113", f"Node '{node.name}' needs {_q(need, Dimension.SIZE)} of buffer "
                f"(the direct switch's receive buffers, {direct.buffer} words of {word} bits "
                f"for each of the {len(cluster.nodes)} nodes, itself included), but board "
                f"'{node.board.name}' has {_q(have, Dimension.SIZE)} of block RAM.",
                smap.at(("network", "direct", "buffer")),
                hint="Make network.direct.buffer smaller."))
    return diags


def _check_unverified(cluster: Cluster, smap: SourceMap) -> list[Diagnostic]:
    ports: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    first: dict[str, Link] = {}
    for link in cluster.links:
        for end in (link.a, link.b):
            board = cluster.node(end.node).board
            if not board.ports[end.port].verified:
                ports[board.name][end.port] += 1
                first.setdefault(board.name, link)
    diags = []
    for board, used in ports.items():
        listed = ", ".join(f"{port} ({count} link end{'s' if count > 1 else ''})"
                           for port, count in sorted(used.items()))
        diags.append(Diagnostic(
            "W103", f"Links use ports of board '{board}' whose pins or sites are not verified "
            f"against the board's documentation: {listed}.", smap.at(first[board].origin),
            hint=f"Read the notes of these ports in the board file {board}.yaml and confirm "
            "the pins before building constraints."))
    return diags


def _check_network_kind(cluster: Cluster, smap: SourceMap) -> list[Diagnostic]:
    # Settings the schema accepts for what the papers describe but the hardware builds only
    # in one shape: say what is built instead, rather than build it silently.
    desc = cluster.desc
    net = desc.network
    diags = []
    direct = is_direct(cluster)
    if net.flow_control == "xon_xoff" or (net.flow_control == "none" and not direct):
        built = ("only on fully connected clusters, with OPTWEB's direct switch"
                 if net.flow_control == "none" else "nowhere")
        diags.append(Diagnostic(
            "W105", f"Cluster '{desc.name}' asks for '{net.flow_control}' flow control, which "
            f"the generated hardware implements {built}; its link layers use credit-based flow "
            f"control instead.", smap.at(("network", "flow_control")),
            hint="Use flow_control: credit, which is what is built."))
    # The default broadcast (tree) is not something a direct cluster's author asked for.
    asked = "broadcast" in desc.routing.model_fields_set
    if direct and asked and desc.routing.broadcast in ("tree", "cascade"):
        diags.append(Diagnostic(
            "W106", f"Cluster '{desc.name}' is built with the direct switch, which forwards "
            f"nothing, so '{desc.routing.broadcast}' broadcast has no hardware: a broadcast is "
            f"sent as one message per peer.", smap.at(("routing", "broadcast")),
            hint="Use broadcast: unicast, which is what is built."))
    return diags


def _check_names(cluster: Cluster, smap: SourceMap) -> list[Diagnostic]:
    return check_identifier(cluster.desc.name, "cluster name", smap.at(("name",)))


def _link_checks(cluster: Cluster, smap: SourceMap) -> list[Diagnostic]:
    out = _Collector(smap)
    _check_phy(cluster, out)
    _check_onboard(cluster, out)
    return out.done()


CHECKS: tuple[Callable[[Cluster, SourceMap], list[Diagnostic]], ...] = (
    _check_names, _link_checks, _check_endpoints, _check_buffers, _check_unverified,
)
"""Checks that are meaningful on any elaborated cluster, even a partly broken one."""

GLOBAL_CHECKS: tuple[Callable[[Cluster, SourceMap], list[Diagnostic]], ...] = (
    _check_connected, _check_network_kind,
)
"""Checks that need the whole cluster; skipped when elaboration dropped nodes or links."""


def check_cluster(cluster: Cluster, smap: SourceMap, *, complete: bool) -> list[Diagnostic]:
    """Run every check on ``cluster``; the global ones only when ``complete``."""
    diags = []
    for check in CHECKS + (GLOBAL_CHECKS if complete else ()):
        diags += check(cluster, smap)
    return list(dict.fromkeys(diags))
