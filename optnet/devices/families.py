"""FPGA families: one table of what optnet needs to know about each.

A board file names its FPGA's family (``family:`` in ``boards/*.yaml``). Every stage that
depends on it asks this table, so a family is described once: which vendor makes it, the
port tables of its vendor link IP (:mod:`optnet.devices.linkip`), the PLL the board top
clocks it with (:mod:`optnet.devices.plls`), the I/O primitives of its LVDS links
(:class:`~optnet.hw.phy.lvds.LvdsPhy`), the Yosys script that estimates it, the name
Quartus knows it by, whether its routers keep their tables in block RAM, whether its block
RAM has ports of different widths, and the constraint file its tools read.

:func:`family` looks a name up and raises :class:`ValueError` for a name the table does not
have; the functions that only ask whether a family has a property
(:func:`block_table_families`) answer "no" for an unknown one. Families without a board in
the library are here for the resource estimate only (their ``pll`` is ``None``, so no board
top can be made for them).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FAMILIES", "JTAG_USER1_PARTS", "Family", "block_table_families", "family",
           "family_names", "jtag_user1"]


@dataclass(frozen=True)
class Family:
    """One FPGA family and what optnet knows about it.

    Attributes
    ----------
    names : tuple of str
        The board-file ``family`` values that mean this family, the usual one first.
    vendor : str
        ``xilinx``, ``intel`` or ``lattice`` (the board file's ``vendor``).
    ip_family : str or None
        The port-table family of the vendor link IP (``7series``, ``ultrascale_plus``,
        ``virtex5``, ``stratix10``: :func:`optnet.devices.linkip.ip_family`); ``None`` when
        no vendor link IP is modelled for the family.
    pll : str or None
        The PLL primitive (or IP) the board top clocks the family with, a key of
        :data:`optnet.devices.plls.PLL_LIMITS`; ``None`` when optnet has no PLL model.
    lvds : str or None
        The ``family`` of :class:`~optnet.hw.phy.lvds.LvdsPhy` (which DDR registers and
        differential buffers it instantiates); ``None`` when optnet has no LVDS primitives
        for the family.
    yosys : str or None
        The family as Yosys' synthesis scripts name it (``synth_xilinx -family`` code,
        ``ecp5`` for ``synth_ecp5``, ``cyclonev`` for ``synth_intel_alm``); ``None`` when
        Yosys has no script for it.
    quartus : str or None
        Quartus' name of the family (``project_new -family``, FuseSoC's ``family``).
    block_tables : bool
        The routers keep their tables (and the node id) in block RAM, so that the open flow
        places and routes a role once and patches each node's tables into its bitstream
        (:mod:`optnet.emit.bitstream`); the table read costs the router one cycle more.
    wide_ram : bool
        The block RAM has ports of different widths that synthesis infers from a memory
        written through several narrow ports at neighbouring addresses in one cycle; a link
        layer keeps received side bits so (:attr:`optnet.plan.configs.LinkConfig.side_ram`).
    constraints : str
        The constraint file the family's tools read: ``xdc`` (Vivado), ``ucf`` (ISE),
        ``qsf`` (Quartus, with an ``sdc``) or ``lpf`` (nextpnr-ecp5).
    source : str
        Where the facts come from.
    jtag : str or None
        The primitive that gives user logic a data register of the FPGA's JTAG TAP (a key of
        :data:`optnet.hw.jtag.TAP_KINDS`: ``bscane2``, ``bscan_virtex5``, ``jtagg``,
        ``virtual_jtag``); ``None`` where optnet has none for the family.
    jtag_user1 : tuple of (int, int) or None
        The host's side of it: the TAP's instruction register length and the user
        instruction that selects the register, for a device of one die (Xilinx USER1,
        Lattice ER1); ``None`` where the host reaches it otherwise (Intel's SLD hub, through
        ``quartus_stp``) or optnet does not know them. Devices of several dies:
        :data:`JTAG_USER1_PARTS`.
    router_fmax_mhz : float or None
        The clock the benchmark router (``bench/router.py``: 5 ports, 64-bit flits, 2 VCs of
        8 flits) was measured to reach on the family after place and route; ``None`` where
        it was not measured, and then lint does not compare the network clock with it
        (W302 warns on a network clock above it). Only ECP5 has one: the Xilinx and Intel
        families are not placed and routed here, and the xc7 logic depth the bench prints
        is a proxy for comparing designs, not a clock (no per-level delay from a datasheet
        includes the routing, which is most of the delay).
    """

    names: tuple[str, ...]
    vendor: str
    ip_family: str | None
    pll: str | None
    lvds: str | None
    yosys: str | None
    quartus: str | None
    block_tables: bool
    wide_ram: bool
    constraints: str
    source: str
    jtag: str | None = None
    jtag_user1: tuple[int, int] | None = None
    router_fmax_mhz: float | None = None

    @property
    def name(self) -> str:
        """The usual board-file name of the family."""
        return self.names[0]


# Facts shared by the Xilinx entries. wide_ram: Xilinx block RAM has had ports of different
# widths since Virtex-II; Vivado infers them from its asymmetric RAM template (UG901) and
# Yosys merges the narrow ports the same way. Yosys' ECP5 and Cyclone V mappings do not
# (Cyclone V falls back to flip-flops). Constraints: Vivado (XDC) supports 7 series and
# later; earlier families need ISE, which reads UCF.
_XILINX_RAM = ("block RAM of mixed port widths: Xilinx since Virtex-II, Vivado's asymmetric RAM "
               "template (UG901), Yosys merges the ports the same way")

_XILINX7_JTAG = ("JTAG: BSCANE2 (UG953), IR of 6 bits and USER1 0x02 (UG470, boundary-scan "
                 "instructions; OpenOCD tcl/fpga/xlnx/xc7.cfg)")
_XILINXU_JTAG = ("JTAG: BSCANE2 (UG974), IR of 6 bits and USER1 0x02 on a device of one die "
                 "(UG570; OpenOCD tcl/cpld/xilinx-xcu.cfg), of several: JTAG_USER1_PARTS")

#: The TAP's instruction register length and USER1 instruction of Xilinx devices of several
#: dies (SLRs), whose IR is 6 bits per die and whose user instructions differ from a
#: single-die device's (OpenOCD 0.12+ tcl/cpld/xilinx-xcu.cfg: the XCVU9P's IR is 18 bits and
#: its USER1 0x000A4). The XCU280 has three SLRs (UG1314, Alveo U280 data sheet DS963) and is
#: taken as the XCVU9P; neither is checked on a card. Keys: the part's leading characters.
JTAG_USER1_PARTS: dict[str, tuple[int, int]] = {
    "xcvu9p": (18, 0x000A4),
    "xcu280": (18, 0x000A4),
}

#: Every family optnet knows.
FAMILIES: tuple[Family, ...] = (
    Family(
        names=("virtex7", "kintex7", "artix7", "zynq7000", "zynq7", "7series"),
        vendor="xilinx", ip_family="7series", pll="MMCME2_BASE", lvds="xilinx7", yosys="xc7",
        quartus=None, block_tables=False, wide_ram=True, constraints="xdc",
        source=("7 series with transceivers. Link IP: Xilinx PG046 (Aurora 8B/10B v11.1) and "
                "PG074 (Aurora 64B/66B v12.0) port tables for 7-series GTX/GTH/GTP cores; PLL: "
                "MMCME2_BASE, DS181/DS182/DS183/DS187/DS191 MMCM switching characteristics "
                "and UG472; LVDS: ODDR/IDDR, OBUFDS/IBUFDS, BUFIO/BUFR (UG471, UG472, UG953); "
                "Yosys synth_xilinx -family xc7; " + _XILINX_RAM + "; Vivado, XDC"
                + "; " + _XILINX7_JTAG),
        jtag="bscane2", jtag_user1=(6, 0x02)),
    Family(
        names=("spartan7",),
        vendor="xilinx", ip_family=None, pll="MMCME2_BASE", lvds="xilinx7", yosys="xc7",
        quartus=None, block_tables=False, wide_ram=True, constraints="xdc",
        source=("7 series without transceivers (DS180 7 Series FPGAs Overview: Spartan-7 has "
                "no GT), so no link IP; otherwise as the other 7-series families"),
        jtag="bscane2", jtag_user1=(6, 0x02)),
    Family(
        names=("ultrascale_plus", "zynq_ultrascale_plus", "virtex_ultrascale_plus",
               "kintex_ultrascale_plus", "virtexuplus", "kintexuplus"),
        vendor="xilinx", ip_family="ultrascale_plus", pll="MMCME4_BASE", lvds="xilinx7",
        yosys="xcup", quartus=None, block_tables=False, wide_ram=True, constraints="xdc",
        source=("Link IP: PG046 and PG074 port tables for UltraScale+ GTH/GTY cores; PLL: "
                "MMCME4_BASE, DS922/DS923/DS925 MMCM switching characteristics and UG572; "
                "LVDS: the 7-series primitives (ODDR/IDDR, BUFIO/BUFR), as optnet always "
                "used here, not checked on UltraScale+ hardware; Yosys synth_xilinx -family "
                "xcup; " + _XILINX_RAM + "; Vivado, XDC"
                + "; " + _XILINXU_JTAG),
        jtag="bscane2", jtag_user1=(6, 0x02)),
    Family(
        names=("ultrascale", "virtexu", "kintexu"),
        vendor="xilinx", ip_family=None, pll=None, lvds=None, yosys="xcu", quartus=None,
        block_tables=False, wide_ram=True, constraints="xdc",
        source="Resource estimate only: Yosys synth_xilinx -family xcu; " + _XILINX_RAM),
    Family(
        names=("virtex6",),
        vendor="xilinx", ip_family=None, pll=None, lvds=None, yosys="xc6v", quartus=None,
        block_tables=False, wide_ram=True, constraints="ucf",
        source=("Resource estimate only: Yosys synth_xilinx -family xc6v; " + _XILINX_RAM
                + "; ISE (Vivado starts at 7 series), UCF")),
    Family(
        names=("spartan6",),
        vendor="xilinx", ip_family=None, pll=None, lvds=None, yosys="xc6s", quartus=None,
        block_tables=False, wide_ram=True, constraints="ucf",
        source=("Resource estimate only: Yosys synth_xilinx -family xc6s; " + _XILINX_RAM
                + "; ISE (Vivado starts at 7 series), UCF")),
    Family(
        names=("virtex5",),
        vendor="xilinx", ip_family="virtex5", pll="PLL_BASE", lvds="virtex5", yosys="xc5v",
        quartus=None, block_tables=False, wide_ram=True, constraints="ucf",
        source=("Link IP: UG353/DS637 Aurora 8B/10B v5.2 for Virtex-5 GTP (ISE CORE "
                "Generator); PLL: PLL_BASE, DS202 PLL switching characteristics and UG190; "
                "LVDS: ODDR/IDDR, OBUFDS/IBUFDS, BUFIO/BUFR (UG190); Yosys synth_xilinx "
                "-family xc5v (experimental); " + _XILINX_RAM + "; ISE (Vivado does not "
                "support Virtex-5), UCF"
                + "; JTAG: BSCAN_VIRTEX5 (Virtex-5 Libraries Guide), IR of 10 bits and USER1 "
                "0x3C2 (UG191, boundary-scan instructions; OpenOCD "
                "tcl/cpld/xilinx-xc5v.cfg)"),
        jtag="bscan_virtex5", jtag_user1=(10, 0x3C2)),
    Family(
        names=("ecp5",),
        vendor="lattice", ip_family=None, pll="EHXPLLL", lvds="ecp5", yosys="ecp5",
        quartus=None, block_tables=True, wide_ram=False, constraints="lpf",
        source=("PLL: EHXPLLL, prjtrellis ecppll and Lattice FPGA-TN-02200; LVDS: ODDRX1F/"
                "IDDRX1F and OLVDS/ILVDS (Lattice FPGA Libraries Reference Guide); Yosys "
                "synth_ecp5; block tables: ecpbram replaces the contents of 512-word block "
                "RAMs in a placed and routed bitstream (optnet.emit.bitstream); Yosys' ECP5 "
                "mapping has no mixed-width block RAM ports; nextpnr-ecp5 reads LPF"
                "; JTAG: JTAGG, instruction ER1 = 0x32 of an 8-bit IR (FPGA Libraries "
                "Reference Guide; OpenOCD tcl/fpga/lattice_ecp5.cfg)"),
        jtag="jtagg", jtag_user1=(8, 0x32),
        # bench/router.py's 5-port router (2026-11-28, two-cycle allocator, VC choice from
        # registered hints; 5 ports, 64-bit flits, 2 VCs of 8 flits, LUT tables; LFE5U-85F
        # speed 6, nextpnr-ecp5 0.11.1, Yosys 0.70): seeds 1 and 3 at 101.5 and 102.2 MHz,
        # so the median of three is at least 101.5 (seed 2 ran over 25 minutes and was
        # stopped), rounded down.
        # Block-RAM tables (the open flow's) are read in a stage of their own, so they do
        # not lower it.
        router_fmax_mhz=100.0),
    Family(
        names=("stratix10",),
        vendor="intel", ip_family="stratix10", pll="IOPLL", lvds=None, yosys=None,
        quartus="Stratix 10", block_tables=False, wide_ram=False, constraints="qsf",
        source=("Link IP: UG-683330 (Serial Lite III Streaming) and UG-683396 (Interlaken 2nd "
                "Generation) for Stratix 10 L/H-tile; PLL: IOPLL, Intel 683181 and 683195; "
                "no LVDS primitives in optnet; Yosys has no Stratix 10 script "
                "(synth_intel_alm targets Cyclone V only); Quartus Prime Pro family "
                "\"Stratix 10\", QSF and SDC"
                "; JTAG: the Virtual JTAG IP (sld_virtual_jtag, Intel 683705), reached "
                "through the SLD hub by quartus_stp's device_virtual_ir_shift/_dr_shift"),
        jtag="virtual_jtag"),
    Family(
        names=("cyclonev",),
        vendor="intel", ip_family=None, pll=None, lvds=None, yosys="cyclonev",
        quartus="Cyclone V", block_tables=False, wide_ram=False, constraints="qsf",
        source=("Resource estimate only: Yosys synth_intel_alm -family cyclonev (Yosys 0.70 "
                "`help synth_intel_alm`); Cyclone V falls back to flip-flops for mixed-width "
                "RAM")),
)

_BY_NAME: dict[str, Family] = {name: f for f in FAMILIES for name in f.names}


def family(name: str) -> Family:
    """The family a board file's ``family`` value ``name`` means.

    Raises
    ------
    ValueError
        For a name the table does not know, with the names it does.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"'{name}' is not an FPGA family optnet knows; it knows "
            f"{', '.join(family_names())}.") from None


def jtag_user1(family_name: str, part: str) -> tuple[int, int] | None:
    """The instruction register length and user instruction (:attr:`Family.jtag_user1`) of
    the device ``part`` of family ``family_name``: from :data:`JTAG_USER1_PARTS` for a device
    of several dies, else the family's."""
    for prefix, ir in JTAG_USER1_PARTS.items():
        if part.lower().startswith(prefix):
            return ir
    return family(family_name).jtag_user1


def family_names() -> tuple[str, ...]:
    """Every board-file family name of the table, in table order."""
    return tuple(_BY_NAME)


def block_table_families() -> tuple[str, ...]:
    """The board-file names of the families whose routers keep their tables in block RAM
    (:attr:`Family.block_tables`)."""
    return tuple(name for f in FAMILIES if f.block_tables for name in f.names)
