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
