"""The parameters of the report's models, from optnet's data and the cluster file.

Every figure a model uses is here, with where it comes from: the PHY table
(:data:`optnet.phys.PHYS`, cited per protocol), the cluster's network settings, optnet's own
hardware (cycles of its router, link layer and hub), and the cluster file's ``model:``
mapping, which replaces any of them (:class:`optnet.spec.models.ModelDesc`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from optnet.cluster import Cluster, Link
from optnet.hw.flit import FlitFormat, clog2
from optnet.hw.link import LinkConfig, frame_layout
from optnet.phys import PHYS
from optnet.plan import BLOCK_TABLE_FAMILIES

__all__ = ["LINK_LAYER_CYCLES", "LinkParams", "ModelParams", "model_params"]

#: Network clock cycles a flit spends in the two link layers of a hop at zero load (framing,
#: the clock crossings to and from the PHY domain, the frame check), besides the frame's
#: serialisation, which the model counts apart. Measured on optnet's LinkLayer in
#: simulation with the PHY clock at the network clock (tests/test_report_models.py).
LINK_LAYER_CYCLES = 8

#: Cycles between an endpoint's stream and its router's local port (the hub), each way.
HUB_CYCLES = 1


@dataclass(frozen=True)
class LinkParams:
    """What the models need of one link.

    Attributes
    ----------
    lanes : int
    line_rate : Fraction
        Bit/s per lane on the wire.
    encoding : Fraction
        Payload bits per line bit of the line code (8b/10b: 4/5).
    user_rate : Fraction or None
        Most the IP's user interface carries per lane, in bit/s.
    latency : Fraction
        One-way PHY pair latency, seconds.
    length_m : Fraction
    hop : Fraction or None
        A measured hop (router excluded) that replaces the model's sum, seconds.
    """

    lanes: int
    line_rate: Fraction
    encoding: Fraction
    user_rate: Fraction | None
    latency: Fraction
    length_m: Fraction
    hop: Fraction | None = None

    @property
    def payload_rate(self) -> Fraction:
        """Bit/s the link carries for the link layer: the encoded line rate of all lanes, or
        the user interface's rate if lower."""
        per_lane = self.line_rate * self.encoding
        if self.user_rate is not None:
            per_lane = min(per_lane, self.user_rate)
        return self.lanes * per_lane


@dataclass(frozen=True)
class ModelParams:
    """Every parameter of the latency, bandwidth and collective models.

    Attributes
    ----------
    clock : Fraction
        Network clock, Hz.
    router_cycles, link_layer_cycles, hub_cycles : int
        Zero-load cycles at the network clock (see :class:`~optnet.spec.models.ModelDesc`).
    cable_delay_per_m : Fraction
        Seconds per metre of cable.
    flit_bits : int
        Flit width.
    header_bits : int
        Bits of the head flit a packet's header takes.
    frame_bits : int
        Bits of one link-layer frame carrying one flit (its framing, credits and CRC).
    startup : Fraction
        Seconds from a transfer's request to its first flit.
    error_rate : float
        Probability a packet is corrupted on one link and resent.
    phys : Mapping[str, tuple[Fraction | None, Fraction | None, Fraction | None]]
        Per protocol, as the cluster file gives them (else None): PHY latency (s; None: the
        PHY table's at the link's line rate), user-interface rate per lane (bit/s) and a
        measured hop (s).
    """

    clock: Fraction
    router_cycles: int
    link_layer_cycles: int
    hub_cycles: int
    cable_delay_per_m: Fraction
    flit_bits: int
    header_bits: int
    frame_bits: int
    startup: Fraction
    error_rate: float
    phys: Mapping[str, tuple[Fraction | None, Fraction | None, Fraction | None]]

    def cycles(self, count: int) -> Fraction:
        """``count`` network clock cycles in seconds."""
        return Fraction(count) / self.clock

    def link(self, link: Link) -> LinkParams:
        """The model's view of ``link``."""
        latency, user_rate, hop = self.phys[link.phy]
        info = PHYS[link.phy]
        return LinkParams(link.lanes, link.line_rate.value, info.efficiency, user_rate,
                          info.pair_latency(link.line_rate.value) if latency is None
                          else latency,
                          link.length.value if link.length is not None else Fraction(1), hop)

    @staticmethod
    def link_type(link: Link) -> str:
        """How reports group links: protocol, lanes and line rate (``aurora_8b10b x2``)."""
        return f"{link.phy} x{link.lanes}"


def model_params(cluster: Cluster) -> ModelParams:
    """The model parameters of ``cluster``: optnet's figures, replaced by the cluster file's
    ``model:`` settings where it gives them."""
    desc = cluster.desc
    net, model = desc.network, desc.model
    block = any(node.board.family in BLOCK_TABLE_FAMILIES for node in cluster.nodes)
    fmt = FlitFormat(width=net.flit_width, vcs=net.vcs,
                     id_bits=clog2(max((n.id for n in cluster.nodes), default=0) + 1),
                     prio_bits=clog2(net.priorities))
    crc = {"crc32": 32, "crc16": 16, "none": 0}[net.reliability.crc]
    link_cfg = LinkConfig(fmt, 32, "phy", int(net.router.buffer.value),
                          window=net.reliability.window, crc_bits=crc)
    phys = {}
    for name in PHYS:
        given = model.phy.get(name)
        # None: the PHY table's latency at each link's line rate
        latency = given.latency.value if given and given.latency else None
        user = given.user_rate.value if given and given.user_rate else None
        hop = given.hop.value if given and given.hop else None
        phys[name] = (latency, user, hop)
    return ModelParams(
        clock=net.clock.value,
        router_cycles=model.router_cycles or net.router.pipeline + block,
        link_layer_cycles=(model.link_layer_cycles if model.link_layer_cycles is not None
                           else LINK_LAYER_CYCLES),
        hub_cycles=model.hub_cycles if model.hub_cycles is not None else HUB_CYCLES,
        cable_delay_per_m=model.cable_delay.value,
        flit_bits=net.flit_width,
        header_bits=fmt.header_bits,
        frame_bits=frame_layout(link_cfg).size,
        startup=model.startup.value,
        error_rate=model.error_rate,
        phys=phys,
    )
