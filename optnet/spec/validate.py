"""Validate loaded YAML against a model and point every error at its line and column."""

from __future__ import annotations

import bisect
import copy
import difflib
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from optnet.diagnostics import Diagnostic
from optnet.spec.source import Path, SourceMap

__all__ = ["Pruned", "did_you_mean", "display_path", "validate_model", "validate_pruned"]

_TYPE_NAMES = {
    "int_type": "a whole number", "int_parsing": "a whole number",
    "int_from_float": "a whole number", "string_type": "a string", "bool_type": "true or false",
    "bool_parsing": "true or false", "list_type": "a list", "dict_type": "a mapping",
    "model_type": "a mapping", "model_attributes_type": "a mapping",
    "float_type": "a number",
}
_RANGE = {"greater_than_equal": "at least {ge}", "less_than_equal": "at most {le}",
          "greater_than": "greater than {gt}", "less_than": "less than {lt}",
          "multiple_of": "a multiple of {multiple_of}",
          "too_short": "at least {min_length} entries long",
          "too_long": "at most {max_length} entries long"}


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""


def display_path(path: Path) -> str:
    """``links[3].lanes`` for ``("links", 3, "lanes")``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the document"


def _strip(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return {(info.alias or name): info for name, info in model.model_fields.items()}


def _walk(model: type[BaseModel], loc: tuple
          ) -> tuple[Path, Any, type[BaseModel] | None, bool]:
    """Source path, final annotation and innermost model along a pydantic error ``loc``, and
    whether the error is about a mapping's key (pydantic's ``[key]``) rather than a value."""
    path: list = []
    annotation: Any = model
    owner: type[BaseModel] | None = None
    items = list(loc)
    on_key = False
    while items:
        item = items.pop(0)
        annotation = _strip(annotation)
        origin = typing.get_origin(annotation)
        if _is_model(annotation):
            owner = annotation
            info = _fields(annotation).get(item)
            path.append(item)
            annotation = info.annotation if info else None
        elif origin in (typing.Union, types.UnionType):
            # A discriminated union puts the tag in the loc; it is not part of the source.
            annotation = next((m for m in typing.get_args(annotation)
                               if _is_model(m) and item in typing.get_args(
                                   m.model_fields["kind"].annotation)), None)
        elif origin is list:
            path.append(item)
            annotation = typing.get_args(annotation)[0]
        elif origin is dict:
            path.append(item)
            if items and items[0] == "[key]":
                # the key itself is wrong: its choices are the mapping's key type
                items.pop(0)
                annotation, on_key = typing.get_args(annotation)[0], True
            else:
                annotation = typing.get_args(annotation)[1]
        else:
            path.append(item)
            annotation = None
    return tuple(path), _strip(annotation), owner, on_key


def _subject(path: Path, data: Any) -> str:
    """Name the object at ``path``: "node 'n3'", "link n0.sfp0 -- n1.sfp0", or the path."""
    if len(path) >= 2 and isinstance(path[1], int) and isinstance(data, dict):
        items = data.get(path[0])
        item = items[path[1]] if isinstance(items, list) and path[1] < len(items) else None
        if isinstance(item, dict):
            rest = display_path(path[2:]) if len(path) > 2 else None
            if path[0] in ("nodes", "endpoints") and isinstance(item.get("name"), str):
                what = f"{path[0][:-1]} '{item['name']}'"
            elif path[0] == "links" and isinstance(item.get("from"), str) \
                    and isinstance(item.get("to"), str):
                what = f"link {item['from']} -- {item['to']}"
            else:
                what = display_path(path[:2])
            return f"'{rest}' of {what}" if rest else what
    return f"'{display_path(path)}'"


def _value_text(path: Path, smap: SourceMap, value: Any) -> str:
    raw = smap.plain.get(path)
    if raw is not None and not isinstance(value, str):
        kind = {bool: "a boolean", int: "a number", float: "a number",
                type(None): "null"}.get(type(value), type(value).__name__)
        return f"'{raw}' (which YAML reads as {kind}; quote it to make it a string)"
    if isinstance(value, dict | list):
        return "a mapping" if isinstance(value, dict) else "a list"
    return repr(value) if isinstance(value, str) else f"{value}"


def _diagnostic(err: dict, model: type[BaseModel], data: Any, smap: SourceMap) -> Diagnostic:
    kind = err["type"]
    path, annotation, owner, on_key = _walk(model, tuple(err["loc"]))
    ctx = err.get("ctx") or {}
    where = smap.at(path, key=on_key)
    subject = _subject(path, data)
    if kind == "extra_forbidden":
        key = path[-1]
        parent = owner.noun if owner else display_path(path[:-1])
        known = list(_fields(owner)) if owner else []
        return Diagnostic(
            "E010", f"The key '{key}' is not part of {parent}.{did_you_mean(key, known)}",
            smap.at(path, key=True),
            hint=f"Known keys: {', '.join(known)}." if known else None)
    if kind == "missing":
        parent = path[:-1]
        container = owner.noun if owner else display_path(parent)
        return Diagnostic("E011", f"{container[0].upper()}{container[1:]} at "
                          f"{display_path(parent)} needs the key '{path[-1]}'.",
                          smap.at(parent))
    if kind == "union_tag_not_found":
        return Diagnostic("E011", f"{subject} needs a 'kind' naming the generator.", where)
    if kind in ("union_tag_invalid", "literal_error"):
        if kind == "union_tag_invalid":
            got, choices = ctx.get("tag"), [c.strip(" '") for c in
                                           str(ctx.get("expected_tags", "")).split(",")]
            where = smap.at((*path, "kind"))
            subject = f"'{display_path((*path, 'kind'))}'"
        else:
            got = err.get("input")
            choices = [str(c) for c in typing.get_args(annotation)] if annotation else []
        said = (f"'{display_path(path[:-1])}' has the key {got!r}" if on_key
                else f"{subject} is {got!r}")
        return Diagnostic("E015", f"{said}, which is not one of "
                          f"{', '.join(choices)}.{did_you_mean(got, choices)}", where)
    if kind == "bad_quantity":
        return Diagnostic("E013", f"{subject}: {err['msg']}.", where)
    if kind == "bad_form":
        got = err.get("input")
        shown = repr(got) if len(repr(got)) <= 50 else repr(got)[:47] + "..."
        return Diagnostic("E014", f"{subject} is {shown}, which is not {ctx['what']}: "
                          f"{ctx['rule']} (for example {ctx['example']}).", where,
                          hint="Values from board and cluster files are written into Tcl "
                          "scripts, constraint files and Makefiles, so they must have this "
                          "exact form.")
    if kind in _RANGE:
        bound = _RANGE[kind].format(**ctx)
        got = err.get("input")
        shown = f"{len(got)} entries" if isinstance(got, list | dict) else got
        return Diagnostic("E014", f"{subject} must be {bound}, not {shown}.", where)
    value = _value_text(path, smap, err.get("input"))
    wanted = _TYPE_NAMES.get(kind)
    if wanted:
        return Diagnostic("E012", f"{subject} must be {wanted}, not {value}.", where)
    return Diagnostic("E014", f"{subject} is not valid: {err['msg']}.", where)


M = typing.TypeVar("M", bound=BaseModel)


def validate_model(model: type[M], data: Any, smap: SourceMap) -> tuple[M | None, list[Diagnostic]]:
    """Validate ``data`` as ``model``.

    Returns
    -------
    (instance or None, diagnostics)
        The instance when valid; otherwise None and one diagnostic per error, each located
        at the offending key (unknown keys) or value (everything else) in ``smap``.
    """
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        diags = [_diagnostic(err, model, data, smap) for err in exc.errors()]
        return None, list(dict.fromkeys(diags))


@dataclass(frozen=True)
class Pruned:
    """What :func:`validate_pruned` left out of a document to validate the rest.

    Attributes
    ----------
    items : dict of str to tuple of int
        Per list key (``nodes`` ...), the indices of the items left out, as in the file.
    keys : tuple of str
        Top-level keys left at their defaults.
    names : frozenset of str
        The ``name`` of every item left out, so that later stages can tell a reference to
        an object with errors from a reference to an object that does not exist.
    """

    items: dict[str, tuple[int, ...]]
    keys: tuple[str, ...]
    names: frozenset[str]

    def __bool__(self) -> bool:
        return bool(self.keys) or any(self.items.values())


def validate_pruned(model: type[M], data: Any, smap: SourceMap, *, lists: tuple[str, ...],
                    keys: tuple[str, ...]) -> tuple[M | None, list[Diagnostic], SourceMap,
                                                    Pruned]:
    """Validate ``data`` as ``model``; on errors, validate what is left without the parts
    that have them, so that later stages still check the rest of the file.

    An item of a top-level list in ``lists`` that has an error is left out; so is an
    unknown key anywhere. A top-level key in ``keys`` with an error is left at its default
    (only keys whose value no check of the rest depends on belong there). Any other error
    leaves nothing to validate.

    Returns
    -------
    (instance or None, diagnostics, SourceMap, Pruned)
        The instance of what was left (None when nothing could be), one diagnostic per error
        of the whole document (located in ``smap``), the source map of what was left (list
        items renumbered as the instance has them) and what was left out.
    """
    instance, diags = validate_model(model, data, smap)
    nothing = Pruned({}, (), frozenset())
    if instance is not None or not isinstance(data, dict):
        return instance, diags, smap, nothing
    data = copy.deepcopy(data)
    items: dict[str, set[int]] = {key: set() for key in lists}
    defaulted: set[str] = set()
    unknown: list[Path] = []
    errors = _errors(model, data)
    for _ in range(4):      # leaving a part out can only reveal errors in parts it held
        for err in errors:
            path = _walk(model, tuple(err["loc"]))[0]
            if not path:
                return None, diags, smap, nothing
            if err["type"] == "extra_forbidden":
                unknown.append(path)
            elif path[0] in lists and len(path) > 1 and isinstance(path[1], int):
                items[path[0]].add(path[1])
            elif path[0] in keys:
                defaulted.add(path[0])
            else:
                return None, diags, smap, nothing
        left = _prune(data, items, defaulted, unknown)
        errors = _errors(model, left)
        if not errors:
            break
    else:
        return None, diags, smap, nothing
    names = frozenset(item["name"] for key, held in items.items() for i in held
                      if isinstance(item := data[key][i], dict)
                      and isinstance(item.get("name"), str))
    pruned = Pruned({key: tuple(sorted(held)) for key, held in items.items()},
                    tuple(sorted(defaulted)), names)
    return model.model_validate(left), diags, _renumbered(smap, pruned), pruned


def _errors(model: type[BaseModel], data: Any) -> list[dict]:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return exc.errors()
    return []


def _prune(data: dict, items: dict[str, set[int]], defaulted: set[str],
           unknown: list[Path]) -> dict:
    """A copy of ``data`` without the list items, top-level keys and unknown keys given."""
    left = copy.deepcopy(data)
    for path in unknown:
        parent: Any = left
        for part in path[:-1]:
            try:
                parent = parent[part]
            except (KeyError, IndexError, TypeError):
                parent = None
                break
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
    for key, held in items.items():
        if isinstance(left.get(key), list):
            left[key] = [item for i, item in enumerate(left[key]) if i not in held]
    for key in defaulted:
        left.pop(key, None)
    return left


def _renumbered(smap: SourceMap, pruned: Pruned) -> SourceMap:
    """``smap`` with the list items left out dropped and the rest renumbered."""
    held = {key: sorted(indices) for key, indices in pruned.items.items() if indices}

    def move(path: Path) -> Path | None:
        if len(path) > 1 and path[0] in held and isinstance(path[1], int):
            gone = held[path[0]]
            if path[1] in gone:
                return None
            return (path[0], path[1] - bisect.bisect_left(gone, path[1]), *path[2:])
        return path

    out = SourceMap(smap.file, smap.text)
    for table, moved in ((smap.values, out.values), (smap.keys, out.keys),
                         (smap.plain, out.plain)):
        for path, value in table.items():
            new = move(path)
            if new is not None:
                moved[new] = value
    return out
