"""The JSON-RPC error that answers a line the MCP server cannot take as a message.

JSON-RPC 2.0 answers every request, a malformed one included: a line that is
not JSON (or not UTF-8) gets a parse error (-32700), JSON that is not a
JSON-RPC message gets an invalid request (-32600). The error carries the
line's id when it has one that can be read, else null, and says in one
sentence what was wrong without quoting the line (it may hold a secret).
"""

from __future__ import annotations

from typing import Any, Final

import pydantic_core
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

__all__ = ["refusal"]

#: What a line that is JSON but no object is, by the type it parses to.
_NOT_AN_OBJECT: Final[dict[type, str]] = {
    list: "an array", str: "a string", bool: "a boolean", int: "a number",
    float: "a number", type(None): "null",
}


def refusal(line: bytes) -> JSONRPCError | None:
    """The error that answers ``line`` (one line of input, not blank), or ``None``
    when the line is a JSON-RPC message.

    A message is what the SDK's stdio reader takes: it validates each line with
    ``jsonrpc_message_adapter.validate_json`` (``mcp/server/stdio.py``), and so
    does this, so a line let through is never refused there.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return _error(PARSE_ERROR, "Parse error: the line is not valid UTF-8.")
    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError:
        pass
    else:
        return None
    try:
        message = pydantic_core.from_json(text)
    except ValueError as exc:  # the parser's reason names a place, never the text
        return _error(PARSE_ERROR, f"Parse error: the line is not JSON ({exc}).")
    return _error(INVALID_REQUEST, f"Invalid request: {_fault(message)}.", _id_of(message))


def _error(code: int, message: str, request_id: RequestId | None = None) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def _fault(message: Any) -> str:
    """What keeps ``message`` (parsed JSON) from being a JSON-RPC message."""
    if not isinstance(message, dict):
        return f"the line is {_NOT_AN_OBJECT.get(type(message), 'a value')}, not a JSON-RPC object"
    faults = (
        (message.get("jsonrpc") != "2.0", 'the message does not say "jsonrpc": "2.0"'),
        ("id" in message and _id_of(message) is None,
         'its "id" is neither a string nor a whole number'),
        (not {"method", "result", "error"} & message.keys(), 'it has no "method"'),
        (not isinstance(message.get("method", ""), str), 'its "method" is not a string'),
        (not isinstance(message.get("params"), dict | None), 'its "params" is not an object'),
    )
    return next((reason for wrong, reason in faults if wrong),
                "it is not a well-formed JSON-RPC request, notification or response")


def _id_of(message: Any) -> RequestId | None:
    """The id of ``message`` when it has one a reply can carry, else ``None``."""
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, str) or (isinstance(request_id, int)
                                       and not isinstance(request_id, bool)):
        return request_id
    return None
