#!/usr/bin/env python3
"""Loaded networks in simulation: accepted throughput and latency against offered load.

Usage: python bench/loaded.py [--only NAME] [--loads L,L,...] [--cycles N] [--runs N]
                              [--fig4a] [--jobs J]

For each shipped example (``examples/*.yaml``, or ``--only NAME``), ``optnet sim``'s
generated Verilog under uniform traffic, swept over offered load (one built simulator, one
run per load, ``--cycles`` network cycles each; the accepted load is measured after the
first fifth). Printed per example: offered and accepted load (beats a cycle per endpoint),
throughput per node (Gb/s), mean and p99 head latency of the unicasts (the classes' mean
weighted by packets; p99 the worst class's), beside the report's model of the same traffic
(:func:`optnet.sim.report.predictions`): its saturation load and zero-load latency. The
default loads are fractions of each example's modelled saturation (0.02 to 1.25 of it, at
most 1), so every sweep crosses where the model says the network saturates; ``--loads``
gives absolute loads instead.

``--fig4a``: BlueDBM's Figure 4a (Jun et al., "A Transport-Layer Network for Distributed
FPGA Platforms", FPL 2015, Fig. 4a): one ``data`` endpoint of ``examples/bluedbm_20.yaml``
streams alone (pair traffic, offered load 1) from node n0 to a node 1, 2 and 3 hops away on
the routes, with end-to-end credit 32, 128 and 512 packets (offset half the credit, buffer
twice it: variants of the example that change nothing else, written to a temporary
folder). Printed: the Gb/s each achieves against the 20 Gb/s link and the paper's figure:
small credits lose bandwidth with distance, and 512 packets or more reach the maximum over 3
hops, about 85 % of the link (~17 Gb/s).

``--runs N`` repeats each run with seeds 1 to N and prints medians. The first simulation of
a cluster builds its simulator (about a minute for BlueDBM, each credit variant its own);
it is cached (docs/sim.md), so later runs start at once. Nothing here is a fixed figure:
the router buffers, the plan and the models change what the networks deliver.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from clusters import routed_file  # noqa: E402

from optnet.plan import plan  # noqa: E402
from optnet.sim import SimOptions, simulate, sweep  # noqa: E402
from optnet.sim.report import predictions  # noqa: E402
from optnet.sim.setup import Traffic, parse_loads, sim_setup  # noqa: E402

#: Default offered loads, as fractions of the model's saturation load.
FRACTIONS = (0.02, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.25)

#: Figure 4a: end-to-end credits (packets) and hops from the source.
CREDITS = (32, 128, 512)
HOPS = (1, 2, 3)
#: The paper's figure: the most a 'data' stream reaches over 3 hops with 512 packets of
#: credit, as a share of the 20 Gb/s link.
PAPER_SHARE = 0.85


def _step(text: str) -> None:
    # the build's and the runs' stages, so that a first build's minute is not silence
    print(f"  [{text}]", file=sys.stderr, flush=True)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _unicast(run: dict) -> tuple[float, float]:
    # mean head latency of the unicast classes (weighted by packets) and their worst p99, ns
    classes = [c for c in run["classes"] if c["kind"] == "unicast"]
    packets = sum(c["packets"] for c in classes)
    if not packets:
        return float("nan"), float("nan")
    mean = sum(c["head_ns"]["mean"] * c["packets"] for c in classes) / packets
    return mean, max(c["head_ns"]["p99"] for c in classes)


def sweep_example(path: Path, loads: tuple[float, ...] | None, cycles: int, runs: int,
                  jobs: int) -> None:
    """Print ``path``'s sweep of uniform traffic (medians of ``runs`` seeds)."""
    routed = routed_file(path)
    plans = plan(routed)
    model = predictions(routed, sim_setup(routed, plans), Traffic("uniform"))
    if loads is None:
        saturation = model.saturation or 1.0
        loads = tuple(sorted({round(min(1.0, f * saturation), 4) for f in FRACTIONS}))
    docs = [sweep(routed, plans, SimOptions(cycles=cycles, seed=seed), loads, jobs=jobs,
                  step=_step)[0] for seed in range(1, runs + 1)]
    pr = docs[0]["prediction"]
    hz = docs[0]["network_clock_hz"]
    print(f"\n{routed.cluster.name}: uniform traffic, {len(plans)} nodes, {cycles:,} cycles a "
          f"run at {hz / 1e6:g} MHz" + (f", medians of {runs} seeds" if runs > 1 else ""))
    print(f"  model: saturation {pr['saturation_load']:.3f} beats/cycle/endpoint "
          f"({pr['saturation_per_node_bps'] / 1e9:.2f} Gb/s per node; {pr['bottleneck']}), "
          f"zero-load latency {pr['zero_load_ns']:,.1f} ns")
    print(f"  {'offered':>8} {'accepted':>9} {'of model':>9} {'Gb/s/node':>10} "
          f"{'head mean':>10} {'head p99':>10}  verdict")
    for k, load in enumerate(loads):
        points = [doc["runs"][k] for doc in docs]
        accepted = _median([p["throughput"]["accepted_load"] for p in points])
        gbps = _median([p["throughput"]["per_node_bps"] / 1e9 for p in points])
        mean = _median([_unicast(p)[0] for p in points])
        p99 = _median([_unicast(p)[1] for p in points])
        verdicts = sorted({"ok" if p["ok"] else p["verdict"] for p in points})
        print(f"  {load:>8.4g} {accepted:>9.4f} {accepted / pr['saturation_load']:>8.0%} "
              f"{gbps:>10.3f} {mean:>10,.1f} {p99:>10,.1f}  {', '.join(verdicts)}")
    best = max(_median([doc["runs"][k]["throughput"]["accepted_load"] for doc in docs])
               for k in range(len(loads)))
    low = _median([_unicast(doc["runs"][0])[0] for doc in docs])
    print(f"  measured: saturation {best:.3f} ({best / pr['saturation_load']:.0%} of the "
          f"model's), mean head latency at the lowest load {low:,.1f} ns "
          f"({low / pr['zero_load_ns']:.2f} x the model's zero-load)")


def _variant(text: str, credit: int) -> str:
    # the example with only its 'data' endpoint's credit, offset and buffer changed
    doc = yaml.safe_load(text)
    (data,) = [e for e in doc["endpoints"] if e["name"] == "data"]
    data.update(credit=credit, offset=credit // 2, buffer=f"{2 * credit} packets")
    return yaml.safe_dump(doc, sort_keys=False)


def figure_4a(cycles: int, runs: int, jobs: int) -> None:
    """Print BlueDBM's Figure 4a as simulated (medians of ``runs`` seeds)."""
    example = ROOT / "examples" / "bluedbm_20.yaml"
    base = routed_file(example)
    net = base.net
    names = [n.name for n in base.cluster.nodes]
    # the first node (in cluster order) each number of hops away from n0 on the routes
    far = {}
    for d in range(1, len(names)):
        far.setdefault(len(base.routing.path(net, 0, d)), d)
    missing = [h for h in HOPS if h not in far]
    if missing:
        sys.exit(f"bluedbm_20 has no node {missing[0]} hops from {names[0]}.")
    setup = sim_setup(base, plan(base))
    link = setup.params.link(setup.links[0])
    link_bps = float(link.lanes * link.line_rate)
    print(f"Figure 4a (Jun et al., FPL 2015): one 'data' endpoint streaming from {names[0]} "
          f"at offered load 1 (pair traffic), {cycles:,} cycles a run"
          + (f", medians of {runs} seeds" if runs > 1 else ""))
    print(f"  link: {link.lanes} x {float(link.line_rate) / 1e9:g} Gb/s = {link_bps / 1e9:g} "
          f"Gb/s ({float(link.payload_rate) / 1e9:.2f} Gb/s after the line code)")
    header = "".join(f"{f'{h} hop' + 's' * (h > 1) + f' ({names[far[h]]})':>22}" for h in HOPS)
    print(f"  {'credit (offset, buffer)':<24}{header}")
    text = example.read_text(encoding="utf-8")
    measured: dict[tuple[int, int], float] = {}
    model: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="optnet-fig4a-") as tmp:
        for credit in CREDITS:
            path = Path(tmp) / f"bluedbm_20_credit{credit}.yaml"
            path.write_text(_variant(text, credit), encoding="utf-8")
            routed = routed_file(path)
            plans = plan(routed)
            cells = []
            for h in HOPS:
                pattern = f"pair:{names[0]}.data:{names[far[h]]}"
                docs = [simulate(routed, plans, SimOptions(pattern=pattern, load=1.0,
                                                           cycles=cycles, seed=seed),
                                 jobs=jobs, step=_step)[0] for seed in range(1, runs + 1)]
                bad = [d["verdict"] for d in docs if not d["ok"]]
                gbps = _median([d["throughput"]["per_node_bps"] / 1e9 for d in docs])
                measured[credit, h] = gbps
                model[h] = docs[0]["prediction"]["saturation_per_node_bps"] / 1e9
                cells.append(f"{gbps:.2f} Gb/s ({gbps * 1e9 / link_bps:.0%})"
                             + (f" {bad[0].upper()}" if bad else ""))
            label = f"{credit} ({credit // 2}, {2 * credit})"
            print(f"  {label:<24}" + "".join(f"{c:>22}" for c in cells))
    cells = [f"{model[h]:.2f} Gb/s ({model[h] * 1e9 / link_bps:.0%})" for h in HOPS]
    print(f"  {'model (no credit limit)':<24}" + "".join(f"{c:>22}" for c in cells))
    paper = PAPER_SHARE * link_bps / 1e9
    print(f"  paper: small credits lose bandwidth with distance; >= 512 packets reach the most "
          f"over 3 hops, about {PAPER_SHARE:.0%} of the {link_bps / 1e9:g} Gb/s link "
          f"(~{paper:.0f} Gb/s)")
    small, large = CREDITS[0], CREDITS[-1]
    falls = measured[small, HOPS[-1]] < measured[small, HOPS[0]]
    flat = measured[large, HOPS[-1]] >= 0.95 * measured[large, HOPS[0]]
    reach = measured[large, HOPS[-1]]
    print(f"  simulated: credit {small} {'loses' if falls else 'does not lose'} bandwidth "
          f"from 1 to 3 hops ({measured[small, HOPS[0]]:.2f} -> "
          f"{measured[small, HOPS[-1]]:.2f} Gb/s); credit {large} "
          f"{'holds' if flat else 'does not hold'} its rate over 3 hops; at 3 hops "
          f"{reach:.2f} Gb/s = {reach * 1e9 / link_bps:.0%} of the link against the paper's "
          f"~{PAPER_SHARE:.0%}: "
          f"{'ok' if reach * 1e9 >= (PAPER_SHARE - 0.05) * link_bps else 'BELOW'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    examples = sorted(p.stem for p in (ROOT / "examples").glob("*.yaml"))
    parser.add_argument("--only", choices=examples, help="one example")
    parser.add_argument("--loads", type=parse_loads,
                        help="offered loads, comma-separated [default: fractions "
                             f"{', '.join(map(str, FRACTIONS))} of the model's saturation]")
    parser.add_argument("--cycles", type=int, default=20_000,
                        help="network cycles a run [default: 20,000]")
    parser.add_argument("--runs", type=int, default=1, help="seeds per run (medians)")
    parser.add_argument("--fig4a", action="store_true",
                        help="BlueDBM's Figure 4a instead of the sweeps")
    parser.add_argument("-j", "--jobs", type=int, default=2,
                        help="parallel compile jobs when a simulator is built")
    args = parser.parse_args()
    if args.fig4a:
        figure_4a(args.cycles, args.runs, args.jobs)
        return
    print("optnet sim under load: accepted throughput and head latency against offered "
          "load (uniform traffic), beside the report's models")
    for name in [args.only] if args.only else examples:
        sweep_example(ROOT / "examples" / f"{name}.yaml", args.loads, args.cycles, args.runs,
                      args.jobs)


if __name__ == "__main__":
    main()
