"""Black-box Verilog stubs of what the generated RTL instantiates but does not define: the
vendor link IP cores and the FPGA primitives of the LVDS PHY and the board top.

Yosys knows the primitives in ``synth_ecp5``/``synth_xilinx``; Verilator knows neither them
nor the IP, so lint (and open-source synthesis of designs with vendor IP) runs with these
stubs. The IP stubs are rendered from the same port tables the adapters instantiate
(:func:`optnet.devices.linkip.ip_ports`). The primitives' port names come from the vendors'
libraries: Lattice FPGA Libraries Reference Guide (ODDRX1F, IDDRX1F, OLVDS, ILVDS, EHXPLLL)
and Xilinx UG953 / UG974 / UG621 / UG190 (ODDR, IDDR, OBUFDS, IBUFDS, IBUFGDS, BUFIO, BUFR,
BUFG, MMCME2_BASE, MMCME4_BASE, PLL_BASE); parameter defaults as in Yosys'
``cells_bb_ecp5.v`` and ``cells_xtra.v``. Each primitive stub is wrapped in an ``ifndef``
guard, so the network's stub file and the board top's may both define a primitive without a
duplicate-module error.
"""

from __future__ import annotations

from optnet.devices.linkip import V5_TILE_SOURCE, ip_family, ip_modules, ip_spec
from optnet.emit.env import render_template
from optnet.plan import PortPlan
from optnet.plan.ip import ip_name

__all__ = ["PRIMITIVES", "primitive_stubs", "stub_verilog"]

# The base MMCMs of 7 series (UG953) and UltraScale (UG974) share ports and the parameters
# optnet sets.
_MMCM_PORTS = (
    ("CLKIN1", "CLKFBIN", "RST", "PWRDWN"),
    ("CLKFBOUT", "CLKFBOUTB", "CLKOUT0", "CLKOUT0B", "CLKOUT1", "CLKOUT1B", "CLKOUT2",
     "CLKOUT2B", "CLKOUT3", "CLKOUT3B", "CLKOUT4", "CLKOUT5", "CLKOUT6", "LOCKED"),
)
_MMCM_PARAMS = {
    "BANDWIDTH": '"OPTIMIZED"', "CLKFBOUT_MULT_F": "5.0", "CLKIN1_PERIOD": "0.0",
    "CLKOUT0_DIVIDE_F": "1.0", **{f"CLKOUT{i}_DIVIDE": "1" for i in range(1, 7)},
    "DIVCLK_DIVIDE": "1", "REF_JITTER1": "0.01", "STARTUP_WAIT": '"FALSE"',
}

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
    "IBUFGDS": (("I", "IB"), ("O",), {"DIFF_TERM": '"FALSE"'}),
    "MMCME2_BASE": (*_MMCM_PORTS, _MMCM_PARAMS),
    "MMCME4_BASE": (*_MMCM_PORTS, _MMCM_PARAMS),
    "PLL_BASE": (
        ("CLKIN", "CLKFBIN", "RST"),
        ("CLKFBOUT", *(f"CLKOUT{i}" for i in range(6)), "LOCKED"),
        {"BANDWIDTH": '"OPTIMIZED"', "CLKFBOUT_MULT": "1", "CLKIN_PERIOD": "0.0",
         **{f"CLKOUT{i}_DIVIDE": "1" for i in range(6)},
         "CLK_FEEDBACK": '"CLKFBOUT"', "COMPENSATION": '"SYSTEM_SYNCHRONOUS"',
         "DIVCLK_DIVIDE": "1", "REF_JITTER": "0.1"}),
    # JTAG user registers (optnet.hw.jtag): UG953/UG974 BSCANE2, the Virtex-5 Libraries
    # Guide's BSCAN_VIRTEX5, Lattice's JTAGG, Intel 683705's sld_virtual_jtag.
    "BSCANE2": (("TDO",), ("CAPTURE", "DRCK", "RESET", "RUNTEST", "SEL", "SHIFT", "TCK", "TDI",
                           "TMS", "UPDATE"), {"JTAG_CHAIN": "1"}),
    "BSCAN_VIRTEX5": (("TDO",), ("CAPTURE", "DRCK", "RESET", "SEL", "SHIFT", "TDI", "UPDATE"),
                      {"JTAG_CHAIN": "1"}),
    "JTAGG": (("JTDO1", "JTDO2"), ("JTCK", "JTDI", "JSHIFT", "JUPDATE", "JRSTN", "JCE1", "JCE2",
                                   "JRTI1", "JRTI2"), {}),
    "sld_virtual_jtag": (("tdo", "ir_out"), ("tck", "tdi", "ir_in", "virtual_state_cdr",
                                             "virtual_state_sdr", "virtual_state_udr"),
                         {"sld_auto_instance_index": '"NO"', "sld_instance_index": "0",
                          "sld_ir_width": "1"}),
    "EHXPLLL": (
        ("CLKI", "CLKFB", "PHASESEL1", "PHASESEL0", "PHASEDIR", "PHASESTEP", "PHASELOADREG",
         "STDBY", "PLLWAKESYNC", "RST", "ENCLKOP", "ENCLKOS", "ENCLKOS2", "ENCLKOS3"),
        ("CLKOP", "CLKOS", "CLKOS2", "CLKOS3", "LOCK", "INTLOCK", "REFCLK", "CLKINTFB"),
        {"CLKI_DIV": "1", "CLKFB_DIV": "1",
         **{f"{o}_{k}": v for o in ("CLKOP", "CLKOS", "CLKOS2", "CLKOS3")
            for k, v in (("DIV", "8"), ("CPHASE", "0"), ("FPHASE", "0"),
                         ("ENABLE", '"ENABLED"' if o == "CLKOP" else '"DISABLED"'))},
         "FEEDBK_PATH": '"CLKOP"', "OUTDIVIDER_MUXA": '"DIVA"', "OUTDIVIDER_MUXB": '"DIVB"',
         "OUTDIVIDER_MUXC": '"DIVC"', "OUTDIVIDER_MUXD": '"DIVD"',
         "STDBY_ENABLE": '"DISABLED"', "DPHASE_SOURCE": '"DISABLED"',
         "PLLRST_ENA": '"DISABLED"', "INTFB_WAKE": '"DISABLED"'}),
}


def primitive_stubs(names: set[str]) -> str:
    """Verilog stubs of the primitives ``names`` (unknown names are left out)."""
    cells = [(n, *PRIMITIVES[n]) for n in sorted(names) if n in PRIMITIVES]
    return render_template("hw/primitive_stubs.v.j2", cells=cells)


_ROLE_TITLE = {"master": "shared logic in core, clocks shared with the quad's other cores",
               "slave": "shared logic outside the core (clocks from the quad's master)"}


def stub_verilog(phy: str, lanes: int, ip_name: str, family: str | None = None, *,
                 role: str = "single", quad: int = 1, qpll: bool = False,
                 tiled: bool = False) -> str:
    """Black-box Verilog modules with the exact port lists of the generated IP's modules
    that the RTL instantiates (its top, or a tiled Virtex-5 core's tile and lane logic).

    Lets ``verilator --lint-only`` and Yosys process designs that instantiate the IP when
    the vendor library is not installed: each module body only ties the outputs to zero and
    carries ``(* blackbox *)``, so Yosys keeps the instance as a cell.

    Parameters
    ----------
    phy, lanes, family, role, quad, qpll, tiled
        As for :func:`optnet.devices.linkip.ip_modules`.
    ip_name : str
        Module name the vendor project gives the generated IP.

    Returns
    -------
    str
        Verilog-2005 source text.
    """
    family = ip_family(phy, family)
    spec = ip_spec(phy, family)
    modules = ip_modules(phy, lanes, family, role=role, quad=quad, qpll=qpll, tiled=tiled)
    title = spec.title if role == "single" or tiled else f"{spec.title}, {_ROLE_TITLE[role]}"
    source = V5_TILE_SOURCE if tiled else spec.slave_source if role == "slave" else spec.source
    return "".join(render_template(
        "hw/ip_stub.v.j2",
        module=ip_name + suffix,
        title=title if not suffix else f"{title}, module {suffix[1:]}",
        tool=spec.tool,
        family=family,
        lanes=lanes,
        source=source,
        ports=ports,
        ascending=any(p.ascending and p.width > 1 for p in ports),
    ) for suffix, ports in modules)


def port_stub(port: PortPlan, family: str) -> str:
    """The lint stub of the link IP behind ``port`` (as :func:`stub_verilog`, for its core's
    shared-logic role and tile from the transceiver plan), module
    :func:`optnet.plan.ip.ip_name`."""
    x = port.xcvr
    if x is not None and x.channel is not None:
        return stub_verilog(port.phy, len(port.lanes), ip_name(port), family=family,
                            tiled=True)
    share = {} if x is None or x.role == "single" else {
        "role": x.role, "quad": x.quad, "qpll": x.qpll}
    return stub_verilog(port.phy, len(port.lanes), ip_name(port), family=family, **share)
