"""JSON responses: orjson, and the one error shape ``{"ok": false, "error": ...}``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import JSONResponse

__all__ = ["JSON", "error_response"]


class JSON(JSONResponse):
    """A JSON response rendered by orjson (as the CLI's --json output is)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def error_response(status: int, message: str,
                   headers: Mapping[str, str] | None = None) -> JSON:
    return JSON({"ok": False, "error": message}, status_code=status, headers=headers)
