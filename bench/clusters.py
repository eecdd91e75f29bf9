"""Cluster files the benchmarks generate (tori, dragonflies and random graphs of n nodes),
and reading one that must lint cleanly."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path


def routed_file(path: Path):
    """The routed cluster of ``path``; exits with its first errors if it does not lint
    cleanly."""
    from optnet.lint import lint_file

    result = lint_file(path)
    errors = [d for d in result.diagnostics if d.severity == "error"]
    if result.routed is None or errors:
        sys.exit(f"{path} does not lint cleanly: " + "; ".join(
            d.message for d in errors[:3]))
    return result.routed


def torus(n: int) -> str:
    """A 2-D torus of VC707 boards, as square as n allows."""
    a = 2 ** (int(math.log2(n)) // 2)
    return ("defaults: {board: vc707, link: {phy: aurora_64b66b, lanes: 2, line_rate: 10Gbps}}\n"
            f"topology: {{kind: torus, dims: [{a}, {n // a}]}}\n")


def dragonfly(n: int) -> str:
    """A dragonfly of Stratix 10 MX cards (32 optical lanes each), every group pair joined."""
    a = {64: 8, 256: 16, 1024: 32}[n]
    g = n // a
    h = math.ceil((g - 1) / a)
    return ("defaults: {board: stratix10mx_optics, link: {phy: serial_lite_3, lanes: 1, "
            "line_rate: 25Gbps}}\nnetwork: {vcs: 3}\n"
            f"topology: {{kind: dragonfly, groups: {g}, routers: {a}, global_links: {h}}}\n")


def random_graph(n: int) -> str:
    """A random spanning tree plus as many random extra links (degree about 4), explicit
    nodes and links, so `auto` routes it with up*/down*."""
    rnd = random.Random(n)
    edges = {(rnd.randrange(i), i) for i in range(1, n)}
    while len(edges) < 2 * (n - 1):
        a, b = rnd.sample(range(n), 2)
        edges.add((min(a, b), max(a, b)))
    used = [0] * n
    nodes = "\n".join(f"  - {{name: v{i}}}" for i in range(n))
    links = []
    for a, b in sorted(edges):
        if used[a] >= 32 or used[b] >= 32:
            continue
        ends = []
        for x in (a, b):
            ends.append(f"v{x}.optical{used[x] // 4}")
            used[x] += 1
        links.append(f"  - {{from: {ends[0]}, to: {ends[1]}}}")
    return ("defaults: {board: stratix10mx_optics, link: {phy: serial_lite_3, line_rate: "
            f"25Gbps}}}}\nnodes:\n{nodes}\nlinks:\n" + "\n".join(links) + "\n")
