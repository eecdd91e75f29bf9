#!/usr/bin/env python3
"""Median wall time and peak memory of ``optnet build`` (without bitstreams) at scale.

Usage: python bench/build_scale.py [--runs N] [--jobs J] [--keep DIR] [--only NAME]

Two clusters, written to a temporary folder and built in a fresh process each run (so the
figure includes start-up, as a user sees it), from an empty output directory:

- ``full64``: an OPTWEB-style fully connected cluster of 64 FPGAs, one 25 Gb/s SerialLite
  III lane per pair, direct one-hop routing, no link flow control. No shipped board has 63
  transceiver ports, so the benchmark defines one next to the cluster file: a Stratix 10
  MX card like OPTWEB's with thirty-two 2-lane optical modules instead of eight 4-lane
  ones (each module taken to be wired to a transceiver bank of its own: a bank's two ATX
  PLLs clock two one-lane GXT links, E335);
- ``torus16x16``: 256 Virtex-5 cards (CusComNet's board) in a 16 x 16 torus over Aurora
  8B/10B, dimension-order routing.

Every node of each cluster has the same hardware role, so each is lowered through Amaranth
once (:mod:`optnet.emit.roles`), its router (full64, fully connected without link flow
control: its direct switch) in a worker process while the main process lowers the rest
(each distinct link layer or direct link configuration once: :func:`optnet.hw.top.parts`).
Target (the build issue): under 60 s for the 64-node cluster on the 2-core reference
machine. Peak memory is the build process's maximum resident set size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 60.0

BOARD = """optnet_board: 1
name: optweb64_card
description: A Stratix 10 MX card like OPTWEB's with thirty-two 2-lane optical modules
vendor: intel
family: stratix10
part: 1SM21BHU2F53E1VG
resources: {alm: 702720, ff: 2810880, bram: {blocks: 6847, size: 20Kib}, dsp: 3960}
transceivers: {type: H-tile, max_line_rate: 26.6Gbps}
ports:
""" + "".join(f"  optical{i}: {{kind: serial, connector: optical, max_line_rate: 25Gbps, "
              f"verified: false, lanes: [{{}}, {{}}]}}\n" for i in range(32)) + """\
source: bench/build_scale.py (hypothetical, for scale only)
"""

CLUSTERS = {
    "full64": """optnet: 1
name: full64
defaults: {board: optweb64_card}
topology:
  kind: full
  nodes: 64
  link: {phy: serial_lite_3, lanes: 1, line_rate: 25Gbps, length: 3m}
network: {clock: 200MHz, flit_width: 256, max_packet: 16 flits, flow_control: none, vcs: 1,
          router: {buffer: 16 flits}, reliability: {crc: none, retransmit: none}}
routing: {algorithm: direct, broadcast: unicast}
""",
    "torus16x16": """optnet: 1
name: torus16x16
defaults:
  board: v5_lx330t_card
  link: {phy: aurora_8b10b, lanes: 1, line_rate: 2Gbps, length: 1m}
topology: {kind: torus, dims: [16, 16]}
network: {clock: 100MHz, flit_width: 64, max_packet: 16 flits, vcs: 2,
          router: {buffer: 16 flits}}
routing: {algorithm: dimension_order}
""",
}


def build_once(cluster: Path, out: Path, jobs: int) -> tuple[float, float, int, int]:
    """Seconds, peak MiB, exit status and files written of one build into an empty ``out``."""
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "optnet", "build", str(cluster), "-o",
                             str(out), "--jobs", str(jobs)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode:
        print(err, file=sys.stderr)
    files = sum(1 for p in out.rglob("*") if p.is_file()) if out.exists() else 0
    return seconds, usage.ru_maxrss / 1024, proc.returncode, files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep the clusters and builds here")
    parser.add_argument("--only", choices=sorted(CLUSTERS), help="build only this cluster")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="optnet-build-scale-"))
    (folder / "boards").mkdir(parents=True, exist_ok=True)
    (folder / "boards" / "optweb64_card.yaml").write_text(BOARD)
    print(f"optnet build (no bitstreams), --jobs {args.jobs}, median of {args.runs} runs, "
          f"fresh process and empty output each run; target < {TARGET_S:.0f} s for the "
          "64-node fully connected cluster")
    print(f"{'cluster':<12} {'nodes':>5} {'files':>6} {'median s':>9} {'runs s':>22} "
          f"{'peak MiB':>9} {'exit':>5}")
    try:
        for name, text in CLUSTERS.items():
            if args.only and name != args.only:
                continue
            cluster = folder / f"{name}.yaml"
            cluster.write_text(text)
            runs = [build_once(cluster, folder / f"out_{name}", args.jobs)
                    for _ in range(args.runs)]
            seconds = [r[0] for r in runs]
            nodes = sum(1 for _ in (folder / f"out_{name}" / "nodes").iterdir()) \
                if (folder / f"out_{name}" / "nodes").exists() else 0
            flag = "  (over target)" if name == "full64" and \
                statistics.median(seconds) > TARGET_S else ""
            print(f"{name:<12} {nodes:>5} {runs[-1][3]:>6} {statistics.median(seconds):>9.1f} "
                  f"{' '.join(f'{s:.1f}' for s in seconds):>22} "
                  f"{max(r[1] for r in runs):>9.0f} {max(r[2] for r in runs):>5}{flag}")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
