"""The one place a build writes files: a whole output tree, replaced atomically.

A build computes every file in memory first, then :func:`write_tree` puts them on disk:

- into a fresh temporary directory next to the output directory (so a build that fails,
  or is killed, leaves the previous output as it was);
- a file whose bytes are unchanged is hard-linked from the previous output instead of
  written, so it keeps its modification time (make, Vivado and FuseSoC rebuild less);
- then the temporary directory and the output directory swap places in one
  ``renameat2(RENAME_EXCHANGE)`` on Linux (two renames elsewhere), and the old tree is
  removed.

Relative paths are checked before anything is written: none may be absolute, contain
``..`` or a backslash, or otherwise leave the output directory. Nothing in the old output
is followed: symbolic links there are never read through, and new files are created in a
directory optnet just made.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["MANIFEST", "OutputError", "WriteStats", "check_relative", "manifest_text", "sha256",
           "write_tree"]

#: The file that marks a directory as an optnet build (so it may be replaced).
MANIFEST = "manifest.json"


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``, as manifests record files and inputs."""
    return hashlib.sha256(data).hexdigest()


def manifest_text(head: Mapping[str, object], files: Mapping[str, bytes]) -> str:
    """``manifest.json``: ``head`` (format, version, inputs ...) and every file's SHA-256.
    Its presence is what marks a directory as optnet's to replace (:func:`write_tree`)."""
    doc = dict(head) | {"files": {rel: sha256(data) for rel, data in sorted(files.items())}}
    return json.dumps(doc, indent=2) + "\n"


class OutputError(Exception):
    """The output directory cannot be (re)written; the message is a full sentence."""


@dataclass(frozen=True)
class WriteStats:
    """What :func:`write_tree` did: the files written anew (new or changed) and the number
    kept from the last build."""

    written: tuple[str, ...]
    kept: int


def check_relative(rel: str) -> PurePosixPath:
    """``rel`` as a path inside the output directory.

    Raises
    ------
    OutputError
        If ``rel`` is empty, absolute, has ``.``/``..`` parts, a backslash or a NUL.
    """
    path = PurePosixPath(rel)
    if (not rel or path.is_absolute() or "\\" in rel or "\0" in rel
            or any(part in ("", ".", "..") for part in rel.split("/"))):
        raise OutputError(f"The output file name {rel!r} would leave the output directory.")
    return path


def write_tree(out: Path, files: Mapping[str, bytes]) -> WriteStats:
    """Make directory ``out`` hold exactly ``files`` (relative path to contents).

    Raises
    ------
    OutputError
        If a path would leave ``out``, if ``out`` is a file, or if ``out`` is a non-empty
        directory that is not an optnet build (no ``manifest.json``): optnet never replaces
        a directory it did not write.
    """
    paths = {rel: check_relative(rel) for rel in files}
    out = Path(os.path.abspath(out))
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise OutputError(f"The output '{out}' exists and is not a directory.")
    previous = out.is_dir()
    if previous and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise OutputError(f"The output directory '{out}' is not empty and holds no "
                          f"{MANIFEST}, so it is not an optnet build; optnet will not "
                          "replace it. Choose another directory or empty it.")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    written: list[str] = []
    kept = 0
    try:
        for rel, data in sorted(files.items()):
            target = staging.joinpath(*paths[rel].parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            old = out.joinpath(*paths[rel].parts) if previous else None
            if old is not None and _same_file(old, data):
                try:
                    os.link(old, target)
                except OSError:
                    shutil.copy2(old, target)
                kept += 1
                continue
            target.write_bytes(data)
            written.append(rel)
        if previous:
            _exchange(staging, out)
        else:
            os.rename(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return WriteStats(tuple(written), kept)


def _same_file(path: Path, data: bytes) -> bool:
    # A regular file (not a link) with these bytes.
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(new: Path, out: Path) -> None:
    """Swap directories ``new`` and ``out`` (``new`` then holds the old tree)."""
    libc_name = ctypes.util.find_library("c")
    if libc_name:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        renameat2 = getattr(libc, "renameat2", None)
        if renameat2 is not None and renameat2(
                _AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(out),
                _RENAME_EXCHANGE) == 0:
            return
    # No atomic exchange (another OS, an old kernel or a file system without it): two
    # renames, with the old tree put back if the second fails.
    aside = new.with_name(new.name + ".old")
    os.rename(out, aside)
    try:
        os.rename(new, out)
    except OSError:
        os.rename(aside, out)
        raise
    os.rename(aside, new)
