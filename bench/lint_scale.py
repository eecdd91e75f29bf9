#!/usr/bin/env python3
"""Median wall time of `optnet lint` (with routing and the deadlock proof) on generated clusters.

Usage: python bench/lint_scale.py [--runs N] [--large]

Tori and dragonflies of 64, 256 and 1024 nodes; with --large also the clusters issue 17
found taking minutes: an 8,192-node torus and a 3 x 1024 mesh with multipath. Each cluster
is written to a temporary file and linted in a fresh process (so the figure includes
interpreter start-up and imports, as a user or CI sees it). Targets (issue 17): a full lint
under 2 s at 1,024 nodes on the 2-core reference machine, and under 20 s for the 8,192-node
torus. The --no-route column is the same lint without routing and proof; the CPU column
(user + system time of the full lint) is the figure to trust when other work loads the
machine, since the wall time then grows with the load.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clusters import dragonfly, torus

from optnet.lint import lint_file

TARGET_S = {1024: 2.0, 3072: 20.0, 8192: 20.0}
"""Full-lint target by node count (none for the smaller sizes)."""


def mesh_multipath(n: int) -> str:
    """A 3 x (n/3) mesh of VC707 boards that asks for 2-hop multipath (which only direct
    routing uses: lint warns W201 and routes it in dimension order)."""
    return ("defaults: {board: vc707, link: {phy: aurora_64b66b, lanes: 2, line_rate: 10Gbps}}\n"
            f"topology: {{kind: mesh, dims: [3, {n // 3}]}}\n"
            "routing: {multipath: {max_hops: 2, above: 16KiB}}\n")


def run(path: Path, runs: int, *extra: str) -> tuple[float, float, int]:
    """Median wall and CPU (user + system) seconds of ``runs`` lints, and the exit status.
    The CPU time is what the lint costs on a machine that other work shares."""
    times, cpus = [], []
    code = 0
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "optnet", "lint", *extra, str(path)],
                              capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        code = proc.returncode
    return statistics.median(times), statistics.median(cpus), code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--large", action="store_true",
                        help="also the 8,192-node torus and the 3 x 1024 mesh with multipath")
    args = parser.parse_args()
    cases = [(name, make, n) for name, make in (("torus", torus), ("dragonfly", dragonfly))
             for n in (64, 256, 1024)]
    if args.large:
        cases += [("mesh3xN+mp", mesh_multipath, 3072), ("torus", torus, 8192)]
    print(f"optnet lint, median of {args.runs} runs (fresh process each); full = routing and "
          "deadlock proof included")
    print(f"{'topology':<11} {'nodes':>6} {'links':>6} {'--no-route s':>13} {'full s':>7} "
          f"{'target s':>9} {'full cpu s':>11} {'exit':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, n in cases:
            path = Path(tmp) / f"{name}_{n}.yaml"
            path.write_text(f"optnet: 1\nname: x{n}\n{make(n)}")
            links = len(lint_file(path, routing=False).cluster.links)
            fast, _, _ = run(path, args.runs, "--no-route")
            full, cpu, code = run(path, args.runs)
            target = TARGET_S.get(n)
            shown = f"{target:>9.1f}" if target else f"{'':>9}"
            flag = "  (over target)" if target and full >= target else ""
            print(f"{name:<11} {n:>6} {links:>6} {fast:>13.3f} {full:>7.3f} {shown} "
                  f"{cpu:>11.3f} {code:>5}{flag}", flush=True)


if __name__ == "__main__":
    main()
