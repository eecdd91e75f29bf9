"""``optnet sim``: the cluster's generated Verilog, simulated with Verilator.

Stages, each taking data and returning new data (docs/sim.md):

1. :func:`optnet.sim.setup.sim_setup`: clocks, roles, links with their latencies, from the
   routed cluster and its plans;
2. :func:`optnet.sim.build.build_simulator`: one Verilated model per hardware role and the
   C++ harness, compiled once and cached;
3. :func:`optnet.sim.run.run_simulation`: one run with a traffic, its results;
4. :mod:`optnet.sim.report`: the results beside the report's predictions, as JSON, Markdown
   and HTML.

:func:`simulate` runs them in order for the command line; :func:`sweep` runs the one built
simulator at several offered loads in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

from optnet.plan import NodePlan
from optnet.routing.route import Routed
from optnet.sim.build import SimBuildError, build_simulator
from optnet.sim.report import predictions, sim_files, sim_summary, sweep_files, sweep_summary
from optnet.sim.run import SimError, run_simulation
from optnet.sim.setup import (
    PAIR,
    PATTERNS,
    Failure,
    Traffic,
    TrafficError,
    parse_loads,
    permutation,
    read_messages,
    read_pairs,
    sim_setup,
)

#: Network cycles the bring-up traffic runs for when no ``cycles`` are given.
BRINGUP_CYCLES = 100_000

__all__ = ["BRINGUP_CYCLES", "PAIR", "PATTERNS", "Failure", "SimBuildError", "SimError",
           "SimOptions", "Traffic", "TrafficError", "parse_loads", "simulate", "sweep"]


@dataclass(frozen=True)
class SimOptions(Traffic):
    """How to run: a :class:`~optnet.sim.setup.Traffic` whose ``pattern`` is one of
    :data:`PATTERNS`, ``bringup``, pairs (``pair:SRC:DST[,SRC:DST...]``,
    :func:`~optnet.sim.setup.read_pairs`) or the path of a CSV file of messages
    (:func:`~optnet.sim.setup.read_messages`), and the link models' and simulator's
    settings (as :func:`~optnet.sim.run.settings_text`)."""

    ber: float = 0.0
    failures: tuple[Failure, ...] = ()
    seed: int = 1
    threads: int = 1
    stall: int = 20_000
    #: A folder for waveforms (``<node>.vcd``) of the nodes ``trace_nodes`` (all if empty).
    trace: Path | None = None
    trace_nodes: tuple[str, ...] = ()


def simulate(routed: Routed, plans: Sequence[NodePlan], options: SimOptions, *, jobs: int = 1,
             step: Callable[[str], None] = lambda text: None,
             progress: Callable[[int, int, int, int], None] = lambda *a: None,
             cache: Path | None = None) -> tuple[dict, dict[str, str]]:
    """Simulate ``routed`` (every node's ``plans``) with ``options``; returns the summary
    (:func:`~optnet.sim.report.sim_summary`) and the files ``sim.json``, ``sim.md`` and
    ``sim.html``. ``step`` names each stage as it starts; ``progress`` as
    :func:`~optnet.sim.run.run_simulation`'s.

    Raises
    ------
    TrafficError
        If the traffic cannot run on the cluster.
    SimBuildError, SimError
        If the simulator cannot be built or run.
    """
    (doc,) = _runs(routed, plans, options, (options.load,), jobs=jobs, step=step,
                   progress=progress, cache=cache)
    return doc, sim_files(doc)


def sweep(routed: Routed, plans: Sequence[NodePlan], options: SimOptions,
          loads: Sequence[float], *, jobs: int = 1,
          step: Callable[[str], None] = lambda text: None,
          progress: Callable[[int, int, int, int], None] = lambda *a: None,
          cache: Path | None = None) -> tuple[dict, dict[str, str]]:
    """Simulate ``routed`` with ``options`` once per offered load of ``loads`` (in that
    order; ``options.load`` is not used), the simulator built once; returns the sweep's
    summary (:func:`~optnet.sim.report.sweep_summary`: every run's
    :func:`~optnet.sim.report.sim_summary` under ``runs``) and its files ``sim.json``,
    ``sim.md`` and ``sim.html``. Arguments as :func:`simulate`'s.

    Raises
    ------
    TrafficError
        If the traffic cannot run on the cluster, or has no offered load to sweep (bring-up,
        a file of messages), or waveforms are asked for (one run's at a time).
    SimBuildError, SimError
        If the simulator cannot be built or a run fails.
    """
    if not loads:
        raise ValueError("A sweep needs at least one load.")
    pattern = options.pattern
    if pattern == "bringup" or (pattern not in PATTERNS and not pattern.startswith(PAIR)):
        raise TrafficError(f"The traffic {pattern} sets its own load; a sweep of offered load "
                           "runs a synthetic pattern or pairs.")
    if options.trace is not None:
        raise TrafficError("Waveforms are written for one run; give --trace with a single "
                           "--load.")
    runs = list(_runs(routed, plans, options, loads, jobs=jobs, step=step, progress=progress,
                      cache=cache))
    doc = sweep_summary(runs)
    return doc, sweep_files(doc)


def _runs(routed: Routed, plans: Sequence[NodePlan], options: SimOptions,
          loads: Sequence[float], *, jobs: int, step: Callable[[str], None],
          progress: Callable[[int, int, int, int], None],
          cache: Path | None) -> Iterator[dict]:
    # the traffic checked and the simulator built before the first run; then each load's
    # summary as its run ends
    setup = sim_setup(routed, plans)
    n = len(plans)
    eps = len(plans[0].endpoints)
    order: tuple[int, ...] = ()
    messages: tuple = ()
    pairs: tuple = ()
    pattern = options.pattern
    bringup = pattern == "bringup"
    if pattern.startswith(PAIR):
        pairs = read_pairs(pattern, setup)
        pattern = "pairs"
    elif pattern in ("transpose", "tornado"):
        order = permutation(pattern, n)
    elif pattern not in PATTERNS and not bringup:
        messages = read_messages(Path(pattern), setup)
        pattern = "messages"
    if plans[0].direct is not None and (pattern == "broadcast" or any(
            m[3] < 0 for m in messages)):
        raise TrafficError("A direct cluster (OPTWEB's switch) has no broadcasts; use a "
                           "unicast pattern.")
    # the endpoints that offer traffic: per sending endpoint the accepted load is measured
    senders = ([(s, e) for s, e, _ in pairs] if pairs else
               [(s, e) for s, d in enumerate(order) if d >= 0 for e in range(eps)] if order
               else [(s, e) for s in range(n) for e in range(eps)])
    traffic = Traffic(**{f.name: getattr(options, f.name) for f in fields(Traffic)})
    traffic = replace(traffic, pattern="permutation" if order else pattern, messages=messages,
                      pairs=pairs, cycles=options.cycles or (BRINGUP_CYCLES if bringup else 0))
    sim = build_simulator(setup.roles, bringup=bringup, trace=options.trace is not None,
                          jobs=jobs, progress=step, cache=cache)
    traces = () if options.trace is None else tuple(
        (i, (options.trace / f"{p.node}.vcd").resolve()) for i, p in enumerate(plans)
        if not options.trace_nodes or p.node in options.trace_nodes)
    shown = replace(traffic, pattern="messages" if messages else options.pattern)
    prediction = predictions(routed, setup, shown, order)
    for k, load in enumerate(loads):
        step("simulating" if len(loads) == 1 else
             f"simulating load {load:g} ({k + 1} of {len(loads)})")
        result = run_simulation(setup, sim, replace(traffic, load=load), progress=progress,
                                seed=options.seed, threads=options.threads, ber=options.ber,
                                failures=options.failures, permutation=order,
                                stall=options.stall, traces=traces)
        yield sim_summary(setup, replace(shown, load=load), result, prediction, {
            "cluster": routed.cluster.name, "seed": options.seed, "ber": options.ber,
            "failures": [vars(f) for f in options.failures], "traffic": options.pattern,
            "cached_model": sim.cached}, senders)
