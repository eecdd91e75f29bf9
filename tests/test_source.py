import os
import subprocess
import sys
import textwrap
import time
import tracemalloc

import pytest

from optnet.diagnostics import DiagnosticError
from optnet.spec import source
from optnet.spec.source import (
    MAX_BYTES,
    MAX_DEPTH,
    InputError,
    load_yaml,
    read_source,
)

from .conftest import ROOT


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


# ------------------------------------------------------------------ hostile input

def _e003(text: str) -> tuple[str, int, int]:
    with pytest.raises(DiagnosticError) as info:
        load_yaml(text, "f.yaml")
    (diag,) = info.value.diagnostics
    assert diag.code == "E003"
    return diag.message, diag.location.line, diag.location.column


def test_deep_nesting_is_refused_before_composing():
    # 30,000 brackets overflowed the C stack in PyYAML's composer: a segfault, not E003.
    # A child process, so that a regression fails this test rather than killing pytest.
    code = textwrap.dedent("""
        from optnet.diagnostics import DiagnosticError
        from optnet.spec.source import load_yaml
        try:
            load_yaml("a: " + "[" * 30000 + "]" * 30000, "f.yaml")
        except DiagnosticError as exc:
            (d,) = exc.diagnostics
            print(d.code, d.location.line, d.location.column, d.message)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "E003 1 68 The document nests deeper than 64 levels."


def test_deep_block_nesting_is_refused():
    text = "a:\n" + "".join(" " * i + "- \n" for i in range(1, 100))
    assert _e003(text) == ("The document nests deeper than 64 levels.", 66, 66)


def test_nesting_through_aliases_is_refused():
    # Each value nests 40 levels and holds the previous one: 60 of them stack to 2,400
    # levels once substituted, which recursed past Python's limit while building values.
    lines = ["a0: &a0 " + "[" * 40 + "x" + "]" * 40]
    lines += [f"a{i}: &a{i} " + "[" * 40 + f"*a{i - 1}" + "]" * 40 for i in range(1, 60)]
    assert _e003("\n".join(lines)) == (
        "The document nests deeper than 64 levels once this alias is substituted.", 2, 49)


def test_too_many_values_says_so_without_aliases(monkeypatch):
    # A file with 100,000 links was called an alias bomb though it had no alias. (The limit
    # is lowered to keep the test fast; composing 500,000 values takes seconds.)
    monkeypatch.setattr(source, "MAX_VALUES", 1000)
    message, line, column = _e003("a: [" + "1," * 2000 + "1]")
    assert message == ("The document has more than 1,000 values (keys, list items and "
                       "scalars), the most optnet reads; this is the first one past the limit.")
    # Values are the mapping, its key, the list, then items: item 997 is the 1,001st.
    assert (line, column) == (1, 5 + 2 * 997)


def test_alias_bomb_message_counts_what_is_written():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]")
        prev = name
    assert _e003("\n".join(lines)) == (
        "The document expands to more than 500,000 values once its aliases are substituted, "
        "though only 100 are written out; this looks like an alias bomb.", 1, 1)


def test_size_limit_counts_bytes_not_characters():
    # 4-byte characters: fewer than MAX_BYTES characters, more than MAX_BYTES bytes.
    text = "a: " + "\U0001d523" * (MAX_BYTES // 4 + 1)
    assert len(text) < MAX_BYTES
    assert _e003(text) == ("The file is larger than 16 MiB, the most optnet reads.", 1, 1)


def test_control_character_is_located():
    with pytest.raises(DiagnosticError) as info:
        load_yaml("a: b\nc: x\x01y\n", "f.yaml")
    (d,) = info.value.diagnostics
    assert (d.code, d.location.line, d.location.column, d.message) == (
        "E001", 2, 5, "The file contains the character U+0001, which YAML does not allow "
        "(control characters other than tab, line feed and carriage return are not text).")


def test_bom_and_crlf_keep_locations():
    _, smap, diags = load_yaml("\ufeffa: 1\r\nb: [x, y]\r\n", "f.yaml")
    assert diags == []
    loc = smap.values[("b", 1)]
    assert (loc.line, loc.column) == (2, 8)


# ------------------------------------------------------------------ the safe reader

def test_reader_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)
    start = time.perf_counter()
    with pytest.raises(InputError) as info:
        read_source(fifo, "c.yaml")
    assert time.perf_counter() - start < 5
    assert str(info.value) == "cannot read c.yaml: it is a named pipe, not a regular file."


def test_reader_refuses_a_link_to_a_device(tmp_path):
    link = tmp_path / "c.yaml"
    link.symlink_to("/dev/zero")
    with pytest.raises(InputError) as info:
        read_source(link, "c.yaml")
    assert info.value.reason == "it is a character device, not a regular file."


def test_reader_refuses_a_directory_and_a_missing_file(tmp_path):
    with pytest.raises(InputError) as info:
        read_source(tmp_path, "d")
    assert str(info.value) == "cannot read d: it is a directory, not a regular file."
    with pytest.raises(InputError) as info:
        read_source(tmp_path / "none.yaml", "none.yaml")
    assert str(info.value) == "cannot read none.yaml: No such file or directory."


def test_reader_reads_at_most_the_limit(tmp_path):
    # A 100 MB file was read whole before being refused.
    big = tmp_path / "big.yaml"
    with open(big, "wb") as out:
        out.truncate(100 * 2**20)  # sparse: no disk space
    tracemalloc.start()
    try:
        with pytest.raises(DiagnosticError) as info:
            read_source(big, "big.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * MAX_BYTES
    (d,) = info.value.diagnostics
    assert (d.code, d.message) == ("E003", "The file is larger than 16 MiB, the most optnet "
                                   "reads.")
    with pytest.raises(DiagnosticError) as info:
        read_source(big, "big.yaml", limit=1000)
    assert info.value.diagnostics[0].message == ("The file is larger than 1,000 bytes, the "
                                                 "most optnet reads.")


def test_reader_locates_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_bytes(b"a: 1\nname: \xc3\xa9x\xff\n")
    with pytest.raises(DiagnosticError) as info:
        read_source(path, "c.yaml")
    (d,) = info.value.diagnostics
    assert (d.code, d.location.line, d.location.column, d.message) == (
        "E001", 2, 9, "The file is not UTF-8 text: byte 14 (line 2) is 0xff.")
