"""The stages after routing, run in order: what ``optnet build`` does.

DESIGN §1: data flows one way, each stage taking an immutable object and returning a new
one; this module runs the stages, and the command line (:mod:`optnet.cli`) only parses
arguments and maps exceptions to exit codes. :func:`build_files` takes a routed cluster and
its node plans through the rest:

1. **lower**: one node per hardware role goes through Amaranth and Yosys (in ``jobs``
   worker processes); the Verilog of every other node of the role is derived from it
   (:mod:`optnet.emit.roles`);
2. **emit**: per node, the Verilog, its lint stubs, tables, documentation and FuseSoC
   core; per cluster, the cabling plan and the drawing (:mod:`optnet.emit.build`);
3. with ``--bitstream``, **place and route** each role of the open-flow nodes once and
   patch every node's tables in (:mod:`optnet.emit.bitstream`); with ``--resources``,
   **synthesise** one node per role (:mod:`optnet.report.resources`);
4. **report**: the cluster's report with the build's nodes, bitstreams and resources
   (:mod:`optnet.report.render`);
5. **manifest**: ``manifest.json`` lists every file with its SHA-256, the inputs' hashes
   and the optnet version (:func:`optnet.emit.build.manifest`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass

from optnet.devices.families import block_table_families
from optnet.emit.bitstream import (
    BitstreamError,
    PlacedRole,
    bitstream_capable,
    pack,
    patch,
    place_and_route,
)
from optnet.emit.build import cluster_files, manifest, node_folder_files
from optnet.emit.roles import RoleTemplate
from optnet.emit.writer import MANIFEST
from optnet.plan import NodePlan
from optnet.report.render import report_files
from optnet.report.resources import node_resources
from optnet.routing.route import Routed
from optnet.spec.models import BoardDesc

__all__ = ["BitstreamOptions", "Progress", "build_files"]

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
    optnet.plan.ip.ProjectError, optnet.plan.clocks.PllError
        When a node's project or clocking cannot be generated.
    BitstreamError
        With ``bitstream``: when no node can be built by the open flow, or as
        :func:`_bitstreams`.
    ResourcesError
        With ``resources``: when Yosys cannot synthesise a node.
    """
    if bitstream is not None and not any(map(bitstream_capable, plans)):
        if any(p.direct is not None for p in plans):
            raise BitstreamError(
                f"Cluster '{routed.cluster.name}' is built with the direct switch, whose "
                f"nodes the open flow cannot build yet (their tables are in logic, which "
                f"ecpbram cannot patch per node); build each node's vendor project in its "
                f"folder instead.")
        raise BitstreamError(
            f"No node of cluster '{routed.cluster.name}' (of those built) is on a board the "
            f"open flow builds (families: {', '.join(block_table_families())}), so --bitstream "
            f"has nothing to do; build each node's vendor project in its folder instead.")
    boards = {n.board.name: n.board for n in routed.cluster.nodes}
    lowered = _lower_roles(plans, boards, jobs, progress)
    templates = {role: RoleTemplate(rep_files[f"rtl/{rep.node}.v"], rep)
                 for role, (rep, rep_files) in lowered.items()}
    files: dict[str, str] = {}
    for i, p in enumerate(plans):
        rep, rep_files = lowered[p.role()]
        for rel, text in node_folder_files(p, rep, rep_files, templates[p.role()],
                                           boards[p.board], routed.cluster.name).items():
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
    cluster = cluster_files(routed, plans, placed)
    files.update(cluster.files)
    # the report of the cluster (optnet report), with the build's nodes and bitstreams
    files.update(report_files([routed], cluster.build, cluster.markdown, [usage]))
    data.update((rel, text.encode("utf-8")) for rel, text in files.items())
    data[MANIFEST] = manifest(routed, data, inputs, boards).encode("utf-8")
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
