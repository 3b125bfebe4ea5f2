"""Full-text matching shared by search and the recall hooks (standard library only).

One spelling of how text becomes search terms, used on both sides: when a
memory is indexed (``identifiers`` fills the index's identifier column) and
when a query is built (``match_expression``). User text never reaches FTS5
as syntax: every term is a quoted string, so quotes, ``NOT``, a lone
parenthesis or ``db_pool.py`` are only words.

Identifiers are found by their parts: ``SparklineChart`` also indexes
``sparkline`` and ``chart``, ``get_user_by_id`` gives ``get user by id``,
``src/db/pool.py`` gives ``src db pool py``, ``imageGCHighThresholdPercent``
gives ``image gc high threshold percent``.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

__all__ = [
    "SEARCH_STOP_WORDS", "every_expression", "folded", "held", "identifiers", "match_expression",
    "query_terms", "stem", "terms_of",
]

# Letters and digits of any script (FTS5's unicode61 tokenizer reads them so).
_TOKEN: Final = re.compile(r"[^\W_]+(?:[._/:-][^\W_]+)*")
_CAMEL: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|$)|[A-Z]?[a-z]+|\d+|[A-Z]+")
_WORD: Final = re.compile(r"[^\W_]+")
#: Words too common to say what a query is about. Search's own list; the
#: distiller compares notes with another (memspool.distill.words).
SEARCH_STOP_WORDS: Final = frozenset({
    "a", "about", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at", "be",
    "because", "been", "before", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "down", "each", "few", "for", "from", "get", "got", "had", "has", "have", "how",
    "i", "if", "in", "into", "is", "it", "its", "just", "made", "make", "me", "more", "most",
    "my", "no", "not", "now", "of", "on", "or", "other", "our", "out", "over", "same", "should",
    "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "those", "to", "too", "under", "up", "use", "used", "using", "very", "was",
    "we", "were", "what", "when", "where", "which", "while", "who", "why", "will", "with",
    "would", "you", "your",
})
#: Endings :func:`stem` removes, longest first.
_ENDINGS: Final = ("ing", "ed", "es", "s")
#: Above this many terms a query is cut (longest first): a pasted paragraph
#: must not make an expression FTS5 takes seconds over.
MAX_TERMS: Final = 24


def folded(text: str) -> str:
    """``text`` with each accented Latin letter as its plain letter, as the index's
    ``remove_diacritics 2`` reads it ("Zürich" is "Zurich", "naïve" "naive"); other
    scripts' marks stay (FTS5 keeps the voicing marks of "データベース"), and
    plain ASCII is as it was."""
    if text.isascii():
        return text
    import unicodedata  # only for text beyond ASCII, off the hooks' usual path

    out = []
    for char in text:
        plain = char
        if not char.isascii():
            parts = unicodedata.normalize("NFD", char)
            if len(parts) > 1 and parts[0].isascii() and all(
                    unicodedata.combining(mark) for mark in parts[1:]):
                plain = parts[0]
        out.append(plain)
    return "".join(out)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(folded(text))


def _parts(token: str) -> list[str]:
    """The lowercase parts of one token: path and snake pieces, then camelCase humps (a
    piece in another script is one part)."""
    parts: list[str] = []
    for piece in _WORD.findall(token):
        if not piece.isascii():
            parts.append(piece.lower())
            continue
        humps = _CAMEL.findall(piece)
        parts.extend(h.lower() for h in humps if h)
    return parts


def _one_part(token: str) -> bool:
    """A plain word or number (most tokens): it has one part, no camelCase split."""
    return token.isdigit() or (token.isalpha() and (
        token.islower() or token.isupper() or (token[0].isupper() and token[1:].islower())))


def identifiers(text: str) -> str:
    """The identifier parts of ``text``, space-separated, for the index's third column.

    Only tokens that are identifiers (several parts) contribute; their whole
    form (``sparklinechart``) is there too, so a partial paste matches.
    """
    out: list[str] = []
    for token in _tokens(text):
        if _one_part(token):
            continue
        parts = _parts(token)
        if len(parts) > 1:
            out.append("".join(parts))
            out.extend(parts)
    return " ".join(out)


def terms_of(text: str) -> set[str]:
    """Every term ``text`` holds, stop words included, uncapped (for matching in memory)."""
    found: set[str] = set()
    for token in _tokens(text):
        parts = _parts(token)
        found.update(parts)
        if len(parts) > 1:
            found.add("".join(parts))
    return found


def query_terms(text: str) -> list[str]:
    """The distinct search terms of user text, in order: whole tokens and their parts."""
    seen: dict[str, None] = {}
    for token in _tokens(text):
        parts = _parts(token)
        whole = "".join(parts)
        if len(parts) > 1 and whole not in SEARCH_STOP_WORDS:
            seen[whole] = None
        for part in parts:
            if part not in SEARCH_STOP_WORDS and (len(part) > 1 or part.isdigit()):
                seen[part] = None
    terms = list(seen)
    if len(terms) > MAX_TERMS:
        keep = set(sorted(terms, key=len, reverse=True)[:MAX_TERMS])
        terms = [t for t in terms if t in keep]
    return terms


def stem(word: str) -> str:
    """``word`` without a plural or tense ending, leaving at least three letters."""
    for suffix in _ENDINGS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def held(terms: list[str], text: str) -> int:
    """How many of ``terms`` ``text`` holds: by stem among its words and identifier parts,
    or, for a long identifier, inside its words run together."""
    stems = {stem(term) for term in terms_of(text)}
    joined = "".join(_WORD.findall(folded(text).lower()))
    return sum(1 for term in terms
               if stem(term) in stems or (len(term) > 6 and term in joined))


def quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def every_expression(text: str) -> str:
    """An FTS5 MATCH expression that holds when a memory holds every word of ``text``.

    A word is one of the query's terms (stop words left out); an identifier
    counts as held when its whole form or all of its parts are there, so a
    partial paste (``imageGCHighThreshold``) still matches. "" when the text
    has no term.
    """
    groups: dict[str, None] = {}
    for token in _tokens(text):
        every = _parts(token)
        parts = [p for p in dict.fromkeys(every) if p not in SEARCH_STOP_WORDS
                 and (len(p) > 1 or p.isdigit())]
        if len(every) > 1 and len(parts) > 1:
            inner = " AND ".join(quoted(p) for p in parts)
            groups[f"({quoted(''.join(every))} OR ({inner}))"] = None
        elif parts:
            groups[quoted(parts[0])] = None
    return " AND ".join(list(groups)[:MAX_TERMS])


def match_expression(terms: list[str], *, every: bool = False) -> str:
    """An FTS5 MATCH expression: each term quoted, joined by OR (or AND when ``every``)."""
    return (" AND " if every else " OR ").join(quoted(t) for t in terms)
