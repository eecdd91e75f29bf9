"""What ``optnet route`` says about VC classes holds: with fewer VCs than the algorithm's
classes, the proof (not the algorithm's rule) is why the routes cannot deadlock."""

from __future__ import annotations

import json

FOLDED = ("'dimension_order' assigns 2 VC classes, but the network has 1 VC; with the classes "
          "above VC 0 folded onto it, the proof still finds no cycle in the graph of the "
          "hardware's waits on these routes, so 1 VC suffices here")


def _ring(tmp_path, vcs: int):
    path = tmp_path / f"ring_{vcs}.yaml"
    path.write_text("optnet: 1\nname: ring4\npreset: ulx3s_ring4\n"
                    f"network: {{vcs: {vcs}}}\n")
    return str(path)


def test_folded_classes_name_the_proof(run, tmp_path):
    # a 4-node ring: every route is at most 2 hops and half-way ties alternate, so the
    # dateline classes are not needed and one VC passes the proof
    result = run("route", _ring(tmp_path, 1))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[2] == "  VC classes: 2 in the algorithm's rule, folded onto 1 configured"
    assert lines[3] == f"  why deadlock-free: {FOLDED}"
    assert "dateline" not in result.stdout
    doc = json.loads(run("route", "--format", "json", _ring(tmp_path, 1)).stdout)
    assert doc["algorithm"]["why_deadlock_free"] == FOLDED
    assert (doc["algorithm"]["vcs_needed"], doc["algorithm"]["vcs"]) == (2, 1)


def test_enough_vcs_give_the_algorithms_rule(run, tmp_path):
    result = run("route", _ring(tmp_path, 2))
    lines = result.stdout.splitlines()
    assert lines[2] == "  VC classes: 2 needed, 2 configured"
    assert lines[3].startswith("  why deadlock-free: dimension order removes turns")
    assert "dateline" in lines[3]
