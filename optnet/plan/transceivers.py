"""The transceiver plan of one node: which link core owns each quad's shared logic, which
buffers each reference clock pad, which PLL clocks each link, and the device rules that
forbid a design.

Vendor link cores come in two forms (Xilinx PG046/PG074 "Shared Logic"): with the shared
logic in the core, a core buffers its reference clock (``IBUFDS_GTE*``), holds its quad's
``*_COMMON`` (the quad PLL) and makes the user clocks; without, it takes them as inputs from
a core that has them. A quad has one ``COMMON`` site and a reference clock pad one buffer,
so one core per quad must own the shared logic (the *master*) and every other core in the
quad takes the master's clocks (a *slave*). :func:`transceiver_plan` elects, per quad, the
first port in router order with lanes there, and checks the rules of
:mod:`optnet.devices.transceivers`; each broken rule is a finding (E33x) that names the rule
and its source:

E330
    Two masters would buffer one reference clock pad (their quads are fed by the same pins).
E331
    A reference clock pad cannot reach a quad it must feed.
E332
    No PLL of the transceiver makes a link's line rate.
E333
    Links that share a group's PLL need it at different rates or reference clocks, or a core
    cannot take its clocks from another core of its group.
E334
    A quad needs more reference clocks than it has inputs for.
E335
    A Stratix 10 bank needs more GXT channels or ATX PLLs than it has, or GXT channels take
    their reference clock outside the triplet of their master ATX PLL.

On Stratix 10 the plan also places each link's transmit PLLs (:class:`TxPllPlan`): the ATX
PLL count of E335, the reference clock triplet of E335 and the ATX PLL IP the board top
instantiates (:func:`optnet.plan.clocks.clock_plan`) all read this one placement.
W301
    A Virtex-5 GTP_DUAL tile is shared with a core of more than one lane, which instantiates
    its tiles whole: the ISE project needs the pair merged by hand. (Two one-lane cores share
    a tile: optnet wraps the tile itself, the first core is its ``master``, the other's lane
    logic a ``slave`` on the second channel.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from optnet.devices.linkip import ip_family, ip_spec, quad_number
from optnet.devices.transceivers import (
    ATX_PER_BANK,
    GXT_ABOVE,
    GXT_CHANNELS,
    GXT_PER_ATX,
    GXT_PER_BANK,
    Transceiver,
    bank_name,
    gxt_refclk_site,
    transceiver,
    triplet_of,
)
from optnet.diagnostics import Finding
from optnet.spec.models import BoardDesc

__all__ = ["GroupPlan", "LinkPort", "PortXcvr", "RefclkPlan", "TxPllPlan", "XcvrPlan",
           "transceiver_plan"]



@dataclass(frozen=True)
class LinkPort:
    """What the plan needs of one link port (router port order).

    Attributes
    ----------
    port : int
        Router port.
    name : str
        Board port with its lane range, for messages.
    board_port : str
    lanes : tuple of int
    phy : str
    line_rate : int
    origin : tuple
        Value path of the link in the cluster file (findings point there).
    settings : tuple of tuple
        Paths of its ``lanes`` setting, most specific first.
    """

    port: int
    name: str
    board_port: str
    lanes: tuple[int, ...]
    phy: str
    line_rate: int
    origin: tuple = ()
    settings: tuple = ()


@dataclass(frozen=True)
class RefclkPlan:
    """One reference clock pad a node uses.

    Attributes
    ----------
    key : str
        The pad, by its pins (``A10/A9``) or, without pins, by the first board port that
        names it.
    hz : Fraction or None
    group : tuple of int or None
        (column, group) the pad sits in: from its buffer site in the board file, else the
        group of the first lane of the first port that uses it (an assumption, noted).
    owner : int
        Router port of the core that buffers it.
    ports : tuple of int
        Router ports clocked from it.
    input : int or None
        Which of its group's reference clock inputs it is (``MGTREFCLK0``, ``1``), from its
        buffer site; None when the board file gives no site of the transceiver's form (the
        group is then assumed).
    """

    key: str
    hz: Fraction | None
    group: tuple[int, int] | None
    owner: int
    ports: tuple[int, ...]
    input: int | None = None


@dataclass(frozen=True)
class GroupPlan:
    """One quad (tile, bank) with used channels.

    Attributes
    ----------
    column, group : int
    channels : tuple of int
        Used channels.
    master : int
        Router port of the core that owns the group's shared logic.
    ports : tuple of int
        Every router port with lanes here, master first.
    pll : str
        The shared PLL in use (``QPLL``), or ``""`` when every channel uses its own.
    line_rate : int
        The rate of the shared PLL's channels (0 without one).
    refclk : str
        The reference clock (:attr:`RefclkPlan.key`) of the shared PLL.
    """

    column: int
    group: int
    channels: tuple[int, ...]
    master: int
    ports: tuple[int, ...]
    pll: str
    line_rate: int
    refclk: str


@dataclass(frozen=True)
class TxPllPlan:
    """One transmit PLL of a Stratix 10 link port, and where it sits.

    A GXT lane (above :data:`~optnet.devices.transceivers.GXT_ABOVE`) is clocked by the ATX
    PLL of its own triplet through that PLL's GXT clock output, two lanes to a PLL
    (:data:`~optnet.devices.transceivers.GXT_PER_ATX`); without channel sites the port's
    lanes are taken in pairs, in lane order. GX lanes share one PLL, which reaches them
    through the bank's clock network.

    Attributes
    ----------
    kind : str
        The PLL (``ATX``).
    lanes : tuple of int
        The lanes it clocks, as indices into the link's lanes (0 its first).
    gxt : bool
        It drives GXT channels (through ``tx_serial_clk_gxt``).
    bank : tuple of (int, int) or None
        (column, group) of the bank it sits in: its lanes' (a GX PLL's, its first lane's);
        None when the board file gives no channel sites.
    triplet : int or None
        The triplet it sits in (0 the bottom, 1 the top): a GXT PLL's lanes'; None without
        sites, and for a GX PLL, which either ATX PLL of its bank can be.
    """

    kind: str
    lanes: tuple[int, ...]
    gxt: bool
    bank: tuple[int, int] | None = None
    triplet: int | None = None


@dataclass(frozen=True)
class PortXcvr:
    """The transceiver plan of one link port.

    Attributes
    ----------
    role : str
        ``single`` (its core keeps the shared logic of its quads and shares it with no
        other core; on Virtex-5 and Intel, a core that has no shared logic to share),
        ``master`` (its core keeps the shared logic and gives its clocks to slaves) or
        ``slave`` (its core takes reference clock, quad PLL and user clocks from
        ``master``'s).
    master : int or None
        The master's router port (a slave's).
    pll : str
        The PLL that clocks its channels.
    groups : tuple of (int, int)
        (column, group) of its lanes, in lane order; empty when the board file gives no
        channel sites.
    refclk : str
        Its reference clock pad (:attr:`RefclkPlan.key`).
    quad : int
        The number its core gives its first quad in port names
        (:func:`optnet.devices.linkip.quad_number`).
    qpll : bool
        Its channels run from the quad's shared PLL.
    channel : int or None
        Virtex-5, a one-lane core: the GTP_DUAL channel (0, 1) of its lane; optnet wraps the
        tile itself (:data:`optnet.devices.linkip.V5_TILE_MODULES`), which a ``master``
        shares with the lane logic of a ``slave`` on the other channel. None otherwise.
    tx_plls : tuple of TxPllPlan
        Stratix 10: its transmit PLLs, in the order the board top instantiates them; empty
        elsewhere.
    """

    role: str
    master: int | None
    pll: str
    groups: tuple[tuple[int, int], ...]
    refclk: str
    quad: int = 1
    qpll: bool = False
    channel: int | None = None
    tx_plls: tuple[TxPllPlan, ...] = ()


@dataclass(frozen=True)
class XcvrPlan:
    """The transceiver plan of one node (empty for a node without transceiver links).

    Attributes
    ----------
    transceiver : str
        The transceiver's name (GTXE2 ...), ``""`` without one.
    ports : dict of int to PortXcvr
    groups : tuple of GroupPlan
    refclks : tuple of RefclkPlan
    notes : tuple of str
        Assumptions, as sentences.
    warnings : tuple of Finding
        Rules the generated project breaks in a way a user can repair by hand (W30x).
    """

    transceiver: str = ""
    ports: dict = field(default_factory=dict, compare=False)
    groups: tuple[GroupPlan, ...] = ()
    refclks: tuple[RefclkPlan, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[Finding, ...] = field(default=(), compare=False)

    def key(self) -> tuple:
        """The plan as a hashable value (roles compare nodes by it)."""
        return (self.transceiver, tuple(sorted(self.ports.items())), self.groups,
                self.refclks)


def _refclk_key(board: BoardDesc, port: LinkPort) -> str:
    rc = board.ports[port.board_port].refclk
    if rc is not None and rc.p:
        return f"{rc.p}/{rc.n}" if rc.n else rc.p
    return port.board_port


def _refclk_hz(board: BoardDesc, port: LinkPort) -> Fraction | None:
    rc = board.ports[port.board_port].refclk
    return None if rc is None else Fraction(rc.freq.value)


def _mhz(hz: Fraction | None) -> str:
    return "unknown" if hz is None else f"{float(hz) / 1e6:g} MHz"


def _gbps(rate: int) -> str:
    return f"{rate / 1e9:g} Gb/s"


class _Planner:
    """One node's planning state; :meth:`plan` runs it once."""

    def __init__(self, node: str, board: BoardDesc, gt: Transceiver,
                 ports: Sequence[LinkPort], plls: dict[str, tuple[str, ...]],
                 shares: set[str]):
        self.node, self.board, self.gt, self.ports = node, board, gt, ports
        self.prefer = plls
        self.shares = shares
        self.findings: list[Finding] = []
        self.notes: list[str] = []

    def finding(self, code: str, port: LinkPort, message: str, rule: str,
                hint: str | None = None) -> None:
        self.findings.append(Finding(code, f"{message} Rule: {rule}.", port.origin, hint=hint,
                                     settings=port.settings))

    def where(self, port: LinkPort) -> tuple[tuple[int, int], ...]:
        """(column, group) of each lane; empty when a lane has no site of this
        transceiver's form."""
        out = []
        for lane in port.lanes:
            site = self.board.ports[port.board_port].lanes[lane].site
            at = self.gt.locate(site) if site else None
            if at is None:
                return ()
            out.append((at.column, at.group))
        return tuple(out)

    def pad_group(self, port: LinkPort) -> tuple[tuple[int, int] | None, int | None]:
        """Where ``port``'s reference clock pad is: its group and input from its buffer
        site, else (assumed) the group of its board port's first lane and no input."""
        rc = self.board.ports[port.board_port].refclk
        if rc is not None and rc.site:
            at = self.gt.locate_refclk(rc.site)
            if at is not None:
                return at, self.gt.refclk_input(rc.site)
        first = self.board.ports[port.board_port].lanes[0].site
        at = self.gt.locate(first) if first else None
        return (None if at is None else (at.column, at.group)), None

    def pll_names(self, port: LinkPort) -> tuple[str, ...]:
        """The PLLs ``port``'s core may use on this transceiver, preferred first."""
        own = tuple(p.name for p in self.gt.plls)
        return tuple(n for n in self.prefer.get(port.phy, ()) if n in own) or own

    def choose_pll(self, port: LinkPort) -> str | None:
        return next((n for n in self.pll_names(port)
                     if self.gt.pll(n).reaches(port.line_rate)), None)

    def plan(self) -> tuple[XcvrPlan, list[Finding]]:
        gt, board = self.gt, self.board
        where = {p.port: self.where(p) for p in self.ports}
        unplaced = [p.name for p in self.ports if not where[p.port]]
        if unplaced:
            self.notes.append(
                f"Board '{board.name}' gives no {gt.name} channel sites for "
                f"{', '.join(unplaced)}: their {gt.group}s, and the rules that depend on "
                f"them, are not checked.")
        pll = {}
        for p in self.ports:
            pll[p.port] = self.choose_pll(p)
            if pll[p.port] is None:
                names = self.pll_names(p)
                self.finding(
                    "E332", p, f"Link port {p.name} of node '{self.node}' runs {p.phy} at "
                    f"{_gbps(p.line_rate)}, which no {gt.name} PLL its core uses "
                    f"({', '.join(names)}) can make.",
                    "; ".join(gt.pll(n).source for n in names),
                    hint="Choose a line rate inside the PLLs' ranges.")
        if gt.common is None and gt.name == "H-tile":
            return self.plan_banks(where, pll)
        return self.plan_quads(where, pll)

    def plan_quads(self, where, pll) -> tuple[XcvrPlan, list[Finding]]:
        gt, board = self.gt, self.board
        by_port = {p.port: p for p in self.ports}
        master_of: dict[tuple[int, int], int] = {}
        members: dict[tuple[int, int], list[int]] = {}
        roles: dict[int, tuple[str, int | None]] = {}
        split = gt.common is None      # Virtex-5: a tile's PLL sits in the channel pair
        for p in self.ports:
            groups = list(dict.fromkeys(where[p.port]))
            for g in groups:
                members.setdefault(g, []).append(p.port)
            if not groups:
                roles[p.port] = ("master" if not split else "single", None)
                continue
            owners = {master_of[g] for g in groups if g in master_of}
            if split:
                roles[p.port] = self.pair_tile(p, groups, master_of, roles, by_port)
                continue
            if not owners:
                roles[p.port] = ("master", None)
                for g in groups:
                    master_of[g] = p.port
            elif len(owners) == 1 and all(g in master_of for g in groups):
                master = owners.pop()
                roles[p.port] = ("slave", master)
                if p.phy not in self.shares or by_port[master].phy != p.phy:
                    other = ("another" if by_port[master].phy == p.phy
                             else f"a {by_port[master].phy}")
                    self.finding(
                        "E333", p, f"Link port {p.name} of node '{self.node}' shares "
                        f"{gt.group} {_group(groups[0])} with port {by_port[master].name}, "
                        f"whose core owns its shared logic, but optnet knows no {p.phy} core "
                        f"on {board.family} that takes its clocks from {other} core.",
                        gt.source, hint="Give the link lanes in a quad of its own.")
            else:
                roles[p.port] = ("master", None)
                self.finding(
                    "E333", p, f"Link port {p.name} of node '{self.node}' spans {gt.group}s "
                    f"{', '.join(_group(g) for g in groups)}, whose shared logic would "
                    f"belong to different cores (ports "
                    f"{', '.join(by_port[o].name for o in sorted(owners))} own some of "
                    f"them); a core takes its {gt.group} clocks from one core only.",
                    gt.source, hint="Give the link lanes in quads no other link uses.")
        # A master whose quads no other core shares keeps the plain shared-logic core.
        shared = {m for role, m in roles.values() if role == "slave"}
        for q, (role, _) in roles.items():
            if role == "master" and q not in shared:
                roles[q] = ("single", None)
        self.check_shared_pll(where, pll, roles, by_port)
        refclks = self.refclks(where, roles, by_port)
        groups = []
        for g, ports in sorted(members.items()):
            master = master_of[g]
            users = [q for q in ports if self.gt.pll(pll[q]).shared] if all(
                pll[q] for q in ports) else []
            rate = by_port[users[0]].line_rate if users else 0
            channels = sorted({at.channel for q in ports for lane in by_port[q].lanes
                               for at in [self.gt.locate(
                                   board.ports[by_port[q].board_port].lanes[lane].site)]
                               if (at.column, at.group) == g})
            groups.append(GroupPlan(g[0], g[1], tuple(channels), master,
                                    tuple(sorted(ports, key=lambda q: q != master)),
                                    pll[users[0]] if users else "", rate,
                                    _refclk_key(board, by_port[master])))
        out = {}
        for p in self.ports:
            role, master = roles[p.port]
            ref = by_port[master] if master is not None else p
            quad = quad_number(ip_family(p.phy, board.family), where[p.port][0][1]) \
                if where[p.port] else 1
            channel = None
            if split and len(p.lanes) == 1 and where[p.port]:
                site = board.ports[p.board_port].lanes[p.lanes[0]].site
                channel = gt.locate(site).channel
            out[p.port] = PortXcvr(role, master, pll[p.port] or "", where[p.port],
                                   _refclk_key(board, ref), quad,
                                   bool(pll[p.port]) and gt.pll(pll[p.port]).shared, channel)
        return XcvrPlan(gt.name, out, tuple(groups), refclks, tuple(self.notes)), \
            self.findings

    def pair_tile(self, p: LinkPort, groups, master_of, roles, by_port
                  ) -> tuple[str, int | None]:
        """Virtex-5: the role of ``p``'s core in its GTP_DUAL tiles. optnet wraps the tile
        of one-lane cores itself, so two of them share a tile (the first in router order
        owns it, the ``master``; the other's lane logic uses its second channel, a
        ``slave``); a core of more lanes instantiates its tiles whole and shares none
        (W301)."""
        owners = [master_of[g] for g in groups if g in master_of]
        for g in groups:
            master_of.setdefault(g, p.port)
        if not owners:
            return ("master", None) if len(p.lanes) == 1 else ("single", None)
        other = by_port[owners[0]]
        if len(p.lanes) == 1 and len(other.lanes) == 1 and roles[other.port][0] == "master":
            return "slave", other.port
        wide = other if len(other.lanes) > 1 else p
        self.finding(
            "W301", p, f"Link ports {other.name} and {p.name} of node '{self.node}' share "
            f"{self.gt.name} {self.gt.group} {_group(groups[0])}, but the {len(wide.lanes)}-lane "
            f"Aurora v5.2 core of port {wide.name} instantiates the whole tile (optnet shares "
            f"a tile only between one-lane cores, whose tiles it wraps itself), so the ISE "
            f"project will not place until the two are merged by hand into one tile wrapper "
            f"(docs/build.md).",
            self.gt.source, hint="Give the link lanes in tiles no other link uses, or make "
                                 "both links one lane wide.")
        return "single", None

    def check_shared_pll(self, where, pll, roles, by_port) -> None:
        """Channels of one group on its shared PLL need one rate and one reference clock;
        a slave takes its master's reference clock, so it must run at its frequency."""
        gt, board = self.gt, self.board
        first: dict[tuple[int, int], int] = {}
        for p in self.ports:
            role, master = roles[p.port]
            if role == "slave":
                m = by_port[master]
                mine, theirs = _refclk_hz(board, p), _refclk_hz(board, m)
                if mine != theirs:
                    self.finding(
                        "E334", p, f"Link port {p.name} of node '{self.node}' needs a "
                        f"{_mhz(mine)} reference clock, but it shares its {gt.group} with "
                        f"port {m.name}, whose core owns the {gt.group}'s shared logic and "
                        f"clocks it from {_mhz(theirs)}.", gt.source,
                        hint="Use one reference clock frequency for links in one quad.")
            if not pll[p.port] or not gt.pll(pll[p.port]).shared:
                continue
            for g in dict.fromkeys(where[p.port]):
                if g not in first:
                    first[g] = p.port
                    continue
                o = by_port[first[g]]
                if o.line_rate != p.line_rate or (_refclk_key(board, o) != _refclk_key(
                        board, p) and _refclk_hz(board, o) != _refclk_hz(board, p)):
                    self.finding(
                        "E333", p, f"Link ports {o.name} ({_gbps(o.line_rate)}) and "
                        f"{p.name} ({_gbps(p.line_rate)}) of node '{self.node}' share the "
                        f"{pll[p.port]} of {gt.group} {_group(g)}, which makes one rate from "
                        f"one reference clock.", gt.pll(pll[p.port]).source,
                        hint="Run the links of one quad at one line rate.")

    def refclks(self, where, roles, by_port) -> tuple[RefclkPlan, ...]:
        """Every pad in use, its one buffer (the first master using it), and the reach
        rule."""
        gt, board = self.gt, self.board
        pads: dict[str, list[int]] = {}
        owners: dict[str, list[int]] = {}
        for p in self.ports:
            role, master = roles[p.port]
            key = _refclk_key(board, by_port[master] if master is not None else p)
            pads.setdefault(key, []).append(p.port)
            if role != "slave":
                owners.setdefault(key, []).append(p.port)
        out = []
        for key, users in pads.items():
            own = owners.get(key, users[:1])
            owner = by_port[own[0]]
            if len(own) > 1 and gt.refclk_buffer and gt.common is not None:
                for extra in own[1:]:
                    p = by_port[extra]
                    self.finding(
                        "E330", p, f"Link ports {owner.name} and {p.name} of node "
                        f"'{self.node}' are in different {gt.group}s but take their reference "
                        f"clock from the same pad ({key}); each core with shared logic "
                        f"buffers its own ({gt.refclk_buffer}), and a pad has one buffer.",
                        gt.source, hint="Put links that share a reference clock in one quad.")
            pad, pad_input = self.pad_group(owner)
            if pad is None:
                self.notes.append(f"The {gt.group} of reference clock {key} is not known; "
                                  f"its reach is not checked.")
            else:
                if not (board.ports[owner.board_port].refclk and
                        board.ports[owner.board_port].refclk.site):
                    self.notes.append(
                        f"Reference clock {key} is assumed to sit in {gt.group} "
                        f"{_group(pad)}, the {gt.group} of the first lane of board port "
                        f"'{owner.board_port}' (the board file gives no buffer site).")
                for q in users:
                    for g in dict.fromkeys(where[q]):
                        if g[0] != pad[0] or abs(g[1] - pad[1]) > gt.refclk_reach:
                            self.finding(
                                "E331", by_port[q], f"Link port {by_port[q].name} of node "
                                f"'{self.node}' has lanes in {gt.group} {_group(g)}, which "
                                f"reference clock {key} in {gt.group} {_group(pad)} cannot "
                                f"reach: a {gt.name} reference clock feeds its own "
                                f"{gt.group} and {gt.refclk_reach} above and below in the "
                                f"same column.", gt.source,
                                hint="Use a reference clock of a nearer quad.")
            out.append(RefclkPlan(key, _refclk_hz(board, owner), pad, owner.port,
                                  tuple(users), pad_input))
        return tuple(out)

    def plan_banks(self, where, pll) -> tuple[XcvrPlan, list[Finding]]:
        """Stratix 10: GXT channels only on the GXT-capable channels of a bank, at most
        four per bank, the transmit PLLs of each link placed (:meth:`place_tx_plls`) at most
        two ATX PLLs to a bank (a board port stands for one bank where the board file gives
        no sites), and GXT reference clocks in the triplet of their master ATX PLL."""
        gt, board = self.gt, self.board
        banks: dict[object, list[tuple[LinkPort, int | None]]] = {}
        for p in self.ports:
            for k, lane in enumerate(p.lanes):
                site = board.ports[p.board_port].lanes[lane].site
                at = gt.locate(site) if where[p.port] and site else None
                bank = (at.column, at.group) if at else ("port", p.board_port)
                banks.setdefault(bank, []).append((p, at.channel if at else None))
                if at is not None and p.line_rate > GXT_ABOVE and \
                        at.channel not in GXT_CHANNELS:
                    self.finding(
                        "E335", p, f"Lane {k} of link port {p.name} of node '{self.node}' "
                        f"runs at {_gbps(p.line_rate)} (GXT) on channel {at.channel} of its "
                        f"bank ({site}), which is GX only; GXT runs on channels "
                        f"{', '.join(map(str, GXT_CHANNELS))}.",
                        "UG-683621 3.1.1.2 Using the ATX PLL for GXT Channels",
                        hint="Move the link to GXT-capable channels.")
        if any(not where[p.port] for p in self.ports):
            self.notes.append(
                f"Without channel sites, each board port of '{board.name}' is taken to be "
                f"wired to one {gt.group} for the GXT and ATX PLL counts.")
        tx = {p.port: self.place_tx_plls(p, where, pll) for p in self.ports}
        atx: dict[object, list[LinkPort]] = {}
        for p in self.ports:
            for t in tx[p.port]:
                if t.kind == "ATX":
                    atx.setdefault(t.bank or ("port", p.board_port), []).append(p)
        for bank, lanes in banks.items():
            ports = list(dict.fromkeys(p for p, _ in lanes))
            channels = sum(1 for p, _ in lanes if p.line_rate > GXT_ABOVE)
            gxt = [p for p in ports if p.line_rate > GXT_ABOVE]
            plls = atx.get(bank, [])
            what = (f"the {gt.group} of board port '{bank[1]}'" if bank[0] == "port"
                    else f"{gt.group} {_group(bank)}")
            if channels > GXT_PER_BANK:
                self.finding(
                    "E335", gxt[-1], f"Node '{self.node}' runs {channels} GXT channels in "
                    f"{what}, which has {GXT_PER_BANK}.", "AN 778 Stratix 10 transceiver "
                    "usage: GXT channels per bank", hint="Spread GXT links over banks.")
            elif len(plls) > ATX_PER_BANK:
                self.finding(
                    "E335", plls[-1], f"Node '{self.node}' needs {len(plls)} ATX PLLs in "
                    f"{what} (one per two GXT channels), which has {ATX_PER_BANK}.",
                    "UG-683621 ATX PLL: two per bank", hint="Spread GXT links over banks.")
        self.check_gxt_refclk(where, tx)
        out = {p.port: PortXcvr("single", None, pll[p.port] or "", where[p.port],
                                _refclk_key(board, p), tx_plls=tx[p.port])
               for p in self.ports}
        pads: dict[str, list[int]] = {}
        for p in self.ports:
            pads.setdefault(_refclk_key(board, p), []).append(p.port)
        refclks = tuple(RefclkPlan(k, _refclk_hz(board, next(
            p for p in self.ports if p.port == v[0])), None, v[0], tuple(v))
            for k, v in pads.items())
        return XcvrPlan(gt.name, out, (), refclks, tuple(self.notes)), self.findings

    def place_tx_plls(self, p: LinkPort, where, pll) -> tuple[TxPllPlan, ...]:
        """Stratix 10: the transmit PLLs of link port ``p`` and where they sit
        (:class:`TxPllPlan`); none when no PLL makes its rate (E332)."""
        kind = pll[p.port]
        if not kind:
            return ()
        desc = self.board.ports[p.board_port]
        sites = [self.gt.locate(desc.lanes[lane].site) for lane in p.lanes] \
            if where[p.port] else []
        if kind != "ATX" or p.line_rate <= GXT_ABOVE:
            first = (sites[0].column, sites[0].group) if sites else None
            return (TxPllPlan(kind, tuple(range(len(p.lanes))), False, first),)
        if not sites:
            return tuple(TxPllPlan(kind, tuple(range(k, min(k + GXT_PER_ATX, len(p.lanes)))),
                                   True) for k in range(0, len(p.lanes), GXT_PER_ATX))
        # A triplet has GXT_PER_ATX GXT channels, so its ATX PLL clocks all of the link's
        # lanes there (a lane on a GX-only channel is E335 already, not a third PLL).
        by_triplet: dict[tuple[int, int, int], list[int]] = {}
        for k, at in enumerate(sites):
            by_triplet.setdefault((at.column, at.group, triplet_of(at.channel)), []).append(k)
        return tuple(TxPllPlan(kind, tuple(lanes), True, (c, g), t)
                     for (c, g, t), lanes in by_triplet.items())

    def check_gxt_refclk(self, where, tx) -> None:
        """Stratix 10: the reference clock of GXT channels sits in the triplet of their
        master ATX PLL (UG-683621 3.1.1.2).

        The master is one of the link's transmit ATX PLLs as :meth:`place_tx_plls` placed
        them, one in each triplet that holds its lanes (no GXT clock buffer ATX), so the
        reference clock pin must be in one of those triplets; for lanes in both triplets of
        a bank either ATX PLL can be the master, so either triplet's pin serves. This is also
        the pin AN 778 §2.1.4 recommends for GXT jitter (a dedicated one in the same bank).
        """
        gt, board = self.gt, self.board
        unchecked = []
        for p in self.ports:
            gxt = [t for t in tx[p.port] if t.gxt and t.kind == "ATX"]
            if not gxt:
                continue
            desc = board.ports[p.board_port]
            pad = gt.refclk_at(desc.refclk.site) if desc.refclk and desc.refclk.site else None
            if not where[p.port] or pad is None or pad.triplet is None:
                unchecked.append(p.name)
                continue
            held: dict[tuple[int, int, int], list[str]] = {}
            for t in gxt:
                held.setdefault((*t.bank, t.triplet), []).extend(
                    desc.lanes[p.lanes[k]].site for k in t.lanes)
            if (pad.column, pad.group, pad.triplet) in held:
                continue
            lanes = " and ".join(
                f"{', '.join(names)} (the {_TRIPLET[t]} triplet of bank {bank_name(c, g)})"
                for (c, g, t), names in held.items())
            pins = " or ".join(gxt_refclk_site(c, g, t, pad.side) for c, g, t in held)
            self.finding(
                "E335", p, f"Link port {p.name} of node '{self.node}' runs at "
                f"{_gbps(p.line_rate)} (GXT) on {lanes}, but its reference clock is "
                f"{desc.refclk.site}, the {_TRIPLET[pad.triplet]} triplet's pin of bank "
                f"{bank_name(pad.column, pad.group)}: GXT channels take their reference clock "
                f"in the triplet of their master ATX PLL, which sits next to them.",
                "UG-683621 3.1.1.2 Using the ATX PLL for GXT Channels",
                hint=f"Clock the link from {pins} (the pin of its lanes' triplet), or move "
                     f"its lanes to the triplet of {desc.refclk.site}.")
        if unchecked:
            self.notes.append(
                f"Board '{board.name}' gives no reference clock pin (REFCLK_GXBL1C_CHT) or no "
                f"channel sites for the GXT link ports {', '.join(unchecked)}: the rule that "
                f"their reference clock is in their master ATX PLL's triplet (UG-683621 "
                f"3.1.1.2) is not checked for them.")


_TRIPLET = ("bottom", "top")


def _group(g) -> str:
    return f"X{g[0]} #{g[1]}" if isinstance(g, tuple) else str(g)


def transceiver_plan(node: str, board: BoardDesc, ports: Sequence[LinkPort]
                     ) -> tuple[XcvrPlan, list[Finding]]:
    """Plan the transceivers of node ``node`` on ``board`` for its vendor-IP link ports
    ``ports`` (router port order), each clocked from a PLL its core uses
    (:meth:`optnet.devices.linkip.IpSpec.pll_order`).

    Returns
    -------
    (XcvrPlan, list of Finding)
        The plan, and one E33x finding per broken device rule (the plan is then partial).
    """
    if not ports:
        return XcvrPlan(), []
    gt = transceiver(board.family, board.transceivers.type if board.transceivers else None)
    if gt is None:
        return XcvrPlan(notes=(
            f"Board '{board.name}' ({board.family}, transceivers "
            f"{board.transceivers.type if board.transceivers else 'none'}) has no transceiver "
            f"model in optnet.devices.transceivers; its quads are not planned.",)), []
    plls, shares = {}, set()
    for p in ports:
        try:
            fam = ip_family(p.phy, board.family)
        except ValueError:
            continue            # no core for the family: plan's E301 says so
        spec = ip_spec(p.phy, fam)
        plls[p.phy] = spec.pll_order(fam)
        if fam in spec.slave_families:
            shares.add(p.phy)
    xplan, found = _Planner(node, board, gt, ports, plls, shares).plan()
    warnings = tuple(f for f in found if f.code.startswith("W"))
    return dataclasses.replace(xplan, warnings=warnings), [
        f for f in found if not f.code.startswith("W")]
