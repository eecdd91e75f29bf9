"""The zero-load latency and credit model that lint, route and report share.

One model, so that every command prints the same figures for the same file: the routing
stage weighs paths by :func:`hop`, ``optnet route`` prints the diameter it gives, lint's
W101 and the report's credit table judge endpoints by :class:`CreditCheck`, and the report
(:mod:`optnet.report`) builds its latency, bandwidth and collective models on them. The
module sits next to :mod:`optnet.cluster`, below routing, so every stage may import it.

A packet's head goes, at zero load, from the sending endpoint through the local hub into its
node's router, then per hop over one link (link layer out, PHY pair, cable, link layer in)
into the next router, and at the destination out through the hub to the endpoint::

    latency(s, d) = 2 hub + (hops + 1) router + sum over hops of
                    (link layers + PHY + serialisation + cable)

Every component is a parameter (:class:`ModelParams`): cycles at the network clock for the
router, link layer and hub, a latency per PHY protocol, the cable's delay per metre; or a
measured hop per protocol, which replaces the link's part of the sum. Serialisation is what a
lone flit waits for on a link at zero load: its frame's header, the flit, and the next
header, which carries the frame's check (:mod:`optnet.frame`), ``2 h + 1`` units at the
link's unit rate. Streaming, a link carries ``B`` flits per ``B + h`` units. All times are
exact fractions of a second. The sums over routed paths are in :mod:`optnet.routing.latency`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from optnet.cluster import Cluster, Link
from optnet.devices.families import block_table_families
from optnet.frame import LinkFrame, link_frame
from optnet.phys import PHYS
from optnet.spec.models import EndpointDesc

__all__ = ["ARG_BITS", "COMPONENTS", "ENDPOINT_CREDIT_CYCLES", "HUB_CYCLES",
           "LINK_LAYER_CYCLES", "MIN_TAG_BITS", "Breakdown", "CreditCheck", "LinkParams",
           "ModelParams", "arg_bits", "endpoint_credits", "ends", "hop", "hop_times",
           "model_params"]

#: Network clock cycles a flit spends in the two link layers of a hop at zero load (the
#: transmit pipeline, the clock crossings to and from the PHY domain, the frame check, the
#: receive staging), besides the units it waits for, which the model counts apart as
#: serialisation. Measured on optnet's LinkLayer in simulation with the PHY clock at the
#: network clock (tests/test_report_models.py).
LINK_LAYER_CYCLES = 12

#: Cycles between an endpoint's stream and its router's local port (the hub), each way.
HUB_CYCLES = 1

#: Network clock cycles the two endpoints add to a credit loop, besides the network's
#: latency both ways and the packet's tail: the receiver's buffer, its count of taken
#: packets and grant queue, and the sender's budget update. Measured on optnet's Endpoint in
#: simulation (tests/test_hw_endpoint.py).
ENDPOINT_CREDIT_CYCLES = 4

#: The components of a latency, in the order reports list them.
COMPONENTS = ("hub", "router", "link_layer", "phy", "serialisation", "cable")

#: Least bits of the header's free argument (credit grants, the endpoints' reset handshake).
ARG_BITS = 16

#: Least bits of a SYNC's tag in the endpoints' reset handshake (:mod:`optnet.hw.endpoint`).
#: Fewer tag bits would let a stale ACK match after only a few resets in one round trip.
MIN_TAG_BITS = 3

_CRC_BITS = {"crc32": 32, "crc16": 16, "none": 0}

#: Replay-buffer entries beyond the round trip and three frames: the clock crossings and
#: pipelines at both ends.
_WINDOW_SLACK = 16


def _clog2(value: int) -> int:
    # as optnet.routing.tables.clog2, which this module is below
    return max(1, (value - 1).bit_length())


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
    """Every parameter of the latency, credit, bandwidth and collective models.

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
    vcs, buffer_depth : int
        Virtual channels, and router input buffer per VC in flits (the credit counters).
    window : int
        The least replay window, in flits (``reliability.window``; :meth:`replay_window`
        sizes each link's from its round trip).
    crc_bits : int
        The frame check's width (0: none).
    packet_flits : int
        Flits of the longest packet, header included (``network.max_packet``).
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
    vcs: int
    buffer_depth: int
    window: int
    crc_bits: int
    packet_flits: int
    startup: Fraction
    error_rate: float
    phys: Mapping[str, tuple[Fraction | None, Fraction | None, Fraction | None]]
    # (phy, lanes, line rate, length) -> its LinkFrame: thousands of links, few kinds
    _frames: dict = field(default_factory=dict, init=False, compare=False, repr=False)

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

    def unit_time(self, link: Link) -> Fraction:
        """Seconds per unit (a flit's data, or a header unit) on ``link``: its payload rate,
        and never less than a clock cycle (a link layer moves one unit per cycle)."""
        return max(Fraction(self.flit_bits) / self.link(link).payload_rate, 1 / self.clock)

    def replay_window(self, link: Link) -> int:
        """Flits the replay buffer of ``link`` must hold so that acknowledgements return
        before it fills at full rate: the round trip in units (PHY and cable both ways),
        three frames (the receiver holds one until the next header checks it, the far end
        may be sending one before its header can carry the acknowledgement, and one is
        being read out) and the pipelines' slack; at least ``window``."""
        lp = self.link(link)
        one_way = lp.latency + lp.length_m * self.cable_delay_per_m
        round_trip = math.ceil(2 * one_way / self.unit_time(link))
        probe = link_frame(self.flit_bits, self.vcs, self.buffer_depth, self.window,
                           self.crc_bits).frame
        full = probe.max_flits + probe.header_units
        return max(self.window, round_trip + 3 * full + _WINDOW_SLACK)

    def link_frame(self, link: Link) -> LinkFrame:
        """The frame and replay buffer of ``link``'s link layers, as the plan sizes them."""
        key = (link.phy, link.lanes, link.line_rate.value,
               link.length.value if link.length is not None else None)
        if key not in self._frames:
            self._frames[key] = link_frame(self.flit_bits, self.vcs, self.buffer_depth,
                                           self.replay_window(link), self.crc_bits)
        return self._frames[key]

    def flit_time(self, link: Link) -> Fraction:
        """Seconds per flit streaming over ``link``: full frames, ``B`` flits per ``B + h``
        units."""
        frame = self.link_frame(link).frame
        return self.unit_time(link) * Fraction(frame.max_flits + frame.header_units,
                                               frame.max_flits)

    def serialisation(self, link: Link) -> Fraction:
        """Seconds a lone flit waits on ``link`` at zero load for its units: its frame's
        header, itself, and the next header, which checks it."""
        return (2 * self.link_frame(link).frame.header_units + 1) * self.unit_time(link)

    @staticmethod
    def link_type(link: Link) -> str:
        """How reports group links: protocol and lanes (``aurora_8b10b x2``)."""
        return f"{link.phy} x{link.lanes}"


def model_params(cluster: Cluster) -> ModelParams:
    """The model parameters of ``cluster``: optnet's figures, replaced by the cluster file's
    ``model:`` settings where it gives them."""
    desc = cluster.desc
    net, model = desc.network, desc.model
    blocks = block_table_families()
    block = any(node.board.family in blocks for node in cluster.nodes)
    id_bits = _clog2(max((n.id for n in cluster.nodes), default=0) + 1)
    ep_bits = _clog2(max(len(desc.endpoints), 1))
    # the header of optnet.plan.configs.FlitFormat: dst, src, mcast, dst_ep, src_ep, kind, prio, arg
    header = 2 * id_bits + 1 + 2 * ep_bits + 1 + _clog2(net.priorities) + arg_bits(
        desc.endpoints)
    phys = {}
    for name in PHYS:
        given = model.phy.get(name)
        # None: the PHY table's latency at each link's line rate
        latency = given.latency.value if given and given.latency else None
        user = given.user_rate.value if given and given.user_rate else None
        hop_ = given.hop.value if given and given.hop else None
        phys[name] = (latency, user, hop_)
    return ModelParams(
        clock=net.clock.value,
        router_cycles=model.router_cycles or net.router.pipeline + block,
        link_layer_cycles=(model.link_layer_cycles if model.link_layer_cycles is not None
                           else LINK_LAYER_CYCLES),
        hub_cycles=model.hub_cycles if model.hub_cycles is not None else HUB_CYCLES,
        cable_delay_per_m=model.cable_delay.value,
        flit_bits=net.flit_width,
        header_bits=header,
        vcs=net.vcs,
        buffer_depth=int(net.router.buffer.value),
        window=net.reliability.window,
        crc_bits=_CRC_BITS[net.reliability.crc],
        packet_flits=int(net.max_packet.value),
        startup=model.startup.value,
        error_rate=model.error_rate,
        phys=phys,
    )


@dataclass(frozen=True)
class Breakdown:
    """A latency split by component (seconds), with how many of each part it crosses.

    Attributes
    ----------
    parts : Mapping[str, Fraction]
        Seconds per component of :data:`COMPONENTS`.
    routers : int
        Routers crossed (hops + 1).
    hops : Mapping[str, int]
        Links crossed, by link type (:meth:`ModelParams.link_type`).
    """

    parts: Mapping[str, Fraction]
    routers: int
    hops: Mapping[str, int]

    @property
    def total(self) -> Fraction:
        return sum(self.parts.values(), Fraction(0))

    def __add__(self, other: Breakdown) -> Breakdown:
        hops = dict(self.hops)
        for kind, count in other.hops.items():
            hops[kind] = hops.get(kind, 0) + count
        return Breakdown({c: self.parts.get(c, Fraction(0)) + other.parts.get(c, Fraction(0))
                          for c in COMPONENTS}, self.routers + other.routers, hops)


def hop(params: ModelParams, link: Link) -> Breakdown:
    """One hop over ``link``: the router it leaves, both link layers, the PHY pair, a lone
    flit's serialisation (:meth:`ModelParams.serialisation`) and the cable."""
    lp = params.link(link)
    router = params.cycles(params.router_cycles)
    if lp.hop is not None:
        # a measured hop stands for everything but the router; it is booked as the PHY's
        parts = dict.fromkeys(COMPONENTS, Fraction(0)) | {"router": router, "phy": lp.hop}
    else:
        parts = {
            "hub": Fraction(0),
            "router": router,
            "link_layer": params.cycles(params.link_layer_cycles),
            "phy": lp.latency,
            "serialisation": params.serialisation(link),
            "cable": lp.length_m * params.cable_delay_per_m,
        }
    return Breakdown(parts, 1, {params.link_type(link): 1})


def hop_times(params: ModelParams, links: Iterable[Link]) -> dict[int, tuple[Fraction, Fraction]]:
    """``{link index: (hop latency, flit time)}`` of ``links`` (:func:`hop` totals and
    :meth:`ModelParams.flit_time`), each computed once per kind of link, since a large
    cluster has thousands of links but a handful of kinds."""
    known: dict[tuple, tuple[Fraction, Fraction]] = {}
    out = {}
    for link in links:
        key = (link.phy, link.lanes, link.line_rate.value,
               link.length.value if link.length is not None else None)
        if key not in known:
            known[key] = (hop(params, link).total, params.flit_time(link))
        out[link.index] = known[key]
    return out


def ends(params: ModelParams) -> Breakdown:
    """What every path crosses besides its hops: the hub at both ends and the destination's
    router (the one no hop leaves)."""
    return Breakdown({c: Fraction(0) for c in COMPONENTS}
                     | {"hub": 2 * params.cycles(params.hub_cycles),
                        "router": params.cycles(params.router_cycles)}, 1, {})


# ------------------------------------------------------------------------------ credits

def arg_bits(endpoints: Iterable[EndpointDesc]) -> int:
    """Bits of the packet header's free argument: :data:`ARG_BITS`, or more when a managed
    endpoint's reset handshake needs them. An ACK of that handshake carries, beside three
    flag bits and a tag of at least :data:`MIN_TAG_BITS`, how many of the reset node's
    packets the peer still holds, up to ``init_budget * credit + offset`` (the endpoint
    sizes it as ``(init_budget + 1) * credit``, :class:`optnet.plan.configs.EndpointConfig`)."""
    need = ARG_BITS
    for ep in endpoints:
        if ep.managed:
            init_budget, credit, _ = endpoint_credits(ep)
            need = max(need, 3 + MIN_TAG_BITS + ((init_budget + 1) * credit).bit_length())
    return need


def endpoint_credits(ep: EndpointDesc) -> tuple[int, int, int]:
    """``(init_budget, credit, offset)`` of a managed endpoint, defaults applied as the plan
    applies them (1, 16 and half the credit).

    The default offset sends each credit half a credit early: with offset 0 a sender may
    have only one packet in flight while the grant travels back (W101,
    :func:`optnet.routing.latency.check_credit`), which already costs rate on two boards
    one cable apart.
    """
    credit = ep.credit if ep.credit is not None else 16
    return (ep.init_budget if ep.init_budget is not None else 1, credit,
            ep.offset if ep.offset is not None else credit // 2)


@dataclass(frozen=True)
class CreditCheck:
    """Whether a managed endpoint's credits keep a path busy, by the rule the endpoint's
    RTL (:mod:`optnet.hw.endpoint`) implements.

    A sender starts with ``init_budget * credit`` packets of budget per destination; the
    receiver sends a grant of ``credit`` packets when its user has taken ``credit - offset``
    packets from that source, and every ``credit`` packets after. The grant a packet
    triggers reaches the sender one credit *loop* after the packet left it, and by then the
    sender may have sent ``window = (init_budget - 1) * credit + offset + 1`` packets from
    that one on without waiting. So it never waits when the window covers the loop
    (``window * packet_time >= loop``); otherwise it sends ``init_budget * credit`` packets
    per ``loop + (credit - offset - 1) * packet_time``, which is :attr:`share` of the
    path's rate (``tests/test_hw_endpoint.py`` measures this on the RTL).

    Attributes
    ----------
    init_budget, credit, offset : int
        The endpoint's parameters (:func:`endpoint_credits`).
    loop : Fraction
        Seconds from a packet's head leaving the sender to the grant it triggers arriving
        back: the packet's zero-load latency, its tail behind the head, the grant's latency
        and the endpoints' :data:`ENDPOINT_CREDIT_CYCLES`.
    packet_time : Fraction
        Seconds between packets streaming over the path (its slowest link).
    """

    init_budget: int
    credit: int
    offset: int
    loop: Fraction
    packet_time: Fraction

    @property
    def window(self) -> int:
        """Packets a source sends, from one packet on, before it needs that packet's grant."""
        return max(0, (self.init_budget - 1) * self.credit + self.offset + 1)

    @property
    def needed(self) -> int:
        """Packets the sender streams while one credit loop goes round."""
        return math.ceil(self.loop / self.packet_time)

    @property
    def sufficient(self) -> bool:
        return self.window >= self.needed

    @property
    def share(self) -> Fraction:
        """Share of the path's rate the credits allow at zero load."""
        period = self.loop + (self.credit - self.offset - 1) * self.packet_time
        if period <= 0:
            return Fraction(1)
        return min(Fraction(1), self.init_budget * self.credit * self.packet_time / period)
