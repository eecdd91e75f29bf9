"""The file-format reference (docs/format.md), generated from the JSON Schemas."""

from __future__ import annotations

import json
from dataclasses import dataclass

from optnet.diagnostics import CODES
from optnet.emit.env import render_template
from optnet.emit.escape import Raw
from optnet.schema import board_schema, cluster_schema

__all__ = ["format_reference"]


@dataclass(frozen=True)
class _Key:
    name: str
    type: str
    required: bool
    default: str
    description: str


@dataclass(frozen=True)
class _Section:
    name: str
    description: str
    keys: tuple[_Key, ...]


def _type(prop: dict) -> str:
    if "$ref" in prop:
        return f"[{prop['$ref'].rsplit('/', 1)[-1]}](#{prop['$ref'].rsplit('/', 1)[-1].lower()})"
    if "const" in prop:
        return f"`{prop['const']}`"
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])
    for key in ("anyOf", "oneOf"):
        if key in prop:
            parts = [_type(p) for p in prop[key] if p.get("type") != "null"]
            return " \\| ".join(parts) + (" or null" if len(parts) < len(prop[key]) else "")
    kind = prop.get("type", "any")
    if kind == "integer" and ("minimum" in prop or "maximum" in prop):
        return f"integer {prop.get('minimum', '')}..{prop.get('maximum', '')}"
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "object" and "additionalProperties" in prop:
        return f"mapping of name to {_type(prop['additionalProperties'])}"
    if "pattern" in prop and prop.get("examples"):
        # A strict string form (optnet.spec.models.Form) has a length limit; a quantity not.
        what = "string" if "maxLength" in prop else "quantity"
        return f"{what}, e.g. `{prop['examples'][0]}`"
    return kind


def _section(name: str, schema: dict) -> _Section:
    required = set(schema.get("required", ()))
    keys = []
    for key, prop in schema.get("properties", {}).items():
        default = json.dumps(prop["default"]) if "default" in prop else ""
        description = " ".join(prop.get("description", "").split()).replace("|", "\\|")
        # Types and descriptions are Markdown already (optnet's own docstrings).
        keys.append(_Key(key, Raw(_type(prop), "md"), key in required, default,
                         Raw(description, "md")))
    text = " ".join(schema.get("description", "").split())
    return _Section(name, Raw(text, "md"), tuple(keys))


def _sections(schema: dict, root: str) -> list[_Section]:
    sections = [_section(root, schema)]
    sections += [_section(name, body) for name, body in sorted(schema.get("$defs", {}).items())]
    return sections


def format_reference() -> str:
    """Markdown reference of the cluster and board formats and of every diagnostic code."""
    return render_template(
        "docs/format.md.j2",
        cluster=_sections(cluster_schema(), "ClusterDesc"),
        board=_sections(board_schema(), "BoardDesc"),
        codes=[CODES[c] for c in sorted(CODES)],
    )
