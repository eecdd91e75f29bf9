"""JSON Schemas of the file formats, generated from the pydantic models."""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from optnet.spec.models import BoardDesc, ClusterDesc
from optnet.units import Quantity

__all__ = ["board_schema", "cluster_schema"]

_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class _Generator(GenerateJsonSchema):
    """Quantity defaults as they are written in a file (``5ns``): pydantic has no JSON form
    for them, and versions differ in what they make of one (a dict, or nothing)."""

    def encode_default(self, dft: Any) -> Any:
        if isinstance(dft, Quantity):
            return str(dft)
        return super().encode_default(dft)


def _schema(model: Any, ident: str) -> dict:
    body = model.model_json_schema(by_alias=True, schema_generator=_Generator)
    return {"$schema": _DIALECT, "$id": ident, **body}


def cluster_schema() -> dict:
    """Schema of cluster and preset files (``schema/cluster.schema.json``)."""
    return _schema(ClusterDesc, "https://optnet.invalid/schema/cluster.schema.json")


def board_schema() -> dict:
    """Schema of board files (``schema/board.schema.json``).

    A board that ``extends:`` another gives only what differs, so the keys a complete
    board requires are required only when ``extends`` is absent.
    """
    schema = _schema(BoardDesc, "https://optnet.invalid/schema/board.schema.json")
    always = ["optnet_board", "name"]
    complete = schema.pop("required")
    schema["required"] = always
    schema["if"] = {"required": ["extends"], "properties": {"extends": {"type": "string"}}}
    schema["else"] = {"required": complete}
    return schema
