#!/usr/bin/env python3
"""Speed of ``optnet sim`` (Verilator) against Amaranth's simulator, and at scale.

Usage: python bench/sim.py [--quick] [--runs N] [--threads T ...]

Prints, per cluster, the network cycles simulated per second of wall time (the simulator's
own run, without building it: the built program is cached), the wall time of 1 ms of
network time, and the run's verdict; then the figures of the issue that set them:

- ``ring4`` (``tests/hw/ring4.yaml``, four VC707 in a ring, uniform traffic): Verilator
  against Amaranth's Python simulator of the same cluster (``tests/test_hw_cluster.py``'s
  harness, the one the tests run), target at least 100 times faster;
- ``torus16`` (``examples/cuscomnet_torus16.yaml``, CusComNet's 4 x 4 torus) and ``full64``
  (``bench/build_scale.py``'s 64-node fully connected OPTWEB-style cluster, one direct
  switch per node): 1 ms of network time "in minutes", with uniform traffic at load 0.1.

``--quick``: ring4 only. Medians of ``--runs`` runs (default 3; 1 for the large ones).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from clusters import routed_file  # noqa: E402

from optnet.plan import plan  # noqa: E402
from optnet.sim import SimOptions, simulate  # noqa: E402

TARGET_RATIO = 100
TARGET_MINUTES = 10


def _verilator(path: Path, cycles: int, threads: int, runs: int) -> tuple[float, dict]:
    routed = routed_file(path)
    plans = plan(routed)
    simulate(routed, plans, SimOptions(cycles=1000), jobs=2)     # build (cached)
    rates, doc = [], {}
    for seed in range(1, runs + 1):
        doc, _ = simulate(routed, plans, SimOptions(cycles=cycles, seed=seed, threads=threads),
                          jobs=2)
        rates.append(doc["cycles"] / doc["wall_s"])
    return statistics.median(rates), doc


def _amaranth(cycles: int, runs: int) -> float:
    from tests.test_hw_cluster import simulate as amaranth_simulate

    rates = []
    for seed in range(1, runs + 1):
        start = time.perf_counter()
        _, _, done = amaranth_simulate("ring4", packets_per_endpoint=10_000, seed=seed,
                                       max_cycles=cycles)
        rates.append(done["cycles"] / (time.perf_counter() - start))
    return statistics.median(rates)


def _full64(folder: Path) -> Path:
    from build_scale import BOARD, CLUSTERS

    (folder / "boards").mkdir()
    (folder / "boards" / "optweb64_card.yaml").write_text(BOARD, encoding="utf-8")
    path = folder / "full64.yaml"
    path.write_text(CLUSTERS["full64"], encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", choices=["ring4", "torus16", "full64"])
    args = parser.parse_args()
    print("optnet sim benchmark: network cycles simulated per second (median), wall time of "
          "1 ms of network time")
    print(f"{'cluster':<10} {'simulator':<14} {'threads':>7} {'cycles/s':>12} {'1 ms':>10} "
          f"{'verdict':<12} target")
    if args.only in (None, "ring4"):
        ring4 = ROOT / "tests" / "hw" / "ring4.yaml"
        amaranth = _amaranth(3000, args.runs)
        verilator, doc = _verilator(ring4, 100_000, 1, args.runs)
        ratio = verilator / amaranth
        ms = doc["network_clock_hz"] / 1000
        print(f"{'ring4':<10} {'amaranth':<14} {1:>7} {amaranth:>12,.0f} "
              f"{ms / amaranth:>9.0f}s {'':<12}")
        print(f"{'ring4':<10} {'verilator':<14} {1:>7} {verilator:>12,.0f} "
              f"{ms / verilator:>9.1f}s {doc['verdict']:<12} {ratio:,.0f}x >= {TARGET_RATIO}x "
              f"{'ok' if ratio >= TARGET_RATIO else 'MISSED'}")
    if args.quick or args.only == "ring4":
        return
    with tempfile.TemporaryDirectory() as tmp:
        clusters = {"torus16": ROOT / "examples" / "cuscomnet_torus16.yaml",
                    "full64": _full64(Path(tmp))}
        for name, path in clusters.items():
            if args.only not in (None, name):
                continue
            routed = routed_file(path)
            cycles = round(float(routed.cluster.desc.network.clock.value) / 1000)
            for threads in args.threads:
                rate, doc = _verilator(path, cycles, threads, 1)
                minutes = cycles / rate / 60
                print(f"{name:<10} {'verilator':<14} {threads:>7} {rate:>12,.0f} "
                      f"{cycles / rate:>9.1f}s {doc['verdict']:<12} {minutes:.1f} min <= "
                      f"{TARGET_MINUTES} min {'ok' if minutes <= TARGET_MINUTES else 'MISSED'}"
                      f" ({doc['packets']['delivered']:,} packets, errors "
                      f"{sum(doc['errors'].values())})")


if __name__ == "__main__":
    main()
