"""The shared-XOR CRC engine against Amaranth's own CRC, in simulation."""

from __future__ import annotations

import random

import pytest
from amaranth.lib import crc
from amaranth.sim import Simulator

from optnet.hw.crc import CrcEngine, next_state_terms


@pytest.mark.parametrize(("name", "width"), [("CRC32_ETHERNET", 128), ("CRC32_ETHERNET", 32),
                                             ("CRC16_USB", 128), ("CRC16_CCITT", 48),
                                             ("CRC16_IBM_SDLC", 64), ("CRC16_CCITT_FALSE", 32)])
def test_engine_computes_the_catalog_crc(name, width):
    params = getattr(crc.catalog, name)(data_width=width)
    engine = CrcEngine(params)
    rng = random.Random(width)
    messages = [[rng.getrandbits(width) for _ in range(rng.randrange(1, 5))] for _ in range(6)]
    seen = []

    async def bench(ctx):
        for words in messages:
            for i, word in enumerate(words):
                ctx.set(engine.start, i == 0)
                ctx.set(engine.valid, 1)
                ctx.set(engine.data, word)
                await ctx.tick()
            ctx.set(engine.valid, 0)
            ctx.set(engine.start, 0)
            await ctx.tick()
            value = ctx.get(engine.crc)
            seen.append(value)
            assert not ctx.get(engine.match_detected)
            if width == params.algorithm.crc_width:
                # The message followed by its CRC is a codeword: the register holds the
                # residue, as lib.crc's checker sees it.
                ctx.set(engine.valid, 1)
                ctx.set(engine.data, value)
                await ctx.tick()
                ctx.set(engine.valid, 0)
                await ctx.tick()
                assert ctx.get(engine.match_detected)

    sim = Simulator(engine)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    expected = [params.compute(words) for words in messages]
    assert seen == expected


def test_terms_are_linear_images():
    # CRC-32 over one 8-bit word: each next-state bit's inputs, checked against the
    # catalog's software CRC of single bits from a zero register.
    params = crc.catalog.CRC32_BZIP2(data_width=8)
    terms = next_state_terms(params)
    assert len(terms) == 32 and all(state or data for state, data in terms)


@pytest.mark.parametrize("name", ["CRC16_USB", "CRC32_ETHERNET"])
def test_zero_takes_a_word_from_a_zero_register(name):
    # The link layer's sender fills in a header's hec after the header went through with
    # it zero, and takes the next word from a zero register (the receiver's, after the
    # whole header): the CRC of the words from there is the algorithm's with a zero start.
    params = getattr(crc.catalog, name)(data_width=128)
    from_zero = crc.Algorithm(**{**vars(params.algorithm), "initial_crc": 0})(data_width=128)
    engine = CrcEngine(params)
    rng = random.Random(7)
    before, after = ([rng.getrandbits(128) for _ in range(n)] for n in (3, 4))
    seen = {}

    async def bench(ctx):
        ctx.set(engine.valid, 1)
        for i, word in enumerate(before + after):
            ctx.set(engine.start, i == 0)
            ctx.set(engine.zero, i == len(before))
            ctx.set(engine.data, word)
            await ctx.tick()
        ctx.set(engine.valid, 0)
        await ctx.tick()
        seen["crc"] = ctx.get(engine.crc)

    sim = Simulator(engine)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen["crc"] == from_zero.compute(after) != params.compute(before + after)
