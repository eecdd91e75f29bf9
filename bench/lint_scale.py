#!/usr/bin/env python3
"""Median wall time of `optnet lint` on generated dragonfly and torus clusters.

Usage: python bench/lint_scale.py [--runs N]

Each cluster is written to a temporary file and linted in a fresh process (so the figure
includes interpreter start-up and imports, as a user or CI sees it). Target (issue 2):
under 2 s for 1024 nodes on the 2-core reference machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clusters import dragonfly, torus

from optnet.lint import lint_file

TARGET_S = 2.0


def run(path: Path, runs: int, *extra: str) -> tuple[float, int]:
    times = []
    code = 0
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "optnet", "lint", *extra, str(path)],
                              capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        code = proc.returncode
    return statistics.median(times), code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"optnet lint, median of {args.runs} runs (fresh process each), target < {TARGET_S} s "
          "at 1024 nodes for the checks without routing (--no-route); the full lint adds "
          "routing and the deadlock proof")
    print(f"{'topology':<10} {'nodes':>6} {'links':>6} {'--no-route s':>13} {'full s':>7} "
          f"{'exit':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("torus", torus), ("dragonfly", dragonfly)):
            for n in (64, 256, 1024):
                path = Path(tmp) / f"{name}_{n}.yaml"
                path.write_text(f"optnet: 1\nname: {name}_{n}\n{make(n)}")
                links = len(lint_file(path, routing=False).cluster.links)
                fast, _ = run(path, args.runs, "--no-route")
                full, code = run(path, args.runs)
                flag = "" if n < 1024 or fast < TARGET_S else "  (over target)"
                print(f"{name:<10} {n:>6} {links:>6} {fast:>13.3f} {full:>7.3f} {code:>5}{flag}")


if __name__ == "__main__":
    main()
