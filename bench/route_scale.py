#!/usr/bin/env python3
"""Median time and peak memory of routing + deadlock proof + tables.

Usage: python bench/route_scale.py [--runs N]

For 64-, 256- and 1024-node dragonfly, torus and random graphs. Each measurement runs in
a fresh process (peak RSS is that process's maximum resident set, which includes the
interpreter and libraries, about 60 MB). Routing here is everything `optnet route` does
before printing: elaborate, route, plan broadcast, build and check the channel dependency
graph, build every node's tables. Target (issue 3): under 10 s and under 2 GiB at 1024.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from clusters import dragonfly, random_graph, torus

TARGET_S, TARGET_MIB = 10.0, 2048

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from optnet.lint import lint_file
from optnet.routing.tables import node_tables
start = time.perf_counter()
result = lint_file(Path(sys.argv[1]))
routed = result.routed
tables = node_tables(routed)
elapsed = time.perf_counter() - start
errors = [d.code for d in result.diagnostics if d.code.startswith("E")]
print(json.dumps({"s": elapsed, "mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "algorithm": routed.routing.algorithm, "acyclic": routed.proof.ok,
                  "links": len(routed.cluster.links), "errors": errors}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"routing + proof + tables, median of {args.runs} fresh processes; target < "
          f"{TARGET_S:.0f} s and < {TARGET_MIB} MiB at 1024 nodes")
    print(f"{'graph':<10} {'nodes':>6} {'links':>6} {'algorithm':<18} {'proof':<8} "
          f"{'median s':>9} {'peak MiB':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("torus", torus), ("dragonfly", dragonfly), ("random", random_graph)):
            for n in (64, 256, 1024):
                path = Path(tmp) / f"{name}_{n}.yaml"
                path.write_text(f"optnet: 1\nname: {name}_{n}\n{make(n)}")
                runs = []
                for _ in range(args.runs):
                    out = subprocess.run([sys.executable, "-c", CHILD, str(path)],
                                         capture_output=True, text=True, check=True)
                    runs.append(json.loads(out.stdout))
                first = runs[0]
                secs = statistics.median(r["s"] for r in runs)
                mib = max(r["mib"] for r in runs)
                proof = "acyclic" if first["acyclic"] else "CYCLE"
                flag = "" if n < 1024 or (secs < TARGET_S and mib < TARGET_MIB) else "  (over)"
                print(f"{name:<10} {n:>6} {first['links']:>6} {first['algorithm']:<18} "
                      f"{proof:<8} {secs:>9.2f} {mib:>9.0f}{flag}")


if __name__ == "__main__":
    main()
