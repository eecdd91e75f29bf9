"""Planning a direct cluster: which clusters get OPTWEB's direct switch, and its sizes."""

from __future__ import annotations

import pytest

from optnet.hw.endpoint import axis_tx_layout
from optnet.lint import lint_file
from optnet.model import DIRECT_LENGTH_BITS, direct_params, is_direct
from optnet.plan import plan

from .conftest import linted_example

CLUSTER = """optnet: 1
name: c
defaults: {{board: vc707, link: {{phy: aurora_8b10b, lanes: 1, line_rate: 5Gbps}}}}
topology: {topology}
network: {network}
"""


def _lint(tmp_path, topology="{kind: full, nodes: 3}", network="{flow_control: none}",
          extra=""):
    path = tmp_path / "c.yaml"
    path.write_text(CLUSTER.format(topology=topology, network=network) + extra)
    return lint_file(path)


@pytest.mark.parametrize(("topology", "network", "direct"), [
    ("{kind: full, nodes: 3}", "{flow_control: none}", True),
    ("{kind: full, nodes: 3}", "{flow_control: credit}", False),
    # without a link to every node there is no one-hop path to route on: routers
    ("{kind: ring, nodes: 4}", "{flow_control: none}", False),
    # a ring of three is fully connected
    ("{kind: ring, nodes: 3}", "{flow_control: none}", True),
])
def test_which_clusters_are_direct(tmp_path, topology, network, direct):
    result = _lint(tmp_path, topology, network)
    assert result.ok
    assert is_direct(result.cluster) is direct
    # flow_control: none elsewhere builds credit-based routers, and says so
    codes = [d.code for d in result.diagnostics]
    assert ("W105" in codes) is ("none" in network and not direct)
    assert "W106" not in codes   # the default broadcast is not asked for
    p = plan(result.routed)[0]
    assert (p.direct is not None, p.router is None) == (direct, direct)


@pytest.mark.parametrize(("broadcast", "warned"), [
    ("tree", True), ("cascade", True), ("unicast", False), ("none", False)])
def test_router_broadcast_on_a_direct_cluster_is_a_warning(tmp_path, broadcast, warned):
    result = _lint(tmp_path, extra=f"routing: {{algorithm: direct, broadcast: {broadcast}}}\n")
    assert result.ok
    found = [(d.code, d.location.line, d.location.column) for d in result.diagnostics
             if d.code == "W106"]
    assert found == ([("W106", 6, 41)] if warned else [])


def test_optweb_plan():
    # 16 KiB threshold and 32 KiB buffer of 256-bit beats; three links and a loopback; a
    # beat is two 128-bit SerialLite III x2 words, a control word two
    p = plan(linted_example("optweb_4").routed)[0]
    cfg = p.direct
    assert (cfg.width, cfg.peers, cfg.threshold, cfg.buffer, cfg.endpoints) == (
        256, 4, 512, 1024, 1)
    assert cfg.batch == 256             # a CREDIT word per 256 beats the user takes
    assert {(port.link.phy_width, port.link.data_words, port.link.control_words)
            for port in p.ports} == {(128, 2, 2)}
    assert p.peer_ids == (1, 2, 3, 0)
    ports, ids = p.direct_tables()
    assert ports == (3, 0, 1, 2) and ids == (1, 2, 3, 0)
    layout = axis_tx_layout(p.endpoints[0])
    assert layout["tuser"].width == DIRECT_LENGTH_BITS == cfg.max_length_bits


def test_a_narrow_endpoint_gets_a_word_that_holds_a_control_word(tmp_path):
    # 16 length bits, 2 opcode bits, 1 endpoint bit: an 8-bit endpoint's beats travel in
    # 19-bit words
    result = _lint(tmp_path, extra="endpoints:\n  - {name: e, width: 8}\n")
    sizes = direct_params(result.cluster)
    assert (sizes.width, sizes.control_bits) == (19, 19)
    assert sizes.buffer == 32 * 1024 * 8 // 19 and sizes.threshold == 16 * 1024 * 8 // 19
    assert plan(result.routed)[0].direct.width == 19


def test_a_threshold_above_the_buffer_is_refused(tmp_path):
    result = _lint(tmp_path, network="{flow_control: none, direct: {buffer: 1KiB, "
                                     "threshold: 2KiB}}")
    assert [d.code for d in result.diagnostics] == ["E014"]
    assert "the eager threshold (2KiB) is larger than the receive buffer (1KiB)" in \
        result.diagnostics[0].message


def test_receive_buffers_must_fit_block_ram(tmp_path):
    result = _lint(tmp_path, network="{flow_control: none, direct: {buffer: 16MiB}}")
    assert [d.code for d in result.diagnostics] == ["E113"]
    assert "the direct switch's receive buffers" in result.diagnostics[0].message
