"""SVG plots of the report: latency heat map, stacked bars, line charts on a log axis, and
curves of measured points on linear axes with reference lines (the simulator's load sweeps).

Each plot is laid out here as shapes (rectangles, polylines, text) with coordinates rounded
to 0.1 px, so the same report gives the same bytes everywhere, and drawn by the one
template ``report/plot.svg.j2``. Plots read the report's data (:mod:`optnet.report.summary`)
and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from optnet.emit.env import render_template
from optnet.emit.escape import Raw

__all__ = ["bars", "curve", "heat_map", "lines"]

#: Colours of the series and bar components, in order (distinguishable in grey print too).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")

#: Most cells a heat map draws per side; larger matrices are averaged in blocks.
HEAT_CELLS = 64


@dataclass
class _Plot:
    width: float
    height: float
    title: str
    rects: list[tuple] = field(default_factory=list)     # x, y, w, h, fill, tooltip
    polylines: list[tuple] = field(default_factory=list)  # points, stroke
    texts: list[tuple] = field(default_factory=list)      # x, y, text, anchor, size

    def render(self) -> Raw:
        # inline SVG, for the HTML report to embed as it is
        return Raw(render_template("report/plot.svg.j2", plot=self), "html")


def _r(value: float) -> float:
    return round(value, 1)


def _nice(value: float) -> str:
    """A short label for an axis value."""
    if value == 0:
        return "0"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:g}{unit}"
    return f"{value:g}"


def heat_map(title: str, labels: Sequence[str], matrix: Sequence[Sequence[float]],
             unit: str) -> str:
    """Cells coloured from white (smallest) to dark red (largest), rows are sources."""
    n = len(matrix)
    block = max(1, math.ceil(n / HEAT_CELLS))
    cells = math.ceil(n / block)
    values = [[_mean(matrix, r * block, c * block, block) for c in range(cells)]
              for r in range(cells)]
    flat = [v for row in values for v in row]
    low, high = min(flat), max(flat)
    size = max(4.0, min(24.0, 480 / cells))
    left, top = 70.0, 40.0
    plot = _Plot(_r(left + cells * size + 90), _r(top + cells * size + 30), title)
    for r, row in enumerate(values):
        for c, v in enumerate(row):
            share = 0.0 if high == low else (v - low) / (high - low)
            plot.rects.append((_r(left + c * size), _r(top + r * size), _r(size), _r(size),
                               _heat(share), f"{_label(labels, r, block)} -> "
                               f"{_label(labels, c, block)}: {v:.1f} {unit}"))
    if block == 1 and cells <= 32:
        for i, name in enumerate(labels):
            plot.texts.append((_r(left - 4), _r(top + i * size + size * 0.7), name, "end", 9))
    plot.texts.append((_r(left), _r(top - 8), "destination ->", "start", 10))
    legend_x = _r(left + cells * size + 12)
    for i in range(5):
        share = i / 4
        plot.rects.append((legend_x, _r(top + i * 16), 12.0, 12.0, _heat(share), ""))
        plot.texts.append((_r(legend_x + 16), _r(top + i * 16 + 10),
                           f"{low + share * (high - low):.0f} {unit}", "start", 9))
    return plot.render()


def _mean(matrix, row: int, col: int, block: int) -> float:
    cells = [matrix[r][c] for r in range(row, min(row + block, len(matrix)))
             for c in range(col, min(col + block, len(matrix)))]
    return sum(cells) / len(cells)


def _label(labels: Sequence[str], index: int, block: int) -> str:
    if block == 1:
        return labels[index]
    last = min(len(labels), (index + 1) * block) - 1
    return f"{labels[index * block]}..{labels[last]}"


def _heat(share: float) -> str:
    # white -> yellow -> red -> dark red
    r = 255 if share < 0.66 else int(255 - (share - 0.66) / 0.34 * 120)
    g = int(255 - min(share, 0.66) / 0.66 * 200)
    b = int(255 - min(share, 0.33) / 0.33 * 255) if share < 0.33 else 0
    return f"#{r:02x}{g:02x}{b:02x}"


def bars(title: str, rows: Sequence[tuple[str, Mapping[str, float]]], unit: str) -> str:
    """Horizontal stacked bars, one per row, one segment per component (in the order of
    the first row's mapping)."""
    components = list(rows[0][1]) if rows else []
    top, left, bar, gap, width = 40.0, 150.0, 18.0, 8.0, 420.0
    longest = max((sum(parts.values()) for _, parts in rows), default=0.0) or 1.0
    height = top + len(rows) * (bar + gap) + 40
    plot = _Plot(_r(left + width + 80), _r(height), title)
    for i, (label, parts) in enumerate(rows):
        y, x = top + i * (bar + gap), left
        plot.texts.append((_r(left - 6), _r(y + bar * 0.7), label, "end", 10))
        for k, component in enumerate(components):
            w = parts.get(component, 0.0) / longest * width
            if w > 0:
                plot.rects.append((_r(x), _r(y), _r(w), bar, PALETTE[k % len(PALETTE)],
                                   f"{label}: {component} {parts[component]:.1f} {unit}"))
            x += w
        plot.texts.append((_r(x + 4), _r(y + bar * 0.7),
                           f"{sum(parts.values()):.1f} {unit}", "start", 10))
    _legend(plot, components, left, height - 22)
    return plot.render()


def lines(title: str, series: Mapping[str, Sequence[tuple[float, float]]], x_unit: str,
          y_unit: str) -> str:
    """Line chart; the x axis is logarithmic (message or packet sizes), y linear from 0."""
    left, top, width, height = 70.0, 40.0, 480.0, 240.0
    points = [p for values in series.values() for p in values]
    xs = [math.log10(x) for x, _ in points if x > 0]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = max((y for _, y in points), default=1.0) or 1.0
    plot = _Plot(_r(left + width + 150), _r(top + height + 60), title)

    def at(x: float, y: float) -> tuple[float, float]:
        return (_r(left + (math.log10(x) - x0) / (x1 - x0) * width),
                _r(top + height - y / y1 * height))

    plot.polylines.append(([(left, top), (left, top + height), (left + width, top + height)],
                           "#333"))
    for k in range(5):
        y = y1 * k / 4
        plot.texts.append((_r(left - 6), _r(top + height - height * k / 4 + 3), _nice(y),
                           "end", 9))
    for exponent in range(math.ceil(x0), math.floor(x1) + 1):
        x, _ = at(10**exponent, 0)
        plot.texts.append((x, _r(top + height + 14), _nice(10**exponent), "middle", 9))
    plot.texts.append((_r(left + width / 2), _r(top + height + 32), x_unit, "middle", 10))
    plot.texts.append((_r(left), _r(top - 8), y_unit, "start", 10))
    for k, (name, values) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        plot.polylines.append(([at(x, y) for x, y in values if x > 0], colour))
        plot.rects.append((_r(left + width + 16), _r(top + k * 16), 12.0, 3.0, colour, name))
        plot.texts.append((_r(left + width + 32), _r(top + k * 16 + 5), name, "start", 10))
    return plot.render()


def curve(title: str, series: Mapping[str, Sequence[tuple[float, float, str]]], x_unit: str,
          y_unit: str, *, vertical: tuple[float, str] | None = None,
          horizontal: tuple[float, str] | None = None) -> str:
    """Points joined by lines on linear axes from 0, a marker at each point.

    Parameters
    ----------
    series : mapping of str to sequence of (float, float, str)
        Per series, its points ``(x, y, tooltip)`` in the order they are joined.
    vertical, horizontal : (float, str), optional
        A reference line at that x (or y) with its label, drawn grey across the plot; the
        axes reach far enough to show it.
    """
    left, top, width, height = 70.0, 40.0, 480.0, 240.0
    xs = [x for values in series.values() for x, _, _ in values]
    ys = [y for values in series.values() for _, y, _ in values]
    x1 = _ceiling(max(xs + ([vertical[0]] if vertical else []), default=1.0))
    y1 = _ceiling(max(ys + ([horizontal[0]] if horizontal else []), default=1.0))
    plot = _Plot(_r(left + width + 150), _r(top + height + 60), title)

    def at(x: float, y: float) -> tuple[float, float]:
        return (_r(left + x / x1 * width), _r(top + height - y / y1 * height))

    plot.polylines.append(([(left, top), (left, top + height), (left + width, top + height)],
                           "#333"))
    for k in range(5):
        plot.texts.append((_r(left - 6), _r(top + height - height * k / 4 + 3),
                           _nice(y1 * k / 4), "end", 9))
        plot.texts.append((_r(left + width * k / 4), _r(top + height + 14), _nice(x1 * k / 4),
                           "middle", 9))
    plot.texts.append((_r(left + width / 2), _r(top + height + 32), x_unit, "middle", 10))
    plot.texts.append((_r(left), _r(top - 8), y_unit, "start", 10))
    if vertical is not None:
        x, _ = at(vertical[0], 0)
        plot.polylines.append(([(x, top), (x, _r(top + height))], "#999"))
        # (the label on the side with room: the legend is right of the plot)
        right = x < left + width / 2
        plot.texts.append((_r(x + 4 if right else x - 4), _r(top + 10), vertical[1],
                           "start" if right else "end", 9))
    if horizontal is not None:
        _, y = at(0, horizontal[0])
        plot.polylines.append(([(left, y), (_r(left + width), y)], "#999"))
        plot.texts.append((_r(left + width - 4), _r(y - 4), horizontal[1], "end", 9))
    for k, (name, values) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        plot.polylines.append(([at(x, y) for x, y, _ in values], colour))
        for x, y, tip in values:
            cx, cy = at(x, y)
            plot.rects.append((_r(cx - 2.5), _r(cy - 2.5), 5.0, 5.0, colour, tip))
        plot.rects.append((_r(left + width + 16), _r(top + k * 16), 12.0, 3.0, colour, name))
        plot.texts.append((_r(left + width + 32), _r(top + k * 16 + 5), name, "start", 10))
    return plot.render()


def _ceiling(value: float) -> float:
    """The least 1, 2 or 5 times a power of ten at or above ``value`` (1 for nothing)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= value * (1 - 1e-9))


def _legend(plot: _Plot, names: Sequence[str], x: float, y: float) -> None:
    for k, name in enumerate(names):
        plot.rects.append((_r(x), _r(y), 10.0, 10.0, PALETTE[k % len(PALETTE)], name))
        plot.texts.append((_r(x + 14), _r(y + 9), name, "start", 9))
        x += 14 + 7 * len(name) + 12
