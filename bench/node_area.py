#!/usr/bin/env python3
"""One node's area by component, with the report's resource flow, against the paper's.

Usage: python bench/node_area.py [EXAMPLE | FILE.yaml] [--no-cache]

Plans the first node of ``examples/EXAMPLE.yaml`` (default ``bluedbm_20``) or of a cluster
file, lowers it to Verilog and synthesises it with Yosys exactly as
``optnet report --resources`` does
(:func:`optnet.report.resources.node_resources`: ``synth_xilinx -family xc7 -flatten`` for
the VC707 with each part of the node kept a module of its own, each counted once per
instance; LUTs include LUT RAM). Prints each
part and component, the node's own logic (everything but the vendor cores, whose figures
come from the IP table), and for BlueDBM the paper's Table II and issue 18's targets: a
link layer <= 1,000 LUTs and the node's own logic (router, 4 link layers, endpoints and
hub) <= 6,000 LUTs. Intel boards count ALMs (``synth_intel_alm``'s Cyclone V cells, see
:mod:`optnet.report.resources`); for OPTWEB's clusters the paper's share of the Stratix 10
MX 2100's ALMs is printed beside the node's (docs/validation.md):
``python bench/node_area.py bench/optweb_9.yaml`` is its 400 Gb/s configuration.
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

#: OPTWEB (Mizutani et al., section 4.4 and Figure 16): shares of the Stratix 10 MX 2100's
#: ALMs. The whole design at 400 Gb/s (eight 2 x 25G SerialLite III ports: the distributed
#: switch, SL3, HBM2 controllers, DMA, PCIe, command sequencer); the distributed switch and
#: SL3 alone at 800 Gb/s, two 400 Gb/s modules, so half of it at 400 Gb/s.
OPTWEB = {"whole design, 400 Gb/s": 31.4, "distributed switch and SL3, 800 Gb/s": 26.0}

OWN = ("router", "link_layers", "phy_adapters", "endpoints", "hub", "other")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("example", nargs="?", default="bluedbm_20")
    parser.add_argument("--no-cache", action="store_true",
                        help="synthesise even when the resource cache has the node")
    args = parser.parse_args()
    path = Path(args.example) if args.example.endswith(".yaml") else (
        ROOT / "examples" / f"{args.example}.yaml")
    result = lint_file(path)
    if not result.ok:
        raise SystemExit(f"{path} does not lint clean")
    node = plan(result.routed, one_per_role=True)[0]
    board = next(n.board for n in result.cluster.nodes if n.board.name == node.board)
    res = node_resources(node, board, cache=not args.no_cache)
    unit = "alm" if res.total.alm else "lut"
    block = "BRAM" if unit == "lut" else "blocks"
    print(f"{path.stem}, node {node.node} ({res.board}, {res.family}): {res.script}")
    print(f"{'part':<28} {'component':<13} {'n':>2} {unit.upper() + ' each':>9} "
          f"{'FF each':>8} {block + ' each':>11}")
    for part in res.parts:
        e = part.each
        print(f"{part.name:<28} {part.component:<13} {part.instances:>2} "
              f"{getattr(e, unit):>9.0f} {e.ff:>8.0f} {e.bram:>11.1f}")
    print(f"\n{'component':<13} {unit.upper():>7} {'FF':>7} {block:>7}")
    for name, usage in res.components.items():
        print(f"{name:<13} {getattr(usage, unit):>7.0f} {usage.ff:>7.0f} {usage.bram:>7.1f}")
    own = [res.components[c] for c in OWN]
    own_logic = sum(getattr(u, unit) for u in own)
    own_bram = sum(u.bram for u in own)
    print(f"{'own logic':<13} {own_logic:>7.0f} {sum(u.ff for u in own):>7.0f} "
          f"{own_bram:>7.1f}   (all but the vendor cores)")
    print(f"{'total':<13} {getattr(res.total, unit):>7.0f} {res.total.ff:>7.0f} "
          f"{res.total.bram:>7.1f}")
    capacity = board.resources
    if path.stem.startswith("optweb") and capacity.alm:
        print(f"\nOn the {board.part}'s {capacity.alm:,} ALMs and {capacity.bram.blocks:,} "
              f"blocks: own logic {100 * own_logic / capacity.alm:.2f} % of the ALMs, "
              f"{100 * own_bram / capacity.bram.blocks:.2f} % of the blocks (the vendor "
              f"cores apart)")
        for name, share in OPTWEB.items():
            print(f"  OPTWEB, {name}: {share} % of the ALMs ({share * capacity.alm / 100:,.0f})")
    if args.example.startswith("bluedbm"):
        links = [p for p in res.parts if p.component == "link_layers"]
        print("\nBlueDBM, Table II (LUT, RAMB36):")
        for name, (lut, bram) in PAPER.items():
            print(f"  {name:<44} {lut:>6} {bram:>4}")
        print("Targets (issue 18):")
        for part in links:
            print(f"  link layer {part.name}: {part.each.lut:.0f} LUTs "
                  f"(target <= {TARGETS['link layer']})")
        print(f"  own logic: {own_logic:.0f} LUTs (target <= {TARGETS['own logic']})")


if __name__ == "__main__":
    main()
