"""What each link protocol (PHY) supports: vendors, port kinds, lane and line-rate ranges,
and the width of its user words as optnet configures it.

Figures come from the vendors' product guides, cited per entry; ``latency`` is a typical
one-way latency of the PHY pair (serialiser, encoding, alignment, deserialiser), the PHY's
part of a hop in the latency model every command uses (:mod:`optnet.model`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from optnet.units import Dimension, Quantity, parse_quantity

__all__ = ["PARALLEL_REACH", "PHYS", "PHY_WIDTH_PER_LANE", "PhyInfo", "user_width"]


def _rate(text: str) -> Quantity:
    return parse_quantity(text, Dimension.RATE)


@dataclass(frozen=True)
class PhyInfo:
    """Capabilities of one link protocol.

    Attributes
    ----------
    name : str
    vendors : frozenset of str
        Vendors whose FPGAs have this IP (empty: any).
    port_kind : str
        ``serial`` (transceivers) or ``parallel`` (GPIO).
    min_rate, max_rate : Quantity
        Per-lane line-rate range of the protocol IP itself; the transceiver, speed grade and
        port may limit it further.
    max_lanes : int
    efficiency : Fraction
        Payload bits per line bit of the encoding alone.
    latency : Quantity
        One-way latency of the PHY pair that does not scale with the line rate.
    source : str
    latency_cycles : int
        User-clock cycles of the IP pair's documented latency (0 when only a time is known).
    cycle_bits : int
        Line bits per lane in one user-clock cycle, so a cycle lasts
        ``cycle_bits / line_rate``.
    """

    name: str
    vendors: frozenset[str]
    port_kind: str
    min_rate: Quantity
    max_rate: Quantity
    max_lanes: int
    efficiency: Fraction
    latency: Quantity
    source: str
    latency_cycles: int = 0
    cycle_bits: int = 0

    def pair_latency(self, line_rate: Fraction) -> Fraction:
        """One-way latency of the PHY pair in seconds at ``line_rate`` (bit/s per lane)."""
        return self.latency.value + Fraction(self.latency_cycles * self.cycle_bits) / line_rate


def _ns(value: int) -> Quantity:
    return parse_quantity(f"{value}ns", Dimension.TIME)


PHYS: dict[str, PhyInfo] = {p.name: p for p in (
    PhyInfo("aurora_8b10b", frozenset({"xilinx"}), "serial", _rate("0.5Gbps"),
            _rate("6.6Gbps"), 16, Fraction(8, 10), _ns(0),
            "Xilinx PG046 v11.1 (Aurora 8B/10B): 0.5-6.6 Gb/s per lane, 1-16 lanes; latency "
            "(Latency section) about 37 user_clk cycles TX to RX for 2-byte lanes, one "
            "user_clk per 20 line bits (the BEE3 paper measures a 541 ns hop at 1.95 Gb/s)",
            latency_cycles=37, cycle_bits=20),
    PhyInfo("aurora_64b66b", frozenset({"xilinx"}), "serial", _rate("0.5Gbps"),
            _rate("28.21Gbps"), 16, Fraction(64, 66), _ns(0),
            "Xilinx PG074 v12.0 (Aurora 64B/66B): from 0.5 Gb/s, up to 16 lanes, GTY up to "
            "28.2 Gb/s; latency table: 46 logic + 2 gearbox + 7 clock compensation user_clk "
            "cycles (one lane), user_clk = line rate / 64 (BlueDBM measures 0.48 us at 10 "
            "Gb/s)", latency_cycles=55, cycle_bits=64),
    PhyInfo("serial_lite_3", frozenset({"intel"}), "serial", _rate("1Gbps"),
            _rate("28.3Gbps"), 24, Fraction(64, 67), _ns(150),
            "Intel UG-683330 (Serial Lite III Streaming): Stratix 10 1-24 lanes up to 28 Gbps "
            "(H-tile GXT 28.3 Gb/s, UG-683621); latency 0.15 us at 25 Gb/s as OPTWEB "
            "measures it (§4.3.2); the legacy user guide gives 213-280 ns on Arria 10"),
    PhyInfo("interlaken", frozenset({"intel", "xilinx"}), "serial", _rate("3.125Gbps"),
            _rate("53.125Gbps"), 12, Fraction(64, 67), _ns(300),
            "Intel UG-683396 (Interlaken 2nd gen): 4-12 lanes, 6.25-53.125 Gb/s; Xilinx PG169 "
            "v2.4: 1-12 lanes, 3.125-25.78125 Gb/s; 64B/67B"),
    PhyInfo("raw_8b10b", frozenset({"lattice"}), "serial", _rate("0.27Gbps"),
            _rate("5Gbps"), 4, Fraction(8, 10), _ns(200),
            "Lattice TN1261 (ECP5/ECP5-5G SERDES/PCS): 8b/10b PCS, 270 Mb/s to 5 Gb/s per "
            "channel on ECP5-5G; optnet's own framing above it"),
    PhyInfo("lvds", frozenset(), "parallel", _rate("1Mbps"), _rate("1.6Gbps"), 64,
            Fraction(8, 10), _ns(20),
            "Source-synchronous DDR over GPIO pairs (optnet.hw.phy.lvds: 10-bit words, a "
            "2-bit data/control header per byte, and 1 word in 129 for alignment, not "
            "counted here); the board port's max_line_rate is the real limit; BEE3 "
            "on-board links: 20 ns at 500 MT/s"),
)}

# Longest link a source-synchronous parallel bus is trusted over, by connector: skew
# between pairs grows with length, and these links have no deskew beyond IODELAY taps.
PARALLEL_REACH = {"onboard": Fraction(1, 2), None: Fraction(1)}

#: User-interface bits per lane of each protocol's IP, as configured by optnet.
PHY_WIDTH_PER_LANE = {
    "aurora_8b10b": 32,   # 4-byte lanes (PG046 "Lane Width" = 4)
    "aurora_64b66b": 64,  # PG074: 64-bit user data per lane
    "serial_lite_3": 64,  # Intel SerialLite III Streaming: 64 bits per lane
    "interlaken": 64,     # 64 bits per lane on the segmented user interface
    "raw_8b10b": 16,      # ECP5 DCU PCS at 16 bits (2 bytes) per channel
    # 10-bit line words per pair (2-bit data/control header + 8 user bits, 5 DDR cycles):
    # a byte per lane keeps the header overhead at 20 % and the user word a whole number of
    # bytes (see optnet.hw.phy.lvds).
    "lvds": 8,
}


def user_width(phy: str, lanes: int) -> int:
    """Width of the user data words of ``phy`` bonded over ``lanes`` lanes (a vendor core
    may differ on some families: :func:`optnet.devices.linkip.user_width_for`)."""
    return PHY_WIDTH_PER_LANE[phy] * lanes
