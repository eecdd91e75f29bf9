"""PHY adapters: what every link protocol looks like to the link layer.

Every adapter is a :class:`wiring.Component` with at least these members::

    tx : In(stream.Signature(unsigned(width)))                     words to send
    rx : Out(stream.Signature(unsigned(width), always_ready=True))  words received
    up : Out(1)                                                     link usable

``tx`` and ``rx`` live in the adapter's user clock domain, named by its ``domain``
attribute; the adapter creates that domain (its clock comes from the vendor IP or the
forwarded clock). ``rx`` has no ready: no link IP can stall its receiver, so the link layer
must take every word (it has the buffer space, because the far end only sends what the
link credits allow). Words arrive in order and whole; framing above the word is the link
layer's job. Pads (transceiver pins, reference clocks, LVDS pairs) are further members
named after the board file's fields.
"""

from __future__ import annotations

from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PHY_WIDTH_PER_LANE", "PhyInterface", "user_width"]

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
    """Width of the user data words of ``phy`` bonded over ``lanes`` lanes."""
    return PHY_WIDTH_PER_LANE[phy] * lanes


class PhyInterface(wiring.Component):
    """Base of PHY adapters: the ``tx``/``rx``/``up`` members of the contract above.

    Parameters
    ----------
    width : int
        User word width.
    domain : str
        Name of the user clock domain the adapter creates.
    pads : dict of str to wiring.Member
        Extra members (pins) of the concrete adapter.
    """

    def __init__(self, width: int, domain: str, pads: dict | None = None):
        self.width = width
        self.domain = domain
        members = {
            "tx": In(stream.Signature(width)),
            "rx": Out(stream.Signature(width, always_ready=True)),
            "up": Out(1),
        }
        members.update(pads or {})
        super().__init__(members)
