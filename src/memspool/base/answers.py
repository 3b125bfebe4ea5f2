"""The JSON an operation answers with: ``{"ok": true, ...its fields}``.

Every front end prints a successful answer this way (a failure is
``{"ok": false, "error": ...}``, said at the edge), so the dataclasses the
service and team memory answer with share this one function.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["ok_fields"]


def ok_fields(answer: Any) -> dict[str, Any]:
    """``answer`` (a dataclass) as the JSON object a front end prints."""
    return {"ok": True, **dataclasses.asdict(answer)}
