"""The FPGA family table (optnet.devices.families): every shipped board's family is in it,
an unknown family is an error wherever a stage asks for it, and the stages that used to keep
their own maps answer from it."""

from __future__ import annotations

import pytest

from optnet.boards import load_library
from optnet.devices.families import FAMILIES, block_table_families, family, family_names
from optnet.devices.linkip import ip_family
from optnet.devices.plls import PLL_LIMITS
from optnet.hw.top import lvds_family
from optnet.lint import lint_file
from optnet.resources import data_dir

from .conftest import ROOT


def test_every_shipped_board_has_a_known_family():
    for board in load_library([data_dir("boards")]).boards.values():
        fam = family(board.family)
        assert fam.vendor == board.vendor, board.name
        assert fam.pll in PLL_LIMITS, board.name
        assert fam.constraints in ("xdc", "ucf", "qsf", "lpf"), board.name


def test_names_are_unique_and_every_entry_cites_a_source():
    names = [name for f in FAMILIES for name in f.names]
    assert len(names) == len(set(names)) == len(family_names())
    for f in FAMILIES:
        assert f.source.strip(), f.name
        assert f.ip_family is None or f.ip_family in family_names(), f.name


def test_unknown_family_is_an_error():
    with pytest.raises(ValueError, match="'nexus' is not an FPGA family optnet knows; it knows "
                                         "virtex7, "):
        family("nexus")


@pytest.mark.parametrize(("name", "lvds"), [
    ("ecp5", "ecp5"), ("virtex5", "virtex5"), ("virtex7", "xilinx7"), ("zynq7000", "xilinx7"),
    ("ultrascale_plus", "xilinx7")])
def test_lvds_primitives_per_family(name, lvds):
    assert lvds_family(name) == lvds


@pytest.mark.parametrize("name", ["stratix10", "nexus"])
def test_no_lvds_primitives_is_an_error(name):
    # Before the table, any family but ECP5 and Virtex-5 silently got 7-series primitives.
    with pytest.raises(ValueError, match=name):
        lvds_family(name)


def test_lookups_that_replaced_the_scattered_maps():
    assert block_table_families() == ("ecp5",)
    assert ip_family("aurora_8b10b", "zynq7000") == "7series"
    assert ip_family("aurora_64b66b", "zynq_ultrascale_plus") == "ultrascale_plus"
    assert ip_family("aurora_8b10b", "7series") == "7series"
    with pytest.raises(ValueError, match="not ecp5"):
        ip_family("aurora_8b10b", "ecp5")
    assert family("stratix10").quartus == "Stratix 10"


def _ring(tmp_path, vendor: str, family_name: str) -> list[tuple[str, str]]:
    """Lint the ULX3S LVDS ring with the board's vendor and family replaced."""
    (tmp_path / "boards").mkdir()
    board = (ROOT / "boards" / "ulx3s.yaml").read_text()
    board = board.replace("name: ulx3s\n", "name: odd\n")
    board = board.replace("vendor: lattice\n", f"vendor: {vendor}\n")
    board = board.replace("family: ecp5\n", f"family: {family_name}\n")
    (tmp_path / "boards" / "odd.yaml").write_text(board)
    cluster = (ROOT / "topologies" / "ulx3s_ring4.yaml").read_text().replace(
        "board: ulx3s", "board: odd")
    (tmp_path / "ring.yaml").write_text(cluster)
    result = lint_file(tmp_path / "ring.yaml")
    return [(d.code, d.message) for d in result.diagnostics if d.code.startswith("E")]


def test_plan_refuses_an_unknown_family(tmp_path):
    [(code, message)] = _ring(tmp_path, "lattice", "nexus")
    assert code == "E320"
    assert message.startswith("Node 'n0' is on board 'odd', a lattice nexus part, whose "
                              "hardware optnet cannot generate: 'nexus' is not an FPGA family")


def test_plan_refuses_lvds_without_primitives(tmp_path):
    [(code, message)] = _ring(tmp_path, "intel", "stratix10")
    assert code == "E301"
    assert message.endswith("run lvds on stratix10, for which optnet has no LVDS I/O "
                            "primitives.")
