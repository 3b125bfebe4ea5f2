"""Near-duplicate detection: is a new note a reworded re-capture of a memory?

Character-trigram Jaccard >= 0.7 is the usual baseline; it misses most
rewordings (word order, a dropped "the", a colon for "because") because it
measures spelling. This module compares *terms*:

1. Normalise: NFKC, lowercase, contractions opened ("don't" -> "do not"),
   possessives dropped, number words as numbers ("thirty-five" -> 35), a few
   abbreviations expanded.
2. Tokenise so that code survives: ``os.rename``, ``tmp_path``, ``3.11``,
   ``--no-deps`` and hyphenated identifiers ending in a digit (``eu-west-1``,
   ``utf-8``) stay whole (dotted and hyphenated names also give their parts).
3. Drop stop words (articles, pronouns, modals, connectives such as
   "because" and "so", which is what a colon replaces), stem lightly
   (plurals, -ing, -ed, -ly, a final e, a short list of irregular verbs) and
   fold a short list of synonyms. Two words that are one word elsewhere
   ("file systems" / "filesystems") are joined.
4. Veto what makes two similar sentences different facts: different numbers,
   identifiers or flags on the two sides, negation on one side only, an
   antonym on each side ("enable"/"disable"), a preference or an order
   reversed ("X over Y" / "Y over X", "A before B" / "B before A"), a word
   substituted for another in the same place ("fails on macOS" / "fails on
   Windows": whatever the two words are, unless the synonym list folds them
   into one), or two short phrases trading places around the same words
   ("reads go to the replica and writes to the primary" / "writes go to the
   replica and reads to the primary"). The list of synonyms is short on
   purpose: a rewording with a synonym it lacks is stored twice, which costs
   a little space; a different fact merged into another is lost.
5. Decide on weighted term overlap (identifiers and numbers weigh double):
   one side's terms contained in the other's is a re-capture with words left
   out; terms missing on both sides need a high Dice coefficient, since in a
   short note each substituted word is likely a different fact.

Candidates come from an index of each memory's terms (see :func:`index_terms`
and ``memspool.store.memories``), never from a scan of the project.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import re
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Final, Literal, NamedTuple

from memspool.distill import words as vocab
from memspool.distill.blobs import without_blobs

__all__ = [
    "OVERLAP_RESTATED_SHARED",
    "PINNED_MIN_DICE",
    "RESTATED_MIN_SHARED",
    "TRIGRAM_BASELINE",
    "Comparison",
    "Profiles",
    "Relation",
    "Verdict",
    "adds_detail",
    "can_restate",
    "compare",
    "index_terms",
    "is_near_duplicate",
    "lookup_terms",
    "moves_a_setting",
    "names_the_moved_setting",
    "relate",
    "restating_line",
    "says_a_change",
    "says_more",
    "settings_apart",
    "trigram_jaccard",
    "values_of",
    "writes_a_setting",
]

#: The usual baseline (docs/distill.md, Near-duplicates): character-trigram Jaccard >= 0.7.
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
#: A :class:`Profiles` cache keeps this many texts' profiles, and this many
#: characters of text in all (a few MB: a long note never pins more).
CACHED_PROFILES: Final = 1024
CACHED_CHARS: Final = 4_000_000
#: Index at most this many terms per memory, and look up at most QUERY_TERMS
#: of a new note: enough for a long section, bounded for a huge one.
INDEX_TERMS: Final = 128
QUERY_TERMS: Final = 48
#: Word-order checks (substitution, swap) align the two notes' terms; beyond
#: this many terms a side (a long section, not a one-line fact) they are
#: skipped, which keeps the alignment cheap, and the Dice floor decides alone.
ALIGNED_TERMS: Final = 200
#: A swap moves short phrases ("the parent process" / "the worker"); longer
#: chunks trading places are a sentence turned round ("X is the right Y" /
#: "the right Y is X"), which says the same.
SWAP_MAX_TERMS: Final = 2
#: A term swapped for another is a substitution only in two texts that align
#: for at least this share of their terms (difflib's ratio): the same sentence
#: with a word changed. Below it, the two are one thing reworded or two things,
#: and the Dice floors and the identifier decide.
SUBSTITUTION_MIN_ALIGNED: Final = 0.5
#: ... as long as they share at least this many terms: two texts sharing fewer
#: may differ in nothing but the swapped word ("Always run `makemigrations
#: --check` ..." / "CI now runs `makemigrations --check` on Python 3.12."), and
#: the veto stands. Both bars were set on the tuning sessions' restatements.
REWORDED_MIN_SHARED: Final = 5
#: Kept in a note's term sequence (never among its terms): they attach a phrase
#: to a verb in the other role, so "B is restarted by A" and "B ships with A"
#: are not read as swaps of "A restarts B" and "A ships B".
_ROLE_MARKS: Final = frozenset({"by", "with"})

_CONTRACTIONS: Final = (
    (re.compile(r"\bcan'?t\b"), "can not"),
    (re.compile(r"\bwon'?t\b"), "will not"),
    (re.compile(r"\bshan'?t\b"), "shall not"),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"'(?:s|re|ve|ll|d|m)\b"), ""),
)
_TOKEN: Final = re.compile(r"(?<![\w-])--?[a-z][a-z0-9-]*|[a-z0-9_]+(?:[.-][a-z0-9_]+)*")
_DIGIT_ALPHA: Final = re.compile(r"(?<=\d)(?=[a-z])|(?<=[a-z])(?=\d)")

@lru_cache(maxsize=4096)
def _comparison_stem(word: str) -> str:
    # Lighter than the Porter stemmer search uses (memspool.base.porter): it maps
    # irregular forms first and keeps short words whole, so two notes compare by
    # what they say rather than by how FTS5 indexes them.
    if word in vocab.IRREGULAR:
        word = vocab.IRREGULAR[word]  # then stemmed as a regular word: chose -> choose -> choos
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix, replacement, min_left in vocab.SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= min_left:
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
    for group in vocab.SYNONYM_GROUPS:
        for word in group:
            table[_comparison_stem(word)] = _comparison_stem(group[0])
    return table


_SYNONYMS: Final = _build_synonyms()
#: (left word, right word, left term, right term): terms to match, words to tell.
_ANTONYM_TERMS: Final = tuple(
    (a, b, _SYNONYMS.get(_comparison_stem(a), _comparison_stem(a)),
     _SYNONYMS.get(_comparison_stem(b), _comparison_stem(b)))
    for a, b in vocab.ANTONYMS
)


def _canonical(word: str) -> str:
    stem = _comparison_stem(word)
    return _SYNONYMS.get(stem, stem)


_KEY_MARK: Final = re.compile(r"^-|[\d._]")


def _is_key(token: str) -> bool:
    """Identifiers, numbers and flags: the tokens that make a note about one thing."""
    return _KEY_MARK.search(token) is not None


def _pieces(token: str) -> list[str]:
    """One token as the words it stands for."""
    if token.startswith("-") or "." in token or "_" in token:
        return [token]  # a flag, a dotted or a snake_case name
    if "-" in token:
        parts = [part for part in token.split("-") if part]
        if parts and any(ch.isdigit() for ch in parts[-1]):
            return [token]  # an identifier: eu-west-1, utf-8, x86-64, 2026-11-29
        # Words joined for grammar: "case-insensitive", "60-second", "thirty-five".
        return [piece for part in parts for piece in _pieces(part)]
    if _is_key(token):
        return _DIGIT_ALPHA.split(token)  # "60s" -> "60", "s"; "sha256" -> "sha", "256"
    return [token]


def _number_at(words: list[str], start: int) -> tuple[int, int]:
    """(end, value) of the number words from ``start``; end == start when there are none."""
    if words[start] in vocab.WHOLE_NUMBERS:
        return start + 1, vocab.WHOLE_NUMBERS[words[start]]
    total = current = 0
    index = end = start
    while index < len(words):
        word, low = words[index], current % 100
        after_tens = low >= 20 and low % 10 == 0
        if word in vocab.UNITS and (low == 0 or (after_tens and vocab.UNITS[word] < 10)):
            current += vocab.UNITS[word]  # "five", or "five" after "thirty"
        elif word in vocab.TENS and low == 0:
            current += vocab.TENS[word]
        elif word in vocab.SCALES:
            scale = vocab.SCALES[word]
            if scale == 100:
                current = (current or 1) * scale
            else:
                total, current = total + (current or 1) * scale, 0
        elif word == "and" and index > start and index + 1 < len(words) and (
            words[index + 1] in vocab.UNITS or words[index + 1] in vocab.TENS
        ):
            index += 1  # "two hundred and five"
            continue
        else:
            break
        index += 1
        end = index
    return end, total + current


def _fold_numbers(words: list[str]) -> list[str]:
    folded: list[str] = []
    index = 0
    while index < len(words):
        end, value = _number_at(words, index)
        if end > index and words[index:end] != ["one"]:
            folded.append(str(value))
            index = end
        else:
            folded.append(words[index])
            index += 1
    return folded


def _negated(words: list[str]) -> bool:
    """A negation word that negates: "not just the 15" / "not only X but Y" add,
    they do not deny."""
    return any(word in vocab.NEGATIONS and not (word == "not" and nxt in vocab.ADDITIVE)
               for word, nxt in itertools.zip_longest(words, words[1:], fillvalue=""))


def _words(text: str) -> list[str]:
    """Surface tokens in order, normalised but not yet filtered."""
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    words: list[str] = []
    for found in _TOKEN.findall(text):
        for part in _pieces(found.strip("._") or found):
            words.extend(vocab.EXPANSIONS.get(part, (part,)))
    return _fold_numbers(words)


@dataclasses.dataclass(frozen=True)
class _Profile:
    terms: frozenset[str]
    keys: frozenset[str]
    #: Keys, plus "1" when the note says "one" (a stop word, but a number against another).
    numbers: frozenset[str]
    negated: bool
    preferences: frozenset[tuple[str, str]]
    #: Adjacent word pairs read as one word ("file systems" -> "filesystem"), with their parts.
    joined: Mapping[str, tuple[str, str]]
    #: The content terms in text order, with the _ROLE_MARKS where they stood; None when
    #: longer than ALIGNED_TERMS.
    sequence: tuple[str, ...] | None
    #: Every word in text order, stop words included (None when the sequence is).
    surface: tuple[str, ...] | None


def _content(word: str) -> bool:
    return ((len(word) > 1 or word.isdigit())
            and word not in vocab.COMPARISON_STOP_WORDS and word not in vocab.NEGATIONS)


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


class Profiles:
    """A bounded cache of note profiles, owned by whoever holds the store.

    A capture compares each note with several candidates and indexes it
    again, so the same texts are profiled many times within a call; a warm
    process reconciles against the same memories call after call. The cache
    keeps the most recently used profiles up to ``max_entries`` texts and
    ``max_chars`` characters in all, so it never grows with the store.
    """

    def __init__(self, max_entries: int = CACHED_PROFILES, max_chars: int = CACHED_CHARS) -> None:
        self.max_entries = max_entries
        self.max_chars = max_chars
        self._items: OrderedDict[str, _Profile] = OrderedDict()
        self._chars = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, text: str) -> _Profile:
        found = self._items.get(text)
        if found is not None:
            self._items.move_to_end(text)
            return found
        profile = _build_profile(text)
        if len(text) <= self.max_chars:
            self._items[text] = profile
            self._chars += len(text)
            while len(self._items) > self.max_entries or self._chars > self.max_chars:
                old, _ = self._items.popitem(last=False)
                self._chars -= len(old)
        return profile


def _profile(text: str, profiles: Profiles | None) -> _Profile:
    return _build_profile(text) if profiles is None else profiles.get(text)


def _build_profile(text: str) -> _Profile:
    words = _words(text)
    terms: set[str] = set()
    keys: set[str] = set()
    sequence: list[str] = []
    for word in words:
        if word in _ROLE_MARKS:
            sequence.append(word)
        if not _content(word):
            continue
        if _is_key(word):
            keys.add(word)
            terms.add(word)
            sequence.append(word)
            if "." in word or ("-" in word and not word.startswith("-")):
                terms.update(_canonical(p) for p in re.split(r"[.-]", word) if _content(p))
        else:
            term = _canonical(word)
            terms.add(term)
            sequence.append(term)
    content = [w for w in words if _content(w) and not _is_key(w)]
    joined = {
        _canonical(a + b): (_canonical(a), _canonical(b))
        for a, b in itertools.pairwise(content)
    }
    return _Profile(
        terms=frozenset(terms),
        keys=frozenset(keys),
        numbers=frozenset(keys | ({"1"} if "one" in words else set())),
        negated=_negated(words),
        preferences=frozenset(
            _relations(words, vocab.PREFERENCE_WORDS) | _relations(words, vocab.ORDER_WORDS)
        ),
        joined=joined,
        sequence=tuple(sequence) if len(sequence) <= ALIGNED_TERMS else None,
        surface=tuple(map(_canonical, words)) if len(sequence) <= ALIGNED_TERMS else None,
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
    #: Why the two cannot be one fact, in words (for reports and tests);
    #: ``veto_kind`` says the same for code to act on, never parsed from text.
    veto: str | None = None
    veto_kind: VetoKind | None = None
    #: For a ``substitution`` veto: the word on each side that stands in for the other.
    substituted: tuple[str, str] | None = None


#: The kinds of veto: other identifiers or numbers, a negation on one side,
#: antonyms, a preference or order reversed, a word substituted, phrases swapped.
VetoKind = Literal["numbers", "negated", "antonyms", "reversed", "substitution", "swapped"]
#: Vetoes that say the new text contradicts the old one.
_CONTRADICTING: Final = frozenset({"negated", "antonyms", "reversed"})


class _Veto(NamedTuple):
    kind: VetoKind
    text: str
    substituted: tuple[str, str] | None = None


def _join_compounds(a: _Profile, b: _Profile) -> tuple[set[str], set[str]]:
    """Terms of both sides, "file systems" read as "filesystems" where the other side has that."""
    a_terms, b_terms = set(a.terms), set(b.terms)
    for mine, other, profile in ((a_terms, b.terms, a), (b_terms, a.terms, b)):
        for joined, parts in profile.joined.items():
            if joined in other and joined not in mine:
                mine.add(joined)
                mine.difference_update(part for part in parts if part not in other)
    return a_terms, b_terms


def _substitution(
    a: tuple[str, ...], b: tuple[str, ...], a_terms: set[str], b_terms: set[str]
) -> tuple[str, str] | None:
    """A term of each side, absent from the other, standing in the same place.

    The two term sequences are aligned; where a run of one side was replaced
    by a run of the other, a new term on each side is a substitution ("on
    macOS" / "on Windows"). A term only moved elsewhere, or only added or
    left out, is not; nor is anything in two texts that share
    ``REWORDED_MIN_SHARED`` terms but align for less than
    ``SUBSTITUTION_MIN_ALIGNED`` of them: one fact said again in other words
    replaces runs of words everywhere, and a term of each side is always
    found in some run ("hardcoded"/"pls").
    """
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < SUBSTITUTION_MIN_ALIGNED \
            and len(a_terms & b_terms) >= REWORDED_MIN_SHARED:
        return None  # reworded: its replaced runs are other words, not a term swapped
    for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        if tag != "replace":
            continue
        a_new = [t for t in a[a_start:a_end] if t in a_terms and t not in b_terms]
        b_new = [t for t in b[b_start:b_end] if t in b_terms and t not in a_terms]
        if a_new and b_new:
            return a_new[0], b_new[0]
    return None


def _swapped(a: tuple[str, ...], b: tuple[str, ...], *, in_context: bool) -> bool:
    """Two short phrases trading places around the same words: P X F Y S / P Y F X S.

    ``in_context`` asks for P or S not to be empty: a bare "X F Y" / "Y F X"
    is often one clause turned round ("a 60-second API timeout" / "the API
    timeout is 60 seconds").
    """
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a_rest, b_rest = a[start : len(a) - end], b[start : len(b) - end]
    size = len(a_rest)
    if size != len(b_rest) or (in_context and not (start or end)):
        return False
    for x in range(1, SWAP_MAX_TERMS + 1):
        for y in range(1, SWAP_MAX_TERMS + 1):
            if x + y >= size:  # F, the words both phrases stand around, is not empty
                continue
            first, middle, last = a_rest[:x], a_rest[x : size - y], a_rest[size - y :]
            if b_rest == last + middle + first:
                return True
    return False


def _order_veto(a: _Profile, b: _Profile, a_terms: set[str], b_terms: set[str]) -> _Veto | None:
    """The same words in a different order, or a word standing in for another."""
    for left, right in a.preferences:
        if (right, left) in b.preferences and (left, right) not in b.preferences:
            return _Veto("reversed", "preference or order reversed")
    if a.sequence is None or b.sequence is None or a.surface is None or b.surface is None:
        return None
    # An alignment depends on which side comes first, and the verdict must
    # not: align in one fixed order whichever way round compare() was called.
    if (len(a.sequence), a.sequence) <= (len(b.sequence), b.sequence):
        substituted = _substitution(a.sequence, b.sequence, a_terms, b_terms)
    else:
        found = _substitution(b.sequence, a.sequence, b_terms, a_terms)
        substituted = None if found is None else (found[1], found[0])
    if substituted is not None:
        return _Veto("substitution", f"substitution {substituted[0]}/{substituted[1]}",
                     substituted)
    # Swapped among the content terms inside shared context, or word for word
    # with only the two phrases moved ("the parent process sends SIGTERM to the
    # worker" / "the worker sends SIGTERM to the parent process").
    if _swapped(a.sequence, b.sequence, in_context=True) or _swapped(
        a.surface, b.surface, in_context=False
    ):
        return _Veto("swapped", "phrases swapped")
    return None


def _veto(a: _Profile, b: _Profile, a_terms: set[str], b_terms: set[str]) -> _Veto | None:
    if (a.keys - b.numbers and b.numbers - a.numbers) or (
        b.keys - a.numbers and a.numbers - b.numbers
    ):
        return _Veto("numbers", "different identifiers or numbers")
    if a.negated != b.negated:
        return _Veto("negated", "negated on one side only")
    a_only, b_only = a_terms - b_terms, b_terms - a_terms
    for left_word, right_word, left, right in _ANTONYM_TERMS:
        if (left in a_only and right in b_only) or (right in a_only and left in b_only):
            return _Veto("antonyms", f"antonyms {left_word}/{right_word}")
    return _order_veto(a, b, a_terms, b_terms)


def _worded(terms: set[str]) -> set[str]:
    """``terms`` without bare numbers, when that leaves any."""
    worded = {term for term in terms if not term.isdigit()}
    return worded or terms


def compare(a: str, b: str, profiles: Profiles | None = None) -> Comparison:
    """Compare two note texts; ``duplicate`` is the verdict, the rest says why."""
    pa, pb = _profile(a, profiles), _profile(b, profiles)
    a_terms, b_terms = _join_compounds(pa, pb)
    shared = a_terms & b_terms
    if not shared:
        return Comparison(False, 0.0, 0.0, 0)
    if pa.sequence is None or pb.sequence is None:
        # Too long for the word-order checks, so the overlap decides alone: bare
        # numbers are a list's step numbers or a table's rows there, shared by two
        # runbooks of different services, and are left out of it.
        a_terms, b_terms = _worded(a_terms), _worded(b_terms)
        shared = a_terms & b_terms
        if not shared:
            return Comparison(False, 0.0, 0.0, 0)
    shared_weight = _weight(shared)
    a_weight, b_weight = _weight(a_terms), _weight(b_terms)
    dice = 2 * shared_weight / (a_weight + b_weight)
    containment = shared_weight / min(a_weight, b_weight)
    veto = _veto(pa, pb, a_terms, b_terms)
    if veto is not None:
        return Comparison(False, dice, containment, len(shared), veto.text, veto.kind,
                          veto.substituted)
    if len(shared) < MIN_SHARED_TERMS:
        duplicate = False
    elif a_terms <= b_terms or b_terms <= a_terms:
        duplicate = dice >= CONTAINED_MIN_DICE
    else:
        duplicate = dice >= OVERLAP_MIN_DICE
    return Comparison(duplicate, dice, containment, len(shared))


def adds_detail(old: str, new: str, profiles: Profiles | None = None) -> bool:
    """True when ``new`` says all ``old`` says and more (its terms strictly include old's)."""
    old_terms, new_terms = _profile(old, profiles).terms, _profile(new, profiles).terms
    return old_terms < new_terms


#: A text that holds this share of terms the other lacks says more than a rewording
#: does ("Under the systemd timer there's no `LANG`, so ..." beside "`main` now
#: begins with `setLocaleEncoding utf8`": the cause beside its fix).
MORE_SAID_SHARE: Final = 1 / 3


def says_more(old: str, new: str, profiles: Profiles | None = None) -> bool:
    """``new`` says more than ``old`` holds: a third or more of its terms are not
    ``old``'s, and its text is not already in ``old``."""
    if new.strip() in old:
        return False
    new_terms = _profile(new, profiles).terms
    if not new_terms:
        return False
    beyond = new_terms - _profile(old, profiles).terms
    return len(beyond) >= MORE_SAID_SHARE * len(new_terms)


def is_near_duplicate(a: str, b: str, profiles: Profiles | None = None) -> bool:
    """True when ``b`` is a reworded re-capture of the same fact as ``a``."""
    return compare(a, b, profiles).duplicate


def index_terms(text: str, limit: int = INDEX_TERMS, profiles: Profiles | None = None) -> list[str]:
    """The terms under which a memory is indexed for candidate lookup.

    Identifiers and numbers first, then longer words (more specific), so a
    bounded list keeps what a re-capture most likely repeats.
    """
    terms = _profile(text, profiles).terms
    ranked = sorted(terms, key=lambda term: (not _is_key(term), -len(term), term))
    return ranked[:limit]


def lookup_terms(text: str, profiles: Profiles | None = None) -> list[str]:
    """The terms of a new note to look candidates up by (a bounded :func:`index_terms`)."""
    profile = _profile(text, profiles)
    extra = sorted(profile.joined)  # "file systems" also looks up "filesystems"
    # `HOLD_TTL_MINUTES` also looks up the words it is made of, which a text that
    # says the setting in words ("the hold TTL at 7 minutes") is indexed under.
    parts = sorted({_canonical(part) for key in profile.keys if "_" in key.strip("_")
                    for part in key.split("_") if _content(part)})
    return index_terms(text, QUERY_TERMS, profiles) + extra[: max(0, QUERY_TERMS // 4)] \
        + parts[: max(0, QUERY_TERMS // 4)]


# --- how a new text relates to a memory -------------------------------------------------

#: What a new text is to an older one of the same project:
#: ``same``: the fact restated (a corroboration); ``more``: the fact with more said;
#: ``new-value``: the same subject with another value (a number, port, flag, version,
#: or a name in code); ``contradiction``: the same subject negated, reversed or turned
#: to its antonym; ``different``: another fact.
Relation = Literal["same", "more", "new-value", "contradiction", "different"]
#: Two texts share a subject when their terms overlap this much even though a
#: veto tells them apart (weighted Dice; see compare()).
CONTRADICTION_MIN_DICE: Final = 0.6
#: With the values masked, a new value's text must be this close to the old.
VALUE_CHANGE_MIN_DICE: Final = 0.7
#: A restatement in other words that shares an identifier with the memory (a
#: function, a flag, a file) is the same fact at this much overlap: the
#: identifier pins the subject that a generic wording would not.
RESTATED_MIN_DICE: Final = 0.5
#: How much lower the overlap may be when the two texts share an identifier.
_IDENTIFIER_EASING: Final = 0.25
#: The overlap two texts pinned to one subject by an identifier reach at least.
PINNED_MIN_DICE: Final = RESTATED_MIN_DICE - _IDENTIFIER_EASING
#: A value stands for the nearest content word before it, at most this many
#: words away ("--workers 4", "port 8080", "a limit of 512Mi").
_SLOT_REACH: Final = 3
#: The words before a value's word that say what it is about, and how many of
#: them two texts must share for a new value of the same subject.
_SLOT_CONTEXT: Final = 4
_SLOT_SHARED: Final = 2
_VALUE: Final = re.compile(r"^[-+]?\d[\w.:/-]*$")
_CODE_SPAN: Final = re.compile(r"`([^`\n]+)`")
#: The names a token gives before the call its value is given to.
_IDENTIFIER: Final = re.compile(r"[a-z_]\w*")
#: That call, in a token's shape: `from_secs(#`.
_CALL_SHAPE: Final = re.compile(_IDENTIFIER.pattern + r"\(#")
#: Words that announce a changed value in the text that says it.
_CHANGE: Final = re.compile(
    r"\b(?:now|no longer|from now on|(?:changed|moved|bumped|switched|raised|lowered|"
    r"increased|reduced|upgraded|downgraded|set) to)\b", re.IGNORECASE)
#: A move said outright: "from 43200 to 86400", "from moment.js to dayjs",
#: "from `memory = 1024` to `memory = 2048`", "`6` -> `12`", "1.79 → 1.80" (an
#: arrow between values only: "A -> B" of words is as often a flow as a change).
#: Searched with blobs read as ``<blob>`` (:mod:`memspool.distill.blobs`): a value
#: read from each digit of a long run reads on to the run's end, and the search's
#: time would grow with the square of the run.
_MOVED_WORD: Final = r"(?:`([^`\n]{1,80})`|([\w.:/@+-]*\w))"
_MOVED_VALUE: Final = r"`?([-+]?\d[\w.:/-]*)`?"
_TRANSITION: Final = re.compile(
    rf"\bfrom\s+{_MOVED_WORD}\s+to\s+{_MOVED_WORD}(?=[\s.,;:)]|$)"
    rf"|{_MOVED_VALUE}\s*(?:->|\u2192|=>)\s*{_MOVED_VALUE}(?=[\s.,;:)]|$)",
    re.IGNORECASE)
#: The words of a name in code: `HOLD_TTL_MINUTES`, `holdTtlMinutes`, `hold-ttl.minutes`.
_NAME_PART: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
#: A name of fewer parts ("`pool`") is a word the older text may use of anything.
_NAME_PARTS: Final = 2
#: A text that opens with a name in code: its subject ("`maxCacheAge` is now 72 hours").
_OPENING_NAME: Final = re.compile(r"\s*`([A-Za-z_][\w.]*)`")
#: A value said only as what was before names no subject of its own ("Batch size is
#: 64 (was 100 rows)" is not the rate limit of 100): the two texts share at least
#: the overlap of two texts pinned to one subject, and no word of one stands where
#: another word of the other does.
_BEFORE_MIN_DICE: Final = PINNED_MIN_DICE
#: The value a text gives as what was before, in brackets after the new one:
#: "`ORIGIN = 0x2000B000` (it was 0x20008000)", "300 a minute (was 100)".
_WAS: Final = re.compile(rf"\((?:(?:it|that|this)\s+)?(?:was|used to be)\s+{_MOVED_VALUE}",
                         re.IGNORECASE)
#: Words that say the later text moved something, said of the thing it moved:
#: "raised gunicorn to `--workers 5`", "300 a minute (was 100)", "is 15 now".
_ANNOUNCES: Final = re.compile(
    r"(?:\b(?:now|no longer|anymore|from now on|instead)\b|\(was\b|"
    r"\b(?:rais|lower|upp|bump|mov|chang|switch|upgrad|downgrad|increas|reduc|doubl|halv)"
    r"(?:e|es|ed|s|ing)?\b|\b(?:went|dropped)\b)", re.IGNORECASE)
#: Words that retire what they are said of: "we dropped Mailgun", "webpack is
#: removed", "`/healthz` is deprecated", "`orders-v1` is retired".
_RETIRES: Final = re.compile(
    r"\b(?:dropped|removed|gone|deprecated|retired|decommission\w*|replaced|no longer|"
    r"instead of|anymore)\b", re.IGNORECASE)
#: What is stripped from a word's ends before it is read.
_STRIP: Final = ".,;:()[]{}'\"`*"
#: Where a sentence of a memory ends, and the shortest one compared on its own.
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])|\n+")
_PART_MIN_CHARS: Final = 24
#: Terms a later text must share with the whole memory before its sentences are
#: compared one by one.
_PART_MIN_SHARED: Final = 3
#: Texts whose values and names are kept parsed (the same note meets many candidates).
_PARSED_TEXTS: Final = 1024
#: How many words from what retires it a retired name may be ("`orders-v1` is retired").
_RETIRE_REACH: Final = 3
#: Where a clause ends: a value is named by the words of its own clause only
#: ("Minimum iOS is 15 now; 14 users got the notice": 14 is not iOS's). A stop
#: with a letter or digit right after it is inside a name (`src/exit.zig`,
#: `Phoenix.PubSub`, 1.5), not at a clause's end.
_CLAUSE_END: Final = re.compile(r"(?<!\d)[;.!?](?!\w)|\s[-\u2014]\s|,\s")
#: The content words before a value that name it, and how far back they are looked for.
_NAMING_WORDS: Final = 3
_NAMING_REACH: Final = 4
#: A token with digits is a name with a value in it ("postgres:14", "-Xmx2g",
#: "orders-v1") when it has at least this many letters ("512Mi" is a size).
_NAME_LETTERS: Final = 3
#: What a value is read as when two texts are compared with their values masked.
_MASK_TOKEN: Final = "zzvalue"  # noqa: S105 - a placeholder word, not a secret


@dataclasses.dataclass(frozen=True)
class Verdict:
    """How a new text relates to an older one, and the comparison it rests on."""

    relation: Relation
    comparison: Comparison
    #: Each text holds a value the other lacks (a number, a version, a size), not
    #: only names of its own: what keeps a text from restating the other.
    values_clash: bool = False

    @property
    def replaces(self) -> bool:
        """The new text says the old one is no longer true."""
        return self.relation in ("new-value", "contradiction")

    @property
    def agrees(self) -> bool:
        """The new text states the old one's fact (in other words, or with more)."""
        return self.relation in ("same", "more")


@dataclasses.dataclass(frozen=True)
class _Slot:
    value: str
    #: The content terms just before the value's word (its subject: "api listen
    #: port"); for a setting written in code, the words of its clause around it.
    context: frozenset[str]
    #: For a setting written in code, the places its clause says it holds in.
    scope: frozenset[str] = frozenset()
    #: For a setting written in code, its name says whose setting it is by itself
    #: (:data:`_OWN_NAME`).
    named: bool = False


def _slots(text: str) -> dict[str, _Slot]:
    """Each value of ``text`` under the word it belongs to: {"--workers": "4"}, with the
    terms that lead up to that word."""
    # Whole tokens, not the comparison's pieces: "s1" is a name, never the value 1
    # of a slot "s".
    words = [w.strip(".,;:()[]{}'\"`") for w in text.lower().split()]
    words = [w for w in words if w and w not in vocab.COMPARISON_STOP_WORDS]
    found: dict[str, _Slot] = {}
    for index, word in enumerate(words):
        if not _VALUE.match(word):
            continue
        for back in range(index - 1, max(-1, index - 1 - _SLOT_REACH), -1):
            if not _VALUE.match(words[back]):
                lead = words[max(0, back - _SLOT_CONTEXT):back + 1]
                context = frozenset(_canonical(w) for w in lead
                                    if _content(w) and not _VALUE.match(w))
                found.setdefault(words[back], _Slot(word, context))
                break
    return found


def _values_differ(old: str, new: str) -> bool:
    """A slot both texts give a value, with another value on each side."""
    a, b = _slots(old), _slots(new)
    return any(a[slot].value != b[slot].value for slot in a.keys() & b.keys())


def _same_subject_new_value(old: str, new: str) -> bool:
    """A slot both texts give another value, said of the same subject: the terms that
    lead up to it are shared, and neither side names a subject the other lacks in
    their place ("the api listens on port 4000" / "the api now listens on port 4100",
    never "staging ... port 8080" / "prod ... port 9090")."""
    a, b = _slots(old), _slots(new)
    for slot in a.keys() & b.keys():
        if a[slot].value == b[slot].value:
            continue
        left, right = a[slot].context, b[slot].context
        if len(left & right) >= _SLOT_SHARED and not (left - right and right - left):
            return True
    return False


#: A setting written in code: the whole span is a name and its value (`workers: 3`,
#: `NODE_VERSION=20.11.1`, `--concurrency 8`, `memory = 2048`), or a span that is a
#: name with its value said just after it ("`NODE_VERSION` is 22.12.0").
_FLAG: Final = r"--?[a-z][\w.-]*"
#: A flag's name before its value, read shortest first (`-Xmx900m`), a colon in it
#: (`-XX:MaxRAMPercentage=75`).
_FLAG_BEFORE_VALUE: Final = r"--?[a-z][\w.:-]*?"
_PLAIN_NAME: Final = r"[a-z_][\w.-]*"
_SETTING_NAME: Final = rf"({_FLAG}|{_PLAIN_NAME})"
#: A name, then "=", ":" or a space, then its value: `memory = 2048`, `--concurrency 2`,
#: `threads: 8`; a flag's value may follow it at once (`-Xmx900m`: the flag's name is
#: read shortest first) and its name may hold a colon (`-XX:MaxRAMPercentage=75`), but
#: a name run into digits is a name (a commit `a3f9c21`, a host `enricher-1`), not a
#: setting.
_SETTING_SPAN: Final = re.compile(
    rf"^\s*(?:({_FLAG_BEFORE_VALUE})\s*[=:]?\s*|({_PLAIN_NAME})(?:\s*[=:]\s*|\s+))"
    r"[\"']?([-+]?\d[\w.:/-]*?)[\"']?[,;]?\s*$", re.IGNORECASE)
_NAME_SPAN: Final = re.compile(rf"^{_SETTING_NAME}$", re.IGNORECASE)
_VALUE_AFTER: Final = re.compile(
    r"^\s*(?:is|are|=|:|to|at)?\s*`?([-+]?\d[\w.:/-]*?)[.,;:)]?(?:\s|`|$)", re.IGNORECASE)


#: A setting's name that says whose setting it is by itself: one with a namespace,
#: parts joined by "." or ":" between letters (`datomic.objectCacheMax`,
#: `-XX:MaxRAMPercentage`, `spark.sql.shuffle.partitions`), or an environment
#: variable's, upper case words joined by "_" (`KELPMOOR_DB_POOL`): a process has
#: one environment. Not a name in lower case (`max_connections` of the primary and
#: of the replica).
_OWN_NAME: Final = re.compile(r"(?i:[a-z][.:][a-z])|^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")


@lru_cache(maxsize=_PARSED_TEXTS)
def _settings(text: str) -> dict[str, _Slot]:
    """The settings ``text`` writes in code, by name, each with its value and the
    content terms around it (its subject: "In staging, the redis client sets").
    Cached, so callers only read what it gives."""
    found: dict[str, _Slot] = {}
    for match in _CODE_SPAN.finditer(text):
        span = match.group(1)
        setting = _SETTING_SPAN.match(span)
        if setting is not None:
            name, value = setting.group(1) or setting.group(2), setting.group(3)
        elif _NAME_SPAN.match(span) and (said := _VALUE_AFTER.match(
                text[match.end():match.end() + 40])) is not None:
            name, value = span, said.group(1)
        else:
            continue
        if len(name.strip("-")) < _NAME_LETTERS:
            continue
        # Code spans left out (a "." in `cache.py` ends nothing): its sentence up to
        # it ("In staging, the api runs") and the rest of its clause ("... on the
        # replica"), of which the places it is said to hold in.
        lead = _SENTENCE_END.split(_CODE_SPAN.sub(" ", text[:match.start()]))[-1]
        rest = _CLAUSE_END.split(_CODE_SPAN.sub(" ", text[match.end():]))[0]
        scope = " ".join(_place(found) for found in _SCOPE.findall(f"{lead} {rest}"))
        found.setdefault(name.lower(), _Slot(value.lower(), _plain_words(f"{lead} {rest}"),
                                             _plain_words(scope),
                                             bool(_OWN_NAME.search(name.lstrip("-")))))
    return found


#: Where a setting is said to hold: the words after "in", "on", "for", ... ("In
#: staging", "on the replica", "for the EU cluster"), up to three, within its clause.
_SCOPE: Final = re.compile(
    r"\b(?:in|on|for|under|inside|within|across)\s+(?:(?:the|a|an|our|each|every|all)\s+)?"
    r"([\w'-]+(?:\s+[\w'-]+){0,2})", re.IGNORECASE)


def _place(words: str) -> str:
    """The place of the words after "in", "on", ...: up to the first function word
    after its own ("on Render is pinned by" is on Render; "for both services", for
    services), so the verb of the sentence is no part of where it holds."""
    kept: list[str] = []
    for word in words.split():
        if word.lower() in vocab.COMPARISON_STOP_WORDS:
            if kept:
                break
            continue
        kept.append(word)
    return " ".join(kept)


@lru_cache(maxsize=_PARSED_TEXTS)
def _code_pieces(text: str) -> frozenset[str]:
    """The words the names in ``text``'s code are made of (`roles/prometheus/defaults/
    main.yml`: role, prometheus, default, main, yml), as :func:`_plain_words` reads words."""
    pieces = (piece for span in _CODE_SPAN.findall(text)
              for piece in re.split(r"[^a-z]+", span.lower()))
    return frozenset(_canonical(piece) for piece in pieces if len(piece) >= _NAME_LETTERS
                     and _content(piece))


@lru_cache(maxsize=_PARSED_TEXTS)
def _plain_words(text: str) -> frozenset[str]:
    """The content terms of ``text`` outside its code, a possessive's "'s" left off."""
    words = (t.strip(_STRIP).removesuffix("'s") for t in _CODE_SPAN.sub(" ", text).lower().split())
    return frozenset(_canonical(w) for w in words if w and _content(w) and not _VALUE.match(w))


def moves_a_setting(old: str, new: str) -> bool:
    """Both texts write one setting in code (`workers: 2` / "`workers: 3` on CI"),
    each with a value the other does not give it, and not said of two subjects
    (:func:`_said_apart`: "In staging, ..." / "In production, ...", "... on the
    primary" / "... on the replica"): ``new`` gives the setting its new value,
    however the rest is worded."""
    a, b = _settings(old), _settings(new)
    for name in a.keys() & b.keys():
        if a[name].value == b[name].value or a[name].value in values_of(new):
            continue
        if not _said_apart(old, new, a[name], b[name]):
            return True
    return False


def _said_apart(old: str, new: str, left: _Slot, right: _Slot) -> bool:
    """A setting's two values each said to hold somewhere the other text does not
    name ("In staging, ..." / "In production, ..."), or, when the later text says
    no change, each said of something the other does not name around it ("Postgres
    listens on" / "Redis listens on"): two subjects. A later text that says the
    value moved ("The pod's limit is `3Gi` now") gives its own words around it to
    the report of the move, not to another subject, and so does one whose setting's
    name says whose setting it is by itself (:data:`_OWN_NAME`:
    `-Ddatomic.objectCacheMax`, `KELPMOOR_DB_POOL`): only a place tells two apart."""
    # A place or subject the other text names in code counts as named there: "in the
    # role defaults" is where `roles/prometheus/defaults/main.yml` is. A place both
    # settings are said to hold in is one place, however each text's words are read
    # ("in kas/cm4.yml" on both sides).
    theirs = _plain_words(new) | _code_pieces(new) | right.scope
    mine = _plain_words(old) | _code_pieces(old) | left.scope
    if left.scope - theirs and right.scope - mine:
        return True
    return not says_a_change(new) and not (left.named or right.named) \
        and bool(left.context - theirs and right.context - mine)


#: A code span that is a setting written as configuration is: a name, then "="
#: or ": " (a colon and a blank, as YAML and TOML tables write it), and its value
#: (`copyBatchSize = 20000`, `threads: 8`), or a flag and its value (`--concurrency
#: 2`, `-XX:MaxRAMPercentage=75`; flags each with its value, `--workers 2 --threads
#: 4`, by :data:`_WRITTEN_FLAG`). Not a name and a number read out of a report
#: ("`testDebugUnitTest`: 229 tests"), a package and its version (`wrenfold
#: 0.5.0`), an address or an image (`localhost:4100`, `postgres:16`), a place in a
#: file (`lexical.py:260`), or a commit (`commit: 3f9c21a`).
_WRITTEN_SETTING: Final = re.compile(
    rf"^\s*({_PLAIN_NAME}(?:\s*=\s*|:\s+))"
    r"[\"']?([-+]?\d[\w.:-]*?)[\"']?[,;]?\s*$", re.IGNORECASE)
#: One flag and its value, of a span of one or more (`--workers 2 --threads 4`).
#: Read in spans without blobs, as :data:`_TRANSITION` is searched: a flag's name
#: read from each dash of a long run (`a-a-a-...`) reads on to the run's end.
_WRITTEN_FLAG: Final = re.compile(
    rf"({_FLAG_BEFORE_VALUE})\s*[=:]?\s*[\"']?([-+]?\d[\w.:-]*?)[\"']?(?=\s|$)", re.IGNORECASE)
_HEX_RUN: Final = re.compile(r"^[0-9a-f]*[a-f][0-9a-f]*$")
#: A run of hex digits this long, a letter among them, is a commit, not a value.
_COMMIT_CHARS: Final = 7


def _written(span: str) -> list[tuple[str, str]]:
    """The (name, value) of each setting a code span writes as configuration does: a
    name and its value (:data:`_WRITTEN_SETTING`), or flags each with its value, the
    whole span (`--workers 2 --threads 4`, `-XX:MaxRAMPercentage=75`); else none."""
    found = _WRITTEN_SETTING.match(span)
    if found is not None:
        return [(found.group(1), found.group(2))]
    span = span.strip().rstrip(",;")
    flags, end = [], 0
    for flag in _WRITTEN_FLAG.finditer(span):
        if span[end:flag.start()].strip():
            return []
        flags.append((flag.group(1), flag.group(2)))
        end = flag.end()
    return flags if span[end:].strip() == "" else []


def writes_a_setting(text: str) -> bool:
    """``text`` writes a setting in code with its value, as configuration writes it
    (:func:`_written`), under a name of three letters or more."""
    return any(sum(ch.isalpha() for ch in name) >= _NAME_LETTERS and not (
        len(value) >= _COMMIT_CHARS and _HEX_RUN.match(value.lower()))
        for span in _CODE_SPAN.findall(without_blobs(text)) for name, value in _written(span))


def settings_apart(old: str, new: str) -> bool:
    """Both texts give one setting other values, each said of something the other
    does not name around it ("On the primary, `max_connections = 200`" / "On the
    replica, `max_connections = 400`"): two subjects, neither the other's new value."""
    a, b = _settings(old), _settings(new)
    for name in a.keys() & b.keys():
        if a[name].value != b[name].value and _said_apart(old, new, a[name], b[name]):
            return True
    return False


def says_a_change(text: str) -> bool:
    """``text`` says a value moved ("went from 5000 to 10000 ms", "is on 20 threads per
    process now", "Bumped to 8"): a word of change and a number it gives."""
    return bool(_ANNOUNCES.search(text) or _TRANSITION.search(without_blobs(text))) \
        and any(ch.isdigit() for ch in text)


def _code_words(text: str) -> set[str]:
    """The words of ``text``'s code spans that are names, not values: `--concurrency 8`
    gives ``--concurrency``, `rust-version = "1.80"` gives ``rust-version``."""
    found = set()
    for span in _CODE_SPAN.findall(text):
        for piece in re.split(r"[\s=:,()\[\]{}]+", span.lower()):
            word = piece.strip("'\"")
            if len(word) > 1 and not _VALUE.match(word) \
                    and word not in vocab.COMPARISON_STOP_WORDS:
                found.add(word)
    return found


def values_of(text: str) -> set[str]:
    """The values ``text`` states (numbers, versions, sizes), as written, lower case."""
    words = (w.strip(".,;:()[]{}'\"`") for w in text.lower().split())
    return {word for word in words if _VALUE.match(word)}


def _announced_new_value(old: str, new: str) -> bool:
    """The later text says a value changed ("is now `--concurrency 8`", "bumped to
    22.12.0") of a name in code the older one gives another value: the same subject,
    worded apart ("Production workers run with `--concurrency 4`")."""
    named_in_both = _code_words(old) & _code_words(new)
    if not _CHANGE.search(new) or not named_in_both:
        return False
    # The value that moved is named as one of the older text's is, or by the name
    # both put in code ("`.terraform-version` is 1.7.5 now"): a shared subject with
    # a value of another setting is two settings ("`supervisor-1` keeps `retry_after`
    # 90" / "`supervisor-1` now runs with `maxProcesses` 16").
    shared = {word.strip(".") for word in named_in_both}
    after_named = _named_values(new)
    if not any(a.names & b.names for a in _named_values(old) for b in after_named
               if a.value != b.value) and not any(b.names & shared for b in after_named):
        return False
    before, after = values_of(old), values_of(new)
    return bool(before) and bool(after - before)


def _said_words(text: str) -> set[str]:
    """``text``'s words as written, lower case, without the marks around them."""
    return {word.strip(_STRIP) for word in text.lower().split()}


def _moved_from(old: str, new: str) -> bool:
    """The later text says something moved ("goes from 43200 to 86400", "from moment.js
    to dayjs") away from what the older one states, to what it does not: the older
    text's value is the one replaced, whatever the words around it."""
    before = _said_words(old)
    for match in _TRANSITION.finditer(without_blobs(new)):
        start, end = (word.lower() for word in match.groups() if word is not None)
        # A setting in code on both sides ("`memory = 1024`" to "`memory = 2048`"):
        # what moved is the words that differ.
        start_words, end_words = start.split(), end.split()
        start = " ".join(w for w in start_words if w not in end_words).strip(_STRIP)
        end = " ".join(w for w in end_words if w not in start_words).strip(_STRIP)
        if start and end and start in before and end not in before:
            return True
    return False


def names_the_moved_setting(old: str, new: str) -> bool:
    """The later text moves a setting it names in code ("Bumped `HOLD_TTL_MINUTES` from
    7 to 9") away from the older text's value, and the older text says that setting in
    words ("the hold TTL at 7 minutes"): every part of the name, two or more, is a word
    of it. Or the later text opens with the name of a setting in code that the older
    text names in code too ("`maxCacheAge` is now 72 hours" / "older than 24 hours
    (`maxCacheAge`)"). A report of work done moves numbers of its own ("went from 48s
    to 3s"), named by nothing the older text says."""
    said = without_blobs(new)
    opening = _OPENING_NAME.match(said)
    if opening is not None and len(_NAME_PART.findall(opening.group(1))) >= _NAME_PARTS \
            and opening.group().strip() in old:
        return True
    words = _said_words(old)
    for match in _TRANSITION.finditer(said):
        if not _moved_from(old, match.group()):
            continue
        names = _CODE_SPAN.findall(_SENTENCE_END.split(said[:match.start()])[-1])
        parts = [part.lower() for part in _NAME_PART.findall(names[-1])] if names else []
        if len(parts) >= _NAME_PARTS and all(
                part in words or f"{part}s" in words or part.removesuffix("s") in words
                for part in parts):
            return True
    return False


def _said_as_before(old: str, new: str) -> bool:
    """The later text gives the older one's value as what it replaced ("`ORIGIN =
    0x2000B000` (it was 0x20008000)", "300 a minute (was 100)"), beside a value the
    older text does not hold."""
    before = _said_words(old)
    return any(match.group(1).lower().strip(_STRIP) in before
               and any(value not in before for value in values_of(new))
               for match in _WAS.finditer(without_blobs(new)))


def _clause_words(text: str) -> list[list[str]]:
    return [[w for w in (t.strip(_STRIP).lower() for t in clause.split()) if w]
            for clause in _CLAUSE_END.split(text)]


@dataclasses.dataclass(frozen=True)
class _Named:
    """A value as a text gives it: the names it goes by, and the content words of
    its clause that lead up to it (its subject: "staging api listens port")."""

    value: str
    names: frozenset[str]
    subject: frozenset[str]
    #: The word just after the value, when it is one of its names ("30 s", "4 workers").
    after: str = ""


def _shape(token: str) -> str:
    """A token with a value in it, its digits read as one: ``~postgres:#``."""
    return "~" + re.sub(r"\d+", "#", token)


@lru_cache(maxsize=_PARSED_TEXTS)
def _named_values(text: str) -> tuple[_Named, ...]:
    """The values ``text`` gives, each with its names: a token with a value in it
    by its shape ("postgres:14" is ``~postgres:#``), a number or version by the
    content words of its clause just before it and the word just after it ("the
    Redis pool size is 10 per worker": pool, size, redis, worker)."""
    found: list[_Named] = []
    for words in _clause_words(text):
        for index, word in enumerate(words):
            if not any(ch.isdigit() for ch in word):
                continue
            if not _VALUE.match(word):
                if sum(ch.isalpha() for ch in word) >= _NAME_LETTERS:
                    shape = _shape(word)
                    # A call's value is named by the call ("from_secs(#"), whatever
                    # it is reached through: `.busy_timeout(Duration::from_secs(5))`.
                    # Named so, it is said of the names the token gives before the
                    # call (`busy_timeout`), as a number is of the words before it.
                    call = _CALL_SHAPE.search(shape)
                    names = {shape} if call is None else {shape, "~" + call.group()}
                    said_of = frozenset() if call is None else frozenset(
                        _IDENTIFIER.findall(shape[:call.start()]))
                    found.append(_Named(word, frozenset(names), said_of))
                continue
            subject = frozenset(_canonical(w) for w in words[:index]
                                if w not in vocab.COMPARISON_STOP_WORDS and not _VALUE.match(w))
            lead: list[str] = []
            for back in range(index - 1, max(-1, index - 1 - _NAMING_REACH), -1):
                before = words[back]
                if before not in vocab.COMPARISON_STOP_WORDS and not _VALUE.match(before):
                    lead.append(_canonical(before))
                    if len(lead) == _NAMING_WORDS:
                        break
            after = words[index + 1] if index + 1 < len(words) else ""
            names = set(lead)
            if after and after not in vocab.COMPARISON_STOP_WORDS and not _VALUE.match(after):
                after = _canonical(after)
                names.add(after)
            else:
                after = ""
            found.append(_Named(word, frozenset(names), subject, after))
    return tuple(found)


@lru_cache(maxsize=_PARSED_TEXTS)
def _words_of(text: str) -> frozenset[str]:
    return frozenset(_canonical(w) for words in _clause_words(text) for w in words)


def _value_changed(old: str, new: str) -> bool:
    """The later text gives a new value to something the older one gives a value,
    and says so ("raised", "now", "(was 100)", "retired"): to a token of the same
    shape ("postgres:14" / "bumped the image to postgres:16") or to the same name
    ("gunicorn runs with `--workers 3`" / "raised gunicorn to `--workers 5`"),
    where neither side's subject holds a word the other text lacks ("staging api
    ... 8080" / "prod api now ... 9090")."""
    announced, retires = bool(_ANNOUNCES.search(new)), bool(_RETIRES.search(new))
    if not (announced or retires):
        return False
    before, after = _named_values(old), _named_values(new)
    old_words, new_words = _words_of(old), _words_of(new)
    announcing = {_canonical(m.group(0).lower()) for m in _ANNOUNCES.finditer(new)}
    for a in before:
        for b in after:
            shared = a.names & b.names
            if not shared or a.value == b.value:
                continue
            if not b.subject and shared <= {b.after}:
                # A value of no subject that shares only the word after it ("... 2
                # and 4 s and gives up" / "read timeout 30 s"): a unit, not a name.
                continue
            if any(name.startswith("~") for name in a.names):
                # One call reached through other names is the same one when the
                # names either side gives before it and the other does not are
                # words of the other text (`busy_timeout`).
                if _shape(a.value) not in b.names and not (
                        a.subject - b.subject <= _said_words(new)
                        and b.subject - a.subject <= _said_words(old)):
                    continue
                return True
            if not announced or b.value in {x.value for x in before if x.names & a.names}:
                continue
            if (a.subject - new_words) and (b.subject - announcing - old_words):
                continue  # two subjects, each with its own value
            return True
    return False


@lru_cache(maxsize=_PARSED_TEXTS)
def _proper_terms(text: str) -> frozenset[str]:
    """The names a text gives: code spans' and identifier-like words ("`/healthz`",
    "orders-v1", "moment.js") and capitalised words inside a sentence ("Mailgun")."""
    found: set[str] = set()
    for clause in _CLAUSE_END.split(text):
        for position, raw in enumerate(clause.split()):
            word = raw.strip(_STRIP)
            if len(word) < _NAME_LETTERS or word.lower() in vocab.COMPARISON_STOP_WORDS:
                continue
            coded = raw.startswith("`") or any(ch in word for ch in "./_-:@") \
                or any(ch.isdigit() for ch in word)
            proper = position > 0 and word[0].isupper() and word[1:].islower()
            if coded or proper:
                found.add(word.lower())
    return frozenset(found)


def _retired(old: str, new: str) -> bool:
    """The later text retires a name the older one gives ("we dropped Mailgun",
    "`/healthz` is deprecated"), the name within a few words of what retires it;
    an older text that retires something itself is a rule, not a value, and is
    not read this way."""
    if _RETIRES.search(old):
        return False
    names = _proper_terms(old)
    for clause in _CLAUSE_END.split(new):
        words = [w.strip(_STRIP).lower() for w in clause.split()]
        for cue in _RETIRES.finditer(clause):
            at = len(clause[:cue.start()].split())
            near = words[max(0, at - _RETIRE_REACH):at + _RETIRE_REACH + 1]
            if names & set(near):
                return True
    return False


def _masked(text: str) -> str:
    words = text.split()
    return " ".join(_MASK_TOKEN if _VALUE.match(w.strip("`,.;:()")) else w for w in words)


def _code_names(text: str) -> set[str]:
    return {_canonical(span.strip().lower()) for span in _CODE_SPAN.findall(text)}


def relate(old: str, new: str, profiles: Profiles | None = None) -> Verdict:
    """How ``new`` relates to ``old`` (see :data:`Relation`).

    Beyond what the wording shows: a later text that says something moved away
    from the older one's value (:func:`_moved_from`, or :func:`_said_as_before`:
    "(it was 0x20008000)", at an overlap of 0.25) or gives something of it a
    new value (:func:`_value_changed`) is its new value, even where the two read
    alike ("same"); one that retires a name of the older one (:func:`_retired`)
    is too, unless the two say the same thing; and one that restates a sentence
    of an older memory of several (:func:`_restates_a_part`) is the same fact.
    """
    comparison = compare(old, new, profiles)
    if _moved_from(old, new) or (
            comparison.dice >= _BEFORE_MIN_DICE and comparison.veto_kind in (None, "numbers")
            and _said_as_before(old, new)):
        return Verdict("new-value", comparison)
    relation = _relation(old, new, comparison, profiles)
    if relation in ("same", "more", "different") and (
            _value_changed(old, new) or moves_a_setting(old, new)
            or (relation != "same" and _retired(old, new))):
        relation = "new-value"
    if relation == "different" and comparison.shared >= _PART_MIN_SHARED \
            and _restates_a_part(old, new, profiles):
        relation = "same"
    return Verdict(relation, comparison, comparison.veto_kind == "numbers"
                   and _values_clash(old, new, profiles))


def _values_clash(old: str, new: str, profiles: Profiles | None) -> bool:
    """Each text holds a value the other does not (``16`` / ``32``): two texts that
    differ only in the names they mention beside their shared ones do not."""
    a, b = (frozenset(k for k in _profile(text, profiles).numbers if _VALUE.match(k))
            for text in (old, new))
    return bool(a - b) and bool(b - a)


#: A text that says it restates something said before ("per your rule", a person's
#: "remember ...") is that memory's fact when they share this many terms and the
#: smaller text's terms are this much in the other: a rule applied ("it uses named
#: exports only: `export function ListingCard`") shares few words with the rule.
RULE_RESTATED_SHARED: Final = 2
RULE_RESTATED_CONTAINMENT: Final = 0.3
#: A person's reminder is held to more: it can also be a new fact.
REMINDER_SHARED: Final = 3
REMINDER_CONTAINMENT: Final = 0.6
#: A later session's text that does not say it points back is held to more: this
#: many shared terms and this share of the two texts' weight. A rule said again in
#: passing ("I didn't run `connectedCheck`; the instrumented suite runs in the Test
#: Lab job") words it its own way, a negation on one side included, but keeps the
#: rule's names; a text about another subject seldom shares four of them.
OVERLAP_RESTATED_SHARED: Final = 4
OVERLAP_RESTATED_DICE: Final = 0.25
#: A text kept as a fact of its own, that says no such thing, is held to more
#: still: it is news until its words are mostly the older text's ("Rebuilt the
#: pve02 template with the same `packer@pve!build` token as every build; root@pam
#: isn't involved" of "never use root@pam for anything automated, builds go through
#: the `packer@pve!build` token"). Chosen on the tune sessions
#: (docs/benchmarks.md): from 0.40 down, later facts of the subject's area merged
#: into it (a new `values-prod.yaml` block into the memory of its old limit).
KEPT_RESTATED_DICE: Final = 0.45
#: What marks a text as said again: it points back at a rule, a person reminds,
#: or nothing does (only the overlap with the older text says so: "overlap" for a
#: text under the keep bar, "kept" for one kept as a fact of its own).
RestateBar = Literal["rule", "reminder", "overlap", "kept"]
#: The terms a text shares with the older one at each bar to restate it.
RESTATED_MIN_SHARED: Final[Mapping[RestateBar, int]] = {
    "rule": RULE_RESTATED_SHARED, "reminder": REMINDER_SHARED,
    "overlap": OVERLAP_RESTATED_SHARED, "kept": OVERLAP_RESTATED_SHARED}


def can_restate(text: str, bar: RestateBar) -> bool:
    """Whether ``text`` holds terms enough to say anything again at ``bar``: a
    restatement shares RESTATED_MIN_SHARED[bar] terms with what it says again (a
    compound read as one word counts once more), so a text with fewer ("Noted.",
    "Sure, on it.") restates nothing, whatever it is compared with."""
    profile = _build_profile(text)
    return len(profile.terms) + len(profile.joined) >= RESTATED_MIN_SHARED[bar]


def restates(verdict: Verdict, bar: RestateBar = "rule") -> Verdict | None:
    """A text that restates what was said before (the assistant applying a rule, a
    person reminding, or a later session saying it in words of its own; ``bar``),
    related to an older one by ``verdict`` (:func:`relate`): the verdict to merge it
    with (``same``: the memory keeps its text), or ``None``. A new value, a
    contradiction by an order or an antonym, or another value beside the older one's
    is never a restatement; other names beside the shared ones may be (a rule applied
    to new code: "Those two calls need to go through `transaction.on_commit`")."""
    if verdict.agrees:
        return verdict
    comparison = verdict.comparison
    # A text that says it keeps a rule ("as you wanted", "like always"), or that
    # reminds of one or says it back, and differs from it by a negation alone says it
    # in other words ("pnpm only, never npm" / "everything ran through pnpm, as you
    # wanted"; "always run `cargo fmt --check` before you push" / "I'll run it first
    # and only push once it reports no diff"): a contradiction says what changed.
    kept = bar in ("rule", "reminder") and verdict.relation == "contradiction" \
        and comparison.veto_kind == "negated"
    if (verdict.replaces and not kept) or comparison.veto_kind in ("reversed", "antonyms") \
            or verdict.values_clash:
        return None
    if comparison.shared < RESTATED_MIN_SHARED[bar]:
        return None
    if bar in ("overlap", "kept"):
        dice = KEPT_RESTATED_DICE if bar == "kept" else OVERLAP_RESTATED_DICE
        if comparison.dice < dice:
            return None
    elif comparison.containment < (REMINDER_CONTAINMENT if bar == "reminder"
                                   else RULE_RESTATED_CONTAINMENT):
        return None
    return Verdict("same", comparison)


def _parts(text: str) -> list[str]:
    """The sentences of ``text`` long enough to be compared on their own."""
    return [part for part in _SENTENCE_END.split(text) if len(part) >= _PART_MIN_CHARS]


#: At most this many sentences of a later note, and of the memory it is compared
#: with, are compared one by one (each pair is a :func:`relate`).
_SENTENCES_COMPARED: Final = 8


def restating_line(old: str, lines: list[str], bar: RestateBar,
                   profiles: Profiles | None = None, *,
                   relating: Callable[[str, str], Verdict] | None = None,
                   ) -> tuple[int, Verdict] | None:
    """The line of a later note (``lines``: its sentences, or its claims one a line)
    that says again what ``old``, or one sentence of it, says at ``bar``
    (:func:`restates`): a report that holds the earlier fact in one sentence beside
    news of its own, a person's rule said again beside a new request. Its index and
    the verdict of the closest pair (``same``), or ``None``; ``None`` too when any
    line gives ``old``, or a sentence of it, a new value. Values of the news beside
    the memory's are no clash: only the line that restates is held to the memory's
    values. At most _SENTENCES_COMPARED lines and sentences of ``old`` are read, each
    pair by ``relating`` when given (a caller's :func:`relate` that remembers pairs).
    """
    theirs = [old, *_parts(old)][:_SENTENCES_COMPARED + 1]
    best: tuple[int, Verdict] | None = None
    for index, said in enumerate(lines[:_SENTENCES_COMPARED]):
        if len(said) < _PART_MIN_CHARS:
            continue
        for part in theirs:
            related = relating(part, said) if relating else relate(part, said, profiles)
            if related.replaces:
                return None
            verdict = restates(related, bar)
            if verdict is not None and (best is None
                                        or verdict.comparison.dice > best[1].comparison.dice):
                best = (index, verdict)
    return None if best is None else (best[0], Verdict("same", best[1].comparison))


def _restates_a_part(old: str, new: str, profiles: Profiles | None) -> bool:
    """The later text restates one sentence of an older memory of several (a problem
    and its fix, a rule and its reason): the memory holds that fact already, and
    keeps its fuller text."""
    parts = _parts(old)
    if len(parts) < 2:  # one sentence is the whole, compared already
        return False
    # A sentence both texts hold word for word beside more of their own is their
    # shared context (the introduction of the list two items come from: "Both
    # changes are in `values-prod.yaml`:"), not a fact one says again.
    said = new.strip()
    parts = [part for part in parts if part.strip() == said or part.strip() not in said]
    # The later text is that sentence, reworded ("same"): one that holds a short
    # sentence and says much more besides ("more") restates nothing of the memory
    # ("Melanie: Wow, love that painting!" is in many a longer message).
    return any(_relation(part, new, compare(part, new, profiles), profiles) == "same"
               for part in parts)


def _relation(old: str, new: str, comparison: Comparison,  # noqa: PLR0911 - one per case
              profiles: Profiles | None) -> Relation:
    veto = comparison.veto_kind
    if comparison.duplicate:
        if _values_differ(old, new):
            return "new-value"
        return "more" if adds_detail(old, new, profiles) else "same"
    if veto == "numbers" or (veto is None and _values_differ(old, new)):
        masked = compare(_masked(old), _masked(new), profiles)
        near = masked.duplicate or (masked.veto_kind is None
                                    and masked.dice >= VALUE_CHANGE_MIN_DICE)
        return "new-value" if near or _same_subject_new_value(old, new) \
            or _announced_new_value(old, new) else "different"
    if veto == "substitution" and comparison.substituted is not None:
        # A name in code swapped for another (`celery` -> `dramatiq`) in the same
        # sentence: the subject's new value. A plain word swapped is another fact.
        left, right = comparison.substituted
        named = left in _code_names(old) and right in _code_names(new)
        return "new-value" if named and comparison.dice >= VALUE_CHANGE_MIN_DICE \
            else "different"
    if veto in _CONTRADICTING \
            and comparison.dice >= CONTRADICTION_MIN_DICE:
        return "contradiction"
    if veto is None or veto == "negated":
        # Reworded around the same identifier ("no `unwrap()` outside tests" / "never
        # call `unwrap()` but in tests"): the identifier pins the subject, so less of
        # the wording needs to be shared; a negation said one way or the other is
        # not, far apart, a contradiction.
        a, b = _profile(old, profiles), _profile(new, profiles)
        floor = RESTATED_MIN_DICE if veto is None else CONTRADICTION_MIN_DICE
        # A number pins no subject: two long texts share a "5" by chance.
        pinned = {key for key in a.keys & b.keys if not _VALUE.match(key)}
        # A negation on one side only, far apart, is no contradiction; nor, with so
        # few words shared, the same fact: "no menuconfig, we only commit
        # `sdkconfig.defaults`" / "`SLEEP_INTERVAL_S` is now 900 in `sdkconfig.defaults`"
        # say two things of one file. The identifier eases only unnegated wording.
        easing = _IDENTIFIER_EASING if veto is None else 0.0
        # Nor does a name pin the subject when one text gives a setting a value the
        # other never names, and no setting is written on both sides: "`profiles.yml`
        # and the `Warehouse` resource set static keys from the environment" /
        # "`profiles.yml` and the `Warehouse` resource: `memory_limit: '48GB'`" say
        # two things of the same two names.
        if not _settings(old).keys() & _settings(new).keys() and (
                _sets_what_is_unnamed(old, new) or _sets_what_is_unnamed(new, old)):
            easing = 0.0
        if pinned and comparison.dice >= floor - easing:
            return "same"
    return "different"


def _sets_what_is_unnamed(text: str, other: str) -> bool:
    """``text`` writes a setting in code with its value (:func:`_settings`) whose name
    ``other`` does not hold anywhere."""
    lowered = other.lower()
    return any(name not in lowered for name in _settings(text))


def _trigrams(text: str) -> set[str]:
    text = " ".join(text.lower().split())
    return {text[i : i + 3] for i in range(max(1, len(text) - 2))}


def trigram_jaccard(a: str, b: str) -> float:
    """The baseline: Jaccard similarity of character trigrams of the normalized texts."""
    ta, tb = _trigrams(a), _trigrams(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)
