"""PLL datasheet limits: what each PLL primitive (or IP) optnet clocks a board top with can
do, per speed grade.

The figures are the vendors' switching characteristics and attribute ranges, cited in each
entry's ``source``. :data:`PLL_LIMITS` maps a primitive kind (the ``pll`` of a family in
:mod:`optnet.devices.families`) to a function of the speed grade; the solver that picks a
setting within them is :func:`optnet.plan.clocks.solve_pll`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

__all__ = ["MHZ", "PLL_LIMITS", "PllLimits"]

MHZ = 1_000_000


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


#: Limits of each PLL kind, as a function of the speed grade.
PLL_LIMITS = {
    "MMCME2_BASE": _mmcme2,
    "MMCME4_BASE": _mmcme4,
    "PLL_BASE": _pll_base_v5,
    "EHXPLLL": _ehxplll,
    "IOPLL": _iopll_s10,
}
