"""Reading YAML while keeping the line and column of every key and value.

PyYAML composes the document into a node graph that still carries source marks; this
module turns that graph into plain Python values and a :class:`SourceMap` from value paths
(``("links", 3, "lanes")``) to :class:`~optnet.diagnostics.Location`. It refuses, with a
diagnostic and before expanding anything, documents whose aliases would expand past a
fixed size, that nest too deeply or that refer to themselves; duplicate keys are errors
rather than silently overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from optnet.diagnostics import Diagnostic, DiagnosticError, Location

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_VALUES", "Path", "SourceMap", "load_yaml"]

Path = tuple[str | int, ...]

MAX_BYTES = 16 * 2**20
MAX_VALUES = 500_000
MAX_DEPTH = 64

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
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


def _expanded_size(root: yaml.Node, file: str) -> int:
    """Number of values the document expands to, counting every alias use in full."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise DiagnosticError([Diagnostic(
                "E003", "This value refers to itself through an alias, so it has no end.",
                _location(file, node.start_mark))])
        if depth > MAX_DEPTH:
            raise DiagnosticError([Diagnostic(
                "E003", f"The document nests deeper than {MAX_DEPTH} levels.",
                _location(file, node.start_mark))])
        active.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k, depth + 1) + size(v, depth + 1) for k, v in node.value)
        active.discard(key)
        sizes[key] = min(total, MAX_VALUES + 1)
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
    if len(text) > MAX_BYTES:
        raise DiagnosticError([Diagnostic(
            "E003", f"The file is larger than {MAX_BYTES // 2**20} MiB.", Location(file, 1, 1))])
    try:
        root = yaml.compose(text, Loader=_Loader)
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
    except yaml.YAMLError as exc:
        raise DiagnosticError([Diagnostic(
            "E001", f"The file is not valid YAML: {exc}.", Location(file, 1, 1))]) from None
    if root is None:
        return None, SourceMap(file, text), []
    total = _expanded_size(root, file)
    if total > MAX_VALUES:
        raise DiagnosticError([Diagnostic(
            "E003", f"The document expands to more than {MAX_VALUES:,} values once its "
            "aliases are substituted; this looks like an alias bomb.",
            _location(file, root.start_mark),
            hint="Write the repeated parts out or use a topology generator.")])
    builder = _Builder(file, text)
    value = builder.build(root, ())
    return value, builder.map, builder.errors
