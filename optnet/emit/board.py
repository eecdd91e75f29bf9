"""Verilog of a node's board top, with black-box stubs of what it instantiates."""

from __future__ import annotations

import re

from optnet.emit.env import render_template
from optnet.emit.stubs import PRIMITIVES, primitive_stubs
from optnet.hw.board import BoardTop
from optnet.hw.cdc import synchronizer_platform
from optnet.hw.verilog import to_verilog
from optnet.plan import NodePlan
from optnet.plan.clocks import IOPLL_MODULE
from optnet.spec.models import BoardDesc

__all__ = ["board_top_files", "top_module"]


def top_module(plan: NodePlan) -> str:
    """Module name of ``plan``'s board top: ``<node>_top``."""
    return f"{plan.node}_top"


def board_top_files(plan: NodePlan, board: BoardDesc) -> dict[str, str]:
    """Files of ``plan``'s board top on ``board``, relative to the node's folder.

    ``rtl/<node>_top.v`` is the board top (module ``<node>_top``; its ports are FPGA pins,
    see :func:`optnet.plan.pins.top_ports`), which instantiates the network module
    ``<node>`` of ``rtl/<node>.v`` (:func:`optnet.emit.hdl.node_files`). For lint only:
    ``stubs/board_primitives.v`` holds stubs of the FPGA primitives the top instantiates
    (guarded, so they may repeat ``stubs/primitives.v``), and on Intel boards
    ``stubs/optnet_iopll.v`` and ``stubs/<ip>_atx_pll.v`` stand in for the PLL IP the
    Quartus script generates. The top's synchronisers (PLL lock, resets) carry the vendor's
    synchroniser attribute (:func:`optnet.hw.cdc.synchronizer_platform`).

    Raises
    ------
    optnet.plan.clocks.PllError
        When the board's PLL cannot make the clocks the node needs.
    """
    top = BoardTop(plan, board)
    verilog = to_verilog(top, top_module(plan), platform=synchronizer_platform(board.vendor))
    files = {f"rtl/{top_module(plan)}.v": verilog}
    used = {name for name in PRIMITIVES if re.search(rf"^\s*{name}\b", verilog, re.M)}
    if used:
        files["stubs/board_primitives.v"] = primitive_stubs(used)
    cp = top.clock_plan
    if cp.iopll is not None:
        ports = [("input", "refclk"), ("input", "rst"),
                 *(("output", name) for name, _ in cp.iopll.outputs), ("output", "locked")]
        # The tool line still names clock_plan's former module (now optnet.plan.clocks):
        # it is in every generated stub, which stays byte-identical until regenerated.
        files[f"stubs/{IOPLL_MODULE}.v"] = render_template(
            "hw/clock_ip_stub.v.j2", module=IOPLL_MODULE, title="the Intel IOPLL",
            tool="Quartus Prime Pro, altera_iopll, settings from optnet.hw.board.clock_plan",
            source="Intel Stratix 10 Clocking and PLL User Guide (683195), IOPLL IP core "
                   "ports refclk, rst, outclk_<n>, locked", ports=ports)
    for tx in cp.tx_plls:
        files[f"stubs/{tx.module}.v"] = render_template(
            "hw/clock_ip_stub.v.j2", module=tx.module, title="the Intel ATX PLL",
            tool="Quartus Prime Pro, altera_xcvr_atx_pll_s10_htile",
            source="Intel L- and H-Tile Transceiver PHY User Guide (683621), ATX PLL IP "
                   "ports pll_refclk0, tx_serial_clk (tx_serial_clk_gxt for the GXT output "
                   "buffer), pll_locked, pll_cal_busy",
            ports=[("input", "pll_refclk0"), ("output", tx.output_port),
                   ("output", "pll_locked"), ("output", "pll_cal_busy")])
    return files
