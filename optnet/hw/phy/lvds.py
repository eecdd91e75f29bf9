"""Source-synchronous LVDS/DDR link PHY over general-purpose I/O pairs.

Used for on-board FPGA-to-FPGA buses (BEE3) and for boards that have nothing but GPIO
(ULX3S header pairs, 400 Mb/s per pair). Each direction is a forwarded clock pair plus
``lanes`` data pairs, all double data rate: one bit per pair on each clock edge.

Line format
-----------
Every pair carries 10-bit *line words*, LSB first, five DDR clock cycles each. Bits 1:0 are
a header, as in 64B/66B: ``01`` marks a data word whose bits 9:2 are 8 user bits, ``10``
marks a control word, whose whole 10 bits must equal one of three codes:

* ``MARK`` -- lane deskew marker, every fourth control word;
* ``TRAIN`` -- "my receiver is not aligned yet";
* ``IDLE`` -- "my receiver is aligned".

All lanes always send the same kind of word at the same time (a user word is cut into
8-bit slices, lane ``i`` carries bits ``8i+7:8i``; a control word is repeated on every
lane), so the receiver can check the lanes against each other.

The transmitter sends control words whenever it has no data, and forces one after
``ctrl_period`` consecutive data words, so ``MARK`` and the status keep flowing under full
load. Efficiency: 8/10 for the header times ``ctrl_period / (ctrl_period + 1)``, i.e.
79.4 % of the line rate with the default ``ctrl_period`` of 128 (317 Mb/s of user data per
400 Mb/s pair). A header rather than an idle code plus escapes keeps the data path free of
any byte-stuffing and the word rate constant; a separate valid pair would cost a pin per
link and still need framing to find the word boundary.

The three codes are chosen so that any 10-bit window of a stream of control words that is
not on a word boundary is at Hamming distance >= 3 from every code, and the codes are at
distance >= 5 from each other: a receiver cannot lock at a wrong bit offset on a training
stream, and a single bit error cannot turn one status into another.

Alignment
---------
The receiver keeps the last three line words of each lane in a shift register and picks
each lane's word out of it at its own bit offset, at a strobe common to all lanes:

1. *Hunt*: per lane, if the word at the current offset is not a control code, slip the
   offset by one bit; once a lane has seen ``lock_words`` control codes in a row it is
   word-locked. While hunting, offsets stay within the oldest word of the history.
2. *Deskew*: lanes can disagree by up to one whole word. At the first strobe where
   some lane shows ``MARK``, the lanes that do not are one word behind, and take their
   words one word newer from the history; at the next ``MARK`` all lanes must show it
   together. With more than one word of skew the link never comes up (rather than
   pairing up the wrong words).
3. *Aligned*: every strobe must show either data on every lane or the same control code
   on every lane. Anything else (a bad header, an unknown code, lanes disagreeing) means
   lock is lost: the receiver re-hunts from its current offsets, which takes
   ``lock_words`` words if the bit alignment is still right.

``up`` rises when the receiver is aligned *and* the far end reports (``IDLE``) that its
receiver is aligned too, so both ends agree the link is usable; it falls as soon as
either end loses lock. There is no error tolerance: a corrupted header drops the link
instead of dropping a word silently, so the link layer only ever has to recover from
``up`` falling. (Errors inside a data word's payload are not detected here; that is the
link layer's CRC.) Words already in the clock-crossing FIFO when lock is lost still come
out, whole and in order, in the few cycles after ``up`` falls. A watchdog also drops
``up`` and holds the receiver in reset when the forwarded clock stops (far end reset or
unplugged); with the default ``watchdog`` it needs the forwarded clock to run at no less
than 1/8 of ``clk_in``.

Clocking
--------
The local clock ``clk_in`` (a PLL output provided by the node top, at half the bit rate
per pair, e.g. 200 MHz for 400 Mb/s) clocks the transmitter *and* is the user domain
``domain`` that the adapter creates; a user word is accepted at most every fifth cycle.
The receiver runs on the forwarded clock and hands decoded data words to the user domain
through an :class:`~amaranth.lib.fifo.AsyncFIFO`; since that FIFO is read on every cycle
and written at most every fifth cycle of a clock of about the same frequency, it cannot
overflow, and the two ends need not share an oscillator.

The forwarded clock leaves the transmitter edge-aligned with the data (a DDR output
register driven with 1/0: UG471 "Clock Forwarding", TN1265's aligned GDDRX1 transmit
interface). Centring the sampling point in the data eye (board trace delay, IDELAY/DELAYG
taps, or a phase-shifted PLL output) is the board integration's job; the word/bit alignment
above absorbs any whole number of bits of clock-to-data skew, and lane-to-lane skew up to
one word.
"""

from __future__ import annotations

from amaranth.hdl import (
    Cat,
    ClockDomain,
    ClockSignal,
    Const,
    Instance,
    Module,
    Mux,
    ResetSignal,
    Signal,
)
from amaranth.lib import enum, io
from amaranth.lib.cdc import FFSynchronizer, ResetSynchronizer
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out

from optnet.hw.phy import PhyInterface
from optnet.phys import user_width

__all__ = [
    "CODE_IDLE",
    "CODE_MARK",
    "CODE_TRAIN",
    "CONTROL_CODES",
    "CYCLES_PER_WORD",
    "FAMILIES",
    "HEADER_CTRL",
    "HEADER_DATA",
    "LANE_BITS",
    "LINE_BITS",
    "LvdsPhy",
]

#: User bits carried per lane and line word.
LANE_BITS = 8
#: Bits per lane and line word on the wire: a 2-bit header and :data:`LANE_BITS`.
LINE_BITS = LANE_BITS + 2
#: DDR clock cycles per line word (two bits per cycle).
CYCLES_PER_WORD = LINE_BITS // 2

#: Header (bits 1:0) of a data word.
HEADER_DATA = 0b01
#: Header (bits 1:0) of a control word.
HEADER_CTRL = 0b10

# Picked by a computer search over control words for the properties the module docstring
# states (tests/test_hw_lvds.py re-checks them).
#: Deskew marker, every fourth control word.
CODE_MARK = 0b11_0011_1010
#: Control word of a transmitter whose own receiver is not aligned.
CODE_TRAIN = 0b00_0101_1110
#: Control word of a transmitter whose own receiver is aligned.
CODE_IDLE = 0b00_1010_0110
#: Every valid control word.
CONTROL_CODES = (CODE_MARK, CODE_TRAIN, CODE_IDLE)

#: Values of the ``family`` parameter.
FAMILIES = ("sim", "ecp5", "xilinx7", "virtex5", "platform")

_DEFAULTS = {
    "lock_words": 8,
    "ctrl_period": 128,
    "fifo_depth": 8,
    "watchdog": 64,
    "ports": None,
    "diff_term": True,
    "rx_clock_buffer": "BUFR",
}

_PORT_NAMES = ("clk", "tx", "rclk", "rx")


class _State(enum.Enum, shape=2):
    HUNT = 0     # per-lane bit slip until each lane is word-locked
    DESKEW = 1   # line the lanes up on MARK
    ALIGNED = 2  # delivering data


class LvdsPhy(PhyInterface):
    """Source-synchronous DDR link PHY (see the module docstring for the line format).

    Members, besides ``tx``/``rx``/``up`` of :class:`~optnet.hw.phy.PhyInterface`
    (``W = 8 * lanes``; ``tx.ready`` is asserted at most every fifth cycle and only while
    ``up``)::

        clk_in         : In(1)      local clock: transmitter and user domain ``domain``
        rst_in         : In(1)      synchronous reset of the user domain (0 if unused)
        clk_p, clk_n   : Out(1)     forwarded clock pair
        tx_p, tx_n     : Out(lanes) transmit data pairs
        rclk_p, rclk_n : In(1)      received forwarded clock pair
        rx_p, rx_n     : In(lanes)  receive data pairs

    The pad members are absent for ``family="platform"``, whose pins come from the
    platform through the ``ports`` option instead.

    Parameters
    ----------
    lanes : int
        Data pairs per direction.
    domain : str
        Name of the user clock domain the adapter creates (clocked by ``clk_in``).
    family : str
        How the DDR registers and differential buffers are made:

        * ``"sim"``: behavioural registers on both clock edges, for
          :class:`amaranth.sim.Simulator` (only the ``_p`` pads carry signals; each ``_n``
          output is the complement of its ``_p``);
        * ``"ecp5"``: Lattice ``ODDRX1F``/``IDDRX1F`` and ``OLVDS``/``ILVDS`` instances;
        * ``"xilinx7"``, ``"virtex5"``: Xilinx ``ODDR``/``IDDR``, ``OBUFDS``/``IBUFDS`` and
          ``BUFIO``+``BUFR`` (or ``BUFG``) instances;
        * ``"platform"``: :class:`amaranth.lib.io.DDRBuffer` and
          :class:`amaranth.lib.io.Buffer` on the ports given in ``ports``, so that the
          Amaranth platform picks the primitives.
    **options
        ``lock_words`` (8): consecutive control words a lane must see to be word-locked.
        ``ctrl_period`` (128): most data words sent between two control words.
        ``fifo_depth`` (8): depth of the receive clock-crossing FIFO (a power of 2).
        ``watchdog`` (64): user-domain cycles without a sign of the forwarded clock after
        which the link is down.
        ``ports`` (``"platform"`` only): dict with ``clk``, ``tx``, ``rclk``, ``rx``
        :class:`~amaranth.lib.io.PortLike` (e.g. ``platform.request(..., dir="-")``
        subsignals), of widths 1, ``lanes``, 1, ``lanes``.
        ``diff_term`` (True, Xilinx only): ``IBUFDS`` internal 100-ohm termination.
        ``rx_clock_buffer`` (``"BUFR"``, Xilinx only): ``"BUFR"`` clocks the ``IDDR`` from a
        ``BUFIO`` and the receive logic from a ``BUFR`` (the source-synchronous scheme of
        UG471/UG472; the received clock must enter on a clock-capable pin of the data
        bank); ``"BUFG"`` uses a global buffer for both (any pin, more insertion delay).

    Raises
    ------
    ValueError
        Unknown family, bad lane count or bad option value.
    TypeError
        Unknown option.
    """

    def __init__(self, lanes: int, domain: str, family: str = "sim", **options):
        if not isinstance(lanes, int) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")
        unknown = set(options) - set(_DEFAULTS)
        if unknown:
            raise TypeError(f"unknown LvdsPhy option(s): {', '.join(sorted(unknown))}")
        opts = {**_DEFAULTS, **options}
        for key in ("lock_words", "ctrl_period", "watchdog"):
            if not isinstance(opts[key], int) or opts[key] < 1:
                raise ValueError(f"{key} must be a positive integer, not {opts[key]!r}")
        depth = opts["fifo_depth"]
        if not isinstance(depth, int) or depth < 4 or depth & (depth - 1):
            raise ValueError(f"fifo_depth must be a power of 2 >= 4, not {depth!r}")
        if opts["rx_clock_buffer"] not in ("BUFR", "BUFG"):
            raise ValueError(f"rx_clock_buffer must be 'BUFR' or 'BUFG', "
                             f"not {opts['rx_clock_buffer']!r}")
        if family == "platform":
            ports = opts["ports"]
            if not isinstance(ports, dict) or set(ports) != set(_PORT_NAMES):
                raise ValueError(f"family 'platform' needs ports={{{', '.join(_PORT_NAMES)}}}")
            widths = {"clk": 1, "tx": lanes, "rclk": 1, "rx": lanes}
            for name, port in ports.items():
                if not isinstance(port, io.PortLike) or len(port) != widths[name]:
                    raise ValueError(f"port {name!r} must be a PortLike of width "
                                     f"{widths[name]}, not {port!r}")
        elif opts["ports"] is not None:
            raise ValueError("ports is only used with family 'platform'")

        self.lanes = lanes
        self.family = family
        self.options = opts
        pads = {"clk_in": In(1), "rst_in": In(1)}
        if family != "platform":
            pads.update({
                "clk_p": Out(1), "clk_n": Out(1),
                "tx_p": Out(lanes), "tx_n": Out(lanes),
                "rclk_p": In(1), "rclk_n": In(1),
                "rx_p": In(lanes), "rx_n": In(lanes),
            })
        super().__init__(user_width("lvds", lanes), domain, pads)

    # -- I/O: DDR registers and differential buffers, per family ---------------------------

    def _io(self, m: Module, rx: str, tx_first: Signal, tx_second: Signal,
            rx_first: Signal, rx_second: Signal) -> Signal:
        """Instantiate the pads; returns the received forwarded clock (before any global
        buffer the family needs for the receive logic)."""
        one, zero = Const(1, 1), Const(0, 1)
        family, lanes, user = self.family, self.lanes, self.domain

        if family == "platform":
            ports = self.options["ports"]
            m.submodules.tx_ddr = tx_ddr = io.DDRBuffer("o", ports["tx"], o_domain=user)
            m.submodules.clk_ddr = clk_ddr = io.DDRBuffer("o", ports["clk"], o_domain=user)
            m.submodules.rclk_buf = rclk_buf = io.Buffer("i", ports["rclk"])
            m.submodules.rx_ddr = rx_ddr = io.DDRBuffer("i", ports["rx"], i_domain=rx)
            # o[0] leaves on the rising edge, before o[1]; i[0] is sampled on the rising
            # edge, before i[1] (amaranth.lib.io.DDRBuffer timing diagram).
            m.d.comb += [
                tx_ddr.o[0].eq(tx_first), tx_ddr.o[1].eq(tx_second),
                clk_ddr.o[0].eq(one), clk_ddr.o[1].eq(zero),
                rx_first.eq(rx_ddr.i[0]), rx_second.eq(rx_ddr.i[1]),
            ]
            return rclk_buf.i

        if family == "sim":
            # ODDR model: both bits registered on the rising edge, first bit on the pad
            # while the clock is high, second while it is low (Xilinx ODDR SAME_EDGE).
            for first, second, pad_p, pad_n in ((tx_first, tx_second, self.tx_p, self.tx_n),
                                                (one, zero, self.clk_p, self.clk_n)):
                r_first = Signal(len(pad_p), reset_less=True)
                r_second = Signal(len(pad_p), reset_less=True)
                m.d[user] += [r_first.eq(first), r_second.eq(second)]
                m.d.comb += [pad_p.eq(Mux(self.clk_in, r_first, r_second)), pad_n.eq(~pad_p)]
            # IDDR model: sample on both edges, hand both bits over on the next rising edge
            # (Xilinx IDDR SAME_EDGE_PIPELINED).
            rxn = f"{rx}_neg"
            m.domains += ClockDomain(rxn, clk_edge="neg", reset_less=True, local=True)
            m.d.comb += ClockSignal(rxn).eq(self.rclk_p)
            rise = Signal(lanes, reset_less=True)
            fall = Signal(lanes, reset_less=True)
            m.d[rx] += rise.eq(self.rx_p)
            m.d[rxn] += fall.eq(self.rx_p)
            m.d[rx] += [rx_first.eq(rise), rx_second.eq(fall)]
            return self.rclk_p

        if family == "ecp5":
            # Lattice TN1265 / FPGA-TN-02035 "ECP5 and ECP5-5G High-Speed I/O Interface",
            # generic x1 DDR (GDDRX1): ODDRX1F(D0, D1, SCLK, RST -> Q) sends D0 on the
            # rising edge and D1 on the falling edge; IDDRX1F(D, SCLK, RST -> Q0, Q1) gives
            # the rising-edge sample on Q0 and the following falling-edge sample on Q1,
            # both on the next rising edge (Diamond's ECP5 simulation models).
            # OLVDS(A -> Z, ZN) and ILVDS(A, AN -> Z) are the differential buffers of the
            # Lattice FPGA Libraries Reference Guide (Diamond; Yosys maps them onto the
            # TRELLIS_IO of the true pin for nextpnr). The I/O standard (LVDS, or
            # LVCMOS33D for emulated differential outputs as on the ULX3S) is set by the
            # constraint file, not here.
            def ddr_out(name, first, second, pad_p, pad_n):
                q = Signal(name=f"{name}_q")
                m.submodules[f"{name}_oddr"] = Instance(
                    "ODDRX1F", i_SCLK=ClockSignal(user), i_RST=zero,
                    i_D0=first, i_D1=second, o_Q=q)
                m.submodules[f"{name}_obuf"] = Instance(
                    "OLVDS", i_A=q, o_Z=pad_p, o_ZN=pad_n)

            def clk_in_buf(name, pad_p, pad_n):
                z = Signal(name=f"{name}_i")
                m.submodules[f"{name}_ibuf"] = Instance(
                    "ILVDS", i_A=pad_p, i_AN=pad_n, o_Z=z)
                return z

            rclk = clk_in_buf("rclk", self.rclk_p, self.rclk_n)
            for i in range(lanes):
                d = clk_in_buf(f"rx{i}", self.rx_p[i], self.rx_n[i])
                m.submodules[f"rx{i}_iddr"] = Instance(
                    "IDDRX1F", i_SCLK=rclk, i_RST=zero, i_D=d,
                    o_Q0=rx_first[i], o_Q1=rx_second[i])
                ddr_out(f"tx{i}", tx_first[i], tx_second[i], self.tx_p[i], self.tx_n[i])
            ddr_out("clk", one, zero, self.clk_p, self.clk_n)
            return rclk

        # xilinx7 / virtex5: the same primitives and ports in both libraries guides
        # (UG953 "7 Series FPGA and Zynq-7000 SoC Libraries Guide"; UG621 "Virtex-5
        # Libraries Guide for HDL Designs"); behaviour in UG471 "7 Series SelectIO
        # Resources" ch. 2-3 and UG190 "Virtex-5 FPGA User Guide" ch. 7. ODDR in
        # SAME_EDGE mode takes D1 and D2 on the rising edge and sends D1 first; IDDR in
        # SAME_EDGE_PIPELINED mode presents the rising-edge sample (Q1) and the following
        # falling-edge sample (Q2) together. A forwarded clock is an ODDR with D1=1, D2=0
        # (UG471 "Clock Forwarding").
        term = "TRUE" if self.options["diff_term"] else "FALSE"

        def ddr_out(name, first, second, pad_p, pad_n):
            q = Signal(name=f"{name}_q")
            m.submodules[f"{name}_oddr"] = Instance(
                "ODDR", p_DDR_CLK_EDGE="SAME_EDGE", p_INIT=zero, p_SRTYPE="SYNC",
                i_C=ClockSignal(user), i_CE=one, i_R=zero, i_S=zero,
                i_D1=first, i_D2=second, o_Q=q)
            m.submodules[f"{name}_obuf"] = Instance(
                "OBUFDS", i_I=q, o_O=pad_p, o_OB=pad_n)

        def ibufds(name, pad_p, pad_n):
            o = Signal(name=f"{name}_i")
            m.submodules[f"{name}_ibuf"] = Instance(
                "IBUFDS", p_DIFF_TERM=term, i_I=pad_p, i_IB=pad_n, o_O=o)
            return o

        rclk_pad = ibufds("rclk", self.rclk_p, self.rclk_n)
        rclk = Signal(name="rclk_fabric")
        if self.options["rx_clock_buffer"] == "BUFR":
            # UG472 "7 Series Clocking Resources" / UG190 ch. 1: BUFIO reaches only the I/O
            # registers of its bank, BUFR the fabric of the same region; they are skew-
            # matched so the IDDR outputs can be taken over by BUFR-clocked logic.
            iddr_clk = Signal(name="rclk_io")
            m.submodules.rclk_bufio = Instance("BUFIO", i_I=rclk_pad, o_O=iddr_clk)
            # SIM_DEVICE only selects the simulation model, but Vivado insists on 7SERIES.
            device = "7SERIES" if self.family == "xilinx7" else "VIRTEX5"
            m.submodules.rclk_bufr = Instance(
                "BUFR", p_BUFR_DIVIDE="BYPASS", p_SIM_DEVICE=device,
                i_I=rclk_pad, i_CE=one, i_CLR=zero, o_O=rclk)
        else:
            m.submodules.rclk_bufg = Instance("BUFG", i_I=rclk_pad, o_O=rclk)
            iddr_clk = rclk
        for i in range(lanes):
            d = ibufds(f"rx{i}", self.rx_p[i], self.rx_n[i])
            m.submodules[f"rx{i}_iddr"] = Instance(
                "IDDR", p_DDR_CLK_EDGE="SAME_EDGE_PIPELINED", p_INIT_Q1=zero,
                p_INIT_Q2=zero, p_SRTYPE="SYNC",
                i_C=iddr_clk, i_CE=one, i_R=zero, i_S=zero, i_D=d,
                o_Q1=rx_first[i], o_Q2=rx_second[i])
            ddr_out(f"tx{i}", tx_first[i], tx_second[i], self.tx_p[i], self.tx_n[i])
        ddr_out("clk", one, zero, self.clk_p, self.clk_n)
        return rclk

    # -- logic --------------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        lanes, user = self.lanes, self.domain
        opts = self.options
        nlock, period = opts["lock_words"], opts["ctrl_period"]
        S, P = LINE_BITS, CYCLES_PER_WORD

        m.domains += ClockDomain(user)
        m.d.comb += [ClockSignal(user).eq(self.clk_in), ResetSignal(user).eq(self.rst_in)]
        # Local: several adapters may share a parent module.
        rx = f"{user}_lvds_rx"
        m.domains += ClockDomain(rx, local=True)

        tx_first, tx_second = Signal(lanes), Signal(lanes)
        rx_first = Signal(lanes, reset_less=True)
        rx_second = Signal(lanes, reset_less=True)
        m.d.comb += ClockSignal(rx).eq(
            self._io(m, rx, tx_first, tx_second, rx_first, rx_second))

        # -- forwarded-clock watchdog (user domain) ------------------------------------------
        # A stopped forwarded clock freezes the receiver with `up` high, so watch it from
        # the local clock. The heartbeat toggles every 4 received cycles: slow enough to be
        # sampled cleanly by a clock of similar frequency. It is reset-less so it keeps
        # running while the watchdog holds the receiver in reset.
        heartbeat = Signal(3, reset_less=True)
        m.d[rx] += heartbeat.eq(heartbeat + 1)
        beat, beat_prev = Signal(), Signal()
        m.submodules.beat_sync = FFSynchronizer(heartbeat[-1], beat, o_domain=user)
        m.d[user] += beat_prev.eq(beat)
        silent = Signal(range(opts["watchdog"] + 1))
        # Registered: it resets the receiver through a synchroniser, whose input must be one
        # flip-flop, not a compare that can glitch.
        rx_dead = Signal()
        m.d[user] += rx_dead.eq(silent == opts["watchdog"])
        with m.If(beat != beat_prev):
            m.d[user] += silent.eq(0)
        with m.Elif(silent != opts["watchdog"]):
            m.d[user] += silent.eq(silent + 1)
        rx_reset = Signal()
        m.d.comb += rx_reset.eq(ResetSignal(user) | rx_dead)
        m.submodules.rx_reset_sync = ResetSynchronizer(rx_reset, domain=rx)

        # -- receiver (forwarded-clock domain) ----------------------------------------------
        phase = Signal(range(P))
        strobe, ev = Signal(), Signal()  # ev: the cycle after a strobe, words are fresh
        m.d.comb += strobe.eq(phase == P - 1)
        m.d[rx] += [phase.eq(Mux(strobe, 0, phase + 1)), ev.eq(strobe)]

        offset, words, count = [], [], []
        is_data, is_code, is_mark, is_train, is_idle = [], [], [], [], []
        for i in range(lanes):
            # Three words of history: a lane's word may start anywhere in the oldest word
            # (bit alignment) and be one word later than that (lane deskew).
            sr = Signal(3 * S, name=f"rx{i}_history")
            m.d[rx] += sr.eq(Cat(sr[2:], rx_first[i], rx_second[i]))
            off = Signal(range(2 * S), name=f"rx{i}_offset")
            word = Signal(S, name=f"rx{i}_word")
            with m.If(strobe):
                m.d[rx] += word.eq(sr.bit_select(off, S))
            offset.append(off)
            words.append(word)
            count.append(Signal(range(nlock + 1), name=f"rx{i}_count"))
            is_data.append(word[:2] == HEADER_DATA)
            is_mark.append(word == CODE_MARK)
            is_train.append(word == CODE_TRAIN)
            is_idle.append(word == CODE_IDLE)
            is_code.append(is_mark[-1] | is_train[-1] | is_idle[-1])

        all_data = Cat(*is_data).all()
        all_code = Cat(*is_code).all()
        all_same = Cat(*(w == words[0] for w in words)).all()
        mark_any, mark_all = Cat(*is_mark).any(), Cat(*is_mark).all()
        all_locked = Cat(*(c == nlock for c in count)).all()
        # A late lane (no MARK) whose offset is already one word late cannot move further.
        late_stuck = Cat(*(~mk & (off >= S)
                           for mk, off in zip(is_mark, offset, strict=True))).any()

        m.submodules.rx_fifo = fifo = AsyncFIFO(
            width=self.width, depth=opts["fifo_depth"], r_domain=user, w_domain=rx)
        m.d.comb += fifo.w_data.eq(Cat(*(w[2:] for w in words)))

        remote_ok = Signal()  # far end's last status word was IDLE
        first_mark = Signal()  # no lane showed MARK at the previous strobe
        # An If chain rather than m.FSM: Amaranth emits a three-state FSM as a `casez`
        # without default, which Verilator reports as incomplete.
        state = Signal(_State)

        def rehunt():
            # Keep the bit offsets: if only the deskew or the far end went wrong, lanes
            # re-lock without slipping.
            m.d[rx] += [state.eq(_State.HUNT), remote_ok.eq(0)]
            for c, off in zip(count, offset, strict=True):
                m.d[rx] += c.eq(0)
                with m.If(off >= S):
                    m.d[rx] += off.eq(off - S)

        with m.If(ev):
            with m.If(state == _State.HUNT):
                for i in range(lanes):
                    with m.If(is_code[i] & (count[i] != nlock)):
                        m.d[rx] += count[i].eq(count[i] + 1)
                    with m.Elif(~is_code[i]):
                        m.d[rx] += count[i].eq(0)
                        # A locked lane that sees one bad word (stray data from the far
                        # end while it notices we lost lock) is probably still at the
                        # right offset: clear its count, slip on the next miss.
                        with m.If(count[i] != nlock):
                            m.d[rx] += offset[i].eq(Mux(offset[i] == S - 1, 0, offset[i] + 1))
            with m.Elif(state == _State.DESKEW):
                with m.If(~all_code):
                    rehunt()
                with m.Elif(~mark_any):
                    m.d[rx] += first_mark.eq(1)
                with m.Elif(first_mark):
                    # MARK comes every 4th control word and skew is at most one
                    # word, so at the first strobe that shows it, the lanes without
                    # it are exactly one word late.
                    m.d[rx] += first_mark.eq(0)
                    with m.If(mark_all):
                        m.d[rx] += state.eq(_State.ALIGNED)
                    with m.Elif(late_stuck):
                        rehunt()  # more than a word of skew
                    with m.Else():
                        for mk, off in zip(is_mark, offset, strict=True):
                            with m.If(~mk):
                                m.d[rx] += off.eq(off + S)
            with m.Else():  # ALIGNED
                with m.If(all_data):
                    m.d.comb += fifo.w_en.eq(1)
                    with m.If(~fifo.w_rdy):
                        rehunt()  # cannot happen (see Clocking); never lose silently
                with m.Elif(all_code & all_same):
                    with m.If(is_train[0]):
                        m.d[rx] += remote_ok.eq(0)
                    with m.If(is_idle[0]):
                        m.d[rx] += remote_ok.eq(1)
                with m.Else():
                    rehunt()

        # Entered once every lane is word-locked (checked between strobes, after the
        # counts of the last strobe have settled).
        with m.If((state == _State.HUNT) & all_locked):
            m.d[rx] += [state.eq(_State.DESKEW), first_mark.eq(0)]

        # Registered before they cross to the user domain (a decode of the state could glitch).
        rx_aligned, rx_up = Signal(), Signal()
        m.d[rx] += [rx_aligned.eq(state == _State.ALIGNED),
                    rx_up.eq((state == _State.ALIGNED) & remote_ok)]

        # -- user domain: status, receive FIFO output, transmitter ---------------------------
        aligned_s, up_s = Signal(), Signal()
        m.submodules.aligned_sync = FFSynchronizer(rx_aligned, aligned_s, o_domain=user)
        m.submodules.up_sync = FFSynchronizer(rx_up, up_s, o_domain=user)
        aligned = Signal()
        # `up` crosses to the link layer's network side: one flip-flop.
        m.d[user] += self.up.eq(up_s & ~rx_dead)
        m.d.comb += [
            aligned.eq(aligned_s & ~rx_dead),
            fifo.r_en.eq(1),
            self.rx.valid.eq(fifo.r_rdy),
            self.rx.payload.eq(fifo.r_data),
        ]

        tphase = Signal(range(P))
        last = Signal()
        m.d.comb += last.eq(tphase == P - 1)
        m.d[user] += tphase.eq(Mux(last, 0, tphase + 1))
        run = Signal(range(period + 1))  # data words since the last control word
        slot = Signal(2)                 # control words sent, mod 4: MARK at 0
        # Data only while up: before that the far end would drop it, and TRAIN/IDLE must
        # flow for both ends to come up.
        m.d.comb += self.tx.ready.eq(last & self.up & (run != period))
        ctrl = Mux(slot == 0, Const(CODE_MARK, S),
                   Mux(aligned, Const(CODE_IDLE, S), Const(CODE_TRAIN, S)))
        shift = [Signal(S, name=f"tx{i}_word") for i in range(lanes)]
        with m.If(last):
            with m.If(self.tx.valid & self.tx.ready):
                for i, sh in enumerate(shift):
                    lane_bits = self.tx.payload[LANE_BITS * i:LANE_BITS * (i + 1)]
                    m.d[user] += sh.eq(Cat(Const(HEADER_DATA, 2), lane_bits))
                m.d[user] += run.eq(run + 1)
            with m.Else():
                m.d[user] += [sh.eq(ctrl) for sh in shift]
                m.d[user] += [slot.eq(slot + 1), run.eq(0)]
        with m.Else():
            m.d[user] += [sh.eq(sh[2:]) for sh in shift]
        m.d.comb += [tx_first.eq(Cat(*(sh[0] for sh in shift))),
                     tx_second.eq(Cat(*(sh[1] for sh in shift)))]
        return m
