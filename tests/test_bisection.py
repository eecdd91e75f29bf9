"""Bisection: the least bandwidth across a balanced cut (halves equal or one node apart),
exact up to 20 nodes, and an honestly labelled upper bound beyond."""

from __future__ import annotations

from pathlib import Path

import pytest

from optnet.lint import lint_file
from optnet.routing.metrics import compute_metrics

from .conftest import linted_example


def _bisection(path: Path | str) -> dict:
    result = linted_example(path) if isinstance(path, str) else lint_file(path)
    assert result.routed is not None, [str(d) for d in result.diagnostics]
    return compute_metrics(result.routed)["bisection"]


@pytest.mark.parametrize(("example", "links", "gbps"), [
    # Before, the cut with the fewest links was taken: it crossed the on-board buses
    # (14.4 Gb/s each) instead of the Aurora channels, 460.8 and 177.6 Gb/s for the first
    # two; One-x8's ring of enclosures is cut across two x8 channels per side.
    ("bee3_eight_x1", 64, "99.84"),     # 64 x1 channels at 1.56 Gb/s between 4 + 4 enclosures
    ("bee3_four_x2", 32, "99.84"),      # 32 x2 channels at 3.12 Gb/s
    ("bee3_two_x4", 16, "99.84"),       # 16 x4 channels at 6.24 Gb/s
    ("bee3_one_x8", 4, "49.92")])       # 4 x8 channels at 12.48 Gb/s
def test_bee3_bisection_is_across_the_aurora_channels(example, links, gbps):
    cut = _bisection(example)
    assert (cut["links"], round(cut["bandwidth_bps"] / 1e6), cut["halves"], cut["kind"]) == (
        links, round(float(gbps) * 1000), [16, 16], "upper_bound")
    assert cut["method"].startswith("upper bound: the least of the balanced cuts tried (")
    assert "every cut between whole enclosures" in cut["method"]
    assert cut["method"].endswith("the minimum may be lower")


def test_exact_bisection_of_an_odd_cluster_puts_node_0_in_either_half(tmp_path):
    # a line n0 - n1 - n2 - n3 - n4 whose n1 - n2 link is one lane and every other link
    # four: the least cut, {n0, n1} | {n2, n3, n4}, has n0 in the smaller half
    links = "".join(f"  - {{from: n{i}.fmc_hpc, to: n{i + 1}.fmc_hpc, lanes: 4}}\n"
                    for i in (0, 2, 3))
    path = tmp_path / "line5.yaml"
    path.write_text("optnet: 1\nname: line5\ndefaults: {board: zc706, link: {phy: "
                    "aurora_8b10b, line_rate: 5Gbps}}\nnodes:\n"
                    + "".join(f"  - {{name: n{i}}}\n" for i in range(5))
                    + f"links:\n{links}  - {{from: n1.sfp0, to: n2.sfp0}}\n")
    cut = _bisection(path)
    assert (cut["links"], cut["bandwidth_bps"], cut["halves"], cut["kind"]) == (
        1, 4e9, [2, 3], "exact")


def test_unbalanced_middle_cut_is_not_taken(tmp_path):
    # BlueDBM's 4 x 5 torus, 20 nodes, is cut exactly now; the old closed form cut the
    # odd dimension into 8 + 12 nodes across 8 links
    cut = _bisection("bluedbm_20")
    assert (cut["links"], cut["halves"], cut["kind"]) == (10, [10, 10], "exact")
    # a 6 x 5 torus of 30 nodes: the largest dimension is odd, so no closed form
    path = tmp_path / "t65.yaml"
    path.write_text("optnet: 1\nname: t65\ndefaults: {board: vc707, link: {lanes: 1, "
                    "line_rate: 10Gbps}}\ntopology: {kind: torus, dims: [5, 6]}\n")
    cut = _bisection(path)
    assert cut["kind"] == "closed_form" and cut["halves"] == [15, 15] and cut["links"] == 10
    path.write_text("optnet: 1\nname: t75\ndefaults: {board: vc707, link: {lanes: 1, "
                    "line_rate: 10Gbps}}\ntopology: {kind: torus, dims: [7, 5]}\n")
    cut = _bisection(path)
    assert cut["kind"] == "upper_bound" and cut["halves"] == [17, 18]
