"""A register interface over the FPGA's own JTAG port: how a host reads a node's bring-up
counters on any board, with or without a UART.

Every family optnet makes board tops for has a primitive that gives user logic a data
register of the FPGA's TAP, selected by a user instruction
(:attr:`optnet.devices.families.Family.jtag` names it; :func:`user_tap` instantiates it):
Xilinx ``BSCANE2`` (7 series, UltraScale+; UG953, UG974) and ``BSCAN_VIRTEX5`` (UG190 /
the Virtex-5 Libraries Guide), Lattice ``JTAGG`` (ECP5, instruction ER1 = 0x32; FPGA
Libraries Reference Guide) and Intel's Virtual JTAG (``sld_virtual_jtag``, reached
through the SLD hub; Virtual JTAG Intel FPGA IP User Guide 683705). The host side is
:mod:`optnet.emit.host`'s scripts for OpenOCD and Quartus' ``quartus_stp``.

Protocol
--------
One data register of :data:`DR_BITS` bits, shifted least significant bit first:

====== ============================== =============================================
bits   shifted in                     captured (what the last command did)
====== ============================== =============================================
0-31   data to write                  the register read (a write: the data written)
32-47  register address               its address
48     1: write, 0: read              its write bit
49     1: start the command ("go")    1: it has completed ("done")
====== ============================== =============================================

A DR scan whose ``go`` bit is set starts its command at Update-DR; a scan with ``go``
clear starts nothing, so a host polls with zeros until a capture shows ``done`` and the
address it asked for (the command completes in a few network clock cycles and a few TCK
cycles: the host idles a few TCK cycles in Run-Test/Idle before its first poll). A read
of an address with no register answers 0, as over the UART (:mod:`optnet.hw.uart`).

Clock domains
-------------
The register shifts in the ``jtag`` domain (the TAP's clock: TCK, or on Virtex-5, which
gives no TCK, the gated DRCK). A command is latched at Update-DR in ``update_domain``:
``jtag`` again, with the TAP's Update-DR state as an enable, or on Virtex-5 a domain of
its own clocked by the primitive's UPDATE output, because DRCK does not tick in Update-DR.
The command crosses into the network clock (``sync``) by a toggle: its fields are held
from Update-DR until the next command and pass through two-stage synchronisers, the
toggle through three, so the fields have settled when the toggle arrives; the result
comes back the same way. Every crossing so ends at a synchroniser's first stage
(:mod:`optnet.emit.cdc` lists them). The handshake's network-side registers are
reset-less, so a network reset in the middle of a command neither repeats nor loses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Const, Instance, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from optnet.hw.uart import RegisterBus
from optnet.plan.pins import JTAG_CLOCKS, JTAG_TAP_INSTANCE

__all__ = ["ADDR_BITS", "DATA_BITS", "DR_BITS", "JTAG_PRIMITIVES", "TAP_KINDS",
           "VIRTUAL_JTAG_INDEX", "JtagBridge", "JtaggAdapter", "Tap", "user_tap"]

#: Bits of a register's data and address, and of the whole data register.
DATA_BITS, ADDR_BITS = 32, 16
DR_BITS = DATA_BITS + ADDR_BITS + 2

#: The SLD hub index of the Intel virtual JTAG instance (``sld_instance_index``).
VIRTUAL_JTAG_INDEX = 0

#: The primitive's module name, by :attr:`~optnet.devices.families.Family.jtag` kind.
JTAG_PRIMITIVES = {"bscane2": "BSCANE2", "bscan_virtex5": "BSCAN_VIRTEX5", "jtagg": "JTAGG",
                   "virtual_jtag": "sld_virtual_jtag"}

#: The user-register primitives, by :attr:`~optnet.devices.families.Family.jtag` kind:
#: whether Update-DR needs a clock domain of its own (the primitive gives no TCK, so two
#: clocks).
TAP_KINDS = {kind: len(clocks) > 1 for kind, clocks in JTAG_CLOCKS.items()}


class JtagBridge(wiring.Component):
    """Register reads and writes from JTAG data-register scans (module docstring).

    Parameters
    ----------
    update_domain : str
        The domain Update-DR acts in: ``"jtag"`` (``update`` is then the Update-DR state,
        an enable in the TAP clock's domain) or a domain clocked by the TAP's Update-DR
        strobe (``update`` then qualifies each of its edges).

    Members
    -------
    capture, shift, update : In(1)
        The TAP is in Capture-DR, Shift-DR or Update-DR with this register selected,
        sampled at the ``jtag`` domain's (``update``: ``update_domain``'s) clock edges.
    tdi : In(1), tdo : Out(1)
        The TAP's serial data.
    busy : In(1)
        Another bus master accesses the registers this cycle; the bridge waits for a free
        cycle.
    bus : Out(RegisterBus())
        In the network clock's domain (``sync``).
    """

    def __init__(self, update_domain: str = "jtag"):
        self.update_domain = update_domain
        super().__init__({"capture": In(1), "shift": In(1), "update": In(1), "tdi": In(1),
                          "tdo": Out(1), "busy": In(1), "bus": Out(RegisterBus())})

    def elaborate(self, platform):
        m = Module()
        upd = m.d[self.update_domain]
        width = DATA_BITS + ADDR_BITS + 1       # a command, and a result, without go/done

        # -- TAP side ---------------------------------------------------------------------
        shreg = Signal(DR_BITS)
        command = Signal(width)                 # held from Update-DR to the next command
        request = Signal()                      # toggles with every command
        result_tap, ack_tap = Signal(width), Signal()
        m.d.comb += self.tdo.eq(shreg[0])
        with m.If(self.capture):
            m.d.jtag += shreg.eq(Cat(result_tap, ack_tap == request))
        with m.Elif(self.shift):
            m.d.jtag += shreg.eq(Cat(shreg[1:], self.tdi))
        with m.If(self.update & shreg[-1]):
            upd += [command.eq(shreg[:width]), request.eq(~request)]

        # -- network side -----------------------------------------------------------------
        command_net, request_net = Signal(width), Signal()
        m.submodules.command_sync = FFSynchronizer(command, command_net, o_domain="sync")
        m.submodules.request_sync = FFSynchronizer(request, request_net, o_domain="sync",
                                                   stages=3)
        result, ack = Signal(width, reset_less=True), Signal(reset_less=True)
        data, addr = command_net[:DATA_BITS], command_net[DATA_BITS:DATA_BITS + ADDR_BITS]
        write = command_net[-1]
        bus = self.bus
        m.d.comb += [bus.addr.eq(addr), bus.w_data.eq(data)]
        with m.If((request_net != ack) & ~self.busy):
            m.d.comb += [bus.w_en.eq(write), bus.r_en.eq(~write)]
            m.d.sync += [result.eq(Cat(Mux(write, data, bus.r_data), addr, write)),
                         ack.eq(request_net)]
        m.submodules.result_sync = FFSynchronizer(result, result_tap, o_domain="jtag")
        m.submodules.ack_sync = FFSynchronizer(ack, ack_tap, o_domain="jtag", stages=3)
        return m


class JtaggAdapter(wiring.Component):
    """The bridge's view of an ECP5 ``JTAGG`` on ER1: Capture-DR, Shift-DR and Update-DR as
    enables for the TCK rising edge, and the data bit to shift in.

    The primitive's outputs change just after a TCK rising edge: its TAP state (``JCE1``,
    high in Capture-DR and Shift-DR while ER1 is the instruction; ``JSHIFT`` in Shift-DR;
    ``JUPDATE`` in Update-DR) and ``JTDI``, which it registers on that edge (LiteX's ECP5
    JTAG core documents these registers, and delays TCK through LUTs to sample after them).
    Sampled on the same rising edge they race the clock, so they are taken on the falling
    edge (``jtag_fall``), half a TCK after they change, and used at the next rising edge:
    then the state is the one the standard TAP acts on at that edge, but the data bit is
    the one TDI had an edge earlier. Shifting also at the edge that leaves Shift-DR (the
    TAP is in Exit1-DR: the state after Shift-DR that is not Shift-DR) makes up for it: the
    register takes one bit more, the first (TDI as the TAP left Capture-DR), and keeps the
    host's bits. ``JTDO1`` is the primitive's to sample on the falling edge, and the
    register changes on rising edges only. A host that pauses in Pause-DR in the middle of a
    scan would lose a bit (OpenOCD's and quartus_stp's scans do not pause).

    Members
    -------
    jce1, jshift, jupdate, jtdi : In(1)
        The primitive's outputs.
    capture, shift, update, tdi : Out(1)
        For :class:`JtagBridge` in the ``jtag`` (TCK rising edge) domain.
    """

    def __init__(self):
        super().__init__({"jce1": In(1), "jshift": In(1), "jupdate": In(1), "jtdi": In(1),
                          "capture": Out(1), "shift": Out(1), "update": Out(1),
                          "tdi": Out(1)})

    def elaborate(self, platform):
        m = Module()
        jce1, shifting, jupdate = Signal(), Signal(), Signal()
        m.d.jtag_fall += [jce1.eq(self.jce1), shifting.eq(self.jce1 & self.jshift),
                          jupdate.eq(self.jupdate), self.tdi.eq(self.jtdi)]
        jce1_before, shifted = Signal(), Signal()
        ours = Signal()                 # a scan that ER1 began: its Update-DR is ours
        m.d.jtag += [jce1_before.eq(jce1), shifted.eq(shifting)]
        with m.If(jce1):
            m.d.jtag += ours.eq(1)
        with m.Elif(jupdate):
            m.d.jtag += ours.eq(0)
        m.d.comb += [self.capture.eq(jce1 & ~jce1_before), self.shift.eq(shifting | shifted),
                     self.update.eq(jupdate & ours)]
        return m


@dataclass(frozen=True)
class Tap:
    """What :func:`user_tap` gives the bridge: its ``capture``, ``shift``, ``update``,
    ``tdi`` inputs and the primitive's ``tdo``, to drive; and the domain Update-DR acts
    in."""

    capture: Signal
    shift: Signal
    update: Signal
    tdi: Signal
    tdo: Signal
    update_domain: str


def user_tap(m: Module, kind: str) -> Tap:
    """Instantiate the user-register primitive ``kind`` (a key of :data:`TAP_KINDS`) in
    ``m`` as :data:`~optnet.plan.pins.JTAG_TAP_INSTANCE`, its clocks' nets named as
    :data:`~optnet.plan.pins.JTAG_CLOCKS` says, on its first user instruction (USER1, ER1,
    the virtual JTAG's only instance), and add the ``jtag`` clock domain (and
    ``jtag_update`` where Update-DR has a clock of its own), reset-less.

    Raises
    ------
    ValueError
        For a kind with no primitive here.
    """
    if kind not in TAP_KINDS:
        raise ValueError(f"optnet has no JTAG user-register primitive '{kind}'; it has "
                         f"{', '.join(TAP_KINDS)}")
    tap = Tap(*(Signal(name=f"jtag_{n}") for n in ("capture", "shift", "update", "tdi", "tdo")),
              update_domain="jtag_update" if TAP_KINDS[kind] else "jtag")
    nets = dict(JTAG_CLOCKS[kind])
    m.domains.jtag = ClockDomain("jtag", reset_less=True)
    clk = Signal(name=next(iter(nets.values())))
    m.d.comb += ClockSignal("jtag").eq(clk)
    raw: dict[str, Signal] = {}

    def outputs(*names):
        # the primitive's outputs ``names`` (Intel's by their state: virtual_state_<name>),
        # each to a signal of its own in ``raw``
        raw.update((n, Signal(name=f"jtag_tap_{n.lower()}")) for n in names)
        return {f"o_{n if n.isupper() else 'virtual_state_' + n}": raw[n] for n in names}

    if kind == "bscane2":
        m.submodules[JTAG_TAP_INSTANCE] = Instance(
            JTAG_PRIMITIVES[kind], p_JTAG_CHAIN=1, o_TCK=clk, o_TDI=tap.tdi, i_TDO=tap.tdo,
            **outputs("CAPTURE", "SHIFT", "UPDATE", "SEL", "DRCK", "RESET", "RUNTEST", "TMS"))
        sel = raw["SEL"]
        m.d.comb += [tap.capture.eq(raw["CAPTURE"] & sel), tap.shift.eq(raw["SHIFT"] & sel),
                     tap.update.eq(raw["UPDATE"] & sel)]
    elif kind == "bscan_virtex5":
        # No TCK: DRCK ticks in Capture-DR and Shift-DR of the selected instruction only, and
        # UPDATE rises as the TAP enters Update-DR (whatever the instruction: SEL tells).
        m.domains.jtag_update = ClockDomain("jtag_update", reset_less=True)
        update = Signal(name=nets["UPDATE"])
        m.d.comb += ClockSignal("jtag_update").eq(update)
        m.submodules[JTAG_TAP_INSTANCE] = Instance(
            JTAG_PRIMITIVES[kind], p_JTAG_CHAIN=1, o_DRCK=clk, o_UPDATE=update,
            o_TDI=tap.tdi, i_TDO=tap.tdo, **outputs("CAPTURE", "SHIFT", "SEL", "RESET"))
        sel = raw["SEL"]
        m.d.comb += [tap.capture.eq(raw["CAPTURE"] & sel), tap.shift.eq(raw["SHIFT"] & sel),
                     tap.update.eq(sel)]
    elif kind == "jtagg":
        jtdi = Signal(name="jtag_tap_jtdi")
        m.submodules[JTAG_TAP_INSTANCE] = Instance(
            JTAG_PRIMITIVES[kind], o_JTCK=clk, o_JTDI=jtdi, i_JTDO1=tap.tdo, i_JTDO2=Const(0),
            **outputs("JSHIFT", "JUPDATE", "JCE1", "JCE2", "JRSTN", "JRTI1", "JRTI2"))
        m.domains.jtag_fall = ClockDomain("jtag_fall", clk_edge="neg", reset_less=True)
        m.d.comb += ClockSignal("jtag_fall").eq(clk)
        m.submodules.jtag_er1 = er1 = JtaggAdapter()
        m.d.comb += [er1.jce1.eq(raw["JCE1"]), er1.jshift.eq(raw["JSHIFT"]),
                     er1.jupdate.eq(raw["JUPDATE"]), er1.jtdi.eq(jtdi),
                     tap.capture.eq(er1.capture), tap.shift.eq(er1.shift),
                     tap.update.eq(er1.update), tap.tdi.eq(er1.tdi)]
    else:
        # One virtual instance with a 1-bit virtual IR (its DR is the bridge's register), at
        # a fixed index, which the host script names (VIRTUAL_JTAG_INDEX).
        m.submodules[JTAG_TAP_INSTANCE] = Instance(
            JTAG_PRIMITIVES[kind], p_sld_auto_instance_index="NO",
            p_sld_instance_index=VIRTUAL_JTAG_INDEX,
            p_sld_ir_width=1, o_tck=clk, o_tdi=tap.tdi, i_tdo=tap.tdo,
            o_ir_in=Signal(name="jtag_tap_ir_in"), i_ir_out=Const(0, 1),
            **outputs("cdr", "sdr", "udr"))
        m.d.comb += [tap.capture.eq(raw["cdr"]), tap.shift.eq(raw["sdr"]),
                     tap.update.eq(raw["udr"])]
    return tap
