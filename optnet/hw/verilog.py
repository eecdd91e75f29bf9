"""Verilog from Amaranth components."""

from __future__ import annotations

import re

from amaranth.back import verilog
from amaranth.hdl import Signal, Value
from amaranth.lib import wiring

__all__ = ["component_ports", "to_verilog"]


def component_ports(component: wiring.Component) -> list[Signal]:
    """The signals of ``component``'s interface, without the constants that
    ``always_ready``/``always_valid`` streams have in place of a signal."""
    ports = []
    for _, _, value in component.signature.flatten(component):
        # Stream payloads with a layout are views; their signal is the port. Constants
        # (the ``ready`` of an always-ready stream) are not ports.
        value = Value.cast(value)
        if isinstance(value, Signal):
            ports.append(value)
    return ports


#: An ``initial`` block that only zeroes the storage of an ``amaranth.lib.fifo`` FIFO (its
#: memory is called ``storage``; optnet's own memories have other names).
_FIFO_ZERO_INIT = re.compile(r"  initial begin\n(?:    storage\[\d+\] = \d+'h0+;\n)+  end\n")


def to_verilog(component: wiring.Component, name: str) -> str:
    """Verilog of ``component`` as a module called ``name``, without source locations (so the
    text does not depend on where optnet is installed).

    Amaranth gives every memory an initial value, zeros if none is asked for. A FIFO never
    reads an entry it has not written, so the zeros of FIFO storage are dropped: for a
    receive buffer of thousands of entries they are one Verilog line per entry, which
    tools parse slowly (Yosys takes minutes) and which pins the RAM's power-up contents for
    no reason. Memories whose zeros matter (credit counters, tables) keep them.
    """
    text = verilog.convert(component, name=name, ports=component_ports(component),
                           emit_src=False)
    return _FIFO_ZERO_INIT.sub("", text)
