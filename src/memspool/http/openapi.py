"""The OpenAPI 3.1 document served at GET /openapi.json.

Its paths are written from the routes' specs (:mod:`memspool.http.spec`),
the same specs the routes read their input with; a test checks that the
document and the routes list the same paths and methods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memspool.http.spec import Spec

__all__ = ["document"]

_TEXT: dict[str, Any] = {"type": "string"}


def _paths(specs: Iterable[Spec]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for spec in specs:
        paths.setdefault(spec.path, {})[spec.method] = spec.operation()
    return paths


def _error(about: str) -> dict[str, Any]:
    schema = {"type": "object", "required": ["ok", "error"],
              "properties": {"ok": {"const": False}, "error": _TEXT}}
    return {"description": about, "content": {"application/json": {"schema": schema}}}


def document(version: str, specs: Iterable[Spec]) -> dict[str, Any]:
    """The OpenAPI document of a server whose routes ``specs`` describe."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "memspool", "version": version,
                 "description": "memspool's local HTTP API (docs/http.md)."},
        "servers": [{"url": "http://127.0.0.1:8765"}],
        "security": [{"bearer": []}],
        "paths": _paths(specs),
        "components": {
            "securitySchemes": {"bearer": {
                "type": "http", "scheme": "bearer",
                "description": "The token in the api-token file of the memspool home."}},
            "responses": {
                "400": _error("The input cannot be used; error says why."),
                "401": _error("No token, or the wrong one."),
                "404": _error("No memory with that id, or no such route."),
                "405": _error("The route does not take this method."),
                "413": _error("The body is larger than --max-body."),
                "421": _error("The Host header is not this server's (DNS rebinding)."),
                "500": _error("An internal error; the server's log has the details."),
                "503": _error("The store is busy, damaged or full."),
            },
        },
    }
