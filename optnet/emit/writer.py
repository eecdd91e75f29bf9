"""The one place optnet writes files: ``build``, ``report``, ``hdl`` and ``route --emit``.

Every file is computed in memory first; then one of two functions puts the files into the
output directory ``out`` (``-o`` or ``--emit``):

- :func:`write_tree` (``build`` and ``report``) makes ``out`` hold exactly the given files.
  They are written into a fresh staging directory ``.<name>.optnet-<random>.tmp`` next to
  ``out``, which then swaps places with ``out`` in one ``renameat2(RENAME_EXCHANGE)`` (two
  renames where that is missing); the old tree is removed. A failed or killed run leaves
  the previous output as it was. A file whose bytes did not change is hard-linked from the
  previous tree, so it keeps its modification time (make, Vivado and FuseSoC rebuild
  less), and ``out`` keeps its permission mode. Only an empty directory or an optnet output
  is replaced: its ``manifest.json`` must be optnet's (a JSON object whose ``format`` starts
  with ``optnet-`` and whose ``files`` lists the files) and the directory must hold nothing
  that manifest does not list.
- :func:`write_into` (``hdl`` and ``route --emit``) adds or replaces the given files in
  ``out`` and leaves everything else there alone. Each file is written to a temporary
  ``.<file>.optnet-<random>.tmp`` beside it and renamed over the old one, so a reader sees
  the old or the new file, never half of one; unchanged files are not touched.

Nothing inside ``out`` is followed, and ``out`` itself may not be a symbolic link:
directories are opened one component at a time relative to their parent's descriptor with
``O_NOFOLLOW``, new files are created with ``O_CREAT | O_EXCL | O_NOFOLLOW``, and old files
are compared and linked through ``O_NOFOLLOW`` descriptors. A symbolic link (or a file where
a directory belongs) on the way to a file is refused, so whatever links, hard links or
foreign files are planted in ``out``, optnet writes nothing outside it and deletes nothing
it did not write.

Runs writing the same output exclude each other with a lock file ``.<name>.lock`` next to
``out``, taken with ``flock`` without waiting by :func:`claim_output`, which the command
line calls (with :func:`check_output`) before any work starts, so a refusal comes in a
second rather than after a minute of lowering. The lock file is created if missing and
held until the files are written; its holder then removes it, while still holding it, if
it is an empty regular file (so a file of that name that holds data is left alone). A run
that finds the lock held stops with :class:`OutputError`. A run killed while holding the
lock leaves the empty file behind; the kernel released the lock, so the next run takes it
over, and that run also removes the staging directories the killed run left (or, if the
killed run had moved ``out`` aside in the two-rename exchange, moves it back first).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["MANIFEST", "OutputError", "WriteStats", "check_output", "check_relative",
           "claim_output", "lock_path", "manifest_text", "sha256", "write_into", "write_tree"]

logger = logging.getLogger(__name__)

#: The file that marks a directory as an optnet output (so :func:`write_tree` may replace it).
MANIFEST = "manifest.json"

#: A manifest larger than this is not one optnet wrote (the largest builds list a few
#: thousand files).
_MANIFEST_LIMIT = 64 << 20

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted under a file's name must not hang the run.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

#: Temporary files of :func:`write_into` (``.<file>.optnet-<16 hex>.tmp``).
_TEMP_FILE = re.compile(r"\..+\.optnet-[0-9a-f]{16}\.tmp")


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``, as manifests record files and inputs."""
    return hashlib.sha256(data).hexdigest()


def manifest_text(head: Mapping[str, object], files: Mapping[str, bytes]) -> str:
    """``manifest.json``: ``head`` (format, version, inputs ...) and every file's SHA-256.

    ``head["format"]`` must start with ``optnet-``: that and the file list are what let
    :func:`write_tree` replace the directory later.
    """
    doc = dict(head) | {"files": {rel: sha256(data) for rel, data in sorted(files.items())}}
    return json.dumps(doc, indent=2) + "\n"


class OutputError(Exception):
    """The output directory cannot be (re)written; the message is a full sentence."""


@dataclass(frozen=True)
class WriteStats:
    """What :func:`write_tree` or :func:`write_into` did: the files written anew (new or
    changed) and the number kept as they were."""

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


def lock_path(out: Path) -> Path:
    """The lock file of output directory ``out``: ``.<name>.lock`` next to it."""
    out = _absolute(out)
    return out.parent / f".{out.name}.lock"


def check_output(out: Path, *, replace: bool = True) -> Path:
    """Check that optnet may write output directory ``out``; returns it as an absolute path.

    Takes no lock and writes nothing (:func:`claim_output` does both and calls this).

    Parameters
    ----------
    out : Path
    replace : bool
        True for :func:`write_tree` (``out`` is replaced as a whole), False for
        :func:`write_into` (files are added to ``out``).

    Raises
    ------
    OutputError
        If ``out`` is the root directory, a symbolic link or not a directory; if ``out`` or
        its parent exists and is not writable; with ``replace``, if ``out`` is or holds the
        current directory, or is a non-empty directory that is not an optnet output (see
        the module documentation).
    """
    out = _absolute(out)
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"The output '{out}' cannot be examined: {_reason(exc)}.") from exc
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise OutputError(f"The output '{out}' is a symbolic link; optnet writes only into a "
                          f"real directory. Give the link's target ('{os.path.realpath(out)}') "
                          "instead.")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"The output '{out}' exists and is not a directory.")
    if os.path.isdir(out.parent) and not os.access(out.parent, os.W_OK | os.X_OK):
        raise OutputError(
            f"The directory '{out.parent}' is not writable, and optnet needs to write there "
            f"(its lock file and staging directory go next to the output '{out}'); choose "
            "an output directory in a writable place.")
    if st is not None and not os.access(out, os.W_OK | os.X_OK):
        raise OutputError(f"The output directory '{out}' is not writable; choose an output "
                          "directory in a writable place.")
    if replace and st is not None:
        with contextlib.suppress(OSError):
            cwd = Path(os.path.realpath(os.getcwd()))
            if cwd.is_relative_to(os.path.realpath(out)):
                raise OutputError(
                    f"The output directory '{out}' is the current directory or holds it; "
                    "optnet replaces the output directory as a whole, which would leave "
                    "this shell in a deleted directory. Choose a subdirectory, such as "
                    "'build'.")
        _check_ours(out)
    return out


# Outputs this process holds the lock of, with how often: claims nest (the command line
# claims the output before working, write_tree claims it again), and a second flock of the
# same file in one process would fail.
_HELD: dict[Path, int] = {}


@contextlib.contextmanager
def claim_output(out: Path, *, replace: bool = True) -> Iterator[Path]:
    """Lock output directory ``out`` for this run, check it and clean up after killed runs.

    Creates the missing parent directories of ``out`` (removed again if nothing was
    written), takes the lock file :func:`lock_path`, removes the staging directories a
    killed run left next to ``out``, then runs :func:`check_output`. The lock is held until
    the ``with`` block ends; claims of one output nest within a process.

    Yields
    ------
    Path
        ``out``, absolute.

    Raises
    ------
    OutputError
        If another run holds the lock, if the parent cannot be created or the lock file
        cannot be made there, or as :func:`check_output`.
    """
    out = _absolute(out)
    if out in _HELD:
        _HELD[out] += 1
        try:
            yield check_output(out, replace=replace)
        finally:
            _HELD[out] -= 1
        return
    made = _make_parents(out.parent)
    try:
        with _Lock(out) as lock:
            _HELD[out] = 1
            try:
                _clean_stale(lock.parent_fd, out)
                yield check_output(out, replace=replace)
            finally:
                del _HELD[out]
    finally:
        if not os.path.lexists(out):
            for path in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(path)


def write_tree(out: Path, files: Mapping[str, bytes]) -> WriteStats:
    """Make directory ``out`` hold exactly ``files`` (relative path to contents).

    See the module documentation; claims ``out`` (:func:`claim_output`) for the write.

    Raises
    ------
    OutputError
        If a path would leave ``out`` or names both a file and a folder; as
        :func:`claim_output` (``out`` is a file, a link, or a directory that is neither
        empty nor an optnet output, or another run writes it); if the write fails (a full
        disk, say), in which case the previous tree is left as it was.
    """
    paths = _check_names(files)
    with claim_output(out, replace=True) as out:
        parent = os.open(out.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            return _replace(parent, out, files, paths)
        finally:
            os.close(parent)


def write_into(out: Path, files: Mapping[str, bytes]) -> WriteStats:
    """Add ``files`` (relative path to contents) to directory ``out``, made if missing,
    replacing files of the same names and leaving everything else there as it is.

    Raises
    ------
    OutputError
        If a path would leave ``out`` or names both a file and a folder; as
        :func:`claim_output`; if a symbolic link, or something other than a directory or a
        regular file, is where a file or its folder goes; if a write fails (files written
        before it stay written).
    """
    paths = _check_names(files)
    written: list[str] = []
    kept = 0
    with claim_output(out, replace=False) as out:
        parent = os.open(out.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        rel = ""
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(out.name, 0o777, dir_fd=parent)
            dirs = _Dirs(_open_dir(parent, out.name, out), out, create=True)
            try:
                for rel in sorted(files):
                    parts = paths[rel].parts
                    folder = dirs.get(parts[:-1])
                    if _put(folder, parts[-1], files[rel], out / rel):
                        written.append(rel)
                    else:
                        kept += 1
            finally:
                dirs.close()
        except OSError as exc:
            where = f" at '{rel}'" if rel else ""
            raise OutputError(f"Writing the output directory '{out}' failed{where}: "
                              f"{_reason(exc)}. The files before it were written, the "
                              "others are unchanged.") from exc
        finally:
            os.close(parent)
    return WriteStats(tuple(written), kept)


def _absolute(out: Path) -> Path:
    out = Path(os.path.abspath(out))
    if not out.name:
        raise OutputError(f"The output directory '{out}' is the root directory; optnet "
                          "writes only into a directory of its own.")
    return out


def _reason(exc: OSError) -> str:
    code = errno.errorcode.get(exc.errno or 0)
    return f"{exc.strerror or exc} ({code})" if code else str(exc.strerror or exc)


def _check_names(files: Mapping[str, bytes]) -> dict[str, PurePosixPath]:
    paths = {rel: check_relative(rel) for rel in files}
    folders = {str(parent) for path in paths.values() for parent in path.parents}
    clash = sorted(set(paths) & folders)
    if clash:
        raise OutputError(f"The output file name '{clash[0]}' is also a folder of other "
                          "output files.")
    return paths


def _make_parents(parent: Path) -> list[Path]:
    """``mkdir -p parent``; returns the directories made, outermost first."""
    missing = []
    path = parent
    while not os.path.lexists(path):
        missing.append(path)
        path = path.parent
    made = []
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        except OSError as exc:
            for done in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(done)
            where = f" (making '{path}')" if path != parent else ""
            raise OutputError(f"The output's parent directory '{parent}' cannot be "
                              f"made{where}: {_reason(exc)}.") from exc
        made.append(path)
    return made


class _Lock:
    """The lock file of an output, held from ``__enter__`` to ``__exit__``."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.name = f".{out.name}.lock"
        self.parent_fd = -1
        self.fd = -1

    def __enter__(self) -> _Lock:
        shown = self.out.parent / self.name
        try:
            self.parent_fd = os.open(self.out.parent,
                                     os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise OutputError(f"The output's parent directory '{self.out.parent}' cannot be "
                              f"opened: {_reason(exc)}.") from exc
        try:
            # The holder removes the file when done, so a file opened just before that
            # is locked in vain: lock again until the locked file is the one in place.
            while True:
                try:
                    fd = os.open(self.name, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW
                                 | os.O_NONBLOCK | os.O_CLOEXEC, 0o644, dir_fd=self.parent_fd)
                except OSError as exc:
                    raise OutputError(f"optnet cannot open its lock file '{shown}': "
                                      f"{_reason(exc)}; it must be able to make that file "
                                      "next to the output directory.") from exc
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    os.close(fd)
                    raise OutputError(f"'{shown}' is in the place of optnet's lock file "
                                      "and is not a regular file; remove it or choose "
                                      "another output directory.")
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    os.close(fd)
                    if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                        raise OutputError(
                            f"Another optnet run is writing '{self.out}' (it holds the lock "
                            f"file '{shown}'); wait for it to finish or choose another "
                            "output directory.") from exc
                    raise OutputError(f"optnet cannot lock '{shown}': "
                                      f"{_reason(exc)}.") from exc
                if _same_inode(self.parent_fd, self.name, st):
                    self.fd = fd
                    return self
                os.close(fd)
        except BaseException:
            os.close(self.parent_fd)
            raise

    def __exit__(self, *exc_info: object) -> None:
        try:
            st = os.fstat(self.fd)
            # Removed while still held, so no other run can lock this file after it is
            # gone (see __enter__). A lock file that holds data is not one optnet made.
            if st.st_size == 0 and _same_inode(self.parent_fd, self.name, st):
                os.unlink(self.name, dir_fd=self.parent_fd)
        except OSError as exc:
            logger.warning("could not remove the lock file %s: %s",
                           self.out.parent / self.name, exc)
        finally:
            os.close(self.fd)
            os.close(self.parent_fd)


def _same_inode(dir_fd: int, name: str, st: os.stat_result) -> bool:
    try:
        now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def _clean_stale(parent_fd: int, out: Path) -> None:
    """Remove the staging directories of killed runs next to ``out`` (the caller holds the
    lock, so no live run is using them)."""
    pattern = re.compile(rf"\.{re.escape(out.name)}\.optnet-[0-9a-f]{{16}}\.tmp(\.old)?")
    for name in sorted(os.listdir(parent_fd), reverse=True):   # .tmp.old before .tmp
        if not pattern.fullmatch(name):
            continue
        try:
            if not stat.S_ISDIR(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode):
                continue
            if name.endswith(".old") and not os.path.lexists(out):
                # Killed between the two renames of the fallback exchange: this is the
                # previous output.
                os.rename(name, out.name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
                logger.warning("restored %s from %s, left by a killed run", out, name)
                continue
            shutil.rmtree(name, dir_fd=parent_fd)
            logger.info("removed %s, left by a killed run", out.parent / name)
        except OSError as exc:
            logger.warning("could not remove %s, left by a killed run: %s",
                           out.parent / name, exc)


def _check_ours(out: Path) -> None:
    """Raise :class:`OutputError` unless directory ``out`` is empty or an optnet output."""
    try:
        fd = os.open(out, _DIR_FLAGS)
    except OSError as exc:
        raise OutputError(f"The output directory '{out}' cannot be opened: "
                          f"{_reason(exc)}.") from exc
    try:
        _check_entries(out, fd)
    except OSError as exc:
        raise OutputError(f"The output directory '{out}' cannot be examined: "
                          f"{_reason(exc)}.") from exc
    finally:
        os.close(fd)


def _check_entries(out: Path, fd: int) -> None:
    entries = os.listdir(fd)
    if not entries:
        return
    advice = ("optnet will not replace the directory. Choose another one, or move its "
              "contents elsewhere.")
    if MANIFEST not in entries:
        raise OutputError(f"The output directory '{out}' is not empty and holds no "
                          f"{MANIFEST}, so it is not an optnet build; {advice}")
    listed, why = _manifest_files(fd)
    if listed is None:
        raise OutputError(f"The output directory '{out}' holds a {MANIFEST} that is not "
                          f"optnet's ({why}), so it is not an optnet output; {advice}")
    folders = {str(parent) for rel in listed for parent in PurePosixPath(rel).parents}
    foreign = list(_foreign(fd, "", listed | {MANIFEST}, folders))
    if foreign:
        named = [f"'{rel}'" for rel in foreign[:3]]
        if len(foreign) > 3:
            named.append(f"{len(foreign) - 3} more")
        named = ", ".join(named[:-1]) + " and " + named[-1] if len(named) > 1 else named[0]
        them = "it" if len(foreign) == 1 else "them"
        raise OutputError(f"The output directory '{out}' holds {named}, which its "
                          f"{MANIFEST} does not list, so optnet did not write {them}; "
                          f"{advice}")


def _manifest_files(dir_fd: int) -> tuple[set[str] | None, str]:
    """The files an optnet manifest in ``dir_fd`` lists, or None and why it is not one."""
    try:
        fd = os.open(MANIFEST, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        return None, "it is a symbolic link" if exc.errno == errno.ELOOP else _reason(exc)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "it is not a regular file"
        if st.st_size > _MANIFEST_LIMIT:
            return None, f"it is larger than {_MANIFEST_LIMIT >> 20} MiB"
        doc = json.loads(_read_all(fd).decode("utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"it is not JSON: {exc}"
    finally:
        os.close(fd)
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if not (isinstance(fmt, str) and fmt.startswith("optnet-")):
        return None, "its format is not optnet's"
    files = doc.get("files")
    if not (isinstance(files, dict) and all(isinstance(rel, str) for rel in files)):
        return None, "it has no list of files"
    return set(files), ""


def _foreign(dir_fd: int, prefix: str, listed: set[str], folders: set[str]) -> Iterator[str]:
    """Entries below ``dir_fd`` (names relative to the output) that the manifest does not
    account for: unlisted files, links, and folders holding no listed file."""
    for name in sorted(os.listdir(dir_fd)):
        rel = prefix + name
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode) and rel in folders:
            sub = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            try:
                yield from _foreign(sub, rel + "/", listed, folders)
            finally:
                os.close(sub)
        elif not (stat.S_ISREG(mode) and rel in listed):
            yield rel


class _Dirs:
    """The directories below a directory descriptor, opened one component at a time with
    ``O_NOFOLLOW``; with ``create``, made where missing (and cleared of the temporary files
    of killed :func:`write_into` runs)."""

    def __init__(self, root_fd: int, shown: Path, *, create: bool) -> None:
        self.shown = shown
        self.create = create
        self.fds: dict[tuple[str, ...], int | None] = {(): root_fd}
        if create:
            _clean_temp(root_fd)

    def get(self, parts: tuple[str, ...]) -> int | None:
        """The descriptor of folder ``parts``; without ``create``, None if it is not a
        real directory."""
        if parts in self.fds:
            return self.fds[parts]
        parent = self.get(parts[:-1])
        fd = None
        if parent is not None:
            if self.create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(parts[-1], 0o777, dir_fd=parent)
                fd = _open_dir(parent, parts[-1], self.shown.joinpath(*parts))
                _clean_temp(fd)
            else:
                with contextlib.suppress(OSError):
                    fd = os.open(parts[-1], _DIR_FLAGS, dir_fd=parent)
        self.fds[parts] = fd
        return fd

    def close(self) -> None:
        for fd in self.fds.values():
            if fd is not None:
                os.close(fd)
        self.fds.clear()


def _open_dir(parent_fd: int, name: str, shown: Path) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        kind = ("a symbolic link"
                if stat.S_ISLNK(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
                else "not a directory")
        raise OutputError(f"'{shown}' is {kind}, where optnet writes a folder of its output; "
                          "optnet writes nothing through links and removes nothing it did "
                          "not write. Remove it or choose another output directory.") from exc


def _clean_temp(dir_fd: int) -> None:
    for name in os.listdir(dir_fd):
        if _TEMP_FILE.fullmatch(name) and stat.S_ISREG(
                os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            os.unlink(name, dir_fd=dir_fd)
            logger.info("removed %s, left by a killed run", name)


def _put(dir_fd: int, name: str, data: bytes, shown: Path) -> bool:
    """Write ``name`` in ``dir_fd`` through a temporary file; False if it already held
    ``data``."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None:
        if not stat.S_ISREG(mode):
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
            raise OutputError(f"'{shown}' is {kind}, where optnet writes a file of its "
                              "output; optnet writes nothing through links and removes "
                              "nothing it did not write. Remove it or choose another "
                              "output directory.")
        if _holds(dir_fd, name, data) is not None:
            return False
    temp = _create_temp(dir_fd, name, data)
    try:
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    return True


def _create_temp(dir_fd: int, name: str, data: bytes) -> str:
    while True:
        temp = f".{name}.optnet-{secrets.token_hex(8)}.tmp"
        try:
            _create(dir_fd, temp, data)
        except FileExistsError:
            continue
        return temp


def _create(dir_fd: int, name: str, data: bytes) -> None:
    """A new file ``name`` in ``dir_fd`` holding ``data`` (never through a link, never over
    an existing file); removed again if the write fails."""
    fd = os.open(name, _CREATE_FLAGS, 0o666, dir_fd=dir_fd)
    try:
        _write_all(fd, data)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _holds(dir_fd: int, name: str, data: bytes) -> os.stat_result | None:
    """The status of ``name`` in ``dir_fd`` if it is a regular file (not a link) holding
    ``data``, else None."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_size == len(data) and _read_all(fd) == data:
            return st
        return None
    except OSError:
        return None
    finally:
        os.close(fd)


def _keep(old_fd: int, name: str, data: bytes, new_fd: int) -> bool:
    """Put the old tree's ``name`` into the new tree if it holds ``data``: hard-linked, or
    copied with its times where links are not possible."""
    st = _holds(old_fd, name, data)
    # A file with other links is shared with something outside the tree: write a new one.
    if st is None or st.st_nlink != 1:
        return False
    try:
        os.link(name, name, src_dir_fd=old_fd, dst_dir_fd=new_fd, follow_symlinks=False)
    except OSError:
        _create(new_fd, name, data)
        os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=new_fd,
                 follow_symlinks=False)
        return True
    # The name may have been swapped after it was compared: keep only the file compared.
    if not _same_inode(new_fd, name, st):
        os.unlink(name, dir_fd=new_fd)
        return False
    return True


def _replace(parent_fd: int, out: Path, files: Mapping[str, bytes],
             paths: Mapping[str, PurePosixPath]) -> WriteStats:
    try:
        old = os.stat(out.name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    written: list[str] = []
    kept = 0
    stage = _make_stage(parent_fd, out)
    rel = ""
    try:
        new_dirs = _Dirs(os.open(stage, _DIR_FLAGS, dir_fd=parent_fd), out, create=True)
        old_dirs = (_Dirs(_open_dir(parent_fd, out.name, out), out, create=False)
                    if old is not None else None)
        try:
            for rel in sorted(files):
                parts = paths[rel].parts
                folder = new_dirs.get(parts[:-1])
                old_folder = old_dirs.get(parts[:-1]) if old_dirs else None
                if old_folder is not None and _keep(old_folder, parts[-1], files[rel], folder):
                    kept += 1
                else:
                    _create(folder, parts[-1], files[rel])
                    written.append(rel)
            rel = ""
            # The staging directory was made with the umask's mode: a fresh output keeps
            # that, a replaced one keeps its own.
            if old is not None:
                os.fchmod(new_dirs.fds[()], stat.S_IMODE(old.st_mode))
        finally:
            new_dirs.close()
            if old_dirs is not None:
                old_dirs.close()
        if old is not None:
            _exchange(parent_fd, stage, out.name)
        elif not _renameat2(parent_fd, stage, out.name, _RENAME_NOREPLACE):
            if os.path.lexists(out):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(out))
            os.rename(stage, out.name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except FileExistsError as exc:
        if rel:
            raise OutputError(f"Writing the output directory '{out}' failed at '{rel}': "
                              f"{_reason(exc)}.") from exc
        raise OutputError(f"The output directory '{out}' appeared while optnet was writing "
                          "it (made by another program); optnet did not replace it.") from exc
    except OSError as exc:
        where = f" at '{rel}'" if rel else ""
        raise OutputError(f"Writing the output directory '{out}' failed{where}: "
                          f"{_reason(exc)}. The previous output is unchanged.") from exc
    finally:
        try:
            shutil.rmtree(stage, dir_fd=parent_fd)
        except FileNotFoundError:
            pass
        except OSError as exc:   # the next run removes it (_clean_stale)
            logger.warning("could not remove %s: %s", out.parent / stage, exc)
    return WriteStats(tuple(written), kept)


def _make_stage(parent_fd: int, out: Path) -> str:
    while True:
        stage = f".{out.name}.optnet-{secrets.token_hex(8)}.tmp"
        try:
            os.mkdir(stage, 0o777, dir_fd=parent_fd)
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(f"optnet cannot make its staging directory next to the output "
                              f"'{out}': {_reason(exc)}.") from exc
        return stage


_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


def _renameat2(dir_fd: int, old: str, new: str, flags: int) -> bool:
    """``renameat2`` in ``dir_fd``; False where the C library, the kernel or the file
    system lacks it (raises OSError for any other failure)."""
    libc_name = ctypes.util.find_library("c")
    renameat2 = getattr(ctypes.CDLL(libc_name, use_errno=True), "renameat2",
                        None) if libc_name else None
    if renameat2 is None:
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    if renameat2(dir_fd, os.fsencode(old), dir_fd, os.fsencode(new), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), new)


def _exchange(dir_fd: int, new: str, out: str) -> None:
    """Swap directories ``new`` and ``out`` in ``dir_fd`` (``new`` then holds the old
    tree)."""
    if _renameat2(dir_fd, new, out, _RENAME_EXCHANGE):
        return
    # No atomic exchange (another OS, an old kernel or a file system without it): two
    # renames, with the old tree put back if the second fails (and by the next run's
    # _clean_stale if this one is killed in between).
    aside = new + ".old"
    os.rename(out, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    try:
        os.rename(new, out, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        os.rename(aside, out, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        raise
    os.rename(aside, new, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
