"""Elaboration: defaults, generated plus explicit nodes and links, lanes, presets."""

from __future__ import annotations

from pathlib import Path

from optnet.lint import lint_file


def _lint(tmp_path: Path, text: str, name: str = "c.yaml"):
    path = tmp_path / name
    path.write_text("optnet: 1\nname: t\n" + text)
    return lint_file(path, hardware=False)


def _codes(result):
    return [(d.code, d.location.line, d.location.column) for d in result.diagnostics]


def test_explicit_nodes_and_links_extend_a_generated_topology(tmp_path):
    result = _lint(tmp_path, """\
defaults: {board: vc707, link: {line_rate: 10Gbps}}
topology: {kind: ring, nodes: 4, link: {lanes: 2}}
nodes:
  - {name: n2, board: alveo_u280, id: 42}
  - {name: host_bridge, board: zc706}
links:
  - {from: n0.sfp0, to: host_bridge.sfp0, phy: aurora_8b10b, line_rate: 5Gbps}
""")
    assert _codes(result) == []
    cluster = result.cluster
    assert [n.name for n in cluster.nodes] == ["n0", "n1", "n2", "n3", "host_bridge"]
    assert cluster.node("n2").board.name == "alveo_u280" and cluster.node("n2").id == 42
    assert [n.id for n in cluster.nodes] == [0, 1, 42, 2, 3]
    explicit = [link for link in cluster.links if link.role == "explicit"]
    assert [(str(link), link.phy, str(link.line_rate)) for link in explicit] == [
        ("n0.sfp0 -- host_bridge.sfp0", "aurora_8b10b", "5Gbps")]
    ring = [link for link in cluster.links if link.role == "ring"]
    assert len(ring) == 4 and all(link.lanes == 2 for link in ring)
    # the U280 node gets its QSFP28 lanes, the VC707 nodes their FMC lanes
    n2_ends = [e for link in ring for e in (link.a, link.b) if e.node == "n2"]
    assert {e.port for e in n2_ends} == {"qsfp0"}
    assert cluster.diameter_hint is None  # the explicit link changes the shape


def test_explicit_lane_ranges_are_reserved_before_automatic_lanes(tmp_path):
    result = _lint(tmp_path, """\
defaults: {board: vc707, link: {line_rate: 10Gbps, lanes: 2}}
nodes: [{name: a}, {name: b}]
links:
  - {from: a.fmc1_hpc, to: b.fmc1_hpc}
  - {from: "a.fmc1_hpc[0..1]", to: "b.fmc1_hpc[6..7]"}
""")
    assert _codes(result) == []
    first, second = result.cluster.links
    assert (first.a.lanes, first.b.lanes) == ((2, 3), (0, 1))
    assert (second.a.lanes, second.b.lanes) == ((0, 1), (6, 7))


def test_lane_range_width_must_match_lanes(tmp_path):
    result = _lint(tmp_path, """\
defaults: {board: vc707, link: {line_rate: 10Gbps}}
nodes: [{name: a}, {name: b}]
links:
  - from: a.fmc1_hpc[0..3]
    to: b.fmc1_hpc
    lanes: 2
""")
    assert [d.message for d in result.diagnostics] == [
        "Link a.fmc1_hpc[0..3] -- b.fmc1_hpc bonds 2 lanes, but its ends name lane ranges of "
        "a different width."]


def test_link_settings_resolve_link_over_port_over_defaults(tmp_path):
    result = _lint(tmp_path, """\
defaults: {board: vc707, link: {phy: aurora_64b66b, line_rate: 10Gbps, length: 1m}}
nodes:
  - {name: a, ports: {sma: {phy: aurora_8b10b, line_rate: 6.25Gbps}}}
  - {name: b}
links:
  - {from: a.sma, to: b.sma}
  - {from: a.sfp0, to: b.sfp0, length: 3m}
""")
    assert _codes(result) == []
    sma, sfp = result.cluster.links
    assert (sma.phy, str(sma.line_rate), str(sma.length)) == ("aurora_8b10b", "6.25Gbps", "1m")
    assert (sfp.phy, str(sfp.line_rate), str(sfp.length)) == ("aurora_64b66b", "10Gbps", "3m")


def test_link_contradicting_its_port_setting(tmp_path):
    result = _lint(tmp_path, """\
defaults: {board: vc707, link: {line_rate: 10Gbps}}
nodes:
  - {name: a, ports: {sfp0: {line_rate: 6.25Gbps}}}
  - {name: b}
links:
  - {from: a.sfp0, to: b.sfp0, line_rate: 10.3125Gbps}
""")
    assert [d.message for d in result.diagnostics] == [
        "Link a.sfp0 -- b.sfp0 sets line_rate 10.3125Gbps, but port a.sfp0 is set to 6.25Gbps."]


def test_missing_line_rate(tmp_path):
    result = _lint(tmp_path, """\
defaults: {board: vc707}
nodes: [{name: a}, {name: b}]
links:
  - {from: a.sfp0, to: b.sfp0}
""")
    assert [(d.code, d.message) for d in result.diagnostics] == [(
        "E011", "Link a.sfp0 -- b.sfp0 has no line rate: set 'line_rate' on the link, in the "
        "topology's link settings, on a port, or in defaults.link.")]


def test_names_differing_only_in_case(tmp_path):
    result = _lint(tmp_path, """\
defaults: {board: vc707, link: {line_rate: 10Gbps}}
nodes: [{name: Node1}, {name: node1}]
links:
  - {from: Node1.sfp0, to: node1.sfp0}
""")
    assert [(d.code, d.message) for d in result.diagnostics] == [(
        "E021", "The nodes 'Node1' and 'node1' differ only in case; their output folders would "
        "collide on case-insensitive file systems.")]


def test_local_preset_and_override(tmp_path):
    (tmp_path / "topologies").mkdir()
    (tmp_path / "topologies" / "base.yaml").write_text(
        "optnet: 1\nname: base\ndefaults: {board: vc707, link: {line_rate: 10Gbps}}\n"
        "topology: {kind: torus, dims: [3, 3]}\nnetwork: {vcs: 4}\n")
    result = _lint(tmp_path, "preset: base\nnetwork: {flit_width: 64}\n")
    assert _codes(result) == []
    net = result.cluster.desc.network
    assert (net.vcs, net.flit_width, len(result.cluster.nodes)) == (4, 64, 9)


def test_unknown_preset(tmp_path):
    result = _lint(tmp_path, "preset: bee3_twox4\n")
    assert [(d.code, d.message) for d in result.diagnostics] == [(
        "E030", "The topology preset 't' says preset: 'bee3_twox4', which is not in the topology "
        "preset library. Did you mean 'bee3_two_x4'?")]


def test_local_boards_folder_extends_library(tmp_path):
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "my_u280.yaml").write_text(
        "optnet_board: 1\nname: my_u280\nextends: alveo_u280\nsource: lab notes\n"
        "transceivers: {type: GTY, max_line_rate: 32.75Gbps}\n")
    result = _lint(tmp_path, """\
defaults: {board: my_u280, link: {lanes: 4, line_rate: 25Gbps}}
topology: {kind: ring, nodes: 3}
""")
    assert _codes(result) == []
    assert {link.a.port for link in result.cluster.links} <= {"qsfp0", "qsfp1"}
    assert result.cluster.nodes[0].board.transceivers.max_line_rate.value == 32_750_000_000


def test_nothing_is_written(tmp_path):
    _lint(tmp_path, "topology: {kind: ring, nodes: 3}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def test_the_cascade_broadcast_buffer_counts_against_block_ram(tmp_path):
    # A cascade unit keeps a slot of the longest broadcast packet per source id: 128 ids of
    # 16 flits of 258 bits (64.5 KiB) on top of the router and replay buffers (35 KiB)
    # overflow an ECP5-12F's 72 KiB, where tree broadcast fits.
    text = ("defaults: {board: ulx3s_12f}\n"
            "topology: {kind: ring, nodes: 128, link: {phy: lvds, lanes: 2, "
            "line_rate: 400Mbps}}\n"
            "network: {flit_width: 256, max_packet: 16 flits, router: {buffer: 16 flits}}\n")
    assert "E113" not in [d.code for d in _lint(tmp_path, text).diagnostics]
    found = _lint(tmp_path, text + "routing: {broadcast: cascade}\n").diagnostics
    assert [d.message for d in found if d.code == "E113"] == [
        "Node 'n0' needs 99.5KiB of buffer (router 3KiB, replay 32KiB, endpoints 0b, cascade "
        "64.5KiB), but board 'ulx3s_12f' has 72KiB of block RAM."]
