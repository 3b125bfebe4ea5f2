"""The OpenAPI 3.1 document served at GET /openapi.json, written out by hand.

It describes the routes in :mod:`memspool.http.routes`; a test checks that
the two list the same paths and methods.
"""

from __future__ import annotations

from typing import Any

__all__ = ["document"]

_TEXT: dict[str, Any] = {"type": "string"}
_FLAG: dict[str, Any] = {"type": "boolean", "default": False}
_COUNT: dict[str, Any] = {"type": "integer", "minimum": 1}
_ANY: dict[str, Any] = {"type": "object", "additionalProperties": True}
_PASSIVE: dict[str, Any] = {
    "type": "object",
    "properties": {"saved": _COUNT, "skipped": _COUNT, "total": _COUNT},
}


def _body(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "required": required, "properties": properties,
              "additionalProperties": False}
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _query(name: str, schema: dict[str, Any], about: str, *,
           required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema,
            "description": about}


def _answer(about: str, schema: dict[str, Any] | None = None,
            errors: tuple[str, ...] = ("400",)) -> dict[str, Any]:
    ok = {"description": about,
          "content": {"application/json": {"schema": schema or _ANY}}}
    return {"200": ok, **{code: {"$ref": f"#/components/responses/{code}"} for code in errors}}


def _operation(summary: str, responses: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"summary": summary, "responses": responses, **extra}


def _paths() -> dict[str, Any]:
    memory_id = {"name": "memory_id", "in": "path", "required": True, "schema": _COUNT}
    return {
        "/capture": {"post": _operation(
            "Distil text into notes and reconcile them with memory (the capture verb).",
            _answer("The capture report; with passive, the passive counts."),
            requestBody=_body(["text"], {
                "text": _TEXT, "project": _TEXT, "session": _TEXT, "source": _TEXT,
                "dry_run": _FLAG, "max_entities": _COUNT, "passive": _FLAG}))},
        "/observations/passive": {"post": _operation(
            "Save the items of the learnings sections in content, one passive memory each.",
            _answer("Items saved (new or updated), skipped, and found.", _PASSIVE),
            requestBody=_body(["content"], {
                "content": _TEXT, "session_id": _TEXT, "project": _TEXT, "source": _TEXT}))},
        "/memories": {"post": _operation(
            "Save one memory; with a key, the memory under that key takes this text.",
            _answer("{ok, id, key, action}: action is created, updated or merged."),
            requestBody=_body(["title", "content"], {
                "title": _TEXT, "content": _TEXT, "key": _TEXT, "project": _TEXT,
                "type": {**_TEXT, "default": "takeaway"}}))},
        "/memories/{memory_id}": {
            "get": _operation("One memory with its history and provenance.",
                              _answer("The memory.", errors=("400", "404")),
                              parameters=[memory_id]),
            "delete": _operation("Forget a memory for good: its text leaves the store and "
                                 "its files. Ids are never reused: a retry is a 404.",
                                 _answer("{ok, forgotten, project, summary, wal_cleared}.",
                                         errors=("400", "404")),
                                 parameters=[memory_id]),
        },
        "/search": {"get": _operation(
            "Memories that answer q, best first.", _answer("{query, results}."),
            parameters=[
                _query("q", _TEXT, "What to look for.", required=True),
                _query("project", _TEXT, "Only this project's memories."),
                _query("type", _TEXT, "Only memories of this type."),
                _query("limit", {**_COUNT, "maximum": 1000, "default": 10}, "At most this many."),
                _query("all", _FLAG, "Also superseded and archived memories."),
            ])},
        "/context": {"get": _operation(
            "A project's context block, as a session sees it.",
            _answer("{project, text}; text is empty when the project has no memory."),
            parameters=[_query("project", _TEXT, "The project.", required=True),
                        _query("max_chars", _COUNT, "The block's most characters.")])},
        "/login/codes": {"post": _operation(
            "A one-time code that signs a browser in to the memory browser (memspool open).",
            _answer("{ok, path, expires_in}: open the server's address + path within "
                    "expires_in seconds, once.", errors=()))},
        "/status": {"get": _operation("Spool backlog, drainer, queue, memories, last error.",
                                      _answer("The status, as `memspool status --json`."))},
        "/health": {"get": _operation(
            "Is the server up? The one route that needs no token.",
            _answer("{ok: true, version}.", errors=()), security=[])},
        "/openapi.json": {"get": _operation("This document.", _answer("OpenAPI 3.1.",
                                                                      errors=()))},
    }


def _error(about: str) -> dict[str, Any]:
    schema = {"type": "object", "required": ["ok", "error"],
              "properties": {"ok": {"const": False}, "error": _TEXT}}
    return {"description": about, "content": {"application/json": {"schema": schema}}}


def document(version: str) -> dict[str, Any]:
    """The OpenAPI document of this server."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "memspool", "version": version,
                 "description": "memspool's local HTTP API (docs/http.md)."},
        "servers": [{"url": "http://127.0.0.1:8765"}],
        "security": [{"bearer": []}],
        "paths": _paths(),
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
