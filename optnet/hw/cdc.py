"""Synchroniser flip-flops marked for the vendor tools, and the names constraints find them by.

optnet lowers its designs to Verilog without an Amaranth platform
(:func:`optnet.hw.verilog.to_verilog`), so :mod:`amaranth.lib.cdc` builds its synchronisers
from plain flip-flops that no vendor tool can tell from any other register: nothing keeps
synthesis from merging them or packing them into a shift register, nor placement from
spreading them apart, and the timing analyser does not know to compute their MTBF. Amaranth's
vendor platforms mark them in the platform hooks ``get_ff_sync`` and ``get_async_ff_sync``
(``amaranth/vendor/_xilinx.py``, ``_altera.py``); :class:`SynchronizerPlatform` is a platform
with just those two hooks, which elaboration passes to every
:class:`~amaranth.lib.cdc.FFSynchronizer`, :class:`~amaranth.lib.cdc.AsyncFFSynchronizer` and
:class:`~amaranth.lib.cdc.ResetSynchronizer` (and so to the pointer synchronisers of
:class:`~amaranth.lib.fifo.AsyncFIFO`). Its flip-flops are Amaranth's own, with the same names
and initial values; only the attribute is added, so the Verilog differs by the attributes
alone. Unlike Amaranth's platforms it does not instantiate primitives (``FDPE``,
``altera_std_synchronizer``), which would need their own stubs and simulation models.

* Xilinx: ``ASYNC_REG = "TRUE"`` on every stage (UG903 "CDC Synchronizers and ASYNC_REG
  Property"; UG912; honoured by XST and ISE on Virtex-5 too, UG625).
* Intel: ``altera_attribute = "-name SYNCHRONIZER_IDENTIFICATION FORCED_IF_ASYNCHRONOUS"``
  on every stage, as ``altera_std_synchronizer`` sets it (Quartus Prime Pro settings
  reference 683296, SYNCHRONIZER_IDENTIFICATION): the Timing Analyzer then reports the chain's
  MTBF and the Fitter optimises it, where the clock constraints make the transfer
  asynchronous (:mod:`optnet.emit.cdc`).
* Lattice (nextpnr) and simulation: no platform, so the Verilog stays as it was.

The constraint files (:mod:`optnet.emit.cdc`) name the synchronisers' first stages and the
Gray-coded FIFO pointers by the names Amaranth gives them (:data:`FIRST_STAGE`,
:data:`GRAY_POINTERS`).
"""

from __future__ import annotations

from collections.abc import Mapping

from amaranth.hdl import ClockDomain, ClockSignal, Module, ResetSignal, Signal

# Amaranth's own synchronisers require a rising-edge output domain through this private
# fragment; pinned with Amaranth below 0.6, as optnet.hw.verilog's find_yosys is.
from amaranth.hdl._ir import RequirePosedge

__all__ = [
    "FIRST_STAGE",
    "GRAY_POINTERS",
    "SYNCHRONIZER_ATTRIBUTES",
    "SynchronizerPlatform",
    "synchronizer_platform",
]

#: The attributes every synchroniser flip-flop carries, by vendor (see the module docstring).
SYNCHRONIZER_ATTRIBUTES: Mapping[str, Mapping[str, str]] = {
    "xilinx": {"ASYNC_REG": "TRUE"},
    "intel": {"altera_attribute": "-name SYNCHRONIZER_IDENTIFICATION FORCED_IF_ASYNCHRONOUS"},
}

#: Name of a synchroniser's first flip-flop (Amaranth names the stages ``stage0``,
#: ``stage1``, ...): the one a crossing ends at.
FIRST_STAGE = "stage0"

#: The Gray-coded pointers of an :class:`~amaranth.lib.fifo.AsyncFIFO`, by the name of the
#: synchroniser that carries each into the other domain: (register in the source domain,
#: whether it counts in the FIFO's write domain). ``produce`` crosses from the write domain
#: to the read domain, ``consume`` back.
GRAY_POINTERS: Mapping[str, tuple[str, bool]] = {
    "produce_cdc": ("produce_w_gry", True),
    "consume_cdc": ("consume_r_gry", False),
}


class SynchronizerPlatform:
    """The synchroniser hooks of an Amaranth platform, for elaboration without one.

    Pass it as the ``platform`` of :func:`amaranth.hdl.Fragment.get` (as
    :func:`optnet.hw.verilog.to_verilog` does). The hooks build the flip-flops of Amaranth's
    platform-less implementations, each with ``attrs``.

    Parameters
    ----------
    attrs : Mapping[str, str]
        Attributes of every synchroniser flip-flop.
    """

    def __init__(self, attrs: Mapping[str, str]):
        self.attrs = dict(attrs)

    def __repr__(self) -> str:
        return f"SynchronizerPlatform({self.attrs!r})"

    def get_ff_sync(self, ff_sync) -> Module:
        """An :class:`~amaranth.lib.cdc.FFSynchronizer`: ``stages`` flip-flops in its output
        domain, the first sampling its input."""
        if ff_sync._max_input_delay is not None:
            raise NotImplementedError(
                f"FFSynchronizer into domain '{ff_sync._o_domain}' asks for a maximum input "
                f"delay, which optnet constrains per clock pair in the constraint files "
                f"instead (optnet.emit.cdc)")
        m = Module()
        flops = [Signal(ff_sync.i.shape(), name=f"stage{index}", init=ff_sync._init,
                        reset_less=ff_sync._reset_less, attrs=self.attrs)
                 for index in range(ff_sync._stages)]
        for i, o in zip((ff_sync.i, *flops), flops, strict=False):
            m.d[ff_sync._o_domain] += o.eq(i)
        m.d.comb += ff_sync.o.eq(flops[-1])
        return m

    def get_async_ff_sync(self, async_ff_sync) -> Module:
        """An :class:`~amaranth.lib.cdc.AsyncFFSynchronizer` (and so a
        :class:`~amaranth.lib.cdc.ResetSynchronizer`): ``stages`` flip-flops in its output
        domain's clock, set at once by its input and cleared one after the other."""
        if async_ff_sync._max_input_delay is not None:
            raise NotImplementedError(
                f"AsyncFFSynchronizer into domain '{async_ff_sync._o_domain}' asks for a "
                f"maximum input delay, which optnet constrains per clock pair in the "
                f"constraint files instead (optnet.emit.cdc)")
        m = Module()
        m.domains += ClockDomain("async_ff", async_reset=True, local=True)
        flops = [Signal(1, name=f"stage{index}", init=1, attrs=self.attrs)
                 for index in range(async_ff_sync._stages)]
        for i, o in zip((0, *flops), flops, strict=False):
            m.d.async_ff += o.eq(i)
        if async_ff_sync._edge == "pos":
            m.d.comb += ResetSignal("async_ff").eq(async_ff_sync.i)
        else:
            m.d.comb += ResetSignal("async_ff").eq(~async_ff_sync.i)
        m.d.comb += [
            ClockSignal("async_ff").eq(ClockSignal(async_ff_sync._o_domain)),
            async_ff_sync.o.eq(flops[-1]),
        ]
        m.submodules += RequirePosedge(async_ff_sync._o_domain)
        return m


def synchronizer_platform(vendor: str) -> SynchronizerPlatform | None:
    """The platform to elaborate a design for ``vendor``'s tools with: a
    :class:`SynchronizerPlatform` with the vendor's synchroniser attributes, or ``None`` for a
    vendor without any (Lattice: nextpnr has no synchroniser attribute), so that its Verilog
    is what Amaranth makes without a platform."""
    attrs = SYNCHRONIZER_ATTRIBUTES.get(vendor)
    return None if attrs is None else SynchronizerPlatform(attrs)
