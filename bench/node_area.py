#!/usr/bin/env python3
"""One node's area by component, with the report's resource flow, against the paper's.

Usage: python bench/node_area.py [EXAMPLE] [--no-cache]

Plans the first node of ``examples/EXAMPLE.yaml`` (default ``bluedbm_20``), lowers it to
Verilog and synthesises it with Yosys exactly as ``optnet report --resources`` does
(:func:`optnet.report.resources.node_resources`: ``synth_xilinx -family xc7 -flatten`` for
the VC707 with each part of the node kept a module of its own, each counted once per
instance; LUTs include LUT RAM). Prints each
part and component, the node's own logic (everything but the vendor cores, whose figures
come from the IP table), and for BlueDBM the paper's Table II and issue 18's targets: a
link layer <= 1,000 LUTs and the node's own logic (router, 4 link layers, endpoints and
hub) <= 6,000 LUTs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optnet.lint import lint_file  # noqa: E402
from optnet.plan import plan  # noqa: E402
from optnet.report.resources import node_resources  # noqa: E402

#: BlueDBM's Table II (Jun et al., §IV-A), LUTs and RAMB36: its two endpoints' row is the
#: larger one (credit 200, buffer 1024 packets); "Aurora Link" includes the Aurora cores.
PAPER = {"aurora link (cores + link logic, 4 links)": (4843, 36), "router": (3743, 0),
         "endpoint (x2)": (753, 3), "total": (10092, 42)}

#: Issue 18's targets for the BlueDBM configuration, LUTs.
TARGETS = {"link layer": 1000, "own logic": 6000}

OWN = ("router", "link_layers", "phy_adapters", "endpoints", "hub", "other")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("example", nargs="?", default="bluedbm_20")
    parser.add_argument("--no-cache", action="store_true",
                        help="synthesise even when the resource cache has the node")
    args = parser.parse_args()
    result = lint_file(ROOT / "examples" / f"{args.example}.yaml")
    if not result.ok:
        raise SystemExit(f"examples/{args.example}.yaml does not lint clean")
    node = plan(result.routed, one_per_role=True)[0]
    board = next(n.board for n in result.cluster.nodes if n.board.name == node.board)
    res = node_resources(node, board, cache=not args.no_cache)
    print(f"{args.example}, node {node.node} ({res.board}, {res.family}): {res.script}")
    print(f"{'part':<28} {'component':<13} {'n':>2} {'LUT each':>9} {'FF each':>8} "
          f"{'BRAM each':>9}")
    for part in res.parts:
        e = part.each
        print(f"{part.name:<28} {part.component:<13} {part.instances:>2} {e.lut:>9.0f} "
              f"{e.ff:>8.0f} {e.bram:>9.1f}")
    print(f"\n{'component':<13} {'LUT':>7} {'FF':>7} {'BRAM36':>7}")
    for name, usage in res.components.items():
        print(f"{name:<13} {usage.lut:>7.0f} {usage.ff:>7.0f} {usage.bram:>7.1f}")
    own = [res.components[c] for c in OWN]
    own_lut = sum(u.lut for u in own)
    own_bram = sum(u.bram for u in own)
    print(f"{'own logic':<13} {own_lut:>7.0f} {sum(u.ff for u in own):>7.0f} "
          f"{own_bram:>7.1f}   (all but the vendor cores)")
    print(f"{'total':<13} {res.total.lut:>7.0f} {res.total.ff:>7.0f} {res.total.bram:>7.1f}")
    if args.example.startswith("bluedbm"):
        links = [p for p in res.parts if p.component == "link_layers"]
        print("\nBlueDBM, Table II (LUT, RAMB36):")
        for name, (lut, bram) in PAPER.items():
            print(f"  {name:<44} {lut:>6} {bram:>4}")
        print("Targets (issue 18):")
        for part in links:
            print(f"  link layer {part.name}: {part.each.lut:.0f} LUTs "
                  f"(target <= {TARGETS['link layer']})")
        print(f"  own logic: {own_lut:.0f} LUTs (target <= {TARGETS['own logic']})")


if __name__ == "__main__":
    main()
