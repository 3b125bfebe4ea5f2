"""Summaries, keys and normalized text of a note.

A note's key is its identity inside a project. For a fact distilled from a
transcript it names the subject (:func:`subject_key`: ``gunicorn-workers-threads``),
without the values, so the same setting with a new value finds the memory
that holds the old one. For a capture it is a slug of the summary line, so a
re-capture whose first line is unchanged lands on the same memory. A
different fact under a taken key gets :func:`distinct_key` instead of
overwriting the memory that holds the key.

A summary is the fact itself, whole (:func:`whole_summary`): past
SUMMARY_CHARS it is cut at the last sentence end, else clause end, and
marked with "...", never cut inside a word.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Final

from memspool.distill.classify import is_type_label

__all__ = [
    "KEY_CHARS",
    "SUMMARY_CHARS",
    "TEXT_CHARS",
    "TITLE_WORDS",
    "distinct_key",
    "normalized_text",
    "note_key",
    "sentence_case",
    "stated",
    "subject_key",
    "summary_line",
    "text_hash",
    "title",
    "whole_summary",
]

#: docs/distill.md, The rules: a distilled fact's summary is the fact, whole, to about 300.
SUMMARY_CHARS: Final = 300
#: The most characters a memory's text (its body) holds when a person or an agent
#: writes it whole (a save, an edit that lengthens it): a memory is a fact, not a
#: document, and every search that meets one scores its text. A longer text is
#: refused with this said; `memspool capture` distills it into memories instead. An
#: import takes what an export gave, whatever its length.
TEXT_CHARS: Final = 65_536
#: A summary cut shorter than this share of SUMMARY_CHARS at a sentence end is
#: cut at a clause end instead, so a long first sentence is not lost.
_MIN_CUT_SHARE: Final = 0.4
#: The subject key takes this many words of the subject.
SUBJECT_WORDS: Final = 4
#: docs/distill.md, The rules: a key has at most 64 characters.
KEY_CHARS: Final = 64
#: A slug longer than KEY_CHARS keeps this many characters and gains a hash of the
#: whole slug, so two long summaries that share a 64-character start stay apart.
KEY_HASH_CHARS: Final = 8
#: Hex characters of the hash in ``note-<hash>`` keys (48 bits: collisions need
#: about 16 million keyless notes in one project).
FALLBACK_HASH_CHARS: Final = 12

_MARKUP_PREFIX: Final = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|(?:[-*+\u2022]|\d{1,3}[.)])\s+)+")
_EMPHASIS: Final = re.compile(r"\*\*|__")
#: A markdown (ATX) heading line.
_HEADING: Final = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_NOT_SLUG: Final = re.compile(r"[^a-z0-9]+")


def normalized_text(text: str) -> str:
    """Lowercase with whitespace collapsed: what "the same text" means for duplicates."""
    return " ".join(text.lower().split())


def text_hash(text: str) -> str:
    """A stable digest of :func:`normalized_text`, for exact-duplicate lookups."""
    return hashlib.sha256(normalized_text(text).encode("utf-8")).hexdigest()[:32]


def _clean_line(line: str) -> str:
    line = _MARKUP_PREFIX.sub("", line)
    line = _EMPHASIS.sub("", line)
    return " ".join(line.split())


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rstrip()


def summary_line(text: str) -> str:
    """The first non-empty line without markdown markup, whole (:func:`whole_summary`).

    A heading that is only a type's label ("## Root cause", "# Notes") says no
    fact: when text follows it, the summary is the first line of that text (the
    heading stays in the body, and still tells the note's type). Any other
    heading names the section's subject ("# Deploy freeze") and is the summary.
    """
    lines = [line for line in text.splitlines() if _clean_line(line)]
    if len(lines) > 1 and _HEADING.match(lines[0]) and is_type_label(_clean_line(lines[0])):
        lines = lines[1:]
    return whole_summary(_clean_line(lines[0])) if lines else ""


_FENCED: Final = re.compile(r"```[^\n]*\n(?P<code>.*?)(?:\n```|\Z)", re.DOTALL)
_SENTENCE_END: Final = re.compile(r"[.!?][\"')\]*_`]*(?=\s)")
_CLAUSE_END: Final = re.compile(r"[;,:](?=\s)|\s[\u2014\u2013-]\s")
#: Code and inline code of at most this many characters stays in a summary.
_INLINE_CODE_CHARS: Final = 120
#: How far before a code block its introduction (a line ending in ":") is looked for:
#: a bounded read, whatever the text's length and number of blocks.
_LOOK_BACK: Final = 200


def _flatten(text: str) -> str:
    """One line: fenced code inline (short) or left out (long), list markers and
    emphasis gone, whitespace collapsed."""
    def inline(match: re.Match[str]) -> str:
        lines = [line.strip().rstrip(";") for line in match.group("code").splitlines()
                 if line.strip()]
        code = "; ".join(lines)
        if len(code) <= _INLINE_CODE_CHARS:
            return f" `{code}` "
        before = match.string[max(0, match.start() - _LOOK_BACK):match.start()]
        if not before.rstrip().endswith(":"):
            return " "
        # The sentence introduces the code ("New prod values:"): its first lines say
        # what the sentence alone does not, marked as cut.
        shown = lines[0][:_INLINE_CODE_CHARS]
        for line in lines[1:]:
            joined = f"{shown}{' ' if shown.endswith((':', '{', '(', '[')) else '; '}{line}"
            if len(joined) > _INLINE_CODE_CHARS:
                break
            shown = joined
        return f" `{shown} ...` "

    text = _FENCED.sub(inline, text)
    lines = [_MARKUP_PREFIX.sub("", line) for line in text.splitlines()]
    flat = " ".join(" ".join(lines).split())
    return flat.replace("**", "").replace("__", "")


def whole_summary(text: str, limit: int = SUMMARY_CHARS) -> str:
    """``text`` on one line, whole when it fits in ``limit``; else cut at the last
    sentence end (or clause end) that fits, and marked with "..."."""
    flat = _flatten(text)
    if len(flat) <= limit:
        return flat
    room = flat[: limit - 4]
    for pattern in (_SENTENCE_END, _CLAUSE_END):
        ends = [m.end() for m in pattern.finditer(room) if m.end() >= limit * _MIN_CUT_SHARE]
        if ends:
            return flat[: ends[-1]].rstrip(" ,;:\u2014\u2013-") + " ..."
    cut = room.rfind(" ")
    return flat[: cut if cut > 0 else limit - 4].rstrip(" ,;:") + " ..."


#: Lower-case first words that are commands or tools, written as such.
_COMMAND_WORDS: Final = ("npm ", "pnpm ", "yarn ", "pip ", "git ", "make ", "cargo ", "go ",
                         "mix ", "docker ", "kubectl ", "helm ", "terraform ", "uv ")
#: A first word that is a plain word, not an identifier (``npm``, ``pool_size``).
_PLAIN_FIRST_WORD: Final = re.compile(r"[a-z]+(?:'[a-z]+)?(?=[\s,;:]|$)")


def sentence_case(text: str) -> str:
    """The fact as a sentence: "the staging API ..." (its label left out) starts with
    a capital; a lower-case identifier or command stays as written."""
    if _PLAIN_FIRST_WORD.match(text) and not text.startswith(_COMMAND_WORDS):
        return text[0].upper() + text[1:]
    return text


#: A summary of at most this many words, with no sentence end, that the body does
#: not hold as written is a title someone gave ("staging db", "Envs"), not the fact.
TITLE_WORDS: Final = 8


def stated(summary: str, body: str, limit: int = SUMMARY_CHARS) -> str:
    """The memory as one line that states it: its summary, whole; a title a person or
    an agent gave it ("staging db") leads its body instead of standing alone, which
    would say nothing ("staging db: the staging DB password is reused ...")."""
    title = " ".join(summary.split())
    if len(title.split()) > TITLE_WORDS or title.endswith((".", "!", "?")):
        return whole_summary(title, limit)
    lines = [line for line in body.splitlines() if line.strip()]
    if len(lines) > 1 and " ".join(lines[0].strip(" #*_").split()) == title:
        # A heading the text is under ("# Deploy freeze" / the rule): the title
        # leads the rest.
        return whole_summary(f"{title.rstrip(':')}: {' '.join(lines[1:])}", limit)
    flat = " ".join(body.split())
    # A summary taken from its body is there as written (its first letter perhaps
    # raised): "staging db" in "the staging DB refuses ..." is not.
    held = title in flat or f"{title[:1].lower()}{title[1:]}" in flat
    if flat and not held:
        return whole_summary(f"{title.rstrip(':')}: {body}", limit)
    return whole_summary(title, limit)


#: A leading label the writer gave ("Root cause:", "Gotcha:"): it says what kind
#: of fact follows, not what it is about.
_LEADING_LABEL: Final = re.compile(r"^\W{0,3}(?:[A-Za-z][\w-]*(?:\s[\w-]+){0,3})\s*:\s")
_SUBJECT_TOKEN: Final = re.compile(
    r"(?<![\w-])--?[a-z][a-z0-9-]*|[a-z_][a-z0-9_]*(?:[./][a-z0-9_]+)*|\d[\w.:/-]*",
    re.IGNORECASE)
#: Words that say nothing of a subject: the verbs any setting is said with.
_GENERIC: Final = frozenset({
    "use", "uses", "used", "using", "run", "runs", "running", "set", "sets", "add", "added",
    "make", "makes", "keep", "keeps", "call", "calls", "pass", "passes", "start", "starts",
    "get", "gets", "put", "puts", "go", "goes", "now", "new", "instead", "always", "never",
    "only", "not", "no", "don't", "do", "does", "please", "note", "remember", "fix", "fixed"})


def subject_key(summary: str) -> str:
    """The key naming what ``summary`` is about: its first SUBJECT_WORDS words that are
    neither stop words nor values (numbers, versions, sizes), flags by their name.

    "Run gunicorn with ``--workers 4`` ``--threads 4``" and the same with
    ``--workers 2`` both give ``gunicorn-workers-threads``.
    """
    from memspool.distill.words import COMPARISON_STOP_WORDS

    text = _LEADING_LABEL.sub("", _flatten(summary), count=1)
    words: list[str] = []
    for token in _SUBJECT_TOKEN.findall(text.lower().replace("\u2019", "'")):
        if token[0].isdigit():
            continue  # a value: 4, 8080, 3.11, 512Mi
        word = token.lstrip("-")
        if not word or word in COMPARISON_STOP_WORDS or word in _GENERIC or len(word) < 2:
            continue
        if word not in words:
            words.append(word)
        if len(words) == SUBJECT_WORDS:
            break
    return note_key(" ".join(words)) if words else note_key(summary)


def title(text: str, limit: int) -> str:
    """The first ``limit`` characters of the whole note on one line (passive memories' titles)."""
    return _clip(_clean_line(" ".join(text.split())), limit)


def note_key(summary: str) -> str:
    """The slug of ``summary``: lowercase ASCII alphanumerics and dashes, at most 64 characters.

    Accents fold to their base letter (``Café`` -> ``cafe``). A summary with no
    alphanumerics at all gets ``note-<hash>`` of its normalized text.
    """
    folded = unicodedata.normalize("NFKD", summary)
    ascii_text = folded.encode("ascii", "ignore").decode("ascii").lower()
    slug = _NOT_SLUG.sub("-", ascii_text).strip("-")
    if not slug:
        return f"note-{text_hash(summary)[:FALLBACK_HASH_CHARS]}"
    if len(slug) <= KEY_CHARS:
        return slug
    return _with_digest(slug, hashlib.sha256(slug.encode("ascii")).hexdigest())


def distinct_key(key: str, text: str) -> str:
    """``key`` made unique to ``text``: a short hash of the normalized text appended.

    The same text always gets the same distinct key, so re-capturing it lands
    on the memory it created; the result still has at most 64 characters.
    """
    return _with_digest(key, text_hash(text))


def _with_digest(key: str, digest: str) -> str:
    """``key`` clipped so that ``-`` and the digest's first characters fit in KEY_CHARS."""
    head = key[: KEY_CHARS - KEY_HASH_CHARS - 1].rstrip("-")
    return f"{head}-{digest[:KEY_HASH_CHARS]}"
