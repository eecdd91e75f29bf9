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

A *direct* cluster (:func:`is_direct`: fully connected, ``flow_control: none``) has no router
and no link layer but OPTWEB's direct switch (:mod:`optnet.hw.direct`), and the same sum
counts its parts: ``router`` is the switch (a message's first beat to its word on the link,
and a word from the link to the user: :data:`DIRECT_SWITCH_CYCLES` each), ``link_layer`` the
two ends' clock crossings and gearboxes (:data:`DIRECT_LINK_CYCLES`), ``hub`` the endpoints'
multiplexer (:data:`DIRECT_HUB_CYCLES`), and serialisation the PHY words a lone beat waits
for: the EAGER control word's and its own (:class:`DirectParams`). Streaming, a beat takes
its data words, and at most one a network cycle (the switch's rate).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from optnet.cluster import Cluster, Link
from optnet.devices.families import block_table_families
from optnet.devices.linkip import user_width_for
from optnet.frame import LinkFrame, link_frame
from optnet.phys import PHYS
from optnet.spec.models import EndpointDesc

__all__ = [
    "ARG_BITS",
    "COMPONENTS",
    "CREDIT_CYCLES",
    "DIRECT_HUB_CYCLES",
    "DIRECT_LENGTH_BITS",
    "DIRECT_LINK_CYCLES",
    "DIRECT_SWITCH_CYCLES",
    "ENDPOINT_CREDIT_CYCLES",
    "HUB_CYCLES",
    "LINK_LAYER_CYCLES",
    "MIN_TAG_BITS",
    "Breakdown",
    "CreditCheck",
    "DirectParams",
    "LinkParams",
    "ModelParams",
    "arg_bits",
    "direct_params",
    "endpoint_credits",
    "ends",
    "hop",
    "hop_times",
    "is_direct",
    "model_params",
    "sized_buffer",
]

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

#: Network clock cycles of the direct switch (:class:`optnet.hw.direct.DirectSwitch`) each
#: way: from a message's first beat on its ``s_axis`` to that beat's data word on a port's
#: ``tx`` (an eager message: the EAGER word goes the cycle before), and from a data word on a
#: port's ``rx`` to its beat on ``m_axis``. Measured in simulation through a node's
#: :class:`~optnet.hw.top.NodeTop` (tests/test_hw_direct_node.py).
DIRECT_SWITCH_CYCLES = 2

#: Network clock cycles the two ends of a direct link add
#: (:class:`optnet.hw.direct.DirectLink`: the clock crossings into and out of the PHY's
#: domain, the gearbox at both ends), besides the PHY words the beat waits for (counted
#: apart as serialisation). Measured as :data:`DIRECT_SWITCH_CYCLES`, with the PHY clock at
#: the network clock.
DIRECT_LINK_CYCLES = 4

#: Cycles between an endpoint's stream and the direct switch, each way: none, the
#: multiplexer of the endpoints is combinational.
DIRECT_HUB_CYCLES = 0

#: Bits of a direct switch message's length in beats: messages of 1 to 65,535 beats.
DIRECT_LENGTH_BITS = 16

#: The components of a latency, in the order reports list them.
COMPONENTS = ("hub", "router", "link_layer", "phy", "serialisation", "cable")

#: Least bits of the header's free argument (credit grants, the endpoints' reset handshake).
ARG_BITS = 16

#: Least bits of a SYNC's tag in the endpoints' reset handshake (:mod:`optnet.hw.endpoint`).
#: Fewer tag bits would let a stale ACK match after only a few resets in one round trip.
MIN_TAG_BITS = 3

_CRC_BITS = {"crc32": 32, "crc16": 16, "none": 0}

#: Network clock cycles between a flit leaving a router's input buffer and its slot's
#: credit reaching the link layer that reports it (the slot is freed a cycle after the
#: flit's last read, :class:`optnet.hw.router.InputBuffer`), and between a credit counted
#: by the receiving link layer and its pulse at the sending router.
CREDIT_CYCLES = 2

#: The link layers' go-back timer, network cycles, where the link is fast enough for it
#: (:meth:`ModelParams.go_back_timeout`).
GO_BACK_TIMEOUT = 1024

#: Replay-buffer entries beyond the round trip and three frames: the clock crossings and
#: pipelines at both ends.
_WINDOW_SLACK = 16


def _clog2(value: int) -> int:
    # as optnet.routing.tables.clog2, which this module is below
    return max(1, (value - 1).bit_length())


def is_direct(cluster: Cluster) -> bool:
    """Whether ``cluster`` is built with OPTWEB's direct switch rather than routers and link
    layers: ``flow_control: none`` and every pair of its nodes joined by exactly one link."""
    if cluster.desc.network.flow_control != "none":
        return False
    n = len(cluster.nodes)
    if n < 2 or len(cluster.links) != n * (n - 1) // 2:
        return False
    pairs = {frozenset((link.a.node, link.b.node)) for link in cluster.links}
    return len(pairs) == len(cluster.links) and all(len(pair) == 2 for pair in pairs)


@dataclass(frozen=True)
class DirectParams:
    """The sizes of a direct cluster's switches, as the plan builds them
    (:class:`optnet.plan.configs.DirectConfig`) and the models count them.

    Attributes
    ----------
    width : int
        Data bits of a switch word: the widest endpoint's beat (every endpoint's beat is
        one word), at least a control word (:attr:`control_bits`).
    threshold, buffer : int
        Eager threshold and receive buffer per peer, in words (``network.direct``, rounded
        down to whole words; the buffer at least one word).
    endpoints : int
        Endpoints per node.
    """

    width: int
    threshold: int
    buffer: int
    endpoints: int

    @property
    def arg_bits(self) -> int:
        """Bits of a control word's argument: a message length or a credit grant."""
        return max(DIRECT_LENGTH_BITS, self.buffer.bit_length())

    @property
    def ep_bits(self) -> int:
        """Bits of the endpoint a message is for (one with a single endpoint)."""
        return _clog2(self.endpoints)

    @property
    def control_bits(self) -> int:
        """Bits of a control word's body: argument, opcode, endpoint."""
        return self.arg_bits + 2 + self.ep_bits

    def data_words(self, phy_bits: int) -> int:
        """PHY words of ``phy_bits`` a data word takes on the link."""
        return -(-self.width // phy_bits)

    def control_words(self, phy_bits: int) -> int:
        """PHY words of ``phy_bits`` a control word takes: the escape word, then the body
        behind a marker bit (:class:`optnet.hw.direct.DirectLink`)."""
        return 1 + -(-(self.control_bits + 1) // phy_bits)


def direct_params(cluster: Cluster) -> DirectParams | None:
    """The direct switch's sizes for ``cluster``, or None if it is not direct
    (:func:`is_direct`)."""
    if not is_direct(cluster):
        return None
    desc = cluster.desc
    net = desc.network
    eps = desc.endpoints
    endpoints = max(len(eps), 1)
    widest = max((ep.width for ep in eps), default=net.flit_width)
    bits = int(net.direct.buffer.value)

    def control_bits(width: int) -> int:
        return DirectParams(width, 0, max(1, bits // width), endpoints).control_bits

    # A word must hold a control word, whose argument grows with the buffer in words,
    # which shrinks as the word widens: the narrowest word that holds one.
    width = widest
    while control_bits(width) > width:
        width += 1
    buffer = max(1, bits // width)
    threshold = min(int(net.direct.threshold.value) // width, buffer,
                    (1 << DIRECT_LENGTH_BITS) - 1)
    return DirectParams(width, threshold, buffer, endpoints)


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
        Flit width; on a direct cluster, the data bits of a switch word (a beat).
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
    direct : DirectParams or None
        A direct cluster's switch (:func:`direct_params`); None: routers and link layers.
    phy_bits : Mapping[int, int]
        A direct cluster's PHY user word width per link index.
    node_rate : Fraction or None
        Bit/s a node's endpoints send at most, all together, and receive: on a direct
        cluster a switch beat a network cycle (its switch takes one message at a time); None
        where the model does not limit it (a router's local port is not modelled).
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
    direct: DirectParams | None = None
    phy_bits: Mapping[int, int] = field(default_factory=dict)
    node_rate: Fraction | None = None
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

    def one_way(self, link: Link) -> Fraction:
        """Seconds a unit spends between the two link layers of ``link``: the PHY pair and
        the cable."""
        lp = self.link(link)
        return lp.latency + lp.length_m * self.cable_delay_per_m

    def replay_window(self, link: Link) -> int:
        """Flits the replay buffer of ``link`` must hold so that acknowledgements return
        before it fills at full rate: the round trip in units (PHY and cable both ways),
        three frames (the receiver holds one until the next header checks it, the far end
        may be sending one before its header can carry the acknowledgement, and one is
        being read out) and the pipelines' slack; at least ``window``."""
        round_trip = math.ceil(2 * self.one_way(link) / self.unit_time(link))
        probe = link_frame(self.flit_bits, self.vcs, self.buffer_depth, self.window,
                           self.crc_bits).frame
        full = probe.max_flits + probe.header_units
        return max(self.window, round_trip + 3 * full + _WINDOW_SLACK)

    def go_back_timeout(self, link: Link) -> int:
        """Network cycles the link layer of ``link`` waits for its acknowledgement to move
        before it goes back and resends (its timer restarts at each acknowledgement while
        the replay buffer holds flits).

        The buffer also queues flits the link has not sent yet, so on a link slower than
        the network clock the first acknowledgement after the buffer fills comes a whole
        :meth:`replay_window` of units later, and the next ones a frame apart: twice the
        window's time on the link, and never less than :data:`GO_BACK_TIMEOUT`. (On the
        ULX3S ring's 2 x 160 Mb/s links, 6.25 cycles a unit, a fixed 1,024 cycles
        expired while both directions streamed, and each go-back resent frames the far end
        had taken: 58 % of the links' rate.)"""
        per_unit = self.unit_time(link) * self.clock
        return max(GO_BACK_TIMEOUT, math.ceil(2 * self.replay_window(link) * per_unit))

    def slow_link(self, link: Link) -> bool:
        """``link`` carries at most half a flit a network cycle: a packet streaming in over
        it holds the local output it is ejected by for at least twice its length, so it
        takes that output only whole while the output is in use
        (:attr:`~optnet.plan.configs.RouterConfig.whole_inputs`). Measured at full uniform
        load: CusComNet's links (0.44 flits a cycle) gain 6 % of accepted throughput by
        the rule, PlasticNet+'s (0.67) lose 8 %, its 65-flit packets waiting whole while
        the packets behind them wait too."""
        return self.flit_time(link) * self.clock >= 2

    def credit_loop(self, link: Link) -> Fraction:
        """Seconds from a router spending a credit on its output to ``link`` until that
        credit is back, with both directions of the link streaming full frames (the
        longest the hardware takes; docs/hardware.md, "Link-level credit").

        The flit goes through the sending link layer, the PHY pair and the cable, and
        waits in the receiver until the next header checks its frame: at most a full frame
        and that header (``B + h`` units, the frame's first flit). The next router takes it
        on (its pipeline) and frees its slot a cycle after it leaves
        (:data:`CREDIT_CYCLES`); the count of freed slots rides the next header the
        receiving end sends, which waits for the frame it is sending to end (``B + h``
        units) and then takes its own ``h``; it goes back through both link layers, the PHY
        pair and the cable, and the far link layer hands the credit to its router.
        """
        frame = self.link_frame(link).frame
        units = 2 * frame.max_flits + 3 * frame.header_units
        cycles = 2 * self.link_layer_cycles + self.router_cycles + CREDIT_CYCLES
        return 2 * self.one_way(link) + self.cycles(cycles) + units * self.unit_time(link)

    def credit_depth(self, link: Link) -> int:
        """Flits a VC's input buffer behind ``link`` must hold so that the VC alone can
        stream at the link's rate: those the link carries during one credit loop
        (:meth:`credit_loop`)."""
        return math.ceil(self.credit_loop(link) / self.flit_time(link))

    def vc_share(self, link: Link, depth: int | None = None) -> Fraction:
        """Share of ``link``'s flit rate one VC reaches with ``depth`` flits of buffer
        (default :attr:`buffer_depth`): a buffer's worth per credit loop, at most all."""
        depth = self.buffer_depth if depth is None else depth
        return min(Fraction(1), Fraction(depth, self.credit_depth(link)))

    def link_frame(self, link: Link) -> LinkFrame:
        """The frame and replay buffer of ``link``'s link layers, as the plan sizes them."""
        key = _link_kind(link)
        if key not in self._frames:
            self._frames[key] = link_frame(self.flit_bits, self.vcs, self.buffer_depth,
                                           self.replay_window(link), self.crc_bits)
        return self._frames[key]

    def flit_time(self, link: Link) -> Fraction:
        """Seconds per flit streaming over ``link``: full frames, ``B`` flits per ``B + h``
        units. On a direct cluster, per beat: its data words, and at least a network clock
        cycle (the switch sends a word a cycle)."""
        if self.direct is not None:
            words = self.direct.data_words(self.phy_bits[link.index])
            return max(words * self.word_time(link), 1 / self.clock)
        frame = self.link_frame(link).frame
        return self.unit_time(link) * Fraction(frame.max_flits + frame.header_units,
                                               frame.max_flits)

    def serialisation(self, link: Link) -> Fraction:
        """Seconds a lone flit waits on ``link`` at zero load for its units: its frame's
        header, itself, and the next header, which checks it. On a direct cluster, a lone
        beat waits for its message's EAGER control word and its own data words."""
        if self.direct is not None:
            bits = self.phy_bits[link.index]
            words = self.direct.control_words(bits) + self.direct.data_words(bits)
            return words * self.word_time(link)
        return (2 * self.link_frame(link).frame.header_units + 1) * self.unit_time(link)

    def word_time(self, link: Link) -> Fraction:
        """Seconds per PHY user word on ``link`` of a direct cluster, at its payload rate."""
        return Fraction(self.phy_bits[link.index]) / self.link(link).payload_rate

    def stream_rate(self, link: Link) -> Fraction:
        """User payload bit/s a long transfer gets over ``link``: the payload rate for
        routers and link layers (whose framing the collectives do not count, as the papers
        compared with do not); on a direct cluster, a switch word of user data per
        :meth:`flit_time`."""
        if self.direct is not None:
            return self.direct.width / self.flit_time(link)
        return self.link(link).payload_rate

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
    direct = direct_params(cluster)
    phy_bits = {}
    if direct is not None:
        widths: dict[tuple[str, int, str], int] = {}
        for link in cluster.links:
            key = (link.phy, link.lanes, cluster.node(link.a.node).board.family)
            if key not in widths:
                try:
                    widths[key] = user_width_for(*key)
                except ValueError:      # a core the family lacks: the plan's E301
                    widths[key] = user_width_for(link.phy, link.lanes)
            phy_bits[link.index] = widths[key]
    phys = {}
    for name in PHYS:
        given = model.phy.get(name)
        # None: the PHY table's latency at each link's line rate
        latency = given.latency.value if given and given.latency else None
        user = given.user_rate.value if given and given.user_rate else None
        hop_ = given.hop.value if given and given.hop else None
        phys[name] = (latency, user, hop_)
    given = net.router.buffer
    if direct is None:
        cycles = (net.router.pipeline + block, LINK_LAYER_CYCLES, HUB_CYCLES)
    else:
        cycles = (DIRECT_SWITCH_CYCLES, DIRECT_LINK_CYCLES, DIRECT_HUB_CYCLES)
    params = ModelParams(
        clock=net.clock.value,
        router_cycles=model.router_cycles or cycles[0],
        link_layer_cycles=(model.link_layer_cycles if model.link_layer_cycles is not None
                           else cycles[1]),
        hub_cycles=model.hub_cycles if model.hub_cycles is not None else cycles[2],
        cable_delay_per_m=model.cable_delay.value,
        flit_bits=net.flit_width if direct is None else direct.width,
        header_bits=header,
        vcs=net.vcs,
        buffer_depth=int((given or net.max_packet).value),
        window=net.reliability.window,
        crc_bits=_CRC_BITS[net.reliability.crc],
        packet_flits=int(net.max_packet.value),
        startup=model.startup.value,
        error_rate=model.error_rate,
        phys=phys,
        direct=direct,
        phy_bits=phy_bits,
        node_rate=None if direct is None else direct.width * net.clock.value,
    )
    if given is not None or direct is not None or not cluster.links:
        return params
    # The frame's credit counters widen with the buffer, which can lengthen the header and
    # so the loop: size again until the depth holds (twice at most in practice).
    for _ in range(4):
        depth = max(params.buffer_depth, sized_buffer(params, cluster.links))
        if depth == params.buffer_depth:
            break
        params = dataclasses.replace(params, buffer_depth=depth)
    return params


def sized_buffer(params: ModelParams, links: Iterable[Link]) -> int:
    """The router input buffer per VC that optnet gives a network whose file sets none: the
    deepest :meth:`ModelParams.credit_depth` of ``links``, and at least a packet
    (:attr:`ModelParams.packet_flits`), rounded up to a power of two (block RAM comes in
    power-of-two depths, and the buffers' queue pointers step through such depths as
    shift registers). Every VC of every link can then stream at its link's rate."""
    need = params.packet_flits
    seen = set()
    for link in links:
        key = _link_kind(link)
        if key not in seen:
            seen.add(key)
            need = max(need, params.credit_depth(link))
    return 1 << (need - 1).bit_length()


def _link_kind(link: Link) -> tuple:
    # What the models' figures of a link depend on: thousands of links, a handful of kinds.
    return (link.phy, link.lanes, link.line_rate.value,
            link.length.value if link.length is not None else None)


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
        key = _link_kind(link)
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
