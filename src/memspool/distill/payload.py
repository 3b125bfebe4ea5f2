"""A capture payload into notes: checked, redacted, split (or given to an LLM).

Text in, notes out: nothing here reads or writes the store. The capture
verb (:func:`memspool.archivist.capture`) reconciles the notes with memory.
"""

from __future__ import annotations

from typing import Final

from memspool.base.errors import PayloadError
from memspool.config import Config
from memspool.distill.llm import LlmError, LlmOptions, distill_with_llm
from memspool.distill.note import Note
from memspool.distill.split import learnings_items, scrub, split_payload
from memspool.redact import redact
from memspool.untrusted import shown

__all__ = ["MAX_NOTES", "MAX_PAYLOAD_BYTES", "Distilled", "check_payload", "distil", "note_cap"]

#: The most one payload may hold (4 MiB); larger input is refused, not truncated.
MAX_PAYLOAD_BYTES: Final = 4 * 1024 * 1024
#: docs/distill.md, The rules: at most 20 notes per invocation; callers may only lower it.
MAX_NOTES: Final = 20


class Distilled:
    """The notes of a payload, and how they were made."""

    def __init__(self, notes: list[Note], *, llm: bool = False,
                 llm_fallback: str | None = None) -> None:
        self.notes = notes
        self.llm = llm
        self.llm_fallback = llm_fallback


def check_payload(text: str) -> None:
    """Refuse a payload that is not text, is empty, or is over MAX_PAYLOAD_BYTES."""
    if not isinstance(text, str):
        raise PayloadError(f"A capture payload must be text, got {type(text).__name__}.")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadError(
            f"The payload has {size} bytes, more than the {MAX_PAYLOAD_BYTES} (4 MiB) one capture "
            f"takes. Split it into smaller captures."
        )
    if not text.strip():
        raise PayloadError("The payload is empty: there is nothing to capture.")


def note_cap(max_entities: object, name: str = "max_entities") -> int:
    """The most notes one capture keeps: MAX_NOTES, or fewer when the caller asks.

    The one check of ``max_entities`` (named ``name`` in its refusal), whichever front
    end it came through: a whole number of at least 1. A caller may lower the cap,
    never raise it (docs/distill.md), so a larger number means MAX_NOTES.
    """
    if max_entities is None:
        return MAX_NOTES
    if isinstance(max_entities, bool) or not isinstance(max_entities, int) or max_entities < 1:
        raise PayloadError(
            f"{name} must be a whole number of at least 1 (a capture keeps at most "
            f"{MAX_NOTES} notes: a larger number means {MAX_NOTES}), got {shown(max_entities)}."
        )
    return min(max_entities, MAX_NOTES)


def _redacted(text: str) -> str:
    return redact(text)[0]


def distil(text: str, *, config: Config, passive: bool, llm: LlmOptions | None,
           cap: int) -> Distilled:
    """The notes of a checked payload. ``passive`` takes only learnings sections' items;
    ``llm`` asks a model first and falls back to the rules on any failure."""
    # Redacted as a whole, then again piece by piece, as the reader will see
    # each one: a secret escaped inside a JSON string ("\u0067hp_...") is only
    # recognisable once the record is decoded.
    redacted, _ = redact(scrub(text))
    if passive:
        return Distilled([Note.passive(_redacted(item)) for item in learnings_items(redacted)])
    pieces = [_redacted(piece) for piece in split_payload(redacted)]
    fallback = None
    if llm is not None:
        try:
            notes = distill_with_llm("\n\n".join(pieces), llm, config, cap)
        except LlmError as exc:
            fallback = str(exc)
        else:
            return Distilled(notes, llm=True)
    return Distilled([Note.from_text(piece) for piece in pieces], llm_fallback=fallback)
