"""Bring-up traffic: a generator and a checker per endpoint, to see a cluster carry data.

The generator (:class:`TrafficGen`) drives an endpoint's ``s_axis``: while ``enable`` is
set it sends packets of ``length`` beats to every other node of the cluster in turn
(:attr:`~optnet.plan.configs.EndpointConfig.nodes`, in id order), ``gap`` idle cycles
apart. The checker (:class:`TrafficCheck`) takes every beat of the endpoint's ``m_axis``
and counts what arrives whole and in order, what skipped or repeated a packet, and the
beats whose data differ from what was sent.

Packets
-------
Packet ``k`` from node ``s`` to node ``d`` (``k`` counted per destination, modulo
``2**16``, or ``2**width`` on an endpoint narrower than 16 bits) is ``length`` beats of
PRBS-31 (x^31 + x^28 + 1), continued from beat to beat, from a state made of ``k`` and the
two ids (:func:`seed`), except the first beat's low 16 bits (all its bits on a narrower
endpoint), which carry ``k``. The checker knows the
source (``tid``) and its own id, so it reads ``k`` from the first beat, remakes the state
and compares every other bit. A packet whose ``k`` is not the one after the last from the
same source counts as out of sequence (lost, repeated or reordered packets), and the
checker follows the new ``k`` (a corrupted ``k`` so shows as two packets out of sequence
and the packet's beats as bad). Nothing else is assumed: any mix of sources may arrive, each
packet whole (an endpoint delivers packets whole).

A generator's packets are at most ``max_packet - 1`` beats (an endpoint cuts longer frames,
which would then fail the check); on a direct node, whose ``tuser`` is the message length,
the first beat carries ``length`` there.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from optnet.hw.endpoint import axis_rx_layout, axis_tx_layout
from optnet.hw.jtag import JtagBridge, user_tap
from optnet.hw.top import LINK_COUNTERS, NodeTop, Parts
from optnet.hw.uart import RegisterBus, RegisterFile, UartBridge, member_name
from optnet.plan import NodePlan
from optnet.plan.configs import EndpointConfig
from optnet.plan.registers import MAGIC, MAP_VERSION, register_map

__all__ = ["PRBS_BITS", "SEQ_BITS", "BringUp", "TrafficCheck", "TrafficGen", "prbs_words",
           "seed"]

#: The PRBS's state bits (PRBS-31: x^31 + x^28 + 1).
PRBS_BITS = 31
_TAPS = (30, 27)
#: Bits of a packet's sequence number.
SEQ_BITS = 16
#: Bits of each node id in the seed (ids are folded above them).
_ID_SEED_BITS = (PRBS_BITS - 1 - SEQ_BITS) // 2


def _step_masks(width: int) -> tuple[list[int], list[int]]:
    """The PRBS advanced ``width`` bits as linear maps: for each of the ``width`` output bits
    and each of the next state's bits, the mask of current state bits whose XOR it is."""
    state = [1 << i for i in range(PRBS_BITS)]
    out = []
    for _ in range(width):
        new = state[_TAPS[0]] ^ state[_TAPS[1]]
        out.append(new)
        state = [new, *state[:-1]]
    return out, state


def _apply(masks: list[int], state) -> Cat:
    # each bit the XOR of the state bits its mask names
    return Cat(Cat(state[i] for i in range(PRBS_BITS) if mask >> i & 1).xor()
               for mask in masks)


def seed(src: int, dst: int, seq: int) -> int:
    """The PRBS state a packet starts from (a reference for the hardware's): bit 0 set (a
    PRBS state is never zero), then the sequence number, the destination's and the source's
    ids."""
    fold = (1 << _ID_SEED_BITS) - 1
    ids = (dst & fold) | (src & fold) << _ID_SEED_BITS
    return 1 | (seq % (1 << SEQ_BITS)) << 1 | ids << (1 + SEQ_BITS)


def prbs_words(state: int, width: int, count: int) -> tuple[list[int], int]:
    """``count`` words of ``width`` bits from PRBS state ``state``, and the state after them
    (the reference model of the hardware's parallel PRBS)."""
    words = []
    for _ in range(count):
        word = 0
        for bit in range(width):
            new = (state >> _TAPS[0] ^ state >> _TAPS[1]) & 1
            word |= new << bit
            state = (state << 1 | new) & ((1 << PRBS_BITS) - 1)
        words.append(word)
    return words, state


def expected_packet(src: int, dst: int, seq: int, width: int, length: int) -> list[int]:
    """The beats' ``tdata`` of packet ``seq`` from ``src`` to ``dst`` (reference model)."""
    low = min(width, SEQ_BITS)
    seq %= 1 << low
    words, _ = prbs_words(seed(src, dst, seq), width, length)
    words[0] = words[0] & ~((1 << low) - 1) | seq
    return words


def _seed_of(src, dst, seq) -> Cat:
    # (each field zero-extended to its place, as seed() lays them out)
    def field(value, bits):
        value = value[:bits]
        return Cat(value, Const(0, bits - len(value)))
    return Cat(Const(1, 1), field(seq, SEQ_BITS), field(dst, _ID_SEED_BITS),
               field(src, _ID_SEED_BITS))


class TrafficGen(wiring.Component):
    """Sends bring-up packets on an endpoint's ``s_axis`` (module docstring).

    Parameters
    ----------
    cfg : EndpointConfig
        The endpoint; its ``nodes`` (every id if None) but this node are the destinations.

    Members
    -------
    node_id : In(id_bits)
        This node's id (a signal, so that the hardware is the same on every node).
    s_axis : Out(stream.Signature(axis_tx_layout(cfg)))
        To the endpoint.
    enable : In(1)
        Send; cleared, the packet under way is finished first.
    length : In(16)
        Beats per packet (0 is taken as 1; more than the endpoint carries in one packet is
        cut to that).
    gap : In(16)
        Idle cycles after each packet.
    sent : Out(32)
        Packets sent.
    """

    def __init__(self, cfg: EndpointConfig):
        self.cfg = cfg
        nodes = cfg.nodes if cfg.nodes is not None else range(1 << cfg.fmt.id_bits)
        self.nodes = sorted(nodes)
        super().__init__({"node_id": In(cfg.fmt.id_bits),
                          "s_axis": Out(stream.Signature(axis_tx_layout(cfg))),
                          "enable": In(1), "length": In(16), "gap": In(16), "sent": Out(32)})

    def limit(self) -> int:
        """The most beats a packet may have: one network packet's (or a message's)."""
        cfg = self.cfg
        return (1 << cfg.length_bits) - 1 if cfg.length_bits else cfg.max_packet - 1

    def elaborate(self, platform):
        m = Module()
        cfg, w = self.cfg, self.cfg.width
        masks, step = _step_masks(w)
        ids = cfg.fmt.id_bits
        peers = len(self.nodes)
        m.submodules.dests = dests = memory.Memory(shape=ids, depth=peers, init=self.nodes)
        m.submodules.seqs = seqs = memory.Memory(shape=SEQ_BITS, depth=peers, init=[])
        turn = Signal(range(peers))
        after = Mux(turn == peers - 1, 0, turn + 1)
        dest_r, seq_r = dests.read_port(domain="comb"), seqs.read_port(domain="comb")
        seq_w = seqs.write_port()
        m.d.comb += [dest_r.addr.eq(turn), seq_r.addr.eq(turn), seq_w.addr.eq(turn)]

        limit = self.limit()
        beats = Signal(16)              # this packet's length, fixed at its start
        left = Signal(16)               # beats still to send after the one shown
        state = Signal(PRBS_BITS)
        idle = Signal(16)
        busy = Signal()
        payload = self.s_axis.payload
        first = left == beats - 1
        low = min(w, SEQ_BITS)
        seed_now = _seed_of(self.node_id, dest_r.data, seq_r.data[:low])
        first_word = _apply(masks, seed_now)
        word = Mux(first, Cat(seq_r.data[:low], first_word[low:]), _apply(masks, state))
        m.d.comb += [payload.tdata.eq(word), payload.tdest.eq(dest_r.data),
                     payload.tlast.eq(left == 0), self.s_axis.valid.eq(busy)]
        if cfg.length_bits:
            m.d.comb += payload.tuser.eq(Mux(first, beats, 0))
        with m.If(~busy):
            with m.If(idle != 0):
                m.d.sync += idle.eq(idle - 1)
            with m.Elif(dest_r.data == self.node_id):
                m.d.sync += turn.eq(after)      # (no packets to itself)
            with m.Elif(self.enable):
                # (a 16-bit length is within a direct node's 16-bit message lengths)
                cut = self.length if limit >= 0xFFFF else Mux(self.length > limit, limit,
                                                              self.length)
                length = Mux(self.length == 0, 1, cut)
                m.d.sync += [busy.eq(1), beats.eq(length), left.eq(length - 1)]
        with m.If(self.s_axis.valid & self.s_axis.ready):
            m.d.sync += state.eq(_apply(step, Mux(first, seed_now, state)))
            with m.If(first):
                m.d.comb += [seq_w.en.eq(1), seq_w.data.eq(seq_r.data + 1)]
            m.d.sync += left.eq(left - 1)
            with m.If(left == 0):
                m.d.sync += [busy.eq(0), idle.eq(self.gap), self.sent.eq(self.sent + 1),
                             turn.eq(after)]
        return m


class TrafficCheck(wiring.Component):
    """Checks the bring-up packets arriving on an endpoint's ``m_axis`` (module docstring);
    takes every beat at once.

    Members
    -------
    node_id : In(id_bits)
        This node's id.
    m_axis : In(stream.Signature(axis_rx_layout(cfg)))
        From the endpoint.
    packets : Out(32)
        Packets received.
    out_of_sequence : Out(32)
        Packets whose sequence number was not the one after the last from their source (the
        first from a source after reset counts if it is not 0).
    bad_beats : Out(32)
        Beats whose data differ from what the generator sends.
    """

    def __init__(self, cfg: EndpointConfig):
        self.cfg = cfg
        super().__init__({"node_id": In(cfg.fmt.id_bits),
                          "m_axis": In(stream.Signature(axis_rx_layout(cfg))),
                          "packets": Out(32), "out_of_sequence": Out(32),
                          "bad_beats": Out(32)})

    def elaborate(self, platform):
        m = Module()
        cfg, w = self.cfg, self.cfg.width
        ids = cfg.fmt.id_bits
        masks, step = _step_masks(w)
        m.submodules.expect = expect = memory.Memory(shape=SEQ_BITS, depth=1 << ids, init=[])
        exp_r, exp_w = expect.read_port(domain="comb"), expect.write_port()
        beat = self.m_axis.payload
        low = min(w, SEQ_BITS)
        first = Signal(init=1)          # the next beat starts a packet
        state = Signal(PRBS_BITS)
        seq = beat.tdata[:low]
        seed_now = _seed_of(beat.tid, self.node_id, seq)
        want = Mux(first, _apply(masks, seed_now), _apply(masks, state))
        # (the first beat's low bits are the sequence number, checked on their own)
        care = Const(((1 << w) - 1) ^ ((1 << low) - 1), w)
        m.d.comb += [self.m_axis.ready.eq(1), exp_r.addr.eq(beat.tid), exp_w.addr.eq(beat.tid),
                     exp_w.data.eq(seq + 1)]
        with m.If(self.m_axis.valid):
            m.d.sync += [first.eq(beat.tlast),
                         state.eq(_apply(step, Mux(first, seed_now, state)))]
            bad = Mux(first, (beat.tdata ^ want) & care, beat.tdata ^ want).any()
            with m.If(bad):
                m.d.sync += self.bad_beats.eq(self.bad_beats + 1)
            with m.If(first):
                m.d.comb += exp_w.en.eq(1)
                with m.If(seq != exp_r.data[:low]):
                    m.d.sync += self.out_of_sequence.eq(self.out_of_sequence + 1)
            with m.If(beat.tlast):
                m.d.sync += self.packets.eq(self.packets + 1)
        return m


class BringUp(wiring.Component):
    """A node's bring-up kit: a :class:`TrafficGen` and a :class:`TrafficCheck` per
    endpoint, the registers of :func:`~optnet.plan.registers.register_map` and the bridges
    a host reads and writes them through: with a ``divisor`` a UART (:mod:`optnet.hw.uart`),
    with a ``tap`` the FPGA's JTAG port (:mod:`optnet.hw.jtag`), or both (the UART's
    accesses first, the JTAG bridge's in the cycles between).

    Parameters
    ----------
    plan : NodePlan
    divisor : int or None
        Network clock cycles per UART bit; None: no UART.
    tap : str or None
        The JTAG user-register primitive (a key of :data:`optnet.hw.jtag.TAP_KINDS`),
        instantiated in the kit as ``jtag_tap``; None: no JTAG access. With neither bridge
        the registers still hold the counters, and the generators run from configuration.

    Members
    -------
    <endpoint>_tx : Out(stream.Signature(axis_tx_layout))
        To the endpoint's ``s_axis``.
    <endpoint>_rx : In(stream.Signature(axis_rx_layout))
        From the endpoint's ``m_axis``.
    node_id : In(id_bits), link_up : In(links), dropped : In(16)
        The network module's.
    link<k>_<counter> : In(16)
        Its link counters (:data:`optnet.hw.top.LINK_COUNTERS`), on a node with a router.
    uart_rx : In(1), uart_tx : Out(1)
        Only with a ``divisor``.
    bus : In(RegisterBus())
        Only without a ``divisor`` or a ``tap``: the registers, for a host in the same design
        (``optnet sim`` reads them here, as a host does over the UART).
    trouble : Out(1)
        Set once the router dropped a packet or a checker counted a packet out of sequence
        or a bad beat (until reset): the board top shows it on an LED.
    activity : Out(1)
        Toggles with every packet a checker takes (the heartbeat LED flickers with it).
    """

    def __init__(self, plan: NodePlan, divisor: int | None, tap: str | None = None):
        self.plan, self.divisor, self.tap = plan, divisor, tap
        self.registers = register_map(plan)
        members = {}
        for name, cfg in zip(plan.endpoint_names, plan.endpoints, strict=True):
            members[f"{name}_tx"] = Out(stream.Signature(axis_tx_layout(cfg)))
            members[f"{name}_rx"] = In(stream.Signature(axis_rx_layout(cfg)))
        members["node_id"] = In(plan.fmt.id_bits)
        members["link_up"] = In(max(len(plan.ports), 1))
        members["dropped"] = In(16)
        self.counters = [f"link{k}_{c}" for k in range(len(plan.ports))
                         for c in (LINK_COUNTERS if plan.direct is None else ())]
        members.update((name, In(16)) for name in self.counters)
        if divisor is not None:
            members.update(uart_rx=In(1, init=1), uart_tx=Out(1, init=1))
        elif tap is None:
            members["bus"] = In(RegisterBus())
        members.update(trouble=Out(1), activity=Out(1))
        super().__init__(members)

    def watch(self, net) -> list:
        """The statements that give the kit what it watches of the network module: its
        ``node_id``, ``link_up``, ``dropped`` and link counters, ``net(name)`` being the
        module's signal ``name``."""
        return [getattr(self, name).eq(net(name))
                for name in ("node_id", "link_up", "dropped", *self.counters)]

    def elaborate(self, platform):
        m = Module()
        plan = self.plan
        m.submodules.registers = regs = RegisterFile(self.registers)
        uart = jtag = None
        if self.divisor is not None:
            m.submodules.uart = uart = UartBridge(self.divisor)
            m.d.comb += [uart.rx.eq(self.uart_rx), self.uart_tx.eq(uart.tx)]
        if self.tap is not None:
            tap = user_tap(m, self.tap)
            m.submodules.jtag = jtag = JtagBridge(tap.update_domain)
            m.d.comb += [jtag.capture.eq(tap.capture), jtag.shift.eq(tap.shift),
                         jtag.update.eq(tap.update), jtag.tdi.eq(tap.tdi), tap.tdo.eq(jtag.tdo)]
        if uart is not None and jtag is not None:
            # The UART's accesses win; the JTAG bridge waits for a cycle without one (busy).
            m.d.comb += jtag.busy.eq(uart.bus.r_en | uart.bus.w_en)
            for field in ("addr", "w_data", "w_en", "r_en"):
                m.d.comb += getattr(regs.bus, field).eq(
                    Mux(jtag.busy, getattr(uart.bus, field), getattr(jtag.bus, field)))
            m.d.comb += [uart.bus.r_data.eq(regs.bus.r_data), jtag.bus.r_data.eq(regs.bus.r_data)]
        elif uart is not None or jtag is not None:
            wiring.connect(m, (uart or jtag).bus, regs.bus)
        else:
            wiring.connect(m, wiring.flipped(self.bus), regs.bus)
        links = len(plan.ports)
        m.d.comb += [regs.magic.eq(MAGIC), regs.version.eq(MAP_VERSION),
                     regs.node_id.eq(self.node_id), regs.endpoints.eq(len(plan.endpoints)),
                     regs.links.eq(links), regs.link_up.eq(self.link_up[:32]),
                     regs.dropped.eq(self.dropped)]
        for k in range(links):
            m.d.comb += getattr(regs, member_name(f"link{k}.up")).eq(self.link_up[k])
        for name in self.counters:
            m.d.comb += getattr(regs, name).eq(getattr(self, name))
        errors = [self.dropped != 0]
        for name, cfg in zip(plan.endpoint_names, plan.endpoints, strict=True):
            gen, check = TrafficGen(cfg), TrafficCheck(cfg)
            m.submodules[f"gen_{name}"], m.submodules[f"check_{name}"] = gen, check
            m.d.comb += [gen.node_id.eq(self.node_id), check.node_id.eq(self.node_id)]
            wiring.connect(m, gen.s_axis, wiring.flipped(getattr(self, f"{name}_tx")))
            wiring.connect(m, wiring.flipped(getattr(self, f"{name}_rx")), check.m_axis)

            def reg(field, _name=name):
                return getattr(regs, member_name(f"{_name}.{field}"))

            m.d.comb += [gen.enable.eq(reg("control")[0]), gen.length.eq(reg("length")),
                         gen.gap.eq(reg("gap")), reg("sent").eq(gen.sent),
                         reg("received").eq(check.packets),
                         reg("out_of_sequence").eq(check.out_of_sequence),
                         reg("bad_beats").eq(check.bad_beats)]
            errors += [check.out_of_sequence != 0, check.bad_beats != 0]
            with m.If(check.m_axis.valid & check.m_axis.payload.tlast):
                m.d.sync += self.activity.eq(~self.activity)
        m.d.comb += self.trouble.eq(Cat(errors).any())
        return m


class SimBringUp(wiring.Component):
    """A node's network module (:class:`~optnet.hw.top.NodeTop`, PHYs as ``phys="sim"``)
    with its bring-up kit (:class:`BringUp`, without a UART) driving the endpoints, as the
    board top has it: what ``optnet sim --traffic bringup`` simulates.

    Members
    -------
    Every member of the network module but the endpoints' streams (the PHY sides, ``link_up``,
    ``dropped``, ``node_id``, the link counters), and the kit's ``bus``, ``trouble`` and
    ``activity``.
    """

    def __init__(self, plan: NodePlan, parts: Parts | None = None):
        self.net = NodeTop(plan, phys="sim", parts=parts)
        self.kit = BringUp(plan, None)
        axis = {f"{name}_{side}" for name in plan.endpoint_names for side in ("s_axis", "m_axis")}
        members = {name: member for name, member in self.net.signature.members.items()
                   if name not in axis}
        members.update(bus=In(RegisterBus()), trouble=Out(1), activity=Out(1))
        self.plan = plan
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        net, kit = self.net, self.kit
        m.submodules.net, m.submodules.kit = net, kit
        for name in self.plan.endpoint_names:
            wiring.connect(m, getattr(kit, f"{name}_tx"), getattr(net, f"{name}_s_axis"))
            wiring.connect(m, getattr(net, f"{name}_m_axis"), getattr(kit, f"{name}_rx"))
        m.d.comb += [*kit.watch(lambda name: getattr(net, name)),
                     self.trouble.eq(kit.trouble), self.activity.eq(kit.activity)]
        wiring.connect(m, wiring.flipped(self.bus), kit.bus)
        for name, member in self.signature.members.items():
            if name in ("bus", "trouble", "activity"):
                continue
            outer, inner = getattr(self, name), getattr(net, name)
            if member.is_signature:
                if member.flow == Out:
                    wiring.connect(m, inner, wiring.flipped(outer))
                else:
                    wiring.connect(m, wiring.flipped(outer), inner)
            elif member.flow == Out:
                m.d.comb += outer.eq(inner)
            else:
                m.d.comb += inner.eq(outer)
        return m
