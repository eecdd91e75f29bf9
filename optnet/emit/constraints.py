"""Pin and clock constraint files of a node's board top.

One function, :func:`constraint_files`, renders the vendor's files from the board top's
port and clock plan (:func:`optnet.plan.pins.board_pins`,
:func:`optnet.plan.clocks.clock_plan`, :func:`optnet.plan.pins.clock_constraints`) and its
clock-domain crossings (:func:`optnet.emit.cdc.clock_crossings`: constrained per crossed
clock pair, never by cutting whole clock groups) through the templates
``<vendor>/constraints.*``:

* Xilinx 7 series and UltraScale+: ``constraints/<node>.xdc`` (Vivado);
* Xilinx Virtex-5: ``constraints/<node>.ucf`` (ISE; Vivado does not support Virtex-5);
* Intel: ``constraints/<node>.qsf`` (pins, I/O standards) and ``constraints/<node>.sdc``
  (clocks);
* Lattice ECP5: ``constraints/<node>.lpf`` (as nextpnr-ecp5 reads it).

Every pin and site comes from the board file. A board top port bit whose pin the board file
does not give gets a comment saying so in place of a location, so the file still accounts
for every port of ``<node>_top``.
"""

from __future__ import annotations

from optnet.emit.cdc import clock_crossings
from optnet.emit.env import render_template
from optnet.hw.cdc import FIRST_STAGE
from optnet.plan import NodePlan
from optnet.plan.clocks import clock_plan
from optnet.plan.pins import board_pins, clock_constraints, constraint_format, top_ports
from optnet.spec.models import BoardDesc

__all__ = ["constraint_files"]

_TEMPLATES = {
    "xdc": ("xilinx/constraints.xdc.j2",),
    "ucf": ("xilinx/constraints.ucf.j2",),
    "qsf": ("intel/constraints.qsf.j2", "intel/constraints.sdc.j2"),
    "lpf": ("lattice/constraints.lpf.j2",),
}


def constraint_files(plan: NodePlan, board: BoardDesc) -> dict[str, str]:
    """The constraint files of ``plan``'s board top on ``board``, relative to the node's
    folder (``constraints/<node>.<ext>``; see the module docstring for which).

    Raises
    ------
    optnet.plan.clocks.PllError
        When the board's PLL cannot make the node's clocks.
    """
    cp = clock_plan(plan, board)
    pins = board_pins(plan, board, cp)
    clocks, groups = clock_constraints(plan, board, cp)
    context = dict(
        node=plan.node, top=f"{plan.node}_top", board=board, cp=cp, pins=pins,
        ports=top_ports(plan, board, cp), clocks=clocks, groups=groups,
        crossings=clock_crossings(plan, board, cp), first_stage=FIRST_STAGE,
        missing=sum(1 for a in pins if a.pin is None))
    files = {}
    for template in _TEMPLATES[constraint_format(board)]:
        ext = template.rsplit(".", 2)[-2]
        files[f"constraints/{plan.node}.{ext}"] = render_template(template, **context)
    return files
