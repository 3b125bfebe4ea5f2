"""What a spool frame asks the drainer to do, checked before anything is trusted.

A frame holds the hook payload exactly as Claude Code sent it. Every field
used here is validated: the session id by shape, transcript paths by being
absolute ``.jsonl`` files under an allowed root (``transcript_roots``), the
event by name. A frame that fails is logged and skipped; it never stops the
drain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memspool.base.errors import PayloadError, TranscriptError
from memspool.base.home import HOOK_EVENTS
from memspool.redact import redact
from memspool.untrusted import parse_json

__all__ = ["FORCING_EVENTS", "ID_SHAPE", "Request", "check_transcript_path", "parse_payload"]

#: Events after which a held-back slice must ship now: the context is about
#: to be compacted, or the session is over.
#: ``backfill`` frames come from `memspool backfill` handing old transcripts to a
#: running drainer: the session is over, so its last turn is forced out too.
FORCING_EVENTS: Final = frozenset({"PreCompact", "SessionEnd", "backfill"})
KNOWN_EVENTS: Final = frozenset({*HOOK_EVENTS, "backfill"})
#: An error message quotes this much of a bad payload, taken from this much
#: of its start (enough for any secret that crosses the quoted part).
EXCERPT_CHARS: Final = 80
EXCERPT_SOURCE_BYTES: Final = 4096
ID_SHAPE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass
class Request:
    """One frame's ask, or several frames of a session merged."""

    session_id: str
    transcript: Path
    cwd: str | None
    event: str
    forced: bool
    agent_transcripts: set[Path] = field(default_factory=set)
    instructions: list[tuple[str, str]] = field(default_factory=list)  # (dedup key, text)
    #: Why parts of the payload were refused (a subagent path outside the roots).
    rejected: list[str] = field(default_factory=list)

    def merge(self, later: Request) -> None:
        self.event = later.event
        self.forced = self.forced or later.forced
        self.cwd = later.cwd or self.cwd
        self.agent_transcripts |= later.agent_transcripts
        self.instructions.extend(later.instructions)
        self.rejected.extend(later.rejected)


def _excerpt(payload: bytes) -> str:
    """The start of a bad payload for an error message: redacted, then clipped
    (clipping first could cut a secret out of reach of its rule)."""
    text = redact(payload[:EXCERPT_SOURCE_BYTES].decode("utf-8", "replace"))[0]
    return repr(text[:EXCERPT_CHARS])


def check_transcript_path(raw: object, roots: tuple[Path, ...]) -> Path:
    """A transcript path from a payload, resolved, or :class:`TranscriptError`."""
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        raise TranscriptError(f"transcript path {raw!r} is not a usable path", str(raw))
    path = Path(raw)
    if not path.is_absolute() or path.suffix != ".jsonl":
        raise TranscriptError(f"transcript path {raw!r} must be an absolute .jsonl path", raw)
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        raise TranscriptError(f"transcript path {raw} cannot be resolved: {exc}", raw) from None
    for root in roots:
        if resolved.is_relative_to(root.resolve()):
            return resolved
    allowed = ", ".join(str(r) for r in roots) or "(none)"
    raise TranscriptError(
        f"transcript path {raw} is outside the transcript roots ({allowed}); "
        f"add its folder to transcript_roots in config.toml if it is genuine",
        raw,
    )


def parse_payload(payload: bytes, time_ns: int, roots: tuple[Path, ...]) -> Request:
    """Turn a frame's payload into a :class:`Request`.

    Raises ``PayloadError`` or ``TranscriptError``.
    """
    try:
        data: Any = parse_json(payload)
    except ValueError as exc:
        raise PayloadError(f"hook payload is not JSON ({exc}): {_excerpt(payload)}") from None
    if not isinstance(data, dict):
        raise PayloadError(f"hook payload is not a JSON object: {_excerpt(payload)}")
    session_id = data.get("session_id")
    if not isinstance(session_id, str) or not ID_SHAPE.fullmatch(session_id):
        raise PayloadError(f"hook payload has no usable session_id: {session_id!r}")
    event = data.get("hook_event_name")
    if not isinstance(event, str) or event not in KNOWN_EVENTS:
        event = "Stop" if event is None else f"other:{str(event)[:40]}"
    transcript = check_transcript_path(data.get("transcript_path"), roots)
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    request = Request(session_id, transcript, cwd, event, event in FORCING_EVENTS)
    agent_path = data.get("agent_transcript_path")
    if agent_path:
        # Only the bad part is refused: the main transcript is still drained.
        try:
            request.agent_transcripts.add(check_transcript_path(agent_path, roots))
        except TranscriptError as exc:
            request.rejected.append(str(exc))
    instructions = data.get("custom_instructions")
    if event == "PreCompact" and isinstance(instructions, str) and instructions.strip():
        # Kept whole: the drainer splits a long entry across slices (never
        # truncates), and redacts it before any split.
        text = instructions.strip()
        request.instructions.append((f"precompact:{session_id}:{time_ns}", text))
    return request
