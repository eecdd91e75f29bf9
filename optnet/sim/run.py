"""Running a compiled cluster simulator (:mod:`optnet.sim.build`): its settings file, the
run with its progress, and the results it writes.

The settings are a plain text file, one setting a line (the harness reads them with no
library): the clocks, each node's role, id, PHY clocks and memory contents, both directions
of every link, the endpoints, the failures and the traffic. The program writes its results
as JSON (:class:`SimResult` reads them) and its progress to standard error, a line
``progress <cycle> <limit> <delivered> <expected>`` about five times a second.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from optnet.emit.roles import role_memories
from optnet.plan.registers import register_map
from optnet.sim.build import Simulator
from optnet.sim.setup import Failure, SimSetup, Traffic

__all__ = ["SimError", "SimResult", "run_simulation", "settings_text"]


class SimError(Exception):
    """The simulator could not run to its end; the message says why."""


@dataclass(frozen=True)
class SimResult:
    """What one run measured (the harness's JSON, as a mapping) and how long it took.

    Attributes
    ----------
    data : dict
        ``verdict`` (``complete``, ``time_limit``, ``stalled`` or ``links_down``), ``cycles``
        and ``traffic_cycles`` (network cycles in all and since the links came up),
        ``errors``, ``classes`` (latency per endpoint and kind, in network cycles),
        ``sources`` (per node and endpoint), ``lines`` (per link direction, in
        :attr:`SimSetup.lines` order), ``ports`` (each node's link layer counters),
        ``dropped`` (per node), ``registers`` (with the bring-up kit: per node, the value of
        each register of its :func:`~optnet.plan.registers.register_map`), ``wall_s``.
    """

    data: dict


def _words(value: int) -> list[str]:
    # a memory word as 32-bit hex words, least significant first
    out = []
    while True:
        out.append(f"{value & 0xFFFFFFFF:x}")
        value >>= 32
        if not value:
            return out


def settings_text(setup: SimSetup, sim: Simulator, traffic: Traffic, result: Path, *,
                  seed: int = 1, threads: int = 1, ber: float = 0.0,
                  failures: Sequence[Failure] = (), permutation: Sequence[int] = (),
                  stall: int = 20_000, traces: Sequence[tuple[int, Path]] = ()) -> str:
    """The settings file of one run of ``sim`` on ``setup``; results to ``result``; with
    ``traces``, (node index, VCD file) of the nodes whose waveforms are written (``sim``
    built with ``trace``).

    Raises
    ------
    SimError
        If a path holds a line break (the settings are one per line; paths end their line).
    """
    for path in [result, *(p for _, p in traces)]:
        if "\n" in str(path) or "\r" in str(path):
            raise SimError(f"optnet sim cannot write to {str(path)!r}: the path holds a line "
                           "break.")
    lines = [f"seed {seed}", f"threads {threads}", f"cycles {traffic.cycles}",
             f"packets {traffic.packets}", f"stall {stall}", f"pattern {traffic.pattern}",
             f"load {traffic.load!r}", f"ready {traffic.ready!r}", f"beats {traffic.beats}",
             f"result {result}"]
    lines += [f"clock {half}" for half in setup.half_ps]
    for i, plan in enumerate(setup.plans):
        clocks = " ".join(str(c) for c in setup.port_clocks[i])
        lines.append(f"node {plan.node_id} {setup.role_of[i]} {len(plan.ports)} {clocks}".strip())
    if permutation:
        lines.append("permutation " + " ".join(str(d) for d in permutation))
    lines += [f"pair {node} {ep} {dst}" for node, ep, dst in traffic.pairs]
    rep = setup.plans[0]
    bringup = traffic.pattern == "bringup"
    for cfg in () if bringup else rep.endpoints:
        direct = rep.direct is not None
        unicast = cfg.max_packet - (0 if direct else 1)
        broadcast = 0 if direct else (cfg.broadcast_flits or cfg.max_packet) - 1
        lines.append(f"endpoint {cfg.width} {unicast} {broadcast} {int(direct)}")
    for line in setup.lines:
        lines.append(f"line {line.tx[0]} {line.tx[1]} {line.rx[0]} {line.rx[1]} {line.clock} "
                     f"{line.latency} {line.bits} {line.link} {ber!r}")
    for failure in failures:
        lines.append(f"failure {failure.link} {round(failure.start_ns * 1000)} "
                     f"{round(failure.end_ns * 1000)}")
    for i, plan in enumerate(setup.plans):
        memories = role_memories(plan)
        for m, name in enumerate(sim.memories[setup.role_of[i]]):
            for entry, value in enumerate(memories[name]):
                w = _words(value)
                lines.append(f"memory {i} {m} {entry} {len(w)} {' '.join(w)}")
    if bringup:
        lines += [f"registers {i} " + " ".join(str(r.addr) for r in register_map(plan))
                  for i, plan in enumerate(setup.plans)]
    lines += [f"trace {node} {path}" for node, path in traces]
    for node, ep, cycle, dst, beats in traffic.messages:
        lines.append(f"message {node} {ep} {cycle} {dst} {beats}")
    return "\n".join(lines) + "\n"


def run_simulation(setup: SimSetup, sim: Simulator, traffic: Traffic, *,
                   progress: Callable[[int, int, int, int], None] = lambda *a: None,
                   **options) -> SimResult:
    """Run ``sim`` once on ``setup`` with ``traffic``; ``options`` as :func:`settings_text`.
    ``progress(cycle, limit, delivered, expected)`` is called as the run goes (``limit``
    -1 without a cycle limit).

    Raises
    ------
    SimError
        If the program fails or writes no results.
    """
    with tempfile.TemporaryDirectory(prefix="optnet-sim-") as tmp:
        result = Path(tmp) / "result.json"
        settings = Path(tmp) / "settings.txt"
        settings.write_text(settings_text(setup, sim, traffic, result, **options),
                            encoding="utf-8")
        try:
            proc = subprocess.Popen([str(sim.program), str(settings)], stderr=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, text=True)
        except OSError as err:
            raise SimError(f"The simulator {sim.program} could not start: {err}.") from err
        other = []
        assert proc.stderr is not None
        for text in proc.stderr:
            fields = text.split()
            if len(fields) == 5 and fields[0] == "progress":
                progress(*(int(f) for f in fields[1:]))
            else:
                other.append(text.rstrip())
        code = proc.wait()
        if code != 0 or not result.is_file():
            raise SimError(f"The simulator failed (exit {code}): " + (
                " ".join(other[-5:]) or "no message") + ".")
        return SimResult(json.loads(result.read_text(encoding="utf-8")))
