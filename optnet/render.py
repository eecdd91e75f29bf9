"""Renderers of diagnostics: human text, JSON, SARIF 2.1.0 and GitHub workflow commands."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from optnet import __version__
from optnet.diagnostics import CODES, Diagnostic, Severity, sort_key

__all__ = ["FORMATS", "render", "summary"]

FORMATS = ("text", "json", "sarif", "github")


def summary(diags: Sequence[Diagnostic], files: int) -> str:
    """``2 errors, 1 warning in 3 files``."""
    errors = sum(d.severity is Severity.ERROR for d in diags)
    warnings = len(diags) - errors
    plural = {1: ""}
    return (f"{errors} error{plural.get(errors, 's')}, {warnings} warning"
            f"{plural.get(warnings, 's')} in {files} file{plural.get(files, 's')}")


# Characters a terminal or a log viewer acts on rather than shows: C0 and C1 controls
# (escape sequences that retitle or clear a terminal, a line break that fakes a finding),
# and the bidirectional overrides and isolates that reorder what a reader sees. Messages
# quote names and values from the input, so every one of these is shown as an escape.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e"
                     "\u2066-\u2069]")


def _shown(text: str) -> str:
    """``text`` with every :data:`_UNSAFE` character written as an escape (``\\x1b``)."""
    return _UNSAFE.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100
                       else f"\\u{ord(m[0]):04x}", text)


def _source_line(sources: Mapping[str, str], file: str, line: int,
                 split: dict[str, list[str]]) -> str | None:
    text = sources.get(file)
    if text is None or line < 1:
        return None
    # Split each file once: a large file with many findings would otherwise take quadratic
    # time to render.
    if file not in split:
        split[file] = text.splitlines()
    lines = split[file]
    # One replacement character per unsafe one keeps the caret under its column.
    return _UNSAFE.sub("\ufffd", lines[line - 1]) if line <= len(lines) else None


def _text(diags: Sequence[Diagnostic], sources: Mapping[str, str]) -> str:
    out = []
    split: dict[str, list[str]] = {}
    for d in diags:
        loc = d.location
        head = f"{_shown(str(loc))}: " if loc else ""
        out.append(f"{head}{d.severity.value}[{d.code}]: {_shown(d.message)}")
        line = _source_line(sources, loc.file, loc.line, split) if loc else None
        if line is not None:
            number = str(loc.line)
            pad = " " * len(number)
            shown = line.expandtabs(1)
            width = max(1, (loc.end_column - loc.column) if loc.end_line == loc.line else 1)
            width = min(width, max(1, len(shown) - loc.column + 1))
            out.append(f" {number} | {shown}")
            out.append(f" {pad} | {' ' * (loc.column - 1)}{'^' * width}")
        if d.hint:
            out.append(f"   = hint: {_shown(d.hint)}")
        out.extend(f"   = note: {_shown(str(r.location))}: {_shown(r.message)}"
                   for r in d.related)
    return "\n".join(out) + ("\n" if out else "")


def _json(diags: Sequence[Diagnostic], files: int) -> str:
    def loc(location):
        if location is None:
            return None
        return {"file": location.file, "line": location.line, "column": location.column,
                "end_line": location.end_line, "end_column": location.end_column}

    doc = {
        "version": 1,
        "tool": {"name": "optnet", "version": __version__},
        "diagnostics": [
            {"code": d.code, "name": CODES[d.code].name, "severity": d.severity.value,
             "message": d.message, "location": loc(d.location), "hint": d.hint,
             "related": [{"location": loc(r.location), "message": r.message}
                         for r in d.related]}
            for d in diags],
        "summary": {"errors": sum(d.severity is Severity.ERROR for d in diags),
                    "warnings": sum(d.severity is Severity.WARNING for d in diags),
                    "files": files},
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _region(location) -> dict:
    region = {"startLine": max(1, location.line), "startColumn": max(1, location.column)}
    if location.end_line >= location.line and location.end_column > location.column:
        region.update(endLine=location.end_line, endColumn=location.end_column)
    return region


def _physical(location) -> dict:
    return {"physicalLocation": {"artifactLocation": {"uri": location.file.replace("\\", "/")},
                                 "region": _region(location)}}


def _sarif(diags: Sequence[Diagnostic]) -> str:
    codes = sorted(CODES)
    rules = [{"id": c, "name": CODES[c].name,
              "shortDescription": {"text": CODES[c].summary},
              "defaultConfiguration": {"level": CODES[c].severity.value}} for c in codes]
    results = []
    for d in diags:
        result = {"ruleId": d.code, "ruleIndex": codes.index(d.code), "level": d.severity.value,
                  "message": {"text": d.message + (f" Hint: {d.hint}" if d.hint else "")}}
        if d.location is not None:
            result["locations"] = [_physical(d.location)]
        if d.related:
            result["relatedLocations"] = [
                {"id": i, **_physical(r.location), "message": {"text": r.message}}
                for i, r in enumerate(d.related)]
        results.append(result)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "optnet", "version": __version__,
                                      "informationUri": "https://pypi.org/project/optnet/",
                                      "rules": rules}},
                  "results": results}],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    text = _shown(text)
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def _github(diags: Sequence[Diagnostic]) -> str:
    lines = []
    for d in diags:
        level = "error" if d.severity is Severity.ERROR else "warning"
        props = [f"title={_escape(f'{d.code} {CODES[d.code].name}', True)}"]
        if d.location is not None:
            loc = d.location
            props = [f"file={_escape(loc.file, True)}", f"line={max(1, loc.line)}",
                     f"col={max(1, loc.column)}", *props]
            if loc.end_line == loc.line and loc.end_column > loc.column:
                props.insert(3, f"endColumn={loc.end_column}")
        message = d.message + (f" Hint: {d.hint}" if d.hint else "")
        lines.append(f"::{level} {','.join(props)}::{_escape(message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def render(diags: Sequence[Diagnostic], fmt: str, sources: Mapping[str, str], files: int
           ) -> str:
    """Render ``diags`` (sorted here) in ``fmt``, one of :data:`FORMATS`.

    ``sources`` maps file names (as in the locations) to their text, for the source line
    and caret of the text format.
    """
    ordered = sorted(diags, key=sort_key)
    if fmt == "json":
        return _json(ordered, files)
    if fmt == "sarif":
        return _sarif(ordered)
    if fmt == "github":
        return _github(ordered)
    return _text(ordered, sources)
