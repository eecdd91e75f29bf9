"""The one Jinja2 environment every emitter renders with."""

from __future__ import annotations

import functools

import jinja2

from optnet.resources import data_dir

__all__ = ["environment", "render_template"]


@functools.cache
def environment() -> jinja2.Environment:
    """Templates from ``templates/``, named ``<vendor or area>/<purpose>.<ext>.j2``.

    StrictUndefined makes a missing value an error instead of an empty string in a
    constraint file; no autoescaping, since the outputs are Tcl, XDC, Verilog and Markdown.
    """
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_template(name: str, **context: object) -> str:
    """Render template ``name`` with ``context``."""
    return environment().get_template(name).render(**context)
