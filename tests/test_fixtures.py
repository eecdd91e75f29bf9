"""Every diagnostic code has a bad fixture whose code, line, column and message are pinned.

The expected diagnostics live in fixtures/bad/expected.json; regenerate them with
OPTNET_UPDATE_GOLDEN=1 after a deliberate change of wording, and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optnet.diagnostics import CODES
from optnet.lint import lint_file

from .conftest import FIXTURES, UPDATE_GOLDEN

BAD = FIXTURES / "bad"
EXPECTED = BAD / "expected.json"
FILES = sorted(BAD.glob("*.yaml"))


def _found(path: Path) -> list[list]:
    result = lint_file(path)
    return [[d.code, d.location.line if d.location else 0,
             d.location.column if d.location else 0, d.message]
            for d in sorted(result.diagnostics, key=lambda d: (d.location.line if d.location
                                                                else 0, d.code))]


def test_every_code_has_a_fixture():
    named = {path.name.split("_")[0] for path in FILES}
    assert named == set(CODES), f"codes without fixture: {set(CODES) - named}"
    assert len(CODES) >= 20


def test_golden_file_is_current():
    found = {path.name: _found(path) for path in FILES}
    if UPDATE_GOLDEN:
        EXPECTED.write_text(json.dumps(found, indent=1, ensure_ascii=False) + "\n")
    expected = json.loads(EXPECTED.read_text())
    assert sorted(expected) == sorted(found)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_fixture_diagnostics(path: Path):
    expected = json.loads(EXPECTED.read_text())[path.name]
    found = _found(path)
    assert found == expected
    code = path.name.split("_")[0]
    assert code in [row[0] for row in found], f"{path.name} does not raise {code}"
    for _, line, column, message in found:
        assert line >= 1 and column >= 1
        assert message.endswith((".", "?")), message
