"""Clock planning: every clock a node's board top needs, as data, before any hardware.

:func:`clock_plan` picks the board clock and computes the PLL (or MMCM) settings for every
clock the node needs: the network clock, the link adapters' init clock, the LVDS transmit
clocks, the Virtex-5 Aurora user clocks, the SerialLite III user clock and the Intel
transceiver PLLs. The result, :class:`ClockPlan`, is what the board top
(:class:`optnet.hw.board.BoardTop`) instantiates, what the constraint files
(:mod:`optnet.emit.constraints`, through :mod:`optnet.plan.pins`) constrain, what the report
prints and what the Quartus project script generates ``optnet_iopll`` from. The PLL
primitives' datasheet limits are device facts (:mod:`optnet.devices.plls`); the solver that
searches them is :func:`solve_pll`.

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
limits (:data:`optnet.devices.plls.PLL_LIMITS`). A setting works when every output is
within :data:`TOLERANCE` of its request (within :data:`AT_MOST_TOLERANCE` below an
``at_most`` one); of those, the one with the smallest summed relative error is taken, then
the family's preference (see :func:`solve_pll`). When none works, :class:`PllError` says
why, naming the board and the clock. The achieved frequencies are in the plan.

*Link adapter clocks.* Virtex-5 Aurora cores take their user and sync clocks from a
``PLL_BASE`` per group of ports sharing a reference clock and line rate, fed by one
GTP's ``TX_OUT_CLK`` (the core's example clock module). Intel SerialLite III and
Interlaken ports get their serial clocks from ATX PLL IP (:class:`TxPllSettings`).

*Reference clocks.* A transceiver reference clock enters the board top on one port per
pair of pins, named after the first board port that uses them (:func:`refclk_port_name`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from optnet.devices.families import family
from optnet.devices.linkip import sl3_user_clock
from optnet.devices.plls import MHZ, PLL_LIMITS, PllLimits
from optnet.plan import NodePlan, PortPlan
from optnet.plan.ip import atx_pll_name
from optnet.plan.transceivers import TxPllPlan
from optnet.spec.models import BoardDesc

__all__ = [
    "AT_MOST_TOLERANCE",
    "INIT_RANGES",
    "IOPLL_MODULE",
    "TOLERANCE",
    "ClockOutput",
    "ClockPlan",
    "ClockRequest",
    "IopllSettings",
    "PllError",
    "PllSetting",
    "TxPllSettings",
    "buffers_refclk",
    "clock_plan",
    "pll_kind",
    "refclk_port_name",
    "solve_pll",
    "speed_grade",
]

#: Largest relative difference between a PLL output and its request that still counts as
#: reaching it (1 %): enough for every rounding a real clock plan needs, small enough that
#: a clock the PLL cannot really make is reported rather than silently replaced.
TOLERANCE = Fraction(1, 100)

#: How far below its request an ``at_most`` output may fall (10 %). Such a clock sets a
#: link's transmit rate, so a slower one only costs bandwidth (OPTWEB ran its SerialLite III
#: user clock at 355 MHz, 5 % under what its 25 Gb/s lanes could carry).
AT_MOST_TOLERANCE = Fraction(1, 10)

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



class PllError(ValueError):
    """No PLL setting makes the clocks a board top needs; the message says which and why."""



def pll_kind(board: BoardDesc) -> str:
    """The PLL primitive (or IP) the board top uses on ``board``'s family
    (:attr:`optnet.devices.families.Family.pll`).

    Raises
    ------
    PllError
        For a family optnet has no PLL model for.
    """
    try:
        fam = family(board.family)
    except ValueError:
        fam = None
    if fam is not None and fam.vendor == board.vendor and fam.pll is not None:
        return fam.pll
    raise PllError(f"Board '{board.name}' is a {board.vendor} {board.family} part, for which "
                   f"optnet has no PLL model; it knows 7-series and UltraScale+ MMCMs, the "
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

    Every setting within the primitive's limits (:data:`~optnet.devices.plls.PLL_LIMITS`)
    is considered. The chosen one keeps every output within its tolerance
    (:data:`TOLERANCE`, or :data:`AT_MOST_TOLERANCE` below an ``at_most`` request) if any
    does, and has the smallest sum of relative output errors among those; ties go to the
    family's preference: for ``EHXPLLL`` the VCO nearest 600 MHz and then the first in
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
        A key of :data:`~optnet.devices.plls.PLL_LIMITS`.
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
    Transceiver PHY User Guide 683621, ATX PLL IP). The instances are the ATX PLLs the
    transceiver plan placed for the port (:class:`~optnet.plan.transceivers.TxPllPlan`):
    above 17.4 Gb/s the lanes are GXT channels, which an ATX PLL drives two at a time
    through its GXT clock output (``tx_serial_clk_gxt``); below, one instance drives every
    lane of the port (``tx_serial_clk``).

    Attributes
    ----------
    module : str
    port : int
        Router port.
    instances : int
    lanes_per_instance : int
        The most lanes one instance clocks.
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
    placement : tuple of TxPllPlan
        The transceiver plan's PLL of each instance, in instance order: the lanes it clocks
        (indices into the port's lanes) and, where the board file gives sites, its bank and
        triplet.
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
    placement: tuple[TxPllPlan, ...] = ()




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
        if buffers_refclk(port) and _refclk_key(board, port.board_port) == key:
            return f"{port.board_port}_refclk"
    return f"{board_port}_refclk"


def buffers_refclk(port: PortPlan) -> bool:
    """Whether ``port``'s link core takes a reference clock from the board's pins: every
    transceiver core but a slave, which takes its master's (:mod:`optnet.plan.transceivers`)."""
    return port.phy != "lvds" and (port.xcvr is None or port.xcvr.role != "slave")


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
            placed = port.xcvr.tx_plls if port.xcvr is not None else ()
            if not placed or any(t.kind != "ATX" for t in placed):
                raise PllError(
                    f"The transceiver plan of node '{plan.node}' gives port {port.name} "
                    f"({port.phy}) no ATX PLL placement (board '{board.name}' has no "
                    f"transceiver model in optnet.devices.transceivers, or its line rate no "
                    f"ATX PLL), so the board top cannot drive the core's tx_serial_clk.")
            tx_plls.append(TxPllSettings(
                atx_pll_name(port), port.port, len(placed), max(len(t.lanes) for t in placed),
                "tx_serial_clk_gxt" if placed[0].gxt else "tx_serial_clk", port.line_rate,
                Fraction(port.line_rate, 2), Fraction(rc.freq.value) if rc else None,
                refclk_port_name(plan, board, port.board_port), placed))
    return ClockPlan(
        plan.node, board.name, clock_name, ref_hz, pll, init_source, init_hz,
        lvds_clocks, sl3_clocks, tuple(gt_plls), gt_groups, iopll, tuple(tx_plls),
        tuple(notes))


def _mhz_value(hz: Fraction) -> str:
    """MHz as a decimal string with up to 6 decimals, for IP parameters."""
    text = f"{float(hz) / MHZ:.6f}".rstrip("0")
    return text + "0" if text.endswith(".") else text

