"""The distiller: payloads in, durable memory notes out.

``capture`` is the one verb behind every way of writing memory: split (or
ask an LLM), classify, key, then
reconcile each note with the project's memory (update in place, merge a
near-duplicate, or create), all in one transaction, with a JSON report.

    split.py       payload shapes (JSONL, markdown sections, paragraphs), learnings sections
    classify.py    note types by cheap local markers
    keys.py        summary lines, keys, normalized text
    note.py        the draft note
    similarity.py  near-duplicate detection and the terms memories are indexed by
    words.py       the word lists similarity.py reads (stop words, synonyms, antonyms, ...)
    llm.py         optional LLM distillation (Ollama, OpenAI-compatible), untrusted output
    capture.py     the verb and its report
"""

from __future__ import annotations

from memspool.distill.capture import (
    MAX_NOTES,
    MAX_PAYLOAD_BYTES,
    CaptureReport,
    NoteOutcome,
    capture,
)
from memspool.distill.classify import NOTE_TYPES, classify
from memspool.distill.keys import note_key, summary_line
from memspool.distill.llm import LlmError, LlmOptions
from memspool.distill.note import Note
from memspool.distill.similarity import is_near_duplicate, trigram_jaccard
from memspool.distill.split import learnings_items, split_payload

__all__ = [
    "MAX_NOTES",
    "MAX_PAYLOAD_BYTES",
    "NOTE_TYPES",
    "CaptureReport",
    "LlmError",
    "LlmOptions",
    "Note",
    "NoteOutcome",
    "capture",
    "classify",
    "is_near_duplicate",
    "learnings_items",
    "note_key",
    "split_payload",
    "summary_line",
    "trigram_jaccard",
]
