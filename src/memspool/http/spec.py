"""One spec per route: what it takes (body or query fields), what it answers.

A route handler reads its input through its spec (:meth:`Spec.read_body`,
:meth:`Spec.read_query`), and :mod:`memspool.http.openapi` writes the same
spec into the OpenAPI document, so what the document says a route takes is
what the route accepts, field by field, bound by bound.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from memspool.http.fields import Fields, QueryParams, parse_body, parse_query
from memspool.results import Bound

__all__ = ["Field", "Spec"]

Kind = Literal["text", "flag", "switch", "count", "whole", "choice"]


@dataclasses.dataclass(frozen=True)
class Field:
    """One input of a route: its name, kind, whether it is required, and its limits.

    ``bound`` (counts): the range a number must be in, and its default;
    ``choices`` (choices): the values taken; ``default``: what an absent
    field means, as the document states it. A ``whole`` is a whole number of at
    least 1 passed on as sent, for the operation to check: the operation's own
    check says what it takes, in the words every front end gives. A ``switch`` is
    a flag whose absence means "leave it as it is" (``None``), not false.
    """

    name: str
    kind: Kind = "text"
    about: str = ""
    required: bool = False
    bound: Bound | None = None
    choices: tuple[str, ...] = ()
    default: str | int | None = None

    def read(self, fields: Fields) -> Any:
        """This field's value from ``fields``, checked (a clear PayloadError if not)."""
        if self.kind == "flag":
            return fields.flag(self.name)
        if self.kind == "switch":
            return None if fields.data.get(self.name) is None else fields.flag(self.name)
        if self.kind == "count":
            bound = self.bound or Bound(1, 2**31 - 1, 1)
            return fields.count(self.name, least=bound.least, most=bound.most)
        if self.kind == "whole":
            return fields.data.get(self.name)
        if self.kind == "choice":
            choice = fields.choice(self.name, self.choices)
            return choice if choice is not None else self.default
        return fields.text(self.name, required=self.required)

    def schema(self) -> dict[str, Any]:
        """The field's JSON schema in the OpenAPI document."""
        if self.kind == "flag":
            return {"type": "boolean", "default": False}
        if self.kind == "switch":
            return {"type": "boolean"}
        if self.kind in ("count", "whole"):
            bound = self.bound
            found: dict[str, Any] = {"type": "integer", "minimum": bound.least if bound else 1}
            if bound is not None:
                found["maximum"] = bound.most
            if self.default is not None:
                found["default"] = self.default
            return found
        found = {"type": "string"}
        if self.choices:
            found["enum"] = list(self.choices)
        if self.default is not None:
            found["default"] = self.default
        return found


@dataclasses.dataclass(frozen=True)
class Spec:
    """A route's method and path, what it does, what it takes and what it answers."""

    method: Literal["get", "post", "patch", "delete"]
    path: str
    summary: str
    answer: str
    body: tuple[Field, ...] | None = None
    query: tuple[Field, ...] = ()
    #: Its path parameters, as OpenAPI parameter objects.
    path_parameters: tuple[dict[str, Any], ...] = ()
    answer_schema: dict[str, Any] | None = None
    errors: tuple[str, ...] = ("400",)
    #: ``False``: the one route that needs no token.
    secured: bool = True

    def read_body(self, raw: bytes) -> dict[str, Any]:
        """The JSON body's fields, each checked; any field not in the spec is refused."""
        fields = self.body or ()
        found = parse_body(raw, [field.name for field in fields])
        return {field.name: field.read(found) for field in fields}

    def read_query(self, params: QueryParams) -> dict[str, Any]:
        """The query string's fields, each checked; any other parameter is refused."""
        found = parse_query(params, [field.name for field in self.query])
        return {field.name: field.read(found) for field in self.query}

    def operation(self) -> dict[str, Any]:
        """The OpenAPI operation object."""
        ok = {"description": self.answer, "content": {"application/json": {
            "schema": self.answer_schema or {"type": "object", "additionalProperties": True}}}}
        operation: dict[str, Any] = {"summary": self.summary, "responses": {
            "200": ok, **{code: {"$ref": f"#/components/responses/{code}"}
                          for code in self.errors}}}
        parameters = [*self.path_parameters, *(
            {"name": field.name, "in": "query", "required": field.required,
             "schema": field.schema(), "description": field.about} for field in self.query)]
        if parameters:
            operation["parameters"] = parameters
        if self.body is not None:
            schema = {"type": "object",
                      "required": [field.name for field in self.body if field.required],
                      "properties": {field.name: {**field.schema(), **(
                          {"description": field.about} if field.about else {})}
                          for field in self.body},
                      "additionalProperties": False}
            operation["requestBody"] = {"required": True,
                                        "content": {"application/json": {"schema": schema}}}
        if not self.secured:
            operation["security"] = []
        return operation
