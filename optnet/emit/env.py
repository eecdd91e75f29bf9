"""The one Jinja2 environment every emitter renders with.

Every ``{{ value }}`` is escaped for the output language of the template being rendered
(:func:`optnet.emit.escape.language_of`: ``.tcl``, ``.xdc``, ``.sdc`` and ``.qsf`` are Tcl,
``Makefile`` is make, ``.core`` YAML, ``.md`` Markdown, ``.html`` and ``.svg`` HTML, ...).
This happens in the environment's ``finalize`` hook, so a template author cannot forget it:
a template that wants syntax from an expression must say so, with ``| safe`` on a literal
or macro call (``{{ port(a) | safe }}``), or with one of the language-aware filters below,
which return text already in the output language:

``comment(width=None, break_on_hyphens=True)``
    A value as the text of a line comment (line breaks become spaces; with ``width``,
    wrapped with the language's comment leader, like ``wordwrap``).
``words``
    A sequence as words separated by spaces, each escaped.
``quoted``
    Tcl: a value as one double-quoted word (``"Stratix 10"``), also when empty; Python: a
    value as a string literal.
``code``
    Markdown only: a value as one code span.

Python code passes fragments already in the output language as
:class:`optnet.emit.escape.Raw`; a Raw of another language is escaped like any value.
"""

from __future__ import annotations

import contextvars
import functools

import jinja2
import markupsafe

from optnet.emit import escape
from optnet.emit.escape import EscapeError, Raw
from optnet.resources import data_dir

__all__ = ["EscapeError", "Raw", "environment", "render_template"]

# The output language of the template being rendered. Imported templates (macro files) and
# includes are rendered inside their importer's render call and so write its language.
_LANGUAGE: contextvars.ContextVar[str | None] = contextvars.ContextVar("optnet_language",
                                                                       default=None)


def _language() -> str:
    lang = _LANGUAGE.get()
    if lang is None:
        raise EscapeError("A template was rendered without an output language; name it "
                          "<area>/<purpose>.<ext>.j2 with an extension optnet.emit.escape "
                          "knows.")
    return lang


class _Template(jinja2.Template):
    """A template that sets the output language for the escaping of its values."""

    def render(self, *args: object, **kwargs: object) -> str:
        token = _LANGUAGE.set(escape.language_of(self.name))
        try:
            return super().render(*args, **kwargs)
        finally:
            _LANGUAGE.reset(token)


# Every hook takes the context (unused) so that Jinja never folds a constant expression at
# compile time: the language is known only when rendering, and a compiled macro file serves
# importers of several languages.
@jinja2.pass_context
def _finalize(_context: jinja2.runtime.Context, value: object) -> str:
    # Markup comes only from inside a template: `| safe`, a filter below, or `| e` in an
    # HTML template. Python passes Raw, which names its language.
    if isinstance(value, markupsafe.Markup):
        return str(value)
    return escape.escape(_language(), value)


@jinja2.pass_context
def _comment(_context: jinja2.runtime.Context, value: object, width: int | None = None,
             break_on_hyphens: bool = True) -> markupsafe.Markup:
    return markupsafe.Markup(escape.comment(_language(), value, width,
                                            break_on_hyphens=break_on_hyphens))


@jinja2.pass_context
def _words(_context: jinja2.runtime.Context, values: object) -> markupsafe.Markup:
    lang = _language()
    return markupsafe.Markup(" ".join(escape.escape(lang, v) for v in values))


@jinja2.pass_context
def _quoted(_context: jinja2.runtime.Context, value: object) -> markupsafe.Markup:
    lang = _language()
    if lang == "python":
        return markupsafe.Markup(escape.python_string(value))
    if lang != "tcl":
        raise EscapeError(f"The quoted filter writes Tcl words and Python strings; a {lang} "
                          "template cannot use it.")
    return markupsafe.Markup(escape.tcl_quoted(value))


@jinja2.pass_context
def _code(_context: jinja2.runtime.Context, value: object) -> markupsafe.Markup:
    if _language() != "md":
        raise EscapeError(f"The code filter writes Markdown code spans; a {_language()} "
                          "template cannot use it.")
    return markupsafe.Markup(escape.md_code(value))


@functools.cache
def environment() -> jinja2.Environment:
    """Templates from ``templates/``, named ``<vendor or area>/<purpose>.<ext>.j2``.

    StrictUndefined makes a missing value an error instead of an empty string in a
    constraint file. Jinja's HTML autoescaping is off: ``finalize`` escapes every value for
    the template's own language instead (see the module docstring).
    """
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        finalize=_finalize,
    )
    env.template_class = _Template
    env.filters.update(comment=_comment, words=_words, quoted=_quoted, code=_code)
    return env


def render_template(name: str, **context: object) -> str:
    """Render template ``name`` with ``context``, every value escaped for the template's
    output language.

    Raises
    ------
    EscapeError
        When a value cannot be written in that language at all (see
        :mod:`optnet.emit.escape`).
    """
    return environment().get_template(name).render(**context)
