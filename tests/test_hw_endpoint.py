"""Managed endpoint credit accounting: a receiver grants credit for the unicast packets its
user takes, never for broadcasts (which spend no budget at the sender)."""

from __future__ import annotations

from amaranth.sim import Simulator

from optnet.hw.endpoint import Endpoint, EndpointConfig
from optnet.hw.flit import KIND_CREDIT, FlitFormat

FMT = FlitFormat(width=32, vcs=2, id_bits=2)


def _grants_for(packets):
    """Feed ``packets`` (mcast flags, each from source 2, one beat) to a managed endpoint
    whose user takes everything; return the credit packets it sends as (dst, amount)."""
    cfg = EndpointConfig(FMT, node_id=0, index=0, width=16, max_packet=3, buffer=8,
                         credit=2, offset=0, init_budget=1)
    dut = Endpoint(cfg)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    grants, delivered = [], []

    async def bench(ctx):
        flits = []
        for i, mcast in enumerate(packets):
            flits += [(FMT.pack_header(dst=0, src=2, mcast=mcast), 1, 0), (100 + i, 0, 1)]
        ctx.set(dut.m_axis.ready, 1)
        ctx.set(dut.net_tx.ready, 1)
        for _ in range(len(flits) + 40):
            if flits:
                data, head, tail = flits[0]
                ctx.set(dut.net_rx.valid, 1)
                ctx.set(dut.net_rx.payload, {"data": data, "head": head, "tail": tail})
            else:
                ctx.set(dut.net_rx.valid, 0)
            if flits and ctx.get(dut.net_rx.ready):
                flits.pop(0)
            if ctx.get(dut.m_axis.valid):
                delivered.append(ctx.get(dut.m_axis.payload).tdata)
            if ctx.get(dut.net_tx.valid):
                header = FMT.unpack_header(ctx.get(dut.net_tx.payload).data)
                if header["kind"] == KIND_CREDIT:
                    grants.append((header["dst"], header["arg"]))
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert delivered == [100 + i for i in range(len(packets))]
    return grants


def test_unicast_packets_earn_credit():
    assert _grants_for([0, 0, 0, 0]) == [(2, 2), (2, 2)]


def test_broadcasts_earn_no_credit():
    assert _grants_for([1, 0, 1, 1, 0, 1]) == [(2, 2)]
