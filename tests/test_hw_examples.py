"""Every example's Verilog passes Verilator lint and Yosys synthesis (one node per role:
nodes of a role differ only in table contents and node id), BEE3's clusters apart (see
``LEFT_OUT``)."""

from __future__ import annotations

import pytest

from optnet.emit.hdl import write_files

from .conftest import ROOT, role_files
from .hwtools import lint_verilog, yosys_synth

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

#: The waivers .ci/run uses too (each one explained in the file).
LINT_CONFIG = (ROOT / ".ci" / "verilator.vlt").read_text()


#: The fast tier's representative; the other examples are ``slow`` (up to 3 minutes each).
FAST = "ulx3s_ring4"

#: BEE3's four clusters: Yosys took 16 minutes over the roles of one of them here. Their
#: Verilog is linted by .ci/run with Verilator and one node of bee3_eight_x1 is synthesised
#: by the CDC test (tests/test_cdc.py).
LEFT_OUT = {"bee3_one_x8", "bee3_two_x4", "bee3_four_x2", "bee3_eight_x1"}
SYNTHESISED = [e for e in EXAMPLES if e.stem not in LEFT_OUT]


@pytest.mark.parametrize("example", [
    pytest.param(e, marks=() if e.stem == FAST else pytest.mark.slow) for e in SYNTHESISED],
    ids=[e.stem for e in SYNTHESISED])
def test_example_verilog_lints_and_synthesises(example, tmp_path):
    for node, files in role_files(example).items():
        paths = write_files(tmp_path, node, files)
        output = lint_verilog(paths, node, waivers=(), config=LINT_CONFIG)
        assert "%Error" not in output
        log = yosys_synth(paths, node)
        assert "ERROR" not in log
