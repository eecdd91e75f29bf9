"""The clock-domain crossings of a node's board top, as data for its constraint files.

Every signal that passes between two of the asynchronous clock groups of
:func:`optnet.hw.board.clock_constraints` does so through one of Amaranth's synchronisers or
asynchronous FIFOs, whose flip-flops carry the vendor's synchroniser attribute
(:mod:`optnet.hw.cdc`). :func:`clock_crossings` lists them, by clock pair, from the node's
plan: which synchronisers and FIFOs the board top (:class:`~optnet.hw.board.BoardTop`), the
link layers (:class:`~optnet.hw.link.LinkLayer`) and the PHY adapters
(:mod:`optnet.hw.phy`) build, by their instance paths in the board top. The constraint
templates render them per vendor:

* Vivado (XDC): ``set_max_delay -datapath_only`` from each clock to each clock it crosses
  into, the faster clock's period, and ``set_bus_skew`` (one destination period) on every
  Gray-coded FIFO pointer, from its register to the first stage of its synchroniser. No
  ``set_clock_groups``: it outranks every ``set_max_delay`` between the clocks, the vendor
  IP's own CDC constraints among them (UG903 "Constraining Asynchronous Signals", UG949
  "Clock Exceptions Precedence Over set_max_delay", AR# 58308).
* ISE (UCF): a ``FROM:TO ... DATAPATHONLY`` timespec per clock pair.
* Quartus (SDC): ``set_false_path`` between each clock and each clock it crosses into, so the
  transfers are asynchronous and the synchronisers are identified, and ``set_max_skew`` and
  ``set_net_delay`` on the Gray pointers, as Intel's own dual-clock FIFO constraints do.

The test ``tests/test_cdc.py`` checks this list against the crossings Yosys finds in the
Verilog.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from optnet.devices.linkip import IP_SETTINGS
from optnet.hw.cdc import GRAY_POINTERS
from optnet.plan import NodePlan
from optnet.plan.clocks import ClockPlan, clock_plan
from optnet.plan.pins import KIT_INSTANCE, NET_INSTANCE, ClockGroup, ClockRef, clock_constraints
from optnet.spec.models import BoardDesc

__all__ = ["SYNCHRONIZER_KINDS", "ClockCrossing", "FifoStorage", "Synchronizer",
           "clock_crossings"]

#: What a synchroniser carries: ``gray`` a Gray-coded FIFO pointer (a bus, one bit changing
#: at a time), ``level`` a level, ``pulse`` the toggle of a
#: :class:`~amaranth.lib.cdc.PulseSynchronizer`, ``reset`` an asynchronous reset released
#: through an :class:`~amaranth.lib.cdc.AsyncFFSynchronizer`.
SYNCHRONIZER_KINDS = ("gray", "level", "pulse", "reset")


@dataclass(frozen=True)
class Synchronizer:
    """One synchroniser from clock group ``source`` into clock group ``dest``.

    Attributes
    ----------
    path : tuple of str
        Instance path of the synchroniser in the board top (its flip-flops are
        ``stage0``, ``stage1``, ...; the first samples the other domain).
    kind : str
        One of :data:`SYNCHRONIZER_KINDS`.
    source, dest : str
        Clock group names.
    register : tuple of str
        ``gray`` only: path of the pointer register in the source domain that the first
        stage samples.
    """

    path: tuple[str, ...]
    kind: str
    source: str
    dest: str
    register: tuple[str, ...] = ()


@dataclass(frozen=True)
class FifoStorage:
    """The storage of an asynchronous FIFO, written in clock group ``source`` and read into
    ``dest``: safe by the FIFO's Gray pointer handshake (an entry is read only after its
    write pointer has passed through the pointer synchroniser)."""

    path: tuple[str, ...]
    source: str
    dest: str


@dataclass(frozen=True)
class ClockCrossing:
    """Everything that crosses from clock group ``source`` into clock group ``dest``.

    Attributes
    ----------
    source, dest : ClockGroup
    source_ns, dest_ns : float or None
        The period of each group's fastest clock, where optnet knows it (every clock but
        those made inside Intel IP).
    synchronizers : tuple of Synchronizer
    storage : tuple of FifoStorage
    """

    source: ClockGroup
    dest: ClockGroup
    source_ns: float | None
    dest_ns: float | None
    synchronizers: tuple[Synchronizer, ...]
    storage: tuple[FifoStorage, ...]

    @property
    def period_ns(self) -> float | None:
        """The faster clock's period: what every crossing path must take less than, so that
        no more than one value is on its way at a time (UG949, "Constraints on Individual
        CDC Paths")."""
        if self.source_ns is None or self.dest_ns is None:
            return None
        return min(self.source_ns, self.dest_ns)

    @property
    def gray(self) -> tuple[Synchronizer, ...]:
        """The Gray-coded pointers among :attr:`synchronizers`."""
        return tuple(s for s in self.synchronizers if s.kind == "gray")


#: The user clock of a Xilinx Aurora core as a fraction of its line rate: Aurora 8B/10B with
#: 4-byte lanes (C_LANE_WIDTH 4, optnet's customisation) moves 32 data bits, 40 line bits,
#: per lane and user clock (PG046, "Clocking"); Aurora 64B/66B moves 64 bits per lane and
#: user clock, which runs at the line rate / 64 (PG074, "Clocking"; the example design's
#: 3.125 Gb/s gives a 20.48 ns user clock).
_AURORA_USER_DIVISOR = {
    "aurora_8b10b": 10 * int(IP_SETTINGS["aurora_8b10b"]["C_LANE_WIDTH"]),
    "aurora_64b66b": 64,
}


def clock_crossings(plan: NodePlan, board: BoardDesc, cp: ClockPlan | None = None
                    ) -> tuple[ClockCrossing, ...]:
    """The clock-domain crossings of ``plan``'s board top on ``board``, one per ordered pair
    of clock groups (:func:`optnet.hw.board.clock_constraints`) that something crosses
    between, in the order first met: board top, then per router port the link layer and
    the PHY adapter.

    Raises
    ------
    optnet.hw.board.PllError
        When the board's PLL cannot make the node's clocks.
    """
    cp = cp or clock_plan(plan, board)
    clocks, groups = clock_constraints(plan, board, cp)
    by_name = {g.name: g for g in groups}
    port_hz = {c.name: c.hz for c in clocks}
    ip_hz = {f"{NET_INSTANCE}/phy{p.port}/ip/user_clk_out": Fraction(p.line_rate)
             / _AURORA_USER_DIVISOR[p.phy]
             for p in plan.ports if p.phy in _AURORA_USER_DIVISOR}
    syncs, stores = _crossings(plan, board, cp, groups)

    pairs: dict[tuple[str, str], tuple[list[Synchronizer], list[FifoStorage]]] = {}
    for item in [*syncs, *stores]:
        if item.source == item.dest:
            continue
        for name in (item.source, item.dest):
            if name not in by_name:
                raise AssertionError(f"node {plan.node}: crossing {item} names clock group "
                                     f"'{name}', which clock_constraints does not make")
        entry = pairs.setdefault((item.source, item.dest), ([], []))
        entry[isinstance(item, FifoStorage)].append(item)
    return tuple(
        ClockCrossing(by_name[src], by_name[dst], _period_ns(by_name[src], cp, port_hz, ip_hz),
                      _period_ns(by_name[dst], cp, port_hz, ip_hz), tuple(s), tuple(m))
        for (src, dst), (s, m) in pairs.items())


def _period_ns(group: ClockGroup, cp: ClockPlan, port_hz: dict, ip_hz: dict) -> float | None:
    # The period of the group's fastest clock; None when one of its clocks is unknown.
    rates = [_clock_hz(ref, cp, port_hz, ip_hz) for ref in group.clocks]
    if any(hz is None for hz in rates):
        return None
    return float(Fraction(10**9) / max(rates))


def _clock_hz(ref: ClockRef, cp: ClockPlan, port_hz: dict, ip_hz: dict) -> Fraction | None:
    if ref.kind in ("port", "pin"):
        return port_hz[ref.name]
    if ref.kind == "pll":
        instance, pin = ref.path.split("/")
        for setting in (cp.pll, *cp.gt_plls):
            if setting.instance == instance:
                return next(o.achieved_hz for o in setting.outputs if o.pin == pin)
        raise AssertionError(f"no PLL '{instance}' in the clock plan of node {cp.node}")
    return ip_hz.get(ref.path)


def _fifo(path: tuple[str, ...], write: str, read: str
          ) -> tuple[list[Synchronizer], list[FifoStorage]]:
    """The crossings of an :class:`~amaranth.lib.fifo.AsyncFIFO` at ``path``: its two
    pointers, its write domain's reset (which empties the read side) and its storage."""
    syncs = []
    for sync, (register, forward) in GRAY_POINTERS.items():
        src, dst = (write, read) if forward else (read, write)
        syncs.append(Synchronizer((*path, sync), "gray", src, dst, (*path, register)))
    syncs.append(Synchronizer((*path, "rst_cdc"), "reset", write, read))
    return syncs, [FifoStorage((*path, "storage"), write, read)]


def _crossings(plan: NodePlan, board: BoardDesc, cp: ClockPlan, groups: tuple[ClockGroup, ...]
               ) -> tuple[list[Synchronizer], list[FifoStorage]]:
    """Every synchroniser and FIFO storage between two clock groups (or within one: the
    caller drops those), with the clock group names :func:`clock_constraints` gives."""
    net = (NET_INSTANCE,)
    init = {"pll": "init", "board": "clk_ref"}.get(cp.init_source)
    syncs = [Synchronizer(("rst_sync",), "reset", "clk_ref", "net")]
    syncs += [Synchronizer((f"rst_{name}",), "reset", "clk_ref", name)
              for name in dict.fromkeys(cp.lvds_clocks.values())]
    stores: list[FifoStorage] = []
    for port in plan.ports:
        p = port.port
        phy = (*net, f"phy{p}")
        link = (*net, f"link{p}")
        if port.phy == "lvds":
            user = cp.lvds_clocks[p]
        elif port.phy in ("aurora_8b10b", "aurora_64b66b") and board.family == "virtex5":
            user = f"gt{cp.gt_groups[p]}"
        elif port.phy in ("aurora_8b10b", "aurora_64b66b"):
            # A slave core runs on its master's user clock (optnet.plan.transceivers).
            slave = port.xcvr is not None and port.xcvr.role == "slave"
            user = f"port{port.xcvr.master if slave else p}_user"
        elif port.phy == "serial_lite_3":
            user = cp.sl3_clocks[p]
        elif port.phy == "interlaken":
            user = f"port{p}_ip"
        else:
            raise AssertionError(f"node {plan.node}: no clock crossings known for PHY "
                                 f"'{port.phy}' of port {p}")

        # The link layer (optnet.hw.link.LinkLayer, or on a direct node
        # optnet.hw.direct.DirectLink): a FIFO each way and the PHY's `up` to the network
        # side; the link layer also sends its resynchronisation pulse to the PHY side.
        for name, write, read in (("tx_fifo", "net", user), ("rx_fifo", user, "net")):
            s, m = _fifo((*link, name), write, read)
            syncs += s
            stores += m
        if plan.direct is None:
            syncs.append(Synchronizer((*link, "slip", "ff_sync"), "pulse", "net", user))
        syncs.append(Synchronizer((*link, "up_sync"), "level", user, "net"))

        # The PHY adapter (optnet.hw.phy).
        if port.phy == "lvds":
            rx = f"port{p}_rclk"
            s, m = _fifo((*phy, "rx_fifo"), rx, user)
            syncs += s
            stores += m
            syncs += [Synchronizer((*phy, "beat_sync"), "level", rx, user),
                      Synchronizer((*phy, "rx_reset_sync"), "reset", user, rx),
                      Synchronizer((*phy, "aligned_sync"), "level", rx, user),
                      Synchronizer((*phy, "up_sync"), "level", rx, user)]
            continue
        # Every vendor adapter releases its init-domain reset from the board's power-on reset.
        syncs.append(Synchronizer((*phy, "init_reset"), "reset", "clk_ref", init))
        if user.startswith("gt"):
            # Virtex-5 Aurora: the core reset, sequenced in the init domain, released on the
            # user clock (the GTP and PLL lock are not registers of the design).
            syncs.append(Synchronizer((*phy, "core_reset_sync"), "reset", init, user))
        elif port.phy == "serial_lite_3":
            ip = f"port{p}_ip"
            syncs += [Synchronizer((*phy, "raw_reset"), "reset", "clk_ref", user),
                      Synchronizer((*phy, "link_up_rx_sync"), "level", ip, user)]
            s, m = _fifo((*phy, "rx_fifo"), ip, user)
            syncs += s
            stores += m
    if any(g.name == "jtag" for g in groups):
        # The bring-up kit's JTAG bridge (optnet.hw.jtag): a command and its toggle into the
        # network clock, the result and its acknowledgement back.
        bridge = (KIT_INSTANCE, "jtag")
        syncs += [Synchronizer((*bridge, name), "level", src, dst) for name, src, dst in (
            ("command_sync", "jtag", "net"), ("request_sync", "jtag", "net"),
            ("result_sync", "net", "jtag"), ("ack_sync", "net", "jtag"))]
    return syncs, stores
