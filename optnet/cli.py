"""The ``optnet`` command line.

Exit status, decided here and nowhere else: 0 clean; 1 findings at error level (or any
warning with ``--strict``); 2 usage or I/O error; 3 an internal error (a bug in optnet,
reported without a traceback unless ``OPTNET_DEBUG`` is set).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from optnet import __version__
from optnet.boards import load_library
from optnet.diagnostics import Severity
from optnet.emit.env import render_template
from optnet.emit.format_doc import format_reference
from optnet.emit.tables import table_files
from optnet.emit.writer import OutputError, claim_output, write_into, write_tree
from optnet.lint import InputError, lint_file, load_presets
from optnet.render import FORMATS, render, summary
from optnet.resources import data_dir, shown_path
from optnet.routing.export import route_json
from optnet.routing.metrics import compute_metrics
from optnet.routing.tables import node_tables
from optnet.schema import board_schema, cluster_schema
from optnet.spec.models import BoardDesc
from optnet.units import Dimension, Quantity, format_quantity

__all__ = ["main"]

logger = logging.getLogger(__name__)

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def _expand(paths: tuple[str, ...]) -> list[Path]:
    files: list[Path] = []
    for text in paths:
        path = Path(text)
        # A folder's pipes, devices and dangling links are not cluster files: skip them
        # (a file named on the command line is refused by the reader instead).
        files.extend(sorted(p for p in path.glob("*.yaml") if p.is_file())
                     if path.is_dir() else [path])
    return files


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="optnet")
@click.option("-v", "--verbose", count=True, help="Log more (repeat for debug output).")
def cli(verbose: int) -> None:
    """optnet: a design compiler for networks of FPGAs.

    Describe a cluster in one YAML file; optnet validates it, routes it, proves the routing
    deadlock-free and generates the hardware and files for every FPGA.
    """
    logging.basicConfig(level=logging.WARNING - 10 * min(verbose, 2),
                        format="%(levelname)s %(name)s: %(message)s")


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="Output format: human text, JSON, SARIF 2.1.0, or GitHub annotations.")
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@click.option("--no-route", is_flag=True,
              help="Skip routing, the deadlock proof (E2xx) and the credit check that follows "
                   "the routes (W101): faster on large clusters.")
def lint(files: tuple[str, ...], fmt: str, strict: bool, no_route: bool) -> None:
    """Check cluster, preset and board FILES (or folders of them) without building.

    Every finding is collected before anything is reported. Exit status 0 when clean, 1
    when there are errors (or warnings with --strict), 2 when a file cannot be read.
    """
    diags, sources, unreadable = [], {}, []
    paths = _expand(files)
    for path in paths:
        try:
            result = lint_file(path, routing=not no_route)
        except InputError as exc:
            unreadable.append(str(exc))
            continue
        diags += result.diagnostics
        sources.update(result.sources)
    # A local board is reported with the cluster that uses it and again when linted itself.
    diags = list(dict.fromkeys(diags))
    out = render(diags, fmt, sources, len(paths))
    if fmt == "text":
        # Plain text, not through Rich: Rich turns ':thumbs_up:' in a quoted name into an
        # emoji, and takes seconds and a gigabyte for a file with 100,000 findings.
        if out:
            click.echo(out, nl=False)
        errors = any(d.severity is Severity.ERROR for d in diags)
        style = "red" if errors else ("yellow" if diags else "green")
        Console(stderr=True, highlight=False).print(summary(diags, len(paths)), style=style)
    else:
        click.echo(out, nl=False)
    for message in unreadable:
        click.echo(f"optnet: {message}", err=True)
    if unreadable:
        sys.exit(EXIT_USAGE)
    failing = [d for d in diags if strict or d.severity is Severity.ERROR]
    sys.exit(EXIT_FINDINGS if failing else EXIT_OK)


@contextlib.contextmanager
def _claimed(output: str | None, *, replace: bool) -> Iterator[None]:
    """Claim output directory ``output`` (nothing if None) for the ``with`` block: check it
    and take its lock before any work starts (:func:`optnet.emit.writer.claim_output`), and
    print the reason and exit 2 when it cannot be written, then or at write time."""
    if output is None:
        yield
        return
    try:
        with claim_output(Path(output), replace=replace):
            yield
    except OutputError as exc:
        click.echo(f"optnet: {exc}", err=True)
        sys.exit(EXIT_USAGE)


def _lint_or_exit(file: str, *, hardware: bool = True):
    """Lint and route FILE (and check its hardware, E3xx, unless not ``hardware``); print
    its findings and exit 2 (unreadable) or 1 (errors, or not routable) unless it routed
    cleanly. Returns the LintResult (``routed`` is set, and ``plans`` with ``hardware``)."""
    try:
        result = lint_file(Path(file), hardware=hardware)
    except InputError as exc:
        click.echo(f"optnet: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    if result.diagnostics:
        click.echo(render(result.diagnostics, "text", result.sources, 1), err=True, nl=False)
    if result.routed is None or errors:
        sys.exit(EXIT_FINDINGS)
    return result


@cli.command("route")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--tables", is_flag=True, help="Include every node's routing table.")
@click.option("--paths", is_flag=True, help="Include the path of every flow (JSON only).")
@click.option("--emit", "emit_dir", type=click.Path(file_okay=False),
              help="Write routes.json, routes.hex, mcast.hex and routes.h per node here.")
def route_command(file: str, fmt: str, tables: bool, paths: bool, emit_dir: str | None) -> None:
    """Route FILE, prove it deadlock-free and print the algorithm, proof and metrics.

    Exit status 0 when routed and proven, 1 with any error finding, 2 when unreadable or
    the --emit directory cannot be written (other files there are left as they are).
    """
    with _claimed(emit_dir, replace=False):
        routed = _lint_or_exit(file, hardware=False).routed
        metrics = compute_metrics(routed)
        node_tabs = node_tables(routed) if tables or emit_dir else []
        if emit_dir:
            write_into(Path(emit_dir), table_files(node_tabs))
        if fmt == "json":
            doc = route_json(routed, metrics, node_tabs if tables else None, paths)
            click.echo(json.dumps(doc, indent=2))
        else:
            click.echo(render_template("report/route.txt.j2", r=routed, m=metrics,
                                       tables=node_tabs if tables else None, rate=_rate),
                       nl=False)


def _rate(bps: float) -> str:
    """A rate to four significant digits, in the unit that suits it (``99.84Gbps``)."""
    return format_quantity(Quantity(Fraction(Decimal(f"{bps:.4g}")), Dimension.RATE))


@cli.command("hdl")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False),
              help="Write nodes/<node>/rtl/<node>.v and nodes/<node>/stubs/*.v here.")
@click.option("--nodes", help="Comma-separated node names (default: every node).")
@click.option("--one-per-role", is_flag=True,
              help="Only the first node of each distinct hardware role (for lint).")
def hdl(file: str, output: str, nodes: str | None, one_per_role: bool) -> None:
    """Generate the Verilog of every node of FILE (lint, route, plan, lower).

    Files are added to OUTPUT node by node; other files there are left as they are.
    Exit status 0 when written, 1 when the cluster has errors or its hardware cannot be
    generated, 2 when unreadable, a node name is unknown or OUTPUT cannot be written.
    """
    from optnet.emit import hdl as emit_hdl

    with _claimed(output, replace=False):
        plans = _plans_or_exit(_lint_or_exit(file), file, nodes)
        if one_per_role:
            plans = emit_hdl.one_per_role(plans)
        for p in plans:
            written = emit_hdl.write_files(Path(output), p.node, emit_hdl.node_files(p))
            click.echo(f"{p.node}: {', '.join(shown_path(w) for w in written)}")


def _resources_or_exit(routed, plans) -> list:
    """Resources of the first node of each hardware role in ``plans``; print the reason and
    exit 1 when synthesis fails."""
    from optnet.emit.hdl import one_per_role
    from optnet.report.resources import ResourcesError, node_resources

    boards = {n.board.name: n.board for n in routed.cluster.nodes}
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = []
    for rep in one_per_role(plans):
        with err.status(f"synthesising {rep.node} ({rep.family}) with Yosys"):
            try:
                out.append(node_resources(rep, boards[rep.board]))
            except ResourcesError as exc:
                click.echo(f"error: {exc}", err=True)
                sys.exit(EXIT_FINDINGS)
    return out


def _plans_or_exit(result, file: str, nodes: str | None, bringup: bool = True):
    """The hardware plans of ``result.routed`` (only ``nodes``, comma-separated, when
    given; with the bring-up kit or not); exit 2 for an unknown node. Lint has already
    refused (E3xx) a cluster whose hardware cannot be planned."""
    from optnet.plan import plan

    plans = plan(result.routed, bringup=bringup)
    if nodes:
        wanted = {n.strip() for n in nodes.split(",") if n.strip()}
        unknown = sorted(wanted - {p.node for p in plans})
        if unknown:
            click.echo(f"optnet: no node called {', '.join(map(repr, unknown))} in {file}.",
                       err=True)
            sys.exit(EXIT_USAGE)
        plans = [p for p in plans if p.node in wanted]
    return plans


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False),
              help="The build directory (replaced as a whole when the build succeeds).")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Worker processes for lowering the nodes' hardware.")
@click.option("--nodes", help="Comma-separated node names to build (default: every node).")
@click.option("--bitstream", is_flag=True,
              help="Also build bitstreams of the ECP5 nodes with Yosys and nextpnr-ecp5: "
                   "each role placed and routed once, each node's tables patched in.")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=1, show_default=True,
              help="nextpnr's placement seed (with --bitstream).")
@click.option("--timing-allow-fail", is_flag=True,
              help="Write bitstreams even if a clock misses its constraint (with --bitstream).")
@click.option("--resources", is_flag=True,
              help="Also synthesise one node per hardware role with Yosys for the report's "
                   "resources (cached by content).")
@click.option("--bringup/--no-bringup", default=True, show_default=True,
              help="Drive the board tops' endpoints with the bring-up kit (traffic "
                   "generators and checkers, counters, UART registers; docs/bringup.md), "
                   "or leave them idle.")
def build(file: str, output: str, jobs: int, nodes: str | None, bitstream: bool, seed: int,
          timing_allow_fail: bool, resources: bool, bringup: bool) -> None:
    """Build FILE into OUTPUT: lint, route, plan, lower and emit every node's folder,
    the cabling plan, the drawing and the manifest (see docs/build.md).

    The new tree is written next to OUTPUT and swapped in only when complete, so a failed
    build leaves the previous one intact; files whose contents did not change keep their
    modification times. Exit status 0 when built, 1 when the cluster has errors or cannot
    be built (with --bitstream also: a tool failed or timing was not met), 2 when
    unreadable or OUTPUT cannot be replaced.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from optnet.emit.bitstream import BitstreamError
    from optnet.emit.env import EscapeError
    from optnet.pipeline import BitstreamOptions, build_files
    from optnet.plan.clocks import PllError
    from optnet.plan.ip import ProjectError
    from optnet.report.resources import ResourcesError

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    with _claimed(output, replace=True):
        with err.status("lint and route"):
            result = _lint_or_exit(file)
        plans = _plans_or_exit(result, file, nodes, bringup)
        columns = (TextColumn("{task.description:<8}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[item]}"))
        with Progress(*columns, console=err, transient=not err.is_terminal) as bar:
            tasks: dict[str, int] = {}

            def progress(stage: str, done: int, total: int, item: str) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total, item="")
                bar.update(tasks[stage], completed=done, item=item)

            try:
                files = build_files(
                    result.routed, plans, result.sources, jobs=jobs, progress=progress,
                    bitstream=BitstreamOptions(seed, timing_allow_fail) if bitstream else None,
                    resources=resources)
            except (ProjectError, PllError, BitstreamError, ResourcesError, EscapeError) as exc:
                click.echo(f"error: {exc}", err=True)
                sys.exit(EXIT_FINDINGS)
            stats = write_tree(Path(output), files)
    err.print(f"built {len(plans)} node(s) of {result.routed.cluster.name} into "
              f"{shown_path(Path(output))}: {len(files)} files, {len(stats.written)} written, "
              f"{stats.kept} unchanged", style="green")
    if stats.written:
        logger.info("written: %s", ", ".join(stats.written))


def _failure(text: str):
    # --fail LINK:START:END (link index, nanoseconds after the traffic starts)
    from optnet.sim import Failure

    try:
        link, start, end = text.split(":")
        failure = Failure(int(link), float(start), float(end))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not LINK:START:END (a link's index in the "
                                 "cluster file, and nanoseconds after the traffic starts).") \
            from None
    if failure.link < 0 or not 0 <= failure.start_ns < failure.end_ns <= 1e12:
        raise click.BadParameter(f"{text!r}: the link index is at least 0 and the window "
                                 "runs forward, within 1e12 ns.")
    return failure


def _loads(_ctx: click.Context, _param: click.Parameter, text: str) -> tuple[float, ...]:
    # --load 0.1 or a sweep, --load 0.1,0.3,0.5,1
    from optnet.sim import parse_loads

    try:
        return parse_loads(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(file_okay=False),
              help="Also write sim.json, sim.md and sim.html into this directory.")
@click.option("--traffic", default="uniform", show_default=True, metavar="PATTERN|FILE.csv",
              help="uniform, alltoall, transpose, tornado, broadcast, pair:SRC:DST (only "
                   "SRC, a node or node.endpoint, sends, to node DST; pairs joined by commas), "
                   "or a CSV file of messages (src,dst,bytes,t in ns).")
@click.option("--load", "loads", default="0.1", show_default=True, callback=_loads,
              metavar="LOAD[,LOAD...]",
              help="Offered load per sending endpoint, in beats per network cycle; several "
                   "joined by commas run one after another (a load sweep).")
@click.option("--packets", type=click.IntRange(0, 10**9), default=None,
              help="Packets per endpoint, then wait for all of them [default: 200 without "
                   "--cycles].")
@click.option("--cycles", type=click.IntRange(0, 10**12), default=0,
              help="Network cycles of traffic (1 ms at 156.25 MHz is 156250).")
@click.option("--beats", type=click.IntRange(0, 65535), default=0,
              help="Beats per packet [default: the endpoint's longest].")
@click.option("--ready", type=click.FloatRange(0, 1, min_open=True), default=1.0,
              show_default=True, help="Chance a receiving endpoint takes a beat in a cycle.")
@click.option("--ber", type=click.FloatRange(0, 0.01), default=0.0, show_default=True,
              help="Bit error ratio of every link.")
@click.option("--fail", "fails", multiple=True, metavar="LINK:START:END",
              help="Link LINK is down from START to END ns after the traffic starts "
                   "(repeatable).")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True)
@click.option("--threads", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Threads evaluating the nodes.")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=2, show_default=True,
              help="Parallel compile jobs when the simulator is built.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="What to print.")
@click.option("--trace", "trace_dir", type=click.Path(file_okay=False),
              help="Write each node's waveforms to TRACE/<node>.vcd (a slower simulator, "
                   "built apart; keep runs short).")
@click.option("--trace-nodes", help="Comma-separated nodes to trace (default: every node).")
def sim(file: str, output: str | None, traffic: str, loads: tuple[float, ...],
        packets: int | None,
        cycles: int, beats: int, ready: float, ber: float, fails: tuple[str, ...], seed: int,
        threads: int, jobs: int, fmt: str, trace_dir: str | None,
        trace_nodes: str | None) -> None:
    """Simulate FILE's generated Verilog with Verilator: every node, link models between
    them, traffic from every endpoint; check that every packet arrives once, in order and
    intact, and report latency, throughput and links beside the report's predictions (see
    docs/sim.md).

    Several loads run the simulator at each in turn and report a table and a
    latency-throughput curve instead.

    Exit status 0 when every packet arrived intact (or the run reached --cycles with no
    error), 1 when the cluster has errors or the network lost, corrupted, reordered or
    stalled packets (in any run of a sweep), 2 for bad options, an unreadable file or a
    missing tool.
    """
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from optnet.plan import plan
    from optnet.sim import SimBuildError, SimError, SimOptions, TrafficError, simulate, sweep

    failures = tuple(_failure(text) for text in fails)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    with _claimed(output, replace=True):
        with err.status("lint and route"):
            result = _lint_or_exit(file)
        links = len(result.routed.cluster.links)
        for failure in failures:
            if failure.link >= links:
                click.echo(f"optnet: --fail names link {failure.link}, but "
                           f"{result.routed.cluster.name} has links 0 to {links - 1}.",
                           err=True)
                sys.exit(EXIT_USAGE)
        traced = tuple(n.strip() for n in (trace_nodes or "").split(",") if n.strip())
        unknown = sorted(set(traced) - {n.name for n in result.routed.cluster.nodes})
        if unknown:
            click.echo(f"optnet: --trace-nodes names no node called "
                       f"{', '.join(map(repr, unknown))} in {file}.", err=True)
            sys.exit(EXIT_USAGE)
        if trace_dir is not None:
            if "\n" in trace_dir or "\r" in trace_dir:
                click.echo(f"optnet: --trace {trace_dir!r}: a folder name with a line break "
                           "cannot be given to the simulator.", err=True)
                sys.exit(EXIT_USAGE)
            try:
                Path(trace_dir).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                click.echo(f"optnet: cannot create {trace_dir}: {exc.strerror or exc}.",
                           err=True)
                sys.exit(EXIT_USAGE)
        options = SimOptions(
            pattern=traffic, load=loads[0], cycles=cycles, beats=beats, ready=ready, ber=ber,
            packets=200 if packets is None and not cycles else packets or 0,
            failures=failures, seed=seed, threads=threads,
            trace=None if trace_dir is None else Path(trace_dir), trace_nodes=traced)
        columns = (TextColumn("{task.description:<12}"), BarColumn(),
                   TextColumn("{task.fields[info]}"), TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True) as bar:
            task = bar.add_task("building", total=None, info="")

            def step(text: str) -> None:
                bar.update(task, description=text.split(" ")[0], info=text)

            def progress(cycle: int, limit: int, delivered: int, expected: int) -> None:
                bar.update(task, total=limit if limit > 0 else None, completed=cycle,
                           info=f"cycle {cycle:,}, {delivered:,} of {expected:,} packets")

            try:
                if len(loads) == 1:
                    doc, files = simulate(result.routed, plan(result.routed), options,
                                          jobs=jobs, step=step, progress=progress)
                else:
                    doc, files = sweep(result.routed, plan(result.routed), options, loads,
                                       jobs=jobs, step=step, progress=progress)
            except TrafficError as exc:
                click.echo(f"optnet: {exc}", err=True)
                sys.exit(EXIT_USAGE)
            except (SimBuildError, SimError) as exc:
                click.echo(f"optnet: {exc}", err=True)
                sys.exit(EXIT_USAGE if isinstance(exc, SimBuildError) else EXIT_FINDINGS)
        if output is not None:
            write_tree(Path(output), {k: v.encode("utf-8") for k, v in files.items()})
    click.echo(files["sim.json"] if fmt == "json" else files["sim.md"], nl=False)
    sys.exit(EXIT_OK if doc["ok"] else EXIT_FINDINGS)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False),
              help="Write report.md, report.html and report.json here (replaced as a whole).")
@click.option("--resources", is_flag=True,
              help="Also synthesise one node per hardware role with Yosys for its resources "
                   "(minutes per role the first time; cached by content).")
def report(files: tuple[str, ...], output: str, resources: bool) -> None:
    """Report FILES without building: zero-load latency, bandwidth and collectives from the
    models (docs/report.md). Several files are compared side by side.

    Exit status 0 when written, 1 when a cluster has errors (or cannot be synthesised), 2
    when a file is unreadable or OUTPUT cannot be replaced.
    """
    from optnet.emit.writer import MANIFEST, manifest_text, sha256
    from optnet.report.render import report_files
    from optnet.report.summary import REPORT_VERSION

    with _claimed(output, replace=True):
        results = [_lint_or_exit(file) for file in files]
        usage = ([_resources_or_exit(r.routed, _plans_or_exit(r, f, None))
                  for r, f in zip(results, files, strict=True)] if resources else ())
        texts = report_files([r.routed for r in results], resources=usage)
        data = {rel: text.encode("utf-8") for rel, text in texts.items()}
        inputs = {name: sha256(text.encode("utf-8")) for r in results
                  for name, text in sorted(r.sources.items())}
        data[MANIFEST] = manifest_text({"format": "optnet-report", "version": REPORT_VERSION,
                                        "optnet": __version__, "inputs": inputs}, data).encode()
        write_tree(Path(output), data)
    names = ", ".join(r.routed.cluster.name for r in results)
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"reported {names} into {shown_path(Path(output))}", style="green")


@cli.command()
@click.option("--board", is_flag=True, help="The schema of board files instead.")
@click.option("--markdown", is_flag=True,
              help="The Markdown reference of both formats and all diagnostic codes instead.")
def schema(board: bool, markdown: bool) -> None:
    """Print the JSON Schema of cluster files (or, with --board, of board files)."""
    if markdown:
        click.echo(format_reference(), nl=False)
        return
    click.echo(json.dumps(board_schema() if board else cluster_schema(), indent=2))


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def boards(fmt: str) -> None:
    """List the board library with each board's key figures."""
    library = load_library([data_dir("boards")])
    rows = []
    for name, b in sorted(library.boards.items()):
        xcvr = b.transceivers
        rows.append({
            "name": name, "vendor": b.vendor, "family": b.family, "part": b.part,
            "transceivers": f"{xcvr.type} {format_quantity(xcvr.max_line_rate)}" if xcvr else "",
            "ports": {p: f"{len(port.lanes)}x {port.connector}" for p, port in b.ports.items()},
            "logic": b.resources.lut or b.resources.alm,
            "bram": format_quantity(_bram(b)),
        })
    _listing(rows, fmt, "optnet board library", [
        ("board", "name"), ("part", "part"), ("transceivers", "transceivers"),
        ("ports", lambda r: ", ".join(f"{p} {v}" for p, v in r["ports"].items())),
        ("LUT/ALM", lambda r: f"{r['logic']:,}" if r["logic"] else ""), ("BRAM", "bram")])


def _bram(board: BoardDesc) -> Quantity:
    return Quantity(board.resources.bram.blocks * board.resources.bram.size.value,
                    board.resources.bram.size.dim)


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def topologies(fmt: str) -> None:
    """List the topology presets with their size and shape."""
    rows = []
    for name in sorted(load_presets()):
        result = lint_file(data_dir("topologies") / f"{name}.yaml", hardware=False)
        cluster = result.cluster
        topo = cluster.desc.topology if cluster else None
        rows.append({
            "name": name,
            "kind": topo.kind if topo else "explicit",
            "nodes": len(cluster.nodes) if cluster else None,
            "links": len(cluster.links) if cluster else None,
            "board": cluster.nodes[0].board.name if cluster and cluster.nodes else None,
            "description": cluster.desc.description if cluster else "",
            "ok": result.ok,
        })
    _listing(rows, fmt, "optnet topology presets", [
        ("preset", "name"), ("kind", "kind"), ("nodes", "nodes"), ("links", "links"),
        ("board", "board"), ("description", "description")])


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def examples(fmt: str) -> None:
    """List the example clusters shipped with optnet; start your own from one with
    'optnet init --from NAME'."""
    rows = []
    for path in sorted(data_dir("examples").glob("*.yaml")):
        cluster = lint_file(path, routing=False).cluster
        rows.append({
            "name": path.stem,
            "nodes": len(cluster.nodes) if cluster else None,
            "board": cluster.nodes[0].board.name if cluster and cluster.nodes else None,
            "description": (cluster.desc.description or "") if cluster else "",
        })
    _listing(rows, fmt, "optnet examples", [
        ("example", "name"), ("nodes", "nodes"), ("board", "board"),
        ("description", "description")])


#: The modeline of a shipped example names the schema relative to the repository.
_MODELINE = "# yaml-language-server: $schema=../schema/cluster.schema.json"


@cli.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--from", "example", required=True, metavar="NAME",
              help="The shipped example to start from ('optnet examples' lists them).")
def init(file: str | None, example: str) -> None:
    """Write a new cluster FILE (default: NAME.yaml here) from a shipped example, to edit
    and build. An existing file is never overwritten.

    Exit status 0 when written, 2 for an unknown example or when FILE exists.
    """
    shipped = {p.stem: p for p in data_dir("examples").glob("*.yaml")}
    if example not in shipped:
        click.echo(f"optnet: there is no example called {example!r}; the examples are "
                   f"{', '.join(sorted(shipped))}.", err=True)
        sys.exit(EXIT_USAGE)
    target = Path(file or f"{example}.yaml")
    schema_path = data_dir("schema") / "cluster.schema.json"
    text = shipped[example].read_text(encoding="utf-8").replace(
        _MODELINE, f"# yaml-language-server: $schema={schema_path.as_uri()}", 1)
    try:
        with open(target, "x", encoding="utf-8") as out:     # "x": never overwrite
            out.write(text)
    except FileExistsError:
        click.echo(f"optnet: {shown_path(target)} exists; optnet init does not overwrite "
                   "files.", err=True)
        sys.exit(EXIT_USAGE)
    except OSError as exc:
        click.echo(f"optnet: cannot write {shown_path(target)}: {exc.strerror or exc}.",
                   err=True)
        sys.exit(EXIT_USAGE)
    click.echo(f"wrote {shown_path(target)}; build it with: optnet build {shown_path(target)} "
               "-o build/")


def _listing(rows: list[dict], fmt: str, title: str,
             columns: list[tuple[str, str | Callable[[dict], str]]]) -> None:
    """Print ``rows`` as JSON or as a table; a column is a row key or a function of the row."""
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=title)
    for i, (header, _) in enumerate(columns):
        table.add_column(header, no_wrap=i == 0)
    for row in rows:
        table.add_row(*(str(get(row) if callable(get) else (row[get] or ""))
                        for _, get in columns))
    Console(soft_wrap=False).print(table)


def main() -> None:
    """Entry point: run the CLI and map unexpected exceptions to exit status 3."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(EXIT_USAGE)
    except BrokenPipeError:
        sys.exit(EXIT_OK)
    except Exception as exc:  # a bug in optnet: say so without a traceback
        if os.environ.get("OPTNET_DEBUG"):
            raise
        click.echo(f"optnet: internal error: {type(exc).__name__}: {exc}\n"
                   "This is a bug in optnet; rerun with OPTNET_DEBUG=1 for a traceback.",
                   err=True)
        sys.exit(EXIT_INTERNAL)
