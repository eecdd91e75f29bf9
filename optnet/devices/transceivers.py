"""Transceivers as data: how channels group into quads (banks, tiles), which reference
clocks a group takes and how far one may travel, and which PLLs make which line rates.

Every figure cites the vendor document it comes from. The transceiver plan
(:mod:`optnet.plan.transceivers`) reads these facts to give each quad one owner of its
shared logic and each reference clock pad one buffer, and lint reports a design that breaks
one of the rules here (E33x) with the rule's source.

Groups and numbering
--------------------
A *group* is what shares a PLL and reference clock inputs: a quad of four channels on Xilinx
7 series and UltraScale+ (the ``*_COMMON`` primitive holds the quad's PLLs), a
``GTP_DUAL`` tile of two channels on Virtex-5 (one PLL for both), a bank of six channels on
Stratix 10 L-/H-tile. Channel sites name the column and the position in it; the group is
the position divided by the channels per group (``GTXE2_CHANNEL_X1Y25`` is channel 1 of the
quad at Y = 24..27 of column 1, quad index 6 counting from the bottom).

A Stratix 10 bank is two *triplets* of three channels, each with an ATX PLL, an fPLL and a
dedicated reference clock pin: the bottom triplet (channels 0-2, pin ``..._CHB``) and the top
(channels 3-5, ``..._CHT``). GXT channels take their reference clock in the triplet of their
master ATX PLL (UG-683621 §3.1.1.2), so a Stratix 10 reference clock site names its triplet
too (:meth:`Transceiver.refclk_at`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["GBPS", "TRANSCEIVERS", "Pll", "RefclkSite", "Site", "Transceiver", "bank_name",
           "gxt_refclk_site", "transceiver", "triplet_of"]

GBPS = 10**9


@dataclass(frozen=True)
class Pll:
    """A transceiver PLL kind.

    A line rate ``r`` is reachable when, for a divider ``d`` of :attr:`dividers`, the VCO
    runs at ``r * d / per_vco`` inside one of the :attr:`bands` and ``r`` is within
    :attr:`rates` (the data sheet's limits on the line rate this PLL may clock).

    Attributes
    ----------
    name : str
        ``CPLL``, ``QPLL``, ``QPLL0``, ``QPLL1``, ``PLL`` (GTP_DUAL), ``ATX``, ``fPLL``.
    shared : bool
        One per group (its setting binds every channel it clocks) rather than per channel.
    bands : tuple of (int, int)
        VCO ranges, Hz.
    per_vco : Fraction
        Line rate per VCO hertz at divider 1.
    dividers : tuple of int
        Output dividers.
    rates : tuple of (int, int)
        Line-rate ranges (bit/s) the data sheet allows this PLL to clock.
    source : str
    """

    name: str
    shared: bool
    bands: tuple[tuple[int, int], ...]
    per_vco: Fraction
    dividers: tuple[int, ...]
    rates: tuple[tuple[int, int], ...]
    source: str

    def reaches(self, rate: int) -> bool:
        """Whether this PLL can clock a channel at ``rate`` bit/s."""
        if not any(lo <= rate <= hi for lo, hi in self.rates):
            return False
        return any(lo <= Fraction(rate * d) / self.per_vco <= hi
                   for d in self.dividers for lo, hi in self.bands)


@dataclass(frozen=True)
class Site:
    """Where a channel is: its column, its group in the column, its channel in the group."""

    column: int
    group: int
    channel: int


@dataclass(frozen=True)
class RefclkSite:
    """Where a reference clock pad is.

    Attributes
    ----------
    column, group : int
        As :class:`Site`'s: the pad's column and the group (quad, bank) it sits in.
    triplet : int or None
        Stratix 10: the triplet of the bank whose dedicated pin it is (0 the bottom, channels
        0-2; 1 the top, channels 3-5); None where a site does not name one.
    side : str
        Stratix 10: the side letter as the site wrote it (``L``, ``R`` or ``""``), so a
        message can name a neighbouring pin in the same spelling.
    """

    column: int
    group: int
    triplet: int | None = None
    side: str = ""


@dataclass(frozen=True)
class Transceiver:
    """One transceiver type of one device family.

    Attributes
    ----------
    name : str
        The vendor's name (GTXE2, GTYE4, GTP_DUAL, H-tile).
    families : tuple of str
        Board-file families with this transceiver.
    types : tuple of str
        Values of a board file's ``transceivers.type`` that mean it.
    group : str
        What a group is called (quad, tile, bank).
    channels : int
        Channels per group.
    refclk_inputs : int
        Dedicated reference clock inputs per group.
    refclk_reach : int
        Groups above and below its own (in the same column) a reference clock may feed.
    refclk_buffer : str or None
        The primitive that buffers a reference clock pad (one per pad).
    common : str or None
        The per-group primitive that holds the shared PLLs (one per group).
    plls : tuple of Pll
        In the order the link IP prefers them.
    site : re.Pattern
        Channel site; groups ``column``, ``position`` (and ``channel`` when the site names
        the channel within its group apart; Stratix 10: ``GXB1C_CH0``, tile side and number,
        bank letter, channel).
    refclk_site : re.Pattern or None
        Reference clock buffer site (groups ``column``, ``position``: :attr:`refclk_inputs`
        buffers per group, numbered up the column). Stratix 10 names the dedicated pin
        instead (groups ``side``, ``column``, ``bank``, ``triplet``:
        ``REFCLK_GXBL1C_CHT``).
    source : str
    """

    name: str
    families: tuple[str, ...]
    types: tuple[str, ...]
    group: str
    channels: int
    refclk_inputs: int
    refclk_reach: int
    refclk_buffer: str | None
    common: str | None
    plls: tuple[Pll, ...]
    site: re.Pattern
    refclk_site: re.Pattern | None
    source: str

    def locate(self, site: str) -> Site | None:
        """The column, group and channel of channel ``site``; None for a site of another
        form."""
        m = self.site.fullmatch(site)
        if m is None:
            return None
        column = int(m["column"])
        if m.groupdict().get("bank"):
            # Stratix 10 banks are lettered up a tile's side: 1C, 1D, ... (UG-683621).
            return Site(column, ord(m["bank"]) - ord("C"), int(m["channel"]))
        if m.groupdict().get("channel") is not None:
            return Site(column, int(m["position"]), int(m["channel"]))
        position = int(m["position"])
        return Site(column, position // self.channels, position % self.channels)

    def refclk_at(self, site: str) -> RefclkSite | None:
        """Where reference clock ``site`` is (with its triplet on Stratix 10); None for a
        site of another form."""
        m = self.refclk_site.fullmatch(site) if self.refclk_site else None
        if m is None:
            return None
        column = int(m["column"])
        if m.groupdict().get("bank"):
            return RefclkSite(column, ord(m["bank"]) - ord("C"), "BT".index(m["triplet"]),
                              m["side"] or "")
        return RefclkSite(column, int(m["position"]) // self.refclk_inputs)

    def locate_refclk(self, site: str) -> tuple[int, int] | None:
        """(column, group) of reference clock buffer ``site``; None for another form."""
        at = self.refclk_at(site)
        return None if at is None else (at.column, at.group)

    def refclk_input(self, site: str) -> int | None:
        """Which of its group's :attr:`refclk_inputs` reference clock ``site`` is; None for
        a site of another form.

        Xilinx numbers the buffers up the column, :attr:`refclk_inputs` to a quad, so
        ``IBUFDS_GTE2_X1Y13`` is ``MGTREFCLK1`` of quad 6 (UG476 and UG576/UG578,
        "Reference Clock Selection and Distribution": MGTREFCLK0 and MGTREFCLK1 per quad).
        A Stratix 10 pin is its triplet's (0 ``CHB``, 1 ``CHT``).
        """
        m = self.refclk_site.fullmatch(site) if self.refclk_site else None
        if m is None:
            return None
        if m.groupdict().get("triplet"):
            return "BT".index(m["triplet"])
        return int(m["position"]) % self.refclk_inputs

    def position(self, at: Site) -> int:
        """The position of channel ``at`` up its column, the number its site gives it
        (:meth:`locate` backwards: ``Site(1, 6, 1)`` is ``GTXE2_CHANNEL_X1Y25``, and
        ``GTP_DUAL_X0Y3_CH1`` is position 7, the second GTP of the fourth tile); on
        Stratix 10 the channel's number counted from channel 0 of bank C."""
        return at.group * self.channels + at.channel

    def pll(self, name: str) -> Pll:
        """The PLL called ``name``."""
        return next(p for p in self.plls if p.name == name)


def _g(value: float) -> int:
    return round(value * GBPS)


_DIV5 = (1, 2, 4, 8, 16)

# Xilinx 7 series. UG476 7 Series FPGAs GTX/GTH Transceivers v1.12.1: Table 2-7 (CPLL: VCO
# 1.6-3.3 GHz; line rate = f_PLLclkout * 2 / D, f_PLLclkout = VCO; D = 1, 2, 4, 8, 16),
# Table 2-15 and 2-16 (QPLL: GTX VCO 5.93-8.0 GHz lower band and 9.8-12.5 GHz upper band; GTH
# 8.0-13.1 GHz; f_PLLclkout = VCO / 2, line rate = f_PLLclkout * 2 / D), "Reference Clock
# Selection and Distribution" (two MGTREFCLK inputs per quad, IBUFDS_GTE2; a quad may use a
# reference clock from up to one quad above and one below through the north/south routing).
_CPLL_7 = Pll("CPLL", False, ((1_600_000_000, 3_300_000_000),), Fraction(2), _DIV5,
              ((_g(0.5), _g(6.6)),), "UG476 Table 2-7 (CPLL), DS183/DS182 (6.6 Gb/s)")
_QPLL_GTX = Pll("QPLL", True, ((5_930_000_000, 8_000_000_000),
                               (9_800_000_000, 12_500_000_000)), Fraction(1), _DIV5,
                ((_g(0.5), _g(12.5)),), "UG476 Table 2-16 (GTX QPLL bands)")
_QPLL_GTH = Pll("QPLL", True, ((8_000_000_000, 13_100_000_000),), Fraction(1), _DIV5,
                ((_g(0.5), _g(13.1)),), "UG476 Table 2-16 (GTH QPLL)")
_SITE_7 = r"GT{kind}E2_CHANNEL_X(?P<column>\d+)Y(?P<position>\d+)"
_SRC_7 = "UG476 7 Series FPGAs GTX/GTH Transceivers, ch. 2 Shared Features"

# UltraScale+. UG576 (GTH) / UG578 (GTY) v1.7: CPLL VCO 2.0-6.25 GHz (line rate = VCO * 2 /
# D); QPLL0 VCO 9.8-16.375 GHz, QPLL1 8.0-13.0 GHz, output VCO / 2 and line rate = output *
# 2 / D (half rate) or output * 4 / D (GTY full rate); two MGTREFCLK per quad (IBUFDS_GTE4);
# a reference clock may be shared with up to two quads above and two below.
_CPLL_USP = Pll("CPLL", False, ((2_000_000_000, 6_250_000_000),), Fraction(2), _DIV5,
                ((_g(0.5), _g(12.5)),), "UG576/UG578 CPLL (VCO 2.0-6.25 GHz)")
_QPLL0_GTY = Pll("QPLL0", True, ((9_800_000_000, 16_375_000_000),), Fraction(2), _DIV5,
                 ((_g(0.5), _g(32.75)),), "UG578 QPLL0 (VCO 9.8-16.375 GHz, full rate)")
_QPLL1_GTY = Pll("QPLL1", True, ((8_000_000_000, 13_000_000_000),), Fraction(2), _DIV5,
                 ((_g(0.5), _g(26.0)),), "UG578 QPLL1 (VCO 8.0-13.0 GHz, full rate)")
_QPLL0_GTH = Pll("QPLL0", True, ((9_800_000_000, 16_375_000_000),), Fraction(1), _DIV5,
                 ((_g(0.5), _g(16.375)),), "UG576 QPLL0 (VCO 9.8-16.375 GHz)")
_QPLL1_GTH = Pll("QPLL1", True, ((8_000_000_000, 13_000_000_000),), Fraction(1), _DIV5,
                 ((_g(0.5), _g(13.0)),), "UG576 QPLL1 (VCO 8.0-13.0 GHz)")
_SITE_USP = r"GT{kind}E4_CHANNEL_X(?P<column>\d+)Y(?P<position>\d+)"

# Virtex-5 LXT/SXT GTP_DUAL (UG196 v1.8, ch. 5 "Shared PMA PLL"): one PLL per tile clocks
# both channels from the tile's one reference clock (CLKIN); the PLL VCO runs at 1.5-3.125
# GHz and a channel's line rate is VCO * 2 / D with D = 1, 2, 4 (DS202: 100 Mb/s to
# 3.75 Gb/s depending on grade).
_PLL_V5 = Pll("PLL", True, ((1_500_000_000, 3_125_000_000),), Fraction(2), (1, 2, 4),
              ((_g(0.1), _g(3.75)),), "UG196 ch. 5 Shared PMA PLL; DS202 GTP line rates")

# Stratix 10 L-/H-tile (UG-683621 ch. 3 PLLs and Clock Networks; AN 778): banks of six
# channels; per bank two ATX PLLs (GX up to 17.4 Gb/s, and GXT up to the grade's maximum
# through the GXT clock lines, one ATX PLL per two GXT channels), two fPLLs (up to 12.5
# Gb/s) and the channels' CMU PLLs; two dedicated reference clock pins per bank.
_ATX = Pll("ATX", True, ((7_200_000_000, 14_400_000_000),), Fraction(2), (1, 2, 4, 8, 16),
           ((_g(1.0), _g(28.3)),), "UG-683621 ATX PLL")
_FPLL = Pll("fPLL", True, ((6_000_000_000, 14_000_000_000),), Fraction(2), (1, 2, 4, 8),
            ((_g(1.0), _g(12.5)),), "UG-683621 fPLL")


# Stratix 10 dedicated reference clock pins, two per bank, as Intel's pin-out files name them:
# REFCLK_GXB<side><column><bank>_CH<B|T><p|n>: side L or R, the column digit of the channel
# pins (GXBL1C_TX_CH0p; 1 on the left, 4 on the right in the parts seen), bank letter (four
# banks to a tile, AN 778 §1.1.1), CHB the bottom and CHT the top triplet. The spelling is
# confirmed by the pin names of a QSF generated from the 1SM21B UF53 pin-out (CERN's
# mvsoliveira/PCBpy out/1sm21bUF53_U3.tcl, "pin name" comments: REFCLK_GXBL1C_CHBP,
# REFCLK_GXBL1D_CHTP, REFCLK_GXBR4N_CHTP, beside GXBL1C_TX_CH1P); the family's pin table
# (683028 Pin Connection Guidelines, "H-Tile and L-Tile Pins") could not be read here. That
# CHB serves channels 0-2 and CHT channels 3-5 is read from the names and from the bottom and
# top ATX PLL of a bank in UG-683621 §3.1.1.2, not from a pin table. A site drops the pin's
# p/n (a trailing P, as that QSF's upper-case names end, is accepted) and may drop the side
# letter, as the channel sites here do (GXB1C_CH0): the digit is the column either way.
_REFCLK_S10 = r"REFCLK_GXB(?P<side>[LR])?(?P<column>\d)(?P<bank>[C-N])_CH(?P<triplet>[BT])P?"


def _xilinx(kind: str, name: str, families: tuple[str, ...], pattern: str, plls, reach: int,
            buffer: str, source: str) -> Transceiver:
    return Transceiver(name, families, (kind,), "quad", 4, 2, reach, buffer, f"{name}_COMMON",
                       plls, re.compile(pattern.format(kind=kind[-1])),
                       re.compile(rf"{buffer}_X(?P<column>\d+)Y(?P<position>\d+)"), source)


_SEVEN = ("virtex7", "kintex7", "artix7", "zynq7000", "7series")
_USP = ("ultrascale_plus", "zynq_ultrascale_plus", "virtex_ultrascale_plus")

#: Every transceiver optnet plans for.
TRANSCEIVERS: tuple[Transceiver, ...] = (
    _xilinx("GTX", "GTXE2", _SEVEN, _SITE_7, (_CPLL_7, _QPLL_GTX), 1, "IBUFDS_GTE2", _SRC_7),
    _xilinx("GTH", "GTHE2", _SEVEN, _SITE_7, (_CPLL_7, _QPLL_GTH), 1, "IBUFDS_GTE2", _SRC_7),
    _xilinx("GTH", "GTHE4", _USP, _SITE_USP, (_CPLL_USP, _QPLL0_GTH, _QPLL1_GTH), 2,
            "IBUFDS_GTE4", "UG576 UltraScale Architecture GTH Transceivers"),
    _xilinx("GTY", "GTYE4", _USP, _SITE_USP, (_CPLL_USP, _QPLL0_GTY, _QPLL1_GTY), 2,
            "IBUFDS_GTE4", "UG578 UltraScale Architecture GTY Transceivers"),
    # A GTP_DUAL's reference clock reaches up to three tiles above and below through the
    # dedicated clock routing, each tile on the way instantiated (UG196 ch. 5 "Reference
    # Clock Sharing"; Xilinx AR#33473 as cited by LEAP-Core/leap-platforms); unconfirmed
    # against the guide's text, which could not be retrieved.
    Transceiver("GTP_DUAL", ("virtex5",), ("GTP",), "tile", 2, 1, 3, "IBUFDS", None,
                (_PLL_V5,), re.compile(r"GTP_DUAL_X(?P<column>\d+)Y(?P<position>\d+)"
                                       r"_CH(?P<channel>[01])"), None,
                "UG196 Virtex-5 RocketIO GTP Transceiver User Guide, ch. 5 (GTP_DUAL tile)"),
    Transceiver("H-tile", ("stratix10",), ("H-tile", "L-tile"), "bank", 6, 2, 0, None, None,
                (_ATX, _FPLL),
                re.compile(r"GXB(?P<column>\d)(?P<bank>[C-N])_CH(?P<channel>[0-5])"),
                re.compile(_REFCLK_S10),
                "UG-683621 Stratix 10 L- and H-Tile Transceiver PHY User Guide; AN 778"),
)


#: Stratix 10 L-/H-tile channels run as GXT above this line rate (AN 778 §2.1, Table 3: GX
#: to 17.4 Gb/s chip to chip); GXT channels are 0, 1, 3 and 4 of a bank, at most four per
#: bank (UG-683621 §3.1.1.2), and one ATX PLL clocks two of them without a buffer ATX.
GXT_ABOVE = 17_400_000_000
GXT_PER_BANK = 4
GXT_CHANNELS = (0, 1, 3, 4)
ATX_PER_BANK = 2
#: GXT channels one ATX PLL clocks through its GXT clock output: the two GXT channels of its
#: own triplet, 0 and 1 or 3 and 4 (UG-683621 3.1.1.2; the ATX PLL IP's "local" GXT path,
#: ``enable_28G_local_atx_path``, as in CTSRD-CHERI/S10FPGA xcvr_atx_pll_s10_htile.ip).
GXT_PER_ATX = 2

#: Channels per Stratix 10 triplet (half a bank: one ATX PLL, one fPLL, one dedicated
#: reference clock pin; UG-683621 ch. 3, AN 778 §1.1.3 "upper triplet", "bottom triplet").
TRIPLET_CHANNELS = 3


def triplet_of(channel: int) -> int:
    """The triplet of Stratix 10 bank channel ``channel``: 0 the bottom, 1 the top."""
    return channel // TRIPLET_CHANNELS


def bank_name(column: int, group: int) -> str:
    """A Stratix 10 bank as Intel names it (column 1, group 0: ``1C``)."""
    return f"{column}{chr(ord('C') + group)}"


def gxt_refclk_site(column: int, group: int, triplet: int, side: str = "") -> str:
    """The dedicated reference clock site of a Stratix 10 triplet (``REFCLK_GXBL1C_CHB``),
    in the form :attr:`Transceiver.refclk_site` reads."""
    return f"REFCLK_GXB{side}{bank_name(column, group)}_CH{'BT'[triplet]}"


#: Stratix 10 channels above this rate (GXT, and bonded GX from 16 Gb/s) need the
#: transceiver supplies VCCR_GXB and VCCT_GXB at 1.12 V, declared to Quartus as "1_1V" (AN 778
#: §1.1.2.1 Table 2 and §2.1.1.1 note 3; the Native PHY and ATX PLL parameter "VCCR_GXB and
#: VCCT_GXB supply voltage", the pin assignment XCVR_VCCR_VCCT_VOLTAGE, as in Intel's
#: S10MX_DK designs in corundum/corundum fpga/lib/eth/example/S10MX_DK).
HIGH_VOLTAGE_ABOVE = 16_000_000_000


def analog_voltage(rate: int) -> str | None:
    """The Stratix 10 transceiver supply voltage setting a channel at ``rate`` needs
    (``1_1V``), or None when the default serves."""
    return "1_1V" if rate >= HIGH_VOLTAGE_ABOVE else None


def transceiver(family: str, kind: str | None) -> Transceiver | None:
    """The transceiver of a board whose family and ``transceivers.type`` are given; None
    when optnet has no model of it (ECP5 DCUs: no vendor link IP is planned on them)."""
    for t in TRANSCEIVERS:
        if family in t.families and kind in t.types:
            return t
    return None
