"""The figures ``optnet route``, ``optnet lint`` (W101) and ``optnet report`` print for the
same file agree: diameter, per-hop latency, credit verdicts and bisection, read back from
each command's own output (route's text and JSON, lint's JSON, report.json)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from optnet.units import Dimension, parse_quantity

from .conftest import FIXTURES, ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
W101_FIXTURE = FIXTURES / "bad" / "W101_credit_below_bdp.yaml"

_DIAMETER = re.compile(r"^  diameter +(\d+) hops routed \((\d+) shortest\); slowest pair "
                       r"(\S+) -> (\S+), ([\d.]+) ns$", re.M)
_BISECTION = re.compile(r"^  bisection +(\d+) links, (\S+) per direction between (\d+) and "
                        r"(\d+) nodes \((exact|closed form|upper bound): .*\)$", re.M)
_HOPS = re.compile(r"^  hop latency +(.*)$", re.M)
_W101 = re.compile(r"^Endpoint '(\w+)' lets a source send (\d+) packets? before .* loop, "
                   r"(\S+) to (\S+) and the grant back, that credit takes ([\d.]+ (?:ns|us)), "
                   r"the time of (\d+) packets of (\d+) flits \(([\d.]+ (?:ns|us)) each\); "
                   r"the endpoint reaches ([\d.]+) % of the path's rate\.$")
_KINDS = {"exact": "exact", "closed form": "closed_form", "upper bound": "upper_bound"}


def _tight_bluedbm(tmp_path: Path) -> Path:
    # the cmd endpoint's window cut to (2 - 1) x 4 + 0 + 1 = 5 packets, data's left as it is
    text = (ROOT / "examples" / "bluedbm_20.yaml").read_text()
    assert "credit: 32,  offset: 16" in text
    path = tmp_path / "bluedbm_tight.yaml"
    path.write_text(text.replace("credit: 32,  offset: 16", "credit: 4,  offset: 0"))
    return path


def _time(text: str) -> float:
    """``589.3 ns`` or ``7.345 us`` in ns."""
    value, unit = text.split()
    return float(value) * (1000 if unit == "us" else 1)


def _shown_ns(ns: float) -> str:
    # how route and lint print a time
    return f"{ns / 1000:.3f} us" if ns >= 10000 else f"{ns:.1f} ns"


def _four_digits(bps: float) -> Fraction:
    return Fraction(Decimal(f"{bps:.4g}"))


def _outputs(run, path: Path, tmp_path: Path) -> dict:
    """What each command prints for ``path``, parsed."""
    text = run("route", str(path))
    assert text.exit_code == 0, text.output
    as_json = run("route", "--format", "json", str(path))
    assert as_json.exit_code == 0, as_json.output
    lint = run("lint", "--format", "json", str(path))
    assert lint.exit_code == 0, lint.output
    out = tmp_path / f"report_{path.stem}"
    report = run("report", str(path), "-o", str(out))
    assert report.exit_code == 0, report.output
    # route prints lint's findings on stderr first; the metrics follow on stdout
    return {"text": text.stdout, "json": json.loads(as_json.stdout)["metrics"],
            "lint": json.loads(lint.stdout)["diagnostics"],
            "report": json.loads((out / "report.json").read_text())["clusters"][0]}


def _check_agreement(got: dict) -> None:
    text, metrics, report = got["text"], got["json"], got["report"]
    # diameter: route's text, route's JSON and the report name one pair and one latency
    hops, _, src, dst, ns = _DIAMETER.search(text).groups()
    far = report["latency"]["diameter"]
    assert (src, dst) == (far["src"], far["dst"]) == tuple(metrics["diameter_pair"])
    assert float(ns) == metrics["diameter_ns"] == far["total_ns"]
    assert int(hops) == metrics["diameter_hops"] == report["metrics"]["diameter_hops"]
    assert abs(sum(far["parts_ns"].values()) - far["total_ns"]) < 0.01
    # per-hop latency, by link type
    shown = dict(item.rsplit(" ", 2)[0:2] for item in _HOPS.search(text).group(1).split(", "))
    per_hop = report["latency"]["per_hop"]
    assert {k: float(v) for k, v in shown.items()} == metrics["hop_ns"] == {
        k: v["total_ns"] for k, v in per_hop.items()}
    # bisection
    links, rate, a, b, kind = _BISECTION.search(text).groups()
    cut = report["metrics"]["bisection"]
    assert cut == metrics["bisection"]
    assert (int(links), [int(a), int(b)], _KINDS[kind]) == (cut["links"], cut["halves"],
                                                            cut["kind"])
    assert abs(int(a) - int(b)) <= 1 and int(a) + int(b) == len(report["nodes"])
    assert parse_quantity(rate, Dimension.RATE).value == _four_digits(cut["bandwidth_bps"])
    # credits: W101 exactly for the endpoints the report finds short, with its figures
    warned = {}
    for diag in got["lint"]:
        if diag["code"] == "W101":
            match = _W101.match(diag["message"])
            assert match, diag["message"]
            warned[match.group(1)] = match.groups()[1:]
    credits = report["bandwidth"]["credits"]
    assert set(warned) == {c["endpoint"] for c in credits if not c["sufficient"]}
    for c in credits:
        if c["endpoint"] in warned:
            window, s, d, loop, needed, flits, packet, share = warned[c["endpoint"]]
            assert (int(window), s, d, int(needed)) == (
                c["window_packets"], c["src"], c["dst"], c["needed_packets"])
            assert (loop, packet) == (_shown_ns(c["loop_ns"]), _shown_ns(c["packet_ns"]))
            # the message rounds the exact share, the report keeps four digits of it
            assert abs(float(share) - 100 * c["share"]) <= 0.05 + 1e-9
            assert int(flits) == report["parameters"]["packet_flits"]


@pytest.mark.parametrize("path", [*EXAMPLES, W101_FIXTURE], ids=lambda p: p.stem)
def test_commands_agree(run, tmp_path, path):
    _check_agreement(_outputs(run, path, tmp_path))


def test_commands_agree_on_a_short_credit(run, tmp_path):
    got = _outputs(run, _tight_bluedbm(tmp_path), tmp_path)
    _check_agreement(got)
    # one endpoint short, one not: the verdicts are per endpoint
    verdicts = {c["endpoint"]: c["sufficient"] for c in got["report"]["bandwidth"]["credits"]}
    assert verdicts == {"cmd": False, "data": True}


def test_bee3_two_x4_figures(run, tmp_path):
    """BEE3 Two-x4 (250 MHz network clock, 2-cycle routers, 64-bit flits in frames with 3
    header units): the slowest pair crosses an on-board hop, an Aurora x4 hop and an
    on-board hop."""
    got = _outputs(run, ROOT / "examples" / "bee3_two_x4.yaml", tmp_path)
    _check_agreement(got)
    far = got["report"]["latency"]["diameter"]
    assert (far["src"], far["dst"], far["routers"]) == ("n0", "n12", 4)
    # Aurora 8B/10B pair: PG046's 37 user clocks of 20 line bits at 1.95 Gb/s = 379.487 ns;
    # a lone flit waits for 7 units of 64 bits (3 header units, itself, the next header):
    # over 4 lanes at 1.95 Gb/s x 8/10 = 6.24 Gb/s 71.795 ns, over the on-board LVDS buses
    # (14.4 Gb/s, faster than a unit per 4 ns cycle) 28 ns; link layers 12 cycles = 48 ns;
    # routers 8 ns
    assert far["parts_ns"] == {"hub": 8.0, "router": 32.0, "link_layer": 144.0,
                               "phy": 419.487, "serialisation": 134.017, "cable": 6.0}
    assert far["total_ns"] == 743.504
    assert got["json"]["hop_ns"] == {"lvds x36": 107.611, "lvds x18": 107.611,
                                     "aurora_8b10b x4": 512.282}
    # halves of 4 enclosures each: the 16 x4 Aurora channels between them, 6.24 Gb/s each
    assert got["json"]["bisection"] | {"method": ""} == {
        "links": 16, "bandwidth_bps": 99.84e9, "halves": [16, 16], "kind": "upper_bound",
        "method": ""}
    assert got["report"]["bandwidth"]["credits"] == []     # its endpoint is unmanaged


def test_bluedbm_20_figures(run, tmp_path):
    """BlueDBM's 4 x 5 torus: every balanced cut is tried, and the managed endpoints'
    windows against the slowest credit loop."""
    got = _outputs(run, ROOT / "examples" / "bluedbm_20.yaml", tmp_path)
    _check_agreement(got)
    assert got["json"]["diameter_pair"] == ["n0", "n10"]
    assert got["json"]["diameter_ns"] == 1996.0
    # 5 rings of 4 cut twice each, 2 lanes x 10 Gb/s x 64/66 per link; halves of 10
    assert got["json"]["bisection"] | {"method": ""} == {
        "links": 10, "bandwidth_bps": 10 * 20e9 * 64 / 66, "halves": [10, 10],
        "kind": "exact", "method": ""}
    cmd, data = got["report"]["bandwidth"]["credits"]
    # cmd: (2 - 1) x 32 + 16 + 1 = 49; data: (1 - 1) x 200 + 100 + 1 = 101 packets; the
    # loop (3992 ns round trip, 15 flits of 6.806 ns behind the head (64 in 66 units of 6.6
    # ns), 4 endpoint cycles of 6.4 ns: 4119.694 ns) holds 38 packets of 16 flits
    assert (cmd["window_packets"], data["window_packets"]) == (49, 101)
    assert cmd["needed_packets"] == data["needed_packets"] == 38
    assert cmd["round_trip_ns"] == 3992.0 and cmd["loop_ns"] == 4119.694
    assert cmd["packet_ns"] == 108.9 and cmd["sufficient"] and cmd["share"] == 1.0


def _managed(tmp_path: Path, example: str) -> Path:
    # the example with a managed endpoint in place of its unmanaged one
    text = (ROOT / "examples" / f"{example}.yaml").read_text()
    assert "managed: false" in text
    path = tmp_path / f"{example}_managed.yaml"
    path.write_text(text.replace("managed: false", "credit: 8, offset: 2"))
    return path


@pytest.mark.parametrize("source", ["bee3_one_x8", "bee3_four_x2", "ring300"])
def test_search_finds_the_exact_slowest_pairs(tmp_path, source):
    """The floating-point search over all pairs picks the pair exact arithmetic picks, for
    the diameter and for the credit loop (per-pair bottlenecks on BEE3's mixed links)."""
    from optnet.lint import lint_file
    from optnet.model import ENDPOINT_CREDIT_CYCLES, model_params
    from optnet.routing.latency import credit_loop, diameter, latency_matrix

    if source == "ring300":
        path = tmp_path / "ring300.yaml"
        # 300 nodes: two blocks of destinations and routes of up to 150 hops
        path.write_text("optnet: 1\nname: ring300\ndefaults: {board: vc707, link: {lanes: 1, "
                        "line_rate: 10Gbps}}\ntopology: {kind: ring, nodes: 300}\n"
                        "endpoints:\n  - {name: d, width: 64, credit: 8, offset: 2}\n")
    else:
        path = _managed(tmp_path, source)
    routed = lint_file(path).routed
    params = model_params(routed.cluster)
    net, names = routed.net, [node.name for node in routed.cluster.nodes]
    matrix = latency_matrix(routed, params)
    pairs = [(s, d) for s in range(net.size) for d in range(net.size) if s != d]
    top = max(matrix[s][d] for s, d in pairs)
    first = next((s, d) for s, d in pairs if matrix[s][d] == top)
    far = diameter(routed, params)
    assert (far.src, far.dst) == (names[first[0]], names[first[1]])
    assert far.latency.total == top
    if source == "ring300":
        return
    flits = params.packet_flits

    def ratio(s, d):
        slowest = max(params.flit_time(net.link(c)) for c in routed.routing.path(net, s, d))
        loop = (matrix[s][d] + matrix[d][s] + (flits - 1) * slowest
                + params.cycles(ENDPOINT_CREDIT_CYCLES))
        return loop / (flits * slowest)

    ratios = {pair: ratio(*pair) for pair in pairs}
    worst = max(ratios.values())
    s, d = next(pair for pair in pairs if ratios[pair] == worst)
    loop = credit_loop(routed, params)
    assert (loop.src, loop.dst) == (names[s], names[d])
    assert loop.loop / loop.packet_time == worst
