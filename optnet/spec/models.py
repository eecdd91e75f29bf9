"""Schema of cluster files and board files, as pydantic models.

These models are the single definition of both file formats: they validate input (every
unknown key is an error), and their field descriptions become the JSON Schema that
``optnet schema`` prints and editors use. They hold data only; nothing here renders text or
knows about other files (names of boards, nodes and ports are checked by
:mod:`optnet.checks` once everything is loaded).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError, core_schema

from optnet.units import EXAMPLES, UNITS, Dimension, Quantity, QuantityError, parse_quantity

__all__ = [
    "BoardDesc",
    "ClusterDesc",
    "EndpointDesc",
    "Form",
    "LinkDesc",
    "LinkSettings",
    "NodeDesc",
    "PortDesc",
    "Topology",
]


def _quantity(dim: Dimension, description: str):
    def validate(value: object) -> Quantity:
        if isinstance(value, Quantity) and value.dim is dim:
            return value
        try:
            return parse_quantity(value, dim)
        except QuantityError as exc:
            raise PydanticCustomError("bad_quantity", str(exc)) from None

    units = "|".join(sorted((u.replace("/", "\\/") for u in UNITS[dim]), key=len, reverse=True))
    schema = {
        "type": "string",
        "pattern": rf"^\s*[0-9][0-9_]*(\.[0-9]+)?\s*({units})\s*$",
        "examples": [EXAMPLES[dim]],
        "description": description,
    }
    return Annotated[Quantity, PlainValidator(validate),
                     PlainSerializer(str, return_type=str, when_used="json"),
                     WithJsonSchema(schema)]


Rate = _quantity(Dimension.RATE, "A data rate such as '10.3125Gbps'.")
Frequency = _quantity(Dimension.FREQUENCY, "A frequency such as '156.25MHz'.")
Size = _quantity(Dimension.SIZE, "A size such as '16KiB' (B = byte, b = bit).")
Length = _quantity(Dimension.LENGTH, "A length such as '2m' or '30cm'.")
Duration = _quantity(Dimension.TIME, "A time such as '541ns' or '0.71us'.")
Flits = _quantity(Dimension.FLITS, "A number of flits such as '8 flits'.")
Packets = _quantity(Dimension.PACKETS, "A number of packets such as '64 packets'.")


@dataclass(frozen=True)
class Form:
    """The strict form of a string that reaches tool files (Tcl, constraints, Makefiles,
    CSV, Markdown), as ``Annotated[str, FORM]`` metadata: a value that does not match is a
    ``bad_form`` validation error (E014, naming the form), and the JSON Schema carries the
    pattern.

    Attributes
    ----------
    what : str
        The kind of value, with an article ("a package pin").
    rule : str
        The allowed form in words.
    pattern : str
        A regular expression the whole value must match, valid in Python and ECMA 262.
    example : str
    max_length : int
    """

    what: str
    rule: str
    pattern: str
    example: str
    max_length: int = 64

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler
                                     ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> dict[str, Any]:
        out = handler(schema)
        out.update(pattern=f"^(?:{self.pattern})$", maxLength=self.max_length,
                   examples=[self.example])
        return out

    def check(self, value: str) -> str:
        """``value`` if it has this form; raises the ``bad_form`` error otherwise."""
        # fullmatch: a pattern ending in $ would also accept a trailing newline.
        if len(value) > self.max_length or re.fullmatch(self.pattern, value) is None:
            rule = self.rule if len(value) <= self.max_length else \
                f"at most {self.max_length} characters"
            raise PydanticCustomError("bad_form", "{what}: {rule} (for example {example})",
                                      {"what": self.what, "rule": rule,
                                       "example": self.example})
        return value


# Control characters (line breaks included), DEL, C1 controls, Unicode line separators.
_CONTROLS = "\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029"

BOARD = Form("a board name", "an ASCII letter, then letters, digits and underscores",
             r"[A-Za-z][A-Za-z0-9_]*", "zc706")
PRESET = Form("a preset name", "an ASCII letter, then letters, digits and underscores",
              r"[A-Za-z][A-Za-z0-9_]*", "bee3_one_x8")
PIN = Form("a package pin", "a ball or pin name of capital letters then digits, optionally "
           "written with Quartus' PIN_ prefix", r"(PIN_)?[A-Z]{0,3}[0-9]{1,4}", "AB12")
SITE = Form("a site name", "capital letters, digits and underscores, starting with a letter",
            r"[A-Z][A-Z0-9_]*", "GTXE2_CHANNEL_X1Y13")
PART = Form("a part number", "letters and digits in groups joined by single dashes",
            r"[A-Za-z0-9]+(-[A-Za-z0-9]+)*", "xc7vx485tffg1761-2")
FAMILY = Form("a device family", "a lower-case letter, then lower-case letters, digits and "
              "underscores", r"[a-z][a-z0-9_]*", "virtex7")
TRANSCEIVER = Form("a transceiver type", "letters and digits in groups joined by single "
                   "dashes or underscores", r"[A-Za-z0-9]+([-_][A-Za-z0-9]+)*", "GTX")
CONNECTOR = Form("a connector name", "words of letters, digits and + . / - separated by "
                 "single spaces, starting with a letter or digit",
                 r"[A-Za-z0-9][A-Za-z0-9+./-]*( [A-Za-z0-9+./-]+)*", "SFP+")
IOSTANDARD = Form("an I/O standard", "words of letters, digits and _ . / - separated by "
                  "single spaces, starting with a letter or digit",
                  r"[A-Za-z0-9][A-Za-z0-9_./-]*( [A-Za-z0-9_./-]+)*", "LVDS_25")
ENCLOSURE = Form("an enclosure name", "a letter or digit, then letters, digits and _ . -",
                 r"[A-Za-z0-9][A-Za-z0-9_.-]*", "enc0")
LINE = Form("one line of text", "printable characters without line breaks, tabs or other "
            "control characters", f"[^{_CONTROLS}]*", "Four ZC706 boards in a ring",
            max_length=1000)
TEXT = Form("text", "printable characters, line breaks and tabs, no other control "
            "characters", "[^\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f]*", "UG885 v1.8, table 1-23",
            max_length=10000)


def q(text: str, dim: Dimension) -> Quantity:
    """A quantity literal for defaults."""
    return parse_quantity(text, dim)


# The PHY names; optnet.phys.PHYS holds what each supports (a test keeps the two in step).
Phy = Literal["aurora_8b10b", "aurora_64b66b", "serial_lite_3", "interlaken", "raw_8b10b",
              "lvds"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True,
                              populate_by_name=True)
    noun: ClassVar[str] = "this mapping"


# --------------------------------------------------------------------------- cluster file


class LinkSettings(_Model):
    """Settings of a link; every key may be left to the level above."""

    noun: ClassVar[str] = "link settings"
    phy: Phy | None = None
    """Link protocol: Xilinx Aurora 8B/10B or 64B/66B, Intel SerialLite III, Interlaken,
    optnet's own 8b/10b framing on a raw transceiver (ECP5 DCU), or a source-synchronous
    LVDS/DDR link over general-purpose I/O (`lvds`)."""
    lanes: int | None = Field(None, ge=1, le=64)
    """Lanes bonded into one link (x1, x2, x4, x8 ...)."""
    line_rate: Rate | None = None
    """Line rate of each lane."""
    length: Length | None = None
    """Cable or trace length, for the latency model and the cabling plan."""


class PortSettings(_Model):
    """How a node configures one of its board's ports."""

    noun: ClassVar[str] = "port settings"
    phy: Phy | None = None
    """Link protocol the port runs; every link on this port must agree."""
    line_rate: Rate | None = None
    """Line rate the port is set up for (often fixed by its reference clock)."""


class Defaults(_Model):
    """Values inherited by every node and link that does not set its own."""

    noun: ClassVar[str] = "defaults"
    board: Annotated[str, BOARD] | None = None
    """Board of every node that names none."""
    link: LinkSettings = LinkSettings()
    """Settings of every link that does not give its own."""


class RouterDesc(_Model):
    """Router micro-architecture."""

    noun: ClassVar[str] = "the router settings"
    buffer: Flits | None = None
    """Input buffer depth per port and virtual channel. By default optnet sizes it so that
    every VC of every link can stream at the link's rate over the link's credit loop
    (docs/hardware.md, "Link-level credit"); a smaller one is allowed, with warning W107."""
    allocator: Literal["round_robin", "islip"] = "round_robin"
    """Switch allocator: separable round robin, or iSLIP."""
    pipeline: int = Field(3, ge=1, le=8)
    """Router pipeline stages (cycles per hop at zero load; optnet's router takes 3)."""


class ReliabilityDesc(_Model):
    """Link-level error detection and recovery."""

    noun: ClassVar[str] = "the reliability settings"
    crc: Literal["crc32", "crc16", "none"] = "crc32"
    """CRC appended to every link-layer frame."""
    retransmit: Literal["go_back_n", "none"] = "go_back_n"
    """Recovery on a CRC error or a lost frame."""
    window: int = Field(32, ge=1, le=4096)
    """Frames held in the replay buffer (and sequence-number window)."""


class DirectDesc(_Model):
    """The direct switch of a fully connected cluster with `flow_control: none` (OPTWEB)."""

    noun: ClassVar[str] = "the direct switch settings"
    buffer: Size = q("32KiB", Dimension.SIZE)
    """Receive buffer per peer node; at least `threshold`."""
    threshold: Size = q("16KiB", Dimension.SIZE)
    """Messages up to this size go eager (sent at once, no round trip); longer ones
    rendezvous (sent once the receiver has answered). 0: every message rendezvous."""

    @model_validator(mode="after")
    def _eager_fits(self) -> DirectDesc:
        # An eager message is sent whole on credit for all of it, so it must fit the buffer.
        if self.threshold.value > self.buffer.value:
            raise PydanticCustomError(
                "direct_threshold", "the eager threshold ({threshold}) is larger than the "
                "receive buffer ({buffer}), so an eager message might not fit it",
                {"threshold": str(self.threshold), "buffer": str(self.buffer)})
        return self


class NetworkDesc(_Model):
    """Cluster-wide network parameters."""

    noun: ClassVar[str] = "the network settings"
    clock: Frequency = q("156.25MHz", Dimension.FREQUENCY)
    """Clock of routers and link layers."""
    flit_width: int = Field(128, ge=8, le=2048, multiple_of=8)
    """Flit width in bits."""
    max_packet: Flits = q("16 flits", Dimension.FLITS)
    """Largest packet, header included."""
    flow_control: Literal["credit", "xon_xoff", "none"] = "credit"
    """Link-level flow control. `none` on a fully connected cluster: OPTWEB's direct switch
    (one hop, no router, no link layer, message-level credit; see `direct`). `xon_xoff`
    (BEE3's), and `none` elsewhere, are not built: the routers' link-level credit is used,
    with warning W105."""
    vcs: int = Field(2, ge=1, le=16)
    """Virtual channels per link."""
    router: RouterDesc = RouterDesc()
    """Router micro-architecture."""
    reliability: ReliabilityDesc = ReliabilityDesc()
    """Link-level CRC and retransmission."""
    priorities: int = Field(1, ge=1, le=8)
    """Priority classes (CusComNet routes high-priority packets first)."""
    direct: DirectDesc = DirectDesc()
    """Receive buffer and eager threshold of the direct switch (`flow_control: none` on a
    fully connected cluster)."""


class _Generated(_Model):
    prefix: str = "n"
    """Generated nodes are named prefix + index (n0, n1, ...)."""
    board: Annotated[str, BOARD] | None = None
    """Board of the generated nodes; defaults.board otherwise."""
    link: LinkSettings = LinkSettings()
    """Settings of the generated links, over defaults.link."""


class RingTopology(_Generated):
    """Nodes 0..N-1 in a ring; node i links to i+1 (mod N)."""

    noun: ClassVar[str] = "the ring topology"
    kind: Literal["ring"]
    nodes: int = Field(ge=3, le=8192)
    """Number of nodes."""


class LineTopology(_Generated):
    """Nodes 0..N-1 in a line."""

    noun: ClassVar[str] = "the line topology"
    kind: Literal["line"]
    nodes: int = Field(ge=2, le=8192)
    """Number of nodes."""


class MeshTopology(_Generated):
    """An n-dimensional mesh; node index = x0 + d0 * (x1 + d1 * (x2 ...))."""

    noun: ClassVar[str] = "the mesh topology"
    kind: Literal["mesh"]
    dims: list[Annotated[int, Field(ge=1, le=4096)]] = Field(min_length=1, max_length=6)
    """Size of each dimension."""


class TorusTopology(_Generated):
    """An n-dimensional torus (k-ary n-cube); a dimension of size 2 has one link, not two."""

    noun: ClassVar[str] = "the torus topology"
    kind: Literal["torus"]
    dims: list[Annotated[int, Field(ge=1, le=4096)]] = Field(min_length=1, max_length=6)
    """Size of each dimension."""


class FullTopology(_Generated):
    """Every node linked directly to every other (OPTWEB)."""

    noun: ClassVar[str] = "the fully connected topology"
    kind: Literal["full"]
    nodes: int = Field(ge=2, le=256)
    """Number of nodes."""


class HypercubeTopology(_Generated):
    """2^dimension nodes; nodes whose indices differ in one bit are linked."""

    noun: ClassVar[str] = "the hypercube topology"
    kind: Literal["hypercube"]
    dimension: int = Field(ge=1, le=13)
    """Number of dimensions."""


class DragonflyTopology(_Generated):
    """Groups of fully connected routers (one FPGA each); global links join groups."""

    noun: ClassVar[str] = "the dragonfly topology"
    kind: Literal["dragonfly"]
    groups: int = Field(ge=2, le=4096)
    """Number of groups."""
    routers: int = Field(ge=1, le=256)
    """Routers (FPGAs) per group."""
    global_links: int = Field(ge=1, le=64)
    """Global links per router; at most routers * global_links + 1 groups."""
    global_link: LinkSettings = LinkSettings()
    """Settings of the global links, over `link`."""


class InterEnclosure(_Model):
    """How enclosures are joined over serial links."""

    noun: ClassVar[str] = "the inter-enclosure settings"
    pattern: Literal["full", "groups", "ring"] = "full"
    """`full`: every enclosure to every other; `groups`: enclosures in fully connected
    groups of `group_size`, each linked to the same position in every other group (BEE3
    One-x8); `ring`: a ring of enclosures."""
    channels: int = Field(ge=1, le=64)
    """Inter-enclosure channels per FPGA."""
    plane_size: int | None = Field(None, ge=1)
    """FPGAs per plane: the FPGAs of an enclosure are split into planes of this many, and
    plane p of every enclosure forms its own inter-enclosure network (BEE3 Four-x2: 2,
    Eight-x1: 1). Default: all FPGAs of an enclosure form one plane."""
    group_size: int | None = Field(None, ge=2)
    """Enclosures per group, for pattern `groups`."""
    link: LinkSettings = LinkSettings()
    """Settings of the inter-enclosure links (lanes per channel here)."""


class HierarchicalTopology(_Generated):
    """Switch-less enclosures: fully connected on-board links inside, serial links between."""

    noun: ClassVar[str] = "the hierarchical topology"
    kind: Literal["hierarchical"]
    enclosures: int = Field(ge=1, le=1024)
    """Number of enclosures (boxes, or boards carrying several FPGAs)."""
    per_enclosure: int = Field(ge=1, le=64)
    """FPGAs per enclosure; node e*per_enclosure + i is FPGA i of enclosure e."""
    intra: LinkSettings = LinkSettings()
    """Settings of the on-board links inside an enclosure."""
    inter: InterEnclosure


Topology = Annotated[
    RingTopology | LineTopology | MeshTopology | TorusTopology | FullTopology
    | HypercubeTopology | DragonflyTopology | HierarchicalTopology,
    Field(discriminator="kind"),
]


class NodeDesc(_Model):
    """An FPGA. A node named like a generated one refines it instead of adding one."""

    noun: ClassVar[str] = "a node"
    name: str
    """Legal HDL identifier; also the node's output folder name."""
    board: Annotated[str, BOARD] | None = None
    """Board file name (see `optnet boards`)."""
    enclosure: Annotated[str, ENCLOSURE] | None = None
    """Chassis or board the FPGA sits in; on-board links stay inside one."""
    id: int | None = Field(None, ge=0, le=65535)
    """Numeric node id used in packet headers; assigned in order when omitted."""
    ports: dict[str, PortSettings] = {}
    """Per-port configuration."""


class LinkDesc(LinkSettings):
    """A full-duplex cable or trace between two ports."""

    noun: ClassVar[str] = "a link"
    from_: str = Field(alias="from")
    """One end: `node.port` or `node.port[lanes]` with lanes `i` or `i..j`."""
    to: str
    """The other end, written the same way."""


class MultipathDesc(_Model):
    """OPTWEB-style multipath for large transfers."""

    noun: ClassVar[str] = "the multipath settings"
    max_hops: int = Field(2, ge=1, le=2)
    """Longest detour path (2 = via one intermediate node)."""
    above: Size = q("16KiB", Dimension.SIZE)
    """Transfers larger than this are split over the detour paths."""


class RoutingDesc(_Model):
    """Route computation."""

    noun: ClassVar[str] = "the routing settings"
    algorithm: Literal["auto", "dimension_order", "shortest", "up_down", "direct",
                       "dragonfly_minimal", "hierarchical"] = "auto"
    """`auto` picks by topology kind."""
    multipath: MultipathDesc | None = None
    broadcast: Literal["tree", "cascade", "unicast", "none"] = "tree"
    """Broadcast by spanning tree, by cascading duplication with duplicate suppression
    (CusComNet), by one-hop unicast fan-out on fully connected networks, or not in the
    network at all (`none`: the routers hold no multicast logic and drop broadcast packets;
    software sends one unicast per destination, as BlueDBM does)."""


class EndpointDesc(_Model):
    """A transport-layer endpoint: one virtual channel for the user's logic (BlueDBM)."""

    noun: ClassVar[str] = "an endpoint"
    name: str
    """Legal identifier; the name of the endpoint's AXI4-Stream ports."""
    width: int = Field(ge=8, le=4096, multiple_of=8)
    """AXI4-Stream data width of the user port, in bits."""
    managed: bool = True
    """Managed endpoints have end-to-end credit flow control; unmanaged ones do not."""
    buffer: Packets | None = None
    """Receive buffer (managed only); default 64 packets."""
    credit: int | None = Field(None, ge=1, le=1 << 20)
    """Packets granted to a sender per credit message (managed only); default 16."""
    offset: int | None = Field(None, ge=0, le=1 << 20)
    """Credit message sent this many packets before the sender's credit runs out, hiding
    the round trip (managed only); default half the credit."""
    init_budget: int | None = Field(None, ge=0, le=1 << 20)
    """Credit messages' worth of packets every sender may send before any credit arrives
    (managed only); default 1."""
    priority: int = Field(0, ge=0, le=7)
    """Priority class (0 = lowest)."""


class PhyModelDesc(_Model):
    """Model parameters of one link protocol; each replaces optnet's figure."""

    noun: ClassVar[str] = "the protocol's model parameters"
    latency: Duration | None = None
    """One-way latency of the PHY pair: serialiser, encoding, alignment, deserialiser (a
    measured hop latency, less the router, fits here)."""
    user_rate: Rate | None = None
    """Most the IP's user interface carries per lane (its width times its clock), when that
    is below the encoded line rate (OPTWEB: 64 bits at 355 MHz)."""
    hop: Duration | None = None
    """A measured one-way hop over this protocol, router excluded (BEE3's 541 ns Aurora
    hop): replaces the model's link layers, PHY pair, serialisation and cable."""


class ModelDesc(_Model):
    """Parameters of the report's models; each replaces optnet's default (docs/report.md)."""

    noun: ClassVar[str] = "the model settings"
    router_cycles: int | None = Field(None, ge=1, le=64)
    """Cycles a head flit spends in a router at zero load; default `network.router.pipeline`,
    one more on families whose tables are in block RAM."""
    link_layer_cycles: int | None = Field(None, ge=0, le=4096)
    """Network clock cycles of both link layers of a hop (framing, clock crossings, check)."""
    hub_cycles: int | None = Field(None, ge=0, le=64)
    """Network clock cycles between an endpoint and its router, each way."""
    cable_delay: Duration = q("5ns", Dimension.TIME)
    """Propagation delay per metre of cable (links without a length count 1 m)."""
    phy: dict[Phy, PhyModelDesc] = {}
    """Per link protocol: latency and user-interface rate."""
    startup: Duration = q("0ns", Dimension.TIME)
    """Time from a transfer's request to its first flit (DMA set-up, memory read): OPTWEB's
    configuration delay."""
    error_rate: float = Field(0.0, ge=0.0, lt=1.0)
    """Probability that a packet is corrupted on a link and resent (CusComNet's rho)."""


class ClusterDesc(_Model):
    """A cluster of FPGAs and the network that joins them."""

    model_config = ConfigDict(title="optnet cluster")
    noun: ClassVar[str] = "the cluster file"
    optnet: int
    """Format version; this is version 1."""
    name: str
    """Cluster name; a legal identifier."""
    preset: Annotated[str, PRESET] | None = None
    """A topology preset (`optnet topologies`) this file starts from; keys given here
    override the preset's, mapping by mapping."""
    description: Annotated[str, LINE] = ""
    """One line saying what the cluster is."""
    source: Annotated[str, TEXT] | None = None
    """Where the described system comes from (paper, section)."""
    defaults: Defaults = Defaults()
    """Board and link settings inherited by every node and link."""
    network: NetworkDesc = NetworkDesc()
    """Clock, flit width, flow control, virtual channels, router and reliability."""
    topology: Topology | None = None
    """A topology generator; explicit nodes and links refine or extend it."""
    nodes: list[NodeDesc] = []
    """Explicit nodes; one named like a generated node refines it."""
    links: list[LinkDesc] = []
    """Explicit links, in addition to generated ones."""
    routing: RoutingDesc = RoutingDesc()
    """Route computation and broadcast."""
    endpoints: list[EndpointDesc] = []
    """Transport endpoints present on every node."""
    model: ModelDesc = ModelDesc()
    """Parameters of the report's latency, bandwidth and collective models."""


# --------------------------------------------------------------------------- board file


class LaneDesc(_Model):
    """One lane: a transceiver channel (serial) or a differential pair per direction."""

    noun: ClassVar[str] = "a lane"
    site: Annotated[str, SITE] | None = None
    """Transceiver channel site, e.g. GTXE2_CHANNEL_X1Y13 or DCU0_CH0."""
    tx_p: Annotated[str, PIN] | None = None
    tx_n: Annotated[str, PIN] | None = None
    rx_p: Annotated[str, PIN] | None = None
    rx_n: Annotated[str, PIN] | None = None


class PairPins(_Model):
    """Forwarded clock pairs of a parallel port."""

    noun: ClassVar[str] = "the forwarded clock pins"
    tx_p: Annotated[str, PIN]
    tx_n: Annotated[str, PIN]
    rx_p: Annotated[str, PIN]
    rx_n: Annotated[str, PIN]


class PinLevelDesc(_Model):
    """An FPGA output the board top holds at a constant level."""

    noun: ClassVar[str] = "a driven pin"
    pin: Annotated[str, PIN]
    level: Literal[0, 1]
    iostandard: Annotated[str, IOSTANDARD] | None = None
    what: Annotated[str, TEXT] | None = None
    """What the pin controls and what the level selects, for comments in generated files."""


class RefClkDesc(_Model):
    """Transceiver reference clock."""

    noun: ClassVar[str] = "a reference clock"
    freq: Frequency
    p: Annotated[str, PIN] | None = None
    n: Annotated[str, PIN] | None = None
    site: Annotated[str, SITE] | None = None
    """Reference clock buffer site (IBUFDS_GTE2_X1Y12, IBUFDS_GTE4_X0Y21): its quad and
    MGTREFCLK index, which the vendor IP's reference clock source setting names.
    Stratix 10 names the dedicated pin instead (REFCLK_GXBL1C_CHT: bank 1C, top triplet),
    for the GXT reference clock triplet rule (E335)."""
    drive: list[PinLevelDesc] = Field(default_factory=list, max_length=16)
    """FPGA pins that select or enable this clock's oscillator (frequency select, output
    enable), held at the given levels by every board top that uses the clock."""


class OnboardDesc(_Model):
    """Fixed wiring of an on-board port to another FPGA position of the same board."""

    noun: ClassVar[str] = "the on-board wiring"
    peer_offset: int = Field(ge=1, le=63)
    """The port reaches FPGA position (own position + peer_offset) mod FPGAs per board."""
    peer_port: str
    """Port name at the peer."""


class PortDesc(_Model):
    """A connector (or on-board bus) and the lanes wired to it."""

    noun: ClassVar[str] = "a board port"
    kind: Literal["serial", "parallel"]
    """`serial`: transceiver lanes; `parallel`: source-synchronous LVDS/DDR on GPIO."""
    connector: Annotated[str, CONNECTOR]
    """SFP+, QSFP+, QSFP28, CX4, SMA, FMC-HPC, optical, onboard, header, ..."""
    lanes: list[LaneDesc] = Field(min_length=1, max_length=256)
    max_line_rate: Rate | None = None
    """Per-lane limit of this port, when below the transceiver's."""
    refclk: RefClkDesc | None = None
    iostandard: Annotated[str, IOSTANDARD] | None = None
    """I/O standard of the port's pins (parallel ports: of every pair, unless
    `rx_iostandard` gives the receive pairs their own)."""
    rx_iostandard: Annotated[str, IOSTANDARD] | None = None
    """I/O standard of the receive pairs (data and forwarded clock) of a parallel port, where
    it differs from `iostandard` (ECP5 boards that emulate differential outputs with
    LVCMOS33D receive with the LVDS input buffer)."""
    clock: PairPins | None = None
    """Forwarded clock pins (parallel ports)."""
    onboard: OnboardDesc | None = None
    verified: bool = True
    """False when the pins are not confirmed by the board's own documentation."""
    note: Annotated[str, TEXT] | None = None


class ClockDesc(_Model):
    """A board oscillator input."""

    noun: ClassVar[str] = "a board clock"
    freq: Frequency
    pin: Annotated[str, PIN] | None = None
    p: Annotated[str, PIN] | None = None
    n: Annotated[str, PIN] | None = None
    iostandard: Annotated[str, IOSTANDARD] | None = None


class LedsDesc(_Model):
    """User LEDs the generated board top drives with link and network status."""

    noun: ClassVar[str] = "the LEDs"
    pins: list[Annotated[str, PIN]] = Field(min_length=1, max_length=64)
    """Package pins, LED 0 first."""
    iostandard: Annotated[str, IOSTANDARD] | None = None
    """I/O standard of every LED pin."""
    active_low: bool = False
    """The LEDs light when their pin is driven low."""


class UartDesc(_Model):
    """A serial port to a host (a USB-UART bridge), for the board top's bring-up registers
    (``docs/bringup.md``). Directions are the FPGA's."""

    noun: ClassVar[str] = "the UART"
    tx: Annotated[str, PIN]
    """Package pin the FPGA transmits on (the bridge's receive input)."""
    rx: Annotated[str, PIN]
    """Package pin the FPGA receives on (the bridge's transmit output)."""
    iostandard: Annotated[str, IOSTANDARD] | None = None
    """I/O standard of both pins."""
    baud: int = Field(115200, ge=300, le=12_000_000)
    """Bits per second."""


class BramDesc(_Model):
    """Block RAM primitives."""

    noun: ClassVar[str] = "the block RAM figures"
    blocks: int = Field(ge=0)
    size: Size


class ResourcesDesc(_Model):
    """Logic resources of the FPGA."""

    noun: ClassVar[str] = "the resource figures"
    lut: int | None = Field(None, ge=0)
    alm: int | None = Field(None, ge=0)
    ff: int = Field(ge=0)
    bram: BramDesc
    dsp: int = Field(0, ge=0)


class TransceiversDesc(_Model):
    """The FPGA's multi-gigabit transceivers."""

    noun: ClassVar[str] = "the transceiver figures"
    type: Annotated[str, TRANSCEIVER]
    min_line_rate: Rate | None = None
    max_line_rate: Rate


class BoardDesc(_Model):
    """One FPGA on a board and the connectors wired to it."""

    model_config = ConfigDict(title="optnet board")
    noun: ClassVar[str] = "the board file"
    optnet_board: int
    """Board format version; this is version 1."""
    name: str
    """The file name's stem: a legal identifier."""
    extends: Annotated[str, BOARD] | None = None
    """Board this one refines (mappings merge key by key)."""
    description: Annotated[str, LINE] = ""
    vendor: Literal["xilinx", "intel", "lattice"]
    family: Annotated[str, FAMILY]
    part: Annotated[str, PART]
    resources: ResourcesDesc
    transceivers: TransceiversDesc | None = None
    clocks: dict[str, ClockDesc] = {}
    leds: LedsDesc | None = None
    """User LEDs, for the board top's status display."""
    uart: UartDesc | None = None
    """A serial port to a host, for the board top's bring-up registers."""
    ports: dict[str, PortDesc] = {}
    source: Annotated[str, TEXT]
    """Where every fact in this file comes from."""
    note: Annotated[str, TEXT] | None = None
