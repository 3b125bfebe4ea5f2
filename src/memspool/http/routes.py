"""The routes: each reads its input, makes one Service call on a worker, answers JSON.

Nothing here decides anything about memory; :mod:`memspool.service` does,
so the API answers as the CLI does for the same call.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.routing import Route

from memspool import __version__
from memspool.base.errors import PayloadError
from memspool.base.kinds import NOTE_TYPES
from memspool.http.fields import parse_body, parse_query
from memspool.http.openapi import document
from memspool.http.responses import JSON
from memspool.http.web import LOGIN_PATH
from memspool.http.web.auth import CODE_SECS, Logins
from memspool.http.workers import Workers
from memspool.service import Service

__all__ = ["ROUTES"]

#: Most results one search returns; a client pages by narrowing the query.
MAX_SEARCH_LIMIT: Final = 1000
#: Largest context block asked for: 1 MB of text, far past any prompt's budget.
MAX_CONTEXT_CHARS: Final = 1_000_000
#: The capture verb's own cap on notes per call is lower; it applies.
MAX_ENTITIES: Final = 1000


def _workers(request: Request) -> Workers:
    workers: Workers = request.app.state.workers
    return workers


def _memory_id(request: Request) -> int:
    raw = request.path_params["memory_id"]
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
        raise PayloadError(f"A memory id is a whole number, got {raw!r}; GET /search "
                         f"finds memories and their ids.")
    return int(raw)


async def capture(request: Request) -> JSON:
    fields = parse_body(await request.body(), ("text", "project", "session", "source",
                                               "dry_run", "max_entities", "passive"))
    text = fields.text("text", required=True) or ""
    project, session, source = (fields.text("project"), fields.text("session"),
                                fields.text("source"))
    dry_run, passive = fields.flag("dry_run"), fields.flag("passive")
    max_entities = fields.count("max_entities", most=MAX_ENTITIES)

    def call(service: Service) -> dict[str, Any]:
        report = service.capture(text, project=project, session=session, source=source,
                                 dry_run=dry_run, max_entities=max_entities, passive=passive)
        return dict(report.passive_counts() if passive else report.as_dict())

    return JSON(await _workers(request).run(call))


async def capture_passive(request: Request) -> JSON:
    fields = parse_body(await request.body(), ("content", "session_id", "project", "source"))
    content = fields.text("content", required=True) or ""
    session, project, source = (fields.text("session_id"), fields.text("project"),
                                fields.text("source"))
    return JSON(await _workers(request).run(lambda service: service.capture_passive(
        content, session=session, project=project, source=source)))


async def save(request: Request) -> JSON:
    fields = parse_body(await request.body(), ("title", "content", "type", "key", "project"))
    title = fields.text("title", required=True) or ""
    content = fields.text("content", required=True) or ""
    kind = fields.choice("type", NOTE_TYPES) or "takeaway"
    key, project = fields.text("key"), fields.text("project")
    return JSON(await _workers(request).run(lambda service: service.save(
        title, content, type=kind, key=key, project=project)))


async def search(request: Request) -> JSON:
    fields = parse_query(request.query_params, ("q", "project", "type", "limit", "all"))
    query = fields.text("q", required=True) or ""
    project, kind = fields.text("project"), fields.choice("type", NOTE_TYPES)
    limit = fields.count("limit", most=MAX_SEARCH_LIMIT) or 10
    include_all = fields.flag("all")
    return JSON(await _workers(request).run(lambda service: service.search(
        query, project=project, type=kind, limit=limit, include_all=include_all)))


async def context(request: Request) -> JSON:
    fields = parse_query(request.query_params, ("project", "max_chars"))
    project = fields.text("project", required=True) or ""
    max_chars = fields.count("max_chars", most=MAX_CONTEXT_CHARS)
    text = await _workers(request).run(lambda service: service.context(
        project, max_chars=max_chars))
    return JSON({"project": project, "text": text})


async def memory(request: Request) -> JSON:
    """GET: one memory with its history and provenance; DELETE: forget it."""
    memory_id = _memory_id(request)
    if request.method == "DELETE":
        return JSON(await _workers(request).run(lambda service: service.forget(memory_id)))
    return JSON(await _workers(request).run(lambda service: service.get(memory_id)))


async def status(request: Request) -> JSON:
    return JSON(await _workers(request).run(lambda service: service.status()))


async def health(request: Request) -> JSON:
    return JSON({"ok": True, "version": __version__})


async def login_code(request: Request) -> JSON:
    """For `memspool open`: a one-time code that signs a browser in (memspool.http.web)."""
    parse_query(request.query_params, ())
    logins: Logins = request.app.state.logins
    path = f"{LOGIN_PATH}?{urlencode({'code': logins.new_code()})}"
    return JSON({"ok": True, "path": path, "expires_in": CODE_SECS},
                headers={"cache-control": "no-store"})


async def openapi(request: Request) -> JSON:
    return JSON(document(__version__))


ROUTES: Final = [
    Route("/capture", capture, methods=["POST"]),
    Route("/observations/passive", capture_passive, methods=["POST"]),
    Route("/memories", save, methods=["POST"]),
    Route("/memories/{memory_id}", memory, methods=["GET", "DELETE"]),
    Route("/search", search, methods=["GET"]),
    Route("/context", context, methods=["GET"]),
    Route("/status", status, methods=["GET"]),
    Route("/login/codes", login_code, methods=["POST"]),
    Route("/health", health, methods=["GET"]),
    Route("/openapi.json", openapi, methods=["GET"]),
]
