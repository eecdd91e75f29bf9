"""E112 names every node whose board cannot hold its generated links and the lane count
that would fit; a link that cannot be placed takes no lanes from the node that had room."""

from __future__ import annotations

from pathlib import Path

import pytest

from optnet.lint import lint_file

ZC706_PORTS = ("its ports: sfp0 (1 serial lane), sma (1 serial lane), fmc_hpc (8 serial "
               "lanes), fmc_lpc (1 serial lane).")


def _e112(tmp_path: Path, topology: str):
    path = tmp_path / "c.yaml"
    path.write_text("optnet: 1\nname: c\ndefaults: {board: zc706, link: {line_rate: 5Gbps}}\n"
                    f"topology: {topology}\n")
    found = [d for d in lint_file(path, routing=False).diagnostics if d.code == "E112"]
    assert len(found) == 1, [str(d) for d in found]
    d = found[0]
    assert (d.location.line, d.location.column) == (4, 1)
    return d


@pytest.mark.parametrize(("topology", "message", "hint"), [
    # every node of the ring needs two 8-lane links; fmc_hpc holds one. The greedy placement
    # reaches n2's second link only after n1 (its peer) is full, so counting the nodes whose
    # own placement failed found 3 of the 4
    ("{kind: ring, nodes: 4, link: {lanes: 8}}",
     "4 nodes ('n0', 'n1', 'n2', 'n3') need up to 2 ring links of 8 lanes each, but the "
     "serial ports of board 'zc706' hold at most 1 such link (with 4 lanes each, 2 would "
     "fit); ", "Give the ring links 4 lanes, use a board with more ports, or add explicit "
     "links."),
    # corners need 2 links (they fit), edges 3 and the centre 4: five nodes, n7 included
    ("{kind: mesh, dims: [3, 3], link: {lanes: 4}}",
     "5 nodes ('n1', 'n3', 'n4', 'n5', ...) need up to 4 mesh links of 4 lanes each, but "
     "the serial ports of board 'zc706' hold at most 2 such links (with 2 lanes each, 4 "
     "would fit); ", "Give the mesh links 2 lanes, use a board with more ports, or add "
     "explicit links."),
    # 12 single-lane links per node on 11 lanes, and no narrower link exists
    ("{kind: full, nodes: 13, link: {lanes: 1}}",
     "13 nodes ('n0', 'n1', 'n2', 'n3', ...) need up to 12 full links of 1 lane each, but "
     "the serial ports of board 'zc706' hold at most 11 such links (no narrower link would "
     "fit more); ", "Use a board with more ports of that kind, or explicit links."),
])
def test_e112_counts_every_node_and_says_what_fits(tmp_path, topology, message, hint):
    d = _e112(tmp_path, topology)
    assert d.message == message + ZC706_PORTS
    assert d.hint == hint


def test_e112_single_node(tmp_path):
    # a line of 3: only the middle node needs two links
    d = _e112(tmp_path, "{kind: line, nodes: 3, link: {lanes: 8}}")
    assert d.message == ("Node 'n1' needs 2 line links of 8 lanes each, but the serial ports "
                         "of board 'zc706' hold at most 1 such link (with 4 lanes each, 2 "
                         "would fit); " + ZC706_PORTS)
