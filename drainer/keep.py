"""One transcript record in, the text worth keeping out.

Kept: user prompt text, assistant text, thinking, one line per tool call
(``[tool Bash] pytest -x``, input clipped), the head of a tool error, compact
summaries and boundaries. Dropped: tool result bodies, ``toolUseResult``,
``progress``, snapshots, queue operations, signatures, usage metadata,
``<system-reminder>`` blocks, meta messages. Images become ``[image]``.
Unknown record types are skipped and counted, never fatal: the format is
internal to Claude Code and changes between versions.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final

import orjson

from memspool.redact import redact
from memspool.untrusted import printable

__all__ = ["Kept", "keep_record", "record_key"]

#: Characters of a tool call's input kept on its one line.
TOOL_INPUT_CLIP: Final = 200
#: Characters kept from the head of a failing tool's output.
TOOL_ERROR_CLIP: Final = 300

#: Record types Claude Code writes that carry nothing worth keeping.
DROPPED_TYPES: Final = frozenset(
    {"progress", "file-history-snapshot", "queue-operation", "custom-title", "tag", "agent-name"}
)

#: Which input field best says what a tool call did, by preference.
_TOOL_INPUT_KEYS: Final = (
    "command", "file_path", "notebook_path", "path", "pattern", "url", "query",
    "description", "prompt", "skill", "subject",
)
_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.S)


class Kept:
    """The outcome of one record: its text (``None`` if dropped) and why.

    ``redactions`` counts secrets already replaced in clipped tool lines
    (they are redacted before the clip); the rest of the text is redacted
    later, with the whole entry.
    """

    __slots__ = ("redactions", "text", "verdict")

    def __init__(self, text: str | None, verdict: str, redactions: int = 0) -> None:
        self.text = text
        self.verdict = verdict  # "kept", "dropped" or "unknown"
        self.redactions = redactions


_DROPPED: Final = Kept(None, "dropped")
_UNKNOWN: Final = Kept(None, "unknown")


def record_key(record: dict[str, Any], line: bytes) -> str:
    """What makes a record the same record when a transcript replays it."""
    uuid = record.get("uuid")
    if isinstance(uuid, str) and uuid:
        return uuid
    return "line:" + hashlib.blake2b(line, digest_size=16).hexdigest()


def _clean(text: str) -> str:
    if "<system-reminder>" in text:
        text = _SYSTEM_REMINDER.sub("", text)
    return text.strip()


def _clip(text: str, limit: int, tally: list[int]) -> str:
    # Redact as written (a multi-line key needs its newlines), again once the
    # whitespace is joined (``PASSWORD=\n  'pw'`` is an assignment only then),
    # and only then clip: a secret cut in half by the clip would no longer
    # match its rule, and its first half would reach the store.
    clean, counts = redact(printable(text))
    joined, more = redact(" ".join(clean.split()))
    tally.append(sum(counts.values()) + sum(more.values()))
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def _tool_line(block: dict[str, Any], tally: list[int]) -> str:
    name = block.get("name")
    name = name if isinstance(name, str) and name else "?"
    tool_input = block.get("input")
    summary = ""
    if isinstance(tool_input, dict):
        for key in _TOOL_INPUT_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                summary = value
                break
        else:
            if tool_input:
                summary = orjson.dumps(tool_input).decode("utf-8", "replace")
    elif tool_input is not None:
        summary = str(tool_input)
    return f"[tool {_clip(name, 60, tally)}] {_clip(summary, TOOL_INPUT_CLIP, tally)}".rstrip()


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(item.get("text", "")) for item in content if isinstance(item, dict)
        )
    return ""


def _user(record: dict[str, Any], label: str) -> Kept:  # noqa: PLR0911, PLR0912 - one per shape
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if record.get("isCompactSummary"):
        text = _clean(_result_text(content) if not isinstance(content, str) else content)
        return Kept(f"[compact summary] {text}", "kept") if text else _DROPPED
    if record.get("isMeta"):
        return _DROPPED
    if isinstance(content, str):
        text = _clean(content)
        return Kept(f"[{label}] {text}", "kept") if text else _DROPPED
    if not isinstance(content, list):
        return _UNKNOWN
    parts: list[str] = []
    tally: list[int] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = _clean(str(block.get("text", "")))
            if text:
                parts.append(text)
        elif kind == "image":
            parts.append("[image]")
        elif kind == "document":
            parts.append("[document]")
        elif kind == "tool_result" and block.get("is_error"):
            head = _clip(_clean(_result_text(block.get("content"))), TOOL_ERROR_CLIP, tally)
            parts.append(f"[tool error] {head}")
    if not parts:
        return _DROPPED
    if all(p.startswith("[tool error]") for p in parts):
        return Kept("\n".join(parts), "kept", sum(tally))
    return Kept(f"[{label}] " + "\n".join(parts), "kept", sum(tally))


def _assistant(record: dict[str, Any], label: str) -> Kept:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        text = _clean(content)
        return Kept(f"[{label}] {text}", "kept") if text else _DROPPED
    if not isinstance(content, list):
        return _UNKNOWN
    parts: list[str] = []
    tally: list[int] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = _clean(str(block.get("text", "")))
            if text:
                parts.append(f"[{label}] {text}")
        elif kind == "thinking":
            text = str(block.get("thinking", "")).strip()
            if text:
                parts.append(f"[thinking] {text}")
        elif kind == "tool_use":
            parts.append(_tool_line(block, tally))
    return Kept("\n".join(parts), "kept", sum(tally)) if parts else _DROPPED


def keep_record(record: Any, *, mark_sidechain: bool = True) -> Kept:  # noqa: PLR0911
    """Keep what a person or an archivist would want from ``record``.

    (A return per record type: the branches read as a table of what is kept,
    here and in ``_user``.)

    ``mark_sidechain`` labels inline subagent records (``isSidechain``, older
    Claude Code) as ``[subagent ...]``; a subagent's own file needs no label.
    """
    if not isinstance(record, dict):
        return _UNKNOWN
    kind = record.get("type")
    if not isinstance(kind, str):  # a list or object here must not reach the set lookups
        return _UNKNOWN
    sidechain = "subagent " if mark_sidechain and record.get("isSidechain") is True else ""
    if kind == "user":
        return _user(record, f"{sidechain}user")
    if kind == "assistant":
        return _assistant(record, f"{sidechain}assistant")
    if kind == "system":
        if record.get("subtype") == "compact_boundary":
            return Kept("[compact boundary]", "kept")
        return _DROPPED
    if kind == "summary":
        summary = record.get("summary")
        if isinstance(summary, str) and summary.strip():
            return Kept(f"[summary] {summary.strip()}", "kept")
        return _DROPPED
    if kind in DROPPED_TYPES:
        return _DROPPED
    return _UNKNOWN
