"""Where the shipped data libraries (boards, topologies, templates, schema, ipdata) live."""

from __future__ import annotations

from pathlib import Path

__all__ = ["data_dir", "shown_path"]

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The directory of the shipped library ``name``.

    An installed wheel carries the libraries under ``optnet/_data/``; a source checkout
    (including an editable install) keeps them at the top of the repository.
    """
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name


def shown_path(path: Path) -> str:
    """``path`` as diagnostics show it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())
