"""Clock-domain crossings of a flattened netlist, for tests/test_cdc.py.

Yosys reads a node's Verilog (network and board top) with the stubs of what it instantiates,
runs ``proc``, ``flatten`` and ``memory_collect`` and writes JSON (:func:`netlist`).
:class:`Netlist` then finds, for every state element, the clock that drives it and the state
elements whose outputs reach it through combinational logic:

* a flip-flop (``$dff``, ``$adff``, ...) is clocked by its ``CLK`` and sampled through its data
  inputs (``D``, ``EN``, ``SRST``) and, for the asynchronous reset ``ARST``, without a clock;
* a memory (``$mem_v2``) is written on each write port's clock and read, through a
  synchronous read port, into that port's clock: its contents cross from the write clocks
  to the read clocks, and its read data are launched on the read clock;
* a clock is traced back through the clock buffers (``BUFG``, ``IBUFDS``, ...) to where it
  is made: a board top input port or an output of a black box (PLL, vendor IP). It is
  named ``port:<name>`` or ``<cell>.<port>`` (``pll.CLKOUT0``, ``net.phy1.ip.user_clk_out``).

Black boxes (vendor IP and I/O primitives) are opaque: their outputs launch from no known
clock and their inputs are not checked. Their own crossings are their vendor's to constrain.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from .hwtools import yosys

__all__ = ["Crossing", "Netlist", "netlist"]

#: Clock buffers a clock passes through unchanged: cell type -> input port.
CLOCK_BUFFERS = {"BUFG": "I", "BUFIO": "I", "BUFR": "I", "IBUFDS": "I", "IBUFGDS": "I",
                 "ILVDS": "A"}

#: Flip-flop cells ``proc`` makes, and their inputs sampled on the clock edge.
_FLOPS = {"$dff": ("D",), "$dffe": ("D", "EN"), "$sdff": ("D", "SRST"),
          "$sdffe": ("D", "EN", "SRST"), "$sdffce": ("D", "EN", "SRST"),
          "$adff": ("D",), "$adffe": ("D", "EN")}

#: Sequential cells ``proc`` does not make from Amaranth's Verilog; met, they fail the test
#: rather than pass unmodelled.
_UNSUPPORTED = {"$dlatch", "$adlatch", "$aldff", "$aldffe", "$dffsr", "$dffsre", "$sr",
                "$mem", "$memrd", "$memrd_v2", "$memwr", "$memwr_v2"}

#: Combinational cells whose output bit ``i`` depends on input bits ``i`` only (and on every
#: bit of ``S``, for the multiplexer).
_BITWISE = {"$and", "$or", "$xor", "$xnor", "$not", "$mux", "$bwmux", "$pos"}

_TIMEOUT = 1800


def netlist(files: Sequence[Path], top: str) -> dict:
    """The flattened netlist of ``top`` from ``files`` (Verilog, stubs included), as Yosys'
    JSON: ``proc; flatten; memory_collect; opt_clean``, names kept."""
    paths = [Path(f).resolve() for f in files]
    cwd = Path(os.path.commonpath([p.parent for p in paths]))
    out = cwd / f"{top}.netlist.json"
    # YoWASP's Yosys sees only its working directory: name the files relative to it.
    script = "; ".join([
        "read_verilog " + " ".join(p.relative_to(cwd).as_posix() for p in paths),
        f"hierarchy -check -top {top}", "proc", "flatten", "memory_collect", "opt_clean",
        f"write_json {out.name}"])
    result = subprocess.run([yosys(), "-q", "-p", script], cwd=cwd, capture_output=True,
                            text=True, timeout=_TIMEOUT, check=False)
    if result.returncode != 0:
        pytest.fail(f"yosys failed (exit {result.returncode})\n{result.stdout[-4000:]}\n"
                    f"{result.stderr[-4000:]}", pytrace=False)
    return json.loads(out.read_text())["modules"][top]


@dataclass(frozen=True)
class Crossing:
    """State element ``dest`` (clock ``dest_clock``) samples ``source`` (clock
    ``source_clock``) through ``via``: ``data`` (a flip-flop's data inputs), ``reset`` (its
    asynchronous reset) or ``memory`` (``dest`` is a memory read port's clock: the memory
    ``source`` is written on ``source_clock``). ``direct``: a flip-flop's data input is the
    source's output itself, without logic between."""

    source: str
    source_clock: str
    dest: str
    dest_clock: str
    via: str
    direct: bool


class Netlist:
    """Crossing analysis of a netlist from :func:`netlist`.

    ``root``: the directory the Verilog files are named relative to (where :func:`netlist`
    ran Yosys), to tell a register's declaration from the wires Amaranth assigns it to.
    """

    def __init__(self, module: dict, root: Path):
        self.root = root
        self._lines: dict[str, list[str]] = {}
        self.cells = module["cells"]
        self.ports = module["ports"]
        self.netnames = module["netnames"]
        self.driver: dict[int, tuple[str, str, int]] = {}
        for name, cell in self.cells.items():
            for port, bits in cell["connections"].items():
                if cell["port_directions"].get(port) == "output":
                    for i, bit in enumerate(bits):
                        if isinstance(bit, int):
                            self.driver[bit] = (name, port, i)
        self.inputs = {bit: name for name, port in self.ports.items()
                       if port["direction"] == "input" for bit in port["bits"]}
        self.names: dict[int, list[str]] = {}
        for name, net in self.netnames.items():
            if not net["hide_name"]:
                for bit in net["bits"]:
                    if isinstance(bit, int):
                        self.names.setdefault(bit, []).append(name)
        self._clock_of: dict[int, str] = {}
        self._clocks: dict[int, frozenset] = {}
        self._interned: dict[frozenset, frozenset] = {}

    # -- naming -------------------------------------------------------------------------------

    def flop_name(self, cell: str) -> str:
        """The register a flip-flop cell implements, as ``<instance path>.<name>``: the
        netname of its output declared ``reg`` in the module its cell came from."""
        q = self.cells[cell]["connections"]["Q"][0]
        scope = _scope(cell)
        prefix = f"{scope}." if scope else ""
        local = [n for n in self.names.get(q, ()) if n.startswith(prefix)
                 and "." not in n[len(prefix):]]
        # A register that is also an output port is declared `output x; reg x;`, and Yosys
        # locates it at the `output`; the wires Amaranth assigns it to are `wire`s.
        regs = ([n for n in local if self.declared(n) == "reg"]
                or [n for n in local if self.declared(n) == "output"])
        if len(regs) != 1:
            raise AssertionError(f"flip-flop {cell} drives {len(regs)} registers declared in "
                                 f"'{scope}': {regs or local}")
        return regs[0]

    def declared(self, name: str) -> str:
        """The keyword of a netname's declaration in the Verilog (``reg``, ``wire``,
        ``output``, ...)."""
        src = self.netnames[name]["attributes"].get("src", "")
        m = re.fullmatch(r"(.+):(\d+)\.\d+-\d+\.\d+", src)
        if m is None:
            return ""
        path, line = m.group(1), int(m.group(2))
        if path not in self._lines:
            self._lines[path] = (self.root / path).read_text().splitlines()
        return self._lines[path][line - 1].split(maxsplit=1)[0]

    def attributes(self, cell: str) -> dict[str, str]:
        """The attributes of a flip-flop's register (its netname's)."""
        return self.netnames.get(self.flop_name(cell), {}).get("attributes", {})

    # -- clocks -------------------------------------------------------------------------------

    def clock(self, bit: int | str) -> str:
        """Where the clock on ``bit`` is made (see the module docstring)."""
        if not isinstance(bit, int):
            return f"const:{bit}"
        if bit not in self._clock_of:
            self._clock_of[bit] = self._trace_clock(bit)
        return self._clock_of[bit]

    def _trace_clock(self, bit: int) -> str:
        seen = set()
        while bit not in seen:
            seen.add(bit)
            if bit in self.inputs:
                return f"port:{self.inputs[bit]}"
            if bit not in self.driver:
                return f"undriven:{self.names.get(bit, [bit])[0]}"
            cell, port, _ = self.driver[bit]
            ctype = self.cells[cell]["type"]
            if ctype in CLOCK_BUFFERS:
                nxt = self.cells[cell]["connections"][CLOCK_BUFFERS[ctype]][0]
                if not isinstance(nxt, int):
                    return f"const:{nxt}"
                bit = nxt
                continue
            return f"{cell}.{port}"
        raise AssertionError(f"clock loop through bit {bit}")

    # -- state elements -----------------------------------------------------------------------

    def flops(self) -> Iterable[str]:
        return (n for n, c in self.cells.items() if c["type"] in _FLOPS)

    def memories(self) -> Iterable[str]:
        return (n for n, c in self.cells.items() if c["type"] == "$mem_v2")

    def _memory_ports(self, cell: str) -> tuple[list[tuple[str, list]], list[tuple[str, list]]]:
        """(write ports, read ports) of a memory: (clock, [input bits]) each; a read port's
        clock is ``None`` when it reads asynchronously."""
        c = self.cells[cell]
        p, conn = c["parameters"], c["connections"]
        abits, width = int(p["ABITS"], 2), int(p["WIDTH"], 2)

        def slices(port: str, n: int, size: int) -> list[list]:
            bits = conn[port]
            return [bits[i * size:(i + 1) * size] for i in range(n)]

        nw, nr = int(p["WR_PORTS"], 2), int(p["RD_PORTS"], 2)
        wclk_en, rclk_en = p["WR_CLK_ENABLE"][::-1], p["RD_CLK_ENABLE"][::-1]
        writes = []
        for i, (clk, addr, data, en) in enumerate(zip(
                slices("WR_CLK", nw, 1), slices("WR_ADDR", nw, abits),
                slices("WR_DATA", nw, width), slices("WR_EN", nw, width), strict=True)):
            if wclk_en[i] != "1":
                raise AssertionError(f"memory {cell} has an asynchronous write port")
            writes.append((self.clock(clk[0]), addr + data + en))
        reads = []
        for i, (clk, addr, en, srst, arst) in enumerate(zip(
                slices("RD_CLK", nr, 1), slices("RD_ADDR", nr, abits),
                slices("RD_EN", nr, 1), slices("RD_SRST", nr, 1), slices("RD_ARST", nr, 1),
                strict=True)):
            reads.append((self.clock(clk[0]) if rclk_en[i] == "1" else None,
                          addr + en + srst + arst))
        return writes, reads

    # -- launch points ------------------------------------------------------------------------

    def _node(self, bit: int) -> tuple[frozenset, list]:
        """(launch points at ``bit`` itself, the bits it depends on combinationally)."""
        if bit in self.inputs or bit not in self.driver:
            return frozenset(), []
        cell, _, i = self.driver[bit]
        c = self.cells[cell]
        ctype, conn = c["type"], c["connections"]
        if ctype in _FLOPS:
            return frozenset({(self.flop_name(cell), self.clock(conn["CLK"][0]))}), []
        if ctype in _UNSUPPORTED:
            raise AssertionError(f"cell {cell} is a {ctype}, which this analysis does not "
                                 f"model")
        if ctype == "$mem_v2":
            writes, reads = self._memory_ports(cell)
            width = int(c["parameters"]["WIDTH"], 2)
            clock, inputs = reads[i // width]
            mem = _memory_name(cell, c)
            if clock is not None:
                return frozenset({(f"{mem}.read", clock)}), []
            return frozenset((mem, wclock) for wclock, _ in writes), list(inputs)
        if not ctype.startswith("$"):
            return frozenset(), []   # a black box
        if ctype in _BITWISE:
            deps = []
            for p in ("A", "B"):
                if p in conn:
                    bits = conn[p]
                    deps.append(bits[i] if i < len(bits) else bits[-1])
            return frozenset(), deps + list(conn.get("S", []))
        return frozenset(), [b for p, bits in conn.items()
                             if c["port_directions"].get(p) == "input" for b in bits]

    def source_clocks(self, bit: int | str) -> frozenset:
        """The clocks of the launch points whose values reach ``bit`` through combinational
        logic (memoised; iterative, since a CRC is a chain of thousands of gates)."""
        if not isinstance(bit, int):
            return frozenset()
        memo = self._clocks
        stack = [(bit, False)]
        while stack:
            b, expanded = stack.pop()
            if b in memo:
                continue
            own, deps = self._node(b)
            deps = [d for d in deps if isinstance(d, int)]
            if not expanded and any(d not in memo for d in deps):
                stack.append((b, True))
                stack.extend((d, False) for d in deps if d not in memo)
                continue
            clocks = {clock for _, clock in own}
            for d in deps:
                clocks |= memo.get(d, frozenset())
            key = frozenset(clocks)
            memo[b] = self._interned.setdefault(key, key)
        return memo[bit]

    def sources(self, bit: int | str, other_than: str) -> set[tuple[str, str]]:
        """The launch points ``(name, clock)`` on a clock other than ``other_than`` whose
        values reach ``bit`` (see :meth:`source_clocks`); a memory read asynchronously counts
        as ``(memory, write clock)``."""
        found: set[tuple[str, str]] = set()
        stack = [bit] if isinstance(bit, int) else []
        seen: set[int] = set()
        while stack:
            b = stack.pop()
            if b in seen or self.source_clocks(b) <= {other_than}:
                continue
            seen.add(b)
            own, deps = self._node(b)
            found |= {(n, c) for n, c in own if c != other_than}
            stack.extend(d for d in deps if isinstance(d, int))
        return found

    # -- crossings ----------------------------------------------------------------------------

    def crossings(self) -> list[Crossing]:
        """Every path from a launch point on one clock into a state element on another."""
        found = []
        for cell in self.flops():
            c = self.cells[cell]
            conn = c["connections"]
            clock = self.clock(conn["CLK"][0])
            name = self.flop_name(cell)
            inputs = [("data", b) for p in _FLOPS[c["type"]] for b in conn[p]]
            inputs += [("reset", b) for b in conn.get("ARST", [])]
            for via, b in inputs:
                for src, sclock in self.sources(b, clock):
                    direct = via == "data" and self._is_output_of(b, src)
                    found.append(Crossing(src, sclock, name, clock, via, direct))
        for cell in self.memories():
            mem = _memory_name(cell, self.cells[cell])
            writes, reads = self._memory_ports(cell)
            for wclock, bits in writes:
                for b in bits:
                    for src, sclock in self.sources(b, wclock):
                        found.append(Crossing(src, sclock, f"{mem}.write", wclock, "data",
                                              False))
            for rclock, bits in reads:
                if rclock is None:
                    continue
                found += [Crossing(mem, wclock, f"{mem}.read", rclock, "memory", False)
                          for wclock in dict.fromkeys(w for w, _ in writes) if wclock != rclock]
                for b in bits:
                    for src, sclock in self.sources(b, rclock):
                        found.append(Crossing(src, sclock, f"{mem}.read", rclock, "data",
                                              False))
        return sorted(set(found), key=lambda x: (x.dest, x.source, x.via))

    def _is_output_of(self, bit: int | str, source: str) -> bool:
        # `bit` is a bit of the register `source` itself.
        if not isinstance(bit, int) or bit not in self.driver:
            return False
        cell, _, _ = self.driver[bit]
        return self.cells[cell]["type"] in _FLOPS and self.flop_name(cell) == source


def _memory_name(cell: str, c: dict) -> str:
    return c["parameters"].get("MEMID", cell).lstrip("\\")


def _scope(cell: str) -> str:
    """The instance path a flattened cell came from: ``$flatten\\net.\\link1.$procdff$3``
    -> ``net.link1``; ``""`` for the top module's own cells."""
    if not cell.startswith("$flatten"):
        return ""
    body = cell[len("$flatten"):]
    head = re.split(r"\.\$", body, maxsplit=1)[0]
    return head.replace("\\", "")
