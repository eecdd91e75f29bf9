"""The files of an ``optnet build`` tree, computed in memory.

The tree is the one of DESIGN §6 (see ``docs/build.md``); :func:`optnet.pipeline.build_files`
runs the stages and assembles it, and :func:`optnet.emit.writer.write_tree` writes it. This
module emits its parts: per node, the folder's files around the lowered Verilog (lint
stubs, constraints, tables, vendor project, documentation and FuseSoC core:
:func:`node_folder_files`); per cluster, the cabling plan, the drawing, the host module
and header (:func:`host_files`) and the build's part of the report (:func:`cluster_files`);
and ``manifest.json`` (:func:`manifest`), which
lists every file with its SHA-256, the inputs' hashes and the optnet version. It holds no
time stamp, so equal inputs give equal bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from optnet import __version__
from optnet.devices.families import family, jtag_user1
from optnet.emit.bitstream import PlacedRole
from optnet.emit.constraints import constraint_files
from optnet.emit.drawing import topology_svg
from optnet.emit.env import render_template
from optnet.emit.escape import Raw
from optnet.emit.projects import IP_SCRIPT, project_files
from optnet.emit.roles import RoleTemplate, retarget_top
from optnet.emit.tables import render_c_header, render_hex
from optnet.emit.writer import manifest_text, sha256
from optnet.hw.jtag import ADDR_BITS, DATA_BITS, DR_BITS, JTAG_PRIMITIVES, VIRTUAL_JTAG_INDEX
from optnet.plan import NodePlan
from optnet.plan.ip import ecp5_device, ise_part
from optnet.plan.pins import led_map
from optnet.plan.registers import MAGIC, register_map
from optnet.routing.export import route_json
from optnet.routing.metrics import compute_metrics
from optnet.routing.route import Routed
from optnet.routing.tables import to_json
from optnet.spec.models import BoardDesc
from optnet.units import Dimension, Quantity, format_quantity

__all__ = ["BUILD_FORMAT", "CableRow", "ClusterFiles", "cabling_rows", "cluster_files",
           "fusesoc_core", "host_files", "manifest", "node_folder_files", "node_readme"]

#: Version of the build tree's layout and of ``manifest.json``.
BUILD_FORMAT = 1


def node_folder_files(plan: NodePlan, rep: NodePlan, rep_files: Mapping[str, str],
                      template: RoleTemplate, board: BoardDesc, cluster: str
                      ) -> dict[str, str]:
    """Every file of one node's folder, relative to it.

    Parameters
    ----------
    plan : NodePlan
        The node.
    rep : NodePlan
        The first node of ``plan``'s hardware role, the one lowered.
    rep_files : mapping of str to str
        The lowered files of ``rep`` (its Verilog, board top and stubs).
    template : RoleTemplate
        ``rep``'s Verilog as a template for the other nodes of the role.
    board : BoardDesc
    cluster : str
        The cluster's name.
    """
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
    files[f"{plan.node}.core"] = fusesoc_core(plan, board, sorted(files), cluster)
    files["README.md"] = node_readme(plan, board, names, cluster)
    return files


def node_readme(plan: NodePlan, board: BoardDesc, files: Sequence[str], cluster: str) -> str:
    """The ``README.md`` of a node folder holding ``files``: how to build it, its links,
    endpoint ports, LEDs and bring-up registers."""
    return render_template(
        "docs/node_readme.md.j2", plan=plan, board=board, files=files, cluster=cluster,
        endpoints=list(zip(plan.endpoint_names, plan.endpoints, strict=True)),
        leds=list(zip(led_map(plan, board), board.leds.pins if board.leds else (),
                      strict=True)),
        registers=register_map(plan), rate=_rate, clock=_clock, **_jtag_facts(board))


def _jtag_facts(board: BoardDesc) -> dict[str, object]:
    """What a node README says of the board's JTAG register access (:mod:`optnet.hw.jtag`)."""
    tap = family(board.family).jtag
    ir = jtag_user1(board.family, board.part)
    return {"jtag": tap, "jtag_instance": VIRTUAL_JTAG_INDEX,
            "jtag_primitive": JTAG_PRIMITIVES.get(tap, ""),
            "jtag_irlen": ir[0] if ir else 0, "jtag_user": _user_code(ir) if ir else ""}


def _user_code(ir: tuple[int, int]) -> str:
    # the instruction in hex, as many digits as the IR needs
    return f"0x{ir[1]:0{(ir[0] + 3) // 4}x}"


def fusesoc_core(plan: NodePlan, board: BoardDesc, files: Sequence[str], cluster: str) -> str:
    """The FuseSoC (CAPI2) core of one node folder.

    Targets: ``default`` (the network module and its tables), ``lint`` (the board top with
    the lint stubs, Verilator) and, where Edalize has a back end for the board
    (:func:`_fusesoc_tool`), ``synth`` (the board top with the constraints and, when the
    node folder has one, the IP script :data:`~optnet.emit.projects.IP_SCRIPT` as a
    ``tclSource`` file, which the back end sources into its project before synthesis).

    Parameters
    ----------
    plan : NodePlan
    board : BoardDesc
    files : sequence of str
        The node folder's other files, as POSIX paths relative to it.
    cluster : str
        The cluster's name.
    """
    files = sorted(files)
    return render_template(
        "fusesoc/node.core.j2", plan=plan, board=board, files=files, version=__version__,
        cluster=cluster, tool=_fusesoc_tool(plan, board),
        ip_script=IP_SCRIPT if IP_SCRIPT in files else None,
        constraints=[(f, _CONSTRAINT_TYPES[f.rsplit(".", 1)[1]])
                     for f in files if f.startswith("constraints/")])


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
    """The edalize back end for ``board`` (None where edalize has none)."""
    if board.vendor == "xilinx" and board.family == "virtex5":
        # As ise.tcl sets them; ise_part only returns what its pattern parsed.
        device, package, speed = ise_part(board.part)
        return FusesocTool("ise", (("family", "Virtex5"), ("device", device),
                                   ("package", package), ("speed", speed)))
    if board.vendor == "xilinx":
        return FusesocTool("vivado", (("part", board.part),))
    if board.vendor == "intel":
        return FusesocTool("quartus", (("family", Raw(f'"{family(board.family).quartus}"',
                                                      "yaml")),
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


@dataclass(frozen=True)
class ClusterFiles:
    """The cluster-wide files of a build, and what the report adds to them.

    Attributes
    ----------
    files : dict of str to str
        ``cabling.csv``, ``cabling.md`` and ``topology.svg``.
    build : dict
        The build's part of ``report.json`` (its routing summary, nodes and bitstreams).
    markdown : str
        The build's part of ``report.md``.
    """

    files: dict[str, str]
    build: dict
    markdown: str


def cluster_files(routed: Routed, plans: Sequence[NodePlan],
                  placed: Sequence[tuple[PlacedRole, list[str]]]) -> ClusterFiles:
    """The cabling plan and the drawing of ``routed``, and the build's part of the report
    (:func:`optnet.report.render.report_files` renders the report with it)."""
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
    files = {
        "cabling.csv": render_template("docs/cabling.csv.j2", rows=rows),
        "cabling.md": render_template("docs/cabling.md.j2", rows=rows,
                                      cluster=routed.cluster.name),
        "topology.svg": topology_svg(routed.cluster),
        **host_files(routed, plans),
    }
    return ClusterFiles(files, build, render_template(
        "docs/build_report.md.j2", r=routed, m=metrics, plans=plans, rows=rows,
        clock=_clock, placed=placed))


@dataclass(frozen=True)
class _JtagNode:
    """A node as the JTAG host scripts know it: its FPGA's TAP (``irlen`` bits, the bridge
    behind instruction ``user``), or on Intel the part's ``device`` name prefix."""

    name: str
    board: str
    part: str
    links: int
    irlen: int = 0
    user: str = ""
    device: str = ""


def host_files(routed: Routed, plans: Sequence[NodePlan]) -> dict[str, str]:
    """``host/optnet_host.py`` and ``host/optnet_host.h``: the cluster's node ids, endpoint
    numbers and bring-up register addresses (:func:`~optnet.plan.registers.register_map`,
    every node's), and in Python the register reads and writes over a node's UART; and the
    JTAG host scripts of the nodes whose bring-up kit has a JTAG bridge
    (:mod:`optnet.hw.jtag`): ``host/optnet_openocd.tcl`` for the Xilinx and Lattice ones,
    ``host/optnet_quartus.tcl`` for the Intel ones."""
    cluster = routed.cluster
    registers = {r.addr: r for p in plans for r in register_map(p)}
    bauds = {n.board.uart.baud for n in cluster.nodes if n.board.uart is not None}
    context = dict(
        cluster=cluster.name, nodes=[(n.name, n.id) for n in cluster.nodes],
        endpoints=plans[0].endpoint_names if plans else (),
        link_counts=[(p.node, len(p.ports)) for p in plans], magic=MAGIC,
        registers=[registers[a] for a in sorted(registers)],
        baud=min(bauds) if bauds else 115200,
        guard=f"OPTNET_HOST_{cluster.name.upper()}_H")
    files = {"host/optnet_host.py": render_template("host/optnet_host.py.j2", **context),
             "host/optnet_host.h": render_template("host/optnet_host.h.j2", **context)}

    openocd, quartus = [], []
    boards = {n.name: n.board for n in cluster.nodes}
    for p in plans:
        board = boards[p.node]
        tap = family(board.family).jtag if p.bringup else None
        ir = jtag_user1(board.family, board.part)
        node = (p.node, board.name, board.part, len(p.ports))
        if tap == "virtual_jtag":
            # Quartus names a device by its die: the part number's first seven characters
            # (1SM21BHU2F53E1VG: 1SM21BH).
            quartus.append(_JtagNode(*node, device=board.part[:7].upper()))
        elif tap is not None and ir is not None:
            openocd.append(_JtagNode(*node, irlen=ir[0], user=_user_code(ir)))
    jtag = dict(cluster=cluster.name, magic=MAGIC, data_bits=DATA_BITS, addr_bits=ADDR_BITS,
                dr_bits=DR_BITS, instance=VIRTUAL_JTAG_INDEX,
                registers=[(r.name, r.addr, _link_of(r.name)) for r in context["registers"]])
    if openocd:
        files["host/optnet_openocd.tcl"] = render_template(
            "host/optnet_openocd.tcl.j2", nodes=openocd, **jtag)
    if quartus:
        files["host/optnet_quartus.tcl"] = render_template(
            "host/optnet_quartus.tcl.j2", nodes=quartus, **jtag)
    return files


def _link_of(register: str) -> int:
    # link<k>.<name>: k; any other register: -1
    head = register.split(".", 1)[0]
    return int(head[4:]) if head.startswith("link") and head[4:].isdigit() else -1


def manifest(routed: Routed, files: Mapping[str, bytes], inputs: Mapping[str, str],
             boards: Mapping[str, BoardDesc]) -> str:
    """The text of ``manifest.json`` of a build tree whose other files are ``files``, built
    from the input files ``inputs`` (name to text) and ``boards``."""
    # Boards come from the library (or a boards/ folder next to the cluster file): hashed as
    # optnet read them, so a changed board file changes the manifest.
    return manifest_text(
        {"format": "optnet-build", "version": BUILD_FORMAT, "optnet": __version__,
         "cluster": routed.cluster.name,
         "inputs": {name: sha256(text.encode("utf-8"))
                    for name, text in sorted(inputs.items())},
         "boards": {name: sha256(board.model_dump_json().encode("utf-8"))
                    for name, board in sorted(boards.items())}}, files)
