"""Verilog from Amaranth components."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

# Amaranth's own Yosys (the one verilog.convert runs), found as it finds it; private, but
# pinned with Amaranth below 0.6.
from amaranth._toolchain.yosys import find_yosys
from amaranth.back import rtlil
from amaranth.hdl import (
    ClockDomain,
    ClockSignal,
    Elaboratable,
    Fragment,
    Instance,
    Module,
    ResetSignal,
    Signal,
    Value,
    _nir,  # the netlist's types (memory_contents_at_once): private, pinned as above
)
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In

__all__ = ["Lowered", "instantiate", "lower", "memory_contents_at_once", "module_ports",
           "ports_of", "to_rtlil", "to_verilog"]


def ports_of(signature: wiring.Signature, iface) -> list[tuple[str, bool, Value]]:
    """Every port a component of ``signature`` has in Verilog, as (name, ``True`` for an
    input, value of ``iface``: the component, or an interface ``signature`` created).

    A stream member whose payload is a struct with a ``tdata`` field is an AXI4-Stream
    interface and comes out as its AXI4-Stream signals, ``<member>_tvalid``,
    ``<member>_tready`` and ``<member>_<field>`` for each payload field (``tdata``,
    ``tlast``, ``tdest``, ...), so that vendor tools see one; every other signal is named
    as Amaranth names it, its member path joined by ``__``. Constants (the ``ready`` of an
    always-ready stream) are not ports.
    """
    ports = []
    for path, member, value in signature.flatten(iface):
        value = Value.cast(value)
        if not isinstance(value, Signal):
            continue
        inp = member.flow == In
        outer = signature.members[path[0]]
        if len(path) == 2 and _is_axis(outer):
            name = path[0]
            if path[1] == "payload":
                view = getattr(iface, name).payload
                ports += [(f"{name}_{field}", inp, Value.cast(view[field]))
                          for field, _ in view.shape()]
            else:
                ports.append((f"{name}_t{path[1]}", inp, value))
            continue
        ports.append((_port_name(path), inp, value))
    return ports


def _is_axis(member: wiring.Member) -> bool:
    # a stream member whose payload is an AXI4-Stream beat (see ports_of)
    if not member.is_signature or not isinstance(member.signature, stream.Signature):
        return False
    layout = member.signature.members["payload"].shape
    return isinstance(layout, data.StructLayout) and "tdata" in layout.members


def _axis_attrs(name: str) -> dict[str, str]:
    # Vivado's IP integrator reads the interface of an AXI4-Stream port from this attribute
    # (other tools ignore it): ``<member>_t<signal>`` is signal T<SIGNAL> of bus <member>.
    bus, _, signal = name.rpartition("_")
    return {"X_INTERFACE_INFO": f"xilinx.com:interface:axis:1.0 {bus} {signal.upper()}"}


#: An ``initial`` block that only zeroes the storage of an ``amaranth.lib.fifo`` FIFO (its
#: memory is called ``storage``; optnet's own memories have other names).
_FIFO_ZERO_INIT = re.compile(r"  initial begin\n(?:    storage\[\d+\] = \d+'h0+;\n)+  end\n")


def to_verilog(component: wiring.Component, name: str, domains: Iterable[str] = (),
               platform: object | None = None) -> str:
    """Verilog of ``component`` as a module called ``name``, without source locations (so the
    text does not depend on where optnet is installed). Its ports are :func:`ports_of`'s: an
    AXI4-Stream member's signals are ports of their own, each with the
    ``X_INTERFACE_INFO`` attribute that names its interface for Vivado.

    ``platform``: what elaboration passes to every ``elaborate``; ``None`` (as simulation
    elaborates), or the :class:`~optnet.hw.cdc.SynchronizerPlatform` of the vendor the
    Verilog is for, whose hooks mark the synchroniser flip-flops for its tools
    (:func:`optnet.hw.cdc.synchronizer_platform`).

    ``domains``: the clock domains the component uses but does not define, defined here in
    this order, each with its ``clk`` and ``rst`` ports. Amaranth would create them itself,
    but in the order of a set, so with two or more the module's ports would come in an
    order that varies with ``PYTHONHASHSEED``. One (``sync``) may be left to Amaranth.

    Combinational logic comes out as continuous assignments, not ``always @*`` processes,
    so that event-driven simulators (Icarus, Questa, XSim) run it as Verilator and
    synthesis do (see the comment in the code).

    Amaranth gives every memory an initial value, zeros if none is asked for. A FIFO never
    reads an entry it has not written, so the zeros of FIFO storage are dropped: for a
    receive buffer of thousands of entries they are one Verilog line per entry, which
    tools parse slowly (Yosys takes minutes) and which pins the RAM's power-up contents for
    no reason. Memories whose zeros matter (credit counters, tables) keep them.
    """
    rtlil_text = to_rtlil(component, name, domains, platform)
    # Amaranth's own script keeps combinational processes (``proc -nomux``), which Yosys
    # writes as ``always @*`` blocks: one assigning a constant has no sensitivity and never
    # runs in an event-driven simulator, and the others run at time zero only through a
    # declaration initialiser, which IEEE 1800 does not make an event. Full ``proc`` turns
    # them into continuous assignments, which every simulator evaluates at time zero.
    text = find_yosys(lambda ver: ver >= (0, 40)).run(["-q", "-"], "\n".join([
        f"read_rtlil <<rtlil\n{rtlil_text}\nrtlil", "proc -norom", "memory_collect",
        "write_verilog -norename"]), ignore_warnings=True)
    # Yosys writes a parallel case as a function named ``\$procmux$<n>``; Icarus reads a
    # call of an escaped name that starts with ``$`` as a system function.
    return _FIFO_ZERO_INIT.sub("", text).replace("\\$procmux$", "\\procmux$")


def to_rtlil(component: wiring.Component, name: str, domains: Iterable[str] = (),
             platform: object | None = None) -> str:
    """RTLIL of ``component`` as a module called ``name``, with :func:`to_verilog`'s ports
    and ``domains``: every step of lowering that Amaranth does, without Yosys."""
    clocks = [ClockDomain(domain) for domain in domains]
    ports, links = [], []
    for port, inp, value in ports_of(component.signature, component):
        if isinstance(value, Signal) and value.name == port:
            ports.append(value)
            continue
        # an AXI4-Stream signal: a port of its own, joined to the member's field
        outer = Signal(len(value), name=port, attrs=_axis_attrs(port))
        ports.append(outer)
        links.append(value.eq(outer) if inp else outer.eq(value))
    ports += [s for cd in clocks for s in (cd.clk, cd.rst)]
    with deep_expressions(), memory_contents_at_once():
        fragment = Fragment.get(_Shell(component, clocks, links), platform)
        rtlil_text, _ = rtlil.convert_fragment(fragment, ports, name, emit_src=False)
    return rtlil_text


#: Python frames Amaranth may need to walk one expression (see :func:`deep_expressions`).
_RECURSION_LIMIT = 100_000


@contextlib.contextmanager
def deep_expressions() -> Iterator[None]:
    """Let Amaranth elaborate and convert expressions thousands of operators deep.

    Amaranth walks expressions recursively, and ``amaranth.lib.crc`` builds each CRC bit as
    a chain of XORs as long as its data word: the CRC of a 2,048-bit flit is a chain of about
    2,000 operators, deeper than Python's default limit of 1,000 frames. Python 3.11 runs
    calls between Python functions without growing the C stack, so a higher limit is safe;
    the previous limit is restored afterwards.
    """
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, _RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


@contextlib.contextmanager
def memory_contents_at_once() -> Iterator[None]:
    """Let Amaranth write a memory's initial contents to RTLIL as one constant.

    Amaranth 0.5 writes them bit by bit, a netlist constant per bit gathered into a
    signal specification: for the 64 receive buffers of 1,024 words of 259 bits of a direct
    switch with 63 links (17 million bits, zeros), about a minute. The same text comes from
    formatting the words: ``$meminit_v2``'s ``DATA`` is the words' bits, the first word's
    lowest bit last, exactly the constant Amaranth's signal specification spells. The
    previous method is restored afterwards.
    """
    emitter = rtlil.ModuleEmitter
    original = emitter.emit_memory

    def emit_memory(self, cell_idx, cell):
        if not cell.width or not cell.depth:
            return original(self, cell_idx, cell)
        mask = (1 << cell.width) - 1
        bits = "".join(format(row & mask, f"0{cell.width}b") for row in reversed(cell.init))
        self.builder.cell("$meminit_v2", ports={
            "ADDR": self.sigspec(),
            "DATA": f"{len(bits)}'{bits}",
            "EN": self.sigspec(_nir.Value.ones(cell.width)),
        }, parameters={
            "MEMID": self.memories[cell_idx].memid,
            "ABITS": 0,
            "WIDTH": cell.width,
            "WORDS": cell.depth,
            "PRIORITY": 0,
        }, src_loc=cell.src_loc)

    emitter.emit_memory = emit_memory
    try:
        yield
    finally:
        emitter.emit_memory = original


class _Shell(Elaboratable):
    # ``component``'s fragment with ``clocks`` defined at its top and the ``links``
    # (assignments between its signals and ports of their own) made there, in the same
    # module rather than one around it.
    def __init__(self, component: wiring.Component, clocks: list[ClockDomain], links: list):
        self.component, self.clocks, self.links = component, clocks, links

    def elaborate(self, platform):
        fragment = Fragment.get(self.component, platform)
        fragment.add_domains(*self.clocks)
        fragment.add_statements("comb", *self.links)
        return fragment


@dataclass(frozen=True)
class Lowered:
    """A component lowered to Verilog on its own, to be instantiated by module name in
    other designs (:func:`instantiate`) and shipped with them.

    Attributes
    ----------
    module : str
        Its module name.
    verilog : str
        Its Verilog: the module and its submodules, without the file header and without
        the ``top`` attribute (it is not the top of the file it goes into).
    """

    module: str
    verilog: str


def module_ports(signature: wiring.Signature, domains: Iterable[str]) -> set[str]:
    """The ports :func:`to_verilog` gives a component of ``signature`` whose logic is in
    clock ``domains``: every signal of the signature, and each domain's clock and reset
    (:func:`_clock_ports`)."""
    ports = {name for name, _, _ in ports_of(signature, signature.create())}
    return ports.union(*(_clock_ports(domain) for domain in domains))


def _port_name(path: tuple) -> str:
    # how Amaranth names a component's signal, and so its port: the member path joined
    return "__".join(str(part) for part in path)


def _clock_ports(domain: str) -> tuple[str, str]:
    # how Amaranth names a domain's clock and reset ports: clk and rst for sync
    prefix = "" if domain == "sync" else f"{domain}_"
    return f"{prefix}clk", f"{prefix}rst"


_HEADER = re.compile(r"\A/\* Generated by [^\n]*\*/\n\n\(\* top = +1 +\*\)\n")


def lower(component: wiring.Component, name: str, domains: Iterable[str],
          platform: object | None = None) -> Lowered:
    """``component``, whose logic is in clock ``domains``, lowered once (:func:`to_verilog`,
    with ``platform``) as module ``name``, to be instantiated with :func:`instantiate`.

    Identical components of a design (a node's link layers of one configuration) are then
    one module instantiated many times, so Amaranth and Yosys process it once rather than
    once per instance; and components lowered apart can be lowered in parallel.

    Raises
    ------
    ValueError
        If the module's ports are not those of :func:`module_ports`.
    """
    domains = tuple(domains)
    text = to_verilog(component, name, domains, platform)
    header = re.search(r"^module \\?(\S+) ?\(([^)]*)\);$", text, re.M)
    if header is None or header.group(1) != name:
        raise ValueError(f"the Verilog of {name!r} does not start with its module")
    ports = {port.strip() for port in header.group(2).split(",")}
    expected = module_ports(component.signature, domains)
    if ports != expected:
        raise ValueError(f"module {name!r} has ports {sorted(ports - expected)} it should not "
                         f"have and lacks {sorted(expected - ports)}")
    body, count = _HEADER.subn("", text)
    if count != 1:
        raise ValueError(f"the Verilog of {name!r} lacks the header Amaranth writes")
    return Lowered(name, body)


def instantiate(m: Module, name: str, module: str, signature: wiring.Signature,
                domains: Mapping[str, str]):
    """Add to ``m`` an instance ``name`` of ``module``, a component of ``signature`` lowered
    by :func:`lower`, and return the interface (as ``signature.create()`` makes) through
    which ``m`` uses it, as it would the component. ``domains`` maps each of the module's
    clock domains to the domain of ``m`` that drives it."""
    iface = signature.create(path=(name,))
    args = {f"{'i' if inp else 'o'}_{port}": value
            for port, inp, value in ports_of(signature, iface)}
    for inner, outer in domains.items():
        clk, rst = _clock_ports(inner)
        args[f"i_{clk}"], args[f"i_{rst}"] = ClockSignal(outer), ResetSignal(outer)
    m.submodules[name] = Instance(module, **args)
    return iface
