"""What kind of note a text is, by cheap local markers.

The types are checked in a fixed order and the first whose markers match
wins: preference, root-cause, pitfall, decision, pattern, else takeaway. The order
(docs/distill.md, The rules) means a note that names why something failed ("broke because",
"turned out") is a root cause even when it also warns, and a warning is a
pitfall even when it also recommends. ``passive`` is not a marker type: it
is given to items taken by ``--passive`` from a learnings section.

A leading label ("Decision:", "Root cause:", "Gotcha:") is the writer
saying what the note is, so it is read before the markers. Markers are
whole-word patterns, so "debug" never reads as "bug".
"""

from __future__ import annotations

import re
from typing import Final

from memspool.base.kinds import NOTE_TYPES, NoteType

__all__ = ["NOTE_TYPES", "PASSIVE", "TAKEAWAY", "classify", "coerce_type", "is_type_label"]

TAKEAWAY: Final[NoteType] = "takeaway"
PASSIVE: Final[NoteType] = "passive"

# Words that say something went wrong; "because"/"due to" after one of them
# explains a failure (a root cause), while "chose X because" explains a choice.
_FAILURE: Final = (
    r"(?:fail\w*|broke|broken|break\w*|crash\w*|hung|hang\w*|stall\w*|leak\w*|"
    r"error\w*|bugs?|flaky|flakiness|slow\w*|timed? ?out|timeouts?|loops|deadlock\w*|"
    r"segfault\w*|oom|stale|wrong|missing|off by|went away|disappear\w*|empty|"
    r"\d{3}s|corrupt\w*|dropped|lost|doubled|spiked?|rejected|refused|never ran|"
    r"restart\w*|returned nothing|nothing happened|not found|blocked|stuck)"
)
# Verbs that open an instruction ("start it on port 0", "use a sentinel").
_IMPERATIVE: Final = (
    r"(?:use|poll|wrap|pass|call|build|validate|start|run|keep|put|add|set|read|write|"
    r"open|close|check|prefer|make|create|return|raise|log|store|split|mark|copy|move|"
    r"pin|cache|retry|lock|catch|give|send|name|test|import|parse|convert|document)"
)

_MARKERS: Final[tuple[tuple[NoteType, re.Pattern[str]], ...]] = (
    (
        "preference",
        re.compile(
            # The user's own rule or taste, said by them or restated for them.
            r"^\W{0,3}(?:i|we) (?:prefer|like|want|always|never|don'?t want)\b|"
            r"\b(?:i|we|you|the user) prefers?\b|\bplease (?:always|never|don'?t)\b|"
            r"\b(?:your|the user'?s?) (?:rule|preference)\b|^\W{0,3}(?:rule|preference)\s*:",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    (
        "root-cause",
        re.compile(
            r"\broot[- ]?caus\w*|\bcaused by\b|\bwas caused\b|\bturn(?:s|ed)? out\b|"
            r"\bculprit\b|\btraced\b.{0,60}?\bto\b|\bstem(?:s|med)? from\b|"
            r"\b(?:underlying|real|actual) (?:cause|reason)\b|"
            r"\bwhy (?:the )?\w+ (?:failed|broke)\b|"
            r"\bcame from\b|\bthe reason (?:was|is)\b|\btriggered by\b|\bresult(?:ed)? from\b|"
            r"\bbecause of\b|\bdue to\b|\bthe fix was\b|\bfixed by\b|"
            rf"\b{_FAILURE}\b[^.;!?]{{0,80}}?\b(?:because|since)\b|"
            # "The cron job never ran: <why>": a failure, then its explanation.
            rf"\b{_FAILURE}\b[^.;:!?]{{0,60}}[:;]\s",
            re.IGNORECASE,
        ),
    ),
    (
        "pitfall",
        re.compile(
            r"\bpitfalls?\b|\bgotchas?\b|\bcareful\b|\bbeware\b|\bwatch out\b|\btraps?\b|"
            r"\bfootguns?\b|\bcaveats?\b|"
            # Warnings are commands ("Never call ...", "Don't use ..."), not purpose
            # clauses ("so readers never see", "to avoid a dependency", "so X do not drift").
            r"(?:^|[.;:!]\s+)(?:never|avoid|don'?t|do not)\b|"
            r"\b(?:should|must|you) (?:never|not)\b|"
            r"\bbugs?\b|\bbuggy\b|\bsilently\b|\bbites?\b|\bno default\b|\bdoes nothing\b|"
            r"\b(?:does|is) not\b|\b(?:doesn|isn)'?t\b|\bcannot\b|\bcan'?t\b|"
            r"\bforever\b|\binjection\b|\bunsafe\b|\bleaks?\b|\bcryptic\b|\bconfusing\b|"
            r"\bsurpris\w*|\bunexpected\w*|\bignored\b|\bswallow\w*|\bstops? working\b|"
            r"\bsubtle\b|\beasy to (?:miss|forget|break)\b",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    (
        "decision",
        re.compile(
            r"\bdecided\b|\bdecision\b|\bwe (?:chose|picked|went with|will use|use|agreed)\b|"
            r"\bchose\b|\bchosen\b|\bgoing with\b|\bwent with\b|\bopted\b|\bsettled on\b|"
            r"\bswitched\b|\bpicked\b|\bagreed\b|\badopted\b|\brejected\b|\bfrom now on\b|"
            r"\brather than\b|\bover\b(?= \w+ for\b)|"
            r"\bwe will\b|\bgoing forward\b|\bretired\b",
            re.IGNORECASE,
        ),
    ),
    (
        "pattern",
        re.compile(
            r"\bpatterns?\b|\balways\b|\bwhenever\b|\bconventions?\b|\bidioms?\b|"
            r"\brule of thumb\b|\bbest practice\b|^\s*every\b|^\s*recipes?\b|\bevery time\b|"
            r"\bstructure\b|"
            rf"^\s*(?:to|for|when|if|before|after)\b[^.]*,\s*{_IMPERATIVE}\b|"
            rf"^\s*{_IMPERATIVE}\b|\bso tests\b",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
)


_LABELS: Final[dict[str, NoteType]] = {
    "root cause": "root-cause",
    "root-cause": "root-cause",
    "cause": "root-cause",
    "pitfall": "pitfall",
    "gotcha": "pitfall",
    "warning": "pitfall",
    "caveat": "pitfall",
    "decision": "decision",
    "decided": "decision",
    "pattern": "pattern",
    "convention": "pattern",
    "idiom": "pattern",
    "recipe": "pattern",
    "preference": "preference",
    "rule": "preference",
    "takeaway": TAKEAWAY,
    "lesson": TAKEAWAY,
    "til": TAKEAWAY,
    "key insight": TAKEAWAY,
    "insight": TAKEAWAY,
    "note": TAKEAWAY,
}
_LABEL: Final = re.compile(r"^[\s#>*_-]*([a-z][a-z -]{1,20}?)\s*:", re.IGNORECASE)


def is_type_label(text: str) -> bool:
    """``text`` is only a label of a type ("Root cause", "Gotchas", "Notes"): it names
    what follows, and says no fact of its own."""
    words = re.sub(r"[^a-z -]", "", text.lower()).strip(" -")
    return words in _LABELS or (words.endswith("s") and words[:-1] in _LABELS) \
        or words in NOTE_TYPES


def classify(text: str) -> NoteType:
    """The note type of ``text``: its leading label's type, else the first type whose
    markers match, else ``takeaway``."""
    label = _LABEL.match(text)
    if label is not None:
        labelled = _LABELS.get(label.group(1).strip().lower())
        if labelled is not None:
            return labelled
    for note_type, pattern in _MARKERS:
        if pattern.search(text) is not None:
            return note_type
    return TAKEAWAY


def coerce_type(value: object) -> NoteType:
    """An untrusted type name made safe: a known type, else ``takeaway``.

    Accepts the spellings models tend to produce ("Root Cause", "root_cause").
    """
    if not isinstance(value, str):
        return TAKEAWAY
    name = re.sub(r"[\s_]+", "-", value.strip().lower())
    for known in NOTE_TYPES:
        if name == known and known != PASSIVE:
            return known
    return TAKEAWAY
