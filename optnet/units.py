"""Physical quantities written with units, parsed exactly.

Every quantity in a cluster or board file carries its unit (``10.3125Gbps``, ``156.25MHz``,
``16KiB``, ``8 flits``, ``2m``). Values are kept as :class:`fractions.Fraction` in the base
unit of their dimension, so ``10.3125Gbps`` is exactly 10 312 500 000 bit/s and no rate,
clock or length ever suffers a binary floating-point rounding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from fractions import Fraction

__all__ = ["Dimension", "Quantity", "QuantityError", "format_quantity", "parse_quantity"]


class Dimension(Enum):
    """What a quantity measures; the value names the base unit."""

    RATE = "bit/s"
    FREQUENCY = "Hz"
    SIZE = "bit"
    LENGTH = "m"
    TIME = "s"
    FLITS = "flits"
    PACKETS = "packets"


_SI = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def _unit_table() -> dict[Dimension, dict[str, Fraction]]:
    rate = {}
    for prefix, scale in _SI.items():
        rate[f"{prefix}bps"] = Fraction(scale)
        rate[f"{prefix}b/s"] = Fraction(scale)
    freq = {f"{p}Hz": Fraction(s) for p, s in _SI.items() if p != "K"}
    size: dict[str, Fraction] = {"b": Fraction(1), "bit": Fraction(1), "bits": Fraction(1),
                                 "B": Fraction(8), "byte": Fraction(8), "bytes": Fraction(8)}
    for prefix, scale in list(_SI.items())[1:] + list(_IEC.items()):
        size[f"{prefix}b"] = Fraction(scale)
        size[f"{prefix}B"] = Fraction(8 * scale)
    length = {"m": Fraction(1), "cm": Fraction(1, 100), "mm": Fraction(1, 1000),
              "km": Fraction(1000)}
    time = {"s": Fraction(1), "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6),
            "µs": Fraction(1, 10**6), "ns": Fraction(1, 10**9), "ps": Fraction(1, 10**12)}
    return {
        Dimension.RATE: rate,
        Dimension.FREQUENCY: freq,
        Dimension.SIZE: size,
        Dimension.LENGTH: length,
        Dimension.TIME: time,
        Dimension.FLITS: {"flit": Fraction(1), "flits": Fraction(1)},
        Dimension.PACKETS: {"packet": Fraction(1), "packets": Fraction(1)},
    }


UNITS = _unit_table()
EXAMPLES = {
    Dimension.RATE: "10.3125Gbps",
    Dimension.FREQUENCY: "156.25MHz",
    Dimension.SIZE: "16KiB",
    Dimension.LENGTH: "2m",
    Dimension.TIME: "500ns",
    Dimension.FLITS: "8 flits",
    Dimension.PACKETS: "64 packets",
}
# Twenty significant digits cover every real rate, clock and size; longer numbers are almost
# certainly typos or hostile input, and refusing them keeps arithmetic cheap.
_MAX_DIGITS = 20
_SYNTAX = re.compile(r"\s*([0-9][0-9_]*(?:\.[0-9]+)?)\s*([A-Za-zµ/]+)\s*")


class QuantityError(ValueError):
    """A quantity could not be parsed; the message is a full sentence for the user."""


@dataclass(frozen=True, order=True)
class Quantity:
    """An exact value in the base unit of its dimension.

    Attributes
    ----------
    value : Fraction
        Magnitude in the base unit (bit/s, Hz, bit, m, s, flits, packets).
    dim : Dimension
        What the value measures.
    """

    value: Fraction
    dim: Dimension

    def __str__(self) -> str:
        return format_quantity(self)

    @property
    def count(self) -> int:
        """The value as an integer; only meaningful for counted dimensions (flits, packets)."""
        return int(self.value)


def parse_quantity(text: object, dim: Dimension) -> Quantity:
    """Parse ``text`` as a quantity of dimension ``dim``.

    Raises
    ------
    QuantityError
        If ``text`` is not a string of a non-negative decimal number and a unit of ``dim``,
        or the number has more than twenty digits, or a counted quantity is fractional.
    """
    example = EXAMPLES[dim]
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise QuantityError(f"expected a quantity with a unit such as '{example}'")
    if isinstance(text, int | float):
        raise QuantityError(
            f"the number {text} has no unit; write it with one, for example '{example}'")
    match = _SYNTAX.fullmatch(text)
    if match is None:
        raise QuantityError(
            f"'{text}' is not a number followed by a unit; write it like '{example}'")
    number, unit = match.groups()
    number = number.replace("_", "")
    if len(number.replace(".", "")) > _MAX_DIGITS:
        raise QuantityError(f"'{text}' has more than {_MAX_DIGITS} digits")
    units = UNITS[dim]
    if unit not in units:
        known = ", ".join(sorted(units, key=lambda u: (units[u], u)))
        raise QuantityError(f"'{unit}' is not a unit of {dim.name.lower()}; use one of {known}")
    value = Fraction(Decimal(number)) * units[unit]
    if dim in (Dimension.FLITS, Dimension.PACKETS) and value.denominator != 1:
        raise QuantityError(f"'{text}' must be a whole number of {dim.value}")
    return Quantity(value, dim)


_DISPLAY = {
    Dimension.RATE: [("Tbps", 10**12), ("Gbps", 10**9), ("Mbps", 10**6), ("kbps", 10**3),
                     ("bps", 1)],
    Dimension.FREQUENCY: [("GHz", 10**9), ("MHz", 10**6), ("kHz", 10**3), ("Hz", 1)],
    Dimension.SIZE: [("GiB", 8 * 2**30), ("MiB", 8 * 2**20), ("KiB", 8 * 2**10), ("B", 8),
                     ("b", 1)],
    Dimension.LENGTH: [("km", 1000), ("m", 1), ("cm", Fraction(1, 100)),
                       ("mm", Fraction(1, 1000))],
    Dimension.TIME: [("s", 1), ("ms", Fraction(1, 10**3)), ("us", Fraction(1, 10**6)),
                     ("ns", Fraction(1, 10**9)), ("ps", Fraction(1, 10**12))],
}


def _decimal_text(value: Fraction) -> str | None:
    """``value`` as a short exact decimal, or None when it has no short exact form."""
    for places in range(0, 10):
        scaled = value * 10**places
        if scaled.denominator == 1:
            whole, frac = divmod(scaled.numerator, 10**places)
            return f"{whole}.{frac:0{places}d}".rstrip("0").rstrip(".") if places else str(whole)
    return None


def format_quantity(q: Quantity) -> str:
    """Canonical text of ``q``: the largest unit giving a value >= 1 with an exact decimal."""
    if q.dim in (Dimension.FLITS, Dimension.PACKETS):
        return f"{q.value} {q.dim.value if q.value != 1 else q.dim.value[:-1]}"
    for unit, scale in _DISPLAY[q.dim]:
        scaled = q.value / scale
        if scaled >= 1 or scale == _DISPLAY[q.dim][-1][1]:
            text = _decimal_text(scaled)
            if text is not None:
                return f"{text}{unit}"
    # No short exact decimal: four significant digits in the largest unit that gives >= 1.
    unit, scale = next(((u, s) for u, s in _DISPLAY[q.dim] if q.value / s >= 1),
                       _DISPLAY[q.dim][-1])
    return f"{float(q.value / scale):.4g}{unit}"
