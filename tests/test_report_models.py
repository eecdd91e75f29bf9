"""The report's models, configured with each paper's own component figures, reproduce the
paper's headline numbers (docs/validation.md lists every comparison)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import pytest

from optnet.lint import lint_file
from optnet.model import DIRECT_LINK_CYCLES, DIRECT_SWITCH_CYCLES, CreditCheck
from optnet.plan.configs import LinkConfig
from optnet.report.bandwidth import (
    channel_overhead,
    effective_rate,
    multipath_rate,
    optnet_packet,
)
from optnet.report.collectives import (
    COLLECTIVES,
    collective,
    cuscomnet_broadcast,
    cuscomnet_queueing,
    max_links,
)
from optnet.report.latency import diameter, hop, latency_matrix, path_latency, round_trip
from optnet.report.params import LinkParams, model_params

from .conftest import ROOT, linted_example

US, NS, GBPS = Fraction(1, 10**6), Fraction(1, 10**9), 10**9


def _routed(tmp_path: Path, example: str, model: str):
    """``example`` with the cluster file's ``model:`` mapping set to ``model``."""
    text = (ROOT / "examples" / f"{example}.yaml").read_text()
    path = tmp_path / f"{example}.yaml"
    path.write_text(f"{text}\nmodel:\n{model}")
    result = lint_file(path)
    assert result.routed is not None, [str(d) for d in result.diagnostics]
    return result.routed


def _close(value, target, tolerance):
    return abs(float(value) / float(target) - 1) <= tolerance


# --------------------------------------------------------------------------------- OPTWEB

# §4.1: SerialLite III at 355 MHz, 64 bits per lane (45 Gb/s over 2 x 25 Gb/s); the SL3 IP
# takes 0.15 us of the 0.36 us barrier migration delay, the FPGA the other 0.21 us (§4.3.2)
# plus 0.03 us for the eager size check; the distributed switch takes about ten 200 MHz
# cycles; 0.32 us of configuration delay (HBM2 read) before the first flit. Of the 0.24 us
# in the FPGA (48 cycles), two switches take 20 cycles and the model books serialisation
# (the EAGER word's two 128-bit PHY words and the beat's two at 355 MHz, 11 ns) and the
# 3 m cable (15 ns) apart, which leaves 23 cycles.
OPTWEB = """\
  startup: 0.32us
  router_cycles: 10
  link_layer_cycles: 23
  hub_cycles: 0
  phy: {serial_lite_3: {latency: 0.15us, user_rate: 22.72Gbps}}
"""

# The same cluster with optnet's own direct switch: its measured cycles
# (optnet.model.DIRECT_*), the paper's SL3 figures and start-up.
OPTWEB_OWN = """\
  startup: 0.32us
  phy: {serial_lite_3: {latency: 0.15us, user_rate: 22.72Gbps}}
"""


@pytest.fixture(scope="module")
def optweb(tmp_path_factory):
    # OPTWEB's M_DMAC streams a DMA per peer into its distributed switch, so a node sends
    # on all its links at once: no limit per node (node_rate None). optnet's direct switch
    # takes a node's messages one at a time (test_optweb_with_optnets_own_direct_switch).
    routed = _routed(tmp_path_factory.mktemp("optweb"), "optweb_4", OPTWEB)
    return routed, dataclasses.replace(model_params(routed.cluster), node_rate=None)


def test_optweb_link_bandwidth_is_45_gbps(optweb):
    routed, params = optweb
    link = params.link(routed.cluster.links[0])
    assert link.payload_rate == 2 * 64 * 355 * 10**6          # the user interface limits it
    assert _close(link.payload_rate, 45 * GBPS, 0.02)


@pytest.mark.parametrize(("name", "paper_gbps"), [
    ("sendrecv", 90), ("scatter", 135), ("gather", 135), ("broadcast", 135),
    ("allgather", 270), ("alltoall", 270)])
def test_optweb_bandwidth_per_node_per_collective(optweb, name, paper_gbps):
    routed, params = optweb
    model = collective(routed, params, name)
    assert _close(model.node_rate(), paper_gbps * GBPS, 0.02), float(model.node_rate()) / GBPS
    # 128 MiB transfers (the paper's measurement) are within 0.1 % of the limit
    assert _close(model.node_rate(128 * 2**20 * 8), model.node_rate(), 0.001)


def test_optweb_start_up_latency_and_multipath(optweb):
    routed, params = optweb
    startup = collective(routed, params, "sendrecv").startup
    assert _close(startup, Fraction(71, 100) * US, 0.02), float(startup / US)
    link = params.link(routed.cluster.links[0]).payload_rate
    assert _close(multipath_rate(4, link), 90 * GBPS, 0.02)
    assert _close(multipath_rate(8, link), 180 * GBPS, 0.02)
    barrier = collective(routed, params, "barrier")
    assert barrier.per_bit == 0 and barrier.startup == startup


def test_optweb_with_optnets_own_direct_switch(tmp_path):
    # docs/validation.md: optnet's switch and direct links take 2 + 2 + 4 cycles where the
    # paper's FPGA takes about 68 (two switches of about ten and 0.24 us of link logic), so
    # the start-up latency is 0.18 us under the paper's; the bandwidth is the same, as a beat
    # of 256 bits is exactly two of SerialLite III's 128-bit words.
    routed = _routed(tmp_path, "optweb_4", OPTWEB_OWN)
    params = model_params(routed.cluster)
    assert params.direct is not None
    link = routed.cluster.links[0]
    one = hop(params, link)
    assert (one.parts["router"], one.parts["link_layer"]) == (
        params.cycles(DIRECT_SWITCH_CYCLES), params.cycles(DIRECT_LINK_CYCLES))
    # serialisation: the EAGER word (the escape word and the body) and the beat (two words)
    assert one.parts["serialisation"] == 4 * Fraction(128, 2 * 64 * 355 * 10**6)
    startup = collective(routed, params, "sendrecv").startup
    assert round(float(startup / US), 3) == 0.536
    assert params.stream_rate(link) == 2 * 64 * 355 * 10**6
    assert _close(collective(routed, params, "sendrecv").node_rate(), 90 * GBPS, 0.02)
    # ... but the switch sends (and delivers) a beat of 256 bits a 200 MHz cycle: 51.2 Gb/s
    # out of a node and as much in, where OPTWEB's one DMA per peer fills every link
    assert params.node_rate == 256 * 200 * 10**6
    assert collective(routed, params, "scatter").node_rate() == params.node_rate
    assert collective(routed, params, "alltoall").node_rate() == 2 * params.node_rate


# ----------------------------------------------------------------------------- PlasticNet+

# §III: a 4-byte packet header (the sequence id in its BS_ID byte) and a CRC-32 per packet,
# over Aurora 8B/10B at 5 Gb/s on one lane; packets of 128 to 4096 bits (§V, Fig. 4).
PLASTICNET_OVERHEAD = 32 + 32


@pytest.mark.parametrize(("payload", "overhead"), [
    (128, Fraction(7, 15)), (1024, Fraction(21, 85)), (4096, Fraction(1 - Fraction(4, 5)
                                                                    * Fraction(4096, 4160)))])
def test_plasticnet_channel_overhead(payload, overhead):
    routed = linted_example("plasticnet_ring4").routed
    link = model_params(routed.cluster).link(routed.cluster.links[0])
    assert channel_overhead(link, payload, PLASTICNET_OVERHEAD) == overhead


def test_plasticnet_overhead_falls_towards_20_percent():
    routed = linted_example("plasticnet_ring4").routed
    link = model_params(routed.cluster).link(routed.cluster.links[0])
    curve = [channel_overhead(link, 128 << k, PLASTICNET_OVERHEAD) for k in range(6)]
    assert curve == sorted(curve, reverse=True)
    assert all(value > Fraction(1, 5) for value in curve)
    assert _close(channel_overhead(link, 2**20, PLASTICNET_OVERHEAD), Fraction(1, 5), 0.001)


def test_optnet_frame_on_the_plasticnet_link():
    # docs/validation.md's second curve: optnet's own frame on PlasticNet+'s link (a header
    # flit per packet, 64 flits per 72 units), tending to 1 - 4/5 x 64/72 = 28.9 %
    routed = linted_example("plasticnet_ring4").routed
    params = model_params(routed.cluster)
    link = routed.cluster.links[0]
    lp = params.link(link)
    curve = []
    for bits in (128, 1024, 4096, 2**20):
        payload, overhead = optnet_packet(params, link, bits // 32, 32)
        curve.append(round(100 * float(channel_overhead(lp, payload, overhead)), 1))
    assert curve == [43.1, 31.0, 29.4, 28.9]


@pytest.mark.xfail(strict=True, reason=(
    "optnet's link frame: a lone 32-bit flit waits for its frame's 8 header units and the "
    "next header's (17 units, 136 ns at 4 Gb/s): 409 ns against the paper's just over 300 "
    "(docs/validation.md, PlasticNet+)"))
def test_plasticnet_best_case_latency_is_about_300_ns():
    # §V: "just over 300 ns" between neighbours at light load, Aurora 8B/10B at 5 Gb/s; the
    # model, with optnet's router, link layer and hub and PG046's 37 user clocks for the
    # Aurora pair, from the example as it stands (no overrides)
    routed = linted_example("plasticnet_ring4").routed
    params = model_params(routed.cluster)
    one_hop = path_latency(routed, params, 0, 1).total
    assert _close(one_hop, 300 * NS, 0.10), float(one_hop / NS)


# ---------------------------------------------------------------------------------- BlueDBM

def test_bluedbm_link_rate_and_hop_latency(tmp_path):
    # §IV: two GTX lanes per link at 20 Gb/s, 0.48 us measured on the Aurora link
    routed = _routed(tmp_path, "bluedbm_20", "  phy: {aurora_64b66b: {hop: 0.48us}}\n")
    params = model_params(routed.cluster)
    link = params.link(routed.cluster.links[0])
    # 20 Gb/s is two 10 Gb/s lanes on the wire (BlueDBM's synth-aurora-ext.tcl: one lane per
    # Aurora 64B/66B core at 10.0 Gb/s); 64b/66b leaves 19.39 Gb/s
    assert link.lanes * link.line_rate == 20 * GBPS
    assert link.payload_rate == 20 * GBPS * Fraction(64, 66)
    one = hop(params, routed.cluster.links[0]).total
    assert Fraction(48, 100) * US < one < Fraction(1, 2) * US      # "under 0.5 us per hop"
    far = max(range(1, routed.net.size), key=lambda d: len(routed.routing.path(routed.net, 0, d)))
    hops = len(routed.routing.path(routed.net, 0, far))
    assert round_trip(routed, params, 0, far) < 2 * hops * Fraction(1, 2) * US + 4 * params.cycles(
        params.hub_cycles + params.router_cycles)


def test_bluedbm_hop_from_optnet_figures_alone_is_under_half_a_microsecond():
    routed = linted_example("bluedbm_20").routed
    params = model_params(routed.cluster)
    one = hop(params, routed.cluster.links[0])
    assert one.parts["phy"] == Fraction(55 * 64, 10 * GBPS)          # PG074: 55 user clocks
    assert Fraction(4, 10) * US < one.total < Fraction(1, 2) * US


# BlueDBM's transport packet (its source, bluedbm_connectald at abbf5cf,
# xilinx/aurora_64b66b/AuroraExtImport.bsv): three 64-bit words, each with one control bit;
# a 15-bit header (source, destination, endpoint, 5 bits each) in the first word, and the
# endpoint's credit flag in payload bit 0, which leaves 173 bits of user data of 192.
BLUEDBM_PAYLOAD, BLUEDBM_OVERHEAD = 173, 192 - 173


def test_bluedbm_85_percent_link_efficiency():
    routed = linted_example("bluedbm_20").routed
    link = model_params(routed.cluster).link(routed.cluster.links[0])
    rate = effective_rate(link, BLUEDBM_PAYLOAD, BLUEDBM_OVERHEAD)
    share = rate / (link.lanes * link.line_rate)
    assert share == Fraction(64, 66) * Fraction(173, 192)         # 87.4 %
    # the paper measures 17 of 20 Gb/s; the model is 2.4 points above (it has no clock
    # compensation, no link-credit stalls and no measurement overhead)
    assert abs(float(share) - 0.85) <= 0.03
    assert _close(rate, 17 * GBPS, 0.03)


def test_optnet_framing_of_the_bluedbm_example():
    # optnet's own framing of the example's 128-bit data endpoint: a header flit and a flit
    # per beat, 64 flits behind 2 header units per frame (the link is slower than its
    # layer's clock, so nothing else is lost)
    routed = linted_example("bluedbm_20").routed
    params = model_params(routed.cluster)
    beats = int(routed.cluster.desc.network.max_packet.value) - 1
    link = routed.cluster.links[0]
    frame = params.link_frame(link).frame
    assert (frame.header_units, frame.max_flits) == (2, 64)
    payload, overhead = optnet_packet(params, link, beats, 128)
    lp = params.link(link)
    assert effective_rate(lp, payload, overhead) / lp.payload_rate == Fraction(
        beats, beats + 1) * Fraction(64, 66)


def test_a_link_layer_slower_than_its_link_shows_the_idle_line_as_overhead():
    # BlueDBM's 19.39 Gb/s link behind a 100 MHz link layer (12.8 Gb/s of 128-bit units):
    # a unit takes a cycle, and the idle line counts as overhead
    import dataclasses

    routed = linted_example("bluedbm_20").routed
    params = dataclasses.replace(model_params(routed.cluster), clock=Fraction(100 * 10**6))
    link = routed.cluster.links[0]
    assert params.unit_time(link) == 10 * NS
    assert params.flit_time(link) == 10 * NS * Fraction(66, 64)
    payload, overhead = optnet_packet(params, link, 15, 128)
    lp = params.link(link)
    assert effective_rate(lp, payload, overhead) == Fraction(15, 16) * 128 * GBPS / 10 * Fraction(
        64, 66)


def test_credit_check_against_the_loop():
    # 10 ns packets over a 3 us loop: 300 packets must be sent before the first one's grant
    # is back; one budget of 512 with the grant sent 299 packets early covers it
    enough = CreditCheck(1, 512, 299, 3 * US, 10 * NS)
    assert (enough.window, enough.needed, enough.sufficient, enough.share) == (300, 300, True, 1)
    short = CreditCheck(1, 512, 255, 3 * US, 10 * NS)
    assert (short.window, short.needed, short.sufficient) == (256, 300, False)
    # 512 packets per loop and the 256 taken before the grant is sent
    assert short.share == Fraction(512 * 10, 3000 + 256 * 10)
    # a second budget adds a whole credit to the window
    assert CreditCheck(2, 512, 0, 3 * US, 10 * NS).window == 513


def _simulated_share(init_budget: int, credit: int, offset: int, loop: int, packets: int = 400
                     ) -> Fraction:
    """Packets per packet time a source sends under the endpoint's protocol, step by step:
    a packet takes 1 time unit to send; its grant, if it earns one, is usable ``loop`` units
    after it started; the receiver grants ``credit`` after ``credit - offset`` packets, then
    every ``credit``."""
    budget, start, arrivals, taken = init_budget * credit, [], [], offset
    t = 0
    for _ in range(packets):
        while budget == 0:
            t = max(t, arrivals.pop(0))
            budget += credit
        while arrivals and arrivals[0] <= t:
            arrivals.pop(0)
            budget += credit
        start.append(t)
        budget -= 1
        taken += 1
        if taken == credit:
            taken = 0
            arrivals.append(t + loop)
        t += 1
    # steady state: the second half of the run
    half = packets // 2
    return Fraction(packets - half, start[-1] - start[half] + 1) if start[-1] > start[half] \
        else Fraction(1)


@pytest.mark.parametrize(("init_budget", "credit", "offset", "loop"), [
    (1, 8, 2, 5), (1, 8, 2, 7), (1, 8, 2, 30), (1, 16, 0, 40), (2, 8, 3, 12), (2, 8, 3, 40),
    (3, 4, 1, 25), (1, 1, 0, 9)])
def test_credit_share_matches_the_protocol(init_budget, credit, offset, loop):
    check = CreditCheck(init_budget, credit, offset, Fraction(loop), Fraction(1))
    simulated = _simulated_share(init_budget, credit, offset, loop)
    assert abs(float(check.share - simulated)) < 0.02, (float(check.share), float(simulated))
    assert check.sufficient == (simulated >= 1)


# ------------------------------------------------------------------------------------ BEE3

# Table I: 64 ns per crossbar router, 24 ns per intra-enclosure hop, 541 ns per Aurora hop
# at 1.95 Gb/s, 88 ns more through the MGT router where the topology has one.
def _bee3(tmp_path, example, aurora_ns):
    model = ("  router_cycles: 16\n  hub_cycles: 0\n  phy: {lvds: {hop: 24ns}, "
             f"aurora_8b10b: {{hop: {aurora_ns}ns}}}}\n")
    routed = _routed(tmp_path, example, model)
    return diameter(routed, model_params(routed.cluster))


@pytest.mark.parametrize(("example", "aurora_ns", "routers", "intra", "aurora", "paper_ns"), [
    ("bee3_one_x8", 541, 6, 3, 2, 1530),
    ("bee3_two_x4", 541, 4, 2, 1, 845),
    ("bee3_four_x2", 541 + 88, 4, 2, 1, 933),
    ("bee3_eight_x1", 541 + 88, 3, 1, 1, 845)])
def test_bee3_table_one_diameters(tmp_path, example, aurora_ns, routers, intra, aurora,
                                  paper_ns):
    d = _bee3(tmp_path, example, aurora_ns)
    assert d.latency.routers == routers
    kinds = d.latency.hops
    assert sum(v for k, v in kinds.items() if k.startswith("lvds")) == intra
    assert sum(v for k, v in kinds.items() if k.startswith("aurora")) == aurora
    # One-x8's three intra hops are 64 ns in the paper (24 + 20 + 20), 72 ns here
    assert _close(d.latency.total, paper_ns * NS, 0.006), float(d.latency.total / NS)


# ------------------------------------------------------------------------------- CusComNet

# Table 1: B_l = 1600 Mb/s, T_l = 0, T_r = 0.57 us, T_a = 0.13 us, rho = 5 %.
TABLE1 = dict(link_rate=Fraction(1600 * 10**6), link_latency=Fraction(0),
              routing_latency=Fraction(57, 100) * US, app_latency=Fraction(13, 100) * US)


@pytest.mark.parametrize(("data", "packet", "k", "rho", "fit", "expected_us"), [
    (512, 528, 2, 0, 0, "2.06"),
    (512, 528, 4, 0, 0, "3.86"),
    (8192, 528, 2, Fraction(1, 20), 0, "18.275"),
    (8192, 528, 2, Fraction(1, 20), Fraction(1, 2) * US, "27.2")])
def test_cuscomnet_broadcast_model(data, packet, k, rho, fit, expected_us):
    params = dict(TABLE1, routing_latency=TABLE1["routing_latency"] + fit)
    t = cuscomnet_broadcast(data, packet, k, error_rate=rho, **params)
    assert t == Fraction(expected_us) * US


def test_cuscomnet_queueing_term():
    rate = TABLE1["link_rate"]
    # no background unicast traffic: no queueing (their stand-alone broadcast)
    assert cuscomnet_queueing(528, rate, 100 * US, Fraction(0), Fraction(2), 16) == 0
    # 10^6 packets/s over 100 us, 2 links each, 16 nodes x 4 queues: 200/64 packets queued
    t_q = cuscomnet_queueing(528, rate, 100 * US, Fraction(10**6), Fraction(2), 16)
    assert t_q == Fraction(528) / rate * Fraction(200, 64)
    with_q = cuscomnet_broadcast(512, 528, 2, queueing=t_q, **TABLE1)
    assert with_q - cuscomnet_broadcast(512, 528, 2, **TABLE1) == 2 * t_q   # k^ = 2 links


def test_cuscomnet_torus_longest_path_is_four_links():
    routed = linted_example("cuscomnet_torus16").routed
    assert max_links(routed, 0) == 4


# ------------------------------------------------------------------------- model structure

def test_latency_matrix_is_the_sum_of_its_hops(optweb):
    routed, params = optweb
    matrix = latency_matrix(routed, params)
    n = routed.net.size
    for s in range(n):
        for d in range(n):
            assert matrix[s][d] == path_latency(routed, params, s, d).total
    assert matrix[0][0] == path_latency(routed, params, 0, 0).total == params.cycles(10)


def test_every_collective_has_a_model(optweb):
    routed, params = optweb
    assert [collective(routed, params, c).name for c in COLLECTIVES] == list(COLLECTIVES)


def test_user_rate_caps_the_encoded_rate():
    link = LinkParams(2, Fraction(25 * GBPS), Fraction(64, 67), None, Fraction(0), Fraction(1))
    assert link.payload_rate == 2 * Fraction(25 * GBPS) * Fraction(64, 67)
    capped = LinkParams(2, Fraction(25 * GBPS), Fraction(64, 67), Fraction(20 * GBPS),
                        Fraction(0), Fraction(1))
    assert capped.payload_rate == 40 * GBPS


# ------------------------------------------------------------------ the model against the RTL

def _link_cycles(width: int, phy_width: int, phy_latency: int) -> tuple[int, LinkConfig]:
    """Network cycles from a lone flit entering one LinkLayer to it leaving the other, over
    the link model with the PHY clock at the network clock; and the configuration."""
    from optnet.plan.configs import FlitFormat

    from .test_hw_link import link_pair

    cfg = LinkConfig(FlitFormat(width=width, vcs=2, id_bits=3), phy_width, "phy", depth=8,
                     window=16, timeout=200)
    sim, a, b, _, _ = link_pair(cfg, 10e-9, phase=3e-9, latency=phy_latency, seed=1)
    cycles = []

    async def bench(ctx):
        await ctx.tick().repeat(300)             # the link comes up and goes idle
        # a lone flit on an idle link: well clear of the keepalive headers
        while not ctx.get(a.phy_tx.valid):
            await ctx.tick()
        while ctx.get(a.phy_tx.valid):
            await ctx.tick()
        await ctx.tick().repeat(10)
        ctx.set(a.tx_flit.valid, 1)
        ctx.set(a.tx_flit.payload, {"data": 5, "vc": 0, "head": 1, "tail": 1})
        while not ctx.get(a.tx_flit.ready):
            await ctx.tick()
        await ctx.tick()
        ctx.set(a.tx_flit.valid, 0)
        count = 1
        while not ctx.get(b.rx_flit.valid):
            await ctx.tick()
            count += 1
        cycles.append(count)

    sim.add_testbench(bench)
    sim.run()
    return cycles[0], cfg


@pytest.mark.parametrize(("width", "phy_width", "phy_latency"), [
    (32, 32, 0), pytest.param(32, 32, 4, marks=pytest.mark.slow), (128, 64, 0),
    pytest.param(64, 128, 0, marks=pytest.mark.slow)])
def test_link_layer_cycles_match_the_rtl(width, phy_width, phy_latency):
    from optnet.report.params import LINK_LAYER_CYCLES
    cycles, cfg = _link_cycles(width, phy_width, phy_latency)
    # the model: its link-layer cycles, the PHY's latency, and the units a lone flit waits
    # for (its header, itself, the next header), each in PHY words; a unit of several words
    # passes one more register, which the model (blind to the PHY's word) leaves out
    units = 2 * cfg.frame.header_units + 1
    assert cycles == (LINK_LAYER_CYCLES + phy_latency + units * cfg.words_per_unit
                      + (cfg.words_per_unit > 1))


@pytest.mark.parametrize("example", sorted(p.stem for p in (ROOT / "examples").glob("*.yaml")))
def test_model_frame_and_header_are_the_hardwares(example):
    # the model sits below the hardware stages, so it sizes frames, replay windows and
    # headers itself, with the same function the hardware's configuration uses
    from optnet.plan import plan

    routed = linted_example(example).routed
    params = model_params(routed.cluster)
    node = plan(routed)[0]
    links = [lk for lk in routed.cluster.links if node.node in (lk.a.node, lk.b.node)]
    if node.direct is not None:
        # a direct node: the model's switch and PHY words are the plan's
        sizes, cfg = params.direct, node.direct
        assert (sizes.width, sizes.threshold, sizes.buffer, sizes.endpoints) == (
            cfg.width, cfg.threshold, cfg.buffer, cfg.endpoints)
        assert sizes.control_bits == cfg.control.size
        assert {(port.link.data_words, port.link.control_words) for port in node.ports} == {
            (sizes.data_words(params.phy_bits[lk.index]),
             sizes.control_words(params.phy_bits[lk.index])) for lk in links}
        assert params.router_cycles == DIRECT_SWITCH_CYCLES
        return
    assert {(port.link.frame, port.link.window_size) for port in node.ports} == {
        (params.link_frame(lk).frame, params.link_frame(lk).entries) for lk in links}
    assert params.header_bits == node.fmt.header_bits
    assert params.router_cycles == routed.cluster.desc.network.router.pipeline + int(
        node.router.block_tables)


# ------------------------------------------------ link efficiency: the model against the RTL

def _bench_link():
    # bench/link.py measures payload per line bit on two link layers in simulation
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_link", ROOT / "bench" / "link.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("example", "size"), [
    pytest.param("plasticnet_ring4", 512, marks=pytest.mark.slow),
    pytest.param("bluedbm_20", 256, marks=pytest.mark.slow),
    pytest.param("bluedbm_20", 4096, marks=pytest.mark.slow),
    pytest.param("cuscomnet_torus16", 512, marks=pytest.mark.slow),
    pytest.param("optweb_4", 1024, marks=pytest.mark.slow)])
def test_bandwidth_model_is_the_simulated_link(example, size):
    # issue 18: the report's bandwidth model within 2 % of the RTL's figure
    bench = _bench_link()
    cfg = bench.Config(example)
    measured, modelled = bench.measure(cfg, size), bench.modelled(cfg, size)
    assert abs(measured - modelled) <= 0.02 * modelled, (measured, modelled)
    target = bench.TARGETS.get((example, size))
    assert target is None or measured >= target, (measured, target)


def test_a_large_credit_widens_the_header_argument(tmp_path):
    # The endpoints' reset handshake sends a peer's held count in the header's argument:
    # a credit of 1000 with two budgets needs 18 bits, which the plan and the model both
    # give (a 16-bit argument made the plan fail with an internal error).
    from optnet.plan import plan

    path = tmp_path / "big.yaml"
    path.write_text(
        "optnet: 1\nname: big\n"
        "defaults: {board: vc707, link: {phy: aurora_64b66b, lanes: 2, line_rate: 10Gbps}}\n"
        "topology: {kind: ring, nodes: 4}\n"
        "endpoints:\n"
        "  - {name: d, width: 64, buffer: 4096 packets, credit: 1000, offset: 500,\n"
        "     init_budget: 2}\n")
    result = lint_file(path)
    assert result.ok, [str(d) for d in result.diagnostics]
    node = plan(result.routed, tables=False, one_per_role=True)[0]
    assert node.fmt.arg_bits == 18
    assert node.fmt.header_bits == model_params(result.cluster).header_bits


def test_bluedbm_credit_loop_sizes_the_router_buffer():
    # BlueDBM's links: 372 ns of PHY pair and cable each way, both link layers (12 cycles)
    # and the router (3) and the credit's 2 cycles at 6.4 ns, and 2 x 64 + 3 x 2 units of
    # frames at 6.6 ns (128 bits at 20 Gb/s x 64/66): 264 flits of 6.8 ns, so 512 per VC
    routed = linted_example("bluedbm_20").routed
    params = model_params(routed.cluster)
    link = routed.cluster.links[0]
    unit = Fraction(128) / (20 * GBPS * Fraction(64, 66))
    assert params.unit_time(link) == unit
    loop = 2 * params.one_way(link) + 29 * Fraction(64, 10) * NS + 134 * unit
    assert params.credit_loop(link) == loop
    assert params.credit_depth(link) == 264
    assert params.buffer_depth == 512
    assert params.vc_share(link) == 1
    assert params.vc_share(link, 16) == Fraction(16, 264)


def test_a_buffer_set_in_the_file_is_kept(tmp_path):
    # the file's buffer wins, however short of the loop; the plan builds what the model says
    from optnet.plan import plan

    text = (ROOT / "examples" / "bluedbm_20.yaml").read_text().replace(
        "preset: bluedbm_torus4x5", "preset: bluedbm_torus4x5\nnetwork: {router: {buffer: "
        "64 flits}}")
    path = tmp_path / "short.yaml"
    path.write_text(text)
    result = lint_file(path)
    assert [d.code for d in result.diagnostics if d.code == "W107"] == ["W107"]
    params = model_params(result.routed.cluster)
    assert params.buffer_depth == 64
    assert params.vc_share(result.routed.cluster.links[0]) == Fraction(64, 264)
    node = plan(result.routed, one_per_role=True)[0]
    assert node.router.depth == 64
    assert {p.link.depth for p in node.ports} == {64}


@pytest.mark.parametrize(("example", "depth"), [
    ("bluedbm_20", 512), ("cuscomnet_torus16", 256), ("ulx3s_ring4", 256),
    ("plasticnet_ring4", 256), ("bee3_one_x8", 512)])
def test_every_example_covers_its_credit_loops(example, depth):
    # sized or set, every VC of every link can stream at its link's rate
    from optnet.plan import plan

    routed = linted_example(example).routed
    params = model_params(routed.cluster)
    assert params.buffer_depth == depth
    assert all(params.vc_share(link) == 1 for link in routed.cluster.links)
    assert plan(routed, one_per_role=True)[0].router.depth == depth


@pytest.mark.parametrize(("example", "timeout"), [("bluedbm_20", 1024), ("ulx3s_ring4", 2538)])
def test_the_go_back_timer_outlasts_a_full_replay_buffer(example, timeout):
    # BlueDBM's link moves a unit a cycle and its window's time is well under the floor;
    # the ULX3S ring's takes 6.25 cycles a unit (32 bits at 256 Mb/s, 50 MHz): twice its
    # 203-unit window is 2,538 cycles
    from optnet.model import GO_BACK_TIMEOUT
    from optnet.plan import plan

    routed = linted_example(example).routed
    params = model_params(routed.cluster)
    link = routed.cluster.links[0]
    per_unit = params.unit_time(link) * params.clock
    assert params.go_back_timeout(link) == timeout
    assert timeout >= GO_BACK_TIMEOUT and timeout >= 2 * params.replay_window(link) * per_unit
    assert {p.link.timeout for p in plan(routed, one_per_role=True)[0].ports} == {timeout}
