"""Reading YAML while keeping the line and column of every key and value.

Every input file (cluster, preset, board) is read by :func:`read_source`, which takes
only regular files and never more than :data:`MAX_BYTES` bytes of them. PyYAML's parser
turns the text into events and a composer of our own builds the node graph from them,
refusing, with a diagnostic and before anything is expanded, documents that nest too
deeply or have too many values; this module then turns that graph into plain Python values
and a :class:`SourceMap` from value paths (``("links", 3, "lanes")``) to
:class:`~optnet.diagnostics.Location`. Documents whose aliases would expand past the value
limit or that refer to themselves are refused as well; duplicate keys are errors rather
than silently overwritten.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path as FilePath

import yaml
from yaml.composer import Composer
from yaml.resolver import Resolver

from optnet.diagnostics import Diagnostic, DiagnosticError, Location

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_VALUES", "InputError", "Path", "SourceMap",
           "load_yaml", "read_source"]

Path = tuple[str | int, ...]

MAX_BYTES = 16 * 2**20
MAX_VALUES = 500_000
MAX_DEPTH = 64

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class InputError(Exception):
    """A file could not be read at all (exit status 2, not a finding).

    ``str()`` is the whole message, ``reason`` only why (a sentence without the file).
    """

    def __init__(self, display: str, reason: str) -> None:
        super().__init__(f"cannot read {display}: {reason}")
        self.reason = reason


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def read_source(path: FilePath, display: str, limit: int = MAX_BYTES) -> str:
    """Read an input file as UTF-8 text, refusing anything but a regular file of at most
    ``limit`` bytes.

    A named pipe, device or directory (also behind a symbolic link) is refused without
    reading from it, so ``/dev/zero`` or a FIFO nobody writes to cannot exhaust memory or
    block; a regular file is read only up to ``limit + 1`` bytes.

    Parameters
    ----------
    path : pathlib.Path
    display : str
        The name messages and diagnostics use for the file.
    limit : int
        The largest file accepted, in bytes.

    Returns
    -------
    str
        The text, with a byte-order mark kept (YAML ignores it).

    Raises
    ------
    InputError
        When the file does not exist, cannot be opened or read, or is not a regular file.
    DiagnosticError
        With E003 when the file is larger than ``limit`` bytes and E001 when it is not
        UTF-8.
    """
    try:
        # Looking before opening keeps a device's open from having effects (a tape rewinds);
        # fstat on the open file then closes the race with a file swapped in between.
        kind = _not_regular(os.stat(path).st_mode)
        if kind is None:
            fd = os.open(path, _OPEN_FLAGS)
            with os.fdopen(fd, "rb") as stream:
                kind = _not_regular(os.fstat(stream.fileno()).st_mode)
                data = stream.read(limit + 1) if kind is None else b""
    except OSError as exc:
        raise InputError(display, f"{exc.strerror or exc}.") from None
    if kind is not None:
        raise InputError(display, f"it is {kind}, not a regular file.")
    if len(data) > limit:
        raise DiagnosticError([Diagnostic(
            "E003", f"The file is larger than {_size(limit)}, the most optnet reads.",
            Location(display, 1, 1))])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        column = len(data[start:exc.start].decode("utf-8", "replace")) + 1
        raise DiagnosticError([Diagnostic(
            "E001", f"The file is not UTF-8 text: byte {exc.start} (line {line}) is "
            f"0x{data[exc.start]:02x}.", Location(display, line, column))]) from None


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit:,} bytes"
_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"


@dataclass
class SourceMap:
    """Locations of the keys and values of one loaded document.

    ``values[path]`` is where the value at ``path`` is written, ``keys[path]`` where its
    key is (only for mapping entries), and ``plain[path]`` the raw text of a plain (unquoted)
    scalar, used to explain YAML's implicit typing (``on`` read as a boolean).
    """

    file: str
    text: str
    values: dict[Path, Location] = field(default_factory=dict)
    keys: dict[Path, Location] = field(default_factory=dict)
    plain: dict[Path, str] = field(default_factory=dict)

    def at(self, path: Path, *, key: bool = False) -> Location:
        """The location of ``path`` (its key when ``key``), or of its nearest ancestor."""
        table = self.keys if key else self.values
        for cut in range(len(path), -1, -1):
            prefix = tuple(path[:cut])
            if prefix in table:
                return table[prefix]
            if prefix in self.values:
                return self.values[prefix]
        return Location(self.file, 1, 1)


def _location(file: str, start: yaml.Mark, end: yaml.Mark | None = None) -> Location:
    end = end or start
    end_col = end.column + 1 if end.line == start.line else start.column + 2
    return Location(file, start.line + 1, start.column + 1, end.line + 1, end_col)


def _too_large(message: str, where: Location, hint: str | None = None) -> DiagnosticError:
    return DiagnosticError([Diagnostic("E003", message, where, hint)])


class _Composer(Composer, Resolver):
    """PyYAML's composer over the events of its (C, when built) parser, refusing a document
    as soon as it nests deeper than :data:`MAX_DEPTH` or has more than :data:`MAX_VALUES`
    values.

    PyYAML's C composer recurses once per level and has no limit, so a few thousand
    brackets overflow the C stack and kill the process; this one stops at the first event
    too deep, before recursing further. Counting values as they are composed also keeps a
    16 MiB list of one-character items from ever becoming millions of nodes.
    """

    def __init__(self, text: str, file: str, loader: type = _Loader) -> None:
        self._events = loader(text)
        self._file = file
        self._depth = 0
        self.values = 0
        self.aliases: dict[int, list[yaml.Mark]] = {}
        """Where each aliased node is used, by ``id`` of the node, in document order."""
        Composer.__init__(self)
        Resolver.__init__(self)

    def check_event(self, *choices: type) -> bool:
        return self._events.check_event(*choices)

    def peek_event(self) -> yaml.Event:
        return self._events.peek_event()

    def get_event(self) -> yaml.Event:
        return self._events.get_event()

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        self.values += 1
        if self.values > MAX_VALUES:
            raise _too_large(
                f"The document has more than {MAX_VALUES:,} values (keys, list items and "
                "scalars), the most optnet reads; this is the first one past the limit.",
                _location(self._file, self.peek_event().start_mark),
                hint="Describe regular parts with a topology generator instead of listing "
                     "every node and link.")
        if self._depth > MAX_DEPTH:
            raise _too_large(f"The document nests deeper than {MAX_DEPTH} levels.",
                             _location(self._file, self.peek_event().start_mark))
        alias = self.peek_event() if self.check_event(yaml.AliasEvent) else None
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if alias is not None:
            self.aliases.setdefault(id(node), []).append(alias.start_mark)
        return node

    def dispose(self) -> None:
        self._events.dispose()


def _expanded_size(root: yaml.Node, file: str, aliases: dict[int, list[yaml.Mark]]) -> int:
    """Number of values the document expands to, counting every alias use in full.

    Raises E003 when an alias makes a value contain itself, or when substituting aliases
    nests the document deeper than :data:`MAX_DEPTH` (each alias only refers to an earlier
    value, but a chain of them can stack those values' depths). ``aliases`` says where each
    aliased node is used (:attr:`_Composer.aliases`).
    """
    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    uses: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        if key in active:
            raise _too_large("This value refers to itself through an alias, so it has no end.",
                             _location(file, node.start_mark))
        if key in sizes:
            # Visits after the first are alias uses, met in document order as composed.
            marks, use = aliases.get(key, []), uses.get(key, 0)
            uses[key] = use + 1
            if depth + heights[key] > MAX_DEPTH:
                mark = marks[use] if use < len(marks) else node.start_mark
                raise _too_large(f"The document nests deeper than {MAX_DEPTH} levels once "
                                 "this alias is substituted.", _location(file, mark))
            return sizes[key]
        active.add(key)
        total, height = 1, 0
        children = (node.value if isinstance(node, yaml.SequenceNode)
                    else [n for pair in node.value for n in pair]
                    if isinstance(node, yaml.MappingNode) else [])
        for child in children:
            total += size(child, depth + 1)
            height = max(height, heights[id(child)] + 1)
        active.discard(key)
        sizes[key] = min(total, MAX_VALUES + 1)
        heights[key] = height
        return sizes[key]

    return size(root, 0)


class _Builder:
    def __init__(self, file: str, text: str) -> None:
        self.map = SourceMap(file, text)
        self.errors: list[Diagnostic] = []
        self._constructor = yaml.SafeLoader("")

    def build(self, node: yaml.Node, path: Path) -> object:
        self.map.values[path] = _location(self.map.file, node.start_mark, node.end_mark)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(child, (*path, i)) for i, child in enumerate(node.value)]
        return self._mapping(node, path)

    def _scalar(self, node: yaml.ScalarNode, path: Path) -> object:
        if not node.style and node.tag != _STR:
            self.map.plain[path] = node.value
        loc = _location(self.map.file, node.start_mark, node.end_mark)
        if len(node.value) > 64 and node.tag != _STR:
            self.errors.append(Diagnostic(
                "E014", f"The value starting '{node.value[:20]}' has {len(node.value)} "
                "characters; no number in a cluster file is that long.", loc))
            return None
        try:
            return self._constructor.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError) as exc:
            what = getattr(exc, "problem", None) or str(exc)
            self.errors.append(Diagnostic(
                "E001", f"The value '{node.value[:40]}' cannot be read: {what}.", loc))
            return None

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict:
        result: dict[str, object] = {}
        merged: dict[str, object] = {}
        first_seen: dict[str, Location] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                sources = (value_node.value if isinstance(value_node, yaml.SequenceNode)
                           else [value_node])
                for source in sources:
                    if not isinstance(source, yaml.MappingNode):
                        self.errors.append(Diagnostic(
                            "E012", "A merge key '<<' must refer to a mapping.",
                            _location(self.map.file, source.start_mark)))
                        continue
                    for name, value in self._mapping(source, path).items():
                        merged.setdefault(name, value)
                continue
            key_loc = _location(self.map.file, key_node.start_mark, key_node.end_mark)
            if not isinstance(key_node, yaml.ScalarNode) or not isinstance(key_node.value, str):
                self.errors.append(Diagnostic(
                    "E012", "Keys must be plain names, not lists or mappings.", key_loc))
                continue
            name = key_node.value
            if name in first_seen:
                self.errors.append(Diagnostic(
                    "E002", f"The key '{name}' appears twice in this mapping; YAML would "
                    "silently keep only the last one.", key_loc,
                    hint="Remove one of them or merge their contents."))
                continue
            first_seen[name] = key_loc
            self.map.keys[(*path, name)] = key_loc
            result[name] = self.build(value_node, (*path, name))
        for name, value in merged.items():
            result.setdefault(name, value)
        return result


def load_yaml(text: str, file: str) -> tuple[object, SourceMap, list[Diagnostic]]:
    """Load one YAML document with source locations.

    Parameters
    ----------
    text : str
        The document.
    file : str
        The name diagnostics should show for it.

    Returns
    -------
    (value, SourceMap, diagnostics)
        Plain Python data (dicts, lists, scalars), where each part was written, and the
        findings that did not stop loading (E002 duplicate keys, keeping the first; E001
        for a scalar that cannot be read, which becomes None).

    Raises
    ------
    DiagnosticError
        With E001 for malformed YAML and E003 for documents that are too large, too deep, or
        self-referential.
    """
    if len(text) > MAX_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise _too_large(f"The file is larger than {_size(MAX_BYTES)}, the most optnet reads.",
                         Location(file, 1, 1))
    composer = _Composer(text, file)
    try:
        try:
            root = composer.get_single_node()
        except yaml.MarkedYAMLError as exc:
            # LibYAML from 0.2.6 (PyYAML 6.0.4's wheels) refuses 1,000 nested levels in
            # its scanner, which reads a flow collection ahead of the events composed.
            # Python's own scanner reads no further than asked, so the document is then
            # refused where it passes MAX_DEPTH, as with any other LibYAML.
            if "maximum nesting depth" not in str(exc.problem):
                raise
            composer.dispose()
            composer = _Composer(text, file, yaml.SafeLoader)
            root = composer.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = _location(file, mark) if mark else Location(file, 1, 1)
        problem = (exc.problem or "malformed YAML").rstrip(".")
        context = f" ({exc.context})" if exc.context else ""
        hint = None
        if "flow" in (exc.context or ""):
            hint = ("Inside [ ] or { }, a value that contains [ ] { } or a comma must be quoted, "
                    "for example \"n0.fmc1_hpc[0..1]\".")
        raise DiagnosticError([Diagnostic(
            "E001", f"The file is not valid YAML: {problem}{context}.", loc, hint)]) from None
    except yaml.reader.ReaderError as exc:
        raise DiagnosticError([_unreadable_character(exc, text, file)]) from None
    except yaml.YAMLError as exc:
        raise DiagnosticError([Diagnostic(
            "E001", f"The file is not valid YAML: {exc}.", Location(file, 1, 1))]) from None
    finally:
        composer.dispose()
    if root is None:
        return None, SourceMap(file, text), []
    total = _expanded_size(root, file, composer.aliases)
    if total > MAX_VALUES:
        raise _too_large(
            f"The document expands to more than {MAX_VALUES:,} values once its aliases are "
            f"substituted, though only {composer.values:,} are written out; this looks like "
            "an alias bomb.", _location(file, root.start_mark),
            hint="Write the repeated parts out or use a topology generator.")
    builder = _Builder(file, text)
    value = builder.build(root, ())
    return value, builder.map, builder.errors


def _unreadable_character(exc: yaml.reader.ReaderError, text: str, file: str) -> Diagnostic:
    """E001 for a character YAML does not allow, at its line and column."""
    char = chr(exc.character) if isinstance(exc.character, int) else str(exc.character)
    # The reader's position counts characters in the pure-Python reader and bytes in the C
    # one; finding the first such character in the text gives the same answer for both.
    at = text.find(char) if char else -1
    where = Location(file, 1, 1)
    if at >= 0:
        line_start = text.rfind("\n", 0, at) + 1
        where = Location(file, text.count("\n", 0, at) + 1, at - line_start + 1)
    return Diagnostic(
        "E001", f"The file contains the character U+{ord(char[:1] or ' '):04X}, which YAML "
        "does not allow (control characters other than tab, line feed and carriage return "
        "are not text).", where)
