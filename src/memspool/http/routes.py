"""The routes: each reads its input, makes one Service call on a worker, answers JSON.

Each route has one :class:`~memspool.http.spec.Spec`: the handler reads its
input through it, and the OpenAPI document is written from it. Nothing here
decides anything about memory, its limits or its defaults;
:mod:`memspool.service` does, so the API answers as the CLI does for the
same call.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.routing import Route

from memspool import __version__
from memspool.archivist import CaptureOptions
from memspool.base.kinds import NOTE_TYPES
from memspool.distill import MAX_NOTES
from memspool.http.fields import parse_query, path_id
from memspool.http.openapi import document
from memspool.http.responses import JSON
from memspool.http.spec import Field, Spec
from memspool.http.web import LOGIN_PATH
from memspool.http.web.auth import CODE_SECS, Logins
from memspool.http.workers import Workers
from memspool.results import CONTEXT_CHARS, SEARCH_LIMIT, SEARCH_OFFSET
from memspool.service import Service

__all__ = ["ROUTES", "SPECS"]

#: A memory id in a path: a whole number (one too large for any row names none).
_MEMORY_ID: Final = {"name": "memory_id", "in": "path", "required": True,
                     "schema": {"type": "integer", "minimum": 1}}
_PASSIVE: Final = {"type": "object", "properties": {
    name: {"type": "integer", "minimum": 0} for name in ("saved", "skipped", "total")}}

CAPTURE: Final = Spec(
    "post", "/capture",
    "Distil text into notes and reconcile them with memory (the capture verb).",
    "The capture report; with passive, the passive counts.",
    body=(Field("text", required=True), Field("project"), Field("session"), Field("source"),
          Field("dry_run", "flag"),
          # Checked by the capture itself, as from the CLI (distill.payload.note_cap).
          Field("max_entities", "whole", about=f"At most this many notes; the cap is "
                f"{MAX_NOTES}, which this can lower, never raise: a larger number means "
                f"{MAX_NOTES}.", default=MAX_NOTES),
          Field("passive", "flag")))
CAPTURE_PASSIVE: Final = Spec(
    "post", "/observations/passive",
    "Save the items of the learnings sections in content, one passive memory each.",
    "Items saved (new or updated), skipped, and found.", answer_schema=_PASSIVE,
    body=(Field("content", required=True), Field("session_id"), Field("project"),
          Field("source")))
SAVE: Final = Spec(
    "post", "/memories",
    "Save one memory; with a key, the memory under that key takes this text.",
    "{ok, id, key, action}: action is created, updated or merged.",
    body=(Field("title", required=True), Field("content", required=True), Field("key"),
          Field("project"), Field("type", "choice", choices=NOTE_TYPES, default="takeaway")))
GET_MEMORY: Final = Spec(
    "get", "/memories/{memory_id}", "One memory with its history and provenance.",
    "The memory.", path_parameters=(_MEMORY_ID,), errors=("400", "404"))
CORRECT: Final = Spec(
    "patch", "/memories/{memory_id}",
    "Correct a memory: its summary, body or type, or its pin. A field left out keeps "
    "what the memory holds; the old text goes to its history (reason edited).",
    "{ok, id, changed, pinned}: changed, whether its text or type changed; pinned, "
    "whether it is pinned now.",
    body=(Field("summary", about="The line the context block shows (at most 300 "
                "characters, refused past that, never cut)."),
          Field("body", about="The memory's whole text."),
          Field("type", "choice", choices=NOTE_TYPES),
          Field("pinned", "switch", about="true: decay never archives it (an archived "
                "memory returns, canonical); false: it decays again.")),
    path_parameters=(_MEMORY_ID,), errors=("400", "404"))
FORGET: Final = Spec(
    "delete", "/memories/{memory_id}",
    "Forget a memory for good: its text leaves the store and its files. Ids are never "
    "reused: a retry is a 404.",
    "{ok, forgotten, project, summary, wal_cleared}.", path_parameters=(_MEMORY_ID,),
    errors=("400", "404"))
SEARCH: Final = Spec(
    "get", "/search", "Memories that answer q, best first.",
    "{query, offset, results, more, note?}: more says another page follows (at offset + "
    "limit); note, on an empty page for a project the store has never seen, says so and "
    "names the projects it has.",
    query=(Field("q", about="What to look for.", required=True),
           Field("project", about="Only this project's memories."),
           Field("type", "choice", about="Only memories of this type.", choices=NOTE_TYPES),
           Field("limit", "count", about="At most this many.", bound=SEARCH_LIMIT,
                 default=SEARCH_LIMIT.default),
           Field("offset", "count", about="Skip this many (the next page).",
                 bound=SEARCH_OFFSET, default=SEARCH_OFFSET.default),
           Field("all", "flag", about="Also superseded and archived memories.")))
CONTEXT: Final = Spec(
    "get", "/context", "A project's context block, as a session sees it.",
    "{project, text}; text is empty when the project has no memory.",
    query=(Field("project", about="The project.", required=True),
           Field("max_chars", "count", bound=CONTEXT_CHARS,
                 about="The block's most characters (default: context_max_chars).")))
STATUS: Final = Spec("get", "/status", "Spool backlog, drainer, queue, memories, last error.",
                     "The status, as `memspool status --json`.")
LOGIN_CODE: Final = Spec(
    "post", "/login/codes",
    "A one-time code that signs a browser in to the memory browser (memspool open).",
    "{ok, path, expires_in}: open the server's address + path within expires_in seconds, "
    "once.", errors=())
HEALTH: Final = Spec("get", "/health", "Is the server up? The one route that needs no token.",
                     "{ok: true, version}.", errors=(), secured=False)
OPENAPI: Final = Spec("get", "/openapi.json", "This document.", "OpenAPI 3.1.", errors=())


def _workers(request: Request) -> Workers:
    workers: Workers = request.app.state.workers
    return workers


def _no_query(request: Request) -> None:
    """Refuse a query string on a route that takes none: ``DELETE /memories/5?dry_run=1``
    must not forget the memory while its caller thinks it asked for a dry run."""
    parse_query(request.query_params, ())


def _memory_id(request: Request) -> int:
    return path_id(request.path_params["memory_id"], "A memory id is a whole number, got "
                   "{given}; GET /search finds memories and their ids.")


async def capture(request: Request) -> JSON:
    _no_query(request)
    given = CAPTURE.read_body(await request.body())

    def call(service: Service) -> dict[str, Any]:
        options = CaptureOptions(dry_run=given["dry_run"], max_entities=given["max_entities"],
                                 passive=given["passive"])
        report = service.capture(given["text"], project=given["project"],
                                 session=given["session"], source=given["source"],
                                 options=options)
        return dict(report.passive_counts() if given["passive"] else report.as_dict())

    return JSON(await _workers(request).run(call))


async def capture_passive(request: Request) -> JSON:
    _no_query(request)
    given = CAPTURE_PASSIVE.read_body(await request.body())
    return JSON(await _workers(request).run(lambda service: service.capture_passive(
        given["content"], session=given["session_id"], project=given["project"],
        source=given["source"]).as_dict()))


async def save(request: Request) -> JSON:
    _no_query(request)
    given = SAVE.read_body(await request.body())
    return JSON(await _workers(request).run(lambda service: service.save(
        given["title"], given["content"], type=given["type"], key=given["key"],
        project=given["project"]).as_dict()))


async def search(request: Request) -> JSON:
    given = SEARCH.read_query(request.query_params)
    return JSON(await _workers(request).run(lambda service: service.search(
        given["q"], project=given["project"], type=given["type"], limit=given["limit"],
        offset=given["offset"] or 0, include_all=given["all"]).as_dict()))


async def context(request: Request) -> JSON:
    given = CONTEXT.read_query(request.query_params)
    return JSON(await _workers(request).run(lambda service: service.context(
        given["project"], max_chars=given["max_chars"]).as_dict()))


async def memory(request: Request) -> JSON:
    """GET: one memory with its history and provenance; PATCH: correct it; DELETE:
    forget it."""
    _no_query(request)
    memory_id = _memory_id(request)
    if request.method == "PATCH":
        given = CORRECT.read_body(await request.body())
        return JSON(await _workers(request).run(lambda service: service.correct(
            memory_id, summary=given["summary"], body=given["body"], type=given["type"],
            pinned=given["pinned"]).as_dict()))
    if request.method == "DELETE":
        return JSON(await _workers(request).run(
            lambda service: service.forget(memory_id).as_dict()))
    return JSON(await _workers(request).run(lambda service: service.get(memory_id).as_dict()))


async def status(request: Request) -> JSON:
    _no_query(request)
    return JSON(await _workers(request).run(lambda service: service.status().as_dict()))


async def health(request: Request) -> JSON:
    return JSON({"ok": True, "version": __version__})


async def login_code(request: Request) -> JSON:
    """For `memspool open`: a one-time code that signs a browser in (memspool.http.web)."""
    LOGIN_CODE.read_query(request.query_params)
    logins: Logins = request.app.state.logins
    path = f"{LOGIN_PATH}?{urlencode({'code': logins.new_code()})}"
    return JSON({"ok": True, "path": path, "expires_in": CODE_SECS},
                headers={"cache-control": "no-store"})


async def openapi(request: Request) -> JSON:
    return JSON(document(__version__, SPECS))


#: Every route's spec, in the OpenAPI document's order.
SPECS: Final = (CAPTURE, CAPTURE_PASSIVE, SAVE, GET_MEMORY, CORRECT, FORGET, SEARCH, CONTEXT,
                LOGIN_CODE, STATUS, HEALTH, OPENAPI)

ROUTES: Final = [
    Route("/capture", capture, methods=["POST"]),
    Route("/observations/passive", capture_passive, methods=["POST"]),
    Route("/memories", save, methods=["POST"]),
    Route("/memories/{memory_id}", memory, methods=["GET", "PATCH", "DELETE"]),
    Route("/search", search, methods=["GET"]),
    Route("/context", context, methods=["GET"]),
    Route("/status", status, methods=["GET"]),
    Route("/login/codes", login_code, methods=["POST"]),
    Route("/health", health, methods=["GET"]),
    Route("/openapi.json", openapi, methods=["GET"]),
]
