"""The link IP of a node's vendor project: which cores, configured how, and the part names
the vendor flows take.

The link IP must come out with exactly the ports of the black box the RTL instantiates
(:func:`optnet.devices.linkip.ip_ports`). :func:`link_ips` therefore derives every IP's
customisation from :func:`optnet.devices.linkip.ip_settings` (the protocol settings the
adapter was written for) plus the link (lanes, line rate), the board (reference clock,
transceiver sites) and the clocks, and fails on a setting it cannot translate rather than
leaving it out. Where a site is, and what it numbers, is the device model's
(:mod:`optnet.devices.transceivers`); which reference clock pad clocks a core, in which
quad and input, and which PLLs drive a Stratix 10 link, the transceiver plan's
(:mod:`optnet.plan.transceivers`). Parameter names are the tools' own, from the public
sources cited next to each table below; names that could not be confirmed say so there and
in the script. The scripts themselves are rendered by :mod:`optnet.emit.projects`.

A value the board file does not give (a reference clock frequency, the init clock) becomes
a variable of the script (``var`` parameters, :class:`IpParam`) that the script stops on
with a message, instead of a guess.

Module names are decided here too: :func:`ip_name` names the generated link IP (the board
top and the network instantiate it under that name), :func:`atx_pll_name` the Intel ATX PLL
that drives it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from fractions import Fraction

from optnet.devices.linkip import (
    VENDOR_PHYS,
    ip_family,
    ip_settings,
    sl3_user_clock,
    user_width_for,
)
from optnet.devices.transceivers import (
    Site,
    Transceiver,
    analog_voltage,
    transceiver,
)
from optnet.plan import NodePlan, PortPlan
from optnet.plan.transceivers import RefclkPlan
from optnet.spec.models import BoardDesc

__all__ = [
    "Ecp5Device",
    "IopllPlan",
    "IpParam",
    "LinkIp",
    "ProjectError",
    "atx_pll",
    "atx_pll_name",
    "decimal_text",
    "ecp5_device",
    "ip_name",
    "ise_part",
    "link_ips",
]


class ProjectError(Exception):
    """A node's vendor project cannot be generated; ``args`` are full-sentence reasons."""


@dataclass(frozen=True)
class IopllPlan:
    """What the ``optnet_iopll`` IP of an Intel board top must generate.

    The clock plan (:func:`optnet.plan.clocks.clock_plan`) decides the clocks; this is the
    part of it the Quartus script needs. :class:`~optnet.plan.clocks.ClockPlan` has these
    attributes.

    Attributes
    ----------
    refclk_hz : Fraction or float
        Frequency of the board clock at the PLL's ``refclk`` input.
    outputs : tuple of (str, Fraction or float)
        ``(purpose, frequency)`` of ``outclk_0``, ``outclk_1``, ... in order.
    init_clk_hz : Fraction, float or None
        Frequency of the free-running clock the top feeds to the PHY adapters' ``init_clk``,
        when the plan knows it.
    """

    refclk_hz: Fraction | float
    outputs: tuple[tuple[str, Fraction | float], ...]
    init_clk_hz: Fraction | float | None = None


@dataclass(frozen=True)
class IpParam:
    """One parameter of a generated IP.

    Attributes
    ----------
    name : str
        The tool's parameter name (without Vivado's ``CONFIG.`` prefix).
    value : str
        The literal value, or with ``var`` a Tcl word that substitutes a variable set at
        the top of the script (``$refclk_mhz(<ip>)``, ``"$refclk_mhz(<ip>) MHz"``).
    var : bool
    """

    name: str
    value: str
    var: bool = False


@dataclass(frozen=True)
class LinkIp:
    """One generated link IP module, shared by the node's ports with its configuration.

    Attributes
    ----------
    name : str
        Module name (:func:`ip_name`).
    phy : str
    component : str
        The vendor's IP name (``create_ip -name``, Platform Designer component or CORE
        Generator core).
    family : str
        IP family (:func:`optnet.devices.linkip.ip_family`).
    lanes : int
    line_rate : int
        Per lane, bit/s.
    width : int
        User data width of the black box the RTL instantiates.
    refclk_hz : Fraction or None
        Reference clock frequency from the board file, if it gives one.
    refclk_var : str
        Tcl variable (``refclk_mhz(<name>)``) holding the reference clock in MHz.
    refclk_env : str
        Environment variable that overrides it.
    ports : tuple of PortPlan
        The node's ports using this IP; the first one places the IP.
    params : tuple of IpParam
    notes : tuple of str
        Comment lines for the script (where values come from, what is unconfirmed).
    role, quad, qpll
        The core's shared-logic role, quad number and PLL (the transceiver plan's, as
        :func:`optnet.devices.linkip.ip_ports` takes them).
    tiled : bool
        A one-lane Virtex-5 core whose GTP_DUAL tiles optnet wraps: the RTL instantiates its
        tile and lane-logic modules, not its top
        (:func:`optnet.devices.linkip.ip_modules`).
    """

    name: str
    phy: str
    component: str
    family: str
    lanes: int
    line_rate: int
    width: int
    refclk_hz: Fraction | None
    refclk_var: str
    refclk_env: str
    ports: tuple[PortPlan, ...]
    params: tuple[IpParam, ...]
    notes: tuple[str, ...] = ()
    role: str = "single"
    quad: int = 1
    qpll: bool = False
    tiled: bool = False

    @property
    def board_ports(self) -> tuple[str, ...]:
        """Board ports of :attr:`ports`, each once, in port order."""
        return tuple(dict.fromkeys(p.board_port for p in self.ports))



# --------------------------------------------------------------------------- formatting


def decimal_text(value: Fraction, places: int = 9) -> str:
    """``value`` in decimal with at least one fractional digit (``10.0``, ``156.25``), exact
    when it terminates within ``places`` digits, rounded there otherwise."""
    value = Fraction(value)
    scaled = round(value * 10**places)
    whole, frac = divmod(abs(scaled), 10**places)
    digits = f"{frac:0{places}d}".rstrip("0") or "0"
    return f"{'-' if scaled < 0 else ''}{whole}.{digits}"


def _mhz(hz: Fraction | float) -> str:
    return decimal_text(Fraction(hz) / 10**6)


def _gbps(bps: int) -> str:
    return decimal_text(Fraction(bps, 10**9))


def _env_name(*parts: str) -> str:
    return "_".join(re.sub(r"[^A-Za-z0-9]", "_", p).upper() for p in parts)



# --------------------------------------------------------------------------- module names


def ip_name(port: PortPlan) -> str:
    """Module name of the vendor IP behind ``port``: one IP per protocol and lane count, so
    a node's ports with the same configuration share one generated core; a core that shares
    its quad's clocks (a ``master``, or a ``slave`` taking them) has port names that depend
    on its quad, so it is one IP per quad: ``optnet_<phy>_x<lanes>_<role>_x<column>q<quad>``
    (the transceiver plan's column and quad position). A Virtex-5 core whose tile optnet
    wraps (:attr:`~optnet.plan.transceivers.PortXcvr.channel`) keeps the plain name, as its
    lane logic is the same module whatever its role."""
    base = f"optnet_{port.phy}_x{len(port.lanes)}"
    xcvr = port.xcvr
    if xcvr is None or xcvr.role == "single" or not xcvr.groups or xcvr.channel is not None:
        return base
    column, group = xcvr.groups[0]
    return f"{base}_{xcvr.role}_x{column}q{group}"


# --------------------------------------------------------------------------- link IP


def _refclk(board: BoardDesc, port: PortPlan) -> Fraction | None:
    desc = board.ports[port.board_port].refclk
    return None if desc is None else desc.freq.value


def _groups(plan: NodePlan, board: BoardDesc) -> list[tuple[str, list[PortPlan]]]:
    """Vendor-IP ports grouped by module name, in port order; checks that the ports of a
    group can share one generated core."""
    groups: dict[str, list[PortPlan]] = {}
    for port in plan.ports:
        if port.phy in VENDOR_PHYS:
            groups.setdefault(ip_name(port), []).append(port)
    problems = []
    for name, ports in groups.items():
        first = ports[0]
        for other in ports[1:]:
            ref_a, ref_b = _refclk(board, first), _refclk(board, other)
            for what, a, b in (
                    ("line rate", f"{_gbps(first.line_rate)} Gb/s",
                     f"{_gbps(other.line_rate)} Gb/s"),
                    ("reference clock", "none" if ref_a is None else f"{_mhz(ref_a)} MHz",
                     "none" if ref_b is None else f"{_mhz(ref_b)} MHz")):
                if a != b:
                    problems.append(
                        f"Ports {first.name} and {other.name} of node '{plan.node}' share the "
                        f"generated IP '{name}' but need different {what}s ({a} and {b}); "
                        f"one core cannot serve both.")
    if problems:
        raise ProjectError(*problems)
    return list(groups.items())


def _sites(plan: NodePlan, board: BoardDesc, port: PortPlan) -> list[str]:
    sites = []
    for lane in port.lanes:
        site = board.ports[port.board_port].lanes[lane].site
        if not site:
            raise ProjectError(
                f"Lane {lane} of port '{port.board_port}' on board '{board.name}' has no "
                f"transceiver site, so the vendor script of node '{plan.node}' cannot place "
                f"the {port.phy} core of port {port.name}; add 'site' to the lane in the "
                f"board file.")
        sites.append(site)
    return sites


#: How a message names the channel sites of each link IP family's transceivers.
_SITE_FORM = {"7series": "7-series GT", "ultrascale_plus": "UltraScale+ GT",
              "virtex5": "Virtex-5 GTP_DUAL"}


def _locate(plan: NodePlan, board: BoardDesc, port: PortPlan,
            family: str) -> tuple[Transceiver, list[str], list[Site]]:
    """The board's transceiver model, and the site of each lane of ``port`` and where the
    model puts it."""
    sites = _sites(plan, board, port)
    kind = board.transceivers.type if board.transceivers else None
    gt = transceiver(board.family, kind)
    if gt is None:
        raise ProjectError(
            f"Board '{board.name}' ({board.family}, transceivers {kind or 'none'}) has no "
            f"transceiver model in optnet.devices.transceivers, so the vendor script of node "
            f"'{plan.node}' cannot place the {port.phy} core of port {port.name}.")
    located = []
    for site in sites:
        at = gt.locate(site)
        if at is None:
            raise ProjectError(
                f"Port {port.name} of node '{plan.node}' uses transceiver site '{site}', "
                f"which is not a {_SITE_FORM.get(family, gt.name)} channel site; the "
                f"{port.phy} core cannot be placed.")
        located.append(at)
    return gt, sites, located


def _pad(plan: NodePlan, port: PortPlan, column: int) -> RefclkPlan | None:
    """The reference clock pad the transceiver plan clocks ``port``'s core from (a slave's
    is its master's), when the plan knows its group and it is in GT column ``column``."""
    x = port.xcvr
    pad = None if x is None else next(
        (r for r in plan.xcvr.refclks if r.key == x.refclk), None)
    return pad if pad is not None and pad.group is not None and pad.group[0] == column \
        else None


# Vivado IP names and CONFIG parameters. Sources:
# - sangwoojun/bluedbm auroraExt/synth-aurora-ext.tcl (aurora_64b66b on the VC707's
#   xc7vx485t: C_AURORA_LANES, C_LINE_RATE {10.0} in Gb/s, C_REFCLK_FREQUENCY {625.000} in
#   MHz, interface_mode, drp_mode, and C_GT_LOC_25 {1} for GTXE2_CHANNEL_X1Y24, i.e. lane
#   position Y+1) and flash/virtex/synth-aurora-intra1.tcl (aurora_8b10b: C_LANE_WIDTH,
#   Interface_Mode, C_GT_LOC_21..24 for X1Y20..23, C_GT_LOC_1 {X} to clear the default lane);
#   chanwooc/lightstore-platform coregen/*.tcl (the same numbering on a second port);
# - UltraScale(+) placement: OpenCAPI/ThymesisFlow afu/thymesisflow/ip/aurora_qsfp1.tcl and
#   Xilinx/Vitis-Tutorials 08-alveo_aurora_kernel gen_aurora_ip.tcl (aurora_64b66b:
#   CHANNEL_ENABLE, C_START_QUAD {Quad_X0Y3}, C_START_LANE {X0Y12}, C_REFCLK_SOURCE
#   {MGTREFCLK0_of_Quad_X0Y3}, C_UCOLUMN_USED, C_GT_LOC_2..4, C_INIT_CLK); lightstore's
#   aurora_8b10b for ZCU102 (C_UCOLUMN_USED {right} for X1, C_REFCLK_SOURCE
#   {MGTREFCLK0 of Quad X1Y1}: the 8B/10B core spells it with spaces);
# - C_GT_CLOCK_1 (7 series reference clock quad, e.g. GTXQ6): the user parameter
#   c_gt_clock_1 in the core_generation_info attribute of generated 7-series Aurora cores;
#   not seen in a public create_ip script, so unconfirmed as a CONFIG name.
_VIVADO_COMPONENT = {"aurora_8b10b": "aurora_8b10b", "aurora_64b66b": "aurora_64b66b"}

#: IP_SETTINGS keys whose value is computed here rather than copied.
_VIVADO_DERIVED = {"DRP_FREQ"}


def _share(port: PortPlan) -> tuple[str, int, bool]:
    """(role, quad, qpll) of ``port``'s core, from the transceiver plan."""
    x = port.xcvr
    return ("single", 1, False) if x is None else (x.role, x.quad, x.qpll)


def _literal_settings(phy: str, family: str, lanes: int, role: str) -> list[IpParam]:
    """:func:`ip_settings` as literal parameters, ``{lanes}`` and ``{support_level}`` (the
    core's shared-logic role) filled in; computed ones (:data:`_VIVADO_DERIVED`) are left to
    the caller."""
    params = []
    for key, value in ip_settings(phy, family).items():
        if key in _VIVADO_DERIVED:
            continue
        value = value.replace("{lanes}", str(lanes)).replace(
            "{support_level}", "0" if role == "slave" else "1")
        if "{" in value or "(" in value or " " in value.strip():
            raise ProjectError(
                f"The {phy} setting {key} = '{value}' in optnet.devices.linkip is a "
                f"description, not a value, and optnet.plan.ip does not know how to "
                f"apply it; teach _vivado_ip or _ise_ip to compute it.")
        params.append(IpParam(key, value))
    return params


def _xilinx_ip(plan: NodePlan, board: BoardDesc, name: str, ports: list[PortPlan]) -> LinkIp:
    first = ports[0]
    lanes = len(first.lanes)
    family = ip_family(first.phy, board.family)
    refclk_var = f"refclk_mhz({name})"
    role = first.xcvr.role if first.xcvr else "single"
    vendor = _literal_settings(first.phy, family, lanes, role)
    params = [
        *(IpParam(key, "$init_clk_mhz", var=True)
          for key in ip_settings(first.phy, family) if key in _VIVADO_DERIVED),
        IpParam("C_LINE_RATE", _gbps(first.line_rate)),
        IpParam("C_REFCLK_FREQUENCY", f"${refclk_var}", var=True),
        IpParam("C_INIT_CLK", "$init_clk_mhz", var=True),
    ]
    notes = [f"{lanes} lane{'s' if lanes > 1 else ''} at {_gbps(first.line_rate)} Gb/s, "
             f"{user_width_for(first.phy, lanes, family)}-bit user data as the RTL's black "
             f"box expects."]
    gt, sites, at = _locate(plan, board, first, family)
    column = at[0].column
    pad = _pad(plan, first, column)
    # The plan's group for the pad: its buffer site's, else assumed (the quad of its board
    # port's first lane); without one, the quad of the link's first lane.
    ref_quad = pad.group[1] if pad is not None else at[0].group
    sited = pad is not None and pad.input is not None
    ys = [gt.position(a) for a in at]
    if family == "7series":
        if any(a.column != column for a in at):
            raise ProjectError(f"The lanes of port {first.name} of node '{plan.node}' are in "
                               f"different GT columns; one Aurora core cannot span them.")
        kind = board.transceivers.type
        params.append(IpParam("C_GT_CLOCK_1", f"{kind}Q{ref_quad}"))
        # The lane grid numbers GT positions from 1 at the bottom of the column (Y + 1);
        # lane k of the channel goes to the position of the link's k-th lane.
        for k, y in enumerate(ys, 1):
            params.append(IpParam(f"C_GT_LOC_{y + 1}", str(k)))
        if 0 not in ys:
            params.append(IpParam("C_GT_LOC_1", "X"))
        notes.append(f"Placed at {', '.join(sites)} (C_GT_LOC_<Y+1>, one GT column assumed); "
                     f"reference clock {kind}Q{ref_quad}"
                     + (" from the board's refclk site." if sited else
                        ", the quad of the first lane (the board file names no refclk site)."))
    else:
        if any(a.column != column for a in at) or ys != list(range(ys[0], ys[0] + lanes)):
            raise ProjectError(
                f"The lanes of port {first.name} of node '{plan.node}' are not consecutive "
                f"channels of one GT column ({', '.join(sites)}); the Aurora core places its "
                f"lanes from a start lane upwards.")
        ref_index = pad.input if sited else 0
        of = " of " if first.phy == "aurora_8b10b" else "_of_"
        refclk_source = f"MGTREFCLK{ref_index}{of}Quad{of[-1]}X{column}Y{ref_quad}"
        params += [
            IpParam("C_UCOLUMN_USED", "left" if column == 0 else "right"),
            IpParam("C_START_QUAD", f"Quad_X{column}Y{at[0].group}"),
            IpParam("C_START_LANE", f"X{column}Y{ys[0]}"),
            IpParam("C_REFCLK_SOURCE", refclk_source),
            IpParam("CHANNEL_ENABLE", " ".join(f"X{column}Y{y}" for y in ys)),
        ]
        params += [IpParam(f"C_GT_LOC_{k}", str(k)) for k in range(2, lanes + 1)]
        notes.append(f"Placed at {', '.join(sites)} from start lane X{column}Y{ys[0]}; "
                     f"C_UCOLUMN_USED from the column (X0 left, X1 right); reference clock "
                     f"{refclk_source}"
                     + ("." if sited else " (assumed: the board file names no refclk site)."))
    if len(ports) > 1:
        notes.append(f"Shared by ports {', '.join(p.name for p in ports)}: the IP is placed "
                     f"for port {first.name}; the constraints file places the GT channels "
                     f"of the other instances.")
    x = first.xcvr
    if x is not None and x.role == "master":
        notes.append(f"Shared logic in the core (SupportLevel 1): it buffers the reference "
                     f"clock, holds the quad's COMMON ({x.pll} in use) and gives its clocks "
                     f"to the quad's other cores (PG046/PG074 Shared Logic).")
    elif x is not None and x.role == "slave":
        master = next(p.name for p in plan.ports if p.port == x.master)
        notes.append(f"No shared logic (SupportLevel 0): it takes the reference clock, the "
                     f"quad PLL's clocks and the user clocks from the core of port {master} "
                     f"(PG046/PG074 Shared Logic).")
    # A computed parameter must not silently override one of the adapter's settings.
    clash = sorted({p.name for p in vendor} & {p.name for p in params})
    if clash:
        raise ProjectError(f"optnet.devices.linkip sets {', '.join(clash)} for {first.phy} "
                           f"and optnet.plan.ip computes it too; one of them must go.")
    params = vendor + params
    refclk = _refclk(board, first)
    return LinkIp(name, first.phy, _VIVADO_COMPONENT[first.phy], family, lanes,
                  first.line_rate, user_width_for(first.phy, lanes, family), refclk,
                  refclk_var, _env_name("OPTNET_REFCLK_MHZ", name), tuple(ports),
                  tuple(params), tuple(notes), *_share(first))


# ISE CORE Generator (Virtex-5): the CSET names are those of ip_settings("aurora_8b10b",
# "virtex5"), spelt as the user parameters in the core_generation_info attribute of generated
# v5.x cores (c_aurora_lanes, c_lane_width, c_gt_loc_<n>, c_line_rate, c_refclk_frequency,
# ...). No public .xco of an Aurora v5.2 core was found to confirm that CORE Generator
# accepts these spellings in CSET lines, nor the SELECT line "Aurora_8B10B family
# Xilinx,_Inc. 5.2"; both are flagged in the script.
_ISE_SELECT = {"aurora_8b10b": "Aurora_8B10B family Xilinx,_Inc. 5.2"}


def _ise_ip(plan: NodePlan, board: BoardDesc, name: str, ports: list[PortPlan]) -> LinkIp:
    first = ports[0]
    lanes = len(first.lanes)
    family = ip_family(first.phy, board.family)
    if first.phy not in _ISE_SELECT:
        raise ProjectError(f"optnet can only generate Aurora 8B/10B for Virtex-5 (ISE), "
                           f"not {first.phy} on port {first.name} of node '{plan.node}'.")
    refclk_var = f"refclk_mhz({name})"
    params = []
    for key, value in ip_settings(first.phy, family).items():
        if key == "c_line_rate":
            params.append(IpParam(key, _gbps(first.line_rate)))
        elif key == "c_refclk_frequency":
            params.append(IpParam(key, f"${refclk_var}", var=True))
        elif key == "c_gt_loc_<k>":
            gt, _, at = _locate(plan, board, first, family)
            # The GTPs numbered from 1 up the column, two per GTP_DUAL tile (the v5.x lane
            # grid, as c_gt_loc_1..48 in core_generation_info; unconfirmed).
            positions = [gt.position(a) + 1 for a in at]
            params += [IpParam(f"c_gt_loc_{p}", str(k)) for k, p in enumerate(positions, 1)]
            if 1 not in positions:
                params.append(IpParam("c_gt_loc_1", "X"))
        elif key == "clock module":
            continue        # not a core parameter: the board top provides the clocks
        else:
            value = value.replace("{lanes}", str(lanes))
            if "{" in value or "(" in value:
                raise ProjectError(
                    f"The {first.phy} Virtex-5 setting {key} = '{value}' in "
                    f"optnet.devices.linkip is not a value optnet.plan.ip can apply.")
            params.append(IpParam(key, value))
    params.append(IpParam("component_name", name))
    notes = [f"{lanes} lane{'s' if lanes > 1 else ''} at {_gbps(first.line_rate)} Gb/s, "
             f"{user_width_for(first.phy, lanes, family)}-bit user data (2-byte GTP lanes) "
             f"as the RTL's black box expects; placed at "
             f"{', '.join(_sites(plan, board, first))}."]
    tiled = {p.xcvr is not None and p.xcvr.channel is not None for p in ports}
    if len(tiled) > 1:
        raise ProjectError(
            f"Node '{plan.node}' has one-lane Aurora ports with GTP_DUAL channel sites and "
            f"ports without ({', '.join(p.name for p in ports)}); give every lane of board "
            f"'{board.name}' a site, so that optnet can wrap all their tiles.")
    if tiled == {True}:
        notes.append("The RTL instantiates the core's GTP_TILE, AURORA_LANE, GLOBAL_LOGIC, "
                     "TX_STREAM and RX_STREAM modules, not its top: optnet wraps each "
                     "GTP_DUAL tile itself, so that each lane sits on its own channel and two "
                     "one-lane links can share a tile.")
    elif len(ports) > 1:
        notes.append(f"Shared by ports {', '.join(p.name for p in ports)}: the core is placed "
                     f"for port {first.name}; the constraints place the other instances.")
    return LinkIp(name, first.phy, _ISE_SELECT[first.phy], family, lanes, first.line_rate,
                  user_width_for(first.phy, lanes, family), _refclk(board, first), refclk_var,
                  _env_name("OPTNET_REFCLK_MHZ", name), tuple(ports), tuple(params),
                  tuple(notes), tiled=tiled == {True})


# Quartus Prime Pro (Stratix 10 H-tile) Platform Designer components and parameters. Sources:
# - SerialLite III Streaming: CTSRD-CHERI/S10FPGA s10_seriallite3_4lane.ip (component
#   altera_sl3 19.3.0: htile_gui_direction, LANES, gui_pll_ref_freq in MHz,
#   gui_xcvr_data_rate in Gb/s, gui_transceiver_channel_type GXT, gui_clocking_mode true for
#   the advanced clocking mode of that design, gui_ecc_enable, gui_user_crete_tile htile);
# - Interlaken 2nd Generation: the altera_uflex_ilk _hw.tcl (v18.1): NUM_LANES,
#   TX_PKTMOD_ONLY (1 = packet), CALENDAR_PAGES, DATA_RATE_GUI in Gb/s, PLL_REFCLK_FREQ as
#   "<f> MHz"; INTERNAL_WORDS is derived from the lane count in v18.1 (4 words at 4 and 8
#   lanes), so setting it may be refused by releases that still derive it;
# - ATX PLL: S10FPGA xcvr_atx_pll_s10_htile.ip and a Stratix 10 MX eth_xcvr_pll qsys script
#   (altera_xcvr_atx_pll_s10_htile: set_output_clock_frequency = line rate / 2 in MHz,
#   set_auto_reference_clock_frequency, primary_pll_buffer, enable_28G_local_atx_path,
#   enable_8G_path, enable_pll_lock); the Interlaken _hw.tcl sets the same output frequency;
# - IOPLL: openhwgroup/cva6 corev_apu/altera/ip/io_pll.tcl (altera_iopll:
#   gui_reference_clock_frequency, gui_number_of_clocks, gui_output_clock_frequency<i>,
#   gui_use_locked, gui_operation_mode).
_INTEL_COMPONENT = {"serial_lite_3": "altera_sl3", "interlaken": "altera_uflex_ilk"}

#: IP_SETTINGS labels to (parameter, value); None: a setting with no parameter (the
#: comment in the script says why).
_INTEL_SETTINGS: dict[str, dict[str, tuple[str, str] | str]] = {
    "serial_lite_3": {
        "Direction": ("htile_gui_direction", "Duplex"),
        "Number of lanes": ("LANES", "{lanes}"),
        "Clocking mode": ("gui_clocking_mode", "true"),
        "Transceiver PLL": "the Stratix 10 core has no TX PLL of its own; the ATX PLL IP "
                           "below drives tx_serial_clk",
        "FIFO ECC protection": ("gui_ecc_enable", "false"),
    },
    "interlaken": {
        "Mode": "Interlaken mode is the core's default (Look-aside is another parameter "
                "set, not used)",
        "Number of lanes": ("NUM_LANES", "{lanes}"),
        "Number of words": ("INTERNAL_WORDS", "{lanes}"),
        "Number of segments": "no public parameter name found; check one segment in the "
                              "parameter editor",
        "Transfer mode": ("TX_PKTMOD_ONLY", "1"),
        "Number of calendar pages": ("CALENDAR_PAGES", "1"),
        "Transceiver PLL": "the ATX PLL IP below drives tx_serial_clk",
    },
}


def _intel_ip(plan: NodePlan, board: BoardDesc, name: str, ports: list[PortPlan]) -> LinkIp:
    first = ports[0]
    lanes = len(first.lanes)
    family = ip_family(first.phy, board.family)
    refclk_var = f"refclk_mhz({name})"
    table = _INTEL_SETTINGS[first.phy]
    params, notes = [], []
    for label, value in ip_settings(first.phy, family).items():
        if label not in table:
            raise ProjectError(
                f"optnet.plan.ip does not know the Platform Designer parameter of the "
                f"{first.phy} setting '{label}' = '{value}'; add it to _INTEL_SETTINGS.")
        target = table[label]
        if isinstance(target, str):
            notes.append(f"{label} = {value}: {target}.")
            continue
        param, fixed = target
        params.append(IpParam(param, fixed.replace("{lanes}", str(lanes))))
    gxt = _gxt(first, plan.node)
    tile = (board.transceivers.type if board.transceivers else "H-tile").lower()
    voltage = analog_voltage(first.line_rate)
    if first.phy == "serial_lite_3":
        # The user clock the board top's IOPLL makes for the advanced clocking mode, which
        # the IP must be told (it derives the lane rate and core clock from it).
        user_mhz = decimal_text(sl3_user_clock(first.line_rate) / 10**6, 6)
        params += [
            IpParam("gui_xcvr_data_rate", _gbps(first.line_rate)),
            IpParam("gui_pll_ref_freq", f"${refclk_var}", var=True),
            IpParam("gui_transceiver_channel_type", "GXT" if gxt else "GX"),
            IpParam("gui_user_crete_tile", tile.replace("-", "")),
            IpParam("gui_user_clock_frequency", user_mhz),
        ]
        if voltage:
            params.append(IpParam("gui_analog_voltage", voltage))
    else:
        params += [
            IpParam("DATA_RATE_GUI", _gbps(first.line_rate)),
            IpParam("PLL_REFCLK_FREQ", f'"${refclk_var} MHz"', var=True),
        ]
    notes.insert(0, f"{lanes} lane{'s' if lanes > 1 else ''} at {_gbps(first.line_rate)} "
                    f"Gb/s, {user_width_for(first.phy, lanes, family)}-bit user data as the "
                    f"RTL's black box expects.")
    if len(ports) > 1:
        notes.append(f"Shared by ports {', '.join(p.name for p in ports)}.")
    return LinkIp(name, first.phy, _INTEL_COMPONENT[first.phy], family, lanes,
                  first.line_rate, user_width_for(first.phy, lanes, family),
                  _refclk(board, first), refclk_var, _env_name("OPTNET_REFCLK_MHZ", name),
                  tuple(ports), tuple(params), tuple(notes))


def _gxt(port: PortPlan, node: str | None = None) -> bool:
    """Whether the transceiver plan clocks ``port``'s lanes as GXT channels (from its ATX
    PLLs' GXT clock outputs)."""
    placed = port.xcvr.tx_plls if port.xcvr is not None else ()
    if not placed:
        of = f" of node '{node}'" if node else ""
        raise ProjectError(
            f"The transceiver plan gives port {port.name}{of} ({port.phy}) no transmit PLL "
            f"(its board has no transceiver model in optnet.devices.transceivers, or no PLL "
            f"makes its line rate), so its link IP and ATX PLL cannot be configured.")
    return placed[0].gxt


def atx_pll_name(port: PortPlan) -> str:
    """Module name of the ATX PLL the Quartus script generates for ``port``'s link IP:
    ``<ip_name>_atx_pll``, one configuration per link IP (its line rate and reference
    clock). The board top instantiates it (one per two GXT channels) to drive the
    adapter's ``tx_serial_clk`` and ``tx_pll_locked`` pads."""
    return f"{ip_name(port)}_atx_pll"


def atx_pll(ip: LinkIp) -> LinkIp:
    """The ATX PLL IP for Intel link IP ``ip`` (same line rate and reference clock), with
    the output buffer the transceiver plan chose (:class:`~optnet.plan.transceivers.TxPllPlan`)."""
    gxt = _gxt(ip.ports[0])
    params = (
        IpParam("prot_mode", "Basic"),
        IpParam("bw_sel", "high"),
        IpParam("primary_pll_buffer",
                "GXT clock output buffer" if gxt else "GX clock output buffer"),
        IpParam("enable_28G_local_atx_path", "1" if gxt else "0"),
        IpParam("enable_8G_path", "0" if gxt else "1"),
        IpParam("enable_pll_lock", "1"),
        # The serial clock is half the line rate (both edges are used).
        IpParam("set_output_clock_frequency",
                decimal_text(Fraction(ip.line_rate, 2 * 10**6))),
        IpParam("set_auto_reference_clock_frequency", f"${ip.refclk_var}", var=True),
    ) + ((IpParam("usr_analog_voltage", v),) if (v := analog_voltage(ip.line_rate)) else ())
    note = (f"TX PLL of {ip.name}: {'tx_serial_clk_gxt (GXT)' if gxt else 'tx_serial_clk'} at "
            f"{decimal_text(Fraction(ip.line_rate, 2 * 10**6))} MHz.")
    return dataclasses.replace(ip, name=atx_pll_name(ip.ports[0]),
                               component="altera_xcvr_atx_pll_s10_htile", params=params,
                               notes=(note,))


def link_ips(plan: NodePlan, board: BoardDesc) -> list[LinkIp]:
    """The link IP modules of ``plan``'s node, one per :func:`ip_name`, with
    the parameters the vendor script gives them.

    Raises
    ------
    ProjectError
        When ports sharing a module need different cores, a lane has no (or an unknown)
        transceiver site, or a vendor setting cannot be translated.
    """
    ips = []
    for name, ports in _groups(plan, board):
        family = ip_family(ports[0].phy, board.family)
        if family == "virtex5":
            ips.append(_ise_ip(plan, board, name, ports))
        elif family == "stratix10":
            ips.append(_intel_ip(plan, board, name, ports))
        elif ports[0].phy in _VIVADO_COMPONENT:
            ips.append(_xilinx_ip(plan, board, name, ports))
        else:
            raise ProjectError(f"optnet has no Vivado flow for {ports[0].phy} (port "
                               f"{ports[0].name} of node '{plan.node}').")
    return ips


# --------------------------------------------------------------------------- part numbers

_ISE_PART = re.compile(r"^(xc5v[a-z]+\d+t?)([a-z]{2}\d+)(-\d+)$", re.IGNORECASE)


def ise_part(part: str) -> tuple[str, str, str]:
    m = _ISE_PART.fullmatch(part)
    if m is None:
        raise ProjectError(f"'{part}' is not a Virtex-5 part number of the form "
                           f"xc5vlx155tff1136-1 (device, package, speed grade).")
    return m.group(1).lower(), m.group(2).lower(), m.group(3)


@dataclass(frozen=True)
class Ecp5Device:
    """nextpnr-ecp5 options of an ECP5 part number.

    Attributes
    ----------
    device : str
        nextpnr's device option without the dashes (``85k``, ``um-45k``, ``um5g-85k``).
    package : str
        ``CABGA381`` etc.
    speed : int
    """

    device: str
    package: str
    speed: int

    @property
    def args(self) -> tuple[str, ...]:
        """The nextpnr-ecp5 options selecting this device."""
        return (f"--{self.device}", "--package", self.package, "--speed", str(self.speed))


_ECP5_PART = re.compile(
    r"^LFE5(?P<kind>U|UM|UM5G)-(?P<size>12|25|45|85)F-(?P<speed>[678])"
    r"(?P<pkg>BG|MG|TG)(?P<pins>\d+)(?P<grade>[CI])$", re.IGNORECASE)
_ECP5_PACKAGES = {("BG", "256"): "CABGA256", ("BG", "381"): "CABGA381",
                  ("BG", "554"): "CABGA554", ("BG", "756"): "CABGA756",
                  ("MG", "285"): "CSFBGA285", ("TG", "144"): "TQFP144"}


def ecp5_device(part: str) -> Ecp5Device:
    """Device, package and speed grade of ECP5 ``part`` (for example LFE5U-85F-6BG381C) as
    nextpnr-ecp5 options.

    Raises
    ------
    ProjectError
        For a string that is not an ECP5 part number nextpnr knows.
    """
    m = _ECP5_PART.fullmatch(part)
    package = None if m is None else _ECP5_PACKAGES.get((m["pkg"].upper(), m["pins"]))
    if m is None or package is None or (m["size"] == "12" and m["kind"].upper() != "U"):
        raise ProjectError(
            f"'{part}' is not an ECP5 part number nextpnr-ecp5 knows; expected "
            f"LFE5U|LFE5UM|LFE5UM5G-<12|25|45|85>F-<speed 6-8><package BG256|BG381|BG554|"
            f"BG756|MG285|TG144><C|I>, for example LFE5U-85F-6BG381C.")
    prefix = {"U": "", "UM": "um-", "UM5G": "um5g-"}[m["kind"].upper()]
    return Ecp5Device(f"{prefix}{m['size']}k", package, int(m["speed"]))


