"""The link frame's geometry: header layout and the choice of header units and flits."""

from __future__ import annotations

import pytest

from optnet.frame import MAX_FLITS, frame_format


@pytest.mark.parametrize(("unit", "vcs", "crc", "units", "flits"), [
    (128, 2, 32, 2, 64),     # BlueDBM: 2 header units for 64 flits
    (32, 2, 32, 7, 56),      # CusComNet: the count field and the side bits set the limit
    (32, 2, 16, 6, 56),
    (256, 1, 0, 1, 64),      # OPTWEB: one unit holds everything
])
def test_frame_format_takes_the_largest_share_of_flits(unit, vcs, crc, units, flits):
    fmt = frame_format(unit, vcs, seq_bits=9, credit_bits=8, crc_bits=crc)
    assert (fmt.header_units, fmt.max_flits) == (units, flits)
    # No other (header units, flits) that fits does better: brute force.
    for h in range(1, 9):
        for b in range(1, MAX_FLITS + 1):
            header = (4 + b.bit_length() + 2 * 9 + 3 + 8 * vcs + 2 * crc
                      + fmt.side_bits * b)
            if header <= h * unit:
                assert b / (b + h) <= fmt.efficiency()


def test_fields_fill_the_header_exactly():
    fmt = frame_format(128, 2, seq_bits=9, credit_bits=6, crc_bits=32)
    names = [name for name, _ in fmt.fields]
    assert names == ["marker", "count", "seq", "ack", "nak", "restart", "restart_ack",
                     "credits", "side", "crc", "pad", "hec"]
    assert sum(bits for _, bits in fmt.fields) == fmt.header_bits == 256
    assert dict(fmt.fields)["side"] == 64 * 2 and dict(fmt.fields)["pad"] >= 0


def test_no_room_is_an_error():
    with pytest.raises(ValueError, match="No frame of 8-bit units"):
        frame_format(8, 64, seq_bits=12, credit_bits=12, crc_bits=32)
