"""Vendor project scripts of one node: ``vivado.tcl``, ``ise.tcl``, ``quartus.tcl`` or a
``Makefile`` for the open ECP5 flow, and ``ip.tcl`` (:data:`IP_SCRIPT`), which generates the
IP the RTL instantiates as black boxes.

Each script is self-contained: it finds the node folder from its own location, so it runs
from any working directory and the folder can be copied to the machine with the vendor
tools. It creates the project for the board's part, adds the RTL (never the lint stubs in
``stubs/``: the vendor flow generates the real IP), the constraints, sources ``ip.tcl``,
builds the bitstream and writes a timing report into ``reports/``.

``ip.tcl`` works in the open project of either flow: the vendor script's, or the one Edalize
creates for the ``synth`` target of the node's FuseSoC core, which lists ``ip.tcl`` as a
``tclSource`` file (Edalize's vivado, quartus and ise back ends source those in their
project-creation script, before synthesis). So it names no file of the node folder: the IP
goes into the project (Vivado) or into ``ip/`` in the project's folder, the working
directory (ISE, Quartus). After generating each link IP it reads the generated Verilog of
each module the RTL instantiates (the top, or a tiled Virtex-5 core's tile and lane logic)
and stops the build unless its ports are those of the RTL's black box
(:func:`_expected_modules`, the tables the lint stubs come from) in direction and width,
with no input left out; a module it cannot find stops the build too. CORE Generator's
output layout varies between releases, so the ISE script takes every Verilog file of the
core's folder and finds each module by its declaration.

What each link IP is and how it is configured is planned in :mod:`optnet.plan.ip`
(:func:`~optnet.plan.ip.link_ips`); this module writes it into the scripts. A value the
board file does not give (a reference clock frequency, the init clock) becomes a Tcl
variable at the top of the script that stops the build with a message saying which
environment variable to set, instead of a guess; the same variables override the board's
values (``OPTNET_REFCLK_MHZ_<IP MODULE>``, ``OPTNET_INIT_CLK_MHZ``).

Flows:

- Xilinx 7 series and UltraScale+: ``vivado.tcl`` (project mode, ``launch_runs`` to
  ``write_bitstream``); ``ip.tcl`` runs ``create_ip`` and ``generate_target``.
- Xilinx Virtex-5: Vivado does not support it, so ``ise.tcl`` for ISE 14.7's ``xtclsh``:
  ``ip.tcl`` has CORE Generator make the Aurora 8B/10B v5.2 cores from ``.xco`` files it
  writes, XST to bitgen build the bitstream, trce reports timing. ISE reads UCF, not XDC:
  the script adds ``constraints/*.ucf`` when the node has one and warns otherwise.
- Intel Stratix 10: ``quartus.tcl`` for ``quartus_sh -t`` (Quartus Prime Pro). The link IP,
  an ATX PLL per link IP (:func:`~optnet.plan.ip.atx_pll_name`) and the board top's
  ``optnet_iopll`` (:class:`~optnet.plan.ip.IopllPlan`) are Platform Designer IP variants
  that ``ip.tcl`` makes with ``qsys-script`` and ``qsys-generate``.
- Lattice ECP5: a ``Makefile`` for Yosys, nextpnr-ecp5 and ecppack
  (:func:`~optnet.plan.ip.ecp5_device`).

Contract with the board top (:mod:`optnet.hw.board`): it instantiates the link IP under
:func:`optnet.plan.ip.ip_name`, on Intel boards also ``<ip_name>_atx_pll`` and
``optnet_iopll``, whose settings come from ``clock_plan(plan, board)``
(:func:`optnet.plan.clocks.clock_plan`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import PurePosixPath

from optnet.devices.families import family
from optnet.devices.linkip import VENDOR_PHYS, IpPort, ip_modules
from optnet.emit.env import render_template
from optnet.emit.escape import Raw, tcl_braced
from optnet.plan import NodePlan
from optnet.plan.clocks import IOPLL_MODULE, clock_plan
from optnet.plan.ip import (
    IopllPlan,
    IpParam,
    LinkIp,
    ProjectError,
    atx_pll,
    decimal_text,
    ecp5_device,
    ise_part,
    link_ips,
)
from optnet.spec.models import BoardDesc

__all__ = ["IP_SCRIPT", "project_files"]

#: The node folder's IP script, sourced by the vendor project script and listed in the
#: FuseSoC core's ``synth`` target.
IP_SCRIPT = "ip.tcl"


# The substituting words link IP parameters use: $name, $name(index), "$name(index) MHz".
_VAR_WORD = re.compile(r'\$[A-Za-z_][A-Za-z0-9_]*(\([A-Za-z0-9_]+\))?'
                       r'|"\$[A-Za-z_][A-Za-z0-9_]*(\([A-Za-z0-9_]+\))? MHz"')


def _tcl_word(param: IpParam) -> Raw:
    """The value of ``param`` as one Tcl word: a braced literal (backslash-escaped when
    braces cannot hold it), or the substituting word.

    Raises
    ------
    ProjectError
        For a ``var`` value that substitutes anything but one variable.
    """
    if not param.var:
        return Raw(tcl_braced(param.value), "tcl")
    if not _VAR_WORD.fullmatch(param.value):
        raise ProjectError(f"The value of IP parameter {param.name} substitutes "
                           f"{param.value!r}, which is not one Tcl variable reference.")
    return Raw(param.value, "tcl")


def _mhz(hz: Fraction | float) -> str:
    return decimal_text(Fraction(hz) / 10**6)


# --------------------------------------------------------------------------- files


def _select(files: Iterable[str], folder: str, suffix: str) -> list[str]:
    """Paths in ``folder`` ending in ``suffix``, sorted, as POSIX relative paths."""
    out = []
    for f in files:
        path = PurePosixPath(f)
        if path.parent == PurePosixPath(folder) and path.name.endswith(suffix):
            out.append(str(path))
    return sorted(out)


def _rtl(plan: NodePlan, files: Sequence[str]) -> tuple[list[str], str]:
    """The RTL files (design first, then the board top, then the rest) and the top."""
    rtl = _select(files, "rtl", ".v")
    design, top = f"rtl/{plan.node}.v", f"rtl/{plan.node}_top.v"
    missing = [f for f in (design, top) if f not in rtl]
    if missing:
        raise ProjectError(
            f"The vendor project of node '{plan.node}' needs {' and '.join(missing)} among "
            f"the node's files: the project's top is the board top '{plan.node}_top', which "
            f"instantiates the network module '{plan.node}'.")
    rest = [f for f in rtl if f not in (design, top)]
    return [design, top, *rest], f"{plan.node}_top"


# --------------------------------------------------------------------------- clocks


def _clock_plan(plan: NodePlan, board: BoardDesc) -> IopllPlan:
    """The part of the board top's clock plan (:func:`optnet.plan.clocks.clock_plan`) the
    Quartus script needs."""
    return _as_iopll(clock_plan(plan, board), plan)


def _as_iopll(obj: object, plan: NodePlan) -> IopllPlan:
    # Take the attributes IopllPlan documents and say exactly what is missing otherwise.
    missing = [a for a in ("refclk_hz", "outputs") if not hasattr(obj, a)]
    if missing:
        raise ProjectError(
            f"optnet.plan.clocks.clock_plan returned a {type(obj).__name__} for node "
            f"'{plan.node}' without {' and '.join(missing)}; the Quartus script needs the IOPLL "
            f"reference frequency (refclk_hz) and its outputs ((purpose, Hz) pairs).")
    outputs = obj.outputs
    if isinstance(outputs, dict):
        outputs = tuple(outputs.items())
    return IopllPlan(obj.refclk_hz, tuple((str(n), f) for n, f in outputs),
                     getattr(obj, "init_clk_hz", None))


def _init_clock(board: BoardDesc, clocks: IopllPlan | None) -> tuple[str, str]:
    """Default init clock frequency (MHz, or "" when unknown) and where it comes from.

    The Aurora cores are told the frequency of the free-running clock on ``init_clk``
    (``C_INIT_CLK``, ``DRP_FREQ``). The board top chooses that clock: the clock plan's
    figure when there is one, else the board's ``sys`` clock (or its first clock), which is
    what a top without a PLL would feed.
    """
    if clocks is not None and clocks.init_clk_hz is not None:
        return _mhz(clocks.init_clk_hz), "the board top's clock plan"
    if board.clocks:
        name = "sys" if "sys" in board.clocks else next(iter(board.clocks))
        return (_mhz(board.clocks[name].freq.value),
                f"board clock '{name}' of {board.name} (assumed to drive init_clk)")
    return "", f"nothing: board {board.name} lists no clocks"


# --------------------------------------------------------------------------- scripts


def _expected_modules(ip: LinkIp) -> tuple[tuple[str, tuple[IpPort, ...]], ...]:
    """The modules of link IP ``ip`` that the RTL instantiates, with their ports as its
    black boxes declare them: the tables the adapters instantiate and the lint stubs are
    rendered from (:func:`optnet.emit.stubs.stub_verilog`). The IP scripts check the
    generated modules against them."""
    return tuple((ip.name + suffix, ports) for suffix, ports in ip_modules(
        ip.phy, ip.lanes, ip.family, role=ip.role, quad=ip.quad, qpll=ip.qpll, tiled=ip.tiled))


def _port_tables(ips: Sequence[LinkIp]) -> dict[str, tuple[tuple[str, tuple[IpPort, ...]], ...]]:
    return {ip.name: _expected_modules(ip) for ip in ips}


def _refclk_settings(ips: Sequence[LinkIp], board: BoardDesc) -> list[dict]:
    out = []
    for ip in ips:
        ports = ", ".join(ip.board_ports)
        if ip.refclk_hz is not None:
            source = f"ports.{ports}.refclk of board {board.name}"
        else:
            source = f"unknown: board {board.name} gives no refclk for port {ports}"
        out.append({
            "ip": ip.name,
            "var": ip.refclk_var,
            "env": ip.refclk_env,
            "mhz": "" if ip.refclk_hz is None else _mhz(ip.refclk_hz),
            "source": source,
            "missing": (f"The reference clock frequency (MHz) of {ip.name} (board port "
                        f"{ports}) is not in board file {board.name}.yaml."),
        })
    return out


def _vivado(plan: NodePlan, board: BoardDesc, files: Sequence[str],
            clocks: IopllPlan | None) -> dict[str, str]:
    rtl, top = _rtl(plan, files)
    xdc = _select(files, "constraints", ".xdc")
    if not xdc:
        raise ProjectError(f"Node '{plan.node}' has no constraints/*.xdc; the Vivado project "
                           f"needs the pin and clock constraints.")
    ips = link_ips(plan, board)
    out = {"vivado.tcl": render_template(
        "xilinx/vivado.tcl.j2", node=plan.node, board=board.name, part=board.part, top=top,
        rtl=rtl, xdc=xdc, ip_script=IP_SCRIPT if ips else None)}
    if ips:
        init_mhz, init_source = _init_clock(board, clocks)
        out[IP_SCRIPT] = render_template(
            "xilinx/vivado_ip.tcl.j2", node=plan.node, board=board.name, part=board.part,
            ips=ips, ports=_port_tables(ips), refclks=_refclk_settings(ips, board),
            tcl_word=_tcl_word,
            init_clk={"mhz": init_mhz, "source": init_source,
                      "needed": any(p.var and "$init_clk_mhz" in p.value
                                    for ip in ips for p in ip.params)})
    return out


def _ise(plan: NodePlan, board: BoardDesc, files: Sequence[str]) -> dict[str, str]:
    rtl, top = _rtl(plan, files)
    device, package, speed = ise_part(board.part)
    ips = link_ips(plan, board)
    out = {"ise.tcl": render_template(
        "xilinx/ise.tcl.j2", node=plan.node, board=board.name, part=board.part, top=top,
        device=device, package=package, speed=speed, rtl=rtl,
        ucf=_select(files, "constraints", ".ucf"), xdc=_select(files, "constraints", ".xdc"),
        ip_script=IP_SCRIPT if ips else None)}
    if ips:
        out[IP_SCRIPT] = render_template(
            "xilinx/ise_ip.tcl.j2", node=plan.node, board=board.name, part=board.part,
            device=device, package=package, speed=speed, ips=ips, ports=_port_tables(ips),
            refclks=_refclk_settings(ips, board), tcl_word=_tcl_word)
    return out


def _quartus(plan: NodePlan, board: BoardDesc, files: Sequence[str],
             clocks: IopllPlan | None) -> dict[str, str]:
    rtl, top = _rtl(plan, files)
    qsf = _select(files, "constraints", ".qsf")
    sdc = _select(files, "constraints", ".sdc")
    if not qsf and not sdc:
        raise ProjectError(f"Node '{plan.node}' has no constraints/*.qsf or *.sdc; the "
                           f"Quartus project needs the pin and clock constraints.")
    ips = link_ips(plan, board)
    plls = [atx_pll(ip) for ip in ips]
    iopll = None
    if clocks is not None:
        iopll = [IpParam("gui_operation_mode", "direct"),
                 IpParam("gui_use_locked", "1"),
                 IpParam("gui_reference_clock_frequency", _mhz(clocks.refclk_hz)),
                 IpParam("gui_number_of_clocks", str(len(clocks.outputs)))]
        iopll += [IpParam(f"gui_output_clock_frequency{i}", _mhz(f))
                  for i, (_, f) in enumerate(clocks.outputs)]
    has_ip = bool(ips or iopll)
    quartus_family = family(board.family).quartus
    out = {"quartus.tcl": render_template(
        "intel/quartus.tcl.j2", node=plan.node, board=board.name, part=board.part, top=top,
        family=quartus_family, rtl=rtl, qsf=qsf, sdc=sdc,
        ip_script=IP_SCRIPT if has_ip else None)}
    if has_ip:
        out[IP_SCRIPT] = render_template(
            "intel/quartus_ip.tcl.j2", node=plan.node, board=board.name, part=board.part,
            family=quartus_family, ips=ips, plls=plls, ports=_port_tables(ips),
            refclks=_refclk_settings(ips, board), iopll=iopll, iopll_name=IOPLL_MODULE,
            tcl_word=_tcl_word,
            iopll_outputs=[] if clocks is None else [
                (i, purpose, _mhz(f)) for i, (purpose, f) in enumerate(clocks.outputs)])
    return out


def _makefile(plan: NodePlan, board: BoardDesc, files: Sequence[str]) -> dict[str, str]:
    rtl, top = _rtl(plan, files)
    lpf = _select(files, "constraints", ".lpf")
    if not lpf:
        raise ProjectError(f"Node '{plan.node}' has no constraints/*.lpf; nextpnr-ecp5 needs "
                           f"the pin constraints.")
    vendor = [p.name for p in plan.ports if p.phy in VENDOR_PHYS]
    if vendor:
        raise ProjectError(f"Node '{plan.node}' is a Lattice board but ports "
                           f"{', '.join(vendor)} use vendor link IP, which the open flow "
                           f"cannot build.")
    dev = ecp5_device(board.part)
    text = render_template(
        "lattice/Makefile.j2", node=plan.node, board=board.name, part=board.part, top=top,
        rtl=rtl, lpf=lpf, device=dev, nextpnr=dev.args,
        freq=decimal_text(Fraction(plan.clock_hz) / 10**6, 6))
    return {"Makefile": text}


def project_files(plan: NodePlan, board: BoardDesc, files: list[str], *,
                  clocks: IopllPlan | None = None) -> dict[str, str]:
    """The vendor project files of one node.

    Parameters
    ----------
    plan : NodePlan
    board : BoardDesc
        The node's board (its part, transceiver sites, reference clocks and clocks).
    files : list of str
        The node folder's files as POSIX paths relative to it (``rtl/<node>.v``,
        ``rtl/<node>_top.v``, ``constraints/...``, ...). Only ``rtl/*.v`` and the
        constraints are used; ``stubs/`` never enter a vendor project.
    clocks : IopllPlan, optional
        The Intel board top's IOPLL settings; by default taken from
        :func:`optnet.plan.clocks.clock_plan`.

    Returns
    -------
    dict of str to str
        Relative path to text: ``vivado.tcl`` (Xilinx 7 series and UltraScale+),
        ``ise.tcl`` (Virtex-5, which Vivado does not support), ``quartus.tcl`` (Intel) or
        ``Makefile`` (Lattice ECP5, Yosys + nextpnr + ecppack); with the vendor scripts,
        :data:`IP_SCRIPT` when the node has IP to generate.

    Raises
    ------
    ProjectError
        With the reason the project cannot be generated (missing RTL or constraints, an
        unknown part or transceiver site, ports that cannot share an IP).
    """
    # The init clock the Aurora cores are told of is the one the board top feeds them.
    if clocks is None and board.vendor in ("intel", "xilinx"):
        clocks = _clock_plan(plan, board)
    if board.vendor == "xilinx":
        if board.family == "virtex5":
            return _ise(plan, board, files)
        return _vivado(plan, board, files, clocks)
    if board.vendor == "intel":
        return _quartus(plan, board, files, clocks)
    if board.vendor == "lattice" and board.family == "ecp5":
        return _makefile(plan, board, files)
    raise ProjectError(f"optnet has no project flow for {board.vendor} {board.family} "
                       f"(board '{board.name}').")
