"""Diagnostics: what optnet found wrong with an input, where, and how to fix it.

A :class:`Diagnostic` carries a stable code from :data:`CODES`, a message written as a full
sentence that names the objects involved, the :class:`Location` it points at and an
optional hint. Renderers (:mod:`optnet.render`) turn a list of diagnostics into human text,
JSON, SARIF or GitHub workflow annotations; nothing here formats for a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = [
    "CODES",
    "Code",
    "Diagnostic",
    "DiagnosticError",
    "Finding",
    "Location",
    "Related",
    "Severity",
    "sort_key",
]


class Severity(Enum):
    """How bad a finding is; errors stop a build, warnings only with ``--strict``."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Code:
    """A registered diagnostic code.

    Attributes
    ----------
    code : str
        ``E0xx`` file and schema, ``E1xx`` physical and topological, ``E2xx`` routing,
        ``E3xx`` hardware planning (plan, clocks, projects), ``Wxxx`` warnings.
    name : str
        Short kebab-case name, used as the SARIF rule name.
    severity : Severity
    summary : str
        One sentence describing the whole class of finding.
    """

    code: str
    name: str
    severity: Severity
    summary: str


def _codes(*rows: tuple[str, str, str]) -> dict[str, Code]:
    table = {}
    for code, name, summary in rows:
        severity = Severity.WARNING if code.startswith("W") else Severity.ERROR
        table[code] = Code(code, name, severity, summary)
    return table


CODES: dict[str, Code] = _codes(
    ("E001", "yaml-syntax", "The file is not well-formed YAML."),
    ("E002", "duplicate-key", "A mapping gives the same key twice."),
    ("E003", "document-too-large", "The document, after expanding aliases, is too large or "
                                   "too deeply nested, or refers to itself."),
    ("E004", "format-version", "The file does not declare a format version optnet reads."),
    ("E005", "not-a-mapping", "The document is not a mapping of keys to values."),
    ("E010", "unknown-key", "A key is not part of the format."),
    ("E011", "missing-key", "A required key is missing."),
    ("E012", "wrong-type", "A value has the wrong type."),
    ("E013", "bad-quantity", "A quantity has no unit, a wrong unit or a malformed number."),
    ("E014", "out-of-range", "A value lies outside the range the format allows."),
    ("E015", "bad-choice", "A value is not one of the allowed choices."),
    ("E020", "bad-identifier", "A name is not a legal HDL identifier and file name."),
    ("E021", "duplicate-name", "Two objects of the same kind have the same name."),
    ("E022", "duplicate-id", "Two nodes have the same numeric id."),
    ("E023", "bad-port-reference", "A link end is not written as node.port or node.port[lanes]."),
    ("E030", "bad-board-file", "A board file is inconsistent (extends, lanes, pins, clocks)."),
    ("E101", "unknown-board", "A node names a board that is not in the board library."),
    ("E102", "unknown-node", "A link names a node that the cluster does not have."),
    ("E103", "unknown-port", "A link names a port that the node's board does not have."),
    ("E104", "port-reused", "Two links use the same lanes of one port."),
    ("E105", "too-many-lanes", "A link needs more lanes than its port has free."),
    ("E106", "rate-above-transceiver", "A line rate exceeds what the transceiver or port "
                                       "supports."),
    ("E107", "rate-outside-phy", "A line rate lies outside the range of the link protocol."),
    ("E108", "ends-disagree", "The two ends of a link are configured with different PHYs or "
                              "rates."),
    ("E109", "self-loop", "A link connects a node to itself."),
    ("E110", "phy-unsupported", "The link protocol cannot run on the port or the vendor."),
    ("E111", "disconnected", "The cluster falls apart into parts that cannot reach each "
                             "other."),
    ("E112", "board-lacks-ports", "A board has too few ports or lanes for the topology."),
    ("E113", "buffers-exceed-bram", "The buffers a node needs do not fit its block RAM."),
    ("E114", "bad-topology", "Topology parameters are inconsistent."),
    ("E115", "onboard-miswired", "An on-board link joins FPGAs that the board does not wire "
                                 "together."),
    ("E116", "empty-cluster", "The cluster has no nodes."),
    ("E117", "endpoint-credit", "An endpoint's credit parameters cannot work together."),
    ("E201", "deadlock", "The routing's channel dependency graph has a cycle (too few VCs, or "
                         "a broadcast that closes one)."),
    ("E202", "routing-not-applicable", "The chosen routing algorithm cannot route this "
                                       "topology."),
    ("E203", "broadcast-unsupported", "The broadcast mode cannot work on this network."),
    ("E301", "phy-without-hardware", "A link runs a PHY that optnet has no hardware adapter "
     "for."),
    ("E302", "header-exceeds-flit", "The packet header does not fit one flit."),
    ("E303", "endpoint-exceeds-flit", "An endpoint's beat is wider than a flit."),
    ("E305", "packet-without-data", "A maximum packet has no room for data after its "
     "header."),
    ("E310", "clock-unreachable", "A board's PLL cannot make the clocks a node needs."),
    ("E320", "project-unsupported", "A node's vendor project or link IP cannot be generated."),
    ("E330", "refclk-two-buffers", "Two link cores with shared logic would buffer one "
                                   "transceiver reference clock pad."),
    ("E331", "refclk-out-of-reach", "A transceiver reference clock cannot reach a quad it "
                                    "must feed."),
    ("E332", "rate-without-pll", "No transceiver PLL the link core uses can make the line "
                                 "rate."),
    ("E333", "shared-pll-conflict", "Links that share a quad's (tile's) PLL or core need "
                                    "different rates, or cannot be split between cores."),
    ("E334", "refclk-conflict", "A quad's links need more, or other, reference clocks than "
                                "its shared logic gives."),
    ("E335", "gxt-bank-full", "A Stratix 10 bank needs more GXT channels or ATX PLLs than "
                              "it has, or GXT channels take their reference clock outside "
                              "their ATX PLL's triplet."),
    ("W101", "credit-below-bdp", "A managed endpoint's credits do not cover its slowest "
                                 "credit loop (the bandwidth-delay product), so the flow "
                                 "cannot reach full bandwidth."),
    ("W102", "packet-exceeds-buffer", "A maximum-size packet does not fit an input buffer."),
    ("W103", "unverified-pins", "A link uses a board port whose pins are not verified."),
    ("W104", "link-too-long", "A link is longer than its PHY and connector reach reliably."),
    ("W105", "flow-control-not-built", "The network asks for a link-level flow control the "
                                       "generated hardware does not implement."),
    ("W106", "broadcast-not-built", "A direct cluster asks for router broadcast, which its "
                                    "direct switch does not have: broadcasts are unicasts."),
    ("W107", "buffer-below-credit-loop", "A router buffer set in the file does not cover a "
                                         "link's credit loop, so one VC cannot stream at "
                                         "the link's rate."),
    ("W201", "multipath-ignored", "Multipath is set but only direct routing uses it."),
    ("W301", "gtp-dual-shared", "A Virtex-5 GTP_DUAL tile is shared with a multi-lane link "
                                "core, which instantiates its tiles whole: the ISE project "
                                "needs the pair merged by hand."),
    ("W302", "clock-above-router", "The network clock is above the clock the router was "
                                   "measured to reach on the node's FPGA family."),
)


@dataclass(frozen=True, order=True)
class Location:
    """A place in an input file; lines and columns count from 1."""

    file: str
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.column}"
        return self.file


@dataclass(frozen=True)
class Related:
    """A second place that explains a diagnostic (the first definition, the other end)."""

    location: Location
    message: str


@dataclass(frozen=True)
class Diagnostic:
    """One finding.

    Attributes
    ----------
    code : str
        A key of :data:`CODES`.
    message : str
        A full sentence naming the objects involved and the reason.
    location : Location or None
    hint : str or None
        What to change, when there is a clear fix.
    related : tuple of Related
    """

    code: str
    message: str
    location: Location | None = None
    hint: str | None = None
    related: tuple[Related, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"Diagnostic code {self.code!r} is not registered in CODES")

    @property
    def severity(self) -> Severity:
        return CODES[self.code].severity


def sort_key(diag: Diagnostic) -> tuple:
    """Order diagnostics by file, position, then code, for stable output."""
    loc = diag.location or Location("")
    return (loc.file, loc.line, loc.column, diag.code, diag.message)


class DiagnosticError(Exception):
    """Raised by a stage that cannot go on; carries every diagnostic found so far."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__("; ".join(d.message for d in diagnostics))
        self.diagnostics = diagnostics


@dataclass(frozen=True)
class Finding:
    """A diagnostic raised by a stage that has no source map (plan, hw, emit).

    It names the value path of the cluster file it is about (``origin``, as in
    :attr:`optnet.cluster.Node.origin`); the lint driver turns it into a
    :class:`Diagnostic` located there. ``str()`` is the message, so a finding reads as a
    sentence wherever it is printed.
    """

    code: str
    message: str
    origin: tuple[str | int, ...] = ()
    hint: str | None = None
    settings: tuple[tuple[str | int, ...], ...] = ()
    """Paths the finding's setting may be written at (``Link.setting_paths``), most
    specific first; the first the file has is used before ``origin``."""

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"Finding code {self.code!r} is not registered in CODES")

    def __str__(self) -> str:
        return self.message

    def located(self, smap) -> Diagnostic:
        """This finding as a diagnostic in ``smap`` (a
        :class:`~optnet.spec.source.SourceMap`): at the first of ``settings`` the file
        has, else at ``origin``."""
        path = next((p for p in self.settings if p in smap.values), self.origin)
        return Diagnostic(self.code, self.message, smap.at(path), self.hint)
