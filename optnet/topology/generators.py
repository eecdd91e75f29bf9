"""Topology generators: abstract nodes and links, before any board port is chosen.

Each generator turns a topology description into a :class:`Generated` graph: named nodes
(with coordinates, group or enclosure where the shape has them) and links between node
indices with a *role* that later stages use (the dimension of a torus link, whether a
dragonfly link is local or global, whether a hierarchical link stays on the board).
Generators choose no ports; :mod:`optnet.elaborate` assigns board ports and lanes.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from optnet.diagnostics import Diagnostic, DiagnosticError, Location
from optnet.spec import models as m

__all__ = ["MAX_NODES", "GenLink", "GenNode", "Generated", "generate"]

MAX_NODES = 8192


@dataclass(frozen=True)
class GenNode:
    """A generated node; ``coords`` for meshes, tori and hypercubes, ``group`` for dragonfly
    groups, ``enclosure``/``position`` for hierarchical topologies."""

    name: str
    coords: tuple[int, ...] = ()
    group: int | None = None
    enclosure: str | None = None
    position: int | None = None


@dataclass(frozen=True)
class GenLink:
    """A generated link between node indices ``a`` and ``b``.

    ``role`` is one of ``ring``, ``line``, ``mesh``, ``torus``, ``full``, ``cube``,
    ``local``, ``global``, ``intra``, ``inter``; ``dim`` is the dimension of mesh, torus and
    hypercube links; ``settings`` are the role's link settings from the topology.
    """

    a: int
    b: int
    role: str
    settings: m.LinkSettings
    dim: int | None = None


@dataclass(frozen=True)
class Generated:
    """The generated graph and, where the shape gives one in closed form, its diameter."""

    kind: str
    nodes: tuple[GenNode, ...]
    links: tuple[GenLink, ...] = field(default=())
    diameter: int | None = None


def _fail(message: str, hint: str | None = None) -> DiagnosticError:
    return DiagnosticError([Diagnostic("E114", message, _TOPOLOGY_LOC, hint=hint)])


# Generators raise with a placeholder location; elaborate() re-points it at the file.
_TOPOLOGY_LOC = Location("<topology>")


def _check_size(count: int, what: str) -> None:
    if count > MAX_NODES:
        raise _fail(f"The {what} would have {count:,} nodes; optnet handles at most "
                    f"{MAX_NODES:,}.")


def _names(t: m.RingTopology | m.LineTopology | m.FullTopology, count: int) -> list[GenNode]:
    # Rings and lines are one-dimensional tori and meshes; their coordinate is the index.
    coords = t.kind in ("ring", "line")
    return [GenNode(f"{t.prefix}{i}", coords=(i,) if coords else ()) for i in range(count)]


def _ring(t: m.RingTopology) -> Generated:
    n = t.nodes
    links = [GenLink(i, (i + 1) % n, "ring", t.link, dim=0) for i in range(n)]
    return Generated("ring", tuple(_names(t, n)), tuple(links), n // 2)


def _line(t: m.LineTopology) -> Generated:
    n = t.nodes
    links = [GenLink(i, i + 1, "line", t.link, dim=0) for i in range(n - 1)]
    return Generated("line", tuple(_names(t, n)), tuple(links), n - 1)


def _grid(t: m.MeshTopology | m.TorusTopology) -> Generated:
    dims = t.dims
    count = math.prod(dims)
    _check_size(count, f"{t.kind} {'x'.join(map(str, dims))}")
    wrap = t.kind == "torus"
    strides = [math.prod(dims[:d]) for d in range(len(dims))]
    nodes = []
    links = []
    for index in range(count):
        coords = tuple((index // strides[d]) % dims[d] for d in range(len(dims)))
        nodes.append(GenNode(f"{t.prefix}{index}", coords=coords))
        for d, k in enumerate(dims):
            x = coords[d]
            # A wrap-around link exists only where it joins two nodes not already adjacent.
            if x + 1 < k:
                links.append(GenLink(index, index + strides[d], t.kind, t.link, dim=d))
            elif wrap and k > 2:
                links.append(GenLink(index, index - x * strides[d], t.kind, t.link, dim=d))
    diameter = sum(k // 2 if wrap else k - 1 for k in dims)
    return Generated(t.kind, tuple(nodes), tuple(links), diameter)


def _full(t: m.FullTopology) -> Generated:
    n = t.nodes
    links = [GenLink(a, b, "full", t.link) for a, b in itertools.combinations(range(n), 2)]
    return Generated("full", tuple(_names(t, n)), tuple(links), 1)


def _hypercube(t: m.HypercubeTopology) -> Generated:
    d = t.dimension
    n = 1 << d
    _check_size(n, f"hypercube of dimension {d}")
    nodes = [GenNode(f"{t.prefix}{i}", coords=tuple((i >> b) & 1 for b in range(d)))
             for i in range(n)]
    links = [GenLink(i, i ^ (1 << b), "cube", t.link, dim=b)
             for i in range(n) for b in range(d) if i < i ^ (1 << b)]
    return Generated("hypercube", tuple(nodes), tuple(links), d)


def _dragonfly(t: m.DragonflyTopology) -> Generated:
    g, a, h = t.groups, t.routers, t.global_links
    _check_size(g * a, f"dragonfly of {g} groups of {a} routers")
    slots = a * h
    if g - 1 > slots:
        raise _fail(
            f"A dragonfly with {a} routers per group and {h} global links per router can "
            f"join at most {slots + 1} groups, not {g}.",
            hint=f"Use at most {slots + 1} groups, or more routers or global links.")
    nodes = [GenNode(f"{t.prefix}{grp * a + r}", group=grp, position=r)
             for grp in range(g) for r in range(a)]
    links = [GenLink(grp * a + x, grp * a + y, "local", t.link)
             for grp in range(g) for x, y in itertools.combinations(range(a), 2)]
    global_settings = _overlay(t.link, t.global_link)
    # Each round joins every pair of groups once more, while global slots remain. Slots are
    # filled router by router, so with h = g - 1 every router reaches every other group once
    # (the OPTWEB dragonfly); with g = a*h + 1 it is the balanced canonical dragonfly.
    for rnd in range(slots // (g - 1)):
        for x, y in itertools.combinations(range(g), 2):
            slot_x = rnd * (g - 1) + (y - x - 1) % g
            slot_y = rnd * (g - 1) + (x - y - 1) % g
            links.append(GenLink(x * a + slot_x // h, y * a + slot_y // h, "global",
                                 global_settings))
    # Closed forms only where they are certain: one router per group is a complete graph;
    # every router reaching every other group gives local-then-global, 2 hops; the balanced
    # dragonfly (one link per group pair) needs local-global-local, 3 hops.
    if a == 1:
        diameter = 1
    elif h == g - 1:
        diameter = 2
    elif slots == g - 1:
        diameter = 3
    else:
        diameter = None
    return Generated("dragonfly", tuple(nodes), tuple(links), diameter)


def _overlay(base: m.LinkSettings, top: m.LinkSettings) -> m.LinkSettings:
    """``top`` over ``base``: keys ``top`` leaves unset come from ``base``."""
    return base.model_copy(update={key: getattr(top, key) for key in type(top).model_fields
                                   if getattr(top, key) is not None})


def _enclosure_peers(t: m.HierarchicalTopology) -> list[tuple[int, int, int, int]]:
    """Inter-enclosure channels as (enclosure e, slot at e, enclosure f, slot at f)."""
    inter = t.inter
    count = t.enclosures
    pairs: list[tuple[int, int, int, int]] = []
    if inter.pattern == "full":
        for e, f in itertools.combinations(range(count), 2):
            pairs.append((e, (f - e - 1) % count, f, (e - f - 1) % count))
    elif inter.pattern == "ring":
        if count == 2:
            pairs.append((0, 0, 1, 0))
        elif count > 2:
            pairs.extend((e, 0, (e + 1) % count, 1) for e in range(count))
    else:
        size = inter.group_size or count
        if count % size:
            raise _fail(f"{count} enclosures cannot be split into groups of {size}.")
        groups = count // size
        for e, f in itertools.combinations(range(count), 2):
            ge, pe, gf, pf = e // size, e % size, f // size, f % size
            if ge == gf:
                pairs.append((e, (pf - pe - 1) % size, f, (pe - pf - 1) % size))
            elif pe == pf:
                pairs.append((e, size - 1 + (gf - ge - 1) % groups,
                              f, size - 1 + (ge - gf - 1) % groups))
    return pairs


def _hierarchical(t: m.HierarchicalTopology) -> Generated:
    per, inter = t.per_enclosure, t.inter
    _check_size(t.enclosures * per, f"hierarchical topology of {t.enclosures} enclosures")
    plane = inter.plane_size or per
    if per % plane:
        raise _fail(f"{per} FPGAs per enclosure cannot be split into planes of {plane}.")
    nodes = [GenNode(f"{t.prefix}{e * per + i}", enclosure=f"enc{e}", position=i)
             for e in range(t.enclosures) for i in range(per)]
    intra = _overlay(m.LinkSettings(phy="lvds"), t.intra)
    links = [GenLink(e * per + x, e * per + y, "intra", intra)
             for e in range(t.enclosures) for x, y in itertools.combinations(range(per), 2)]
    pairs = _enclosure_peers(t)
    slots = plane * inter.channels
    needed = 1 + max((max(se, sf) for _, se, _, sf in pairs), default=-1)
    if needed > slots:
        raise _fail(
            f"The '{inter.pattern}' pattern between {t.enclosures} enclosures needs "
            f"{needed} inter-enclosure channels per plane, but a plane of {plane} FPGAs "
            f"with {inter.channels} channels each has {slots}.",
            hint="Give each FPGA more channels (fewer lanes each), or use larger planes.")
    for p in range(per // plane):
        for e, se, f, sf in pairs:
            a = e * per + p * plane + se // inter.channels
            b = f * per + p * plane + sf // inter.channels
            links.append(GenLink(a, b, "inter", inter.link))
    return Generated("hierarchical", tuple(nodes), tuple(links), None)


_GENERATORS = {
    "ring": _ring, "line": _line, "mesh": _grid, "torus": _grid, "full": _full,
    "hypercube": _hypercube, "dragonfly": _dragonfly, "hierarchical": _hierarchical,
}


def generate(topology: m.Topology) -> Generated:
    """Generate the nodes and links of ``topology``.

    Raises
    ------
    DiagnosticError
        E114 when the parameters are inconsistent or the result exceeds :data:`MAX_NODES`;
        the location is a placeholder that the caller re-points at the topology.
    """
    return _GENERATORS[topology.kind](topology)
