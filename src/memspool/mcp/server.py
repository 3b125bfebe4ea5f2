"""memspool's tools for agents, over the Model Context Protocol (stdio).

Every tool is one call of :class:`memspool.service.Service`, so an agent gets
the answers the CLI gives. Results stay far below what a client accepts
(25,000 tokens by default): ``search`` returns compact rows an agent can
scan (id, type, summary, score) and pages with ``offset``; ``get`` returns
at most ``MAX_GET`` memories in full. The bounds, the paging and the default
project are the Service's (:mod:`memspool.results`), as for every front end.
Tools are coroutines on purpose: they then run on the server's one thread,
where the store connection lives.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, Final, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BeforeValidator, Field

from memspool import __version__
from memspool.archivist import CaptureOptions
from memspool.base.errors import MemspoolError
from memspool.base.kinds import NOTE_TYPES, NoteType
from memspool.mcp.wire import answered_stdio
from memspool.redact import redact
from memspool.results import (
    COMPACT_QUERY_CHARS,
    COMPACT_SUMMARY_CHARS,
    CONTEXT_CHARS,
    GET_IDS,
    SEARCH_LIMIT,
    SEARCH_OFFSET,
    Bound,
)
from memspool.service import Service
from memspool.untrusted import shown, whole_number

__all__ = ["MAX_GET", "MAX_SEARCH", "build_server", "main"]

#: Rows one search returns at most, and memories one get returns at most.
MAX_SEARCH: Final = SEARCH_LIMIT.most
MAX_GET: Final = GET_IDS.most

_Answer = TypeVar("_Answer")


def _within(bound: Bound) -> Any:
    """A whole number's range as the tool's schema states it: an agent reads the
    bounds, and a call outside them is refused with the reason, as over HTTP."""
    return Field(ge=bound.least, le=bound.most)


def _whole(value: Any) -> Any:
    """A whole-number argument: a JSON number, or text of ASCII digits (a client may
    send a number as text), read as the HTTP API reads a number. The SDK's type check
    alone takes ``true`` as 1 (``forget {"id": true}`` forgot memory 1) and text as
    int() does ("1_0" is 10)."""
    if isinstance(value, bool):
        raise ValueError("must be a whole number, not true or false")
    if isinstance(value, str):
        number = whole_number(value)
        if number is None:
            raise ValueError(f"must be a whole number, got {shown(value)}")
        return number
    return value


#: A whole number, as every integer argument takes one.
_Whole = Annotated[int, BeforeValidator(_whole)]
#: The arguments whose range the HTTP API and the CLI hold them to as well. The range
#: comes first: after a validator pydantic writes it into the schema as "ge" and "le",
#: which no client reads as a bound; a before-validator runs first wherever it is.
_Limit = Annotated[int, _within(SEARCH_LIMIT), BeforeValidator(_whole)]
_Offset = Annotated[int, _within(SEARCH_OFFSET), BeforeValidator(_whole)]
_ContextChars = Annotated[int, _within(CONTEXT_CHARS), BeforeValidator(_whole)]
_Ids = Annotated[list[_Whole], Field(min_length=GET_IDS.least, max_length=GET_IDS.most)]

INSTRUCTIONS: Final = (
    "memspool keeps durable memories of coding sessions: root causes, pitfalls, decisions, "
    "conventions and takeaways, per project. Search before re-investigating something; "
    "save what will still be true next week."
)


class _Server(MCPServer):
    """The SDK's server, its refusals redacted: a tool's argument check quotes the value
    it refused (``limit: "ghp_..."``), which may be a secret in the wrong argument.
    Over stdio, a line that is no message is answered too (:mod:`memspool.mcp.wire`)."""

    async def run_stdio_async(self) -> None:
        # The SDK's own run_stdio_async, the transport's input read through
        # memspool.mcp.wire. The low-level server has no public name: this is
        # the one private attribute of the SDK's that memspool uses.
        async with answered_stdio() as (read_stream, write_stream):
            await self._lowlevel_server.run(
                read_stream, write_stream, self._lowlevel_server.create_initialization_options())

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            raise ToolError(redact(str(exc))[0]) from None


def build_server(home: Path | None = None) -> MCPServer:
    """The MCP server for the store in ``home`` (default: as the CLI resolves it)."""
    service = Service(home)
    # An agent's session starts its own server: what it saves without naming a
    # session is this session's. One session for every save ever made would keep
    # a new value from superseding an old one (a memory is replaced by what
    # another session says) and a rule saved again from counting a second session.
    session_of_server = f"mcp-{uuid.uuid4().hex[:12]}"

    @contextlib.asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            service.close()

    server = _Server(name="memspool", version=__version__, instructions=INSTRUCTIONS,
                     lifespan=lifespan)

    def call(operation: Callable[..., _Answer], *args: Any, **kwargs: Any) -> _Answer:
        try:
            return operation(*args, **kwargs)
        except MemspoolError as exc:
            raise ToolError(str(exc)) from None  # redacted on its way out (_Server)

    @server.tool(description=(
        "Distil text (notes, an answer, a markdown document, JSONL) into durable memories of a "
        "project: it is split, classified, keyed, and each note updates, merges into or adds a "
        "memory. Returns the report: counts of created/updated/merged/skipped notes and each "
        "note's id, key, type and summary. At most 20 notes per call. Secrets are redacted."))
    async def capture(text: str, project: str | None = None, session: str | None = None,
                      source: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        report = call(service.capture, text, project=project,
                      session=session or session_of_server, source=source or "mcp",
                      options=CaptureOptions(dry_run=dry_run))
        return dict(report.as_dict())

    @server.tool(description=(
        "Save only the items of learnings sections ('## Key Learnings:', '### Learnings') in "
        "content, one passive memory per item. Returns {saved, skipped, total}."))
    async def capture_passive(content: str, session_id: str | None = None,
                              project: str | None = None,
                              source: str | None = None) -> dict[str, int]:
        return call(service.capture_passive, content, session=session_id or session_of_server,
                    project=project, source=source or "mcp").as_dict()

    @server.tool(description=(
        "Save one explicit memory: a title (one line), its content, and a type ("
        f"{', '.join(NOTE_TYPES)}). With a topic key, saving again under the same "
        "key replaces the text (the old text is kept in history), unless a person corrected "
        "that memory: then it is corroborated. Returns {id, key, action}."))
    async def save(title: str, content: str, type: NoteType = "takeaway",
                   key: str | None = None, project: str | None = None) -> dict[str, Any]:
        return call(service.save, title, content, type=type, key=key, project=project,
                    session=session_of_server, source="mcp").as_dict()

    @server.tool(description=(
        "Search memories (every project unless one is given). Returns compact rows: id, "
        f"project, type, summary (cut at {COMPACT_SUMMARY_CHARS} characters) and score; call "
        f"get with the ids for full text. Page with offset; limit is at most {MAX_SEARCH}. "
        "include_all adds superseded and archived memories. The query is said back cut at "
        f"{COMPACT_QUERY_CHARS} characters."))
    async def search(query: str, project: str | None = None, type: NoteType | None = None,  # noqa: PLR0913, PLR0917 - the tool's arguments
                     limit: _Limit = SEARCH_LIMIT.default, offset: _Offset = 0,
                     include_all: bool = False) -> dict[str, Any]:
        return call(service.search, query, project=project, type=type, limit=limit,
                    offset=offset, include_all=include_all).compact()

    @server.tool(description=(
        f"Full memories by id (at most {MAX_GET}): text, layer, confidence, sessions, "
        "provenance, its tier and whether the context block lists it (tier, tier_why, "
        "in_context_block); with history=true also the earlier texts."))
    async def get(ids: _Ids, history: bool = False) -> dict[str, Any]:
        return {"memories": [call(service.get, memory_id).as_dict(history=history)
                             for memory_id in ids]}

    @server.tool(description=(
        "The project's context block: its most useful memories as compact markdown, grouped "
        "by type, each with its id (what a session is given at its start). max_chars: "
        f"{CONTEXT_CHARS.least} to {CONTEXT_CHARS.most} (default: the configured length)."))
    async def context(project: str | None = None,
                      max_chars: _ContextChars | None = None) -> dict[str, Any]:
        return call(service.context, project, max_chars=max_chars).as_dict()

    @server.tool(description=(
        "Forget a memory by id: gone from the store, from search and from the context block; "
        "digesting transcripts again does not bring it back. Ids are never reused, so "
        "forgetting an id again says there is no such memory."))
    async def forget(id: _Whole) -> dict[str, Any]:
        return call(service.forget, id).as_dict()

    @server.tool(description=(
        "memspool's state: memories by layer and how many the context blocks list, slices "
        "queued, the last drain and maintenance pass, whether hooks are installed."))
    async def stats() -> dict[str, Any]:
        status = call(service.status).as_dict()
        keep = ("home", "memories", "memories_by_layer", "memories_in_context",
                "slices_queued", "slices_total",
                "sessions_tracked", "last_drain", "last_maintain", "hooks_installed", "store")
        return {name: status.get(name) for name in keep}

    return server


def main(home: Path | None = None) -> int:
    """Serve over stdio until the client closes the connection.

    A message with a lone surrogate is repaired before the SDK reads it, and a
    line that is no message is answered with a JSON-RPC error (see
    :mod:`memspool.mcp.wire`): no line but a blank one goes unanswered. A
    client that goes away in the middle of a call (its end of the pipe closed)
    ends the server quietly: there is no one left to answer.
    """
    server = build_server(home)
    try:
        server.run("stdio")
    except* (BrokenPipeError, ConnectionResetError):
        # Nothing more can be written to the client; keep the interpreter's own
        # flush of stdout at exit from reporting the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
