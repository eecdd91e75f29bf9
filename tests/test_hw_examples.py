"""Every example's Verilog passes Verilator lint and Yosys synthesis (one node per role:
nodes of a role differ only in table contents and node id)."""

from __future__ import annotations

import pytest

from optnet.emit.hdl import node_files, one_per_role, write_files
from optnet.lint import lint_file
from optnet.plan import plan

from .conftest import ROOT
from .hwtools import lint_verilog, yosys_synth

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

#: The waivers .ci/run uses too (each one explained in the file).
LINT_CONFIG = (ROOT / ".ci" / "verilator.vlt").read_text()


#: The fast tier's representative; the other examples are ``slow`` (up to 3 minutes each).
FAST = "ulx3s_ring4"


@pytest.mark.parametrize("example", [
    pytest.param(e, marks=() if e.stem == FAST else pytest.mark.slow) for e in EXAMPLES],
    ids=[e.stem for e in EXAMPLES])
def test_example_verilog_lints_and_synthesises(example, tmp_path):
    result = lint_file(example)
    plans = one_per_role(plan(result.routed))
    for p in plans:
        paths = write_files(tmp_path, p.node, node_files(p))
        output = lint_verilog(paths, p.node, waivers=(), config=LINT_CONFIG)
        assert "%Error" not in output
        log = yosys_synth(paths, p.node)
        assert "ERROR" not in log
