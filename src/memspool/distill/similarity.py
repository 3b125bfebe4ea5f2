"""Near-duplicate detection: is a new note a reworded re-capture of a memory?

Character-trigram Jaccard >= 0.7 is the baseline the distiller's contract
names; it misses most rewordings (word order, a dropped "the", a colon for
"because") because it measures spelling. This module compares *terms*:

1. Normalise: NFKC, lowercase, contractions opened ("don't" -> "do not"),
   possessives dropped, number words as digits, a few abbreviations expanded.
2. Tokenise so that code survives: ``os.rename``, ``tmp_path``, ``3.11`` and
   ``--no-deps`` stay whole (and dotted names also give their parts).
3. Drop stop words (articles, pronouns, modals, connectives such as
   "because" and "so", which is what a colon replaces), stem lightly
   (plurals, -ing, -ed, -ly, a final e, a short list of irregular verbs) and
   fold a short list of synonyms. Two words that are one word elsewhere
   ("file systems" / "filesystems") are joined.
4. Veto what makes two similar sentences different facts: different numbers,
   identifiers or flags on the two sides, negation on one side only, an
   antonym on each side ("enable"/"disable"), or a preference or an order
   reversed ("X over Y" / "Y over X", "A before B" / "B before A").
5. Decide on weighted term overlap (identifiers and numbers weigh double):
   one side's terms contained in the other's is a re-capture with words left
   out; terms missing on both sides need a high Dice coefficient, since in a
   short note each substituted word is likely a different fact.

Candidates come from an index of each memory's terms (see :func:`index_terms`
and ``memspool.memory``), never from a scan of the project.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Final

__all__ = [
    "TRIGRAM_BASELINE",
    "Comparison",
    "adds_detail",
    "compare",
    "index_terms",
    "is_near_duplicate",
    "query_terms",
    "trigram_jaccard",
]

#: The baseline the distiller's contract names: character-trigram Jaccard >= 0.7.
TRIGRAM_BASELINE: Final = 0.7
#: Fewer shared terms than this is too little evidence to call two notes one fact.
MIN_SHARED_TERMS: Final = 3
#: One side contained in the other: the smaller must still be a fair share of the
#: larger (Dice >= 0.5 means at most about three times as many terms), so a short
#: note is not swallowed by a long one that mentions it in passing.
CONTAINED_MIN_DICE: Final = 0.5
#: Terms missing on both sides: what the labelled pairs in tests/data show
#: separates a reworded note (one or two synonyms) from a different fact on the
#: same topic (one noun swapped in a short note sits at 0.75).
OVERLAP_MIN_DICE: Final = 0.8
#: Identifiers and numbers weigh double: they are what a note is about.
KEY_WEIGHT: Final = 2.0
#: Profiles of texts up to this length are cached (a capture compares each note
#: with several candidates); longer ones are recomputed, so a 4 MiB section is
#: never pinned in memory by the cache.
CACHED_TEXT_CHARS: Final = 8192
#: Index at most this many terms per memory, and look up at most QUERY_TERMS
#: of a new note: enough for a long section, bounded for a huge one.
INDEX_TERMS: Final = 128
QUERY_TERMS: Final = 48

_CONTRACTIONS: Final = (
    (re.compile(r"\bcan'?t\b"), "can not"),
    (re.compile(r"\bwon'?t\b"), "will not"),
    (re.compile(r"\bshan'?t\b"), "shall not"),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"'(?:s|re|ve|ll|d|m)\b"), ""),
)
_TOKEN: Final = re.compile(r"(?<![\w-])--?[a-z][a-z0-9-]*|[a-z0-9_]+(?:\.[a-z0-9_]+)*")
_DIGIT_ALPHA: Final = re.compile(r"(?<=\d)(?=[a-z])|(?<=[a-z])(?=\d)")

_STOP_WORDS: Final = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "there", "here", "it", "its", "it's",
    "they", "them", "their", "we", "us", "our", "you", "your", "i", "me", "my", "he", "she",
    "his", "her", "him", "one", "ones", "some", "any", "all", "both", "each", "other", "such",
    "own", "same", "is", "am", "are", "was", "were", "be", "been", "being", "has", "have",
    "had", "having", "do", "does", "did", "doing", "done", "will", "would", "shall", "should",
    "can", "could", "may", "might", "must", "need", "needs", "needed", "require", "requires",
    "required", "ought", "to", "of", "in", "on", "at", "by", "for", "with", "about", "into",
    "onto", "through", "during", "from", "up", "out", "off", "as", "than", "then", "so", "thus",
    "therefore", "hence", "because", "since", "due", "cause", "causes", "caused", "causing",
    "reason", "result", "results", "resulting", "also", "too", "very", "just", "really",
    "actually", "quite", "and", "or", "but", "if", "when", "while", "where", "which", "who",
    "whom", "whose", "what", "why", "how", "whether", "again", "further", "once", "only",
    "most", "much", "many", "few", "lot", "lots", "get", "gets", "got", "getting", "make",
    "makes", "made", "making", "way", "ways", "thing", "things", "stuff", "something",
    "anything", "per", "via", "across", "within", "between", "against", "toward", "towards",
    "upon", "let", "lets", "like", "yes", "ok", "okay", "well", "still", "even", "ever",
    "already", "yet", "now",
})
#: Words that turn a statement round. "otherwise" is "if not" ("pin it, otherwise
#: results drift" says what "pin it so results do not drift" says).
_NEGATIONS: Final = frozenset(
    {"not", "no", "never", "without", "nothing", "none", "nor", "cannot", "avoid", "instead",
     "rather", "otherwise", "prevent", "prevents", "prevented", "preventing"}
)
_NUMBER_WORDS: Final = {
    "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "twice": "2", "twenty": "20", "hundred": "100",
}
_EXPANSIONS: Final = {
    "pr": ("pull", "request"), "prs": ("pull", "request"), "db": ("database",),
    "repo": ("repository",), "repos": ("repository",), "env": ("environment",),
    "dir": ("directory",), "dirs": ("directory",), "config": ("configuration",),
    "deps": ("dependency",), "args": ("argument",), "arg": ("argument",),
    "tmp": ("temp",), "msg": ("message",), "auth": ("authentication",),
}
_IRREGULAR: Final = {
    "held": "hold", "ran": "run", "broke": "break", "broken": "break", "came": "come",
    "sat": "sit", "shrunk": "shrink", "shrank": "shrink", "wrote": "write", "written": "write",
    "took": "take", "taken": "take", "chose": "choose", "chosen": "choose", "fell": "fall",
    "kept": "keep", "found": "find", "left": "leave", "went": "go", "gone": "go",
    "threw": "throw", "thrown": "throw", "hung": "hang", "built": "build", "sent": "send",
    "spent": "spend", "caught": "catch", "brought": "bring", "began": "begin", "begun": "begin",
    "led": "lead", "lost": "lose", "met": "meet", "paid": "pay", "read": "read", "saw": "see",
    "seen": "see", "shown": "show", "stuck": "stick", "told": "tell", "thought": "think",
    "understood": "understand", "ate": "eat", "froze": "freeze", "frozen": "freeze",
}
# Folded to the first word of their group: cheap synonyms common in engineering notes.
_SYNONYM_GROUPS: Final = (
    ("respect", "honour", "honor", "obey"),
    ("whole", "entire"),
    ("big", "large", "huge", "giant"),
    ("small", "tiny", "little"),
    ("fast", "quick", "rapid"),
    ("slow", "sluggish"),
    ("break", "fail", "crash"),
    ("choose", "pick", "select", "opt"),
    ("start", "begin"),
    ("delete", "remove"),
    ("show", "display"),
    ("error", "exception"),
    ("fix", "repair"),
    ("stale", "outdated"),
    ("read", "load"),
    ("retire", "deprecate"),
)
_ANTONYMS: Final = (
    ("enable", "disable"), ("increase", "decrease"), ("min", "max"), ("minimum", "maximum"),
    ("more", "less"), ("more", "fewer"), ("fast", "slow"), ("faster", "slower"),
    ("high", "low"), ("higher", "lower"), ("true", "false"), ("sync", "async"),
    ("synchronous", "asynchronous"), ("start", "stop"), ("open", "close"), ("add", "delete"),
    ("allow", "deny"), ("allow", "block"), ("first", "last"), ("input", "output"),
    ("import", "export"), ("push", "pull"), ("local", "remote"), ("success", "failure"),
    ("include", "exclude"), ("encode", "decode"), ("lock", "unlock"), ("public", "private"),
    ("upper", "lower"), ("inner", "outer"), ("prefix", "suffix"), ("ascending", "descending"),
    ("old", "new"), ("valid", "invalid"), ("aware", "naive"), ("static", "dynamic"),
    ("above", "below"), ("short", "long"), ("small", "big"), ("early", "late"),
    ("accept", "reject"), ("safe", "unsafe"), ("client", "server"),
)
#: "X over Y", "X instead of Y", "X rather than Y", "X than Y": X is preferred to Y.
_PREFERENCE_WORDS: Final = frozenset({"over", "instead", "rather", "than", "vs", "versus"})
#: "A before B" and "B after A" both mean A comes first.
_ORDER_WORDS: Final = frozenset({"before", "after"})


@lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix, replacement in (("ically", "ic"), ("ation", "ate"), ("ing", ""), ("ed", ""),
                                ("ly", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + replacement
            if not replacement and len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # shipped -> shipp -> ship
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    elif word.endswith("y") and len(word) > 3:
        word = word[:-1] + "i"  # flaky / flakiness -> flaki
    return word


def _build_synonyms() -> dict[str, str]:
    table: dict[str, str] = {}
    for group in _SYNONYM_GROUPS:
        for word in group:
            table[_stem(word)] = _stem(group[0])
    return table


_SYNONYMS: Final = _build_synonyms()
#: (left word, right word, left term, right term): terms to match, words to tell.
_ANTONYM_TERMS: Final = tuple(
    (a, b, _SYNONYMS.get(_stem(a), _stem(a)), _SYNONYMS.get(_stem(b), _stem(b)))
    for a, b in _ANTONYMS
)


def _canonical(word: str) -> str:
    stem = _stem(word)
    return _SYNONYMS.get(stem, stem)


def _is_key(token: str) -> bool:
    """Identifiers, numbers and flags: the tokens that make a note about one thing."""
    return token.startswith("-") or any(ch.isdigit() or ch in "._" for ch in token)


def _words(text: str) -> list[str]:
    """Surface tokens in order, normalised but not yet filtered."""
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    words: list[str] = []
    for found in _TOKEN.findall(text):
        token = found.strip("._") or found
        if not _is_key(token) or "." in token or "_" in token or token.startswith("-"):
            parts = [token]
        else:
            parts = _DIGIT_ALPHA.split(token)  # "60s" -> "60", "s"; "sha256" -> "sha", "256"
        for part in parts:
            if part in _NUMBER_WORDS:
                words.append(_NUMBER_WORDS[part])
            elif part in _EXPANSIONS:
                words.extend(_EXPANSIONS[part])
            else:
                words.append(part)
    return words


@dataclasses.dataclass(frozen=True)
class _Profile:
    terms: frozenset[str]
    keys: frozenset[str]
    negated: bool
    preferences: frozenset[tuple[str, str]]
    #: Adjacent word pairs read as one word ("file systems" -> "filesystem"), with their parts.
    joined: Mapping[str, tuple[str, str]]


def _content(word: str) -> bool:
    return (len(word) > 1 or word.isdigit()) and word not in _STOP_WORDS and word not in _NEGATIONS


def _relations(words: list[str], pivots: frozenset[str]) -> set[tuple[str, str]]:
    """(left, right) content terms around each pivot word; "after" is read backwards."""
    found: set[tuple[str, str]] = set()
    for index, word in enumerate(words):
        if word not in pivots:
            continue
        left = next((w for w in reversed(words[:index]) if _content(w)), None)
        right = next((w for w in words[index + 1 :] if _content(w)), None)
        if left is None or right is None:
            continue
        pair = (_canonical(left), _canonical(right))
        found.add(pair[::-1] if word == "after" else pair)
    return found


def _profile(text: str) -> _Profile:
    return _cached_profile(text) if len(text) <= CACHED_TEXT_CHARS else _build_profile(text)


@lru_cache(maxsize=1024)
def _cached_profile(text: str) -> _Profile:
    return _build_profile(text)


def _build_profile(text: str) -> _Profile:
    words = _words(text)
    terms: set[str] = set()
    keys: set[str] = set()
    for word in words:
        if not _content(word):
            continue
        if _is_key(word):
            keys.add(word)
            terms.add(word)
            if "." in word:
                terms.update(_canonical(p) for p in word.split(".") if _content(p))
        else:
            terms.add(_canonical(word))
    content = [w for w in words if _content(w) and not _is_key(w)]
    joined = {
        _canonical(a + b): (_canonical(a), _canonical(b))
        for a, b in itertools.pairwise(content)
    }
    return _Profile(
        terms=frozenset(terms),
        keys=frozenset(keys),
        negated=any(word in _NEGATIONS for word in words),
        preferences=frozenset(
            _relations(words, _PREFERENCE_WORDS) | _relations(words, _ORDER_WORDS)
        ),
        joined=joined,
    )


def _weight(terms: Iterable[str]) -> float:
    return sum(KEY_WEIGHT if _is_key(term) else 1.0 for term in terms)


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Why two texts are, or are not, one fact."""

    duplicate: bool
    dice: float
    containment: float
    shared: int
    veto: str | None = None


def _join_compounds(a: _Profile, b: _Profile) -> tuple[set[str], set[str]]:
    """Terms of both sides, "file systems" read as "filesystems" where the other side has that."""
    a_terms, b_terms = set(a.terms), set(b.terms)
    for mine, other, profile in ((a_terms, b.terms, a), (b_terms, a.terms, b)):
        for joined, parts in profile.joined.items():
            if joined in other and joined not in mine:
                mine.add(joined)
                mine.difference_update(part for part in parts if part not in other)
    return a_terms, b_terms


def _veto(a: _Profile, b: _Profile, a_terms: set[str], b_terms: set[str]) -> str | None:
    if a.keys - b.keys and b.keys - a.keys:
        return "different identifiers or numbers"
    if a.negated != b.negated:
        return "negated on one side only"
    a_only, b_only = a_terms - b_terms, b_terms - a_terms
    for left_word, right_word, left, right in _ANTONYM_TERMS:
        if (left in a_only and right in b_only) or (right in a_only and left in b_only):
            return f"antonyms {left_word}/{right_word}"
    for left, right in a.preferences:
        if (right, left) in b.preferences and (left, right) not in b.preferences:
            return "preference or order reversed"
    return None


def compare(a: str, b: str) -> Comparison:
    """Compare two note texts; ``duplicate`` is the verdict, the rest says why."""
    pa, pb = _profile(a), _profile(b)
    a_terms, b_terms = _join_compounds(pa, pb)
    shared = a_terms & b_terms
    if not shared:
        return Comparison(False, 0.0, 0.0, 0)
    shared_weight = _weight(shared)
    a_weight, b_weight = _weight(a_terms), _weight(b_terms)
    dice = 2 * shared_weight / (a_weight + b_weight)
    containment = shared_weight / min(a_weight, b_weight)
    veto = _veto(pa, pb, a_terms, b_terms)
    if veto is not None:
        return Comparison(False, dice, containment, len(shared), veto)
    if len(shared) < MIN_SHARED_TERMS:
        duplicate = False
    elif a_terms <= b_terms or b_terms <= a_terms:
        duplicate = dice >= CONTAINED_MIN_DICE
    else:
        duplicate = dice >= OVERLAP_MIN_DICE
    return Comparison(duplicate, dice, containment, len(shared))


def adds_detail(old: str, new: str) -> bool:
    """True when ``new`` says all ``old`` says and more (its terms strictly include old's)."""
    old_terms, new_terms = _profile(old).terms, _profile(new).terms
    return old_terms < new_terms


def is_near_duplicate(a: str, b: str) -> bool:
    """True when ``b`` is a reworded re-capture of the same fact as ``a``."""
    return compare(a, b).duplicate


def index_terms(text: str, limit: int = INDEX_TERMS) -> list[str]:
    """The terms under which a memory is indexed for candidate lookup.

    Identifiers and numbers first, then longer words (more specific), so a
    bounded list keeps what a re-capture most likely repeats.
    """
    terms = _profile(text).terms
    ranked = sorted(terms, key=lambda term: (not _is_key(term), -len(term), term))
    return ranked[:limit]


def query_terms(text: str) -> list[str]:
    """The terms of a new note to look candidates up by (a bounded :func:`index_terms`)."""
    profile = _profile(text)
    extra = sorted(profile.joined)  # "file systems" also looks up "filesystems"
    return index_terms(text, QUERY_TERMS) + extra[: max(0, QUERY_TERMS // 4)]


def _trigrams(text: str) -> set[str]:
    text = " ".join(text.lower().split())
    return {text[i : i + 3] for i in range(max(1, len(text) - 2))}


def trigram_jaccard(a: str, b: str) -> float:
    """The baseline: Jaccard similarity of character trigrams of the normalized texts."""
    ta, tb = _trigrams(a), _trigrams(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)
