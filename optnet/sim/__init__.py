"""``optnet sim``: the cluster's generated Verilog, simulated with Verilator.

Stages, each taking data and returning new data (docs/sim.md):

1. :func:`optnet.sim.setup.sim_setup`: clocks, roles, links with their latencies, from the
   routed cluster and its plans;
2. :func:`optnet.sim.build.build_simulator`: one Verilated model per hardware role and the
   C++ harness, compiled once and cached;
3. :func:`optnet.sim.run.run_simulation`: one run with a traffic, its results;
4. :mod:`optnet.sim.report`: the results beside the report's predictions, as JSON, Markdown
   and HTML.

:func:`simulate` runs them in order for the command line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

from optnet.plan import NodePlan
from optnet.routing.route import Routed
from optnet.sim.build import SimBuildError, build_simulator
from optnet.sim.report import predictions, sim_files, sim_summary
from optnet.sim.run import SimError, run_simulation
from optnet.sim.setup import (
    PATTERNS,
    Failure,
    Traffic,
    TrafficError,
    permutation,
    read_messages,
    sim_setup,
)

#: Network cycles the bring-up traffic runs for when no ``cycles`` are given.
BRINGUP_CYCLES = 100_000

__all__ = ["BRINGUP_CYCLES", "PATTERNS", "Failure", "SimBuildError", "SimError", "SimOptions",
           "Traffic", "TrafficError", "simulate"]


@dataclass(frozen=True)
class SimOptions(Traffic):
    """How to run: a :class:`~optnet.sim.setup.Traffic` whose ``pattern`` is one of
    :data:`PATTERNS`, ``bringup`` or the path of a CSV file of messages
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
    setup = sim_setup(routed, plans)
    n = len(plans)
    order: tuple[int, ...] = ()
    messages: tuple = ()
    pattern = options.pattern
    bringup = pattern == "bringup"
    if pattern in ("transpose", "tornado"):
        order = permutation(pattern, n)
    elif pattern not in PATTERNS and not bringup:
        messages = read_messages(Path(pattern), setup)
        pattern = "messages"
    if plans[0].direct is not None and (pattern == "broadcast" or any(
            m[3] < 0 for m in messages)):
        raise TrafficError("A direct cluster (OPTWEB's switch) has no broadcasts; use a "
                           "unicast pattern.")
    traffic = Traffic(**{f.name: getattr(options, f.name) for f in fields(Traffic)})
    traffic = replace(traffic, pattern="permutation" if order else pattern, messages=messages,
                      cycles=options.cycles or (BRINGUP_CYCLES if bringup else 0))
    sim = build_simulator(setup.roles, bringup=bringup, trace=options.trace is not None,
                          jobs=jobs, progress=step, cache=cache)
    traces = () if options.trace is None else tuple(
        (i, (options.trace / f"{p.node}.vcd").resolve()) for i, p in enumerate(plans)
        if not options.trace_nodes or p.node in options.trace_nodes)
    step("simulating")
    result = run_simulation(setup, sim, traffic, progress=progress, seed=options.seed,
                            threads=options.threads, ber=options.ber,
                            failures=options.failures, permutation=order,
                            stall=options.stall, traces=traces)
    shown = replace(traffic, pattern="messages" if messages else options.pattern)
    prediction = predictions(routed, setup, shown, order)
    doc = sim_summary(setup, shown, result, prediction, {
        "cluster": routed.cluster.name, "seed": options.seed, "ber": options.ber,
        "failures": [vars(f) for f in options.failures], "traffic": options.pattern,
        "cached_model": sim.cached})
    return doc, sim_files(doc)
