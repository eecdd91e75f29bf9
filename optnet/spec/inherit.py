"""Documents that start from another document (``extends:`` boards, ``preset:`` clusters)."""

from __future__ import annotations

from collections.abc import Mapping

from optnet.diagnostics import Diagnostic, DiagnosticError
from optnet.spec.source import SourceMap
from optnet.spec.validate import did_you_mean

__all__ = ["inherit", "merge"]


def merge(base: dict, child: dict) -> dict:
    """``child`` over ``base``: mappings merge key by key, everything else is replaced."""
    out = dict(base)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def inherit(data: dict, smap: SourceMap, key: str, what: str,
            library: Mapping[str, tuple[dict, SourceMap]], chain: tuple[str, ...] = (),
            *, point_at_key: bool = False) -> tuple[dict, SourceMap]:
    """Resolve ``data[key]`` (the name of a base document in ``library``) recursively.

    Returns the merged document without ``key`` and a source map in which every value
    points at the file that wrote it, or, with ``point_at_key``, every inherited value
    points at ``key`` in this file (so that a finding in a cluster built from a shipped
    preset is reported in the user's own file).

    Raises
    ------
    DiagnosticError
        E030 for a base that does not exist or a chain that loops.
    """
    base_name = data.get(key)
    if base_name is None:
        return data, smap
    name = str(data.get("name", "?"))
    where = smap.at((key,))
    if not isinstance(base_name, str) or base_name not in library:
        raise DiagnosticError([Diagnostic(
            "E030", f"The {what} '{name}' says {key}: '{base_name}', which is not in the "
            f"{what} library.{did_you_mean(str(base_name), library)}", where)])
    if base_name in chain:
        raise DiagnosticError([Diagnostic(
            "E030", f"The {what} '{name}' refers back to itself through "
            f"{' -> '.join((*chain, base_name))}.", where)])
    base, base_map = inherit(*library[base_name], key, what, library, (*chain, base_name))
    merged = merge({k: v for k, v in base.items() if k not in (key, "name")},
                   {k: v for k, v in data.items() if k != key})
    base_values, base_keys = base_map.values, base_map.keys
    if point_at_key:
        base_values = dict.fromkeys(base_values, where)
        base_keys = dict.fromkeys(base_keys, smap.at((key,), key=True))
    combined = SourceMap(smap.file, smap.text, {**base_values, **smap.values},
                         {**base_keys, **smap.keys}, {**base_map.plain, **smap.plain})
    return merged, combined
