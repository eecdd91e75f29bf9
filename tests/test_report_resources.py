"""Resources per node: Yosys per family, the roll-up by component, the link IP table, the
cache.

Three real syntheses of whole nodes (ECP5, 7 series, and Stratix 10 through its fallback),
one role each, about a minute apiece on a busy two-core machine; the rest runs on a tiny
hand-written node or on no tool at all.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from optnet.boards import load_library
from optnet.emit.hdl import node_files, one_per_role
from optnet.plan import plan
from optnet.report import resources
from optnet.report.resources import (
    COMPONENTS,
    LinkIpTable,
    ResourcesError,
    Usage,
    cache_dir,
    link_ip_table,
    lookup_ip,
    node_resources,
    synthesis_for,
)
from optnet.resources import data_dir

from .conftest import linted_example
from .hwtools import yosys

RTL = ("router", "link_layers", "phy_adapters", "endpoints", "hub")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """No test may read or fill the user's cache."""
    monkeypatch.setenv("OPTNET_CACHE", str(tmp_path / "cache"))


def _node(example: str):
    routed = linted_example(example).routed
    p = one_per_role(plan(routed))[0]
    return p, routed.cluster.node(p.node).board


@pytest.fixture(scope="module")
def synthesised(tmp_path_factory):
    """Each example synthesised once per test module: (plan, board, files, result, cache)."""
    done = {}

    def get(example: str):
        if example not in done:
            p, board = _node(example)
            files = node_files(p)
            cache = tmp_path_factory.mktemp(f"cache-{example}")
            done[example] = (p, board, files,
                             node_resources(p, board, files, cache=cache, yosys=yosys()),
                             cache)
        return done[example]

    return get


def _close(a: Usage, b: Usage) -> bool:
    return all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(
        a.as_dict().values(), b.as_dict().values(), strict=True))


def _check_rollup(res) -> None:
    assert set(res.components) == set(COMPONENTS)
    assert _close(Usage.total(res.components.values()), res.total)
    for name, usage in res.components.items():
        parts = [p for p in res.parts if p.component == name]
        if name != "vendor_ip":
            assert _close(Usage.total(p.usage for p in parts), usage), name
    for key, value in res.percent.items():
        assert value == pytest.approx(100 * getattr(res.total, key) / getattr(res.capacity,
                                                                               key))
    assert not res.uncounted, res.uncounted


@pytest.mark.slow
def test_ecp5_node(synthesised):
    p, board, _, res, _ = synthesised("ulx3s_ring4")
    assert res.script.endswith(f"synth_ecp5 -top {p.node}")
    assert res.fallback_note is None and res.logic == "lut"
    for name in RTL:
        assert res.components[name].lut > 0 and res.components[name].ff > 0, name
    _check_rollup(res)
    assert 300 < res.components["router"].lut < 5000
    # Both ring ports use one link layer configuration: one module, two instances.
    [link] = [part for part in res.parts if part.component == "link_layers"]
    assert link.instances == 2 == len(p.ports)
    assert _close(res.components["link_layers"], link.each.scaled(2))
    # ECP5 keeps the router's tables in block RAM (DP16KD, the board's 18 Kib blocks).
    assert res.components["router"].bram >= 1
    assert res.ip == () and res.ip_complete
    assert set(res.percent) == {"lut", "ff", "bram", "dsp"}
    assert res.capacity.lut == board.resources.lut


@pytest.mark.slow
def test_the_cascade_unit_is_a_component_of_its_own(synthesised):
    # CusComNet's nodes carry a cascade broadcast unit; no other example's node does.
    p, _, _, res, _ = synthesised("cuscomnet_torus16")
    assert p.cascade is not None
    _check_rollup(res)
    [unit] = [part for part in res.parts if part.component == "cascade"]
    assert unit.instances == 1
    assert 100 < res.components["cascade"].lut < 1000 and res.components["cascade"].ff > 0


@pytest.mark.slow
def test_xc7_node(synthesised):
    p, _, _, res, _ = synthesised("plasticnet_ring4")
    assert res.script == (f"hierarchy -top {p.node}; setattr -mod -set keep_hierarchy 1 "
                          f"{p.node}/t:* %M; synth_xilinx -family xc7 -noiopad -flatten -top "
                          f"{p.node}")
    assert res.fallback_note is None
    for name in RTL:
        assert res.components[name].lut > 0 and res.components[name].ff > 0, name
    _check_rollup(res)
    assert 300 < res.components["router"].lut < 5000
    [link] = [part for part in res.parts if part.component == "link_layers"]
    assert link.instances == 2
    assert _close(res.components["link_layers"], link.each.scaled(2))
    assert res.components["cascade"] == Usage()   # tree broadcast: no cascade unit
    # Two Aurora 8B/10B cores, one lane each: the table's first 7-series 1-lane figure.
    [ip] = res.ip
    assert (ip.protocol, ip.lanes, ip.count) == ("aurora_8b10b", 1, 2)
    entry = next(e for e in link_ip_table().figures
                 if (e.protocol, e.family, e.lanes) == ("aurora_8b10b", "7series", 1))
    assert ip.lookup.entries == (entry,)
    assert ip.each == Usage(lut=entry.usage["lut"], ff=entry.usage["ff"],
                            bram=entry.usage["bram36"])
    assert _close(res.components["vendor_ip"], ip.each.scaled(2))
    assert res.ip_complete
    # Endpoint receive buffers of 1024 packets are block RAM (36 Kib blocks on the ZC706).
    assert res.components["endpoints"].bram > 0


@pytest.mark.slow
def test_fallback_family(synthesised):
    _, board, _, res, _ = synthesised("optweb_4")
    assert board.family == "stratix10"
    assert "synth_intel_alm -family cyclonev" in res.script
    assert "stratix10" in res.fallback_note and "Cyclone V" in res.fallback_note
    assert res.logic == "alm" and res.total.lut == 0 and res.total.alm > 0
    assert "alm" in res.percent and "lut" not in res.percent
    _check_rollup(res)
    # No published Serial Lite III figure: reported as missing, not as zero.
    [ip] = res.ip
    assert ip.protocol == "serial_lite_3" and ip.each is None and ip.reason
    assert not res.ip_complete
    assert any("lower bound" in c for c in res.caveats)


@pytest.mark.slow
def test_cache_hit_does_not_run_yosys(synthesised, monkeypatch):
    p, board, files, first, cache = synthesised("ulx3s_ring4")
    assert not first.cached
    [record] = cache_dir(cache).glob("*.json")
    assert not list(cache_dir(cache).glob("*.tmp"))

    def forbidden(*args, **kwargs):
        raise AssertionError("Yosys ran although the node is unchanged")

    monkeypatch.setattr(resources, "_run", forbidden)
    again = node_resources(p, board, files, cache=cache, yosys=yosys())
    assert again.cached
    assert again.components == first.components and again.parts == first.parts
    assert again.seconds == first.seconds
    assert list(cache_dir(cache).glob("*.json")) == [record]


# -- a tiny node: exact counts, fast --------------------------------------------------------

TINY = r"""
module \tiny.link_cfg0 (input clk, input [7:0] d, output reg [7:0] q);
  always @(posedge clk) q <= d;
endmodule

module \tiny.router.spare (input clk, input [2:0] d, output reg [2:0] q);
  always @(posedge clk) q <= d;
endmodule

// (The spare only ever holds zero: flattened into the router, its flip-flops go.)
module \tiny.router (input clk, input [3:0] d, output reg [3:0] q);
  wire [2:0] z;
  \tiny.router.spare s (.clk(clk), .d(3'b000), .q(z));
  always @(posedge clk) q <= d | {1'b0, z};
endmodule

module tiny (input clk, input [27:0] d, output [27:0] q);
  \tiny.link_cfg0 l0 (.clk(clk), .d(d[7:0]), .q(q[7:0]));
  \tiny.link_cfg0 l1 (.clk(clk), .d(d[15:8]), .q(q[15:8]));
  \tiny.link_cfg0 l2 (.clk(clk), .d(d[23:16]), .q(q[23:16]));
  \tiny.router r (.clk(clk), .d(d[27:24]), .q(q[27:24]));
endmodule
"""


@pytest.fixture
def tiny():
    board = load_library([data_dir("boards")]).boards["ulx3s"]
    return SimpleNamespace(node="tiny", ports=()), board


@pytest.fixture
def runs(monkeypatch):
    """Count real Yosys synthesis runs."""
    calls = []
    real = resources._run

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(resources, "_run", counting)
    return calls


def test_instances_counted(tiny, runs, tmp_path):
    p, board = tiny
    res = node_resources(p, board, {"rtl/tiny.v": TINY}, cache=tmp_path, yosys=yosys())
    assert len(runs) == 1
    [link] = [part for part in res.parts if part.name == "link_cfg0"]
    assert (link.component, link.instances, link.each.ff) == ("link_layers", 3, 8)
    assert res.components["link_layers"].ff == 24
    assert res.components["router"].ff == 4
    assert res.total.ff == 28


def test_changed_file_resynthesised(tiny, runs, tmp_path):
    p, board = tiny
    files = {"rtl/tiny.v": TINY}
    first = node_resources(p, board, files, cache=tmp_path, yosys=yosys())
    second = node_resources(p, board, files, cache=tmp_path, yosys=yosys())
    assert len(runs) == 1 and second.cached and second.total == first.total
    wider = TINY.replace("[3:0] d, output reg [3:0] q", "[4:0] d, output reg [4:0] q")
    third = node_resources(p, board, {"rtl/tiny.v": wider}, cache=tmp_path, yosys=yosys())
    assert len(runs) == 2 and not third.cached
    assert third.components["router"].ff == 5
    # cache=False neither reads nor writes.
    node_resources(p, board, files, cache=False, yosys=yosys())
    assert len(runs) == 3
    assert len(list(cache_dir(tmp_path).glob("*.json"))) == 2


def test_default_cache_location(tiny, runs, tmp_path, monkeypatch):
    p, board = tiny
    node_resources(p, board, {"rtl/tiny.v": TINY}, yosys=yosys())
    assert len(list((tmp_path / "cache" / "resources").glob("*.json"))) == 1
    monkeypatch.delenv("OPTNET_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "optnet" / "resources"


def test_damaged_cache_record_resynthesises(tiny, runs, tmp_path):
    p, board = tiny
    node_resources(p, board, {"rtl/tiny.v": TINY}, cache=tmp_path, yosys=yosys())
    [record] = cache_dir(tmp_path).glob("*.json")
    record.write_text("{not json")
    res = node_resources(p, board, {"rtl/tiny.v": TINY}, cache=tmp_path, yosys=yosys())
    assert len(runs) == 2 and not res.cached and res.total.ff == 28


def test_yosys_failure_is_reported(tiny, tmp_path):
    p, board = tiny
    with pytest.raises(ResourcesError, match="Yosys synthesis of node 'tiny' failed"):
        node_resources(p, board, {"rtl/tiny.v": "module tiny(input a; endmodule\n"},
                       cache=tmp_path, yosys=yosys())


# -- scripts per family ------------------------------------------------------------------------

@pytest.mark.parametrize(("family", "vendor", "command", "fallback"), [
    ("zynq7000", "xilinx", "synth_xilinx -family xc7 -noiopad -flatten", False),
    ("virtex7", "xilinx", "synth_xilinx -family xc7 -noiopad -flatten", False),
    ("ultrascale_plus", "xilinx", "synth_xilinx -family xcup -noiopad -flatten", False),
    ("virtex5", "xilinx", "synth_xilinx -family xc5v -noiopad -flatten", False),
    ("ecp5", "lattice", "synth_ecp5", False),
    ("cyclonev", "intel", "synth_intel_alm -family cyclonev -noiopad", False),
    ("stratix10", "intel", "synth_intel_alm -family cyclonev -noiopad", True),
    ("versal", "xilinx", "synth_xilinx -family xc7 -noiopad -flatten", True),
    ("nexus", "lattice", "synth_ecp5", True),
])
def test_synthesis_for(family, vendor, command, fallback):
    synth = synthesis_for(family, vendor)
    assert synth.command == command
    assert (synth.fallback_note is not None) == fallback
    if fallback:
        assert family in synth.fallback_note


def test_every_board_family_has_a_script():
    boards = load_library([data_dir("boards")]).boards.values()
    for board in boards:
        synth = synthesis_for(board.family, board.vendor)
        assert synth.command.split()[0].startswith("synth_")
    assert synthesis_for("virtex5", "xilinx").caveat


# -- the link IP table -------------------------------------------------------------------------

def test_table_entries_have_source_and_kind():
    table = link_ip_table()
    assert table.figures
    for entry in [*table.figures, *table.references]:
        assert entry.source.strip(), entry.id
        assert entry.kind in table.kinds, entry.id
    for entry in table.figures:
        assert entry.usage and all(v >= 0 for v in entry.usage.values()), entry.id
    for gap in table.gaps:
        assert gap.reason.strip()


@pytest.mark.parametrize("family", ["zynq7000", "virtex7", "7series"])
def test_lookup_aurora_64b66b_one_lane_7series(family):
    found = lookup_ip("aurora_64b66b", family, 1)
    assert found.found and not found.estimated
    assert found.usage == {"lut": 2373, "ff": 1524, "bram36": 1}
    assert found.kind == "OOC-RPT"
    assert "gwsu/vivado" in found.source


def test_lookup_interpolates_only_where_documented():
    two = lookup_ip("aurora_64b66b", "virtex7", 2)
    assert two.found and two.estimated and two.assumption
    assert two.usage == {"lut": (2373 + 5740) / 2, "ff": (1524 + 3932) / 2, "bram36": 2}
    assert len(two.entries) == 2
    # Never beyond the figures, never from a single one.
    assert not lookup_ip("aurora_64b66b", "virtex7", 4).found
    assert not lookup_ip("aurora_8b10b", "zynq7000", 4).found


@pytest.mark.parametrize(("protocol", "family", "lanes"), [
    ("serial_lite_3", "stratix10", 2),
    ("interlaken", "stratix10", 4),
    ("aurora_8b10b", "virtex5", 4),
    ("aurora_64b66b", "virtex5", 1),     # optnet does not model that core on Virtex-5
])
def test_lookup_no_figure(protocol, family, lanes):
    found = lookup_ip(protocol, family, lanes)
    assert not found.found and found.usage is None
    assert found.reason.strip() and found.kind is None


def test_table_rules_are_enforced():
    raw = link_ip_table().model_dump()
    assert LinkIpTable.model_validate(raw)
    figure = raw["figures"][0]
    for broken in ({**figure, "kind": "GUESS"}, {**figure, "source": ""},
                   {**figure, "usage": {"lut": 1, "alm": 1}}):
        with pytest.raises(ValidationError):
            LinkIpTable.model_validate({**raw, "figures": [broken, *raw["figures"][1:]]})
    with pytest.raises(ValidationError, match="unique"):
        LinkIpTable.model_validate({**raw, "figures": [figure, *raw["figures"]]})
    rule = raw["interpolations"][0]
    rule = {**rule, "between": [rule["between"][0], "nowhere"]}
    with pytest.raises(ValidationError, match="nowhere"):
        LinkIpTable.model_validate({**raw, "interpolations": [rule]})


@pytest.mark.slow
def test_to_dict_is_json_ready(synthesised):
    import json

    res = synthesised("plasticnet_ring4")[3]
    doc = json.loads(json.dumps(res.to_dict()))
    assert doc["total"] == res.total.as_dict()
    assert doc["ip"][0]["kind"] == res.ip[0].lookup.kind
    assert dataclasses.is_dataclass(res)


def test_table_is_shipped():
    assert Path(data_dir("ipdata") / "link_ip.yaml").is_file()
