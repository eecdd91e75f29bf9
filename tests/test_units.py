from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optnet.units import Dimension, QuantityError, format_quantity, parse_quantity


@pytest.mark.parametrize(("text", "dim", "value"), [
    ("10Gbps", Dimension.RATE, 10**10),
    ("10.3125Gbps", Dimension.RATE, 10_312_500_000),
    ("1.95 Gb/s", Dimension.RATE, 1_950_000_000),
    ("156.25MHz", Dimension.FREQUENCY, 156_250_000),
    ("161.1328125MHz", Dimension.FREQUENCY, Fraction(322_265_625, 2)),
    ("16KiB", Dimension.SIZE, 16 * 1024 * 8),
    ("36Kib", Dimension.SIZE, 36 * 1024),
    ("8 flits", Dimension.FLITS, 8),
    ("64 packets", Dimension.PACKETS, 64),
    ("2m", Dimension.LENGTH, 2),
    ("30cm", Dimension.LENGTH, Fraction(3, 10)),
    ("541ns", Dimension.TIME, Fraction(541, 10**9)),
])
def test_exact_values(text, dim, value):
    assert parse_quantity(text, dim).value == value


def test_no_float_surprise():
    rate = parse_quantity("10.3125Gbps", Dimension.RATE).value
    assert rate / 66 * 64 == Fraction(10_000_000_000)


@pytest.mark.parametrize(("text", "dim", "message"), [
    (10, Dimension.RATE, "the number 10 has no unit; write it with one, for example "
                         "'10.3125Gbps'"),
    ("10Gbs", Dimension.RATE, "'Gbs' is not a unit of rate; use one of b/s, bps, Kb/s, Kbps, "
                              "kb/s, kbps, Mb/s, Mbps, Gb/s, Gbps, Tb/s, Tbps"),
    ("fast", Dimension.RATE, "'fast' is not a number followed by a unit; write it like "
                             "'10.3125Gbps'"),
    ("1.5 flits", Dimension.FLITS, "'1.5 flits' must be a whole number of flits"),
    ("1" * 30 + "Gbps", Dimension.RATE, f"'{'1' * 30}Gbps' has more than 20 digits"),
    ("-5MHz", Dimension.FREQUENCY, "'-5MHz' is not a number followed by a unit; write it like "
                                   "'156.25MHz'"),
    (True, Dimension.RATE, "expected a quantity with a unit such as '10.3125Gbps'"),
])
def test_errors(text, dim, message):
    with pytest.raises(QuantityError) as info:
        parse_quantity(text, dim)
    assert str(info.value) == message


@pytest.mark.parametrize(("text", "dim", "shown"), [
    ("10312500000bps", Dimension.RATE, "10.3125Gbps"),
    ("0.5us", Dimension.TIME, "500ns"),
    ("1 flits", Dimension.FLITS, "1 flit"),
    ("8192b", Dimension.SIZE, "1KiB"),
])
def test_format(text, dim, shown):
    assert format_quantity(parse_quantity(text, dim)) == shown


_BASE = {Dimension.RATE: "bps", Dimension.FREQUENCY: "Hz", Dimension.SIZE: "b",
         Dimension.LENGTH: "mm", Dimension.TIME: "ps", Dimension.FLITS: " flits",
         Dimension.PACKETS: " packets"}


@given(st.integers(min_value=1, max_value=10**15), st.sampled_from(list(Dimension)))
def test_format_round_trips(number, dim):
    q = parse_quantity(f"{number}{_BASE[dim]}", dim)
    again = parse_quantity(format_quantity(q), dim)
    # Exact whenever a short decimal exists; otherwise four significant digits.
    assert abs(again.value - q.value) / q.value < Fraction(1, 1000)
