"""Black-box stubs of the FPGA I/O primitives the LVDS PHY instantiates.

Yosys knows these cells in ``synth_ecp5``/``synth_xilinx``; Verilator does not, so lint
runs with these stubs. Port names come from the vendors' libraries: Lattice FPGA
Libraries Reference Guide (ODDRX1F, IDDRX1F, OLVDS, ILVDS) and Xilinx UG953 / UG190
(ODDR, IDDR, OBUFDS, IBUFDS, BUFIO, BUFR, BUFG).
"""

from __future__ import annotations

from optnet.emit.env import render_template

__all__ = ["PRIMITIVES", "primitive_stubs"]

#: name -> (inputs, outputs, parameters with their defaults)
PRIMITIVES: dict[str, tuple[tuple[str, ...], tuple[str, ...], dict[str, str]]] = {
    "ODDRX1F": (("D0", "D1", "SCLK", "RST"), ("Q",), {}),
    "IDDRX1F": (("D", "SCLK", "RST"), ("Q0", "Q1"), {}),
    "OLVDS": (("A",), ("Z", "ZN"), {}),
    "ILVDS": (("A", "AN"), ("Z",), {}),
    "ODDR": (("C", "CE", "D1", "D2", "R", "S"), ("Q",),
             {"DDR_CLK_EDGE": '"OPPOSITE_EDGE"', "INIT": "1'b0", "SRTYPE": '"SYNC"'}),
    "IDDR": (("C", "CE", "D", "R", "S"), ("Q1", "Q2"),
             {"DDR_CLK_EDGE": '"OPPOSITE_EDGE"', "INIT_Q1": "1'b0", "INIT_Q2": "1'b0",
              "SRTYPE": '"SYNC"'}),
    "OBUFDS": (("I",), ("O", "OB"), {}),
    "IBUFDS": (("I", "IB"), ("O",), {"DIFF_TERM": '"FALSE"'}),
    "BUFIO": (("I",), ("O",), {}),
    "BUFR": (("I", "CE", "CLR"), ("O",), {"BUFR_DIVIDE": '"BYPASS"', "SIM_DEVICE": '"7SERIES"'}),
    "BUFG": (("I",), ("O",), {}),
}


def primitive_stubs(names: set[str]) -> str:
    """Verilog stubs of the primitives ``names`` (unknown names are left out)."""
    cells = [(n, *PRIMITIVES[n]) for n in sorted(names) if n in PRIMITIVES]
    return render_template("hw/primitive_stubs.v.j2", cells=cells)
