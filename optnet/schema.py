"""JSON Schemas of the file formats, generated from the pydantic models."""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from optnet.spec import models
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


def _attribute_docs(cls: type[BaseModel]) -> dict[str, str]:
    """The docstring under each field of ``cls`` and its bases (a string right after the
    annotation), cleaned as :func:`inspect.cleandoc` does.

    The models document their fields this way. Pydantic can read these docstrings itself
    (``use_attribute_docstrings``), but it then parses every model's source at import,
    which costs every command, lint included, a tenth of a second; only the schema needs
    them, so they are read here.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not issubclass(klass, BaseModel) or klass.__module__ != models.__name__:
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for stmt, after in itertools.pairwise(body):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _describe(schema: dict, cls: type[BaseModel]) -> None:
    """Give each property of ``cls``'s ``schema`` its field's docstring as its description,
    unless the field sets one itself."""
    docs = _attribute_docs(cls)
    properties = schema.get("properties", {})
    for name, field in cls.model_fields.items():
        key = field.alias or name
        if key in properties and name in docs and field.description is None:
            properties[key]["description"] = docs[name]


def _schema(model: type[BaseModel], ident: str) -> dict:
    body = model.model_json_schema(by_alias=True, schema_generator=_Generator)
    _describe(body, model)
    for name, schema in body.get("$defs", {}).items():
        cls = getattr(models, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseModel):
            _describe(schema, cls)
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
