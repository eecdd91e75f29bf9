"""The one output writer (``optnet.emit.writer``) under links, foreign files, full disks,
read-only directories, killed and concurrent runs, for build, report, hdl and route --emit.

Every test checks that nothing appears outside the output directory, that foreign data
survives, and, through the command line, exit status 2 with the reason.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from optnet.emit import writer
from optnet.emit.hdl import write_files
from optnet.emit.writer import (
    OutputError,
    check_output,
    claim_output,
    lock_path,
    manifest_text,
    write_into,
    write_tree,
)

ROOT = Path(__file__).resolve().parent.parent
RING = ROOT / "examples" / "ulx3s_ring4.yaml"
REPORT = {"manifest.json", "report.md", "report.html", "report.json"}
TABLES = ["mcast.hex", "routes.h", "routes.hex", "routes.json"]


def _tree(root: Path) -> dict[str, bytes]:
    """Every regular file below ``root`` (links not followed) and what links point to."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = b"-> " + os.fsencode(os.readlink(path))
        elif path.is_file():
            out[rel] = path.read_bytes()
    return out


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _optnet(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` with an optnet manifest listing them."""
    head = {"format": "optnet-test", "version": 1}
    return files | {"manifest.json": manifest_text(head, files).encode()}


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder next to the output that optnet must never write into."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim.v").write_text("precious\n")
    return folder


# --- links planted inside the output ------------------------------------------------------


def test_hdl_does_not_write_through_a_link_in_the_output(run, tmp_path, outside, monkeypatch):
    # Lowering is not what is tested: a one-line module per node keeps this quick.
    monkeypatch.setattr("optnet.emit.hdl.node_files",
                        lambda plan: {f"rtl/{plan.node}.v": f"module {plan.node}; endmodule\n"})
    out = tmp_path / "out"
    out.mkdir()
    (out / "nodes").symlink_to(outside, target_is_directory=True)
    result = run("hdl", str(RING), "-o", str(out), "--nodes", "n0")
    assert result.exit_code == 2, result.output
    assert (f"optnet: '{out}/nodes' is a symbolic link, where optnet writes a folder of its "
            "output; optnet writes nothing through links") in result.stderr
    assert _tree(outside) == {"victim.v": b"precious\n"}
    assert _names(out) == ["nodes"] and (out / "nodes").is_symlink()
    (out / "nodes").unlink()
    (out / "notes.txt").write_text("mine")
    result = run("hdl", str(RING), "-o", str(out), "--nodes", "n0,n1")
    assert result.exit_code == 0, result.output
    assert _tree(out) == {"notes.txt": b"mine", "nodes/n0/rtl/n0.v": b"module n0; endmodule\n",
                          "nodes/n1/rtl/n1.v": b"module n1; endmodule\n"}
    assert _names(tmp_path) == ["out", "outside"]


def test_hdl_files_do_not_replace_a_planted_file_link(tmp_path, outside):
    out = tmp_path / "out"
    (out / "nodes/n0/rtl").mkdir(parents=True)
    (out / "nodes/n0/rtl/n0.v").symlink_to(outside / "victim.v")
    (out / "mine.txt").write_text("mine")
    with pytest.raises(OutputError, match=r"n0\.v' is a symbolic link, where optnet writes "
                                          "a file of its output"):
        write_files(out, "n0", {"rtl/n0.v": "module n0; endmodule\n"})
    assert _tree(outside) == {"victim.v": b"precious\n"}
    assert (out / "nodes/n0/rtl/n0.v").is_symlink() and (out / "mine.txt").read_text() == "mine"


def test_hdl_adds_files_and_keeps_foreign_ones(tmp_path):
    # optnet hdl adds each node's files to -o (docs/hardware.md): foreign files stay, and
    # files whose contents did not change keep their modification times.
    out = tmp_path / "out"
    (out / "nodes/n0").mkdir(parents=True)
    (out / "nodes/n0/notes.txt").write_text("mine")
    files = {"rtl/n0.v": "module n0; endmodule\n", "stubs/x.v": "module x; endmodule\n"}
    paths = write_files(out, "n0", files)
    assert paths == [out / "nodes/n0/rtl/n0.v", out / "nodes/n0/stubs/x.v"]
    before = {p: p.stat().st_mtime_ns for p in paths}
    os.utime(paths[0], ns=(1, 1))
    write_files(out, "n0", files | {"stubs/x.v": "module x2; endmodule\n"})
    write_files(out, "n1", files)
    assert paths[0].stat().st_mtime_ns == 1
    assert paths[1].read_text() == "module x2; endmodule\n" and before
    assert (out / "nodes/n0/notes.txt").read_text() == "mine"
    assert _names(out / "nodes") == ["n0", "n1"] and _names(tmp_path) == ["out"]


@pytest.mark.parametrize("planted", ["n0", "n0/routes.h"])
def test_route_emit_does_not_write_through_a_link(run, tmp_path, outside, planted):
    out = tmp_path / "tables"
    (out / "n0").mkdir(parents=True)
    if planted == "n0":
        (out / "n0").rmdir()
    (out / planted).symlink_to(outside / ("victim.v" if "/" in planted else ""))
    result = run("route", "--emit", str(out), str(RING))
    assert result.exit_code == 2, result.output
    kind = "file" if "/" in planted else "folder"
    assert (f"optnet: '{out}/{planted}' is a symbolic link, where optnet writes a {kind} of "
            "its output") in result.stderr
    assert "routing:" not in result.stdout
    assert _tree(outside) == {"victim.v": b"precious\n"}
    assert (out / planted).is_symlink()


def test_route_emit_keeps_foreign_files_and_unchanged_tables(run, tmp_path):
    out = tmp_path / "tables"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert run("route", "--emit", str(out), str(RING)).exit_code == 0
    assert _names(out) == ["n0", "n1", "n2", "n3", "notes.txt"]
    assert _names(out / "n2") == TABLES
    before = {rel: (out / rel).stat().st_mtime_ns for rel in _tree(out)}
    assert run("route", "--emit", str(out), str(RING)).exit_code == 0
    assert {rel: (out / rel).stat().st_mtime_ns for rel in _tree(out)} == before
    assert (out / "notes.txt").read_text() == "mine" and _names(tmp_path) == ["tables"]


def test_rebuild_never_links_through_a_link_planted_after_the_check(tmp_path, outside,
                                                                   monkeypatch):
    # The check refuses a tree holding a link (next test); a link planted after it is
    # still not followed when unchanged files are hard-linked from the old tree.
    out = tmp_path / "out"
    write_tree(out, _optnet({"a/victim.v": b"precious\n", "b.txt": b"b"}))
    (out / "a/victim.v").unlink()
    (out / "a").rmdir()
    (out / "a").symlink_to(outside, target_is_directory=True)
    monkeypatch.setattr(writer, "_check_ours", lambda out: None)
    stats = write_tree(out, _optnet({"a/victim.v": b"precious\n", "b.txt": b"b"}))
    assert stats.written == ("a/victim.v",) and stats.kept == 2
    victim = outside / "victim.v"
    assert victim.stat().st_nlink == 1
    assert (out / "a/victim.v").stat().st_ino != victim.stat().st_ino
    assert not (out / "a").is_symlink() and _tree(outside) == {"victim.v": b"precious\n"}


def test_rebuild_does_not_keep_a_file_hard_linked_from_outside(tmp_path, outside):
    out = tmp_path / "out"
    write_tree(out, _optnet({"victim.v": b"precious\n"}))
    (out / "victim.v").unlink()
    os.link(outside / "victim.v", out / "victim.v")
    stats = write_tree(out, _optnet({"victim.v": b"precious\n"}))
    assert stats.written == ("victim.v",)
    assert (out / "victim.v").stat().st_ino != (outside / "victim.v").stat().st_ino
    assert (outside / "victim.v").stat().st_nlink == 1
    assert _tree(outside) == {"victim.v": b"precious\n"}


# --- foreign directories and manifests -----------------------------------------------------


@pytest.mark.parametrize(("manifest", "why"), [
    (b'{"mine": 1}\n', "its format is not optnet's"),
    (b"not json", "it is not JSON"),
    (b'{"format": "optnet-build"}', "it has no list of files"),
    (b"[1]", "its format is not optnet's"),
])
def test_a_foreign_manifest_does_not_make_an_optnet_output(run, tmp_path, manifest, why):
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_bytes(manifest)
    (out / "thesis.tex").write_text("precious")
    result = run("report", str(RING), "-o", str(out))
    assert result.exit_code == 2, result.output
    assert (f"optnet: The output directory '{out}' holds a manifest.json that is not optnet's "
            f"({why}") in result.stderr
    assert "optnet will not replace the directory." in result.stderr
    assert _tree(out) == {"manifest.json": manifest, "thesis.tex": b"precious"}
    assert _names(tmp_path) == ["out"]


def test_an_optnet_output_with_foreign_files_is_not_replaced(run, tmp_path, outside):
    out = tmp_path / "out"
    assert run("report", str(RING), "-o", str(out)).exit_code == 0
    assert set(_tree(out)) == REPORT
    (out / "thesis.tex").write_text("precious")
    (out / "data").mkdir()
    (out / "link").symlink_to(outside)
    before = _tree(out)
    result = run("report", str(RING), "-o", str(out))
    assert result.exit_code == 2, result.output
    assert (f"optnet: The output directory '{out}' holds 'data', 'link' and 'thesis.tex', "
            "which its manifest.json does not list, so optnet did not write them; optnet "
            "will not replace the directory.") in result.stderr
    assert _tree(out) == before
    for rel in ("data", "link", "thesis.tex"):
        (out / rel).unlink() if rel != "data" else (out / rel).rmdir()
    assert run("report", str(RING), "-o", str(out)).exit_code == 0   # its own: replaced


def test_a_manifest_link_is_not_optnet_s(tmp_path, outside):
    out = tmp_path / "out"
    out.mkdir()
    (outside / "manifest.json").write_bytes(_optnet({})["manifest.json"])
    (out / "manifest.json").symlink_to(outside / "manifest.json")
    with pytest.raises(OutputError, match=r"not optnet's \(it is a symbolic link\)"):
        write_tree(out, _optnet({"a": b"1"}))
    assert (out / "manifest.json").is_symlink()


# --- where the output is ------------------------------------------------------------------


@pytest.mark.parametrize("output", [".", ".."])
def test_build_and_report_refuse_the_current_directory(run, tmp_path, monkeypatch, output):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    out = here if output == "." else tmp_path
    for command in ("report", "build"):
        result = run(command, str(RING), "-o", output)
        assert result.exit_code == 2, result.output
        assert (f"optnet: The output directory '{out}' is the current directory or holds "
                "it; optnet replaces the output directory as a whole") in result.stderr
    assert _names(tmp_path) == ["here"] and _names(here) == []


def test_route_emit_writes_into_the_current_directory(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    assert run("route", "--emit", ".", str(RING)).exit_code == 0
    assert _names(tmp_path) == ["n0", "n1", "n2", "n3", "notes.txt"]
    assert _names(tmp_path / "n0") == TABLES


def test_an_output_link_is_refused(run, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "out").symlink_to(real)
    for args in (("report", str(RING), "-o"), ("route", str(RING), "--emit")):
        result = run(*args, str(tmp_path / "out"))
        assert result.exit_code == 2
        assert (f"optnet: The output '{tmp_path}/out' is a symbolic link; optnet writes only "
                f"into a real directory. Give the link's target ('{real}') instead.\n"
                ) == result.stderr
    assert _names(real) == []


@pytest.mark.parametrize("command", ["report", "build"])
def test_a_read_only_parent_is_refused(run, tmp_path, monkeypatch, command):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    if os.geteuid() == 0:
        # Permission bits do not bind root: answer as the kernel would for anyone else.
        real = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: False
                            if Path(path) == parent else real(path, mode, **kw))
    try:
        result = run(command, str(RING), "-o", str(parent / "out"))
        assert result.exit_code == 2, result.output
        assert (f"optnet: The directory '{parent}' is not writable, and optnet needs to write "
                f"there (its lock file and staging directory go next to the output "
                f"'{parent}/out')") in result.stderr
        assert _names(parent) == []
    finally:
        parent.chmod(0o755)


def test_a_full_disk_is_reported_and_the_previous_output_kept(run, tmp_path, monkeypatch):
    out = tmp_path / "out"
    emit = tmp_path / "tables"
    write_tree(out, _optnet({"old.md": b"the previous report"}))
    before = _tree(out)

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writer, "_write_all", full)
    result = run("report", str(RING), "-o", str(out))
    assert result.exit_code == 2, result.output
    assert (f"optnet: Writing the output directory '{out}' failed at 'manifest.json': No "
            "space left on device (ENOSPC). The previous output is unchanged.\n"
            ) == result.stderr
    assert _tree(out) == before
    result = run("route", "--emit", str(emit), str(RING))
    assert result.exit_code == 2, result.output
    assert (f"optnet: Writing the output directory '{emit}' failed at 'n0/mcast.hex': No "
            "space left on device (ENOSPC).") in result.stderr
    assert _names(tmp_path) == ["out", "tables"] and _tree(emit) == {}


# --- concurrent and killed runs -----------------------------------------------------------


def _hold(out: Path) -> subprocess.Popen:
    """Another process holding the claim on ``out`` until its stdin closes."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\nfrom pathlib import Path\nfrom optnet.emit.writer import claim_output\n"
         "with claim_output(Path(sys.argv[1])):\n"
         "    print('held', flush=True)\n    sys.stdin.read()\n", str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert holder.stdout.readline() == "held\n"
    return holder


def test_a_second_run_on_a_locked_output_stops_before_any_work(run, tmp_path, monkeypatch):
    out = tmp_path / "out"
    holder = _hold(out)
    try:
        linted = []
        monkeypatch.setattr("optnet.cli.lint_file", lambda *a, **k: linted.append(a))
        for args in (("report", str(RING), "-o"), ("build", str(RING), "-o"),
                     ("hdl", str(RING), "-o"), ("route", str(RING), "--emit")):
            result = run(*args, str(out))
            assert result.exit_code == 2, result.output
            assert (f"optnet: Another optnet run is writing '{out}' (it holds the lock file "
                    f"'{tmp_path}/.out.lock'); wait for it to finish or choose another output "
                    "directory.\n") == result.stderr
        assert linted == [] and not out.exists()
    finally:
        holder.communicate("")
    monkeypatch.undo()
    assert run("report", str(RING), "-o", str(out)).exit_code == 0
    assert _names(tmp_path) == ["out"]


def test_two_concurrent_runs_into_one_fresh_output(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-m", "optnet", "report", str(RING), "-o",
                               str(out)], stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    results = sorted((p.wait(), p.stderr.read()) for p in procs)
    for p in procs:
        p.stderr.close()
    # Usually the second finds the lock held; if the first was done by then, both wrote.
    assert [code for code, _ in results] in ([0, 0], [0, 2]), results
    if results[1][0] == 2:
        assert "Another optnet run is writing" in results[1][1]
    assert set(_tree(out)) == REPORT and _names(tmp_path) == ["out"]


def test_a_killed_run_s_staging_is_removed_and_look_alikes_kept(tmp_path):
    out = tmp_path / "out"
    write_tree(out, _optnet({"a": b"1"}))
    stale = tmp_path / ".out.optnet-0123456789abcdef.tmp"
    (stale / "nodes").mkdir(parents=True)
    (stale / "nodes/x.v").write_text("half")
    (tmp_path / ".out.mine.tmp").mkdir()
    (tmp_path / ".out.optnet-fedcba9876543210.tmp").write_text("a file, not optnet's")
    (tmp_path / ".out.lock").touch()   # left by the killed run
    write_tree(out, _optnet({"a": b"2"}))
    assert _names(tmp_path) == [".out.mine.tmp", ".out.optnet-fedcba9876543210.tmp", "out"]
    assert _tree(out) == _optnet({"a": b"2"})


def test_a_run_killed_between_the_fallback_renames_gets_its_output_back(tmp_path,
                                                                       monkeypatch):
    out = tmp_path / "out"
    write_tree(out, _optnet({"a": b"1"}))
    out.rename(tmp_path / ".out.optnet-0123456789abcdef.tmp.old")
    (tmp_path / ".out.optnet-0123456789abcdef.tmp").mkdir()   # the new tree, half written
    monkeypatch.setattr(writer, "_write_all", lambda fd, data: (_ for _ in ()).throw(
        OSError(errno.ENOSPC, "No space left on device")))
    with pytest.raises(OutputError, match="No space left on device"):
        write_tree(out, _optnet({"a": b"2"}))
    assert _tree(out) == _optnet({"a": b"1"}) and _names(tmp_path) == ["out"]


def test_a_killed_emit_s_temporary_files_are_removed(run, tmp_path):
    out = tmp_path / "tables"
    (out / "n0").mkdir(parents=True)
    (out / "n0/.routes.h.optnet-0123456789abcdef.tmp").write_text("half")
    (out / "n0/.notes.tmp").write_text("mine")
    assert run("route", "--emit", str(out), str(RING)).exit_code == 0
    assert _names(out / "n0") == [".notes.tmp", *TABLES]


# --- the lock file ------------------------------------------------------------------------


def test_the_lock_file_is_removed_unless_it_holds_data(tmp_path, outside):
    out = tmp_path / "out"
    lock = lock_path(out)
    assert lock == tmp_path / ".out.lock"
    with claim_output(out) as claimed:
        assert claimed == out and lock.is_file()
        write_tree(out, _optnet({"a": b"1"}))   # nested claim of the same output
        assert lock.is_file()
    assert _names(tmp_path) == ["out", "outside"]
    lock.write_text("someone's notes")
    write_tree(out, _optnet({"a": b"2"}))
    assert lock.read_text() == "someone's notes"
    lock.unlink()
    lock.symlink_to(outside / "victim.v")
    with pytest.raises(OutputError, match=r"optnet cannot open its lock file '.*\.out\.lock'"):
        write_tree(out, _optnet({"a": b"3"}))
    assert _tree(outside) == {"victim.v": b"precious\n"} and lock.is_symlink()


def test_missing_parents_are_made_and_removed_if_nothing_was_written(tmp_path):
    out = tmp_path / "a/b/out"
    with claim_output(out):
        assert (tmp_path / "a/b").is_dir()
    assert _names(tmp_path) == []
    write_into(out, {"x": b"1"})
    assert _tree(tmp_path) == {"a/b/out/x": b"1"}


# --- checked before any work --------------------------------------------------------------


@pytest.mark.parametrize("args", [("build", "-o"), ("report", "-o"), ("hdl", "-o"),
                                  ("route", "--emit")])
def test_the_output_is_checked_before_any_work(run, tmp_path, monkeypatch, args):
    linted = []
    monkeypatch.setattr("optnet.cli.lint_file", lambda *a, **k: linted.append(a))
    out = tmp_path / "out"
    if args[0] in ("build", "report"):
        out.mkdir()
        (out / "thesis.tex").write_text("precious")
        reason = f"The output directory '{out}' is not empty and holds no manifest.json"
    else:
        out.symlink_to(tmp_path)
        reason = f"The output '{out}' is a symbolic link"
    result = run(args[0], str(RING), args[1], str(out))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"optnet: {reason}")
    assert linted == []


# --- the output's mode --------------------------------------------------------------------


def test_the_output_keeps_its_mode(tmp_path):
    out = tmp_path / "out"
    old = os.umask(0o027)
    try:
        write_tree(out, _optnet({"a": b"1"}))
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o750   # as mkdir would make it
    out.chmod(0o705)
    write_tree(out, _optnet({"a": b"2"}))
    assert stat.S_IMODE(out.stat().st_mode) == 0o705
    assert json.loads((out / "manifest.json").read_text())["format"] == "optnet-test"


def test_check_output_names_the_reasons(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match=r"The output '.*/f' exists and is not a directory"):
        check_output(tmp_path / "f")
    with pytest.raises(OutputError, match="is the root directory"):
        check_output(Path("/"))
    with pytest.raises(OutputError, match="is also a folder of other output files"):
        write_tree(tmp_path / "out", {"a": b"1", "a/b": b"2"})
    with pytest.raises(OutputError, match=r"The output's parent directory '.*/f/a/b' cannot "
                                          r"be made \(making '.*/f/a'\): Not a directory "
                                          r"\(ENOTDIR\)\.$"):
        write_tree(tmp_path / "f/a/b/out", {"a": b"1"})
    assert check_output(tmp_path / "new", replace=False) == tmp_path / "new"
    assert _names(tmp_path) == ["f"]
