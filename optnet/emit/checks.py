"""What the emitters would refuse, found without lowering any RTL (lint's E31x/E32x).

``optnet build`` fails late when a board's PLL cannot make a node's clocks or a vendor
project cannot be generated (an unknown part, transceiver sites a single IP cannot span).
:func:`hardware_findings` renders the constraints and project of one node per hardware role
(the rest of a role differ only in names and table contents) and turns each refusal into a
:class:`~optnet.diagnostics.Finding`, so that ``optnet lint`` reports it with the others.
It also warns (W302) where the network clock is above what the router was measured to
reach on a node's family (:attr:`~optnet.devices.families.Family.router_fmax_mhz`): the
build goes through, but the vendor tool will likely not close timing.
"""

from __future__ import annotations

from collections.abc import Sequence

from optnet.cluster import Cluster
from optnet.devices.families import family
from optnet.diagnostics import Finding
from optnet.emit.constraints import constraint_files
from optnet.emit.env import EscapeError
from optnet.emit.projects import project_files
from optnet.plan import NodePlan
from optnet.plan.clocks import PllError
from optnet.plan.ip import ProjectError

__all__ = ["hardware_findings", "router_clock_findings"]


def hardware_findings(cluster: Cluster, plans: Sequence[NodePlan]) -> list[Finding]:
    """The E310 (clock), E320 (project) and W302 (router clock) findings of building
    ``plans``.

    Parameters
    ----------
    cluster : Cluster
        The cluster the plans were made from (boards and the nodes' source paths).
    plans : sequence of NodePlan

    Returns
    -------
    list of Finding
        One per hardware role that cannot be built, at the node the role was first met on
        (E320) or at ``network.clock`` (E310), in plan order; then at ``network.clock``
        one W302 per family whose measured router clock is below the network clock.
    """
    nodes = {n.name: n for n in cluster.nodes}
    findings: list[Finding] = []
    seen: set[tuple] = set()
    for p in plans:
        role = p.role()
        if role in seen:
            continue
        seen.add(role)
        node = nodes[p.node]
        try:
            files = constraint_files(p, node.board)
            project_files(p, node.board, sorted([*files, f"rtl/{p.node}.v",
                                                 f"rtl/{p.node}_top.v"]))
        except PllError as exc:
            findings.append(Finding(
                "E310", f"Node '{p.node}' (board '{p.board}') cannot be clocked: {exc}",
                ("network", "clock"),
                hint="Choose a network clock (or line rate) the board's PLL can make."))
        except (ProjectError, EscapeError) as exc:
            # EscapeError: a value the schema let through that a tool file cannot hold.
            findings.append(Finding(
                "E320", f"The project of node '{p.node}' (board '{p.board}') cannot be "
                f"generated: {' '.join(map(str, exc.args))}", node.origin))
    return findings + router_clock_findings(plans)


def router_clock_findings(plans: Sequence[NodePlan]) -> list[Finding]:
    """W302: the network clock is above the router's measured Fmax on a node's family.

    Only nodes with a router count (a direct node's switch was not measured), and only
    families with a figure (:attr:`~optnet.devices.families.Family.router_fmax_mhz`); one
    finding per family, naming the first such node in plan order. The figure is the
    benchmark router's (5 ports, 64-bit flits, 2 VCs), not this cluster's: a router with
    more ports or VCs is slower, one with fewer faster, so the warning is a guide, not a
    timing analysis.
    """
    findings: list[Finding] = []
    seen: set[str] = set()
    for p in plans:
        if p.router is None:
            continue
        fam = family(p.family)
        if fam.name in seen or fam.router_fmax_mhz is None:
            continue
        seen.add(fam.name)
        mhz = p.clock_hz / 1e6
        if mhz > fam.router_fmax_mhz:
            findings.append(Finding(
                "W302", f"The network clock, {mhz:g} MHz, is above the {fam.router_fmax_mhz:g} "
                f"MHz the router reaches on {p.family} (node '{p.node}', board '{p.board}'; "
                f"bench/router.py's 5-port, 64-bit, 2-VC router): the node will likely not "
                f"meet timing.", ("network", "clock"),
                hint=f"Lower network.clock to {fam.router_fmax_mhz:g} MHz or less, or check "
                f"the vendor tool's timing report for this router."))
    return findings
