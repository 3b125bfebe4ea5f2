"""The distiller: text in, notes out. It never reads or writes the store.

A capture payload is split (or given to an LLM) into notes; a slice's
conversation is cut into claims, and the claims the claim model keeps
become notes. The archivist reconciles notes with memory.

    blobs.py           runs too long to be a name (a hash, a dump) read as one word, <blob>
    claims.py          a message cut into claims (sentences, list items) with their context
    claim_features.py  what the claim model sees of a claim; cues.txt, its cue phrases
    claim_model.py     the trained model: durable or not, and which type (claim_model.json)
    transcript.py      a slice's conversation -> notes (the minor pass's rules)
    payload.py         a capture payload -> notes (split, or an LLM)
    split.py           payload shapes (JSONL, markdown sections, paragraphs), learnings sections
    messages.py        a slice's text read back as messages
    classify.py        note types of a capture's pieces by cheap local markers
    keys.py            summaries, subject keys, normalized text
    note.py            the draft note
    similarity.py      how two texts relate (the same fact, a new value, ...) and index terms
    words.py           the word lists similarity.py reads (stop words, synonyms, antonyms, ...)
    llm.py             optional LLM distillation (Ollama, OpenAI-compatible), untrusted output
    llm_http.py        its HTTP exchange under one deadline, loaded only when a model is called

Its names load on first use (``memspool.base.lazy``): a module that needs
only ``keys`` does not load the LLM client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memspool.base.lazy import exports

if TYPE_CHECKING:
    from memspool.distill.classify import NOTE_TYPES, classify
    from memspool.distill.keys import note_key, summary_line
    from memspool.distill.llm import LlmError, LlmOptions
    from memspool.distill.note import Note
    from memspool.distill.payload import MAX_NOTES, MAX_PAYLOAD_BYTES
    from memspool.distill.similarity import is_near_duplicate, trigram_jaccard
    from memspool.distill.split import learnings_items, split_payload

__all__ = [
    "MAX_NOTES",
    "MAX_PAYLOAD_BYTES",
    "NOTE_TYPES",
    "LlmError",
    "LlmOptions",
    "Note",
    "classify",
    "is_near_duplicate",
    "learnings_items",
    "note_key",
    "split_payload",
    "summary_line",
    "trigram_jaccard",
]

__getattr__ = exports(__name__, {
    "NOTE_TYPES": "classify", "classify": "classify",
    "note_key": "keys", "summary_line": "keys",
    "LlmError": "llm", "LlmOptions": "llm",
    "Note": "note",
    "MAX_NOTES": "payload", "MAX_PAYLOAD_BYTES": "payload",
    "is_near_duplicate": "similarity", "trigram_jaccard": "similarity",
    "learnings_items": "split", "split_payload": "split",
})
