"""The MCP server's standard input, read so that no message goes unanswered.

A JavaScript client encodes half an emoji as a lone surrogate escape
(``"\\ud83d"``), which is valid JSON but not valid Unicode: the SDK's parser
refuses such a line, and the call gets no result and no error. Each line
holding a surrogate escape is decoded here with the standard library (which
takes lone surrogates), every lone surrogate becomes U+FFFD (as the HTTP API
and the store do), and the line is encoded again. Other lines pass as they
are, so the cost is one byte search per line.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any, BinaryIO, Final

from memspool.untrusted import no_surrogates

__all__ = ["RepairedLines", "repaired_stdin", "without_surrogates"]

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
        return line  # the SDK answers a line it cannot parse as it always does
    return cleaned + (b"\n" if line.endswith(b"\n") else b"")


class RepairedLines(io.RawIOBase):
    """A binary stream of ``source``'s lines, each passed through :func:`without_surrogates`."""

    def __init__(self, source: BinaryIO) -> None:
        super().__init__()
        self._source = source
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._pending:
            line = self._source.readline()
            if not line:
                return 0
            self._pending = without_surrogates(line)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def repaired_stdin(source: BinaryIO) -> io.TextIOWrapper:
    """A text stream over ``source`` with lone surrogates repaired, for ``sys.stdin``."""
    return io.TextIOWrapper(io.BufferedReader(RepairedLines(source)), encoding="utf-8",
                            errors="replace")
