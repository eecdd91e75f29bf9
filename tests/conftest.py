"""Shared test helpers."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

from optnet.cli import cli
from optnet.lint import LintResult, lint_file

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
UPDATE_GOLDEN = bool(os.environ.get("OPTNET_UPDATE_GOLDEN"))

# Hypothesis profiles of the fuzz tests (tests/test_fuzz.py):
#   fast  the fast tier's fuzz budget: few documents, the whole test in seconds;
#   ci    the slow fuzz tests' budget, as CI's `pytest --slow` runs them: at least 10,000
#         documents through lint and 200 lint-clean small clusters through planning and
#         hardware lowering.
# The fast-tier fuzz test always runs "fast"; the slow ones run the profile chosen with
# `--hypothesis-profile NAME` or the environment variable HYPOTHESIS_PROFILE=NAME, and
# "ci" when none is chosen (so `pytest --slow --hypothesis-profile fast` is a quick
# smoke run of the slow tier). Choosing a profile applies to every property test; with
# none chosen, the other tests keep Hypothesis' defaults.
settings.register_profile("fast", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=10_000, deadline=None, print_blob=True)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])


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


# ------------------------------------------------------------------ shared per session
# Linting an example (routing, proof, hardware checks) takes about a second and lowering a
# node several; the test modules share one of each per file instead of redoing them. The
# results are shared objects: tests must not change them.


@functools.cache
def linted(path: Path) -> LintResult:
    """``lint_file(path)``, once per test session."""
    return lint_file(path)


def linted_example(stem: str) -> LintResult:
    """The shipped example ``examples/<stem>.yaml``, linted once per session."""
    return linted(ROOT / "examples" / f"{stem}.yaml")


@functools.cache
def role_files(path: Path) -> dict[str, dict[str, str]]:
    """:func:`optnet.emit.hdl.node_files` of the first node of every hardware role of the
    cluster at ``path``, by node name, lowered once per session."""
    from optnet.emit.hdl import node_files, one_per_role
    from optnet.plan import plan

    return {p.node: node_files(p) for p in one_per_role(plan(linted(path).routed))}
