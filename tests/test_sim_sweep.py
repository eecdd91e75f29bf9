"""``optnet sim``'s pair traffic and load sweeps: parsing and diagnostics, the predictions of a
pair, the sweep's table and curve from made-up results, and real runs on the ULX3S ring.

The real runs use the ring's simulator, cached as :mod:`tests.test_sim`'s runs are (one
build per machine, shared with them).
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from optnet.cli import cli
from optnet.report import plots
from optnet.routing.latency import path_latency
from optnet.sim import SimOptions, TrafficError, simulate, sweep
from optnet.sim.report import predictions, sim_summary, sweep_files, sweep_summary
from optnet.sim.run import SimResult
from optnet.sim.setup import Traffic, parse_loads, read_pairs, sim_setup

from .conftest import ROOT
from .test_sim import RING, _needs_verilator, _setup

BLUEDBM = ROOT / "examples" / "bluedbm_20.yaml"


@pytest.fixture(scope="module")
def ring():
    routed, plans = _setup(RING)
    return routed, sim_setup(routed, plans)


# -- pairs -------------------------------------------------------------------------------------


def test_pairs_name_an_endpoint_or_every_endpoint_of_a_node(ring):
    ring_setup = ring[1]
    assert read_pairs("pair:n0:n2", ring_setup) == ((0, 0, 2),)
    assert read_pairs("pair:n0.app:n1, n3:n2", ring_setup) == ((0, 0, 1), (3, 0, 2))
    routed, plans = _setup(BLUEDBM)
    setup = sim_setup(routed, plans)
    # cmd, data, raw: a node alone is all three, an endpoint named is that one
    assert read_pairs("pair:n0:n6", setup) == ((0, 0, 6), (0, 1, 6), (0, 2, 6))
    assert read_pairs("pair:n0.data:n1,n5.data:n6", setup) == ((0, 1, 1), (5, 1, 6))


@pytest.mark.parametrize(("text", "message"), [
    ("pair:", "--traffic pair:: no pair given; write pair:SRC:DST (SRC a node or "
              "node.endpoint, DST a node), several joined by commas."),
    ("pair:n0", "--traffic pair:n0: 'n0' is not SRC:DST (SRC a node or node.endpoint, DST a "
                "node)."),
    ("pair:n0:n1:n2", "--traffic pair:n0:n1:n2: 'n0:n1:n2' is not SRC:DST (SRC a node or "
                      "node.endpoint, DST a node)."),
    ("pair:n0:n1,", "--traffic pair:n0:n1,: '' is not SRC:DST (SRC a node or node.endpoint, "
                    "DST a node)."),
    ("pair:n9:n1", "--traffic pair:n9:n1: the source 'n9' names no node of the cluster."),
    ("pair:n0.data:n1", "--traffic pair:n0.data:n1: node n0 has no endpoint 'data' (it has "
                        "app)."),
    ("pair:n0:n7", "--traffic pair:n0:n7: the destination 'n7' names no node of the cluster."),
    ("pair:n1.app:n1", "--traffic pair:n1.app:n1: node n1 sends to itself; the network "
                       "carries packets between nodes."),
    ("pair:n0:n1,n0.app:n2", "--traffic pair:n0:n1,n0.app:n2: endpoint n0.app is in two "
                             "pairs; each endpoint sends to one destination."),
])
def test_pair_diagnostics(ring, text, message):
    with pytest.raises(TrafficError) as err:
        read_pairs(text, ring[1])
    assert str(err.value) == message


def test_the_cli_refuses_a_bad_pair_before_building():
    # (the traffic is checked before the simulator is built: no Verilator needed)
    result = CliRunner().invoke(cli, ["sim", str(RING), "--traffic", "pair:n0:n9"])
    assert result.exit_code == 2
    assert "optnet: --traffic pair:n0:n9: the destination 'n9' names no node of the " \
           "cluster.\n" in result.output


def test_predictions_of_a_pair(ring):
    routed, setup = ring
    params = setup.params
    two = predictions(routed, setup, Traffic("pair:n0:n2", pairs=((0, 0, 2),)))
    assert two.zero_load_ns == pytest.approx(
        float(path_latency(routed, params, 0, 2).total) * 1e9)
    # one 7-beat packet (8 flits) stream over the first link of its path: the link's flit
    # rate over 8/7 flits a beat; uniform traffic loads the ring's links less per endpoint
    link = routed.net.link(routed.routing.path(routed.net, 0, 2)[0])
    per_cycle = min(1.0, float(1 / (params.flit_time(link) * params.clock)))
    assert two.saturation == pytest.approx(per_cycle * 7 / 8)
    assert two.bottleneck.startswith("link ")
    uniform = predictions(routed, setup, Traffic("uniform"))
    assert uniform.saturation > two.saturation
    one = predictions(routed, setup, Traffic("pair:n0:n1", pairs=((0, 0, 1),)))
    assert one.zero_load_ns < two.zero_load_ns


def test_a_pair_of_one_endpoint_among_several_loads_its_path_alone():
    routed, plans = _setup(BLUEDBM)
    setup = sim_setup(routed, plans)
    data = predictions(routed, setup, Traffic("pair", pairs=((0, 1, 1),)))
    every = predictions(routed, setup, Traffic("pair", pairs=((0, 0, 1), (0, 1, 1), (0, 2, 1))))
    # three endpoints on one link share it: a third of the load each
    assert data.saturation == pytest.approx(min(1.0, 3 * every.saturation))
    assert data.zero_load_ns == pytest.approx(every.zero_load_ns)


# -- loads -------------------------------------------------------------------------------------


def test_load_lists():
    assert parse_loads("0.1") == (0.1,)
    assert parse_loads("0.1, 0.3,0.5,1") == (0.1, 0.3, 0.5, 1.0)
    for text, item in [("0", "'0'"), ("1.5", "'1.5'"), ("x", "'x'"), ("", "''"),
                       ("0.1,,0.2", "''"), ("nan", "'nan'"), ("0.2,-1", "'-1'")]:
        with pytest.raises(ValueError) as err:
            parse_loads(text)
        assert str(err.value) == (f"{item} is not an offered load: each of the "
                                  "comma-separated loads is a number above 0 and at most 1 "
                                  "(beats per network cycle per endpoint).")


def test_the_cli_refuses_bad_loads_and_sweeps_without_a_load(tmp_path):
    result = CliRunner().invoke(cli, ["sim", str(RING), "--load", "0.1,2"])
    assert result.exit_code == 2
    assert "'2' is not an offered load" in result.output
    for args, message in [
        (["--traffic", "bringup"], "The traffic bringup sets its own load; a sweep of offered "
                                   "load runs a synthetic pattern or pairs."),
        (["--trace", str(tmp_path)], "Waveforms are written for one run; give --trace with a "
                                     "single --load."),
    ]:
        result = CliRunner().invoke(cli, ["sim", str(RING), "--load", "0.1,0.2", *args])
        assert result.exit_code == 2, result.output
        assert f"optnet: {message}\n" in result.output


# -- the sweep's report, from made-up runs -----------------------------------------------------


def _made_up(setup, load: float, accepted: float, head: float, ok: bool = True) -> SimResult:
    # a harness result of a 10,000-cycle run of uniform traffic on the ring (4 endpoints);
    # latencies in network cycles (20 ns at 50 MHz)
    window = 8000
    beats = round(accepted * window * 4)
    stats = {"min": head * 0.5, "mean": head, "p50": head, "p99": head * 2, "max": head * 3}
    return SimResult({
        "verdict": "time_limit" if ok else "stalled", "wall_s": 0.5, "cycles": 10_400,
        "traffic_cycles": 10_000, "links_up_cycle": 300, "window_start": 2000,
        "window_beats": beats, "window_bits": beats * 32, "delivered": 100, "expected": 100,
        "errors": {"missing": 0 if ok else 3, "out_of_order": 0, "unexpected": 0,
                   "corrupt": 0},
        "missing": [] if ok else [[1, 0, 0, 0, 7, 900]],
        "classes": [{"endpoint": 0, "broadcast": False, "packets": 100, "beats": 700,
                     "head": stats, "packet": {**stats, "mean": head * 4}},
                    {"endpoint": 0, "broadcast": True, "packets": 0, "beats": 0,
                     "head": stats, "packet": stats}],
        "sources": [{"made": 25, "sent": 25, "sent_beats": 175, "refused": 0, "queued": 0,
                     "received_beats": 175}] * 4,
        "lines": [{"flits": 10, "words": 10, "flipped": 0, "lost_words": 0}] * len(setup.lines),
        "ports": [[{"crc_errors": 0}, {"crc_errors": 0}]] * 4, "dropped": [0] * 4})


def test_the_sweep_table_and_curve(ring):
    routed, setup = ring
    prediction = predictions(routed, setup, Traffic("uniform"))
    runs = [sim_summary(setup, Traffic("uniform", load=load, cycles=10_000),
                        _made_up(setup, load, accepted, head, ok), prediction,
                        {"cluster": "ulx3s_ring4", "seed": 3})
            for load, accepted, head, ok in [(0.01, 0.01, 12.5, True),
                                             (0.1, 0.06, 45.0, True),
                                             (0.05, 0.05, 20.0, False)]]
    doc = sweep_summary(runs)
    assert doc["settings"]["loads"] == [0.01, 0.1, 0.05] and "load" not in doc["settings"]
    assert not doc["ok"] and len(doc["runs"]) == 3
    files = sweep_files(doc)
    assert json.loads(files["sim.json"]) == json.loads(json.dumps(doc))
    md = files["sim.md"]
    assert md.startswith("# optnet report: ulx3s_ring4 load sweep\n")
    assert ("Traffic uniform, seed 3, at 3 offered loads (0.01, 0.1, 0.05 beats a cycle per "
            "sending endpoint), each run 10,000 network cycles") in md
    assert "Runs with errors: load 0.05, stalled: 3 missing." in md
    # a row per run and flow class (the empty broadcast class left out), in the order run
    rows = re.findall(r"^\| (0\.\d+) \| ([\d.]+) \| ([\d.]+ Gb/s) \| app \| unicast \| 100 \| "
                      r"([\d,.]+) \| ([\d,.]+) \| ([\d,.]+) \| ([\d,.]+) \| (.*) \|$", md, re.M)
    assert [(r[0], r[1], r[4], r[7]) for r in rows] == [
        ("0.01", "0.010", "250.0", "ok"), ("0.1", "0.060", "900.0", "ok"),
        ("0.05", "0.050", "400.0", "stalled: 3 missing")]
    assert rows[1][2] == f"{0.06 * 32 * 50e6 / 1e9:.2f} Gb/s" and rows[1][5] == "1,800.0"
    # the models beside the sweep: least head latency, mean at the lowest load; most accepted
    assert (f"| zero-load latency | {prediction.zero_load_ns:,.1f} ns | 125.0 ns / 250.0 ns "
            "at offered 0.01 |") in md
    assert (f"| saturation load (beats/cycle/endpoint) | {prediction.saturation:.3f} | 0.060 at "
            "offered 0.1 |") in md
    assert "<svg" not in md
    html = files["sim.html"]
    (svg,) = re.findall(r"<svg.*?</svg>", html, re.S)
    assert "Head latency against accepted load, ulx3s_ring4, uniform" in svg
    assert f"model saturation {prediction.saturation:.3g}" in svg
    assert f"model zero-load {prediction.zero_load_ns:,.0f} ns" in svg
    # the points joined in offered order (0.01, 0.05, 0.1), each a marker with its figures
    assert "app unicast at offered 0.05: accepted 0.050, mean head latency 400.0 ns" in svg
    polylines = re.findall(r'<polyline [^>]*stroke="#1f77b4"[^>]*points="([^"]+)"', svg)
    (points,) = [p for p in polylines if len(p.split()) == 3]
    xs = [float(p.split(",")[0]) for p in points.split()]
    assert xs == sorted(xs)


def test_curve_axes_reach_the_reference_lines():
    svg = str(plots.curve("t", {"a": [(0.1, 50.0, "p"), (0.2, 80.0, "q")]}, "x", "y",
                          vertical=(0.7, "sat"), horizontal=(120.0, "zero")))
    # the axes end at 1 and 200 (1, 2 or 5 times a power of ten), so both lines are inside
    assert ">1</text>" in svg and ">200</text>" in svg
    assert ">sat</text>" in svg and ">zero</text>" in svg
    assert svg.count("<title>p</title>") == 1 and svg.count("<title>q</title>") == 1
    assert plots._ceiling(0.187) == 0.2 and plots._ceiling(3075) == 5000
    assert plots._ceiling(1.0) == 1.0 and plots._ceiling(0) == 1.0


# -- runs --------------------------------------------------------------------------------------


def test_a_pair_alone_sends_and_arrives():
    _needs_verilator()
    routed, plans = _setup(RING)
    doc, _ = simulate(routed, plans, SimOptions(pattern="pair:n0:n2", packets=30, load=0.05),
                      jobs=2)
    assert doc["ok"] and doc["verdict"] == "complete", doc["errors"]
    assert doc["settings"]["pattern"] == "pair:n0:n2"
    assert doc["packets"]["delivered"] == doc["packets"]["expected"] == 30
    (unicast,) = doc["classes"]
    assert unicast["packets"] == 30
    # only n0 sent: the links of its path carried the packets, the others credits at most
    assert doc["throughput"]["sending_endpoints"] == 1
    flits = {(x["from"].split(".")[0], x["to"].split(".")[0]): x["flits"] for x in doc["links"]}
    assert flits["n0", "n1"] >= 30 * 8 and flits["n1", "n2"] >= 30 * 8
    assert flits["n3", "n2"] < 30 and flits["n0", "n3"] < 30
    assert doc["prediction"]["zero_load_ns"] == pytest.approx(
        float(path_latency(routed, sim_setup(routed, plans).params, 0, 2).total) * 1e9)


def test_transpose_leaves_the_diagonal_idle():
    # (nodes 0 and 3 of the 2 x 2 square send to themselves: nothing, not broadcasts)
    _needs_verilator()
    routed, plans = _setup(RING)
    doc, _ = simulate(routed, plans, SimOptions(pattern="transpose", packets=10), jobs=2)
    assert doc["ok"] and [c["kind"] for c in doc["classes"]] == ["unicast"]
    assert doc["packets"]["delivered"] == 2 * 10
    assert doc["throughput"]["sending_endpoints"] == 2


def test_a_two_load_sweep_from_the_cli(tmp_path):
    _needs_verilator()
    out = tmp_path / "sweep"
    result = CliRunner().invoke(cli, ["sim", str(RING), "--load", "0.005,0.05", "--cycles",
                                      "6000", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "# optnet report: ulx3s_ring4 load sweep" in result.output
    assert "Verdicts: every run ok" in result.output
    doc = json.loads((out / "sim.json").read_text())
    assert doc["ok"] and doc["settings"]["loads"] == [0.005, 0.05]
    low, high = (run["throughput"] for run in doc["runs"])
    assert low["offered_load"] == 0.005 and high["offered_load"] == 0.05
    assert 0 < low["accepted_load"] < high["accepted_load"]
    assert "<svg" in (out / "sim.html").read_text()
    # the same sweep through the API
    routed, plans = _setup(RING)
    doc2, _ = sweep(routed, plans, SimOptions(cycles=6000), (0.005, 0.05), jobs=2)
    assert [r["throughput"] for r in doc2["runs"]] == [low, high]
