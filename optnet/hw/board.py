"""The board top: one node's network on its FPGA's pins.

:class:`BoardTop` wraps the network module that :class:`~optnet.hw.top.NodeTop` lowers to
(instantiated as a black box by its module name, ``plan.node``) in the clocking, reset,
status and pin logic of one board, so that its ports are FPGA pins only and a vendor tool
can take ``<node>_top`` to a bitstream. What it needs from the board is planned before any
hardware is built, as data: the clocks and PLL settings by
:func:`optnet.plan.clocks.clock_plan` (the clocking rules are there), the ports and the pin
of every bit by :func:`optnet.plan.pins.top_ports`. This module only builds the Amaranth
design from them.

Reset
-----
A power-on reset counter in the board clock's domain starts when the FPGA is configured
and restarts while the PLL is unlocked; it holds :data:`POR_CYCLES` board-clock cycles
after lock. Its output resets the link adapters (which synchronise it themselves) and,
through an :class:`~amaranth.lib.cdc.ResetSynchronizer` per domain, the network and the
LVDS transmit domains.

Endpoints
---------
With :attr:`~optnet.plan.NodePlan.bringup` (the default) the bring-up kit drives the
endpoints (:class:`~optnet.hw.bringup.BringUp`: traffic to every other node, checked on
arrival, counters and the registers a host reads over the FPGA's JTAG port and, on a board
with one, a UART); without, they are idle (:func:`attach_endpoint`).

Status LEDs
-----------
:func:`optnet.plan.pins.led_map` plans what each LED shows: LED 0 a heartbeat (the network
clock divided down to about 1 Hz; it flickers while data arrives), the links' state, and
the last LED trouble (a dropped packet, or with the bring-up kit any error it counted).
Besides showing the state, the LEDs keep the network observable, so vendor synthesis does
not trim it away.
"""

from __future__ import annotations

import math
from fractions import Fraction

from amaranth.hdl import (
    Cat,
    ClockDomain,
    ClockSignal,
    Const,
    Instance,
    Module,
    ResetSignal,
    Signal,
    Value,
)
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer, ResetSynchronizer
from amaranth.lib.wiring import In, Out

from optnet.devices.families import family
from optnet.devices.plls import MHZ
from optnet.hw.bringup import BringUp
from optnet.hw.endpoint import axis_rx_layout, axis_tx_layout
from optnet.hw.verilog import ports_of
from optnet.plan import NodePlan
from optnet.plan.clocks import IOPLL_MODULE, PllSetting, clock_plan, refclk_port_name
from optnet.plan.pins import KIT_INSTANCE, NET_INSTANCE, led_map, top_ports
from optnet.spec.models import BoardDesc

__all__ = ["POR_CYCLES", "BoardTop", "attach_endpoint", "network_ports"]

#: Board-clock cycles the power-on reset is held after the PLL locks.
POR_CYCLES = 1024


def attach_endpoint(m: Module, plan: NodePlan, index: int, tx: stream.Interface,
                    rx: stream.Interface) -> Value:
    """Attach the user logic of endpoint ``index`` (in the network clock domain ``sync``).

    **This is the one place the board top's per-endpoint logic goes** when the bring-up
    kit (:class:`~optnet.hw.bringup.BringUp`) does not drive the endpoints.

    Parameters
    ----------
    m : Module
        The board top's module; add submodules and statements to it.
    plan : NodePlan
    index : int
        Endpoint number (``plan.endpoints[index]``, ``plan.endpoint_names[index]``).
    tx : stream.Interface
        The endpoint's ``s_axis``, to drive (payload layout
        :func:`~optnet.hw.endpoint.axis_tx_layout`).
    rx : stream.Interface
        The endpoint's ``m_axis``, to consume (:func:`~optnet.hw.endpoint.axis_rx_layout`).

    Returns
    -------
    Value
        One bit the heartbeat LED is XORed with (a status the user logic wants seen).
    """
    # For now: send nothing, take everything. The running parity of what arrives keeps the
    # endpoint's receive path observable (and shows as flicker on the heartbeat LED).
    name = plan.endpoint_names[index]
    m.d.comb += [tx.valid.eq(0), Value.cast(tx.payload).eq(0), rx.ready.eq(1)]
    parity = Signal(name=f"{name}_rx_parity")
    with m.If(rx.valid & rx.ready):
        m.d.sync += parity.eq(parity ^ Value.cast(rx.payload).xor())
    return parity


def network_ports(plan: NodePlan) -> list[tuple[str, str, int]]:
    """(Verilog port name, ``"i"``/``"o"``, width) of every port of the network module, as
    :func:`optnet.hw.verilog.to_verilog` names them: the ``sync`` domain's ``clk`` and
    ``rst``, then the component's (:func:`~optnet.hw.verilog.ports_of`: an endpoint's
    streams as AXI4-Stream signals, ``<endpoint>_s_axis_tdata`` and so on)."""
    from optnet.hw.top import NodeTop
    top = NodeTop(plan)
    ports = [("clk", "i", 1), ("rst", "i", 1)]
    ports += [(name, "i" if inp else "o", len(value))
              for name, inp, value in ports_of(top.signature, top)]
    # The component (and its adapters) only give a port list here; none is elaborated.
    for obj in (top, *top._adapters.values()):
        obj._MustUse__silence = True
    return ports


class BoardTop(wiring.Component):
    """One node's network on its board: clocks, reset, endpoints, LEDs and pins.

    The network is the module ``plan.node`` (from :class:`~optnet.hw.top.NodeTop`),
    instantiated as a black box named ``net``; its ports are found from ``NodeTop(plan)``.
    Every port of the board top is an FPGA pin (see :func:`optnet.plan.pins.top_ports`).

    Parameters
    ----------
    plan : NodePlan
    board : BoardDesc
        The node's board (``plan.board`` names it).

    Attributes
    ----------
    clock_plan : optnet.plan.clocks.ClockPlan

    Raises
    ------
    optnet.plan.clocks.PllError
        When the clocks cannot be made on the board.
    """

    def __init__(self, plan: NodePlan, board: BoardDesc):
        if board.name != plan.board:
            raise ValueError(f"Node '{plan.node}' sits on board '{plan.board}', not on "
                             f"'{board.name}'.")
        self.plan = plan
        self.board = board
        self.clock_plan = clock_plan(plan, board)
        self.ports = top_ports(plan, board, self.clock_plan)
        super().__init__({tp.name: (In if tp.direction == "i" else Out)(tp.width)
                          for tp in self.ports})

    # -- clocking primitives ----------------------------------------------------------------

    def _pll(self, m: Module, setting: PllSetting, clkin: Value, rst: Value
             ) -> tuple[dict[str, Value], Signal]:
        """Instantiate ``setting``; returns its clocks by request name and its lock."""
        kind = setting.kind
        locked = Signal(name=f"{setting.instance}_locked")
        raw = {o.name: Signal(name=f"{setting.instance}_{o.name}") for o in setting.outputs}
        pins = {o.pin: raw[o.name] for o in setting.outputs}
        limits = setting.limits
        args: dict[str, object] = {f"p_{k}": v for k, v in setting.parameters.items()}
        if kind == "IOPLL":
            args = {"i_refclk": clkin, "i_rst": rst, "o_locked": locked}
            for pin in limits.outputs[:len(setting.outputs)]:
                args[f"o_{pin}"] = pins[pin]
            m.submodules[setting.instance] = Instance(IOPLL_MODULE, **args)
            return dict(raw), locked
        if kind == "EHXPLLL":
            clkop = pins["CLKOP"]
            args.update({"i_CLKI": clkin, "i_CLKFB": clkop, "i_RST": rst,
                         "i_STDBY": Const(0), "i_PHASESEL0": Const(0),
                         "i_PHASESEL1": Const(0), "i_PHASEDIR": Const(1),
                         "i_PHASESTEP": Const(1), "i_PHASELOADREG": Const(1),
                         "i_PLLWAKESYNC": Const(0), "o_LOCK": locked})
            for pin in limits.outputs:
                args[f"i_EN{pin}"] = Const(0)
                args[f"o_{pin}"] = pins.get(pin, Signal(name=f"{setting.instance}_{pin}_nc"))
            for pin in ("INTLOCK", "REFCLK", "CLKINTFB"):
                args[f"o_{pin}"] = Signal(name=f"{setting.instance}_{pin}_nc")
            # nextpnr takes the input and output frequencies from these attributes.
            args["a_FREQUENCY_PIN_CLKI"] = _attr_mhz(setting.input_hz)
            for o in setting.outputs:
                args[f"a_FREQUENCY_PIN_{o.pin}"] = _attr_mhz(o.achieved_hz)
            # Loop filter settings ecppll writes for every configuration.
            args.update({"a_ICP_CURRENT": "12", "a_LPF_RESISTOR": "8",
                         "a_MFG_ENABLE_FILTEROPAMP": "1", "a_MFG_GMCREF_SEL": "2"})
            m.submodules[setting.instance] = Instance("EHXPLLL", **args)
            return dict(raw), locked
        # Xilinx: internal feedback (CLKFBOUT straight to CLKFBIN) and a BUFG per output.
        fb = Signal(name=f"{setting.instance}_fb")
        args.update({"i_CLKFBIN": fb, "o_CLKFBOUT": fb, "i_RST": rst, "o_LOCKED": locked})
        if kind == "PLL_BASE":
            args["i_CLKIN"] = clkin
        else:
            args.update({"i_CLKIN1": clkin, "i_PWRDWN": Const(0),
                         "o_CLKFBOUTB": Signal(name=f"{setting.instance}_fbb_nc")})
            for i in range(4):
                args[f"o_CLKOUT{i}B"] = Signal(name=f"{setting.instance}_clkout{i}b_nc")
        for pin in limits.outputs:
            args[f"o_{pin}"] = pins.get(pin, Signal(name=f"{setting.instance}_{pin}_nc"))
        m.submodules[setting.instance] = Instance(kind, **args)
        clocks = {}
        for o in setting.outputs:
            buffered = Signal(name=_clock_net(setting.instance, o.name))
            m.submodules[f"{setting.instance}_{o.name}_bufg"] = Instance(
                "BUFG", i_I=raw[o.name], o_O=buffered)
            clocks[o.name] = buffered
        return clocks, locked

    def _ref_clock(self, m: Module) -> tuple[Value, Value]:
        """(clock for the fabric, clock for the PLL input) from the board clock pins."""
        if self.board.vendor != "xilinx":
            return self.clk_ref, self.clk_ref
        if hasattr(self, "clk_ref_p"):
            pad = Signal(name="clk_ref_ibuf")
            buf = "IBUFGDS" if self.board.family == "virtex5" else "IBUFDS"
            m.submodules.clk_ref_ibuf = Instance(buf, i_I=self.clk_ref_p, i_IB=self.clk_ref_n,
                                                 o_O=pad)
        else:
            pad = self.clk_ref
        fabric = Signal(name="clk_ref_buf")
        m.submodules.clk_ref_bufg = Instance("BUFG", i_I=pad, o_O=fabric)
        return fabric, fabric

    # -- elaboration --------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        plan, board, cp = self.plan, self.board, self.clock_plan

        ref, pll_in = self._ref_clock(m)
        m.domains.ref = ClockDomain("ref", reset_less=True)
        m.d.comb += ClockSignal("ref").eq(ref)

        clocks, locked = self._pll(m, cp.pll, pll_in, Const(0))

        # Power-on reset: counts board-clock cycles once the PLL is locked.
        locked_ref = Signal()
        m.submodules.locked_sync = FFSynchronizer(locked, locked_ref, o_domain="ref")
        count = Signal(range(POR_CYCLES + 1))
        por = Signal(init=1)
        with m.If(~locked_ref):
            m.d.ref += count.eq(0)
        with m.Elif(count != POR_CYCLES):
            m.d.ref += count.eq(count + 1)
        m.d.ref += por.eq(~locked_ref | (count != POR_CYCLES))

        m.domains.sync = sync = ClockDomain("sync")
        # Flattened, the network clock's net has a name per module it reaches, and Yosys
        # keeps the name of the wire with attributes, else the first in name order (the
        # bring-up kit's, "bringup.check_app.clk"): the attribute keeps "clk", the name
        # reports and nextpnr's timing give the clock.
        sync.clk.attrs["keep"] = 1
        m.d.comb += ClockSignal("sync").eq(clocks["net"])
        m.submodules.rst_sync = ResetSynchronizer(por, domain="sync")
        # Clocks without logic of their own in the top get a domain anyway, so that their
        # nets have stable names (<domain>_clk) for constraint files that name nets (UCF).
        if cp.init_source != "none":
            m.domains.init = ClockDomain("init", reset_less=True)
            m.d.comb += ClockSignal("init").eq(ref if cp.init_source == "board"
                                               else clocks["init"])

        lvds_resets = {}
        for name in dict.fromkeys(cp.lvds_clocks.values()):
            m.domains += ClockDomain(name)
            m.d.comb += ClockSignal(name).eq(clocks[name])
            m.submodules[f"rst_{name}"] = ResetSynchronizer(por, domain=name)
            lvds_resets[name] = ResetSignal(name)

        gt = []
        for i, setting in enumerate(cp.gt_plls):
            first = next(p for p, g in cp.gt_groups.items() if g == i)
            tx_lock = Signal(name=f"gt{i}_tx_lock")
            tx_out_clk = Signal(name=f"gt{i}_tx_out_clk")
            # TXOUTCLK reaches the PLL through a global buffer, as in the core's example
            # clock module (a BUFG may always drive a PLL's CLKIN).
            tx_out_buf = Signal(name=f"gt{i}_tx_out_clk_buf")
            m.submodules[f"gt{i}_tx_out_bufg"] = Instance("BUFG", i_I=tx_out_clk,
                                                          o_O=tx_out_buf)
            gclocks, glocked = self._pll(m, setting, tx_out_buf, ~tx_lock)
            for name, clk in list(gclocks.items()):
                dom = f"gt{i}_{name}"
                m.domains += ClockDomain(dom, reset_less=True)
                m.d.comb += ClockSignal(dom).eq(clk)
                gclocks[name] = ClockSignal(dom)
            gt.append((first, tx_lock, tx_out_clk, gclocks, glocked))

        # Intel transceiver PLLs: each instance clocks the lanes the transceiver plan gives it.
        tx_serial = {}
        for tx in cp.tx_plls:
            lanes = len(next(p for p in plan.ports if p.port == tx.port).lanes)
            serials, locks = [None] * lanes, []
            for k, placed in enumerate(tx.placement):
                inst = f"port{tx.port}_atx_pll{k}"
                serial, lock = Signal(name=f"{inst}_serial"), Signal(name=f"{inst}_locked")
                m.submodules[inst] = Instance(
                    tx.module, i_pll_refclk0=getattr(self, f"{tx.refclk_port}_p"),
                    o_pll_locked=lock, o_pll_cal_busy=Signal(name=f"{inst}_cal_busy_nc"),
                    **{f"o_{tx.output_port}": serial})
                for lane in placed.lanes:
                    serials[lane] = serial
                locks.append(lock)
            tx_serial[tx.port] = (Cat(*serials), Cat(*locks).all())

        # -- the network --------------------------------------------------------------------
        args: dict[str, object] = {}
        sigs: dict[str, Signal] = {}
        for name, direction, width in network_ports(plan):
            sig = Signal(width, name=f"net_{name}")
            sigs[name] = sig
            args[f"{direction}_{name}"] = sig
        m.submodules[NET_INSTANCE] = Instance(plan.node, **args)
        m.d.comb += [sigs["clk"].eq(ClockSignal("sync")), sigs["rst"].eq(ResetSignal("sync"))]

        # -- the endpoints: the bring-up kit, or idle ---------------------------------------
        kit = None
        if plan.bringup:
            uart = board.uart
            divisor = None if uart is None else round(float(self.clock_plan.network_hz)
                                                      / uart.baud)
            m.submodules[KIT_INSTANCE] = kit = BringUp(plan, divisor, family(board.family).jtag)
            m.d.comb += kit.watch(sigs.__getitem__)
            if divisor is not None:
                m.d.comb += [self.uart_tx.eq(kit.uart_tx), kit.uart_rx.eq(self.uart_rx)]
        status = []
        for i, (name, cfg) in enumerate(zip(plan.endpoint_names, plan.endpoints, strict=True)):
            tx = stream.Signature(axis_tx_layout(cfg)).create(path=(name, "s_axis"))
            rx = stream.Signature(axis_rx_layout(cfg)).create(path=(name, "m_axis"))
            m.d.comb += [
                *(sigs[f"{name}_s_axis_{f}"].eq(tx.payload[f]) for f, _ in tx.payload.shape()),
                sigs[f"{name}_s_axis_tvalid"].eq(tx.valid),
                tx.ready.eq(sigs[f"{name}_s_axis_tready"]),
                *(rx.payload[f].eq(sigs[f"{name}_m_axis_{f}"]) for f, _ in rx.payload.shape()),
                rx.valid.eq(sigs[f"{name}_m_axis_tvalid"]),
                sigs[f"{name}_m_axis_tready"].eq(rx.ready),
            ]
            if kit is None:
                status.append(attach_endpoint(m, plan, i, tx, rx))
            else:
                wiring.connect(m, getattr(kit, f"{name}_tx"), wiring.flipped(tx))
                wiring.connect(m, rx, getattr(kit, f"{name}_rx"))
        if kit is not None:
            status.append(kit.activity)

        # -- link adapter pads ----------------------------------------------------------------
        gt_refclk: dict[str, Signal] = {}
        for port in plan.ports:
            p = port.port
            refclk = refclk_port_name(plan, board, port.board_port)

            def pad(name: str, _p=p) -> Signal:
                return sigs[f"port{_p}_{name}"]

            def has(name: str, _p=p) -> bool:
                return f"port{_p}_{name}" in sigs

            if port.phy == "lvds":
                dom = cp.lvds_clocks[p]
                m.d.comb += [pad("clk_in").eq(ClockSignal(dom)), pad("rst_in").eq(lvds_resets[dom])]
                for name in ("clk", "tx"):
                    for side in ("_p", "_n"):
                        if hasattr(self, f"port{p}_{name}{side}"):
                            m.d.comb += getattr(self, f"port{p}_{name}{side}").eq(pad(name + side))
                for name in ("rclk", "rx"):
                    for side in ("_p", "_n"):
                        if hasattr(self, f"port{p}_{name}{side}"):
                            m.d.comb += pad(name + side).eq(getattr(self, f"port{p}_{name}{side}"))
                        else:
                            # The complement the vendor places itself; the buffer ignores it.
                            m.d.comb += pad(name + side).eq(0)
                continue
            m.d.comb += [getattr(self, f"port{p}_txp").eq(pad("txp")),
                         pad("rxp").eq(getattr(self, f"port{p}_rxp")),
                         pad("init_clk").eq(ClockSignal("init")), pad("reset").eq(por)]
            if has("txn"):
                m.d.comb += [getattr(self, f"port{p}_txn").eq(pad("txn")),
                             pad("rxn").eq(getattr(self, f"port{p}_rxn"))]
            if has("gt_refclk_p"):
                m.d.comb += pad("gt_refclk_p").eq(getattr(self, f"{refclk}_p"))
            if has("gt_refclk_n"):
                m.d.comb += pad("gt_refclk_n").eq(getattr(self, f"{refclk}_n"))
            if has("gt_refclk"):
                # Virtex-5: the core takes its reference clock already buffered (UG196: an
                # IBUFDS drives the GTP_DUAL's CLKIN), one buffer per reference clock.
                if refclk not in gt_refclk:
                    gt_refclk[refclk] = Signal(name=f"{refclk}_ibuf")
                    m.submodules[f"{refclk}_ibufds"] = Instance(
                        "IBUFDS", i_I=getattr(self, f"{refclk}_p"),
                        i_IB=getattr(self, f"{refclk}_n"), o_O=gt_refclk[refclk])
                m.d.comb += pad("gt_refclk").eq(gt_refclk[refclk])
            if has("user_clk") and p in cp.gt_groups:
                first, tx_lock, tx_out_clk, gclocks, glocked = gt[cp.gt_groups[p]]
                m.d.comb += [pad("user_clk").eq(gclocks["user"]),
                             pad("sync_clk").eq(gclocks["sync"]),
                             pad("pll_not_locked").eq(~glocked)]
                if p == first:
                    m.d.comb += [tx_out_clk.eq(pad("tx_out_clk")), tx_lock.eq(pad("tx_lock"))]
            elif has("user_clk"):
                m.d.comb += pad("user_clk").eq(clocks[cp.sl3_clocks[p]])
            if has("tx_serial_clk"):
                serial, tlocked = tx_serial[p]
                m.d.comb += [pad("tx_serial_clk").eq(serial), pad("tx_pll_locked").eq(tlocked)]

        # -- reference clock controls: held at the board file's levels ---------------------
        for tp in self.ports:
            if tp.kind == "drive":
                m.d.comb += getattr(self, tp.name).eq(tp.level)

        # -- status LEDs ----------------------------------------------------------------------
        if board.leds is not None:
            leds = self._leds(m, sigs, status, None if kit is None else kit.trouble)
            m.d.comb += self.led.eq(~leds if board.leds.active_low else leds)
        return m

    def _leds(self, m: Module, sigs: dict[str, Signal], status: list[Value],
              trouble: Value | None) -> Value:
        # what each LED shows is planned (optnet.plan.pins.led_map); here, its signal
        links = len(self.plan.ports)
        bits = max(1, round(math.log2(max(2, float(self.clock_plan.network_hz)))))
        beat = Signal(bits)
        m.d.sync += beat.eq(beat + 1)
        heartbeat = beat[-1]
        for s in status:
            heartbeat = heartbeat ^ s
        link_up = sigs["link_up"][:links] if links else Const(1, 1)
        last = Signal()
        m.d.sync += last.eq((sigs["dropped"] != 0) if trouble is None else trouble)
        shown = {"heartbeat": lambda k: heartbeat, "link": lambda k: link_up[k],
                 "links": lambda k: link_up[k:].all(), "none": lambda k: Const(0, 1),
                 "trouble": lambda k: last, "dropped": lambda k: last}
        return Cat(*(shown[role](k) for role, k in led_map(self.plan, self.board)))


def _clock_net(instance: str, name: str) -> str:
    """Name of the buffered clock net of PLL output ``name`` in the board top."""
    prefix = "" if instance == "pll" else instance.replace("gt_pll", "gt") + "_"
    return f"clk_{prefix}{name}"


def _attr_mhz(hz: Fraction) -> str:
    text = f"{float(hz) / MHZ:.6f}".rstrip("0")
    return text + "0" if text.endswith(".") else text

