"""``optnet build``: every file of a cluster's build tree, computed in memory.

The tree is the one of DESIGN §6 (see ``docs/build.md``). :func:`build_files` returns it as
a mapping of relative path to bytes; :func:`optnet.emit.writer.write_tree` writes it. The
stages after routing and planning are:

1. **lower**: one node per hardware role goes through Amaranth and Yosys (in ``jobs``
   worker processes); the Verilog of every other node of the role is derived from it
   (:mod:`optnet.emit.roles`);
2. **emit**: per node, the Verilog, its lint stubs, tables, documentation and FuseSoC
   core; per cluster, the cabling plan, the drawing, the report summary;
3. **manifest**: ``manifest.json`` lists every file with its SHA-256, the inputs' hashes
   and the optnet version. It holds no time stamp, so equal inputs give equal bytes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction

from optnet import __version__
from optnet.emit.bitstream import (
    BitstreamError,
    PlacedRole,
    bitstream_capable,
    pack,
    patch,
    place_and_route,
)
from optnet.emit.constraints import constraint_files
from optnet.emit.drawing import topology_svg
from optnet.emit.env import render_template
from optnet.emit.escape import Raw
from optnet.emit.projects import ecp5_device, project_files
from optnet.emit.roles import RoleTemplate, retarget_top
from optnet.emit.writer import MANIFEST, manifest_text, sha256
from optnet.plan import BLOCK_TABLE_FAMILIES, NodePlan
from optnet.report.render import report_files
from optnet.report.resources import NodeResources, node_resources
from optnet.routing.export import route_json
from optnet.routing.metrics import compute_metrics
from optnet.routing.route import Routed
from optnet.routing.tables import render_c_header, render_hex, to_json
from optnet.spec.models import BoardDesc
from optnet.units import Dimension, Quantity, format_quantity

__all__ = ["BUILD_FORMAT", "BitstreamError", "BitstreamOptions", "Progress", "build_files",
           "cabling_rows"]

#: Version of the build tree's layout and of ``manifest.json``.
BUILD_FORMAT = 1

#: ``progress(stage, done, total, item)``: ``item`` (a node name, or "") was finished.
Progress = Callable[[str, int, int, str], None]


def _silent(stage: str, done: int, total: int, item: str) -> None:
    pass


def build_files(routed: Routed, plans: Sequence[NodePlan], inputs: Mapping[str, str], *,
                jobs: int = 1, progress: Progress = _silent,
                bitstream: BitstreamOptions | None = None,
                resources: bool = False) -> dict[str, bytes]:
    """The build tree of ``routed`` for the nodes in ``plans`` (all of them or a subset).

    Parameters
    ----------
    routed : Routed
    plans : sequence of NodePlan
        The nodes to build, in cluster order.
    inputs : mapping of str to str
        Name and text of every input file (the cluster file and what it pulled in); their
        hashes go into the manifest.
    jobs : int
        Worker processes for lowering (and placing and routing).
    progress : Progress
    bitstream : BitstreamOptions, optional
        Also build the bitstreams of the nodes the open flow can build
        (:mod:`optnet.emit.bitstream`); their timing goes into the report.
    resources : bool
        Also synthesise the first node of each role with Yosys for the report's resources
        (:func:`optnet.report.resources.node_resources`, cached by content).

    Returns
    -------
    dict of str to bytes
        Relative path (``/``-separated) to contents, :data:`~optnet.emit.writer.MANIFEST`
        included.

    Raises
    ------
    ProjectError, PllError
        When a node's project or clocking cannot be generated.
    BitstreamError
        With ``bitstream``: when no node can be built by the open flow, or as
        :func:`_bitstreams`.
    ResourcesError
        With ``resources``: when Yosys cannot synthesise a node.
    """
    if bitstream is not None and not any(map(bitstream_capable, plans)):
        raise BitstreamError(
            f"No node of cluster '{routed.cluster.name}' (of those built) is on a board the "
            f"open flow builds (families: {', '.join(BLOCK_TABLE_FAMILIES)}), so --bitstream "
            f"has nothing to do; build each node's vendor project in its folder instead.")
    boards = {n.board.name: n.board for n in routed.cluster.nodes}
    lowered = _lower_roles(plans, boards, jobs, progress)
    templates = {role: RoleTemplate(rep_files[f"rtl/{rep.node}.v"], rep)
                 for role, (rep, rep_files) in lowered.items()}
    files: dict[str, str] = {}
    for i, p in enumerate(plans):
        rep, rep_files = lowered[p.role()]
        for rel, text in _node_files(p, rep, rep_files, templates[p.role()], boards[p.board],
                                     routed.cluster.name).items():
            files[f"nodes/{p.node}/{rel}"] = text
        progress("emit", i + 1, len(plans), p.node)
    data: dict[str, bytes] = {}
    placed: list[tuple[PlacedRole, list[str]]] = []
    if bitstream is not None:
        placed = _bitstreams(plans, files, data, bitstream, jobs, progress)
    usage = []
    if resources:
        for i, (rep, rep_files) in enumerate(lowered.values()):
            usage.append(node_resources(rep, boards[rep.board], rep_files))
            progress("synth", i + 1, len(lowered), rep.node)
    files.update(_cluster_files(routed, plans, placed, usage))
    data.update((rel, text.encode("utf-8")) for rel, text in files.items())
    data[MANIFEST] = _manifest(routed, data, inputs, boards).encode("utf-8")
    return data


@dataclass(frozen=True)
class BitstreamOptions:
    """What ``optnet build --bitstream`` asks of the open flow.

    Attributes
    ----------
    seed : int
        nextpnr's placement seed.
    timing_allow_fail : bool
        Write bitstreams even when a clock misses its constraint (the report says so).
    """

    seed: int = 1
    timing_allow_fail: bool = False


def _place(job: tuple[NodePlan, dict[str, str], int]) -> PlacedRole:
    # In a worker process: one role through synthesis and place and route.
    rep, files, seed = job
    return place_and_route(rep, files, seed=seed)


def _bitstreams(plans: Sequence[NodePlan], files: Mapping[str, str],
                data: dict[str, bytes], options: BitstreamOptions, jobs: int,
                progress: Progress) -> list[tuple[PlacedRole, list[str]]]:
    """Place and route each role of the open-flow nodes of ``plans`` once, and add every
    such node's bitstream and nextpnr report to ``data``; the placed roles with their
    nodes, in role order.

    Raises
    ------
    BitstreamError
        When a tool fails, a patch does not check, or (unless
        ``options.timing_allow_fail``) a clock misses its constraint.
    """
    roles: dict[tuple, list[NodePlan]] = {}
    for p in plans:
        if bitstream_capable(p):
            roles.setdefault(p.role(), []).append(p)
    work = []
    for nodes in roles.values():
        prefix = f"nodes/{nodes[0].node}/"
        work.append((nodes[0], {rel.removeprefix(prefix): text for rel, text in files.items()
                                if rel.startswith(prefix)}, options.seed))
    parallel = jobs > 1 and len(work) > 1
    placed = []
    with (ProcessPoolExecutor(max_workers=min(jobs, len(work))) if parallel
          else contextlib.nullcontext()) as pool:
        for i, role in enumerate(pool.map(_place, work) if parallel else map(_place, work)):
            placed.append(role)
            progress("pnr", i + 1, len(work), role.node)
    missed = [f"clock '{c.clock}' of node '{role.node}' (and its role) reaches "
              f"{c.achieved_mhz:.1f} MHz of the {c.constraint_mhz:g} MHz it needs"
              for role in placed for c in role.clocks if not c.met]
    if missed and not options.timing_allow_fail:
        raise BitstreamError(
            "Timing is not met: " + "; ".join(missed) + ". Lower the clock or the line "
            "rate, try another --seed, or pass --timing-allow-fail to write the bitstreams "
            "anyway.")
    done, total = 0, sum(len(nodes) for nodes in roles.values())
    for role, nodes in zip(placed, roles.values(), strict=True):
        for p in nodes:
            config = patch(role, nodes[0], p)
            data[f"nodes/{p.node}/{p.node}.bit"] = pack(config, p.node)
            data[f"nodes/{p.node}/reports/nextpnr.json"] = role.report.encode("utf-8")
            done += 1
            progress("bitstream", done, total, p.node)
    return [(role, [p.node for p in nodes]) for role, nodes in zip(placed, roles.values(),
                                                                   strict=True)]


def _lower(job: tuple[NodePlan, BoardDesc], executor: Executor | None = None
           ) -> dict[str, str]:
    # The Verilog and stubs of one node and its board top (see node_files for executor).
    from optnet.emit.board import board_top_files
    from optnet.emit.hdl import node_files
    plan, board = job
    return node_files(plan, executor) | board_top_files(plan, board)


def _lower_roles(plans: Sequence[NodePlan], boards: Mapping[str, BoardDesc], jobs: int,
                 progress: Progress) -> dict[tuple, tuple[NodePlan, dict[str, str]]]:
    """The first node of each role and its files, by role."""
    reps: dict[tuple, NodePlan] = {}
    for p in plans:
        reps.setdefault(p.role(), p)
    work = [(rep, boards[rep.board]) for rep in reps.values()]
    done: dict[tuple, tuple[NodePlan, dict[str, str]]] = {}
    # Several roles are lowered side by side. A single role (every node of a torus or a
    # fully connected cluster) has its router lowered in a worker while this process
    # lowers the rest.
    with (ProcessPoolExecutor(max_workers=min(jobs, max(len(work), 2))) if jobs > 1
          else contextlib.nullcontext()) as pool:
        if pool is None:
            lowered = map(_lower, work)
        elif len(work) > 1:
            lowered = pool.map(_lower, work)
        else:
            lowered = [_lower(work[0], pool)]
        for i, ((rep, _), files) in enumerate(zip(work, lowered, strict=True)):
            done[rep.role()] = (rep, files)
            progress("lower", i + 1, len(work), rep.node)
    return done


def _node_files(plan: NodePlan, rep: NodePlan, rep_files: Mapping[str, str],
                template: RoleTemplate, board: BoardDesc, cluster: str) -> dict[str, str]:
    """Every file of one node's folder, relative to it."""
    files = {rel: text for rel, text in rep_files.items() if rel.startswith("stubs/")}
    files[f"rtl/{plan.node}.v"] = (rep_files[f"rtl/{rep.node}.v"] if plan == rep
                                   else template.render(plan))
    files[f"rtl/{plan.node}_top.v"] = retarget_top(rep_files[f"rtl/{rep.node}_top.v"], rep,
                                                   plan)
    files.update(constraint_files(plan, board))
    table = plan.table
    unicast, multicast = render_hex(table)
    files["tables/routes.json"] = json.dumps(to_json(table), indent=2) + "\n"
    files["tables/routes.hex"] = unicast
    files["tables/mcast.hex"] = multicast
    files["tables/routes.h"] = render_c_header(table)
    files.update(project_files(plan, board, sorted(files)))
    names = [*sorted(files), f"{plan.node}.core", "README.md"]
    files[f"{plan.node}.core"] = render_template(
        "fusesoc/node.core.j2", plan=plan, board=board, files=sorted(files),
        version=__version__, cluster=cluster, tool=_fusesoc_tool(plan, board),
        constraints=[(f, _CONSTRAINT_TYPES[f.rsplit(".", 1)[1]])
                     for f in sorted(files) if f.startswith("constraints/")])
    files["README.md"] = render_template(
        "docs/node_readme.md.j2", plan=plan, board=board, files=names, cluster=cluster,
        endpoints=list(zip(plan.endpoint_names, plan.endpoints, strict=True)),
        rate=_rate, clock=_clock)
    return files


#: FuseSoC (CAPI2) file types of constraint files, by extension.
_CONSTRAINT_TYPES = {"xdc": "xdc", "ucf": "UCF", "qsf": "tclSource", "sdc": "SDC",
                     "lpf": "LPF"}


@dataclass(frozen=True)
class FusesocTool:
    """The edalize tool of a node's ``synth`` target and its options."""

    name: str
    options: tuple[tuple[str, str], ...]
    """``(key, value)``; a value is escaped as one YAML scalar unless it is
    :class:`~optnet.emit.escape.Raw` YAML."""


def _fusesoc_tool(plan: NodePlan, board: BoardDesc) -> FusesocTool | None:
    """The edalize back end for ``board`` (None where edalize has none: Virtex-5 needs
    ISE, which this core leaves to ``ise.tcl``)."""
    if board.vendor == "xilinx" and board.family != "virtex5":
        return FusesocTool("vivado", (("part", board.part),))
    if board.vendor == "intel":
        return FusesocTool("quartus", (("family", Raw('"Stratix 10"', "yaml")),
                                       ("device", board.part)))
    if board.vendor == "lattice" and board.family == "ecp5":
        # ecp5_device only returns what its pattern parsed, so the flow sequence is safe.
        dev = ecp5_device(board.part)
        return FusesocTool("trellis", (
            ("nextpnr_options", Raw(f"[--{dev.device}, --package, {dev.package}, "
                                    f"--speed, '{dev.speed}']", "yaml")),))
    return None


def _rate(bits_per_second: float) -> str:
    return format_quantity(Quantity(Fraction(bits_per_second).limit_denominator(1000),
                                    Dimension.RATE))


def _clock(hertz: float) -> str:
    return format_quantity(Quantity(Fraction(hertz).limit_denominator(1000),
                                    Dimension.FREQUENCY))


@dataclass(frozen=True)
class CableRow:
    """One cable of the cabling plan (one link)."""

    link: int
    a: str
    a_lanes: str
    a_connector: str
    b: str
    b_lanes: str
    b_connector: str
    lanes: int
    length: str
    phy: str
    line_rate: str


def cabling_rows(routed: Routed) -> list[CableRow]:
    """The cabling plan: one row per link, in link order."""
    cluster = routed.cluster
    rows = []
    for link in cluster.links:
        ends = []
        for end in (link.a, link.b):
            port = cluster.node(end.node).board.ports[end.port]
            ends.append((str(end), _lanes(end.lanes), port.connector))
        rows.append(CableRow(
            link.index, *ends[0], *ends[1], link.lanes,
            format_quantity(link.length) if link.length is not None else "",
            link.phy, format_quantity(link.line_rate)))
    return rows


def _lanes(lanes: tuple[int, ...]) -> str:
    if len(lanes) > 1 and lanes == tuple(range(lanes[0], lanes[-1] + 1)):
        return f"{lanes[0]}-{lanes[-1]}"
    return ",".join(map(str, lanes))


def _cluster_files(routed: Routed, plans: Sequence[NodePlan],
                   placed: Sequence[tuple[PlacedRole, list[str]]],
                   usage: Sequence[NodeResources]) -> dict[str, str]:
    rows = cabling_rows(routed)
    metrics = compute_metrics(routed)
    summary = route_json(routed, metrics, None, False)
    build = {"routing": summary,
             "nodes": [{"node": p.node, "id": p.node_id, "board": p.board, "part": p.part,
                        "clock_hz": p.clock_hz, "ports": len(p.ports),
                        "endpoints": list(p.endpoint_names)} for p in plans]}
    if placed:
        build["bitstreams"] = [
            {"placed_from": role.node, "nodes": nodes,
             "clocks": [{"clock": c.clock, "constraint_mhz": c.constraint_mhz,
                         "achieved_mhz": c.achieved_mhz, "met": c.met} for c in role.clocks],
             "utilisation": {cell: {"used": used, "available": available}
                             for cell, (used, available) in role.utilisation.items()}}
            for role, nodes in placed]
    return {
        "cabling.csv": render_template("docs/cabling.csv.j2", rows=rows),
        "cabling.md": render_template("docs/cabling.md.j2", rows=rows,
                                      cluster=routed.cluster.name),
        "topology.svg": topology_svg(routed.cluster),
        # the report of the cluster (optnet report), with the build's nodes and bitstreams
        **report_files([routed], build, render_template(
            "docs/build_report.md.j2", r=routed, m=metrics, plans=plans, rows=rows,
            clock=_clock, placed=placed), [usage]),
    }


def _manifest(routed: Routed, files: Mapping[str, bytes], inputs: Mapping[str, str],
              boards: Mapping[str, BoardDesc]) -> str:
    # Boards come from the library (or a boards/ folder next to the cluster file): hashed as
    # optnet read them, so a changed board file changes the manifest.
    return manifest_text(
        {"format": "optnet-build", "version": BUILD_FORMAT, "optnet": __version__,
         "cluster": routed.cluster.name,
         "inputs": {name: sha256(text.encode("utf-8"))
                    for name, text in sorted(inputs.items())},
         "boards": {name: sha256(board.model_dump_json().encode("utf-8"))
                    for name, board in sorted(boards.items())}}, files)
