"""``optnet build --bitstream``: one place and route per role, tables patched per node."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from optnet.cli import cli
from optnet.emit import bitstream as bs
from optnet.emit.bitstream import BitstreamError
from optnet.hw.router import mask_bits, route_table
from optnet.pipeline import BitstreamOptions, build_files
from optnet.plan import plan

from .conftest import linted

ROOT = Path(__file__).resolve().parent.parent
RING = ROOT / "examples" / "ulx3s_ring4.yaml"


@pytest.fixture(scope="module")
def ring():
    routed = linted(RING).routed
    return routed, plan(routed)


def test_placeholders_are_fixed_distinct_and_fill_whole_blocks(ring):
    _, plans = ring
    cfg = plans[0].router
    holders = bs.placeholders(plans[0])
    assert holders == bs.placeholders(plans[3])     # one role, one set of placeholders
    assert sorted(holders) == [f"table{p}" for p in range(cfg.ports)]
    assert all(len(words) == cfg.table_words == 512 for words in holders.values())
    columns = [c for w in holders.values() for c in bs.table_columns(w, cfg.table_width)]
    assert len(columns) == len(set(columns)) == cfg.ports * cfg.table_width


def test_table_columns_and_bram_decoding_agree():
    # A DP16KD as 512 x 36: configuration word n holds bits 9n .. 9n+8 of the 18 Kib; in
    # that geometry word i of the memory is bits 36i .. 36i+35.
    words = [(i * 2654435761) & ((1 << 36) - 1) for i in range(512)]
    bits = [w >> b & 1 for w in words for b in range(36)]
    nine = [sum(bits[9 * n + b] << b for b in range(9)) for n in range(2048)]
    config = ".device LFE5U-85F\n.bram_init 0\n" + "\n".join(
        " ".join(f"{v:03x}" for v in nine[i:i + 8]) for i in range(0, 2048, 8)) + "\n\n"
    found = bs.bram_columns(config)
    assert set(bs.table_columns(words, 36)) <= found
    assert bs.table_columns([1 << 3] * 512, 4)[3] == (1 << 512) - 1


def test_no_open_flow_node_is_an_error(tmp_path):
    result = CliRunner().invoke(cli, ["build", str(ROOT / "examples" / "plasticnet_ring4.yaml"),
                                      "-o", str(tmp_path / "out"), "--bitstream"])
    assert result.exit_code == 1
    assert ("error: No node of cluster 'plasticnet_ring4' (of those built) is on a board the "
            "open flow builds (families: ecp5), so --bitstream has nothing to do; build each "
            "node's vendor project in its folder instead.") in result.output
    assert not (tmp_path / "out").exists()


def test_missed_timing_fails_the_build_unless_allowed(ring, monkeypatch):
    routed, plans = ring

    def placed(rep, files, seed):
        return bs.PlacedRole(rep.node, "", "{}", (
            bs.ClockTiming("clk", 50.0, 64.2), bs.ClockTiming("lvds0_clk", 80.0, 71.5)), {})

    monkeypatch.setattr("optnet.pipeline.place_and_route", placed)
    with pytest.raises(BitstreamError) as info:
        build_files(routed, plans[:1], {}, bitstream=BitstreamOptions())
    assert str(info.value) == (
        "Timing is not met: clock 'lvds0_clk' of node 'n0' (and its role) reaches 71.5 MHz "
        "of the 80 MHz it needs. Lower the clock or the line rate, try another --seed, or "
        "pass --timing-allow-fail to write the bitstreams anyway.")
    # Allowed, the flow goes on to patch and pack every node (both faked here).
    monkeypatch.setattr("optnet.pipeline.patch", lambda role, rep, p: "cfg " + p.node)
    monkeypatch.setattr("optnet.pipeline.pack", lambda config, node: config.encode())
    files = build_files(routed, plans[:2], {},
                        bitstream=BitstreamOptions(timing_allow_fail=True))
    assert files["nodes/n1/n1.bit"] == b"cfg n1"
    report = json.loads(files["report.json"])
    assert report["build"]["bitstreams"][0]["nodes"] == ["n0", "n1"]
    assert report["build"]["bitstreams"][0]["clocks"][1] == {
        "clock": "lvds0_clk", "constraint_mhz": 80.0, "achieved_mhz": 71.5, "met": False}
    assert "| lvds0_clk | 80.00 | 71.50 | **FAILED** |" in files["report.md"].decode()


# --------------------------------------------------------------- the whole flow, for real


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("bits") / "out"
    result = CliRunner().invoke(cli, ["build", str(RING), "-o", str(out), "--bitstream",
                                      "--jobs", "2"])
    assert result.exit_code == 0, result.output
    return out


def _unpacked(bit: Path, tmp: Path) -> str:
    # ecpunpack runs in the bitstream's folder on relative paths (YoWASP's sandbox).
    subprocess.run([*bs._tool("yowasp-ecpunpack"), bit.name, "unpacked.config"],
                   cwd=bit.parent, check=True, capture_output=True)
    text = (bit.parent / "unpacked.config").read_text()
    (bit.parent / "unpacked.config").unlink()
    return text


@pytest.mark.slow
def test_every_node_gets_a_bitstream_with_its_own_tables(built, ring, tmp_path):
    _, plans = ring
    rep = plans[0]
    cfg = rep.router
    holders = {c for w in bs.placeholders(rep).values()
               for c in bs.table_columns(w, cfg.table_width)}
    bits = set()
    for p in plans:
        bit = built / "nodes" / p.node / f"{p.node}.bit"
        data = bit.read_bytes()
        bits.add(data)
        columns = bs.bram_columns(_unpacked(bit, tmp_path))
        assert not holders & columns, f"{p.node} still holds placeholder contents"
        for port in range(cfg.ports):
            want = bs.table_columns(route_table(p.router, port), cfg.table_width)
            # Every output-mask column holds exactly this node's routes ...
            for b in mask_bits(cfg):
                assert want[b] in columns, f"{p.node} table{port} mask column {b}"
        # ... and table0's last word this node's id.
        ids = bs.table_columns(route_table(p.router, 0), cfg.table_width)
        assert all(ids[b] in columns for b in range(p.fmt.id_bits))
        assert p.router.node_id == p.node_id
    assert len(bits) == len(plans), "nodes with different tables share a bitstream"


@pytest.mark.slow
def test_report_has_the_timing_of_the_placed_role(built):
    report = json.loads((built / "report.json").read_text())
    [role] = report["build"]["bitstreams"]
    assert role["placed_from"] == "n0" and role["nodes"] == ["n0", "n1", "n2", "n3"]
    clocks = {c["clock"]: c for c in role["clocks"]}
    assert clocks["clk"]["constraint_mhz"] == 50.0
    assert all(c["met"] for c in role["clocks"]), role["clocks"]
    assert role["utilisation"]["DP16KD"]["used"] >= 3   # the three route tables
    nextpnr = json.loads((built / "nodes" / "n2" / "reports" / "nextpnr.json").read_text())
    assert set(nextpnr["fmax"]) == {f"$glbnet${c}" for c in clocks}
    md = (built / "report.md").read_text()
    assert "## Bitstreams (open flow)" in md and "| clk | 50.00 |" in md
    manifest = json.loads((built / "manifest.json").read_text())
    assert {f"nodes/n{i}/n{i}.bit" for i in range(4)} <= set(manifest["files"])


def test_patch_refuses_a_configuration_without_the_tables(ring):
    _, plans = ring
    empty = bs.PlacedRole("n0", ".device LFE5U-85F\n", "{}", (), {})
    with pytest.raises(BitstreamError, match=r"The tables patched into node 'n1' do not "
                                             r"check: table0 bit 0 is not in any block RAM"):
        bs.patch(empty, plans[0], plans[1])
