"""Elaboration: a validated cluster description becomes a :class:`~optnet.cluster.Cluster`.

Applies ``defaults:``, runs the topology generator, merges explicit ``nodes:`` and
``links:`` into the generated graph, gives every node its board and id, and gives every
link its ports, lanes, PHY and line rate. Lanes named explicitly (``n0.fmc[0..1]``) are
reserved first, then explicit links without lane ranges, then generated links, each taking
the lowest free lanes of the first suitable port in board order, so the result is
deterministic and a hand-written link always keeps the lanes it asked for.
"""

from __future__ import annotations

import gc
import re
from dataclasses import dataclass, field, replace

from optnet.boards import BoardLibrary
from optnet.cluster import Cluster, End, Link, Node
from optnet.devices.transceivers import transceiver, triplet_of
from optnet.diagnostics import Diagnostic, DiagnosticError, Related
from optnet.phys import PHYS
from optnet.spec import models as m
from optnet.spec.names import check_identifier
from optnet.spec.source import Path, SourceMap
from optnet.spec.validate import did_you_mean
from optnet.topology.generators import MAX_NODES, Generated, generate

__all__ = ["DEFAULT_PHY", "elaborate", "parse_end"]

# The PHY a port gets when nothing names one: each vendor's own streaming link IP.
DEFAULT_PHY = {"parallel": "lvds", "xilinx": "aurora_64b66b", "intel": "serial_lite_3",
               "lattice": "raw_8b10b"}
_END = re.compile(r"(?P<node>[^.\[\]\s]+)\.(?P<port>[^.\[\]\s]+)"
                  r"(?:\[(?P<first>[0-9]{1,3})(?:\.\.(?P<last>[0-9]{1,3}))?\])?")
_FIELDS = ("phy", "lanes", "line_rate", "length")


@dataclass
class _Proto:
    name: str
    board: str | None
    board_path: Path
    origin: Path
    enclosure: str | None = None
    id: int | None = None
    ports: dict[str, m.PortSettings] = field(default_factory=dict)
    coords: tuple[int, ...] = ()
    group: int | None = None
    position: int | None = None


@dataclass(frozen=True)
class _EndSpec:
    node: str
    port: str
    first: int | None
    last: int | None
    path: Path


@dataclass
class _Pending:
    """A link whose ends are known and whose lanes are yet to be reserved."""

    label: str
    ends: tuple[_EndSpec, _EndSpec]
    settings: dict
    role: str
    dim: int | None
    origin: Path
    lanes: list[tuple[int, ...] | None] = field(default_factory=lambda: [None, None])


def parse_end(text: str) -> tuple[str, str, int | None, int | None] | None:
    """Split ``node.port``, ``node.port[i]`` or ``node.port[i..j]``; None if malformed."""
    match = _END.fullmatch(text)
    if match is None:
        return None
    first = int(match["first"]) if match["first"] is not None else None
    last = int(match["last"]) if match["last"] is not None else first
    return match["node"], match["port"], first, last


def _layers(*layers: m.LinkSettings | m.PortSettings | None) -> dict:
    """Later layers override earlier ones, key by key."""
    out: dict = {}
    for layer in layers:
        if layer is None:
            continue
        for key in _FIELDS:
            value = getattr(layer, key, None)
            if value is not None:
                out[key] = value
    return out


def _home_lanes(board: m.BoardDesc, port: str) -> frozenset[int] | None:
    """Lanes of ``board``'s ``port`` in the transceiver group (quad) of the port's
    reference clock (its buffer site, else its first lane's group), and on Stratix 10 in the
    triplet of its pin; None when the board's transceivers or sites are not modelled."""
    gt = transceiver(board.family, board.transceivers.type if board.transceivers else None)
    desc = board.ports[port]
    if gt is None or not desc.lanes[0].site:
        return None
    sites = [gt.locate(lane.site) if lane.site else None for lane in desc.lanes]
    pad = gt.refclk_at(desc.refclk.site) if desc.refclk and desc.refclk.site else None
    home = (pad.column, pad.group) if pad is not None else None
    if home is None:
        home = None if sites[0] is None else (sites[0].column, sites[0].group)
    if home is None:
        return None
    # GXT lanes must share the triplet of their reference clock pin (E335, UG-683621
    # 3.1.1.2); GX lanes lose nothing by preferring it.
    return frozenset(i for i, at in enumerate(sites)
                     if at is not None and (at.column, at.group) == home
                     and (pad is None or pad.triplet is None
                          or triplet_of(at.channel) == pad.triplet))


def _free_run(lanes: list[str | None], count: int) -> int | None:
    """The first lane of the lowest run of ``count`` free lanes, or None."""
    if count <= 0:
        return 0
    # One pass: the first run to reach ``count`` free lanes ends earliest, so starts lowest.
    run = 0
    for i, user in enumerate(lanes):
        run = run + 1 if user is None else 0
        if run == count:
            return i - count + 1
    return None


class _Elaborator:
    def __init__(self, desc: m.ClusterDesc, smap: SourceMap, library: BoardLibrary,
                 broken: frozenset[str]) -> None:
        self.desc = desc
        self.broken = broken
        self.smap = smap
        self.library = library
        self.diags: list[Diagnostic] = []
        self.protos: dict[str, _Proto] = {}
        self.boards: dict[str, m.BoardDesc] = {}
        self.home: dict[tuple[str, str], frozenset[int] | None] = {}
        self.use: dict[tuple[str, str], list[str | None]] = {}
        self.open_ports: dict[tuple[str, str, str | None], list[str]] = {}
        self.links: list[Link] = []

    def error(self, code: str, message: str, path: Path, *, key: bool = False,
              hint: str | None = None, related: tuple[Related, ...] = ()) -> None:
        self.diags.append(Diagnostic(code, message, self.smap.at(path, key=key), hint,
                                     related))

    # ---------------------------------------------------------------- nodes

    def generated(self) -> Generated | None:
        topo = self.desc.topology
        if topo is None:
            return None
        try:
            gen = generate(topo)
        except DiagnosticError as exc:
            where = self.smap.at(("topology",), key=True)
            self.diags += [replace(d, location=where) for d in exc.diagnostics]
            return None
        self.diags += check_identifier(f"{topo.prefix}0", "generated node name",
                                       self.smap.at(("topology", "prefix")))
        board, board_path = ((topo.board, ("topology", "board")) if topo.board
                             else (self.desc.defaults.board, ("defaults", "board")))
        for g in gen.nodes:
            self.protos[g.name] = _Proto(g.name, board, board_path, ("topology",),
                                         enclosure=g.enclosure, coords=g.coords,
                                         group=g.group, position=g.position)
        return gen

    def explicit_nodes(self) -> None:
        first: dict[str, Path] = {}
        for i, nd in enumerate(self.desc.nodes):
            path = ("nodes", i)
            self.diags += check_identifier(nd.name, "node name", self.smap.at((*path, "name")))
            if nd.name in first:
                self.error("E021", f"Two nodes are named '{nd.name}'.", (*path, "name"),
                           related=(Related(self.smap.at((*first[nd.name], "name")),
                                            "first defined here"),))
                continue
            first[nd.name] = path
            proto = self.protos.get(nd.name)
            if proto is None:
                proto = _Proto(nd.name, self.desc.defaults.board, ("defaults", "board"), path)
                self.protos[nd.name] = proto
            proto.origin = path
            if nd.board is not None:
                proto.board, proto.board_path = nd.board, (*path, "board")
            if nd.enclosure is not None:
                proto.enclosure = nd.enclosure
            if nd.id is not None:
                proto.id = nd.id
            proto.ports = dict(nd.ports)
        folded: dict[str, str] = {}
        for name, proto in self.protos.items():
            other = folded.setdefault(name.lower(), name)
            if other != name:
                self.error("E021", f"The nodes '{other}' and '{name}' differ only in case; "
                           "their output folders would collide on case-insensitive file "
                           "systems.", (*proto.origin, "name"))

    def resolve_boards(self) -> None:
        reported: set[tuple] = set()
        for proto in self.protos.values():
            if proto.board is None:
                self.error("E101", f"Node '{proto.name}' has no board: set 'board' on the "
                           "node, in the topology, or in defaults.", proto.origin)
                continue
            board = self.library.boards.get(proto.board)
            if board is None:
                if (proto.board, proto.board_path) not in reported:
                    reported.add((proto.board, proto.board_path))
                    self.error("E101", f"Node '{proto.name}' uses board '{proto.board}', which "
                               f"is not in the board library.{self.library.suggest(proto.board)}",
                               proto.board_path, hint="'optnet boards' lists the library.")
                continue
            self.boards[proto.name] = board
            for pname in proto.ports:
                if pname not in board.ports:
                    self.error("E103", f"Node '{proto.name}' configures port '{pname}', but "
                               f"board '{board.name}' has no such port."
                               f"{did_you_mean(pname, board.ports)}",
                               (*proto.origin, "ports", pname), key=True,
                               hint=f"Ports of {board.name}: {', '.join(board.ports)}.")

    def assign_ids(self) -> dict[str, int]:
        ids: dict[str, int] = {}
        owner: dict[int, str] = {}
        for proto in self.protos.values():
            if proto.id is None:
                continue
            if proto.id in owner:
                self.error("E022", f"Nodes '{owner[proto.id]}' and '{proto.name}' both have "
                           f"id {proto.id}.", (*proto.origin, "id"))
                continue
            owner[proto.id] = proto.name
            ids[proto.name] = proto.id
        free = (i for i in range(len(self.protos) + len(owner) + 1) if i not in owner)
        for name in self.protos:
            if name not in ids:
                ids[name] = next(free)
        return ids

    # ---------------------------------------------------------------- lanes

    def _lanes(self, node: str, port: str) -> list[str | None]:
        key = (node, port)
        if key not in self.use:
            self.use[key] = [None] * len(self.boards[node].ports[port].lanes)
        return self.use[key]

    def _reserve(self, pending: _Pending, side: int, count: int) -> tuple[int, ...] | None:
        end = pending.ends[side]
        lanes = self._lanes(end.node, end.port)
        where = end.path
        if count > len(lanes):
            self.error("E105", f"Link {pending.label} needs {_lanes(count)}, but port "
                       f"{end.node}.{end.port} has only {_lanes(len(lanes))}.", where)
            return None
        if end.first is not None:
            wanted = range(end.first, end.last + 1)
            if end.last >= len(lanes) or end.last < end.first:
                self.error("E105", f"Link {pending.label} asks for lanes {end.first}..{end.last}"
                           f" of port {end.node}.{end.port}, which has lanes 0..{len(lanes) - 1}.",
                           where)
                return None
        else:
            wanted = next((range(s, s + count) for s in range(len(lanes) - count + 1)
                           if all(lanes[i] is None for i in range(s, s + count))), None)
            if wanted is None:
                users = sorted({u for u in lanes if u})
                self.error("E104", f"Link {pending.label} needs {_lanes(count)} free on port "
                           f"{end.node}.{end.port}, but its lanes are already used by "
                           f"{', '.join(users)}.", where)
                return None
        clash = sorted({lanes[i] for i in wanted if lanes[i] is not None})
        if clash:
            self.error("E104", f"Port {end.node}.{end.port} lanes {wanted[0]}..{wanted[-1]} are "
                       f"used by link {pending.label} and by {', '.join(clash)}.", where)
            return None
        for i in wanted:
            lanes[i] = pending.label
        return tuple(wanted)

    # ---------------------------------------------------------------- links

    def explicit_links(self) -> list[_Pending]:
        pendings = []
        for i, ld in enumerate(self.desc.links):
            path = ("links", i)
            ends = []
            for key, text in (("from", ld.from_), ("to", ld.to)):
                end = self._end(text, (*path, key))
                if end is None:
                    break
                ends.append(end)
            if len(ends) != 2:
                continue
            label = f"{ld.from_} -- {ld.to}"
            if ends[0].node == ends[1].node:
                self.error("E109", f"Link {label} connects node '{ends[0].node}' to itself.",
                           path)
                continue
            settings = self._settings(label, ends, ld, path)
            if settings is None:
                continue
            widths = {e.last - e.first + 1 for e in ends if e.first is not None}
            if ld.lanes is None and len(widths) == 1:
                settings["lanes"] = widths.pop()
            elif any(w != settings["lanes"] for w in widths):
                self.error("E023", f"Link {label} bonds {settings['lanes']} lanes, but its "
                           "ends name lane ranges of a different width.", path)
                continue
            pendings.append(_Pending(label, tuple(ends), settings, "explicit", None, path))
        return pendings

    def _end(self, text: str, path: Path) -> _EndSpec | None:
        parsed = parse_end(text)
        if parsed is None:
            self.error("E023", f"The link end '{text}' is not written as node.port, "
                       "node.port[lane] or node.port[first..last].", path)
            return None
        node, port, first, last = parsed
        if node not in self.protos:
            if node in self.broken:
                return None  # the node's own errors are reported; the link waits for them
            self.error("E102", f"The link end '{text}' names node '{node}', which the "
                       f"cluster does not have.{did_you_mean(node, self.protos)}", path)
            return None
        board = self.boards.get(node)
        if board is None:
            return None
        if port not in board.ports:
            self.error("E103", f"The link end '{text}' names port '{port}', but node "
                       f"'{node}' is a {board.name}, which has no such port."
                       f"{did_you_mean(port, board.ports)}", path,
                       hint=f"Ports of {board.name}: {', '.join(board.ports)}.")
            return None
        return _EndSpec(node, port, first, last, path)

    def _settings(self, label: str, ends: list[_EndSpec], ld: m.LinkSettings | None,
                  path: Path, base: m.LinkSettings | None = None) -> dict | None:
        """Resolve link settings and report ends that disagree (E108)."""
        port_sets = [self.protos[e.node].ports.get(e.port) for e in ends]
        ok = True
        for key in ("phy", "line_rate"):
            values = [getattr(ps, key) if ps else None for ps in port_sets]
            own = getattr(ld, key) if ld else None
            a, b = values
            if a is not None and b is not None and a != b:
                self.error("E108", f"The ends of link {label} disagree on {key}: port "
                           f"{ends[0].node}.{ends[0].port} is set to {a} and "
                           f"{ends[1].node}.{ends[1].port} to {b}.", path)
                ok = False
            elif own is not None and (a or b) is not None and own != (a or b):
                end = ends[0] if a is not None else ends[1]
                self.error("E108", f"Link {label} sets {key} {own}, but port "
                           f"{end.node}.{end.port} is set to {a or b}.", path)
                ok = False
        if not ok:
            return None
        layered = _layers(self.desc.defaults.link, base, *port_sets, ld)
        layered.setdefault("lanes", 1)
        return layered

    def generated_links(self, gen: Generated) -> list[_Pending]:
        pendings = []
        # A generator gives thousands of links a handful of settings objects: layer each
        # once (by identity; gen.links keeps them alive) and copy the result per link.
        layered: dict[tuple[int, str], dict] = {}
        for gl in gen.links:
            a, b = gen.nodes[gl.a].name, gen.nodes[gl.b].name
            if a not in self.boards or b not in self.boards:
                continue
            label = f"{a} -- {b} ({gl.role})"
            key = (id(gl.settings), gl.role)
            if key not in layered:
                base = _layers(self.desc.defaults.link, gl.settings)
                if base.get("phy", "lvds" if gl.role == "intra" else None) != "lvds":
                    base.setdefault("lanes", 1)
                layered[key] = base
            settings = dict(layered[key])
            pendings.append(_Pending(label, (
                _EndSpec(a, "", None, None, ("topology",)),
                _EndSpec(b, "", None, None, ("topology",))),
                settings, gl.role, gl.dim, ("topology",)))
        return pendings

    def _kind(self, pending: _Pending) -> str:
        phy = pending.settings.get("phy")
        return PHYS[phy].port_kind if phy else ("parallel" if pending.role == "intra"
                                                  else "serial")

    def _suitable(self, pending: _Pending, node: str) -> list[str]:
        """The ports of ``node``'s board a generated link of ``pending``'s kind may use, in
        board order (whatever their free lanes and, on-board, their peer)."""
        board, proto = self.boards[node], self.protos[node]
        phy = pending.settings.get("phy")
        kind = self._kind(pending)
        names = []
        for pname, port in board.ports.items():
            if port.kind != kind or (port.connector == "onboard") != (pending.role == "intra"):
                continue
            set_phy = proto.ports.get(pname) and proto.ports[pname].phy
            if phy and set_phy and set_phy != phy:
                continue
            names.append(pname)
        return names

    def _pick(self, pending: _Pending, side: int, peer: str) -> _EndSpec | None:
        """The first port of the right kind with enough free lanes, in board order.

        A parallel link whose lane count is not set takes a whole free port (the width of
        an on-board bus is the board's, not the topology's), and the other end then needs
        the same number of lanes.
        """
        node = pending.ends[side].node
        board, proto = self.boards[node], self.protos[node]
        wanted = pending.settings.get("lanes")
        # The suitable ports depend only on the node and the link's kind, role and PHY; and
        # lanes are never given back, so a full port stays full: the cached list drops them
        # as they fill, and the last links of a large cluster do not rescan every port.
        key = (node, pending.role, pending.settings.get("phy"))
        if key not in self.open_ports:
            self.open_ports[key] = self._suitable(pending, node)
        ports = self.open_ports[key]
        # Lanes in the quad of their port's reference clock first (any port), then any: a
        # quad fed from a neighbour's pad would need a second buffer on that pad (E330).
        found = None
        for pname in list(ports):
            lanes = self._lanes(node, pname)
            if lanes and None not in lanes:
                ports.remove(pname)
                continue
            port = board.ports[pname]
            if port.onboard and pending.role == "intra":
                per = self.desc.topology.per_enclosure
                mine, theirs = proto.position, self.protos[peer].position
                if (mine + port.onboard.peer_offset) % per != theirs:
                    continue
            count = wanted or len(lanes)
            start = _free_run(lanes, count)
            if start is not None:
                found = found or _EndSpec(node, pname, start, start + count - 1, ("topology",))
                if (board.name, pname) not in self.home:
                    self.home[board.name, pname] = _home_lanes(board, pname)
                home = self.home[board.name, pname]
                near = _free_run([u if home is None or i in home else "far"
                                  for i, u in enumerate(lanes)], count)
                if near is not None:
                    return _EndSpec(node, pname, near, near + count - 1, ("topology",))
        return found

    def _capacity(self, pending: _Pending, node: str, lanes: int | None) -> int:
        """Links of ``lanes`` lanes each (None: a whole port each) that the suitable ports
        of ``node``'s board hold."""
        ports = self.boards[node].ports
        return sum(1 if lanes is None else len(ports[p].lanes) // lanes
                   for p in self._suitable(pending, node))

    def assign_generated(self, pendings: list[_Pending]) -> list[_Pending]:
        placed = []
        failed: dict[tuple[str, str], list[str]] = {}
        for p in pendings:
            # Both ends are tried, so every node short of ports is found, and lanes are
            # taken only for a link placed at both ends: a link that cannot be placed must
            # not use up the ports of a node that has room.
            ends = [self._pick(p, side, p.ends[1 - side].node) for side in (0, 1)]
            for side, end in enumerate(ends):
                if end is None:
                    node = p.ends[side].node
                    failed.setdefault((self.boards[node].name, p.role), []).append(node)
            if None in ends:
                continue
            for end in ends:
                width = end.last - end.first + 1
                self._lanes(end.node, end.port)[end.first:end.last + 1] = [p.label] * width
                p.settings["lanes"] = width
            p.ends = tuple(ends)
            placed.append(p)
        for (board_name, role), nodes in failed.items():
            self._lacks_ports(board_name, role, list(dict.fromkeys(nodes)), pendings)
        return placed

    def _lacks_ports(self, board_name: str, role: str, nodes: list[str],
                     pendings: list[_Pending]) -> None:
        """E112 for the ``nodes`` of board ``board_name`` that could not place all their
        generated ``role`` links: how many need how many links, how many the board holds,
        and the lane count that would fit."""
        board = self.library.boards[board_name]
        mine = [p for p in pendings if p.role == role]
        example = mine[0]
        lanes = next((p.settings.get("lanes") for p in mine), None)
        demand: dict[str, int] = {}
        for p in mine:
            for end in p.ends:
                demand[end.node] = demand.get(end.node, 0) + 1
        # Every node of this board with more links than its ports hold, not only those whose
        # turn came when the ports were full, and any that failed otherwise.
        order = {name: i for i, name in enumerate(self.protos)}
        nodes = sorted({n for n, count in demand.items()
                        if self.boards[n].name == board_name
                        and count > self._capacity(example, n, lanes)} | set(nodes),
                       key=order.__getitem__)
        most = max(demand[n] for n in nodes)
        first = nodes[0]
        fits = self._capacity(example, first, lanes)
        width = _lanes(lanes) if lanes else "a whole port"
        ports = ", ".join(f"{n} ({len(pt.lanes)} {pt.kind} lane"
                          f"{'s' if len(pt.lanes) > 1 else ''})"
                          for n, pt in board.ports.items()) or "none"
        shown = ", ".join(f"'{n}'" for n in nodes[:4]) + (", ..." if len(nodes) > 4 else "")
        who = (f"Node {shown} needs" if len(nodes) == 1
               else f"{len(nodes)} nodes ({shown}) need up to")
        narrower = next((k for k in range((lanes or 1) - 1, 0, -1)
                         if self._capacity(example, first, k) >= most), None) if lanes else None
        if narrower is not None:
            advice = (f"with {_lanes(narrower)} each, "
                      f"{self._capacity(example, first, narrower)} would fit")
            hint = (f"Give the {role} links {_lanes(narrower)}, use a board with more ports, "
                    "or add explicit links.")
        else:
            advice = "no narrower link would fit more"
            hint = "Use a board with more ports of that kind, or explicit links."
        self.error("E112", f"{who} {most} {role} links of {width} each, but the "
                   f"{self._kind(example)} ports of board '{board_name}' hold at most {fits} "
                   f"such link{'s' if fits != 1 else ''} ({advice}); its ports: {ports}.",
                   ("topology",), key=True, hint=hint)

    def finish(self, p: _Pending) -> None:
        ends = [End(e.node, e.port, tuple(range(e.first, e.last + 1))) for e in p.ends]
        settings = dict(p.settings)
        if "phy" not in settings:
            board = self.boards[ends[0].node]
            port = board.ports[ends[0].port]
            settings["phy"] = DEFAULT_PHY["parallel" if port.kind == "parallel"
                                          else board.vendor]
        if "line_rate" not in settings:
            rates = [self.boards[e.node].ports[e.port].max_line_rate for e in ends]
            if settings["phy"] == "lvds" and all(rates):
                settings["line_rate"] = min(rates)
            else:
                self.error("E011", f"Link {p.label} has no line rate: set 'line_rate' on the "
                           "link, in the topology's link settings, on a port, or in "
                           "defaults.link.", p.origin)
                return
        self.links.append(Link(len(self.links), ends[0], ends[1], settings["phy"],
                               settings["lanes"], settings["line_rate"],
                               settings.get("length"), p.role, p.dim, p.origin))

    def run(self) -> Cluster | None:
        gen = self.generated()
        self.explicit_nodes()
        if not self.protos:
            if self.desc.topology is not None or self.broken:
                return None  # the generator or the nodes' own errors have said why
            self.error("E116", "The cluster has no nodes: give a 'topology' or a list of "
                       "'nodes'.", ())
            return None
        if len(self.protos) > MAX_NODES:
            # The generators stop at the limit; explicit nodes must count against it too.
            made = len(gen.nodes) if gen is not None else 0
            parts = (f" ({made:,} from the topology and {len(self.protos) - made:,} more "
                     "under 'nodes')" if made else "")
            first = list(self.protos.values())[MAX_NODES]
            self.error("E014", f"The cluster has {len(self.protos):,} nodes{parts}; optnet "
                       f"handles at most {MAX_NODES:,}. Node '{first.name}' is the first one "
                       "past the limit.", first.origin)
            return None
        self.resolve_boards()
        ids = self.assign_ids()
        explicit = self.explicit_links()
        ranged = [(p, s) for p in explicit for s in (0, 1) if p.ends[s].first is not None]
        free = [(p, s) for p in explicit for s in (0, 1) if p.ends[s].first is None]
        for p, side in ranged + free:
            p.lanes[side] = self._reserve(p, side, p.settings["lanes"])
        for p in explicit:
            if None in p.lanes:
                continue
            p.ends = tuple(replace(e, first=lanes[0], last=lanes[-1])
                           for e, lanes in zip(p.ends, p.lanes, strict=True))
            self.finish(p)
        if gen is not None:
            for p in self.assign_generated(self.generated_links(gen)):
                self.finish(p)
        nodes = tuple(
            Node(proto.name, i, ids[proto.name], self.boards[proto.name], proto.enclosure,
                 proto.position, proto.group, proto.coords, proto.ports, proto.origin)
            for i, proto in enumerate(p for p in self.protos.values()
                                      if p.name in self.boards))
        pure = gen is not None and not self.desc.links and \
            all(nd.name in {g.name for g in gen.nodes} for nd in self.desc.nodes)
        return Cluster(self.desc, nodes, tuple(self.links),
                       self.desc.topology.kind if self.desc.topology else None, pure,
                       gen.diameter if pure else None)


def _lanes(count: int) -> str:
    return f"{count} lane{'s' if count != 1 else ''}"


def elaborate(desc: m.ClusterDesc, smap: SourceMap, library: BoardLibrary, *,
              broken: frozenset[str] = frozenset()) -> tuple[Cluster | None, list[Diagnostic]]:
    """Elaborate ``desc``.

    ``broken`` names nodes the file declares but that were left out of ``desc`` for their
    schema errors (:func:`optnet.spec.validate.validate_pruned`): links to them are left
    out without an E102 of their own.

    Returns
    -------
    (Cluster or None, diagnostics)
        The cluster with every node whose board is known and every link that could be
        placed, and the findings of elaboration (E020-E023, E101-E105, E108, E109, E112,
        E114, E116, and E014 for more than ``MAX_NODES`` nodes). The cluster is None only
        when there are no nodes at all or too many.
    """
    elaborator = _Elaborator(desc, smap, library, broken)
    # Tens of thousands of links, ends and settings, none in a reference cycle: the cyclic
    # garbage collector's full passes over them cost a third of a large cluster's
    # elaboration and free nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        cluster = elaborator.run()
    finally:
        if collecting:
            gc.enable()
    return cluster, elaborator.diags
