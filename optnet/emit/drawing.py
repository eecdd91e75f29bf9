"""``topology.svg``: the cluster drawn from its graph.

Placement, in this order of preference:

- nodes with two-dimensional coordinates (mesh, torus) on their grid;
- nodes with enclosures: enclosures on a circle, each a box with its nodes on a small
  circle inside (the enclosure is what a person cables first);
- otherwise all nodes on one circle.

Links are straight lines (parallel links between the same two nodes are drawn once, with
their count); torus wrap-around links are drawn as lines across the grid. Coordinates are
rounded to 0.1 px, so the drawing is the same on every machine.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from optnet.cluster import Cluster
from optnet.emit.env import render_template

__all__ = ["topology_svg"]

_SPACING = 90.0
_MARGIN = 60.0


@dataclass(frozen=True)
class _Box:
    label: str
    x: float
    y: float
    w: float
    h: float


def topology_svg(cluster: Cluster) -> str:
    """The SVG drawing of ``cluster`` (nodes, links, enclosures)."""
    pos, boxes = _place(cluster)
    xs = [x for x, _ in pos.values()] + [b.x + b.w for b in boxes]
    ys = [y for _, y in pos.values()] + [b.y + b.h for b in boxes]
    width = max(xs, default=0) + _MARGIN
    height = max(ys, default=0) + _MARGIN
    pairs = Counter(tuple(sorted((link.a.node, link.b.node))) for link in cluster.links)
    lines = [(_r(pos[a][0]), _r(pos[a][1]), _r(pos[b][0]), _r(pos[b][1]), count)
             for (a, b), count in sorted(pairs.items())]
    nodes = [(n.name, _r(pos[n.name][0]), _r(pos[n.name][1]), n.board.name)
             for n in cluster.nodes]
    return render_template("docs/topology.svg.j2", width=_r(width), height=_r(height),
                           title=cluster.name, lines=lines, nodes=nodes,
                           boxes=[(b.label, _r(b.x), _r(b.y), _r(b.w), _r(b.h))
                                  for b in boxes])


def _r(value: float) -> float:
    return round(value, 1)


def _place(cluster: Cluster) -> tuple[dict[str, tuple[float, float]], list[_Box]]:
    nodes = cluster.nodes
    if nodes and all(len(n.coords) == 2 for n in nodes):
        return {n.name: (_MARGIN + n.coords[0] * _SPACING, _MARGIN + n.coords[1] * _SPACING)
                for n in nodes}, []
    groups: dict[str, list[str]] = {}
    for n in nodes:
        groups.setdefault(n.enclosure or "", []).append(n.name)
    if len(groups) > 1 or "" not in groups:
        return _enclosures(groups)
    names = [n.name for n in nodes]
    radius = max(_SPACING, len(names) * _SPACING / (2 * math.pi))
    return _circle(names, _MARGIN + radius, _MARGIN + radius, radius), []


def _circle(names: list[str], cx: float, cy: float,
            radius: float) -> dict[str, tuple[float, float]]:
    if len(names) == 1:
        return {names[0]: (cx, cy)}
    step = 2 * math.pi / len(names)
    # Start at the top and go clockwise, as people draw rings.
    return {name: (cx + radius * math.sin(i * step), cy - radius * math.cos(i * step))
            for i, name in enumerate(names)}


def _enclosures(groups: dict[str, list[str]]) -> tuple[dict[str, tuple[float, float]],
                                                       list[_Box]]:
    inner = max(max(len(m) for m in groups.values()) * 45 / (2 * math.pi), 40.0)
    size = 2 * inner + 70
    count = len(groups)
    outer = 0.0 if count == 1 else max(size, count * (size + 30) / (2 * math.pi))
    centre = _MARGIN + outer + size / 2
    pos: dict[str, tuple[float, float]] = {}
    boxes = []
    for i, (label, members) in enumerate(groups.items()):
        angle = 2 * math.pi * i / count
        cx, cy = centre + outer * math.sin(angle), centre - outer * math.cos(angle)
        pos.update(_circle(members, cx, cy, inner if len(members) > 1 else 0.0))
        boxes.append(_Box(label or "(no enclosure)", cx - size / 2, cy - size / 2, size, size))
    return pos, boxes
