"""Simulation model of a cable and PHY pair: latency, bit errors, lane failure.

Used by the tests and by cluster simulations in place of the vendor PHYs: it connects
one PHY adapter interface's ``tx`` to the other's ``rx`` (the members of
:class:`optnet.hw.phy.PhyInterface`), in the transmitting side's clock domain.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field

from amaranth.hdl import Signal

__all__ = ["LinkModel"]


@dataclass
class LinkModel:
    """One direction of a link.

    Parameters
    ----------
    tx, rx : stream interfaces
        ``tx`` of the sending adapter (the model is always ready) and ``rx`` of the
        receiving one.
    up : Signal or None
        Driven with the link state (both ends see the same).
    domain : str
        Clock domain both interfaces are in.
    width : int
        Word width.
    latency : int
        Cycles from ``tx`` to ``rx``.
    ber : float
        Probability that any one bit is flipped.
    fail : tuple of (int, int, int)
        ``(first cycle, last cycle, lane)``: the lane fails in that window. Any failed lane
        takes the whole bonded link down (a PHY cannot run a bonded channel with a lane
        missing): every word is lost and ``up`` drops.
    seed : int
    """

    tx: object
    rx: object
    up: object
    domain: str
    width: int
    latency: int = 4
    ber: float = 0.0
    fail: tuple = ()
    seed: int = 0
    flipped: int = field(default=0, init=False)
    lost: int = field(default=0, init=False)

    def _gap(self, rng: random.Random) -> int:
        # Bits between errors are geometrically distributed; drawing the gap costs one
        # random number per error instead of one per bit.
        if not self.ber:
            return 1 << 62
        return int(math.log(1.0 - rng.random()) / math.log(1.0 - self.ber))

    async def process(self, ctx):
        """Simulator testbench coroutine; runs forever."""
        rng = random.Random(self.seed)
        line = deque([None] * self.latency)
        bits = self.width
        if isinstance(self.tx.ready, Signal):   # (an always-ready stream's is a constant)
            ctx.set(self.tx.ready, 1)
        cycle = 0
        gap = self._gap(rng)   # error-free bits before the next flipped one
        # What the model last drove: a testbench's every `set` makes the simulator propagate
        # it, so a value that has not changed is not set again (a large cluster has hundreds
        # of link models, which otherwise cost most of its simulation time).
        up = valid = payload = None
        while True:
            failed = any(a <= cycle <= b for a, b, _ in self.fail)
            if self.up is not None and up != (not failed):
                up = not failed
                ctx.set(self.up, up)
            word = None
            if ctx.get(self.tx.valid):
                word = ctx.get(self.tx.payload)
                if failed:
                    self.lost += 1
                    word = None
                elif self.ber:
                    while gap < bits:
                        word ^= 1 << gap
                        self.flipped += 1
                        gap += 1 + self._gap(rng)
                    gap -= bits
            line.append(word)
            out = line.popleft()
            if valid != (out is not None):
                valid = out is not None
                ctx.set(self.rx.valid, valid)
            if out is not None and out != payload:
                payload = out
                ctx.set(self.rx.payload, out)
            await ctx.tick(self.domain)
            cycle += 1
