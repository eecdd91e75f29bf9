import time

import pytest

from optnet.diagnostics import DiagnosticError
from optnet.spec.source import MAX_DEPTH, load_yaml


def test_locations_of_keys_and_values():
    _, smap, diags = load_yaml("a: 1\nlinks:\n  - {from: x.p, to: y.p}\n", "f.yaml")
    assert diags == []
    loc = smap.values[("links", 0, "to")]
    assert (loc.file, loc.line, loc.column, loc.end_column) == ("f.yaml", 3, 21, 24)
    key = smap.keys[("links", 0, "from")]
    assert (key.line, key.column) == (3, 6)


def test_duplicate_key_keeps_first_and_reports():
    data, _, diags = load_yaml("a: 1\na: 2\n", "f.yaml")
    assert data == {"a": 1}
    assert [(d.code, d.location.line, d.location.column) for d in diags] == [("E002", 2, 1)]


def test_merge_keys():
    data, _, _ = load_yaml("base: &b {x: 1, y: 2}\nuse: {<<: *b, y: 3}\n", "f.yaml")
    assert data["use"] == {"x": 1, "y": 3}


def test_alias_bomb_rejected_fast():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]")
        prev = name
    start = time.perf_counter()
    with pytest.raises(DiagnosticError) as info:
        load_yaml("\n".join(lines), "bomb.yaml")
    assert time.perf_counter() - start < 1.0
    assert info.value.diagnostics[0].code == "E003"


def test_self_reference_rejected():
    with pytest.raises(DiagnosticError) as info:
        load_yaml("a: &a [*a]\n", "f.yaml")
    assert info.value.diagnostics[0].message == (
        "This value refers to itself through an alias, so it has no end.")


def test_deep_nesting_rejected():
    with pytest.raises(DiagnosticError) as info:
        load_yaml("a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), "f.yaml")
    assert info.value.diagnostics[0].code == "E003"


def test_huge_integer_is_a_diagnostic():
    _, _, diags = load_yaml("a: " + "9" * 5000 + "\n", "f.yaml")
    assert [d.code for d in diags] == ["E014"]


def test_unknown_tag_is_a_diagnostic():
    _, _, diags = load_yaml("a: !!python/object:os.system ls\n", "f.yaml")
    assert [d.code for d in diags] == ["E001"]
