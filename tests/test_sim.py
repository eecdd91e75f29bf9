"""``optnet sim``: the setup, the traffic, the Verilator build and whole runs.

The runs use the shipped examples' generated Verilog through Verilator; the compiled
simulators are cached (:func:`optnet.report.resources.cache_dir`), so each role is built once
per machine. The fast tier runs the ULX3S ring (one role, LVDS links) with each kind of
traffic; the slow tier adds the other families, bit errors, link failures and broadcasts.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from optnet.cli import cli
from optnet.sim import Failure, SimOptions, TrafficError, simulate
from optnet.sim.build import SimBuildError, find_verilator, verilator_name
from optnet.sim.report import predictions
from optnet.sim.setup import Traffic, permutation, read_messages, sim_setup

from .conftest import ROOT, linted
from .hwtools import missing_tool

RING = ROOT / "examples" / "ulx3s_ring4.yaml"


def _needs_verilator() -> None:
    try:
        find_verilator()
    except SimBuildError as err:
        missing_tool("verilator", str(err))
    for tool, what in [("g++", "Verilator's models are compiled with a C++ compiler"),
                       ("make", "Verilator's models are compiled with make")]:
        if not shutil.which(tool):
            missing_tool(tool, what)


def _setup(example: Path):
    from optnet.plan import plan

    routed = linted(example).routed
    return routed, plan(routed)


# -- without Verilator -----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "encoded"), [
    ("phy1_tx__valid", "phy1_tx___05Fvalid"),
    ("app_s_axis_tdata", "app_s_axis_tdata"),
    ("x___y", "x___05F_y"),
    ("n0.router", "n0__02Erouter"),
    ("1a", "__031a"),
])
def test_verilator_names(name, encoded):
    assert verilator_name(name) == encoded


def test_transpose_and_tornado_destinations():
    assert permutation("transpose", 4) == (-2, 2, 1, -2)
    assert permutation("transpose", 9)[1] == 3 and permutation("transpose", 9)[4] == -2
    # 8 nodes: not a square, the id's 3 bits rotated left by 1
    assert permutation("transpose", 8) == (-2, 2, 4, 6, 1, 3, 5, -2)
    assert permutation("tornado", 4) == (1, 2, 3, 0)
    assert permutation("tornado", 5) == (2, 3, 4, 0, 1)
    with pytest.raises(TrafficError, match="square number of nodes or a power of two; this "
                                           "cluster has 6"):
        permutation("transpose", 6)


def test_setup_of_the_ulx3s_ring():
    routed, plans = _setup(RING)
    setup = sim_setup(routed, plans)
    # the 50 MHz network clock, and the LVDS links' 16-bit words at 256 Mb/s
    assert [float(hz) for hz in setup.clocks_hz] == [50e6, 16e6]
    assert setup.half_ps == (10_000, 31_250)
    assert setup.role_of == (0, 0, 0, 0)
    assert len(setup.lines) == 2 * len(routed.cluster.links)
    first = setup.lines[0]
    assert (first.tx, first.rx, first.link, first.clock, first.bits) == ((0, 0), (1, 0), 0, 1, 16)
    # 20 ns of PHY pair and 0.3 m of cable are a third of a 16 MHz cycle: the floor, 1
    assert {line.latency for line in setup.lines} == {1}


def test_link_latency_in_phy_cycles():
    routed, plans = _setup(ROOT / "examples" / "optweb_4.yaml")
    setup = sim_setup(routed, plans)
    # SerialLite III at 25 Gb/s: 128-bit words at 373.13 MHz; 150 ns of PHY pair and 3 m of
    # cable at 5 ns/m are 61.6 cycles, 62, less the cycle of the node's receive register
    assert [float(hz) for hz in setup.clocks_hz] == [200e6, pytest.approx(373.134e6, rel=1e-5)]
    assert {(line.latency, line.bits) for line in setup.lines} == {(61, 128)}


def test_messages_from_csv(tmp_path):
    routed, plans = _setup(RING)
    setup = sim_setup(routed, plans)
    path = tmp_path / "t.csv"
    path.write_text("src,dst,bytes,t\nn0,n2,4,0\nn1.app,*,9,100\n", encoding="utf-8")
    # 4 bytes: one 32-bit beat; 9 bytes: three; 100 ns: 5 cycles at 50 MHz
    assert read_messages(path, setup) == ((0, 0, 0, 2, 1), (1, 0, 5, -1, 3))
    for text, message in [
        ("n0,n9,4,0\n", "row 1: the destination 'n9' names no node of the cluster (or '*' "
                        "for a broadcast)."),
        ("n0,n1,4\n", "row 1: a message has 4 fields (src,dst,bytes,t), not 3."),
        ("n0.x,n1,4,0\n", "row 1: node n0 has no endpoint 'x' (it has app)."),
        ("n0,n0,4,0\n", "row 1: node n0 sends a message to itself"),
        ("n0,n1,four,0\n", "row 1: bytes must be a whole number and t a time in nanoseconds, "
                           "not 'four' and '0'."),
        ("\n", "holds no messages."),
    ]:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(TrafficError) as err:
            read_messages(path, setup)
        assert message in str(err.value)


def test_predictions_of_the_ring():
    routed, plans = _setup(RING)
    setup = sim_setup(routed, plans)
    uniform = predictions(routed, setup, Traffic("uniform"))
    # the LVDS links are the bottleneck: 7-beat packets are 8 flits
    assert uniform.bottleneck.startswith("link ")
    assert 0 < uniform.saturation < 1
    assert uniform.zero_load_ns > 1000
    tornado = predictions(routed, setup, Traffic("tornado"), permutation("tornado", 4))
    assert tornado.zero_load_ns < uniform.zero_load_ns     # one hop each, against 1.33
    assert predictions(routed, setup, Traffic("broadcast")).saturation is None


# -- runs --------------------------------------------------------------------------------------


def _run(example: Path, **options) -> dict:
    _needs_verilator()
    routed, plans = _setup(example)
    doc, files = simulate(routed, plans, SimOptions(**options), jobs=2)
    assert json.loads(files["sim.json"]) == json.loads(json.dumps(doc))
    return doc


def test_the_ring_delivers_every_packet_once_in_order_and_intact():
    doc = _run(RING, packets=60, load=0.05)
    assert doc["verdict"] == "complete" and doc["ok"] and doc["missing"] == []
    assert doc["packets"]["delivered"] == doc["packets"]["expected"] == 4 * 60
    assert doc["errors"] == {"missing": 0, "out_of_order": 0, "unexpected": 0, "corrupt": 0}
    (unicast,) = doc["classes"]
    assert unicast["packets"] == 240 and unicast["beats"] == 240 * 7
    head, packet = unicast["head_ns"], unicast["packet_ns"]
    assert 0 < head["min"] <= head["p50"] <= head["p99"] <= head["max"]
    assert packet["mean"] >= head["mean"]
    assert all(link["flits"] > 0 for link in doc["links"])
    assert sum(link["flits"] for link in doc["links"]) >= 240 * 8


def test_both_directions_of_a_slow_link_stream_at_its_rate():
    # n0 and n1 of the ULX3S ring stream to each other. Each direction's replay buffer queues
    # a few frames behind the slow link (6.25 network cycles a unit): its go-back timer must
    # outlast them, or it resends what the far end took and each direction gets about half
    # (58 % with a fixed 1,024-cycle timer). The rest is the endpoints' start-up.
    doc = _run(RING, pattern="pair:n0.app:n1,n1.app:n0", load=1.0, cycles=20_000)
    (a, b) = [x for x in doc["links"] if x["flits"] > 100]
    assert {a["from"], b["to"]} == {"n0.gpio_link0"} and a["utilisation"] > 0.85
    assert {b["from"], a["to"]} == {"n1.gpio_link0"} and b["utilisation"] > 0.85
    assert all(port["resent"] == 0 for ports in doc["link_counters"].values()
               for port in ports)


def test_csv_messages_and_broadcasts_arrive(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("n0,n2,64,0\nn1,*,16,0\nn3,n0,4,500\n", encoding="utf-8")
    doc = _run(RING, pattern=str(path))
    assert doc["ok"], doc["errors"]
    # 64 bytes: 16 beats in three packets (7 + 7 + 2), a 4-beat broadcast to 3 nodes, 1
    assert doc["packets"]["delivered"] == 3 + 3 + 1
    assert {c["kind"] for c in doc["classes"]} == {"unicast", "broadcast"}


def test_the_bringup_kit_runs_in_simulation():
    doc = _run(RING, pattern="bringup", cycles=40_000)
    assert doc["verdict"] == "time_limit" and doc["ok"]
    for node, regs in doc["bringup"].items():
        assert regs["magic"] == 0x4F50544E
        assert regs["link_up"] == 0b11, node
        assert regs["app.sent"] > 10 and regs["app.received"] > 10, node
        assert regs["app.out_of_sequence"] == regs["app.bad_beats"] == 0


def test_cli_writes_the_reports_and_exits_by_the_verdict(tmp_path):
    _needs_verilator()
    out = tmp_path / "sim"
    result = CliRunner().invoke(cli, ["sim", str(RING), "--packets", "20", "--traffic",
                                      "tornado", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Verdict: every packet arrived. Errors: none." in result.output
    assert sorted(p.name for p in out.iterdir()) == ["sim.html", "sim.json", "sim.md"]
    doc = json.loads((out / "sim.json").read_text())
    assert doc["settings"]["pattern"] == "tornado" and doc["packets"]["delivered"] == 80
    bad = CliRunner().invoke(cli, ["sim", str(RING), "--fail", "9:0:10"])
    assert bad.exit_code == 2
    assert "--fail names link 9, but ulx3s_ring4 has links 0 to 3." in bad.output
    bad = CliRunner().invoke(cli, ["sim", str(RING), "--fail", "x"])
    assert bad.exit_code == 2 and "is not LINK:START:END" in bad.output
    bad = CliRunner().invoke(cli, ["sim", str(RING), "--trace-nodes", "n0,n9"])
    assert bad.exit_code == 2
    assert "--trace-nodes names no node called 'n9' in " in bad.output
    bad = CliRunner().invoke(cli, ["sim", str(RING), "--trace", str(tmp_path / "a\nb")])
    assert bad.exit_code == 2
    assert "a folder name with a line break cannot be given to the simulator." in bad.output


@pytest.mark.slow
def test_bit_errors_are_corrected_by_the_link_layers():
    doc = _run(RING, packets=150, load=0.05, ber=2e-5)
    assert doc["ok"], doc["errors"]
    assert sum(link["flipped_bits"] for link in doc["links"]) > 0
    counters = [c for ports in doc["link_counters"].values() for c in ports]
    assert sum(c["crc_errors"] for c in counters) > 0
    assert sum(c["resent"] for c in counters) > 0


@pytest.mark.slow
def test_a_failed_link_comes_back_and_loses_nothing():
    doc = _run(RING, packets=150, load=0.05, failures=(Failure(0, 20_000, 60_000),))
    assert doc["ok"], doc["errors"]
    assert doc["packets"]["delivered"] == doc["packets"]["expected"]
    assert sum(line["lost_words"] for line in doc["links"]) > 0


@pytest.mark.slow
def test_the_checker_sees_corruption_on_a_direct_cluster_without_link_layer():
    # OPTWEB trusts its PHY's ECC: bit errors the link model makes reach the user
    doc = _run(ROOT / "examples" / "optweb_4.yaml", packets=200, load=0.3, ber=1e-4)
    assert not doc["ok"]
    assert doc["errors"]["corrupt"] > 0


@pytest.mark.slow
def test_the_direct_cluster_delivers_everything():
    doc = _run(ROOT / "examples" / "optweb_4.yaml", packets=300, load=0.3)
    assert doc["ok"] and doc["packets"]["delivered"] == 4 * 300


@pytest.mark.slow
def test_cascade_broadcasts_on_the_cuscomnet_torus():
    doc = _run(ROOT / "examples" / "cuscomnet_torus16.yaml", pattern="broadcast", packets=8,
               load=0.02)
    assert doc["ok"], doc["errors"]
    eps = len(doc["classes"])
    assert doc["packets"]["delivered"] == 16 * 8 * 15 * eps


@pytest.mark.slow
def test_cascade_on_a_4x4_torus_delivers_everything_under_mixed_load(tmp_path):
    # CusComNet's network with cascade broadcast, two priority classes and small buffers
    # (tests/hw/torus4x4_cascade.yaml): every endpoint of every node sends random unicasts
    # and broadcasts (30 %) of one to four packets, users taking beats at random. Every
    # broadcast reaches the 15 other nodes exactly once, in its source's order, every
    # unicast arrives once and intact, nothing is dropped. A broadcast takes a path of up
    # to four links, each node storing it whole and forwarding it once its predecessor's
    # copies are in.
    rng = random.Random(3)
    rows = []
    for node in range(16):
        for ep in ("a", "b"):
            t = 0.0
            for _ in range(10):
                t += rng.expovariate(1 / 400)
                others = [d for d in range(16) if d != node]
                dst = "*" if rng.random() < 0.3 else f"n{rng.choice(others)}"
                rows.append(f"n{node}.{ep},{dst},{rng.choice([4, 8, 16, 32])},{t:.0f}")
    path = tmp_path / "mixed.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    doc = _run(ROOT / "tests" / "hw" / "torus4x4_cascade.yaml", pattern=str(path), ready=0.7)
    assert doc["ok"] and doc["verdict"] == "complete", doc["errors"]
    assert doc["errors"] == {"missing": 0, "out_of_order": 0, "unexpected": 0, "corrupt": 0}
    assert doc["packets"]["delivered"] == doc["packets"]["expected"]
    assert not doc["dropped"]
    kinds = {c["kind"] for c in doc["classes"]}
    assert kinds == {"unicast", "broadcast"}


@pytest.mark.slow
@pytest.mark.parametrize("example", ["plasticnet_ring4", "bee3_four_x2", "bluedbm_20"])
def test_examples_of_several_roles_and_endpoints_deliver_everything(example):
    # PlasticNet: 2 roles; BEE3 x2 links: 4 roles of 32 nodes; BlueDBM: 3 endpoints, and
    # the managed ones' reset handshake between all 20 nodes at once (after the power-on
    # reset) while every endpoint sends: more peers than the 'data' endpoint's 4-bit tags
    # count (test_hw_endpoint_reset.test_nodes_reset_together_lose_no_packet)
    doc = _run(ROOT / "examples" / f"{example}.yaml", packets=20, load=0.02)
    assert doc["ok"], doc["errors"]
    eps = len({c["endpoint"] for c in doc["classes"]})
    nodes = len(doc["link_counters"])
    assert doc["packets"]["delivered"] == doc["packets"]["expected"] == nodes * eps * 20


@pytest.mark.slow
def test_waveforms_of_the_nodes_asked_for(tmp_path):
    doc = _run(RING, packets=3, trace=tmp_path, trace_nodes=("n1",))
    assert doc["ok"]
    assert [p.name for p in tmp_path.iterdir()] == ["n1.vcd"]
    text = (tmp_path / "n1.vcd").read_text()
    assert "$timescale 1ps $end" in text and " app_s_axis_tvalid $end" in text
    # the network clock's edges, every 10 ns at 50 MHz, in picoseconds
    assert "\n#10000\n" in text and "\n#20000\n" in text


def test_predictions_count_a_short_buffers_credit_loop(tmp_path):
    # the ring with the preset's old 8-flit buffers: one VC of a link carries 8 flits per
    # 140-flit credit loop, far less than the link, and that is what saturates first
    path = tmp_path / "short.yaml"
    path.write_text(RING.read_text(encoding="utf-8").replace(
        "preset: ulx3s_ring4", "preset: ulx3s_ring4\nnetwork: {router: {buffer: 8 flits}}"),
        encoding="utf-8")
    routed, plans = _setup(path)
    setup = sim_setup(routed, plans)
    params = setup.params
    link = routed.cluster.links[0]
    assert params.vc_share(link) < 0.1
    short = predictions(routed, setup, Traffic("uniform"))
    assert short.bottleneck.startswith("VC ")
    ring, ring_plans = _setup(RING)
    sized = predictions(ring, sim_setup(ring, ring_plans), Traffic("uniform"))
    assert short.saturation < 0.2 * sized.saturation
