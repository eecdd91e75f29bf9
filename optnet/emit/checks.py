"""What the emitters would refuse, found without lowering any RTL (lint's E31x/E32x).

``optnet build`` fails late when a board's PLL cannot make a node's clocks or a vendor
project cannot be generated (an unknown part, transceiver sites a single IP cannot span).
:func:`hardware_findings` renders the constraints and project of one node per hardware role
(the rest of a role differ only in names and table contents) and turns each refusal into a
:class:`~optnet.diagnostics.Finding`, so that ``optnet lint`` reports it with the others.
"""

from __future__ import annotations

from collections.abc import Sequence

from optnet.cluster import Cluster
from optnet.diagnostics import Finding
from optnet.emit.constraints import constraint_files
from optnet.emit.env import EscapeError
from optnet.emit.projects import project_files
from optnet.plan import NodePlan
from optnet.plan.clocks import PllError
from optnet.plan.ip import ProjectError

__all__ = ["hardware_findings"]


def hardware_findings(cluster: Cluster, plans: Sequence[NodePlan]) -> list[Finding]:
    """The E310 (clock) and E320 (project) findings of building ``plans``.

    Parameters
    ----------
    cluster : Cluster
        The cluster the plans were made from (boards and the nodes' source paths).
    plans : sequence of NodePlan

    Returns
    -------
    list of Finding
        One per hardware role that cannot be built, at the node the role was first met on
        (E320) or at ``network.clock`` (E310), in plan order.
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
    return findings
