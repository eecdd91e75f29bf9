"""The parameters of the generated hardware, as the plan decides them.

Each class here configures one kind of hardware component of :mod:`optnet.hw`:
:class:`FlitFormat` the flit and header layouts every component shares,
:class:`RouterConfig` a :class:`~optnet.hw.router.Router`, :class:`LinkConfig` a
:class:`~optnet.hw.link.LinkLayer`, :class:`EndpointConfig` an
:class:`~optnet.hw.endpoint.Endpoint`; on a direct node (a fully connected cluster with
``flow_control: none``), :class:`DirectConfig` its
:class:`~optnet.hw.direct.DirectSwitch` and :class:`DirectLinkConfig` each
:class:`~optnet.hw.direct.DirectLink`. :func:`optnet.plan.plan` builds them; the lowering
only reads them. They are frozen, comparable and hashable, so that nodes of one hardware
role share them.

Flits and packets
-----------------
A packet is a head flit followed by zero or more body flits; the last flit has ``tail`` set
(a one-flit packet has both ``head`` and ``tail``). The head flit carries only the header,
in the low bits of ``data``; payload travels in body flits, so a packet of ``n`` payload
words is ``n + 1`` flits. Keeping the payload out of the head flit lets every component
find the header at a fixed place and keeps the AXI4-Stream side a plain word stream.

The ``vc`` field is the virtual channel the flit travels on over the *next* link; routers
rewrite it from their tables, link layers carry it and pick the receiving buffer with it.

A cascade broadcast (``routing.broadcast: cascade``) carries its source's sequence number in
the low :data:`CASCADE_SEQ_BITS` bits of the header's ``arg``, which a data packet does not
otherwise use, and the node that sent the copy as its multicast group ``dst``
(:class:`CascadeConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from amaranth.lib import data

from optnet.frame import FrameFormat, LinkFrame, link_frame
from optnet.model import MIN_TAG_BITS
from optnet.routing.tables import clog2

__all__ = ["CASCADE_SEQ_BITS", "KIND_CREDIT", "KIND_DATA", "CascadeConfig", "DirectConfig",
           "DirectLinkConfig", "EndpointConfig", "FlitFormat", "LinkConfig", "RouterConfig",
           "clog2", "table_layout"]


#: Header ``kind`` of a packet that carries user data.
KIND_DATA = 0
#: Header ``kind`` of a managed endpoint's end-to-end credit return (``arg`` = credits).
KIND_CREDIT = 1

#: Bits of a cascade broadcast's sequence number, the low bits of its header's ``arg``. With
#: one broadcast per source outstanding, the copies a node can still receive of a source's
#: broadcasts are of the one it stored last, the one before (late copies) and the one after
#: (:mod:`optnet.hw.cascade`): three values, told apart modulo 4.
CASCADE_SEQ_BITS = 2


@dataclass(frozen=True)
class FlitFormat:
    """Widths that define the flit and header layouts of one cluster.

    Every node of a cluster uses the same format, so a flit means the same thing on
    both ends of every link.

    Attributes
    ----------
    width : int
        Flit data bits (the cluster's ``network.flit``).
    vcs : int
        Virtual channels per link (VC classes x priority levels).
    id_bits : int
        Bits of a node id.
    ep_bits : int
        Bits of an endpoint index within a node.
    prio_bits : int
        Bits of the priority class (0 = lowest).
    arg_bits : int
        Bits of the header's free argument (credit count, user id).
    """

    width: int
    vcs: int
    id_bits: int
    ep_bits: int = 1
    prio_bits: int = 1
    arg_bits: int = 16

    @property
    def vc_bits(self) -> int:
        return clog2(self.vcs)

    @property
    def flit(self) -> data.StructLayout:
        """Layout of a flit on a router or link port."""
        return data.StructLayout({"data": self.width, "head": 1, "tail": 1,
                                  "vc": self.vc_bits})

    @property
    def header(self) -> data.StructLayout:
        """Layout of the header in the low bits of a head flit's ``data``.

        ``dst`` is the destination node id, or for a multicast (``mcast`` = 1) the
        group, which is the id of the source node. ``kind`` is :data:`KIND_DATA` or
        :data:`KIND_CREDIT`.
        """
        return data.StructLayout({
            "dst": self.id_bits, "src": self.id_bits, "mcast": 1,
            "dst_ep": self.ep_bits, "src_ep": self.ep_bits, "kind": 1,
            "prio": self.prio_bits, "arg": self.arg_bits,
        })

    @property
    def header_bits(self) -> int:
        # The sum of the fields, without building the layout: a plan checks it per router.
        return 2 * self.id_bits + 1 + 2 * self.ep_bits + 1 + self.prio_bits + self.arg_bits

    def pack_header(self, *, dst: int, src: int, mcast: int = 0, dst_ep: int = 0,
                    src_ep: int = 0, kind: int = KIND_DATA, prio: int = 0,
                    arg: int = 0) -> int:
        """The header as an integer, for reference models and test benches."""
        fields = {"dst": dst, "src": src, "mcast": mcast, "dst_ep": dst_ep, "src_ep": src_ep,
                  "kind": kind, "prio": prio, "arg": arg}
        word = 0
        for name, field in self.header:
            value = fields[name]
            if not 0 <= value < 1 << field.width:
                raise ValueError(f"header field {name}={value} does not fit {field.width} bits")
            word |= value << field.offset
        return word

    def unpack_header(self, word: int) -> dict[str, int]:
        """Inverse of :meth:`pack_header`."""
        return {name: word >> f.offset & ((1 << f.width) - 1) for name, f in self.header}

    def pack_flit(self, *, data: int, head: int, tail: int, vc: int) -> int:
        layout = self.flit
        return (data << layout["data"].offset | head << layout["head"].offset
                | tail << layout["tail"].offset | vc << layout["vc"].offset)

    def unpack_flit(self, word: int) -> dict[str, int]:
        return {name: word >> f.offset & ((1 << f.width) - 1) for name, f in self.flit}


@dataclass(frozen=True)
class RouterConfig:
    """Parameters of one router.

    Attributes
    ----------
    fmt : FlitFormat
    ports : int
        Ports, port 0 being the local (endpoint) port.
    depth : int
        Input buffer depth per VC, in flits.
    credits : tuple of int
        Buffer depth per VC of the receiver behind each output port (initial credits).
    unicast : tuple of int
        Table words indexed by destination id: ``valid << (pb + vb) | vc << pb | port``
        with ``pb = clog2(ports)``, ``vb = fmt.vc_bits``.
    multicast : tuple of int
        Table words indexed by group id: ``vcs << ports | mask``, the VC of port ``p`` at
        bits ``[p*vb, (p+1)*vb)`` of ``vcs``. Empty, or all zero: no multicast logic.
    allocator : str
        ``round_robin`` (separable, input first) or ``islip`` (one iteration).
    priorities : int
        Priority levels honoured by switch allocation.
    block_tables : bool
        Tables in block RAM with a synchronous read, a cycle more per hop (see
        :mod:`optnet.hw.router`).
    multicast_credits : int or None
        Credits a multicast head needs on every one of its output VCs before it takes them:
        with packets at most one flit longer, no branch holds its VC while it waits for
        another branch's credit (see :mod:`optnet.hw.router`). None: the smallest of
        ``credits``.
    block_buffers : bool
        Flit storage of the input buffers in block RAM rather than wherever synthesis puts
        it (LUT RAM when shallow). Same behaviour and timing (the read is synchronous
        either way). On Xilinx 7-series at 128-bit flits and 32 words per input it trades
        88 LUTs of LUT RAM per input for two RAMB36, about a sixth of the router's LUTs;
        with more than four ports, two more per input hold a copy for the local output
        (:class:`~optnet.hw.router.InputBuffer`'s ``local``), which then ORs its inputs
        instead of multiplexing them (a LUT per bit less).
    node_id : int
        With ``block_tables``, the id :attr:`optnet.hw.router.Router.node_id` gives (the
        last word of ``table0``); unused otherwise.
    granted : tuple of int
        Ports whose output starts with no credit, to be granted its ``credits`` by pulses
        on ``cred_in`` (a link layer's, :class:`~optnet.hw.link.LinkLayer`, which grants
        what the far end's buffer has free after a restart); the others start with all.
    whole_inputs : tuple of int
        Link inputs whose packets take the local output only once their tail is in the
        input buffer, unless that output has carried nothing for ``quiet`` cycles (a packet
        streaming in over a slow link would hold it for its whole arrival); the other inputs
        cut through. ``depth`` must hold the longest packet.
    quiet : int
        See ``whole_inputs``.
    """

    fmt: FlitFormat
    ports: int
    depth: int
    credits: tuple[int, ...]
    unicast: tuple[int, ...]
    multicast: tuple[int, ...]
    allocator: str = "round_robin"
    priorities: int = 1
    block_tables: bool = False
    multicast_credits: int | None = None
    block_buffers: bool = False
    node_id: int = 0
    granted: tuple[int, ...] = ()
    whole_inputs: tuple[int, ...] = ()
    quiet: int = 0

    def __post_init__(self):
        if self.whole_inputs and self.quiet < 1:
            raise ValueError("a router whose inputs wait for whole packets needs quiet >= 1")
        if len(self.credits) != self.ports:
            raise ValueError(f"router has {self.ports} ports but {len(self.credits)} credits")
        if self.multicast_credits is None:
            object.__setattr__(self, "multicast_credits", min(self.credits))
        if not 1 <= self.multicast_credits <= min(self.credits):
            raise ValueError(f"a multicast cannot wait for {self.multicast_credits} credits "
                             f"with {min(self.credits)} flits of buffer behind an output")
        if self.allocator not in ("round_robin", "islip"):
            raise ValueError(f"unknown allocator {self.allocator!r}")
        if self.fmt.header_bits > self.fmt.width:
            raise ValueError(f"a {self.fmt.header_bits}-bit header does not fit a "
                             f"{self.fmt.width}-bit flit")

    @property
    def multicasts(self) -> bool:
        """Some multicast group has a branch: the router needs its multicast logic."""
        return any(word & ((1 << self.ports) - 1) for word in self.multicast)

    @property
    def port_bits(self) -> int:
        return clog2(self.ports)

    @property
    def table_depth(self) -> int:
        """Entries per kind (unicast, multicast): one per id."""
        return 1 << self.fmt.id_bits

    @property
    def table_width(self) -> int:
        """Bits per word of each table memory: an entry, and with ``block_tables`` at least
        the node id."""
        size = table_layout(self).size
        return max(size, self.fmt.id_bits) if self.block_tables else size

    @property
    def table_words(self) -> int:
        """Words of each table memory: both kinds, and with ``block_tables`` the id word,
        rounded up to whole 512-word blocks."""
        if not self.block_tables:
            return 2 * self.table_depth
        return -(-(2 * self.table_depth + 1) // 512) * 512


def table_layout(cfg: RouterConfig) -> data.StructLayout:
    """A table entry: the output ports (``mask``), the VC on each (``vcs``, ``vb`` bits
    per port) and whether there are several (``multi``, kept so the lookup needs no
    popcount)."""
    P, vb = cfg.ports, cfg.fmt.vc_bits
    return data.StructLayout({"multi": 1, "route": data.StructLayout({"mask": P, "vcs": P * vb})})


@dataclass(frozen=True)
class LinkConfig:
    """Parameters of one link layer.

    Attributes
    ----------
    fmt : FlitFormat
    phy_width : int
        PHY user word width.
    phy_domain : str
        The PHY's user clock domain.
    depth : int
        Receive buffer depth per VC of the router behind this link (sets the width of
        the credit counters).
    window : int
        Replay buffer entries (flits in flight); rounded up to a power of two, and at least
        two frames.
    crc_bits : int
        32, 16 or 0 (no checks: a trusted PHY; nothing is retransmitted).
    side_ram : bool
        Keep the side bits of received frames in a block RAM written a frame at a time and
        read a flit at a time (ports of different widths), instead of choosing them by a
        multiplexer: for devices whose block RAM has such ports and whose tools infer them
        (:attr:`optnet.devices.families.Family.wide_ram`).
    timeout : int
        Cycles without progress on the oldest unacknowledged flit before resending it.
    keepalive : int
        Cycles of silence after which a header repeats the acknowledgement and credits.
    """

    fmt: FlitFormat
    phy_width: int
    phy_domain: str
    depth: int
    window: int = 256
    crc_bits: int = 32
    side_ram: bool = False
    timeout: int = 1024
    keepalive: int = 64

    @cached_property
    def _sized(self) -> LinkFrame:
        return link_frame(self.fmt.width, self.fmt.vcs, self.depth, self.window, self.crc_bits)

    @property
    def window_size(self) -> int:
        return self._sized.entries

    @property
    def seq_bits(self) -> int:
        return self._sized.frame.seq_bits

    @property
    def credit_bits(self) -> int:
        return self._sized.frame.credit_bits

    @property
    def frame(self) -> FrameFormat:
        return self._sized.frame

    @property
    def words_per_unit(self) -> int:
        """PHY words per unit (a unit wider than the PHY word is padded to whole words)."""
        return -(-self.fmt.width // self.phy_width)


@dataclass(frozen=True)
class EndpointConfig:
    """Parameters of one endpoint on one node.

    Attributes
    ----------
    fmt : FlitFormat
    node_id : int
    index : int
        Endpoint number (the header's ``dst_ep``/``src_ep``).
    width : int
        AXI4-Stream ``tdata`` bits; at most the flit width.
    max_packet : int
        Flits per network packet, header included.
    broadcast_flits : int or None
        Flits per broadcast packet, header included, at most ``max_packet`` (None: that):
        the deadlock proof's :func:`~optnet.routing.proof.broadcast_flits`, so a router can
        give a multicast credit for its whole packet on every branch.
    managed : bool
    buffer, credit, offset, init_budget : int
        Receive buffer in packets and the credit parameters (see :mod:`optnet.hw.endpoint`).
    priority : int
    nodes : tuple of int or None
        Ids of the cluster's nodes (the same on every node), to which a managed endpoint
        sends a SYNC after ``rst``; None: every id of ``fmt.id_bits`` bits.
    length_bits : int
        0, or on a direct node the bits of ``s_axis``'s ``tuser``, the message length in
        beats (:func:`~optnet.hw.endpoint.axis_tx_layout`); a direct node has no
        :class:`~optnet.hw.endpoint.Endpoint`, and ``max_packet``, ``broadcast_flits``,
        ``managed`` and the credit parameters do not apply.
    """

    fmt: FlitFormat
    node_id: int
    index: int
    width: int
    max_packet: int
    broadcast_flits: int | None = None
    managed: bool = True
    buffer: int = 64
    credit: int = 16
    offset: int = 0
    init_budget: int = 1
    priority: int = 0
    nodes: tuple[int, ...] | None = None
    length_bits: int = 0

    def __post_init__(self):
        if self.width > self.fmt.width:
            raise ValueError(f"endpoint {self.index} is {self.width} bits wide, wider than the "
                             f"{self.fmt.width}-bit flit")
        if self.broadcast_flits is None:
            object.__setattr__(self, "broadcast_flits", self.max_packet)
        if not 2 <= self.broadcast_flits <= self.max_packet:
            raise ValueError("a packet needs room for a header and one beat, and a broadcast "
                             "packet is at most max_packet flits")
        if self.managed and not 0 <= self.offset < self.credit:
            raise ValueError(f"endpoint {self.index}: offset {self.offset} must be below "
                             f"credit {self.credit}")
        if self.nodes is not None:
            object.__setattr__(self, "nodes", tuple(sorted(set(self.nodes))))
            if not all(0 <= n < 1 << self.fmt.id_bits for n in self.nodes):
                raise ValueError(f"endpoint {self.index}: node ids {self.nodes} do not fit "
                                 f"{self.fmt.id_bits} bits")
        if self.managed and (self.credit >= 1 << self.fmt.arg_bits - 1
                             or self.tag_bits < MIN_TAG_BITS):
            raise ValueError(f"endpoint {self.index}: a credit of {self.credit} leaves too few "
                             f"bits of the {self.fmt.arg_bits}-bit header argument for the "
                             f"reset handshake")

    @property
    def beats(self) -> int:
        """Receive buffer depth in beats: the packets it must hold, rounded up to a power of
        two when that costs at most an eighth more. The buffer's RAM is a power of two deep
        in any case (the endpoint's block-RAM FIFO), and at a power of two its FIFO needs no level
        counter (Yosys, xc7: 15,360 beats of 136 bits take 32 LUTs of control and 68 RAMB36,
        16,384 beats 17 LUTs and 68 RAMB36)."""
        need = (self.max_packet - 1) * (self.buffer if self.managed else 2)
        power = 1 << (need - 1).bit_length()
        return power if 8 * power <= 9 * need else need

    @property
    def budget_bits(self) -> int:
        """Bits of a budget counter: ``init_budget * credit + offset`` and ``-offset`` (a
        budget after a reset, see :class:`optnet.hw.endpoint.Control`) fit it as signed
        numbers."""
        return max(self.init_budget * self.credit + self.credit, 2).bit_length() + 1

    @property
    def held_bits(self) -> int:
        """Bits of the count of one source's packets in the receive buffer, at most
        ``init_budget * credit + offset`` (the ``held`` of an ACK)."""
        return self.budget_bits - 1

    @property
    def tag_bits(self) -> int:
        """Bits of a SYNC's tag: what the header's ``arg`` has left beside ``held`` and the
        three flag bits, at most 8."""
        return min(8, self.fmt.arg_bits - 3 - self.held_bits)


@dataclass(frozen=True)
class DirectConfig:
    """Parameters of one direct switch (:class:`~optnet.hw.direct.DirectSwitch`).

    Attributes
    ----------
    width : int
        User data bits per beat (a switch word's data).
    peers : int
        Ports, one per peer; port ``i`` connects to the ``i``-th peer (in a node, the
        links in port order, then the node itself through a loopback).
    threshold : int
        Messages of at most this many beats go eager, longer ones rendezvous (0: all
        rendezvous).
    buffer : int
        Receive buffer per peer, in beats; at least ``threshold`` (an eager message must fit).
    phy_width : int
        Bits of the switch's words on its ports: ``width + 1`` (a data/control bit above
        the data).
    max_length_bits : int
        Width of the message length in ``tuser``; messages are 1 to
        ``2**max_length_bits - 1`` beats.
    endpoints : int
        Endpoints a message can be for (its ``tid`` on ``s_axis``, carried in its EAGER or
        RTS word, its ``tdest`` on ``m_axis``).
    """

    width: int
    peers: int
    threshold: int
    buffer: int
    phy_width: int
    max_length_bits: int = 16
    endpoints: int = 1

    def __post_init__(self):
        if self.peers < 1:
            raise ValueError(f"a direct switch needs at least one peer, not {self.peers}")
        if self.width < 1:
            raise ValueError(f"the data width must be at least 1 bit, not {self.width}")
        if self.max_length_bits < 1:
            raise ValueError("max_length_bits must be at least 1")
        if self.endpoints < 1:
            raise ValueError(f"a direct switch needs at least one endpoint, not "
                             f"{self.endpoints}")
        if self.threshold < 0:
            raise ValueError(f"the eager threshold cannot be negative ({self.threshold})")
        if self.buffer < 1:
            raise ValueError(f"the receive buffer must hold at least one beat, not {self.buffer}")
        if self.buffer < self.threshold:
            raise ValueError(f"the receive buffer ({self.buffer} beats) is smaller than the "
                             f"eager threshold ({self.threshold} beats); an eager message "
                             f"must fit in it")
        if self.threshold >= 1 << self.max_length_bits:
            raise ValueError(f"the eager threshold {self.threshold} does not fit "
                             f"{self.max_length_bits} length bits")
        if self.phy_width != self.width + 1:
            raise ValueError(f"phy_width must be width + 1 = {self.width + 1} (one data/control "
                             f"bit above the data), not {self.phy_width}")
        if self.width < self.control.size:
            raise ValueError(f"a {self.width}-bit word cannot hold a control word (2-bit opcode, "
                             f"a {self.arg_bits}-bit length or credit and a {self.ep_bits}-bit "
                             f"endpoint); use a wider word or fewer max_length_bits")

    @property
    def peer_bits(self) -> int:
        """Bits of ``tdest``/``tid``: port numbers up to ``peers``, which stands for none."""
        return self.peers.bit_length()

    @property
    def ep_bits(self) -> int:
        """Bits of an endpoint index (one with a single endpoint: the Verilog of a field of
        no bits would be a vector ``[-1:0]``)."""
        return clog2(self.endpoints)

    @property
    def arg_bits(self) -> int:
        """Bits of a control word's argument: a message length or a credit grant."""
        return max(self.max_length_bits, self.buffer.bit_length())

    @property
    def batch(self) -> int:
        """Freed beats a receiver collects before it returns them in one CREDIT word.

        Half the threshold or a quarter of the buffer, whichever is larger, but at most
        ``buffer - threshold + 1`` (the bound that keeps waiting senders live, see
        :mod:`optnet.hw.direct`); so a buffer of at least ``threshold * 3 / 2`` returns
        credit in batches of at least ``threshold / 2``, and ``buffer == threshold`` one by
        one.
        """
        return max(1, min(max(self.threshold // 2, self.buffer // 4),
                          self.buffer - self.threshold + 1))

    @property
    def control(self) -> data.StructLayout:
        """Layout of the low bits of a control word."""
        return data.StructLayout({"arg": self.arg_bits, "op": 2, "ep": self.ep_bits})

    @property
    def s_axis_layout(self) -> data.StructLayout:
        """``tdest`` = port (peer index); ``tuser`` = message length in beats, first beat;
        ``tid`` = endpoint."""
        return data.StructLayout({"tdata": self.width, "tlast": 1, "tdest": self.peer_bits,
                                  "tuser": self.max_length_bits, "tid": self.ep_bits})

    @property
    def m_axis_layout(self) -> data.StructLayout:
        """``tid`` = port the message came in on; ``tdest`` = endpoint."""
        return data.StructLayout({"tdata": self.width, "tlast": 1, "tid": self.peer_bits,
                                  "tdest": self.ep_bits})

    # -- the word format as integers, for models and tests ----------------------------------

    def control_word(self, op: int, arg: int, ep: int = 0) -> int:
        """A control word as an integer."""
        return 1 << self.width | ep << self.arg_bits + 2 | op << self.arg_bits | arg

    def data_word(self, value: int) -> int:
        """A data word as an integer."""
        return value & ((1 << self.width) - 1)

    def decode(self, word: int) -> tuple[int | None, int]:
        """``(op, arg)`` of a control word, ``(None, data)`` of a data word."""
        if not word >> self.width & 1:
            return None, word & ((1 << self.width) - 1)
        return word >> self.arg_bits & 3, word & ((1 << self.arg_bits) - 1)


#: The escape word of direct links, repeated to the PHY word's width: a PHY word that starts
#: a data word is never equal to it unless the data's first bits are (for random data a
#: chance of one in 2 ** the PHY word's width, which then costs one word more).
_ESCAPE = 0x9E37_79B9_7F4A_7C15


@dataclass(frozen=True)
class DirectLinkConfig:
    """Parameters of one direct link (:class:`~optnet.hw.direct.DirectLink`): a direct
    switch port's words in and out of its PHY's user words, across the clock domains.

    Attributes
    ----------
    width : int
        Data bits of a switch word (:attr:`DirectConfig.width`).
    control_bits : int
        Bits of a control word's body (:attr:`DirectConfig.control` ``.size``).
    phy_width : int
        PHY user word width.
    phy_domain : str
        The PHY's user clock domain.
    depth : int
        Entries of each clock-crossing FIFO (switch words).
    """

    width: int
    control_bits: int
    phy_width: int
    phy_domain: str
    depth: int = 8

    def __post_init__(self):
        if not 1 <= self.control_bits <= self.width:
            raise ValueError(f"a {self.control_bits}-bit control word does not fit a "
                             f"{self.width}-bit switch word")

    @property
    def data_words(self) -> int:
        """PHY words of a data word (one more when its first one equals :attr:`escape`)."""
        return -(-self.width // self.phy_width)

    @property
    def control_words(self) -> int:
        """PHY words of a control word: :attr:`escape`, then the body behind a marker bit."""
        return 1 + -(-(self.control_bits + 1) // self.phy_width)

    @property
    def escape(self) -> int:
        """The PHY word that starts a control word or a data word whose first PHY word
        equals it."""
        repeated = 0
        for _ in range(-(-self.phy_width // 64)):
            repeated = repeated << 64 | _ESCAPE
        return repeated & ((1 << self.phy_width) - 1)


@dataclass(frozen=True)
class CascadeConfig:
    """Parameters of a node's cascade unit (:class:`~optnet.hw.cascade.CascadeUnit`), the
    hardware of ``routing.broadcast: cascade``.

    Attributes
    ----------
    fmt : FlitFormat
    endpoints : int
        Endpoints of the node (the hub's inputs the unit sits in front of).
    links : int
        Link ports of the node: the copies of every broadcast it receives (one on each
        link) and sends (one on each).
    packet_flits : int
        Flits of the longest broadcast packet, header included: a buffer slot.
    """

    fmt: FlitFormat
    endpoints: int
    links: int
    packet_flits: int

    def __post_init__(self):
        if self.endpoints < 1 or self.links < 0:
            raise ValueError(f"a cascade unit needs an endpoint and no negative link count, "
                             f"not {self.endpoints} endpoints and {self.links} links")
        if self.packet_flits < 2:
            raise ValueError("a broadcast packet needs room for a header and one beat")
        if self.fmt.arg_bits < CASCADE_SEQ_BITS:
            raise ValueError(f"a {self.fmt.arg_bits}-bit header argument has no room for a "
                             f"{CASCADE_SEQ_BITS}-bit sequence number")

    @property
    def slots(self) -> int:
        """Broadcast buffer slots: one per source id of ``fmt.id_bits`` bits."""
        return 1 << self.fmt.id_bits
