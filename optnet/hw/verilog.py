"""Verilog from Amaranth components."""

from __future__ import annotations

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


def to_verilog(component: wiring.Component, name: str) -> str:
    """Verilog of ``component`` as a module called ``name``, without source locations (so the
    text does not depend on where optnet is installed)."""
    return verilog.convert(component, name=name, ports=component_ports(component),
                           emit_src=False)
