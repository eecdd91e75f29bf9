"""The layering of DESIGN §1, as the import-linter contract in pyproject.toml states it: a
stage never imports a later one, and every module of optnet sits in a layer."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# import-linter finds the package on sys.path, whose first entry is the working directory.
_LINT = ("import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, "
         "no_logo=True))")


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _LINT], cwd=root, capture_output=True,
                          text=True, timeout=300)


def test_contract_is_kept():
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_contract_catches_an_upward_import(tmp_path):
    # A copy of the package in which the core imports the report stage.
    shutil.copytree(ROOT / "optnet", tmp_path / "optnet",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    units = tmp_path / "optnet" / "units.py"
    units.write_text(units.read_text() + "\nimport optnet.report.summary  # noqa\n")
    proc = _lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "optnet.units -> optnet.report.summary" in proc.stdout
