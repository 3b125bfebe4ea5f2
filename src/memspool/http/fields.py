"""Reading a request's JSON body or query string into checked values.

Every failure is a :class:`~memspool.base.errors.PayloadError` whose message is
one sentence naming the field and what it should be; the app answers 400.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

from memspool.base.errors import PayloadError
from memspool.untrusted import SHOWN_CHARS, no_surrogates, parse_json, shown, whole_number

__all__ = ["Fields", "listed", "parse_body", "parse_query", "path_id", "shown"]

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off", ""})


def listed(names: list[str]) -> str:
    """Refused names as an error lists them: the first few, then how many in all."""
    head = ", ".join(names)
    if len(head) <= SHOWN_CHARS:
        return head
    first = head[:SHOWN_CHARS].rpartition(", ")[0] or head[:SHOWN_CHARS]
    return f"{first}, ... ({len(names)} in all)"


def path_id(raw: str, refusal: str) -> int:
    """The id in a path segment, a whole number (:func:`~memspool.untrusted.whole_number`;
    one past 19 digits names no row, and the service says there is none); else
    :class:`PayloadError` with ``refusal``, which ``{given}`` in it names."""
    number = whole_number(raw)
    if number is None:
        raise PayloadError(refusal.format(given=shown(raw)))
    return number


def parse_body(raw: bytes, allowed: Collection[str]) -> Fields:
    """The JSON object in ``raw``; any field not in ``allowed`` is refused (a typo)."""
    if not raw.strip():
        raise PayloadError("The request has no body; send a JSON object.")
    try:
        data = parse_json(raw)
    except ValueError as exc:
        raise PayloadError(f"The body is not valid JSON ({exc}); send a JSON object.") from None
    if not isinstance(data, dict):
        raise PayloadError(f"The body must be a JSON object, got a JSON {_kind(data)}.")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise PayloadError(f"Unknown field(s) {listed(unknown)}; this route takes "
                         f"{', '.join(sorted(allowed))}.")
    return Fields(data, query=False)


def _kind(value: object) -> str:
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "array",
             dict: "object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


class Fields:
    """Typed access to a JSON object or a query string (where every value is text)."""

    def __init__(self, data: Mapping[str, Any], *, query: bool) -> None:
        self.data = data
        self.query = query

    def text(self, name: str, *, required: bool = False) -> str | None:
        value = self.data.get(name)
        if value is None or (self.query and value == ""):
            if required:
                raise PayloadError(f"{name} is required: a non-empty string.")
            return None
        if not isinstance(value, str):
            raise PayloadError(f"{name} must be a string, got a JSON {_kind(value)}.")
        if required and not value.strip():
            raise PayloadError(f"{name} is required: a non-empty string.")
        return no_surrogates(value)

    def choice(self, name: str, choices: Collection[str]) -> str | None:
        value = self.text(name)
        if value is not None and value not in choices:
            raise PayloadError(f"{name} must be one of {', '.join(choices)}, got {shown(value)}.")
        return value

    def flag(self, name: str) -> bool:
        value = self.data.get(name)
        if value is None:
            return False
        if self.query and isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        if isinstance(value, bool):
            return value
        raise PayloadError(f"{name} must be true or false, got {shown(value)}.")

    def count(self, name: str, *, most: int, least: int = 1) -> int | None:
        """A whole number from ``least`` to ``most``, or ``None`` when absent."""
        value = self.data.get(name)
        if value is None or (self.query and value == ""):
            return None
        number = whole_number(value) if self.query and isinstance(value, str) else value
        if isinstance(number, bool) or not isinstance(number, int) \
                or not least <= number <= most:
            raise PayloadError(f"{name} must be a whole number from {least} to {most}, "
                               f"got {shown(value)}.")
        return number


def parse_query(params: Mapping[str, str], allowed: Collection[str]) -> Fields:
    """A query string's parameters; any not in ``allowed`` is refused (a typo)."""
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        takes = ", ".join(sorted(allowed)) if allowed else "no query parameters"
        raise PayloadError(f"Unknown parameter(s) {listed(unknown)}; this route takes {takes}.")
    return Fields(dict(params), query=True)
