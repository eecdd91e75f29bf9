"""Pin planning: the board top's ports, the board-file pin of every bit, and the clocks
its constraint files create.

:func:`top_ports` lists the ports of a node's board top and the board-file pin of every
bit; the board top (:class:`optnet.hw.board.BoardTop`) takes its ports from there, and the
constraint emitter (:mod:`optnet.emit.constraints`) its pin assignments
(:func:`board_pins`), so the two cannot disagree. :func:`clock_constraints` gives the
clocks to create and the clock groups that are asynchronous to each other;
:func:`constraint_format` the kind of file the board's tools read.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from optnet.devices.families import family
from optnet.devices.plls import MHZ
from optnet.devices.transceivers import analog_voltage
from optnet.plan import NodePlan
from optnet.plan.clocks import ClockPlan, buffers_refclk, clock_plan, refclk_port_name
from optnet.spec.models import BoardDesc

__all__ = [
    "NET_INSTANCE",
    "ClockConstraint",
    "ClockGroup",
    "ClockRef",
    "PinAssignment",
    "TopPort",
    "board_pins",
    "clock_constraints",
    "constraint_format",
    "led_map",
    "top_ports",
]


@dataclass(frozen=True)
class TopPort:
    """A port of the board top.

    Attributes
    ----------
    name : str
    direction : str
        ``"i"`` or ``"o"``.
    width : int
    pins : tuple of (str or None)
        Board-file package pin of each bit; ``None`` where the board file gives none.
    iostandard : str or None
    kind : str
        ``clock``, ``led``, ``uart``, ``refclk``, ``drive`` (a reference clock's oscillator control,
        held at ``level``), ``gt`` (transceiver serial pin) or ``lvds``.
    sites : tuple of (str or None)
        Transceiver channel site of each bit (``gt`` ports).
    what : str
        What the port is, in words (for comments).
    level : int or None
        The constant a ``drive`` port holds.
    voltage : str or None
        The transceiver supply setting a ``gt`` port's channels need (Stratix 10 above
        16 Gb/s: ``1_1V``, :func:`optnet.devices.transceivers.analog_voltage`).
    """

    name: str
    direction: str
    width: int
    pins: tuple[str | None, ...]
    iostandard: str | None
    kind: str
    sites: tuple[str | None, ...] = ()
    what: str = ""
    level: int | None = None
    voltage: str | None = None


@dataclass(frozen=True)
class PinAssignment:
    """One bit of a board top port and its pin.

    ``index`` is ``None`` for a one-bit port (a Verilog scalar: constraint files name it
    without a subscript).
    """

    port: str
    index: int | None
    pin: str | None
    iostandard: str | None
    kind: str
    site: str | None
    what: str
    voltage: str | None = None


def _differential_ports(board: BoardDesc) -> bool:
    """Whether the top exposes both wires of a differential pair: Xilinx instantiates a
    differential buffer on both; ECP5 (Yosys maps ILVDS/OLVDS onto the true pin) and Intel
    (Quartus places the complement) take the true pin only."""
    return board.vendor == "xilinx"


def top_ports(plan: NodePlan, board: BoardDesc, cp: ClockPlan | None = None
              ) -> tuple[TopPort, ...]:
    """The ports of ``plan``'s board top on ``board``, in declaration order.

    Naming: ``clk_ref`` (``clk_ref_p``/``clk_ref_n`` for a Xilinx differential clock) is
    the board clock; ``led`` the LEDs; ``uart_tx``/``uart_rx`` the bring-up kit's UART
    (:attr:`~optnet.plan.NodePlan.bringup` on a board with one); ``<board
    port>_refclk_p``/``_n`` a transceiver reference clock (named after the first board port
    using those pins;
    :func:`~optnet.plan.clocks.refclk_port_name`); every link port's pads keep the network
    module's names ``port<p>_<pad>`` (``txp``/``txn``/``rxp``/``rxn`` for transceiver lanes;
    ``clk``/``tx``/``rclk``/``rx`` with ``_p``/``_n`` for LVDS). Complement pins that the
    vendor places itself (ECP5, Intel) are left out.
    """
    cp = cp or clock_plan(plan, board)
    diff = _differential_ports(board)
    ports: list[TopPort] = []
    if cp.board_clock is None:
        ports.append(TopPort("clk_ref", "i", 1, (None,), None, "clock",
                             what="board clock (the board file lists none)"))
    else:
        clock = board.clocks[cp.board_clock]
        what = f"board clock '{cp.board_clock}'"
        if clock.p and diff:
            ports.append(TopPort("clk_ref_p", "i", 1, (clock.p,), clock.iostandard, "clock",
                                 what=what))
            ports.append(TopPort("clk_ref_n", "i", 1, (clock.n,), clock.iostandard, "clock",
                                 what=what))
        else:
            ports.append(TopPort("clk_ref", "i", 1, (clock.pin or clock.p,),
                                 clock.iostandard, "clock", what=what))
    if board.leds is not None:
        ports.append(TopPort("led", "o", len(board.leds.pins), tuple(board.leds.pins),
                             board.leds.iostandard, "led", what="status LEDs"))
    if board.uart is not None and plan.bringup:
        uart = board.uart
        ports.append(TopPort("uart_tx", "o", 1, (uart.tx,), uart.iostandard, "uart",
                             what="bring-up registers' UART, to the host"))
        ports.append(TopPort("uart_rx", "i", 1, (uart.rx,), uart.iostandard, "uart",
                             what="bring-up registers' UART, from the host"))
    seen = set()
    for port in plan.ports:
        if not buffers_refclk(port):
            continue
        name = refclk_port_name(plan, board, port.board_port)
        if name in seen:
            continue
        seen.add(name)
        rc = board.ports[port.board_port].refclk
        what = f"transceiver reference clock of '{port.board_port}'"
        ports.append(TopPort(f"{name}_p", "i", 1, (rc.p if rc else None,), None, "refclk",
                             what=what))
        if diff:
            ports.append(TopPort(f"{name}_n", "i", 1, (rc.n if rc else None,), None,
                                 "refclk", what=what))
        # The clock's oscillator controls (frequency select, output enable), held at the
        # levels the board file gives for the frequency it states.
        for k, drive in enumerate(rc.drive if rc else ()):
            ports.append(TopPort(f"{name}_ctl{k}", "o", 1, (drive.pin,), drive.iostandard,
                                 "drive", what=drive.what or f"control of {what}",
                                 level=drive.level))
    for port in plan.ports:
        bp = board.ports[port.board_port]
        lanes = [bp.lanes[i] for i in port.lanes]
        p = port.port
        if port.phy == "lvds":
            tx_std = bp.iostandard
            rx_std = bp.rx_iostandard or bp.iostandard
            clk = bp.clock
            what = f"LVDS link on '{port.board_port}'"
            pads = [("clk_p", "o", [clk.tx_p if clk else None], tx_std),
                    ("clk_n", "o", [clk.tx_n if clk else None], tx_std),
                    ("tx_p", "o", [lane.tx_p for lane in lanes], tx_std),
                    ("tx_n", "o", [lane.tx_n for lane in lanes], tx_std),
                    ("rclk_p", "i", [clk.rx_p if clk else None], rx_std),
                    ("rclk_n", "i", [clk.rx_n if clk else None], rx_std),
                    ("rx_p", "i", [lane.rx_p for lane in lanes], rx_std),
                    ("rx_n", "i", [lane.rx_n for lane in lanes], rx_std)]
            for pad, direction, pins, std in pads:
                if pad.endswith("_n") and not diff:
                    continue
                ports.append(TopPort(f"port{p}_{pad}", direction, len(pins), tuple(pins), std,
                                     "lvds", what=what))
            continue
        sites = tuple(lane.site for lane in lanes)
        voltage = analog_voltage(port.line_rate) if board.vendor == "intel" else None
        what = f"transceiver lanes {_lanes(port.lanes)} of '{port.board_port}'"
        pads = [("txp", "o", "tx_p"), ("txn", "o", "tx_n"), ("rxp", "i", "rx_p"),
                ("rxn", "i", "rx_n")]
        for pad, direction, key in pads:
            if pad.endswith("n") and not diff:
                continue
            pins = tuple(getattr(lane, key) for lane in lanes)
            ports.append(TopPort(f"port{p}_{pad}", direction, len(pins), pins, None, "gt",
                                 sites, what, voltage=voltage))
    return tuple(ports)


def led_map(plan: NodePlan, board: BoardDesc) -> tuple[tuple[str, int | None], ...]:
    """What each of the board's LEDs shows, LED 0 first, as (role, link): ``heartbeat``
    (the network clock divided to about 1 Hz, flickering while data arrives), ``link`` (link
    ``k`` up, ``plan.ports[k]``), ``links`` (links ``k`` and after all up, when the LEDs are
    too few for one each), ``none`` (no link left to show), ``trouble`` (with the bring-up
    kit: a packet dropped or a bring-up error counted) or ``dropped`` (without: a packet
    dropped). With ``n`` LEDs: LED 0 the heartbeat; with two, LED 1 all links; with three
    or more, the links between and the last ``trouble`` or ``dropped``."""
    n = 0 if board.leds is None else len(board.leds.pins)
    links = len(plan.ports)
    roles: list[tuple[str, int | None]] = [("heartbeat", None)]
    if n == 2:
        roles.append(("links", 0))
    elif n >= 3:
        slots = n - 2
        for i in range(slots):
            if i < slots - 1 or links <= slots:
                roles.append(("link", i) if i < links else ("none", None))
            else:
                roles.append(("links", i))
        roles.append(("trouble" if plan.bringup else "dropped", None))
    return tuple(roles[:n])


def _lanes(lanes: tuple[int, ...]) -> str:
    return str(lanes[0]) if len(lanes) == 1 else f"{lanes[0]}..{lanes[-1]}"


def board_pins(plan: NodePlan, board: BoardDesc, cp: ClockPlan | None = None
               ) -> tuple[PinAssignment, ...]:
    """Every bit of every board top port with its board-file pin (``None`` where the board
    file gives none), in port order."""
    out = []
    for tp in top_ports(plan, board, cp):
        for i in range(tp.width):
            out.append(PinAssignment(
                tp.name, None if tp.width == 1 else i, tp.pins[i], tp.iostandard, tp.kind,
                tp.sites[i] if tp.sites else None, tp.what, tp.voltage))
    return tuple(out)


# ------------------------------------------------------------------------ clock constraints


@dataclass(frozen=True)
class ClockConstraint:
    """A clock to create on a board top input port (``port``), or where ``pin`` is set, on
    that output pin of a primitive (``instance/pin`` in the board top), whose net is ``net``
    (``instance/name``, for constraint files that name nets)."""

    name: str
    port: str
    hz: Fraction
    pin: str = ""
    net: str = ""

    @property
    def period_ns(self) -> float:
        return float(Fraction(10**9) / self.hz)

    @property
    def mhz(self) -> float:
        return float(self.hz / MHZ)


@dataclass(frozen=True)
class ClockRef:
    """A clock, for clock-group constraints.

    ``kind`` is ``port`` (a clock created on an input port: ``name``; ``net`` the board top's
    net of its domain), ``pll`` (output ``index`` of a PLL; ``path`` is the output pin as
    ``instance/pin``, ``net`` the board top's net of the buffered clock, named after its
    clock domain: ``clk`` for the network's ``sync``, ``<domain>_clk`` for the others) or
    ``ip`` (a clock made inside vendor IP: ``path`` is an output pin of the IP instance, or
    the instance whose clocks a pattern matches) or ``pin`` (a clock that a primitive of the
    board top gives, created by its :class:`ClockConstraint` ``name``: ``path`` is the
    primitive's output pin as ``instance/pin``, ``net`` the board top's net of it).
    """

    kind: str
    name: str
    path: str = ""
    net: str = ""
    index: int = 0


@dataclass(frozen=True)
class ClockGroup:
    """Clocks related to each other; every group is asynchronous to every other."""

    name: str
    clocks: tuple[ClockRef, ...]


#: Instance name of the network module in the board top.
NET_INSTANCE = "net"

#: Instance name of the bring-up kit in the board top, and of the JTAG user-register
#: primitive in the kit (:func:`optnet.hw.jtag.user_tap`).
KIT_INSTANCE, JTAG_TAP_INSTANCE = "bringup", "jtag_tap"

#: The clocks each JTAG user-register primitive (:attr:`Family.jtag
#: <optnet.devices.families.Family.jtag>`) gives the kit: (output pin, the kit's net of it).
#: Virtex-5's BSCAN_VIRTEX5 has no TCK output: the gated DRCK shifts, the UPDATE strobe
#: latches (:mod:`optnet.hw.jtag`).
JTAG_CLOCKS = {"bscane2": (("TCK", "jtag_tck"),),
               "bscan_virtex5": (("DRCK", "jtag_tck"), ("UPDATE", "jtag_update_clk")),
               "jtagg": (("JTCK", "jtag_tck"),),
               "virtual_jtag": (("tck", "jtag_tck"),)}

#: The Intel device's TCK port, which Quartus adds to every design with a virtual JTAG (an SLD
#: node; Intel 683705): the port the constraints create the JTAG bridge's clock on.
INTEL_TCK_PORT = "altera_reserved_tck"

#: The TAP clock the constraints time the JTAG bridge at: 33.3 MHz, above the 30 MHz of the
#: fastest usual cables (Digilent JTAG-HS2/HS3, FT2232H/FT4232H adapters; Xilinx Platform
#: Cable USB II and Intel USB-Blaster II run at 24 MHz at most), below every family's TCK
#: limit (66 MHz on 7 series, DS183).
JTAG_TCK_HZ = Fraction(100_000_000, 3)


def clock_constraints(plan: NodePlan, board: BoardDesc, cp: ClockPlan | None = None
                      ) -> tuple[tuple[ClockConstraint, ...], tuple[ClockGroup, ...]]:
    """The clocks to create on board top ports, and the asynchronous clock groups.

    Groups: the network clock; the board clock (power-on reset domain, and init clock when
    it is the board clock); the PLL's init clock; each LVDS transmit clock; each LVDS
    receive (forwarded) clock; each link adapter's user clock (Aurora ``user_clk_out``,
    the Virtex-5 GTP clock module, SerialLite III's and Interlaken's clocks). These are the
    domains the link layers' and adapters' asynchronous FIFOs and reset synchronisers
    cross between (:mod:`optnet.hw.link`, :mod:`optnet.hw.phy`).
    """
    cp = cp or clock_plan(plan, board)
    ports = {tp.name: tp for tp in top_ports(plan, board, cp)}
    clocks = []
    ref_port = "clk_ref_p" if "clk_ref_p" in ports else "clk_ref"
    clocks.append(ClockConstraint("clk_ref", ref_port, cp.ref_hz))
    for tp in ports.values():
        if tp.kind == "refclk" and tp.name.endswith("_p"):
            bp = tp.name[:-len("_refclk_p")]
            rc = board.ports[bp].refclk
            if rc is not None:
                clocks.append(ClockConstraint(tp.name[:-2], tp.name, Fraction(rc.freq.value)))
    for port in plan.ports:
        if port.phy == "lvds":
            clocks.append(ClockConstraint(f"port{port.port}_rclk", f"port{port.port}_rclk_p",
                                          Fraction(port.line_rate, 2)))

    def pll_ref(name: str) -> ClockRef:
        out = cp.pll.output(name)
        index = cp.pll.outputs.index(out)
        net = "clk" if name == "net" else f"{name}_clk"
        return ClockRef("pll", name, f"{cp.pll.instance}/{out.pin}", net, index)

    groups = [ClockGroup("net", (pll_ref("net"),)),
              ClockGroup("clk_ref", (ClockRef("port", "clk_ref", net="ref_clk"),))]
    if cp.init_source == "pll":
        groups.append(ClockGroup("init", (pll_ref("init"),)))
    for name in dict.fromkeys(cp.lvds_clocks.values()):
        groups.append(ClockGroup(name, (pll_ref(name),)))
    for name in dict.fromkeys(cp.sl3_clocks.values()):
        groups.append(ClockGroup(name, (pll_ref(name),)))
    for port in plan.ports:
        p = port.port
        if port.phy == "lvds":
            groups.append(ClockGroup(f"port{p}_rclk", (ClockRef("port", f"port{p}_rclk"),)))
        elif port.phy in ("aurora_8b10b", "aurora_64b66b") and board.family != "virtex5":
            if port.xcvr is not None and port.xcvr.role == "slave":
                continue        # clocked by its master's user clock, in the master's group
            groups.append(ClockGroup(f"port{p}_user", (ClockRef(
                "ip", f"port{p}_user", f"{NET_INSTANCE}/phy{p}/ip/user_clk_out"),)))
        elif port.phy in ("serial_lite_3", "interlaken"):
            groups.append(ClockGroup(f"port{p}_ip", (ClockRef(
                "ip", f"port{p}_ip", f"{NET_INSTANCE}/phy{p}/ip"),)))
    for i, gt in enumerate(cp.gt_plls):
        groups.append(ClockGroup(f"gt{i}", tuple(
            ClockRef("pll", f"gt{i}_{o.name}", f"{gt.instance}/{o.pin}", f"gt{i}_{o.name}_clk",
                     k) for k, o in enumerate(gt.outputs))))
    tap = family(board.family).jtag if plan.bringup else None
    if tap is not None:
        # The JTAG bridge's clocks; on Intel the TAP clock is the device's own TCK port.
        refs = []
        for pin, net in JTAG_CLOCKS[tap]:
            name = "jtag_update" if pin == "UPDATE" else "jtag_tck"
            if tap == "virtual_jtag":
                clocks.append(ClockConstraint(name, INTEL_TCK_PORT, JTAG_TCK_HZ))
            else:
                clocks.append(ClockConstraint(
                    name, "", JTAG_TCK_HZ, pin=f"{KIT_INSTANCE}/{JTAG_TAP_INSTANCE}/{pin}",
                    net=f"{KIT_INSTANCE}/{net}"))
            refs.append(ClockRef("pin", name, f"{KIT_INSTANCE}/{JTAG_TAP_INSTANCE}/{pin}",
                                 f"{KIT_INSTANCE}/{net}"))
        groups.append(ClockGroup("jtag", tuple(refs)))
    return tuple(clocks), tuple(groups)


def constraint_format(board: BoardDesc) -> str:
    """The constraint file kind of ``board``
    (:attr:`optnet.devices.families.Family.constraints`): ``xdc`` (Vivado), ``ucf`` (ISE,
    for Virtex-5, which Vivado does not support), ``qsf`` (Quartus, with an ``sdc``) or
    ``lpf`` (Lattice, as nextpnr-ecp5 reads it).

    Raises
    ------
    ValueError
        For a family optnet does not know.
    """
    return family(board.family).constraints
