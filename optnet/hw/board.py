"""The board top: one node's network on its FPGA's pins.

:class:`BoardTop` wraps the network module that :class:`~optnet.hw.top.NodeTop` lowers to
(instantiated as a black box by its module name, ``plan.node``) in the clocking, reset,
status and pin logic of one board, so that its ports are FPGA pins only and a vendor tool
can take ``<node>_top`` to a bitstream. What it needs from the board is planned here, as
data, before any hardware is built:

* :func:`clock_plan` picks the board clock and computes the PLL (or MMCM) settings for
  every clock the node needs: the network clock, the link adapters' init clock, the LVDS
  transmit clocks, the Virtex-5 Aurora user clocks, the SerialLite III user clock and the
  Intel transceiver PLLs. The result, :class:`ClockPlan`, is what the report prints and
  what the Quartus project script generates ``optnet_iopll`` from.
* :func:`top_ports` lists the board top's ports and the board-file pin of every bit;
  :class:`BoardTop` takes its ports from there, and the constraint emitter
  (:mod:`optnet.emit.constraints`) its pin assignments, so the two cannot disagree.
* :func:`clock_constraints` gives the clocks to create and the clock groups that are
  asynchronous to each other.

Clocking rules
--------------
*Board clock.* The board clock whose frequency equals the network clock; else the one
named ``sys``; else the first in the board file. A board file that lists no clock (the
BEE3, the Alpha Data card and the OPTWEB card: their clock pins are not public) gets a
``clk_ref`` port without a pin, assumed to run at the network clock frequency; the
constraint files say so where the pin would be.

*Init clock.* The free-running clock of the vendor link adapters (Aurora's ``init_clk``,
also the 7-series DRP clock; SerialLite III's and Interlaken's management clock) is the
buffered board clock when that lies in the range every adapter of the node accepts
(:data:`INIT_RANGES`), otherwise a 100 MHz PLL output.

*PLL outputs.* The network clock is the first output (the fractional ``CLKOUT0`` of an
MMCM, ``CLKOP`` of an ECP5 PLL); then the init clock, one output per distinct LVDS line
rate (``clk_in`` of :class:`~optnet.hw.phy.lvds.LvdsPhy`: half the line rate, one bit per
pair on each clock edge) and, on Intel, one per distinct SerialLite III user clock. An
output that may not exceed its request (LVDS: the line rate; SerialLite III: what the
lanes carry) is rounded down, the others to the nearest reachable frequency. Settings
are searched exhaustively over the primitive's divider ranges within its datasheet
limits (:data:`PLL_LIMITS`). A setting works when every output is within
:data:`TOLERANCE` of its request (within :data:`AT_MOST_TOLERANCE` below an ``at_most``
one); of those, the one with the smallest summed relative error is taken, then the
family's preference (see :func:`solve_pll`). When none works, :class:`PllError` says
why, naming the board and the clock. The achieved frequencies are in the plan.

*Link adapter clocks.* Virtex-5 Aurora cores take their user and sync clocks from a
``PLL_BASE`` per group of ports sharing a reference clock and line rate, fed by one
GTP's ``TX_OUT_CLK`` (the core's example clock module). Intel SerialLite III and
Interlaken ports get their serial clocks from ATX PLL IP (:class:`TxPllSettings`).

Reset
-----
A power-on reset counter in the board clock's domain starts when the FPGA is configured
and restarts while the PLL is unlocked; it holds :data:`POR_CYCLES` board-clock cycles
after lock. Its output resets the link adapters (which synchronise it themselves) and,
through an :class:`~amaranth.lib.cdc.ResetSynchronizer` per domain, the network and the
LVDS transmit domains.

Status LEDs
-----------
With ``n`` LEDs in the board file: LED 0 is a heartbeat (the network clock divided down to
about 1 Hz; it flickers while an endpoint receives data, see :func:`attach_endpoint`);
LED ``n-1`` (when ``n >= 3``) lights once the router has dropped a packet
(``dropped != 0``); the LEDs between show ``link_up``, one per link in router port order,
the last of them the AND of all remaining links (with two LEDs, LED 1 is "all links
up"). Besides showing the state, the LEDs keep the network observable, so vendor
synthesis does not trim it away.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from amaranth.hdl import (
    Cat,
    ClockDomain,
    ClockSignal,
    Const,
    Instance,
    Module,
    ResetSignal,
    Signal,
    Value,
)
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer, ResetSynchronizer
from amaranth.lib.wiring import In, Out

from optnet.hw.endpoint import axis_rx_layout, axis_tx_layout
from optnet.hw.top import ip_name
from optnet.plan import NodePlan
from optnet.spec.models import BoardDesc

__all__ = [
    "AT_MOST_TOLERANCE",
    "INIT_RANGES",
    "IOPLL_MODULE",
    "NET_INSTANCE",
    "PLL_LIMITS",
    "POR_CYCLES",
    "TOLERANCE",
    "BoardTop",
    "ClockConstraint",
    "ClockGroup",
    "ClockOutput",
    "ClockPlan",
    "ClockRef",
    "ClockRequest",
    "IopllSettings",
    "PinAssignment",
    "PllError",
    "PllLimits",
    "PllSetting",
    "TopPort",
    "TxPllSettings",
    "attach_endpoint",
    "board_pins",
    "clock_constraints",
    "clock_plan",
    "constraint_format",
    "network_ports",
    "pll_kind",
    "refclk_port_name",
    "sl3_user_clock",
    "solve_pll",
    "speed_grade",
    "top_ports",
]

MHZ = 1_000_000

#: Largest relative difference between a PLL output and its request that still counts as
#: reaching it (1 %): enough for every rounding a real clock plan needs, small enough that
#: a clock the PLL cannot really make is reported rather than silently replaced.
TOLERANCE = Fraction(1, 100)

#: How far below its request an ``at_most`` output may fall (10 %). Such a clock sets a
#: link's transmit rate, so a slower one only costs bandwidth (OPTWEB ran its SerialLite III
#: user clock at 355 MHz, 5 % under what its 25 Gb/s lanes could carry).
AT_MOST_TOLERANCE = Fraction(1, 10)

#: Board-clock cycles the power-on reset is held after the PLL locks.
POR_CYCLES = 1024

#: Module name of the Intel IOPLL IP the Quartus project script generates (see
#: :class:`IopllSettings`).
IOPLL_MODULE = "optnet_iopll"

#: Frequencies (Hz, inclusive) the free-running init/management clock of each vendor link
#: adapter may run at. Aurora: the example designs run ``init_clk`` (on 7 series also the
#: DRP clock) at 50 to 125 MHz (PG046/PG074 "Clocking"); SerialLite III: the 100 to 125 MHz
#: PHY management clock (UG-683330 Table 27); Interlaken: the 100 MHz management and
#: reconfiguration clock (UG-683396 Table 21).
INIT_RANGES: dict[str, tuple[int, int]] = {
    "aurora_8b10b": (50 * MHZ, 125 * MHZ),
    "aurora_64b66b": (50 * MHZ, 125 * MHZ),
    "serial_lite_3": (100 * MHZ, 125 * MHZ),
    "interlaken": (100 * MHZ, 100 * MHZ),
}

#: Init clock made by the PLL when the board clock is out of range.
_INIT_HZ = Fraction(100 * MHZ)

#: SerialLite III metaframe length (words), the IP's default (UG-683330, "Transmission
#: Overheads and Lane Rate Calculations").
_SL3_METAFRAME = 8191


class PllError(ValueError):
    """No PLL setting makes the clocks a board top needs; the message says which and why."""


# ------------------------------------------------------------------------------ PLL limits


@dataclass(frozen=True)
class PllLimits:
    """What a PLL primitive can do: datasheet ranges and divider ranges.

    Frequencies are in Hz, ranges inclusive. ``multiply_step`` and ``out0_step`` are the
    resolution of the feedback multiplier and of output 0 (1/8 for an MMCM's fractional
    ``CLKFBOUT_MULT_F`` and ``CLKOUT0_DIVIDE_F``, 1 elsewhere).

    Attributes
    ----------
    kind : str
        Primitive (``MMCME2_BASE``, ``MMCME4_BASE``, ``PLL_BASE``, ``EHXPLLL``) or IP
        (``IOPLL``).
    source : str
        Where the figures come from.
    fin, pfd, vco, fout : tuple of int
    divide, multiply, out_divide : tuple of int
        Input divider (D, ``CLKI_DIV``, N), feedback multiplier (M, ``CLKFB_DIV``) and
        output divider (O, ``CLKOP_DIV``, C) ranges.
    outputs : tuple of str
        Output pins, in the order the requests take them.
    """

    kind: str
    source: str
    fin: tuple[int, int]
    pfd: tuple[int, int]
    vco: tuple[int, int]
    fout: tuple[float, int]
    divide: tuple[int, int]
    multiply: tuple[int, int]
    out_divide: tuple[int, int]
    outputs: tuple[str, ...]
    multiply_step: Fraction = Fraction(1)
    out0_step: Fraction = Fraction(1)


def _mmcme2(grade: int) -> PllLimits:
    # The -1, -2 and -3 columns of the MMCM switching characteristics; -1L/-2L parts use
    # the column of their number. Unknown grades get the -1 (slowest) figures.
    g = grade if grade in (1, 2, 3) else 1
    return PllLimits(
        kind="MMCME2_BASE",
        source=("DS181/DS182/DS183 (Artix-7, Kintex-7, Virtex-7) and DS187/DS191 (Zynq-7000) "
                "data sheets, MMCM switching characteristics: MMCM_FINMIN/FINMAX 10 MHz to "
                "800/933/1066 MHz, MMCM_FPFDMIN/FPFDMAX 10 to 450/500/550 MHz, "
                "MMCM_FVCOMIN/FVCOMAX 600 to 1200/1440/1600 MHz, MMCM_FOUTMIN/FOUTMAX 4.69 "
                "to 800/933/1066 MHz for speed grades -1/-2/-3; UG472 7 Series Clocking "
                "Resources, MMCM attributes: DIVCLK_DIVIDE 1-106, CLKFBOUT_MULT_F 2.000-"
                "64.000 and CLKOUT0_DIVIDE_F 1-128 in steps of 0.125, CLKOUT1-6 1-128"),
        fin=(10 * MHZ, {1: 800, 2: 933, 3: 1066}[g] * MHZ),
        pfd=(10 * MHZ, {1: 450, 2: 500, 3: 550}[g] * MHZ),
        vco=(600 * MHZ, {1: 1200, 2: 1440, 3: 1600}[g] * MHZ),
        fout=(4.69 * MHZ, {1: 800, 2: 933, 3: 1066}[g] * MHZ),
        divide=(1, 106), multiply=(2, 64), out_divide=(1, 128),
        outputs=tuple(f"CLKOUT{i}" for i in range(7)),
        multiply_step=Fraction(1, 8), out0_step=Fraction(1, 8))


def _mmcme4(grade: int) -> PllLimits:
    return PllLimits(
        kind="MMCME4_BASE",
        source=("DS922/DS923/DS925 (Kintex UltraScale+, Virtex UltraScale+, Zynq UltraScale+) "
                "data sheets, MMCM switching characteristics: MMCM_FINMIN/FINMAX 10 to 800 "
                "MHz, MMCM_FPFDMIN/FPFDMAX 10 to 550 MHz, MMCM_FVCOMIN/FVCOMAX 800 to 1600 "
                "MHz, MMCM_FOUTMAX 891 MHz; UG572 UltraScale Clocking Resources, MMCM "
                "attributes: DIVCLK_DIVIDE 1-106, CLKFBOUT_MULT_F 2.000-128.000 and "
                "CLKOUT0_DIVIDE_F 1-128 in steps of 0.125, CLKOUT1-6 1-128"),
        fin=(10 * MHZ, 800 * MHZ), pfd=(10 * MHZ, 550 * MHZ), vco=(800 * MHZ, 1600 * MHZ),
        fout=(6.25 * MHZ, 891 * MHZ), divide=(1, 106), multiply=(2, 128),
        out_divide=(1, 128), outputs=tuple(f"CLKOUT{i}" for i in range(7)),
        multiply_step=Fraction(1, 8), out0_step=Fraction(1, 8))


def _pll_base_v5(grade: int) -> PllLimits:
    # Only the -1 column is used, whatever the grade: a -1 setting is valid on faster
    # silicon, and both Virtex-5 boards in the library are -1 parts.
    return PllLimits(
        kind="PLL_BASE",
        source=("DS202 Virtex-5 FPGA Data Sheet, PLL switching characteristics, -1 speed "
                "grade (used for every grade): PLL_FINMIN/FINMAX 19 to 645 MHz, "
                "PLL_FPFDMIN/FPFDMAX 19 to 450 MHz, PLL_FVCOMIN/FVCOMAX 400 to 1000 MHz, "
                "PLL_FOUTMIN/FOUTMAX 3.125 to 710 MHz; UG190 Virtex-5 FPGA User Guide, PLL "
                "attributes: DIVCLK_DIVIDE 1-52, CLKFBOUT_MULT 1-64, CLKOUTn_DIVIDE 1-128"),
        fin=(19 * MHZ, 645 * MHZ), pfd=(19 * MHZ, 450 * MHZ), vco=(400 * MHZ, 1000 * MHZ),
        fout=(3.125 * MHZ, 710 * MHZ), divide=(1, 52), multiply=(1, 64),
        out_divide=(1, 128), outputs=tuple(f"CLKOUT{i}" for i in range(6)))


def _ehxplll(grade: int) -> PllLimits:
    return PllLimits(
        kind="EHXPLLL",
        source=("prjtrellis libtrellis/tools/ecppll.cpp (INPUT 8-400 MHz, PFD 3.125-400 MHz, "
                "VCO 400-800 MHz, OUTPUT 10-400 MHz; f_pfd = f_in / CLKI_DIV, f_vco = f_pfd "
                "x CLKFB_DIV x CLKOP_DIV with feedback from CLKOP); Lattice FPGA-TN-02200 "
                "ECP5 and ECP5-5G sysCLOCK PLL/DCS/DCC Usage Guide (CLKI_DIV 1-128, "
                "CLKFB_DIV 1-80 as ecppll searches, CLKOP/CLKOS/CLKOS2/CLKOS3_DIV 1-128)"),
        fin=(8 * MHZ, 400 * MHZ), pfd=(3125000, 400 * MHZ), vco=(400 * MHZ, 800 * MHZ),
        fout=(10 * MHZ, 400 * MHZ), divide=(1, 128), multiply=(1, 80), out_divide=(1, 128),
        outputs=("CLKOP", "CLKOS", "CLKOS2", "CLKOS3"))


def _iopll_s10(grade: int) -> PllLimits:
    return PllLimits(
        kind="IOPLL",
        source=("Intel Stratix 10 Device Datasheet (683181), I/O PLL specifications: fIN 10 "
                "to 800 MHz, fINPFD 10 to 325 MHz, fVCO 600 to 1600 MHz, fOUT up to 1100 "
                "MHz; Stratix 10 Clocking and PLL User Guide (683195) 2.2.6: output = "
                "f_in x M / (N x C); M 4-160, N 1-110, C 1-510. Quartus recomputes the "
                "counters from the frequencies in IopllSettings"),
        fin=(10 * MHZ, 800 * MHZ), pfd=(10 * MHZ, 325 * MHZ), vco=(600 * MHZ, 1600 * MHZ),
        fout=(1 * MHZ, 1100 * MHZ), divide=(1, 110), multiply=(4, 160), out_divide=(1, 510),
        outputs=tuple(f"outclk_{i}" for i in range(9)))


_7SERIES = frozenset({"virtex7", "kintex7", "artix7", "spartan7", "zynq7000", "zynq7",
                      "7series"})
_ULTRASCALE_PLUS = frozenset({"ultrascale_plus", "zynq_ultrascale_plus", "virtex_ultrascale_plus",
                              "kintex_ultrascale_plus"})

#: Limits of each PLL kind, as a function of the speed grade.
PLL_LIMITS = {
    "MMCME2_BASE": _mmcme2,
    "MMCME4_BASE": _mmcme4,
    "PLL_BASE": _pll_base_v5,
    "EHXPLLL": _ehxplll,
    "IOPLL": _iopll_s10,
}


def pll_kind(board: BoardDesc) -> str:
    """The PLL primitive (or IP) the board top uses on ``board``'s family.

    Raises
    ------
    PllError
        For a family optnet has no PLL model for.
    """
    family = board.family
    if board.vendor == "xilinx":
        if family in _7SERIES:
            return "MMCME2_BASE"
        if family in _ULTRASCALE_PLUS:
            return "MMCME4_BASE"
        if family == "virtex5":
            return "PLL_BASE"
    elif board.vendor == "lattice" and family == "ecp5":
        return "EHXPLLL"
    elif board.vendor == "intel" and family == "stratix10":
        return "IOPLL"
    raise PllError(f"Board '{board.name}' is a {board.vendor} {family} part, for which optnet "
                   f"has no PLL model; it knows 7-series and UltraScale+ MMCMs, the "
                   f"Virtex-5 PLL, the ECP5 EHXPLLL and the Stratix 10 IOPLL.")


def speed_grade(part: str) -> int:
    """The speed grade number of a Xilinx part name (``xc7vx485tffg1761-2`` -> 2,
    ``xcvu9p-flga2104-2L-e`` -> 2); 1, the slowest, when the name has none."""
    for token in part.split("-")[1:]:
        m = re.match(r"(\d)", token)
        if m:
            return int(m.group(1))
    return 1


# --------------------------------------------------------------------------- PLL solving


@dataclass(frozen=True)
class ClockRequest:
    """A clock a PLL output must make.

    Attributes
    ----------
    name : str
        Role: ``net``, ``init``, ``lvds<k>``, ``sl3<k>``, ``user``, ``sync``.
    hz : Fraction
    at_most : bool
        The output may be slower but not faster than ``hz`` (a transmit clock that sets a
        line rate); otherwise the nearest reachable frequency is taken.
    """

    name: str
    hz: Fraction
    at_most: bool = False


@dataclass(frozen=True)
class ClockOutput:
    """One PLL output: what was asked, what the setting gives."""

    name: str
    pin: str
    requested_hz: Fraction
    achieved_hz: Fraction
    divide: Fraction
    at_most: bool = False

    @property
    def error(self) -> Fraction:
        """Relative difference of the achieved from the requested frequency."""
        return abs(self.achieved_hz - self.requested_hz) / self.requested_hz

    @property
    def tolerance(self) -> Fraction:
        """The error allowed: :data:`AT_MOST_TOLERANCE` for an ``at_most`` output,
        :data:`TOLERANCE` otherwise."""
        return AT_MOST_TOLERANCE if self.at_most else TOLERANCE


@dataclass(frozen=True)
class PllSetting:
    """A computed PLL setting.

    ``pfd_hz = input_hz / divide`` and ``vco_hz = pfd_hz * multiply`` for every kind but
    ``EHXPLLL``, whose feedback runs through ``CLKOP``: there ``vco_hz = pfd_hz *
    multiply * CLKOP_DIV``. Each output's ``achieved_hz`` is ``vco_hz / divide``.

    Attributes
    ----------
    kind : str
    instance : str
        Instance name in the board top.
    input_hz : Fraction
    divide : int
    multiply : Fraction
    pfd_hz, vco_hz : Fraction
    outputs : tuple of ClockOutput
    parameters : dict
        The primitive's parameters as the instance sets them (for ``IOPLL``, the counters
        the search found; Quartus computes its own from the frequencies).
    limits : PllLimits
    """

    kind: str
    instance: str
    input_hz: Fraction
    divide: int
    multiply: Fraction
    pfd_hz: Fraction
    vco_hz: Fraction
    outputs: tuple[ClockOutput, ...]
    parameters: dict = field(compare=False)
    limits: PllLimits = field(compare=False)

    def output(self, name: str) -> ClockOutput:
        """The output made for request ``name``."""
        for out in self.outputs:
            if out.name == name:
                return out
        raise KeyError(name)


def _mhz(hz: Fraction | float) -> str:
    return f"{float(hz) / MHZ:.6g} MHz"


def _grid(lo: Fraction, hi: Fraction, step: Fraction) -> range:
    """Indices k with lo <= k * step <= hi."""
    return range(math.ceil(lo / step), math.floor(hi / step) + 1)


def _pick_divider(vco: Fraction, req: ClockRequest, step: Fraction,
                  limits: PllLimits) -> Fraction | None:
    """The output divider (a multiple of ``step`` in the limits' range) that gives the
    frequency nearest ``req`` (ties: the slower), or the fastest not above it."""
    # Exact, in integers: the search calls this thousands of times per clock plan, and the
    # same comparisons on Fractions made a plan cost a third of a second.
    vn, vd = vco.numerator, vco.denominator
    hn, hd = req.hz.numerator, req.hz.denominator
    tn, td = step.numerator, step.denominator
    # Dividers j * step with j in [jlo, jhi]; j * step gives vco * td / (j * tn).
    jlo = -(-limits.out_divide[0] * td // tn)
    jhi = limits.out_divide[1] * td // tn
    num, den = vn * hd * td, vd * hn * tn        # vco / (req * step)
    down = max(jlo, min(jhi, num // den))
    up = max(jlo, min(jhi, -(-num // den)))
    if req.at_most:
        # vco / (up * step) <= req
        choices = [up] if vn * hd * td <= hn * vd * up * tn else []
    elif down == up:
        choices = [down]
    else:
        # |vco / (j * step) - req| is |vn*td*hd - hn*vd*tn*j| / (vd*tn*hd*j): compare
        # the two errors across their denominators; a tie goes to the larger divider.
        e_down, e_up = abs(num - den * down), abs(num - den * up)
        choices = [down, up] if e_down * up < e_up * down else [up, down]
    fmin, fmax = Fraction(limits.fout[0]), Fraction(limits.fout[1])
    for j in choices:
        # A fractional divider below 2 does not exist (CLKOUT0_DIVIDE_F is 1 or 2.000-128.000).
        if (j * tn) % td and j * tn < 2 * td:
            continue
        # fmin <= vco * td / (j * tn) <= fmax
        out_n, out_d = vn * td, vd * j * tn
        if fmin.numerator * out_d <= out_n * fmin.denominator and \
                out_n * fmax.denominator <= fmax.numerator * out_d:
            return Fraction(j * tn, td)
    return None


def solve_pll(kind: str, input_hz: Fraction | int, requests: Sequence[ClockRequest], *,
              grade: int = 1, instance: str = "pll", board: str = "?",
              clock: str = "?") -> PllSetting:
    """Compute a ``kind`` PLL setting making ``requests`` from ``input_hz``.

    Every setting within the primitive's limits (:data:`PLL_LIMITS`) is considered. The
    chosen one keeps every output within its tolerance (:data:`TOLERANCE`, or
    :data:`AT_MOST_TOLERANCE` below an ``at_most`` request) if any does, and has the
    smallest sum of relative output errors among those; ties go to the family's
    preference: for ``EHXPLLL`` the VCO nearest 600 MHz and then the first in
    ecppll's search order (smallest ``CLKI_DIV``, ``CLKFB_DIV``, ``CLKOP_DIV``), which
    makes the result ecppll's for a single output; for the others the smallest input
    divider (highest phase-detector frequency), then the highest VCO, then the smallest
    multiplier. Request 0 gets output 0 (the MMCM's fractional ``CLKOUT0``; for
    ``EHXPLLL``, ``CLKOP``, which closes the feedback loop).

    ``EHXPLLL`` dividers follow ecppll: ``CLKOP_CPHASE = CLKOP_DIV // 2`` and
    ``CLKOP_FPHASE = 0`` (ecppll shifts the primary by 180 degrees, as Lattice's tool
    does), secondary outputs at 0 degrees get ``CLKOSn_CPHASE = CLKOP_CPHASE``,
    ``CLKOSn_FPHASE = 0``. Unlike ecppll, which truncates, a secondary divider is rounded
    to the nearest frequency (down for ``at_most`` requests).

    Parameters
    ----------
    kind : str
        A key of :data:`PLL_LIMITS`.
    input_hz : Fraction or int
    requests : sequence of ClockRequest
    grade : int
        Speed grade (Xilinx 7 series).
    instance : str
        Instance name recorded in the result.
    board, clock : str
        Board and input clock names, for the error message.

    Returns
    -------
    PllSetting

    Raises
    ------
    PllError
        When the input is out of range, there are more requests than outputs, or no
        setting brings every output within its tolerance.
    """
    limits = PLL_LIMITS[kind](grade)
    fin = Fraction(input_hz)
    where = f"board '{board}'"
    if not limits.fin[0] <= fin <= limits.fin[1]:
        raise PllError(
            f"The {kind} on {where} cannot take its {_mhz(fin)} input clock '{clock}': it "
            f"accepts {_mhz(limits.fin[0])} to {_mhz(limits.fin[1])}.")
    if len(requests) > len(limits.outputs):
        raise PllError(
            f"The {kind} on {where} has {len(limits.outputs)} outputs, but the board top "
            f"needs {len(requests)} clocks from clock '{clock}' "
            f"({', '.join(r.name for r in requests)}).")
    if not requests:
        raise PllError(f"No clock was requested from the {kind} on {where}.")
    best = _search(kind, grade, fin, tuple(requests))
    if best is None:
        raise PllError(
            f"No {kind} setting on {where} makes "
            + ", ".join(f"'{r.name}' at {'at most ' if r.at_most else ''}{_mhz(r.hz)}"
                        for r in requests)
            + f" from the {_mhz(fin)} clock '{clock}' within the primitive's limits (VCO "
            f"{_mhz(limits.vco[0])} to {_mhz(limits.vco[1])}, outputs {_mhz(limits.fout[0])} "
            f"to {_mhz(limits.fout[1])}).")
    setting = _setting(kind, limits, fin, requests, best, instance)
    for out in setting.outputs:
        if out.error > out.tolerance:
            others = [o for o in setting.outputs if o is not out]
            raise PllError(
                f"No {kind} setting on {where} makes clock '{out.name}' at "
                f"{'at most ' if out.at_most else ''}{_mhz(out.requested_hz)} from the "
                f"{_mhz(fin)} clock '{clock}'"
                + (f" together with {', '.join(o.name for o in others)}" if others else "")
                + f": the best setting gives {_mhz(out.achieved_hz)}, more than "
                f"{float(out.tolerance):.0%} off.")
    return setting


def _score(vco: Fraction, divs: Sequence[Fraction], requests: Sequence[ClockRequest]
           ) -> tuple[Fraction, Fraction]:
    """(how far the worst output is outside its tolerance, as a multiple of it, or 1 when
    every output is within; the sum of relative errors): smaller is better."""
    worst, total = Fraction(1), Fraction(0)
    for d, r in zip(divs, requests, strict=True):
        err = abs(vco / d - r.hz) / r.hz
        total += err
        worst = max(worst, err / (AT_MOST_TOLERANCE if r.at_most else TOLERANCE))
    return worst, total


def _rough_score(vco: float, divs: Sequence[Fraction], requests: Sequence[ClockRequest]
                 ) -> tuple[float, float]:
    """:func:`_score` in floating point, to pass over the settings clearly worse than the
    best so far without computing their exact score."""
    worst, total = 1.0, 0.0
    for d, r in zip(divs, requests, strict=True):
        hz = float(r.hz)
        err = abs(vco / float(d) - hz) / hz
        total += err
        worst = max(worst, err / float(AT_MOST_TOLERANCE if r.at_most else TOLERANCE))
    return worst, total


#: Relative margin for :func:`_clearly_worse`, far above the rounding error of a few float
#: operations (about 1e-15) and far below any real difference between two settings.
_ROUGH = 1e-9


def _clearly_worse(rough: tuple[float, float], best: tuple[float, float] | None) -> bool:
    """Whether a setting whose rough score is ``rough`` is certainly worse than the best so
    far (rough score ``best``); when unsure, the exact score decides. (The worst-output
    term is exactly 1.0 for every setting within tolerance, the only ones a plan accepts,
    so near-ties there are decided exactly too.)"""
    if best is None:
        return False
    if rough[0] > best[0] * (1 + _ROUGH):
        return True
    return rough[0] >= best[0] * (1 - _ROUGH) and rough[1] > best[1] * (1 + _ROUGH) + _ROUGH


@functools.lru_cache(maxsize=256)
def _search(kind: str, grade: int, fin: Fraction, requests: tuple[ClockRequest, ...]):
    """The best (divide, multiply, vco, output dividers), or None; cached, since every
    emitter of a node asks for the same clock plan."""
    limits = PLL_LIMITS[kind](grade)
    if kind == "EHXPLLL":
        return _search_ecp5(limits, fin, requests)
    return _search_vco(limits, fin, requests)


def _search_vco(limits: PllLimits, fin: Fraction, requests: Sequence[ClockRequest]):
    best, best_key, best_rough = None, None, None
    vlo, vhi = Fraction(limits.vco[0]), Fraction(limits.vco[1])
    step = limits.multiply_step
    for d in range(limits.divide[0], limits.divide[1] + 1):
        pfd = fin / d
        if pfd < limits.pfd[0]:
            break
        if pfd > limits.pfd[1]:
            continue
        mlo = max(Fraction(limits.multiply[0]), vlo / pfd)
        mhi = min(Fraction(limits.multiply[1]), vhi / pfd)
        for k in _grid(mlo, mhi, step):
            mult = k * step
            vco = pfd * mult
            divs = []
            for i, req in enumerate(requests):
                div = _pick_divider(vco, req, limits.out0_step if i == 0 else Fraction(1),
                                    limits)
                if div is None:
                    break
                divs.append(div)
            else:
                rough = _rough_score(float(vco), divs, requests)
                if _clearly_worse(rough, best_rough):
                    continue
                key = (*_score(vco, divs, requests), d, -vco, mult)
                if best_key is None or key < best_key:
                    best, best_key, best_rough = (d, mult, vco, tuple(divs)), key, rough
    return best


def _search_ecp5(limits: PllLimits, fin: Fraction, requests: Sequence[ClockRequest]):
    # ecppll's loop: CLKI_DIV, CLKFB_DIV, CLKOP_DIV; CLKOP = f_pfd * CLKFB_DIV is request 0.
    best, best_key, best_rough = None, None, None
    primary, rest = requests[0], requests[1:]
    for ref_div in range(limits.divide[0], limits.divide[1] + 1):
        pfd = fin / ref_div
        if pfd < limits.pfd[0]:
            break
        if pfd > limits.pfd[1]:
            continue
        for fb_div in range(limits.multiply[0], limits.multiply[1] + 1):
            fop = pfd * fb_div
            if not limits.fout[0] <= fop <= limits.fout[1]:
                continue
            if primary.at_most and fop > primary.hz:
                continue
            lo = max(limits.out_divide[0], math.ceil(limits.vco[0] / fop))
            hi = min(limits.out_divide[1], math.floor(limits.vco[1] / fop))
            for op_div in range(lo, hi + 1):
                vco = fop * op_div
                divs = [Fraction(op_div)]
                for req in rest:
                    div = _pick_divider(vco, req, Fraction(1), limits)
                    if div is None:
                        break
                    divs.append(div)
                else:
                    rough = _rough_score(float(vco), divs, requests)
                    if _clearly_worse(rough, best_rough):
                        continue
                    key = (*_score(vco, divs, requests), abs(vco - 600 * MHZ))
                    if best_key is None or key < best_key:
                        best, best_key = (ref_div, Fraction(fb_div), vco, tuple(divs)), key
                        best_rough = rough
    return best


def _setting(kind: str, limits: PllLimits, fin: Fraction, requests: Sequence[ClockRequest],
             best: tuple, instance: str) -> PllSetting:
    d, mult, vco, divs = best
    outputs = tuple(
        ClockOutput(r.name, limits.outputs[i], r.hz, vco / div, div, r.at_most)
        for i, (r, div) in enumerate(zip(requests, divs, strict=True)))
    period_ns = float(Fraction(10**9) / fin)
    params: dict[str, object] = {}
    if kind in ("MMCME2_BASE", "MMCME4_BASE"):
        params.update({
            "BANDWIDTH": "OPTIMIZED",
            "CLKIN1_PERIOD": round(period_ns, 3),
            "DIVCLK_DIVIDE": d,
            "CLKFBOUT_MULT_F": float(mult),
            "STARTUP_WAIT": "FALSE",
        })
        for i, out in enumerate(outputs):
            key = "CLKOUT0_DIVIDE_F" if i == 0 else f"CLKOUT{i}_DIVIDE"
            params[key] = float(out.divide) if i == 0 else int(out.divide)
    elif kind == "PLL_BASE":
        params.update({
            "BANDWIDTH": "OPTIMIZED",
            "CLKIN_PERIOD": round(period_ns, 3),
            "COMPENSATION": "INTERNAL",
            "DIVCLK_DIVIDE": d,
            "CLKFBOUT_MULT": int(mult),
        })
        for i, out in enumerate(outputs):
            params[f"CLKOUT{i}_DIVIDE"] = int(out.divide)
    elif kind == "EHXPLLL":
        op_div = int(outputs[0].divide)
        cphase = op_div // 2
        params.update({
            "PLLRST_ENA": "DISABLED", "INTFB_WAKE": "DISABLED", "STDBY_ENABLE": "DISABLED",
            "DPHASE_SOURCE": "DISABLED",
            "OUTDIVIDER_MUXA": "DIVA", "OUTDIVIDER_MUXB": "DIVB",
            "OUTDIVIDER_MUXC": "DIVC", "OUTDIVIDER_MUXD": "DIVD",
            "CLKI_DIV": d, "CLKFB_DIV": int(mult), "FEEDBK_PATH": "CLKOP",
            "CLKOP_ENABLE": "ENABLED", "CLKOP_DIV": op_div,
            "CLKOP_CPHASE": cphase, "CLKOP_FPHASE": 0,
        })
        for out in outputs[1:]:
            params.update({f"{out.pin}_ENABLE": "ENABLED", f"{out.pin}_DIV": int(out.divide),
                           f"{out.pin}_CPHASE": cphase, f"{out.pin}_FPHASE": 0})
    else:  # IOPLL: the counters, for the record
        params.update({"N": d, "M": int(mult)})
        for out in outputs:
            params[f"C_{out.pin}"] = int(out.divide)
    return PllSetting(kind, instance, fin, d, mult, fin / d, vco, outputs, params, limits)


def sl3_user_clock(line_rate: int) -> Fraction:
    """The SerialLite III user clock (Hz) that fills ``line_rate`` lanes in the advanced
    clocking mode: lane rate = 64 x user clock x 67/64 x M/(M-4) with the default
    metaframe length M (UG-683330 5.2), so user clock = lane rate x (M-4) / (67 M)."""
    return Fraction(line_rate) * (_SL3_METAFRAME - 4) / (67 * _SL3_METAFRAME)


# ----------------------------------------------------------------------------- clock plan


@dataclass(frozen=True)
class IopllSettings:
    """The Intel IOPLL IP the Quartus project script generates as :data:`IOPLL_MODULE`.

    Its module has an input ``refclk`` (the board clock), an active-high input ``rst``,
    outputs ``outclk_<i>`` and ``locked``.

    Attributes
    ----------
    module : str
    reference_hz : Fraction
    outputs : tuple of (str, Fraction)
        ``outclk_<i>`` and the frequency asked of it (what the search reached).
    parameters : dict of str to str
        IOPLL parameter-editor settings, by their Platform Designer names.
    """

    module: str
    reference_hz: Fraction
    outputs: tuple[tuple[str, Fraction], ...]
    parameters: dict = field(compare=False)


@dataclass(frozen=True)
class TxPllSettings:
    """The Intel ATX PLLs that drive one link port's ``tx_serial_clk``.

    The Quartus project script generates the module ``<ip_name>_atx_pll`` (one
    configuration per link IP: line rate and reference clock) with input ``pll_refclk0``
    and outputs ``output_port``, ``pll_locked`` and ``pll_cal_busy`` (Stratix 10 L-/H-Tile
    Transceiver PHY User Guide 683621, ATX PLL IP). Above 17.4 Gb/s the lanes are GXT
    channels, which an ATX PLL drives two at a time through its GXT clock output
    (``tx_serial_clk_gxt``), so a port gets one instance per two lanes; below, one
    instance drives every lane of the port (``tx_serial_clk``).

    Attributes
    ----------
    module : str
    port : int
        Router port.
    instances : int
    lanes_per_instance : int
    output_port : str
    line_rate : int
        Bit/s per lane.
    output_hz : Fraction
        Serial clock frequency: half the line rate (the transceiver sends on both edges).
    refclk_hz : Fraction or None
        Reference clock frequency from the board file; ``None`` when the board does not
        give it.
    refclk_port : str
        Board top port (without ``_p``) of the reference clock.
    """

    module: str
    port: int
    instances: int
    lanes_per_instance: int
    output_port: str
    line_rate: int
    output_hz: Fraction
    refclk_hz: Fraction | None
    refclk_port: str


#: GXT channels (Stratix 10 H-tile) run above this line rate.
_GXT_ABOVE = 17_400_000_000


@dataclass(frozen=True)
class ClockPlan:
    """Every clock of one node's board top.

    Attributes
    ----------
    node, board : str
    board_clock : str or None
        Board clock used (a key of ``board.clocks``); ``None`` when the board lists none.
    ref_hz : Fraction
        Its frequency (assumed to equal the network clock when ``board_clock`` is None).
    pll : PllSetting
        The main PLL: network clock first, then the others (see the module docstring).
    init_source : str
        ``"board"`` (the buffered board clock) or ``"pll"`` (the main PLL's ``init``
        output); ``"none"`` when no adapter needs one.
    init_hz : Fraction or None
    lvds_clocks : dict of int to str
        Router port -> main PLL output name of its LVDS transmit clock.
    sl3_clocks : dict of int to str
        Router port -> main PLL output name of its SerialLite III user clock.
    gt_plls : tuple of PllSetting
        Virtex-5 GTP clock modules: ``user`` (line rate / 20) and ``sync`` (line rate / 10)
        made from a GTP's ``TX_OUT_CLK``, one per group of ports sharing a reference clock
        and line rate.
    gt_groups : dict of int to int
        Router port -> index into ``gt_plls``.
    iopll : IopllSettings or None
        Intel only.
    tx_plls : tuple of TxPllSettings
        Intel only.
    notes : tuple of str
        Assumptions made, as sentences.
    """

    node: str
    board: str
    board_clock: str | None
    ref_hz: Fraction
    pll: PllSetting
    init_source: str
    init_hz: Fraction | None
    lvds_clocks: dict = field(compare=False)
    sl3_clocks: dict = field(compare=False)
    gt_plls: tuple[PllSetting, ...] = ()
    gt_groups: dict = field(default_factory=dict, compare=False)
    iopll: IopllSettings | None = None
    tx_plls: tuple[TxPllSettings, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def network_hz(self) -> Fraction:
        """The network clock the PLL reaches."""
        return self.pll.output("net").achieved_hz

    # The names the Quartus project script (optnet.emit.projects) reads.

    @property
    def refclk_hz(self) -> Fraction:
        """Frequency of the board clock at the main PLL's input."""
        return self.ref_hz

    @property
    def outputs(self) -> tuple[tuple[str, Fraction], ...]:
        """``(purpose, achieved Hz)`` of the main PLL's outputs in order (``outclk_0``,
        ``outclk_1``, ... of ``optnet_iopll`` on Intel)."""
        return tuple((o.name, o.achieved_hz) for o in self.pll.outputs)

    @property
    def init_clk_hz(self) -> Fraction | None:
        """Frequency of the link adapters' ``init_clk``; ``None`` when none needs it."""
        return self.init_hz


def _board_clock(plan: NodePlan, board: BoardDesc) -> tuple[str | None, Fraction]:
    net = _net_hz(plan)
    if not board.clocks:
        return None, net
    for name, clock in board.clocks.items():
        if Fraction(clock.freq.value) == net:
            return name, net
    name = "sys" if "sys" in board.clocks else next(iter(board.clocks))
    return name, Fraction(board.clocks[name].freq.value)


def _net_hz(plan: NodePlan) -> Fraction:
    return Fraction(plan.clock_hz).limit_denominator(1000)


def _refclk_key(board: BoardDesc, board_port: str) -> tuple:
    rc = board.ports[board_port].refclk
    if rc is not None and rc.p:
        return ("pins", rc.p, rc.n)
    return ("port", board_port)


def refclk_port_name(plan: NodePlan, board: BoardDesc, board_port: str) -> str:
    """Board top port (without ``_p``/``_n``) of the transceiver reference clock of
    ``board_port``: named after the first board port, in router port order, whose
    reference clock uses the same pins."""
    key = _refclk_key(board, board_port)
    for port in plan.ports:
        if port.phy != "lvds" and _refclk_key(board, port.board_port) == key:
            return f"{port.board_port}_refclk"
    return f"{board_port}_refclk"


def clock_plan(plan: NodePlan, board: BoardDesc) -> ClockPlan:
    """Plan the clocks of ``plan``'s board top on ``board`` (see the module docstring).

    Raises
    ------
    PllError
        When the board's family has no PLL model or no setting makes the clocks.
    """
    kind = pll_kind(board)
    grade = speed_grade(board.part)
    clock_name, ref_hz = _board_clock(plan, board)
    notes = []
    if clock_name is None:
        notes.append(f"Board '{board.name}' lists no clock, so the board top's clk_ref has no "
                     f"pin and is assumed to run at the network clock, {_mhz(ref_hz)}.")
    shown = clock_name or "clk_ref"
    requests = [ClockRequest("net", _net_hz(plan))]

    vendor_phys = {p.phy for p in plan.ports if p.phy != "lvds"}
    init_source, init_hz = "none", None
    if vendor_phys:
        lo = max(INIT_RANGES[phy][0] for phy in vendor_phys)
        hi = min(INIT_RANGES[phy][1] for phy in vendor_phys)
        if lo <= ref_hz <= hi:
            init_source, init_hz = "board", ref_hz
        else:
            init_source = "pll"
            requests.append(ClockRequest("init", _INIT_HZ))

    lvds_clocks: dict[int, str] = {}
    by_rate: dict[Fraction, str] = {}
    for port in plan.ports:
        if port.phy == "lvds":
            hz = Fraction(port.line_rate, 2)
            if hz not in by_rate:
                by_rate[hz] = f"lvds{len(by_rate)}"
                requests.append(ClockRequest(by_rate[hz], hz, at_most=True))
            lvds_clocks[port.port] = by_rate[hz]

    sl3_clocks: dict[int, str] = {}
    by_user: dict[Fraction, str] = {}
    for port in plan.ports:
        if port.phy == "serial_lite_3":
            hz = sl3_user_clock(port.line_rate)
            if hz not in by_user:
                by_user[hz] = f"sl3_{len(by_user)}"
                requests.append(ClockRequest(by_user[hz], hz, at_most=True))
            sl3_clocks[port.port] = by_user[hz]

    pll = solve_pll(kind, ref_hz, requests, grade=grade, instance="pll", board=board.name,
                    clock=shown)
    if init_source == "pll":
        init_hz = pll.output("init").achieved_hz

    gt_plls: list[PllSetting] = []
    gt_groups: dict[int, int] = {}
    if board.family == "virtex5":
        groups: dict[tuple, int] = {}
        for port in plan.ports:
            if port.phy != "aurora_8b10b":
                continue
            key = (_refclk_key(board, port.board_port), port.line_rate)
            if key not in groups:
                groups[key] = len(gt_plls)
                rc = board.ports[port.board_port].refclk
                if rc is not None:
                    txout = Fraction(rc.freq.value)
                else:
                    txout = Fraction(port.line_rate, 20)
                    notes.append(
                        f"Port '{port.board_port}' of board '{board.name}' gives no reference "
                        f"clock; the GTP TX_OUT_CLK is assumed to run at line rate / 20, "
                        f"{_mhz(txout)}.")
                gt_plls.append(solve_pll(
                    "PLL_BASE", txout,
                    [ClockRequest("user", Fraction(port.line_rate, 20)),
                     ClockRequest("sync", Fraction(port.line_rate, 10))],
                    grade=grade, instance=f"gt_pll{len(gt_plls)}", board=board.name,
                    clock=f"port{port.port}_tx_out_clk"))
            gt_groups[port.port] = groups[key]

    iopll, tx_plls = None, []
    if kind == "IOPLL":
        outs = tuple((o.pin, o.achieved_hz) for o in pll.outputs)
        params = {
            "gui_reference_clock_frequency": _mhz_value(ref_hz),
            "gui_operation_mode": "direct",
            "gui_use_locked": "true",
            "gui_number_of_clocks": str(len(outs)),
        }
        for i, (_, hz) in enumerate(outs):
            params[f"gui_output_clock_frequency{i}"] = _mhz_value(hz)
        iopll = IopllSettings(IOPLL_MODULE, ref_hz, outs, params)
        for port in plan.ports:
            if port.phy not in ("serial_lite_3", "interlaken"):
                continue
            rc = board.ports[port.board_port].refclk
            lanes = len(port.lanes)
            gxt = port.line_rate > _GXT_ABOVE
            per = 2 if gxt else lanes
            tx_plls.append(TxPllSettings(
                f"{ip_name(port)}_atx_pll", port.port, -(-lanes // per), per,
                "tx_serial_clk_gxt" if gxt else "tx_serial_clk", port.line_rate,
                Fraction(port.line_rate, 2), Fraction(rc.freq.value) if rc else None,
                refclk_port_name(plan, board, port.board_port)))
    return ClockPlan(
        plan.node, board.name, clock_name, ref_hz, pll, init_source, init_hz,
        lvds_clocks, sl3_clocks, tuple(gt_plls), gt_groups, iopll, tuple(tx_plls),
        tuple(notes))


def _mhz_value(hz: Fraction) -> str:
    """MHz as a decimal string with up to 6 decimals, for IP parameters."""
    text = f"{float(hz) / MHZ:.6f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


# ------------------------------------------------------------------------- top-level ports


@dataclass(frozen=True)
class TopPort:
    """A port of the board top.

    Attributes
    ----------
    name : str
    direction : str
        ``"i"`` or ``"o"``.
    width : int
    pins : tuple of (str or None)
        Board-file package pin of each bit; ``None`` where the board file gives none.
    iostandard : str or None
    kind : str
        ``clock``, ``led``, ``refclk``, ``gt`` (transceiver serial pin) or ``lvds``.
    sites : tuple of (str or None)
        Transceiver channel site of each bit (``gt`` ports).
    what : str
        What the port is, in words (for comments).
    """

    name: str
    direction: str
    width: int
    pins: tuple[str | None, ...]
    iostandard: str | None
    kind: str
    sites: tuple[str | None, ...] = ()
    what: str = ""


@dataclass(frozen=True)
class PinAssignment:
    """One bit of a board top port and its pin.

    ``index`` is ``None`` for a one-bit port (a Verilog scalar: constraint files name it
    without a subscript).
    """

    port: str
    index: int | None
    pin: str | None
    iostandard: str | None
    kind: str
    site: str | None
    what: str


def _differential_ports(board: BoardDesc) -> bool:
    """Whether the top exposes both wires of a differential pair: Xilinx instantiates a
    differential buffer on both; ECP5 (Yosys maps ILVDS/OLVDS onto the true pin) and Intel
    (Quartus places the complement) take the true pin only."""
    return board.vendor == "xilinx"


def top_ports(plan: NodePlan, board: BoardDesc, cp: ClockPlan | None = None
              ) -> tuple[TopPort, ...]:
    """The ports of ``plan``'s board top on ``board``, in declaration order.

    Naming: ``clk_ref`` (``clk_ref_p``/``clk_ref_n`` for a Xilinx differential clock) is
    the board clock; ``led`` the LEDs; ``<board port>_refclk_p``/``_n`` a transceiver
    reference clock (named after the first board port using those pins;
    :func:`refclk_port_name`); every link port's pads keep the network module's names
    ``port<p>_<pad>`` (``txp``/``txn``/``rxp``/``rxn`` for transceiver lanes;
    ``clk``/``tx``/``rclk``/``rx`` with ``_p``/``_n`` for LVDS). Complement pins that the
    vendor places itself (ECP5, Intel) are left out.
    """
    cp = cp or clock_plan(plan, board)
    diff = _differential_ports(board)
    ports: list[TopPort] = []
    if cp.board_clock is None:
        ports.append(TopPort("clk_ref", "i", 1, (None,), None, "clock",
                             what="board clock (the board file lists none)"))
    else:
        clock = board.clocks[cp.board_clock]
        what = f"board clock '{cp.board_clock}'"
        if clock.p and diff:
            ports.append(TopPort("clk_ref_p", "i", 1, (clock.p,), clock.iostandard, "clock",
                                 what=what))
            ports.append(TopPort("clk_ref_n", "i", 1, (clock.n,), clock.iostandard, "clock",
                                 what=what))
        else:
            ports.append(TopPort("clk_ref", "i", 1, (clock.pin or clock.p,),
                                 clock.iostandard, "clock", what=what))
    if board.leds is not None:
        ports.append(TopPort("led", "o", len(board.leds.pins), tuple(board.leds.pins),
                             board.leds.iostandard, "led", what="status LEDs"))
    seen = set()
    for port in plan.ports:
        if port.phy == "lvds":
            continue
        name = refclk_port_name(plan, board, port.board_port)
        if name in seen:
            continue
        seen.add(name)
        rc = board.ports[port.board_port].refclk
        what = f"transceiver reference clock of '{port.board_port}'"
        ports.append(TopPort(f"{name}_p", "i", 1, (rc.p if rc else None,), None, "refclk",
                             what=what))
        if diff:
            ports.append(TopPort(f"{name}_n", "i", 1, (rc.n if rc else None,), None,
                                 "refclk", what=what))
    for port in plan.ports:
        bp = board.ports[port.board_port]
        lanes = [bp.lanes[i] for i in port.lanes]
        p = port.port
        if port.phy == "lvds":
            tx_std = bp.iostandard
            rx_std = bp.rx_iostandard or bp.iostandard
            clk = bp.clock
            what = f"LVDS link on '{port.board_port}'"
            pads = [("clk_p", "o", [clk.tx_p if clk else None], tx_std),
                    ("clk_n", "o", [clk.tx_n if clk else None], tx_std),
                    ("tx_p", "o", [lane.tx_p for lane in lanes], tx_std),
                    ("tx_n", "o", [lane.tx_n for lane in lanes], tx_std),
                    ("rclk_p", "i", [clk.rx_p if clk else None], rx_std),
                    ("rclk_n", "i", [clk.rx_n if clk else None], rx_std),
                    ("rx_p", "i", [lane.rx_p for lane in lanes], rx_std),
                    ("rx_n", "i", [lane.rx_n for lane in lanes], rx_std)]
            for pad, direction, pins, std in pads:
                if pad.endswith("_n") and not diff:
                    continue
                ports.append(TopPort(f"port{p}_{pad}", direction, len(pins), tuple(pins), std,
                                     "lvds", what=what))
            continue
        sites = tuple(lane.site for lane in lanes)
        what = f"transceiver lanes {_lanes(port.lanes)} of '{port.board_port}'"
        pads = [("txp", "o", "tx_p"), ("txn", "o", "tx_n"), ("rxp", "i", "rx_p"),
                ("rxn", "i", "rx_n")]
        for pad, direction, key in pads:
            if pad.endswith("n") and not diff:
                continue
            pins = tuple(getattr(lane, key) for lane in lanes)
            ports.append(TopPort(f"port{p}_{pad}", direction, len(pins), pins, None, "gt",
                                 sites, what))
    return tuple(ports)


def _lanes(lanes: tuple[int, ...]) -> str:
    return str(lanes[0]) if len(lanes) == 1 else f"{lanes[0]}..{lanes[-1]}"


def board_pins(plan: NodePlan, board: BoardDesc, cp: ClockPlan | None = None
               ) -> tuple[PinAssignment, ...]:
    """Every bit of every board top port with its board-file pin (``None`` where the board
    file gives none), in port order."""
    out = []
    for tp in top_ports(plan, board, cp):
        for i in range(tp.width):
            out.append(PinAssignment(
                tp.name, None if tp.width == 1 else i, tp.pins[i], tp.iostandard, tp.kind,
                tp.sites[i] if tp.sites else None, tp.what))
    return tuple(out)


# ------------------------------------------------------------------------ clock constraints


@dataclass(frozen=True)
class ClockConstraint:
    """A clock to create on a board top input port."""

    name: str
    port: str
    hz: Fraction

    @property
    def period_ns(self) -> float:
        return float(Fraction(10**9) / self.hz)

    @property
    def mhz(self) -> float:
        return float(self.hz / MHZ)


@dataclass(frozen=True)
class ClockRef:
    """A clock, for clock-group constraints.

    ``kind`` is ``port`` (a clock created on an input port: ``name``; ``net`` the board top's
    net of its domain), ``pll`` (output ``index`` of a PLL; ``path`` is the output pin as
    ``instance/pin``, ``net`` the board top's net of the buffered clock, named after its
    clock domain: ``clk`` for the network's ``sync``, ``<domain>_clk`` for the others) or
    ``ip`` (a clock made inside vendor IP: ``path`` is an output pin of the IP instance, or
    the instance whose clocks a pattern matches).
    """

    kind: str
    name: str
    path: str = ""
    net: str = ""
    index: int = 0


@dataclass(frozen=True)
class ClockGroup:
    """Clocks related to each other; every group is asynchronous to every other."""

    name: str
    clocks: tuple[ClockRef, ...]


#: Instance name of the network module in the board top.
NET_INSTANCE = "net"


def clock_constraints(plan: NodePlan, board: BoardDesc, cp: ClockPlan | None = None
                      ) -> tuple[tuple[ClockConstraint, ...], tuple[ClockGroup, ...]]:
    """The clocks to create on board top ports, and the asynchronous clock groups.

    Groups: the network clock; the board clock (power-on reset domain, and init clock when
    it is the board clock); the PLL's init clock; each LVDS transmit clock; each LVDS
    receive (forwarded) clock; each link adapter's user clock (Aurora ``user_clk_out``,
    the Virtex-5 GTP clock module, SerialLite III's and Interlaken's clocks). These are the
    domains the link layers' and adapters' asynchronous FIFOs and reset synchronisers
    cross between (:mod:`optnet.hw.link`, :mod:`optnet.hw.phy`).
    """
    cp = cp or clock_plan(plan, board)
    ports = {tp.name: tp for tp in top_ports(plan, board, cp)}
    clocks = []
    ref_port = "clk_ref_p" if "clk_ref_p" in ports else "clk_ref"
    clocks.append(ClockConstraint("clk_ref", ref_port, cp.ref_hz))
    for tp in ports.values():
        if tp.kind == "refclk" and tp.name.endswith("_p"):
            bp = tp.name[:-len("_refclk_p")]
            rc = board.ports[bp].refclk
            if rc is not None:
                clocks.append(ClockConstraint(tp.name[:-2], tp.name, Fraction(rc.freq.value)))
    for port in plan.ports:
        if port.phy == "lvds":
            clocks.append(ClockConstraint(f"port{port.port}_rclk", f"port{port.port}_rclk_p",
                                          Fraction(port.line_rate, 2)))

    def pll_ref(name: str) -> ClockRef:
        out = cp.pll.output(name)
        index = cp.pll.outputs.index(out)
        net = "clk" if name == "net" else f"{name}_clk"
        return ClockRef("pll", name, f"{cp.pll.instance}/{out.pin}", net, index)

    groups = [ClockGroup("net", (pll_ref("net"),)),
              ClockGroup("clk_ref", (ClockRef("port", "clk_ref", net="ref_clk"),))]
    if cp.init_source == "pll":
        groups.append(ClockGroup("init", (pll_ref("init"),)))
    for name in dict.fromkeys(cp.lvds_clocks.values()):
        groups.append(ClockGroup(name, (pll_ref(name),)))
    for name in dict.fromkeys(cp.sl3_clocks.values()):
        groups.append(ClockGroup(name, (pll_ref(name),)))
    for port in plan.ports:
        p = port.port
        if port.phy == "lvds":
            groups.append(ClockGroup(f"port{p}_rclk", (ClockRef("port", f"port{p}_rclk"),)))
        elif port.phy in ("aurora_8b10b", "aurora_64b66b") and board.family != "virtex5":
            groups.append(ClockGroup(f"port{p}_user", (ClockRef(
                "ip", f"port{p}_user", f"{NET_INSTANCE}/phy{p}/ip/user_clk_out"),)))
        elif port.phy in ("serial_lite_3", "interlaken"):
            groups.append(ClockGroup(f"port{p}_ip", (ClockRef(
                "ip", f"port{p}_ip", f"{NET_INSTANCE}/phy{p}/ip"),)))
    for i, gt in enumerate(cp.gt_plls):
        groups.append(ClockGroup(f"gt{i}", tuple(
            ClockRef("pll", f"gt{i}_{o.name}", f"{gt.instance}/{o.pin}", f"gt{i}_{o.name}_clk",
                     k) for k, o in enumerate(gt.outputs))))
    return tuple(clocks), tuple(groups)


def constraint_format(board: BoardDesc) -> str:
    """The constraint file kind of ``board``: ``xdc`` (Vivado), ``ucf`` (ISE, for Virtex-5,
    which Vivado does not support), ``qsf`` (Quartus, with an ``sdc``) or ``lpf``
    (Lattice, as nextpnr-ecp5 reads it)."""
    if board.vendor == "xilinx":
        return "ucf" if board.family == "virtex5" else "xdc"
    return {"intel": "qsf", "lattice": "lpf"}[board.vendor]


# ---------------------------------------------------------------------------- the board top


def attach_endpoint(m: Module, plan: NodePlan, index: int, tx: stream.Interface,
                    rx: stream.Interface) -> Value:
    """Attach the user logic of endpoint ``index`` (in the network clock domain ``sync``).

    **This is the one place the board top's per-endpoint logic goes**: the bring-up
    traffic generator (``optnet.hw.bringup.LinkTest``) replaces the body below.

    Parameters
    ----------
    m : Module
        The board top's module; add submodules and statements to it.
    plan : NodePlan
    index : int
        Endpoint number (``plan.endpoints[index]``, ``plan.endpoint_names[index]``).
    tx : stream.Interface
        The endpoint's ``s_axis``, to drive (payload layout
        :func:`~optnet.hw.endpoint.axis_tx_layout`).
    rx : stream.Interface
        The endpoint's ``m_axis``, to consume (:func:`~optnet.hw.endpoint.axis_rx_layout`).

    Returns
    -------
    Value
        One bit the heartbeat LED is XORed with (a status the user logic wants seen).
    """
    # For now: send nothing, take everything. The running parity of what arrives keeps the
    # endpoint's receive path observable (and shows as flicker on the heartbeat LED).
    name = plan.endpoint_names[index]
    m.d.comb += [tx.valid.eq(0), Value.cast(tx.payload).eq(0), rx.ready.eq(1)]
    parity = Signal(name=f"{name}_rx_parity")
    with m.If(rx.valid & rx.ready):
        m.d.sync += parity.eq(parity ^ Value.cast(rx.payload).xor())
    return parity


def network_ports(plan: NodePlan) -> list[tuple[str, str, int]]:
    """(Verilog port name, ``"i"``/``"o"``, width) of every port of the network module, as
    :func:`optnet.hw.verilog.to_verilog` names them: the ``sync`` domain's ``clk`` and
    ``rst``, then the component's signals (``<member>__<field>`` for stream members)."""
    from optnet.hw.top import NodeTop
    top = NodeTop(plan)
    ports = [("clk", "i", 1), ("rst", "i", 1)]
    for path, member, value in top.signature.flatten(top):
        value = Value.cast(value)
        if not isinstance(value, Signal):
            continue
        name = "__".join(str(part) for part in path)
        ports.append((name, "i" if member.flow == In else "o", len(value)))
    # The component (and its adapters) only give a port list here; none is elaborated.
    for obj in (top, *top._adapters.values()):
        obj._MustUse__silence = True
    return ports


class BoardTop(wiring.Component):
    """One node's network on its board: clocks, reset, endpoints, LEDs and pins.

    The network is the module ``plan.node`` (from :class:`~optnet.hw.top.NodeTop`),
    instantiated as a black box named ``net``; its ports are found from ``NodeTop(plan)``.
    Every port of the board top is an FPGA pin (see :func:`top_ports`).

    Parameters
    ----------
    plan : NodePlan
    board : BoardDesc
        The node's board (``plan.board`` names it).

    Attributes
    ----------
    clock_plan : ClockPlan

    Raises
    ------
    PllError
        When the clocks cannot be made on the board.
    """

    def __init__(self, plan: NodePlan, board: BoardDesc):
        if board.name != plan.board:
            raise ValueError(f"Node '{plan.node}' sits on board '{plan.board}', not on "
                             f"'{board.name}'.")
        self.plan = plan
        self.board = board
        self.clock_plan = clock_plan(plan, board)
        self.ports = top_ports(plan, board, self.clock_plan)
        super().__init__({tp.name: (In if tp.direction == "i" else Out)(tp.width)
                          for tp in self.ports})

    # -- clocking primitives ----------------------------------------------------------------

    def _pll(self, m: Module, setting: PllSetting, clkin: Value, rst: Value
             ) -> tuple[dict[str, Value], Signal]:
        """Instantiate ``setting``; returns its clocks by request name and its lock."""
        kind = setting.kind
        locked = Signal(name=f"{setting.instance}_locked")
        raw = {o.name: Signal(name=f"{setting.instance}_{o.name}") for o in setting.outputs}
        pins = {o.pin: raw[o.name] for o in setting.outputs}
        limits = setting.limits
        args: dict[str, object] = {f"p_{k}": v for k, v in setting.parameters.items()}
        if kind == "IOPLL":
            args = {"i_refclk": clkin, "i_rst": rst, "o_locked": locked}
            for pin in limits.outputs[:len(setting.outputs)]:
                args[f"o_{pin}"] = pins[pin]
            m.submodules[setting.instance] = Instance(IOPLL_MODULE, **args)
            return dict(raw), locked
        if kind == "EHXPLLL":
            clkop = pins["CLKOP"]
            args.update({"i_CLKI": clkin, "i_CLKFB": clkop, "i_RST": rst,
                         "i_STDBY": Const(0), "i_PHASESEL0": Const(0),
                         "i_PHASESEL1": Const(0), "i_PHASEDIR": Const(1),
                         "i_PHASESTEP": Const(1), "i_PHASELOADREG": Const(1),
                         "i_PLLWAKESYNC": Const(0), "o_LOCK": locked})
            for pin in limits.outputs:
                args[f"i_EN{pin}"] = Const(0)
                args[f"o_{pin}"] = pins.get(pin, Signal(name=f"{setting.instance}_{pin}_nc"))
            for pin in ("INTLOCK", "REFCLK", "CLKINTFB"):
                args[f"o_{pin}"] = Signal(name=f"{setting.instance}_{pin}_nc")
            # nextpnr takes the input and output frequencies from these attributes.
            args["a_FREQUENCY_PIN_CLKI"] = _attr_mhz(setting.input_hz)
            for o in setting.outputs:
                args[f"a_FREQUENCY_PIN_{o.pin}"] = _attr_mhz(o.achieved_hz)
            # Loop filter settings ecppll writes for every configuration.
            args.update({"a_ICP_CURRENT": "12", "a_LPF_RESISTOR": "8",
                         "a_MFG_ENABLE_FILTEROPAMP": "1", "a_MFG_GMCREF_SEL": "2"})
            m.submodules[setting.instance] = Instance("EHXPLLL", **args)
            return dict(raw), locked
        # Xilinx: internal feedback (CLKFBOUT straight to CLKFBIN) and a BUFG per output.
        fb = Signal(name=f"{setting.instance}_fb")
        args.update({"i_CLKFBIN": fb, "o_CLKFBOUT": fb, "i_RST": rst, "o_LOCKED": locked})
        if kind == "PLL_BASE":
            args["i_CLKIN"] = clkin
        else:
            args.update({"i_CLKIN1": clkin, "i_PWRDWN": Const(0),
                         "o_CLKFBOUTB": Signal(name=f"{setting.instance}_fbb_nc")})
            for i in range(4):
                args[f"o_CLKOUT{i}B"] = Signal(name=f"{setting.instance}_clkout{i}b_nc")
        for pin in limits.outputs:
            args[f"o_{pin}"] = pins.get(pin, Signal(name=f"{setting.instance}_{pin}_nc"))
        m.submodules[setting.instance] = Instance(kind, **args)
        clocks = {}
        for o in setting.outputs:
            buffered = Signal(name=_clock_net(setting.instance, o.name))
            m.submodules[f"{setting.instance}_{o.name}_bufg"] = Instance(
                "BUFG", i_I=raw[o.name], o_O=buffered)
            clocks[o.name] = buffered
        return clocks, locked

    def _ref_clock(self, m: Module) -> tuple[Value, Value]:
        """(clock for the fabric, clock for the PLL input) from the board clock pins."""
        if self.board.vendor != "xilinx":
            return self.clk_ref, self.clk_ref
        if hasattr(self, "clk_ref_p"):
            pad = Signal(name="clk_ref_ibuf")
            buf = "IBUFGDS" if self.board.family == "virtex5" else "IBUFDS"
            m.submodules.clk_ref_ibuf = Instance(buf, i_I=self.clk_ref_p, i_IB=self.clk_ref_n,
                                                 o_O=pad)
        else:
            pad = self.clk_ref
        fabric = Signal(name="clk_ref_buf")
        m.submodules.clk_ref_bufg = Instance("BUFG", i_I=pad, o_O=fabric)
        return fabric, fabric

    # -- elaboration --------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        plan, board, cp = self.plan, self.board, self.clock_plan

        ref, pll_in = self._ref_clock(m)
        m.domains.ref = ClockDomain("ref", reset_less=True)
        m.d.comb += ClockSignal("ref").eq(ref)

        clocks, locked = self._pll(m, cp.pll, pll_in, Const(0))

        # Power-on reset: counts board-clock cycles once the PLL is locked.
        locked_ref = Signal()
        m.submodules.locked_sync = FFSynchronizer(locked, locked_ref, o_domain="ref")
        count = Signal(range(POR_CYCLES + 1))
        por = Signal(init=1)
        with m.If(~locked_ref):
            m.d.ref += count.eq(0)
        with m.Elif(count != POR_CYCLES):
            m.d.ref += count.eq(count + 1)
        m.d.ref += por.eq(~locked_ref | (count != POR_CYCLES))

        m.domains.sync = ClockDomain("sync")
        m.d.comb += ClockSignal("sync").eq(clocks["net"])
        m.submodules.rst_sync = ResetSynchronizer(por, domain="sync")
        # Clocks without logic of their own in the top get a domain anyway, so that their
        # nets have stable names (<domain>_clk) for constraint files that name nets (UCF).
        if cp.init_source != "none":
            m.domains.init = ClockDomain("init", reset_less=True)
            m.d.comb += ClockSignal("init").eq(ref if cp.init_source == "board"
                                               else clocks["init"])

        lvds_resets = {}
        for name in dict.fromkeys(cp.lvds_clocks.values()):
            m.domains += ClockDomain(name)
            m.d.comb += ClockSignal(name).eq(clocks[name])
            m.submodules[f"rst_{name}"] = ResetSynchronizer(por, domain=name)
            lvds_resets[name] = ResetSignal(name)

        gt = []
        for i, setting in enumerate(cp.gt_plls):
            first = next(p for p, g in cp.gt_groups.items() if g == i)
            tx_lock = Signal(name=f"gt{i}_tx_lock")
            tx_out_clk = Signal(name=f"gt{i}_tx_out_clk")
            # TXOUTCLK reaches the PLL through a global buffer, as in the core's example
            # clock module (a BUFG may always drive a PLL's CLKIN).
            tx_out_buf = Signal(name=f"gt{i}_tx_out_clk_buf")
            m.submodules[f"gt{i}_tx_out_bufg"] = Instance("BUFG", i_I=tx_out_clk,
                                                          o_O=tx_out_buf)
            gclocks, glocked = self._pll(m, setting, tx_out_buf, ~tx_lock)
            for name, clk in list(gclocks.items()):
                dom = f"gt{i}_{name}"
                m.domains += ClockDomain(dom, reset_less=True)
                m.d.comb += ClockSignal(dom).eq(clk)
                gclocks[name] = ClockSignal(dom)
            gt.append((first, tx_lock, tx_out_clk, gclocks, glocked))

        # Intel transceiver PLLs: each instance clocks ``lanes_per_instance`` lanes.
        tx_serial = {}
        for tx in cp.tx_plls:
            serials, locks = [], []
            for k in range(tx.instances):
                inst = f"port{tx.port}_atx_pll{k}"
                serial, lock = Signal(name=f"{inst}_serial"), Signal(name=f"{inst}_locked")
                m.submodules[inst] = Instance(
                    tx.module, i_pll_refclk0=getattr(self, f"{tx.refclk_port}_p"),
                    o_pll_locked=lock, o_pll_cal_busy=Signal(name=f"{inst}_cal_busy_nc"),
                    **{f"o_{tx.output_port}": serial})
                serials += [serial] * tx.lanes_per_instance
                locks.append(lock)
            lanes = len(next(p for p in plan.ports if p.port == tx.port).lanes)
            tx_serial[tx.port] = (Cat(*serials[:lanes]), Cat(*locks).all())

        # -- the network --------------------------------------------------------------------
        args: dict[str, object] = {}
        sigs: dict[str, Signal] = {}
        for name, direction, width in network_ports(plan):
            sig = Signal(width, name=f"net_{name}")
            sigs[name] = sig
            args[f"{direction}_{name}"] = sig
        m.submodules[NET_INSTANCE] = Instance(plan.node, **args)
        m.d.comb += [sigs["clk"].eq(ClockSignal("sync")), sigs["rst"].eq(ResetSignal("sync"))]
        if "node_id" in sigs:
            m.d.comb += sigs["node_id"].eq(plan.node_id)

        status = []
        for i, (name, cfg) in enumerate(zip(plan.endpoint_names, plan.endpoints, strict=True)):
            tx = stream.Signature(axis_tx_layout(cfg)).create(path=(name, "s_axis"))
            rx = stream.Signature(axis_rx_layout(cfg)).create(path=(name, "m_axis"))
            m.d.comb += [
                sigs[f"{name}_s_axis__payload"].eq(Value.cast(tx.payload)),
                sigs[f"{name}_s_axis__valid"].eq(tx.valid),
                tx.ready.eq(sigs[f"{name}_s_axis__ready"]),
                Value.cast(rx.payload).eq(sigs[f"{name}_m_axis__payload"]),
                rx.valid.eq(sigs[f"{name}_m_axis__valid"]),
                sigs[f"{name}_m_axis__ready"].eq(rx.ready),
            ]
            status.append(attach_endpoint(m, plan, i, tx, rx))

        # -- link adapter pads ----------------------------------------------------------------
        gt_refclk: dict[str, Signal] = {}
        for port in plan.ports:
            p = port.port
            refclk = refclk_port_name(plan, board, port.board_port)

            def pad(name: str, _p=p) -> Signal:
                return sigs[f"port{_p}_{name}"]

            def has(name: str, _p=p) -> bool:
                return f"port{_p}_{name}" in sigs

            if port.phy == "lvds":
                dom = cp.lvds_clocks[p]
                m.d.comb += [pad("clk_in").eq(ClockSignal(dom)), pad("rst_in").eq(lvds_resets[dom])]
                for name in ("clk", "tx"):
                    for side in ("_p", "_n"):
                        if hasattr(self, f"port{p}_{name}{side}"):
                            m.d.comb += getattr(self, f"port{p}_{name}{side}").eq(pad(name + side))
                for name in ("rclk", "rx"):
                    for side in ("_p", "_n"):
                        if hasattr(self, f"port{p}_{name}{side}"):
                            m.d.comb += pad(name + side).eq(getattr(self, f"port{p}_{name}{side}"))
                        else:
                            # The complement the vendor places itself; the buffer ignores it.
                            m.d.comb += pad(name + side).eq(0)
                continue
            m.d.comb += [getattr(self, f"port{p}_txp").eq(pad("txp")),
                         pad("rxp").eq(getattr(self, f"port{p}_rxp")),
                         pad("init_clk").eq(ClockSignal("init")), pad("reset").eq(por)]
            if has("txn"):
                m.d.comb += [getattr(self, f"port{p}_txn").eq(pad("txn")),
                             pad("rxn").eq(getattr(self, f"port{p}_rxn"))]
            if has("gt_refclk_p"):
                m.d.comb += pad("gt_refclk_p").eq(getattr(self, f"{refclk}_p"))
            if has("gt_refclk_n"):
                m.d.comb += pad("gt_refclk_n").eq(getattr(self, f"{refclk}_n"))
            if has("gt_refclk"):
                # Virtex-5: the core takes its reference clock already buffered (UG196: an
                # IBUFDS drives the GTP_DUAL's CLKIN), one buffer per reference clock.
                if refclk not in gt_refclk:
                    gt_refclk[refclk] = Signal(name=f"{refclk}_ibuf")
                    m.submodules[f"{refclk}_ibufds"] = Instance(
                        "IBUFDS", i_I=getattr(self, f"{refclk}_p"),
                        i_IB=getattr(self, f"{refclk}_n"), o_O=gt_refclk[refclk])
                m.d.comb += pad("gt_refclk").eq(gt_refclk[refclk])
            if has("user_clk") and p in cp.gt_groups:
                first, tx_lock, tx_out_clk, gclocks, glocked = gt[cp.gt_groups[p]]
                m.d.comb += [pad("user_clk").eq(gclocks["user"]),
                             pad("sync_clk").eq(gclocks["sync"]),
                             pad("pll_not_locked").eq(~glocked)]
                if p == first:
                    m.d.comb += [tx_out_clk.eq(pad("tx_out_clk")), tx_lock.eq(pad("tx_lock"))]
            elif has("user_clk"):
                m.d.comb += pad("user_clk").eq(clocks[cp.sl3_clocks[p]])
            if has("tx_serial_clk"):
                serial, tlocked = tx_serial[p]
                m.d.comb += [pad("tx_serial_clk").eq(serial), pad("tx_pll_locked").eq(tlocked)]

        # -- status LEDs ----------------------------------------------------------------------
        if board.leds is not None:
            leds = self._leds(m, sigs, status)
            m.d.comb += self.led.eq(~leds if board.leds.active_low else leds)
        return m

    def _leds(self, m: Module, sigs: dict[str, Signal], status: list[Value]) -> Value:
        n = len(self.board.leds.pins)
        links = len(self.plan.ports)
        bits = max(1, round(math.log2(max(2, float(self.clock_plan.network_hz)))))
        beat = Signal(bits)
        m.d.sync += beat.eq(beat + 1)
        heartbeat = beat[-1]
        for s in status:
            heartbeat = heartbeat ^ s
        leds = [heartbeat]
        link_up = sigs["link_up"][:links] if links else Const(1, 1)
        dropped = Signal()
        m.d.sync += dropped.eq(sigs["dropped"] != 0)
        if n == 2:
            leds.append(link_up.all())
        elif n >= 3:
            slots = n - 2
            for i in range(slots):
                if i < slots - 1 or links <= slots:
                    leds.append(link_up[i] if i < links else Const(0, 1))
                else:
                    leds.append(link_up[i:].all())
            leds.append(dropped)
        return Cat(*leds[:n])


def _clock_net(instance: str, name: str) -> str:
    """Name of the buffered clock net of PLL output ``name`` in the board top."""
    prefix = "" if instance == "pll" else instance.replace("gt_pll", "gt") + "_"
    return f"clk_{prefix}{name}"


def _attr_mhz(hz: Fraction) -> str:
    text = f"{float(hz) / MHZ:.6f}".rstrip("0")
    return text + "0" if text.endswith(".") else text

