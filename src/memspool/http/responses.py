"""JSON responses: orjson, and the one error shape ``{"ok": false, "error": ...}``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import JSONResponse

from memspool.redact import redact

__all__ = ["JSON", "error_response"]


class JSON(JSONResponse):
    """A JSON response rendered by orjson (as the CLI's --json output is)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def error_response(status: int, message: str,
                   headers: Mapping[str, str] | None = None) -> JSON:
    # A refused value the sentence quotes may be a secret sent in the wrong field.
    return JSON({"ok": False, "error": redact(message)[0]}, status_code=status,
                headers=headers)
