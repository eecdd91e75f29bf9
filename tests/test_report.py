"""``optnet report``: report.md, report.html and report.json of one cluster or several."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from optnet.cli import cli

from .conftest import FIXTURES, ROOT, linted_example
from .hwtools import chromium

EXAMPLES = ROOT / "examples"
SCHEMA = json.loads((ROOT / "schema" / "report.schema.json").read_text())
BEE3 = [str(EXAMPLES / f"bee3_{t}.yaml") for t in ("one_x8", "two_x4", "four_x2", "eight_x1")]


def _report(tmp_path: Path, *files: str) -> Path:
    out = tmp_path / "rep"
    result = CliRunner().invoke(cli, ["report", *files, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def ring(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("ring"), str(EXAMPLES / "plasticnet_ring4.yaml"))


@pytest.fixture(scope="module")
def bee3(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("bee3"), *BEE3)


class _Outline(HTMLParser):
    # headings, tables and SVG plots of a page, and whether every tag was closed
    def __init__(self):
        super().__init__()
        self.headings, self.open, self.svgs, self.tables, self._in = [], [], 0, 0, None

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "br", "rect", "polyline", "line", "circle", "path"):
            self.open.append(tag)
        self.svgs += tag == "svg"
        self.tables += tag == "table"
        self._in = tag if tag in ("h1", "h2", "h3") else None

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if tag in ("rect", "polyline", "line", "circle", "path"):
            return
        assert self.open and self.open[-1] == tag, (tag, self.open[-3:])
        self.open.pop()

    def handle_data(self, data):
        if self._in:
            self.headings.append(data)
            self._in = None


def _outline(html: str) -> _Outline:
    page = _Outline()
    page.feed(html)
    page.close()
    assert page.open == []
    return page


def test_files_and_schema(ring):
    assert sorted(p.name for p in ring.iterdir()) == ["manifest.json", "report.html",
                                                      "report.json", "report.md"]
    doc = json.loads((ring / "report.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    [c] = doc["clusters"]
    assert c["cluster"] == "plasticnet_ring4" and c["nodes"] == [f"fpga{i}" for i in range(4)]
    d = c["latency"]["diameter"]
    assert (d["src"], d["dst"], d["routers"], d["hops"]) == (
        "fpga0", "fpga2", 3, {"aurora_8b10b x1": 2})
    # 3 routers of 3 cycles at 166.66 MHz, 2 hops of 12 link-layer cycles and an Aurora pair
    # of 37 user clocks (148 ns at 5 Gb/s), a lone flit's 17 units of 32 bits (its frame's
    # 8 header units, itself, the next header) at 4 Gb/s, 1 m cables, a hub cycle at each end
    assert d["parts_ns"] == {"hub": 12.0, "router": 54.002, "link_layer": 144.006, "phy": 296.0,
                             "serialisation": 272.0, "cable": 10.0}
    assert c["collectives"]["sendrecv"]["limit_bps"] == 8e9
    manifest = json.loads((ring / "manifest.json").read_text())
    assert manifest["format"] == "optnet-report" and len(manifest["inputs"]) == 1


def test_markdown_sections_and_figures(ring):
    md = (ring / "report.md").read_text()
    for heading in ("## Cluster plasticnet_ring4", "### Latency", "### Bandwidth",
                    "### Collectives", "### Model parameters"):
        assert f"\n{heading}\n" in md
    assert ("Diameter: fpga0 to fpga2, 788.0 ns through 3 routers and 2 x aurora_8b10b x1; "
            "round trip 1576.0 ns.") in md
    # credit 16, offset 4: a window of 5 packets; 130-flit packets in 64-flit frames behind
    # 8 header units at 4 Gb/s take 1170 ns, and the loop (1576 ns round trip, the tail, 4
    # endpoint cycles) 2761.0 ns, so three packets are in flight
    assert "| pn0 | 5 | 3 | yes | 100.0 % |" in md
    assert "| sendrecv | 409.0 ns | 8.00 Gb/s |" in md


def test_html_is_self_contained_with_every_plot(ring):
    html = (ring / "report.html").read_text()
    page = _outline(html)
    assert page.headings[:2] == ["optnet report: plasticnet_ring4", "Cluster plasticnet_ring4"]
    assert {"Latency", "Bandwidth", "Collectives", "Model parameters"} <= set(page.headings)
    # topology, breakdown bars, heat map, channel load, latency against load, bandwidth curves
    assert page.svgs == 6
    assert "Mean latency against load, uniform traffic (model)" in html
    assert not re.search(r"""(src|href)=["'](?!#)""", html), "the page loads nothing"


def test_the_load_curve_adds_each_hops_queue_to_the_zero_load_latency():
    # PlasticNet+'s ring of four: 4/3 hops on average between distinct nodes (1, 2, 1)
    from optnet.report.summary import cluster_report

    routed = linted_example("plasticnet_ring4").routed
    doc = cluster_report(routed)
    curve = doc["load_curve"]
    matrix = doc["latency"]["matrix_ns"]
    zero = sum(t for s, row in enumerate(matrix) for d, t in enumerate(row) if s != d) / 12
    assert curve["zero_load_ns"] == pytest.approx(zero)
    assert curve["saturation_bps_per_node"] == \
        doc["bandwidth"]["traffic"]["uniform"]["saturation_bps_per_node"]
    hops = doc["metrics"]["average_route_hops"]
    assert hops == pytest.approx(4 / 3)
    for point in curve["points"]:
        f = point["load"]
        assert point["bps_per_node"] == pytest.approx(f * curve["saturation_bps_per_node"])
        assert point["latency_ns"] == pytest.approx(
            zero + hops * curve["packet_ns"] * f / (2 * (1 - f)), rel=1e-6)
    # at half load, half a longest packet's time more per hop: its 1,170 ns packets are
    # twice its 535 ns zero-load latency, so the model itself is at 2.46x there
    half = next(p for p in curve["points"] if p["load"] == 0.5)
    assert half["latency_ns"] / zero == pytest.approx(2.46, abs=0.01)


def test_several_clusters_side_by_side(bee3):
    md = (bee3 / "report.md").read_text()
    rows = re.findall(r"^\| (bee3_\w+) \| 32 \| (\d+) \| (\d) \|", md, re.M)
    assert rows == [("bee3_one_x8", "64", "5"), ("bee3_two_x4", "76", "3"),
                    ("bee3_four_x2", "104", "3"), ("bee3_eight_x1", "160", "2")]
    doc = json.loads((bee3 / "report.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    assert [c["cluster"] for c in doc["clusters"]] == [Path(f).stem for f in BEE3]
    page = _outline((bee3 / "report.html").read_text())
    assert page.headings.count("Latency") == 4 and page.svgs == 24


def test_report_is_deterministic_across_hash_seeds(tmp_path):
    outs = []
    for seed in ("0", "77"):
        out = tmp_path / seed
        subprocess.run([sys.executable, "-m", "optnet", "report", BEE3[1],
                        str(EXAMPLES / "cuscomnet_torus16.yaml"), "-o", str(out)],
                       check=True, capture_output=True, env=dict(os.environ, PYTHONHASHSEED=seed))
        outs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert outs[0] == outs[1]


def test_errors_exit_codes(tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["report", str(tmp_path / "missing.yaml"), "-o",
                                 str(tmp_path / "o")])
    assert result.exit_code == 2 and "cannot read" in result.output
    bad = FIXTURES / "bad" / "E201_deadlock.yaml"
    result = runner.invoke(cli, ["report", str(bad), "-o", str(tmp_path / "o")])
    assert result.exit_code == 1 and "E201" in result.output
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    result = runner.invoke(cli, ["report", BEE3[0], "-o", str(foreign)])
    assert result.exit_code == 2 and "not an optnet build" in result.output
    assert (foreign / "notes.txt").read_text() == "mine"
    assert not (tmp_path / "o").exists()


def test_html_renders_in_headless_chromium(bee3, tmp_path):
    browser = chromium()
    page = tmp_path / "report.html"
    page.write_bytes((bee3 / "report.html").read_bytes())
    shot = tmp_path / "shot.png"
    flags = ["--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
             "--v=0", "--window-size=1400,2400"]
    result = subprocess.run([browser, *flags, f"--screenshot={shot}", page.as_uri()],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert "CONSOLE" not in result.stderr and "Uncaught" not in result.stderr
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=300, cwd=tmp_path).stdout
    rendered = _outline(dom)
    assert rendered.headings.count("Collectives") == 4 and rendered.svgs == 24
    assert rendered.headings[1] == "Comparison"


@pytest.mark.slow
def test_resources_section_from_yosys(tmp_path, monkeypatch):
    from .hwtools import yosys
    yosys()                      # fails in CI without it, as every Yosys test
    monkeypatch.setenv("OPTNET_CACHE", str(tmp_path / "cache"))
    out = _report(tmp_path, str(EXAMPLES / "ulx3s_ring4.yaml"), "--resources")
    doc = json.loads((out / "report.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    [node] = doc["clusters"][0]["resources"]
    assert (node["node"], node["family"], node["logic"]) == ("n0", "ecp5", "lut")
    assert "seconds" not in node and "cached" not in node          # reproducible
    components = node["components"]
    assert all(components[c]["lut"] > 0 for c in ("router", "link_layers", "endpoints"))
    assert sum(c["lut"] for c in components.values()) == node["total"]["lut"]
    md = (out / "report.md").read_text()
    assert "### Resources" in md and f"| total | {node['total']['lut']:g} |" in md
    # the second report comes from the cache, byte for byte the same
    again = _report(tmp_path / "again", str(EXAMPLES / "ulx3s_ring4.yaml"), "--resources")
    assert (again / "report.json").read_bytes() == (out / "report.json").read_bytes()
