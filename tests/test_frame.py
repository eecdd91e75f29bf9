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


def test_fields_leave_the_top_columns_of_every_unit_free():
    # BlueDBM's frame (128-bit units, CRC-16): the fields before the hec are spread over
    # both header units, 95 bits each, so that columns 95-127 are padding in the first unit
    # and padding or the hec (filled in last) in the second: the sender picks a flit's bit
    # or zero there, not a header bit.
    fmt = frame_format(128, 2, seq_bits=10, credit_bits=6, crc_bits=16)
    assert [name for name, _ in fmt.fields] == [
        "marker", "count", "seq", "ack", "nak", "restart", "restart_ack", "credits", "side",
        "pad", "side", "crc", "pad", "hec"]
    at, columns = 0, set()
    for name, bits in fmt.fields:
        if name not in ("pad", "hec"):
            columns |= {i % fmt.unit for i in range(at, at + bits)}
        at += bits
    assert at == fmt.header_bits == 256
    assert columns == set(range(95))
    assert sum(bits for name, bits in fmt.fields if name == "side") == 64 * 2
    assert fmt.fields[-1] == ("hec", 16)
    # Where spreading would cost a flit (the hec does not fit above a unit's share), the
    # fields stay packed: CRC-32 over the same units.
    packed = frame_format(128, 2, seq_bits=10, credit_bits=6, crc_bits=32)
    assert [name for name, _ in packed.fields][-3:] == ["crc", "pad", "hec"]
    assert packed.max_flits == fmt.max_flits == 64
