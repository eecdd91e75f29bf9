#!/usr/bin/env python3
"""What a separable switch allocator alone reaches on ECP5: the floor under the router's Fmax.

Usage: python bench/alloc_floor.py [--seeds N]

Two circuits, each the allocation loop of a 5-port, 2-VC router and nothing else, placed
and routed with nextpnr-ecp5 on the part and speed grade of ``bench/router.py``
(LFE5U-85F, CABGA381, speed 6):

- ``one cycle``: registered requests (per input VC, a bit per output) -> a round-robin
  arbiter per input over its VCs -> a round-robin arbiter per output over the inputs ->
  the granted VC's requests cleared (new requests arrive from a pin shift register). This
  is the loop the router closes every cycle, without credits, buffers or output state.
- ``input choice a cycle ahead``: the same with each input's VC choice registered, so the
  cycle holds only the output arbiters and the update.

Each circuit's IO goes through a shift register and registered XOR trees, as in
``bench/router.py``. Prints the median Fmax over ``--seeds`` (default 3), the seeds' values
and the critical path of the last seed. Reference: the router's own Fmax from
``bench/router.py`` and the issue's target of 100 MHz.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Cat, Elaboratable, Module, Mux, Signal

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from router import TARGET_MHZ, fmax_text, place_and_route, yosys_stat  # noqa: E402

from optnet.hw.alloc import RoundRobin  # noqa: E402

PORTS, VCS = 5, 2


class AllocLoop(Elaboratable):
    """The allocation loop; ``ahead``: each input's VC choice registered a cycle early."""

    def __init__(self, ahead: bool):
        self.ahead = ahead
        self.si = Signal()
        self.so = Signal(8)

    def elaborate(self, platform):
        m = Module()
        P, V = PORTS, VCS
        fresh = Signal(P * V * P + P)
        m.d.sync += fresh.eq(Cat(self.si, fresh[:-1]))
        req = [[Signal(P, name=f"req{p}_{v}") for v in range(V)] for p in range(P)]
        in_arb = []
        for p in range(P):
            arb = RoundRobin(V)
            m.submodules[f"in{p}"] = arb
            in_arb.append(arb)
            m.d.comb += arb.requests.eq(Cat(req[p][v].any() for v in range(V)))
        if self.ahead:
            chosen = [[Signal(name=f"chosen{p}_{v}") for v in range(V)] for p in range(P)]
            for p in range(P):
                m.d.sync += Cat(chosen[p]).eq(in_arb[p].grant)
        else:
            chosen = [[in_arb[p].grant[v] for v in range(V)] for p in range(P)]
        grant = [[Signal(name=f"grant{q}_{p}") for p in range(P)] for q in range(P)]
        for q in range(P):
            arb = RoundRobin(P)
            m.submodules[f"out{q}"] = arb
            # a pin bit per input stands for the input being able to send at all
            m.d.comb += [arb.advance.eq(1), arb.requests.eq(Cat(
                Cat(chosen[p][v] & req[p][v][q] for v in range(V)).any() & fresh[-P + p]
                for p in range(P)))]
            m.d.comb += Cat(grant[q]).eq(arb.grant)
        for p in range(P):
            sent = Cat(grant[q][p] for q in range(P)).any()
            m.d.comb += in_arb[p].advance.eq(sent)
            for v in range(V):
                new = fresh[(p * V + v) * P:(p * V + v + 1) * P]
                m.d.sync += req[p][v].eq(Mux(chosen[p][v] & sent, 0, req[p][v]) | new)
        seen = Signal(P * P)
        m.d.sync += seen.eq(Cat(grant[q][p] for q in range(P) for p in range(P)))
        m.d.comb += self.so.eq(Cat(seen[i * 3:i * 3 + 3].xor() for i in range(8)))
        return m


def fmax(ahead: bool, seeds: int, tmp: Path) -> dict:
    top = AllocLoop(ahead)
    text = verilog.convert(top, name="top", ports=[top.si, top.so], emit_src=False)
    netlist = tmp / "top.json"
    yosys_stat(text, "synth_ecp5 -top top", tmp, "top", json_out=netlist)
    return place_and_route(netlist, seeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    print(f"allocation loop, {PORTS} ports x {VCS} VCs, ECP5-85F speed 6; "
          f"target {TARGET_MHZ} MHz")
    print(f"{'loop':32} {'Fmax MHz':>9}  seeds")
    for name, ahead in (("one cycle", False), ("input choice a cycle ahead", True)):
        with tempfile.TemporaryDirectory(prefix="optnet-floor-") as tmp:
            result = fmax(ahead, args.seeds, Path(tmp))
        print("{:32} {:>9}  {}".format(name, *fmax_text(result)))
        print(f"  critical path (last seed): {result['path']}")


if __name__ == "__main__":
    main()
