"""Escaping of values for each language optnet writes.

Every ``{{ value }}`` a template outputs goes through the escaper of the template's output
language (:func:`language_of` picks it from the template name; :mod:`optnet.emit.env`
applies it), so a value from a board or cluster file can never change the structure of the
file it lands in: it stays one Tcl word, one CSV cell, one Markdown table cell. The schema
refuses such values first (:mod:`optnet.spec.models`); this is the second line of defence.

Where a language has no way to quote a character (UCF and LPF strings, Makefile rules,
Verilog and C comments) the escaper refuses the value with :class:`EscapeError` rather than
write something that means another thing.

A fragment that is already in the output language (a Tcl word built by the emitter, a
rendered SVG for the HTML page) is passed as :class:`Raw` with its language; a Raw of
another language is escaped like any other value.
"""

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
from collections.abc import Callable

import markupsafe

__all__ = [
    "COMMENT_PREFIX",
    "ESCAPERS",
    "EscapeError",
    "Raw",
    "comment",
    "escape",
    "language_of",
    "md_code",
    "tcl_braced",
    "tcl_quoted",
]


class EscapeError(ValueError):
    """A value cannot be written into a file of the given language without changing what
    the file means; ``args[0]`` is a full sentence naming the value and the reason."""


class Raw(str):
    """Text already written in output language ``lang``; templates of that language output
    it unchanged, templates of any other language escape it.

    Parameters
    ----------
    text : str
    lang : str
        A key of :data:`ESCAPERS`.
    """

    lang: str

    def __new__(cls, text: str, lang: str) -> Raw:
        if lang not in ESCAPERS:
            raise ValueError(f"Raw text names the unknown language {lang!r}.")
        obj = super().__new__(cls, text)
        obj.lang = lang
        return obj


#: Output language by the rendered file's extension (or name, for a Makefile).
_LANGUAGES = {".tcl": "tcl", ".xdc": "tcl", ".sdc": "tcl", ".qsf": "tcl", ".ucf": "ucf",
              ".lpf": "lpf", "Makefile": "make", ".core": "yaml", ".csv": "csv", ".md": "md",
              ".html": "html", ".svg": "html", ".v": "verilog", ".hex": "verilog",
              ".h": "c", ".cpp": "c", ".txt": "text", ".py": "python"}


def language_of(template: str | None) -> str | None:
    """The output language of template ``template`` (``xilinx/vivado.tcl.j2`` -> ``tcl``),
    or None for a template that is only imported (``hw/constraints_common.j2``)."""
    if not template:
        return None
    name = template.rsplit("/", 1)[-1].removesuffix(".j2")
    if name in _LANGUAGES:
        return _LANGUAGES[name]
    suffix = name[name.rfind("."):] if "." in name else ""
    return _LANGUAGES.get(suffix)


# Characters no output language should carry raw: C0 controls, DEL, C1 controls and the
# Unicode line and paragraph separators (which some editors and renderers break lines on).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _shown(value: str) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------- Tcl

_TCL = {"\\": "\\\\", "$": "\\$", "[": "\\[", "]": "\\]", "{": "\\{", "}": "\\}",
        '"': '\\"', ";": "\\;", " ": "\\ ", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _tcl_char(c: str, table: dict[str, str]) -> str:
    if c in table:
        return table[c]
    if _CONTROL.match(c):
        # Four hex digits: Tcl 8.4 (ISE's xtclsh) takes every hex digit after \x.
        return f"\\u{ord(c):04x}"
    return c


def tcl(value: str) -> str:
    """``value`` as (part of) one Tcl word, by backslash escapes.

    Backslash escapes mean the same in a bare word, inside double quotes, as a list element
    inside braces (``-dict {KEY value}``) and in a proc body, so the result is safe wherever
    a template puts it: no substitution, no word or command break, no comment.
    """
    out = "".join(_tcl_char(c, _TCL) for c in value)
    return "\\" + out if out.startswith("#") else out


_TCL_IN_QUOTES = {k: v for k, v in _TCL.items() if k not in " ;"}


def tcl_quoted(value: object) -> str:
    """``value`` as one double-quoted Tcl word (spaces kept as they are)."""
    return '"' + "".join(_tcl_char(c, _TCL_IN_QUOTES) for c in str(value)) + '"'


def tcl_braced(value: str) -> str:
    """``value`` as one Tcl word in braces (no substitution at all) when it can be, else
    backslash-escaped; an empty value is ``{}``."""
    if not re.search(r"[{}\\]", value) and not _CONTROL.search(value):
        return "{" + value + "}"
    return tcl(value) or "{}"


# --------------------------------------------------------------------------- UCF and LPF

# Neither has an escape inside "..." nor a way to quote a bare value: only these pass.
_TOKEN = re.compile(r"[A-Za-z0-9_.:/+\-\[\]<>()=,]*")


def _token(lang: str) -> Callable[[str], str]:
    def escape_token(value: str) -> str:
        if not _TOKEN.fullmatch(value):
            raise EscapeError(
                f"The value {_shown(value)} cannot be written into a {lang} file: it may only "
                f"hold letters, digits and _ . : / + - [ ] < > ( ) = , (no spaces, quotes, "
                f"semicolons, comment signs or control characters).")
        return value
    return escape_token


# --------------------------------------------------------------------------- Makefile

_MAKE = re.compile(r"[A-Za-z0-9_./+\-]*")


def make(value: str) -> str:
    """``value`` unchanged if it is safe in a Makefile rule, variable or recipe (which also
    goes through the shell); refused otherwise."""
    if not _MAKE.fullmatch(value):
        raise EscapeError(
            f"The value {_shown(value)} cannot be written into a Makefile: only letters, "
            f"digits and _ . / + - are safe in its rules and recipes ($, #, spaces, quotes "
            f"and newlines would change the rules or the shell commands).")
    return value


# --------------------------------------------------------------------------- YAML

_YAML_PLAIN = re.compile(r"[A-Za-z0-9_./(][A-Za-z0-9_ ./()+\-:]*")
_YAML_SPECIAL = re.compile(r"(?i)y|n|yes|no|true|false|on|off|null|~|[-+]?[0-9._]+"
                           r"(e[-+]?[0-9]+)?|0x[0-9a-f]+|0o[0-7]+|\.inf|\.nan")


def yaml(value: str) -> str:
    """``value`` as one YAML scalar: plain when it reads back as the same string in block
    and flow context, else single-quoted (double-quoted when it holds control characters).
    A template must output a whole scalar this way, not part of one."""
    if (_YAML_PLAIN.fullmatch(value) and not value.endswith((" ", ":"))
            and ": " not in value and not _YAML_SPECIAL.fullmatch(value)):
        return value
    if _CONTROL.search(value):
        return json.dumps(value)
    return "'" + value.replace("'", "''") + "'"


# --------------------------------------------------------------------------- CSV

def csv_cell(value: str) -> str:
    """``value`` as one RFC 4180 field (quoted when it holds a comma, quote or line
    break)."""
    out = io.StringIO()
    # The writer quotes a field holding a character of its line terminator: keep \r\n.
    csv.writer(out, lineterminator="\r\n").writerow([value])
    return out.getvalue().removesuffix("\r\n")


# --------------------------------------------------------------------------- Markdown

_MD = {"\\": "\\\\", "`": "\\`", "*": "\\*", "|": "\\|", "[": "\\[", "]": "\\]",
       "<": "&lt;", "~": "\\~"}


def md(value: str) -> str:
    """``value`` as Markdown text (CommonMark/GFM) that renders as itself: one table cell,
    no emphasis, code, link, HTML, heading or line break of its own.

    An underscore between two letters or digits is left alone (``fmc1_hpc``), as neither
    spec lets it start or end emphasis.
    """
    text = _CONTROL.sub(" ", value)
    out = []
    for i, c in enumerate(text):
        if c == "_":
            inner = 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
            out.append("_" if inner else "\\_")
        else:
            out.append(_MD.get(c, c))
    result = "".join(out)
    # At the start of a line these open a heading or a quote.
    return "\\" + result if result.startswith(("#", ">")) else result


def md_code(value: object) -> str:
    """``value`` as one Markdown code span, also inside a table cell."""
    text = _CONTROL.sub(" ", str(value)).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# --------------------------------------------------------------------------- HTML

def html(value: str) -> str:
    """``value`` as HTML or XML text or attribute value (markupsafe's escaping)."""
    return str(markupsafe.escape(value))


# --------------------------------------------------------------------------- Verilog, C

def _source(lang: str) -> Callable[[str], str]:
    def escape_source(value: str) -> str:
        if _CONTROL.search(value) or "*/" in value or "/*" in value:
            raise EscapeError(
                f"The value {_shown(value)} cannot be written into {lang} source: it holds a "
                f"line break, a control character or a comment delimiter.")
        return value
    return escape_source


_PYTHON_WORD = re.compile(r"[A-Za-z0-9_.]*\Z")


def python(value: str) -> str:
    """``value`` in Python source: only a name or a number (letters, digits, ``_`` and
    ``.``) goes in as it is; anything else must be a string (:func:`python_string`)."""
    if not _PYTHON_WORD.match(value):
        raise EscapeError(f"The value {_shown(value)} cannot be written into Python source "
                          "as it is; quote it (the quoted filter).")
    return value


def python_string(value: object) -> str:
    """``value`` as a Python string literal."""
    return repr(str(value))


def text(value: str) -> str:
    """``value`` for a terminal: control characters (escape sequences, line breaks) shown
    as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


#: The escaper of each output language.
ESCAPERS: dict[str, Callable[[str], str]] = {
    "tcl": tcl, "ucf": _token("UCF"), "lpf": _token("LPF"), "make": make, "yaml": yaml,
    "csv": csv_cell, "md": md, "html": html, "verilog": _source("Verilog"),
    "c": _source("C"), "text": text, "python": python,
}


def escape(lang: str, value: object) -> str:
    """``value`` (any object, as ``str``) escaped for ``lang``; a :class:`Raw` of ``lang``
    unchanged."""
    if isinstance(value, Raw) and value.lang == lang:
        return str(value)
    return ESCAPERS[lang](str(value))


# --------------------------------------------------------------------------- comments

#: The comment leader of each language that has line comments.
COMMENT_PREFIX = {"tcl": "# ", "ucf": "# ", "lpf": "# ", "make": "# ", "yaml": "# ",
                  "verilog": "// ", "c": " * ", "text": "", "python": "# "}

# A backslash before the line end continues a Tcl or make comment onto the next line; a
# doubled one does not. Braces count even in comments inside a Tcl braced body.
_COMMENT = {"tcl": {"\\": "\\\\", "{": "\\{", "}": "\\}"}, "make": {"\\": "\\\\"},
            "c": {"*/": "* /"}}


def comment(lang: str, value: object, width: int | None = None, *,
            break_on_hyphens: bool = True) -> str:
    """``value`` as the text of a line comment in ``lang``: every line break and control
    character becomes a space, so the text cannot end the comment; with ``width``, wrapped
    like Jinja's ``wordwrap`` with the language's comment leader starting each new line.

    Raises
    ------
    EscapeError
        For a language without line comments (CSV, Markdown, HTML).
    """
    if lang not in COMMENT_PREFIX:
        raise EscapeError(f"A {lang} file has no line comments to write {_shown(str(value))} "
                          f"into.")
    line = _CONTROL.sub(" ", str(value))
    for old, new in _COMMENT.get(lang, {}).items():
        line = line.replace(old, new)
    if width is None:
        return line
    wrapped = textwrap.wrap(line, width=width, expand_tabs=False, replace_whitespace=False,
                            break_on_hyphens=break_on_hyphens)
    return ("\n" + COMMENT_PREFIX[lang]).join(wrapped)
