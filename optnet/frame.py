"""The link frame: how a link layer packs flits, acknowledgements and credits onto a PHY.

A link carries a stream of *units*, one flit's data wide (``F`` bits). A frame is a header
of ``h`` units followed by up to ``B`` flits, one unit each::

    header (h units) | flit 1 | ... | flit n           n = count, 0 <= n <= B

The header, low bit first over its ``h * F`` bits:

    marker | count | seq | ack | nak | restart | restart_ack | credits (one counter per VC)
           | per-flit side bits | crc (of the previous frame) | pad | hec

With several header units, and where it costs no flit, the fields before ``hec`` are
spread evenly over the units, each unit's share at its low end and padding above it, so
that the top columns of every unit are zero until the sender fills in ``hec``
(:attr:`FrameFormat.fields`; the sender then needs no multiplexer there).

- ``marker`` (4 bits, ``0b1010``) starts every header, so that a padding unit (marker
  ``0b0101``, see :data:`PAD_MARKER`) is never taken for one.
- ``seq`` is the sequence number of the frame's first flit (flits are numbered, modulo
  ``2**S``); ``ack`` the number of the next flit the sender of this header expects, so it
  acknowledges every flit before it; ``nak`` asks to go back to ``ack`` (go-back-N).
- ``restart``: the sender has restarted (reset or reprogrammed) and is not yet
  synchronised; ``restart_ack``: the sender has reset its state for the far end's restart
  (the handshake is in docs/link-frame.md, "Resets and rejoin").
- ``credits``: cumulative counters (modulo ``2**C``) of flits freed in each VC of the
  receiving router's buffer; a lost header loses no credit.
- ``side``: the ``tail`` bit and VC number of each flit of the *previous* frame (a flit's
  ``head`` bit is not sent: a flit is a head exactly when the previous flit on its VC was
  a tail). The sender knows them only once it has read the flits out of its replay
  buffer, and the receiver needs them only when it delivers the flits.
- ``crc``: the frame check (CRC-32/Ethernet or CRC-16/USB) of the *previous* frame,
  its header and flits. A frame's flits are delivered once the next header has arrived
  with the matching check, so a sender follows a frame with flits by another header (one
  with no flits when it has nothing more to send).
- ``hec``: the header's own check, computed by the same CRC over the header, so that a
  header is a codeword on its own. A header is trusted only when it checks; the receiver
  finds headers by it when it has lost its place.

The numbers ``h`` and ``B`` are chosen per link (:func:`frame_format`) for the largest share
of flits in a full frame: one header unit for wide flits, several for narrow ones.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

__all__ = ["HEADER_MARKER", "MAX_FLITS", "PAD_MARKER", "FrameFormat", "LinkFrame",
           "credit_bits", "frame_format", "link_frame"]

#: The low 4 bits of every header's first unit.
HEADER_MARKER = 0b1010
#: The low 4 bits of a padding unit, which fills the rest of a PHY word wider than a flit.
PAD_MARKER = 0b0101
#: Most flits in one frame: the receiver holds two frames while it checks one.
MAX_FLITS = 64
#: Most header units tried: narrow flits (8 bits, the schema's least) need many.
_MAX_HEADER_UNITS = 64


def _clog2(value: int) -> int:
    return max(0, (value - 1).bit_length())


@dataclass(frozen=True)
class FrameFormat:
    """The frame of one link configuration (see the module docstring).

    Attributes
    ----------
    unit : int
        Bits per unit (the flit's data width).
    vcs : int
    seq_bits : int
        Bits of ``seq`` and ``ack``.
    credit_bits : int
        Bits of each VC's credit counter.
    crc_bits : int
        32, 16 or 0: the width of the frame check and of the header check (0: no checks,
        for a PHY that is trusted).
    header_units : int
    max_flits : int
    """

    unit: int
    vcs: int
    seq_bits: int
    credit_bits: int
    crc_bits: int
    header_units: int
    max_flits: int

    @property
    def vc_bits(self) -> int:
        return _clog2(self.vcs)

    @property
    def side_bits(self) -> int:
        """Side bits per flit: ``tail`` and the VC number."""
        return 1 + self.vc_bits

    @property
    def fields(self) -> tuple[tuple[str, int], ...]:
        """``(name, bits)`` of the header's fields, low bits first, ``hec`` in the top bits
        and ``pad`` (zeros) filling the rest.

        With several header units, when it costs no flit, the fields before ``hec`` are
        spread evenly over the units, each unit's share at its low end and padding above it
        (a field that crosses from one unit to the next is then listed once per unit, as
        are the pads): the top columns of every unit are then zero until the ``hec`` is
        filled in, and the sender needs no multiplexer there between a header unit and a
        flit (docs/link-frame.md)."""
        used = [("marker", 4), ("count", _clog2(self.max_flits + 1)),
                ("seq", self.seq_bits), ("ack", self.seq_bits), ("nak", 1),
                ("restart", 1), ("restart_ack", 1),
                ("credits", self.credit_bits * self.vcs),
                ("side", self.side_bits * self.max_flits), ("crc", self.crc_bits)]
        content = sum(b for _, b in used)
        h, unit = self.header_units, self.unit
        share = -(-content // h)
        if h == 1 or share > unit - self.crc_bits:
            return (*used, ("pad", self.header_bits - content - self.crc_bits),
                    ("hec", self.crc_bits))
        out: list[tuple[str, int]] = []
        fields = iter(used)
        name, left = next(fields)
        for u in range(h):
            room = min(share, content - u * share)
            while room:
                take = min(room, left)
                out.append((name, take))
                room, left = room - take, left - take
                if not left:
                    name, left = next(fields, ("", 0))
            top = self.crc_bits if u == h - 1 else 0
            filled = sum(b for _, b in out) - u * unit
            if unit - top - filled:
                out.append(("pad", unit - top - filled))
        out.append(("hec", self.crc_bits))
        return tuple(out)

    @property
    def header_bits(self) -> int:
        return self.header_units * self.unit

    def efficiency(self) -> float:
        """Share of a full frame's units that carry flits."""
        return self.max_flits / (self.max_flits + self.header_units)


def _fixed_bits(vcs: int, seq_bits: int, credit_bits: int, crc_bits: int, flits: int) -> int:
    # marker, count, seq, ack, nak, restart, restart_ack, credits, crc and hec (as wide as
    # the crc)
    return 4 + _clog2(flits + 1) + 2 * seq_bits + 3 + credit_bits * vcs + 2 * crc_bits


def frame_format(unit: int, vcs: int, seq_bits: int, credit_bits: int, crc_bits: int,
                 max_flits: int = MAX_FLITS) -> FrameFormat:
    """The frame with the largest share of flits in a full frame, at most ``max_flits``
    flits and at most 64 header units (ties: the fewer header units).

    Raises
    ------
    ValueError
        If not even one flit fits beside a header of 8 units.
    """
    side = 1 + _clog2(vcs)
    best: FrameFormat | None = None
    for units in range(1, _MAX_HEADER_UNITS + 1):
        flits = max_flits
        # The count field grows with the flits, so shrink until the header fits.
        while flits > 0 and (_fixed_bits(vcs, seq_bits, credit_bits, crc_bits, flits)
                             + side * flits > units * unit):
            flits -= 1
        if flits == 0:
            continue
        fmt = FrameFormat(unit, vcs, seq_bits, credit_bits, crc_bits, units, flits)
        if best is None or fmt.efficiency() > best.efficiency():
            best = fmt
    if best is None:
        raise ValueError(f"No frame of {unit}-bit units holds a flit beside a header of at "
                         f"most {_MAX_HEADER_UNITS} units.")
    return best


@dataclass(frozen=True)
class LinkFrame:
    """The frame and replay buffer of one link layer (:func:`link_frame`).

    Attributes
    ----------
    frame : FrameFormat
    entries : int
        Replay buffer entries: flits sent and not yet acknowledged, a power of two.
    """

    frame: FrameFormat
    entries: int

    @property
    def seq_bits(self) -> int:
        return self.frame.seq_bits


def credit_bits(depth: int) -> int:
    """Bits of a VC's cumulative credit counter for a receive buffer of ``depth`` flits: two
    more than the buffer needs, so that the counter wraps far less often than headers
    arrive."""
    return max(1, (depth - 1).bit_length()) + 2


# (cached: the plan and the model ask for each link's frame many times, and a search over
# header sizes takes about a millisecond)
@functools.cache
def link_frame(unit: int, vcs: int, depth: int, window: int, crc_bits: int) -> LinkFrame:
    """The frame and replay buffer of a link layer: ``unit``-bit flits on ``vcs`` VCs into a
    router buffer of ``depth`` flits per VC, at least ``window`` flits in flight, and a
    ``crc_bits`` check. The hardware (:class:`optnet.plan.configs.LinkConfig`) and the
    report's model (:mod:`optnet.model`) both size frames here.

    The sequence numbers depend on the replay buffer, which must hold two full frames, so
    the frame is sized with the numbers ``window`` needs and the numbers then set for the
    buffer that frame implies (one bit more than the buffer needs, so that a full buffer
    and an empty one differ).
    """
    def bits(count: int) -> int:
        return max(1, (count - 1).bit_length())

    credits = credit_bits(depth)
    probe = frame_format(unit, vcs, bits(max(window, 2)) + 2, credits, crc_bits)
    entries = 1 << bits(max(window, 2 * probe.max_flits))
    frame = frame_format(unit, vcs, bits(entries) + 1, credits, crc_bits,
                         max_flits=probe.max_flits)
    return LinkFrame(frame, entries)
