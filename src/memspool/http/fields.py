"""Reading a request's JSON body, query string or form into checked values.

Every failure is a :class:`~memspool.base.errors.PayloadError` whose message is
one sentence naming the field and what it should be; the app answers 400. A
name given twice (``?limit=1&limit=2``, a form's field twice, a JSON object's
key twice) is refused, naming it: keeping the last value would answer a
request its sender did not mean (``dry_run=true&dry_run=false``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final, Protocol

from memspool.base.errors import PayloadError
from memspool.untrusted import SHOWN_CHARS, no_surrogates, shown, whole_number

__all__ = ["Fields", "QueryParams", "listed", "once", "parse_body", "parse_query", "path_id",
           "shown"]

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


class QueryParams(Protocol):
    """A query string's parameters, each as often as it was given (Starlette's)."""

    def multi_items(self) -> list[tuple[str, str]]: ...


def once(pairs: Iterable[tuple[str, Any]], what: str) -> dict[str, Any]:
    """``pairs`` (a query's parameters, a form's fields, a JSON object's keys: ``what``)
    as a dict; a name given twice is a :class:`PayloadError` naming it."""
    found: dict[str, Any] = {}
    for name, value in pairs:
        if name in found:
            raise PayloadError(f"The {what} {shown(name)} is given twice; give it once "
                               f"(which of its values was meant cannot be told).")
        found[name] = value
    return found


def parse_body(raw: bytes, allowed: Collection[str]) -> Fields:
    """The JSON object in ``raw``; any field not in ``allowed`` is refused (a typo), and
    so is a field given twice.

    Parsed with the standard library, as :func:`memspool.untrusted.parse_json` parses
    what its fast parser refuses (lone surrogates, invalid UTF-8 replaced): only it
    says which keys an object gave twice (its object hook sees every pair); a body is
    at most a few MiB, parsed in milliseconds."""
    if not raw.strip():
        raise PayloadError("The request has no body; send a JSON object.")
    try:
        data = json.loads(raw.decode("utf-8", "replace"),
                          object_pairs_hook=lambda pairs: once(pairs, "field"))
    except PayloadError:
        raise
    except RecursionError:
        raise PayloadError("The body is not valid JSON (nested deeper than memspool parses); "
                           "send a JSON object.") from None
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


def parse_query(params: QueryParams, allowed: Collection[str]) -> Fields:
    """A query string's parameters; any not in ``allowed`` is refused (a typo), and so
    is one given twice."""
    pairs = params.multi_items()
    unknown = sorted({name for name, _ in pairs} - set(allowed))
    if unknown:
        takes = ", ".join(sorted(allowed)) if allowed else "no query parameters"
        raise PayloadError(f"Unknown parameter(s) {listed(unknown)}; this route takes {takes}.")
    return Fields(once(pairs, "parameter"), query=True)
