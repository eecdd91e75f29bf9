"""Shared test helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from optnet.cli import cli

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
UPDATE_GOLDEN = bool(os.environ.get("OPTNET_UPDATE_GOLDEN"))


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (the whole suite, as CI does)")


def pytest_collection_modifyitems(config, items):
    # The fast tier by default: tests marked slow (whole clusters lowered or simulated,
    # Yosys and nextpnr runs) only with --slow or an explicit -m.
    if config.getoption("--slow") or config.getoption("-m"):
        return
    kept = [item for item in items if "slow" not in item.keywords]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if "slow" in i.keywords])
        items[:] = kept


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch):
    """Diagnostics name files relative to the working directory; pin it."""
    monkeypatch.chdir(ROOT)


@pytest.fixture
def run():
    """Run the CLI in-process; returns click's Result."""
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, list(args), catch_exceptions=True)

    return invoke
