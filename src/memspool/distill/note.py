"""A draft note: what the distiller hands to reconciliation with memory."""

from __future__ import annotations

import dataclasses
from typing import Final, Literal

from memspool.base.kinds import NoteType
from memspool.distill.classify import PASSIVE, classify
from memspool.distill.keys import (
    note_key,
    sentence_case,
    subject_key,
    summary_line,
    title,
    whole_summary,
)

__all__ = ["PASSIVE_TITLE_CHARS", "Note", "OnlyIf", "Restates"]

#: The mem_capture_passive contract: a passive memory is titled by its first 50 characters.
PASSIVE_TITLE_CHARS: Final = 50
#: A note that says it restates what was said before: the assistant applying the
#: person's rule ("per your rule, ..."), or a person reminding ("remember ..."); or
#: a person's rule, which restates a rule of theirs it shares the words of
#: (``person``: a person who says a rule again in a later session reminds).
Restates = Literal["rule", "reminder", "person"] | None
#: A claim under the keep bar that is kept on one condition: that it gives a memory
#: its new value ("went from 5000 to 10000 ms"), or restates one ("same as always").
OnlyIf = Literal["replaces", "restates"] | None


@dataclasses.dataclass(frozen=True)
class Note:
    """One distilled fact: its type, its summary line and its full text.

    ``key_text`` is what the key is a slug of when it is not the summary.
    ``clarity`` is how clearly the text states a durable fact (the claim
    model's probability for a transcript's fact; 1.0 for what a person or
    an agent chose to save). ``restates`` says the text points back at
    something said before (reconciliation looks for it with a lower bar);
    ``only_if``, that it is kept only where it gives a memory of an earlier
    session its new value (``replaces``) or restates one (``restates``). A
    transcript's note says where its claims are (:meth:`claims`): its text is the
    claims' context (their list's introduction, the sentence the first one points
    back at) in ``context_lines`` lines, then the claims, ``claim_lines`` lines each.
    """

    type: NoteType
    summary: str
    body: str
    key_text: str = ""
    clarity: float = 1.0
    restates: Restates = None
    only_if: OnlyIf = None
    context_lines: int = 0
    claim_lines: tuple[int, ...] = ()

    @property
    def key(self) -> str:
        return note_key(self.key_text or self.summary)

    def claims(self) -> list[str]:
        """The claims of a transcript's note, each as its text holds it (a claim may
        take several lines: a code block after its sentence): after the context's
        ``context_lines``, ``claim_lines`` lines each. Empty when the note does not say
        where its claims are, or when its text no longer has those lines (redaction
        took some out): such a note is one fact, never taken apart."""
        lines = self.body.split("\n")
        if not self.claim_lines or self.context_lines + sum(self.claim_lines) != len(lines):
            return []
        found: list[str] = []
        at = self.context_lines
        for count in self.claim_lines:
            found.append("\n".join(lines[at:at + count]))
            at += count
        return found

    def without_claim(self, index: int) -> Note:
        """The note without claim ``index`` of :meth:`claims` (one reconciliation found
        said already): the rest, its context kept, is a fact of its own, summarised and
        keyed anew. What said it points back ("remember", "per your rule") may have been
        the claim taken out: the rest of a person's note is the person's, the rest of
        another points back at nothing."""
        claims = self.claims()
        lines = self.body.split("\n")[:self.context_lines]
        rest = claims[:index] + claims[index + 1:]
        body = "\n".join([*lines, *rest])
        summary = whole_summary(sentence_case(body))
        return dataclasses.replace(
            self, summary=summary, body=body, key_text=subject_key(summary),
            restates="person" if self.restates in ("person", "reminder") else None,
            claim_lines=tuple(count for number, count in enumerate(self.claim_lines)
                              if number != index))

    @classmethod
    def from_text(cls, text: str) -> Note:
        """A rule-based note: classified by markers, summarised by its first line."""
        return cls(type=classify(text), summary=summary_line(text), body=text)

    @classmethod
    def passive(cls, item: str) -> Note:
        """A learnings item saved by ``--passive``: titled by its first 50 characters, keyed
        by all of them, so two items that start alike are two memories."""
        return cls(type=PASSIVE, summary=title(item, PASSIVE_TITLE_CHARS), body=item,
                   key_text=title(item, len(item)))
