"""The MCP server's standard input, read so that every line is answered.

Each line is read here before the SDK's stdio reader gets it:

- A JavaScript client encodes half an emoji as a lone surrogate escape
  (``"\\ud83d"``), which is valid JSON but not valid Unicode: the SDK's
  parser refuses such a line. It is decoded here with the standard library
  (which takes lone surrogates), every lone surrogate becomes U+FFFD (as the
  HTTP API and the store do), and the line is encoded again, so the call is
  answered. Other lines pass as they are: the cost is one byte search a line.
- A blank line is skipped.
- A line that is no JSON-RPC message (not UTF-8, not JSON, JSON of another
  shape) never reaches the SDK, which would drop it unanswered: the error of
  :mod:`memspool.mcp.refusals` is written back instead, and the next line is
  read.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator
from typing import Any, Final, Protocol, cast

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from memspool.mcp.refusals import refusal
from memspool.untrusted import no_surrogates

__all__ = ["Lines", "answered_stdio", "without_surrogates"]

#: A ``\uD800``-``\uDFFF`` escape, in either case.
_SURROGATE_ESCAPE: Final = re.compile(rb"\\[uU][dD][89a-fA-F]")


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return no_surrogates(value)
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {no_surrogates(str(key)): _clean(item) for key, item in value.items()}
    return value


def without_surrogates(line: bytes) -> bytes:
    """``line`` (one JSON-RPC message) with every lone surrogate escape made U+FFFD;
    a line without one, or one that is not JSON, comes back unchanged."""
    if _SURROGATE_ESCAPE.search(line) is None:
        return line
    try:
        message = json.loads(line)
        cleaned = json.dumps(_clean(message), ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):
        return line  # refused as the parse error it is
    return cleaned + (b"\n" if line.endswith(b"\n") else b"")


class _Replies(Protocol):
    """Where messages to the client go: the write stream of the SDK's stdio transport."""

    async def send(self, item: SessionMessage, /) -> None: ...


class Lines:
    """The lines of ``source`` the SDK can take, as text; every other one answered.

    Iterated by the SDK's stdio reader in place of standard input. A refusal
    waits for :meth:`answer_on` to name the stream replies go to.
    """

    def __init__(self, source: anyio.AsyncFile[bytes]) -> None:
        self._source = source
        self._replies: _Replies | None = None
        self._answering = anyio.Event()

    def answer_on(self, replies: _Replies) -> None:
        """Write each refusal to ``replies`` from now on."""
        self._replies = replies
        self._answering.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for read in self._source:
            line = without_surrogates(read)
            if not line.strip():
                continue
            error = refusal(line)
            if error is None:
                yield line.decode("utf-8")
            else:
                await self._refuse(SessionMessage(error))

    async def _refuse(self, reply: SessionMessage) -> None:
        await self._answering.wait()
        replies = cast("_Replies", self._replies)  # named before _answering is set
        # Closed only once the server is ending: no one is left to read the answer.
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await replies.send(reply)


@contextlib.asynccontextmanager
async def answered_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport (its read and write streams), reading standard
    input through :class:`Lines`.

    Relies on what the SDK's ``stdio_server`` does (``mcp/server/stdio.py``): it
    reads the ``stdin`` it is given with ``async for line in stdin`` and nothing
    else (hence the cast), and writes each ``SessionMessage`` sent to its write
    stream to standard output as one line.
    """
    lines = Lines(anyio.wrap_file(sys.stdin.buffer))
    async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read, write):
        lines.answer_on(write)
        yield read, write
