"""What the claim model sees: of a message, its framing; of a claim, its words and place.

Two views, one per stage of the model (:mod:`memspool.distill.claim_model`):

- :func:`message_features`: the whole message: its words and word pairs,
  how it opens and ends, its cue phrases, whether it asks, how many of its
  sentences the writer speaks of themself in, its lists and code. A plan,
  a guess, a question or a report of work done is told by its framing,
  whatever facts it mentions along the way;
- :func:`features`: one claim: its words, cue phrases (at its start or
  anywhere), shape, place in the message, its list's introduction, the
  claim before it.

Every feature is a string; the model holds a weight per string it was
trained with and ignores the rest. Code
spans, numbers and paths are read as their kind (``<code>``, ``<num>``,
``<path>``), so a fact about ``pool_pre_ping`` and one about ``--workers 4``
look alike to it: what carries the decision is the wording around them. A
blob (a run of characters too long to be a name: :mod:`memspool.distill.blobs`)
is read as ``<blob>``, a word the model has no weight for.

Cue phrases live in ``cues.txt`` beside this module, one per line, each
with the id of a labelled example that contains it
(``scripts/train_claim_model.py`` refuses a cue its example does not hold).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from functools import cache
from importlib.resources import files
from typing import Final

from memspool.distill.blobs import without_blobs
from memspool.distill.claims import CODE, Claim, asking

__all__ = ["CUES_FILE", "asks", "cues", "features", "message_features", "tokens"]

CUES_FILE: Final = "cues.txt"
#: Claim lengths in words, as buckets: a two-word "Found it." and a 40-word
#: diagnosis are different kinds of sentence.
_LENGTHS: Final = (3, 7, 15, 30)
_PATH: Final = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+|(?:\.{0,2}/)?[\w.-]+/[\w./-]+|\b\w+\.\w{1,4}\b",
                          re.IGNORECASE)
_NUMBER: Final = re.compile(r"(?<![\w.])[-+]?\d[\d,._]*(?:[a-z]{1,3}\b)?", re.IGNORECASE)
_FLAG: Final = re.compile(r"(?<![\w-])--?[a-z][a-z0-9-]*", re.IGNORECASE)
_WORD: Final = re.compile(r"<[a-z]+>|[a-z][a-z'-]*")
_LIST_MARK: Final = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+")
#: A claim opens with the writer speaking of themself ("I'll", "let's", "we"):
#: the share of such claims in a message, in quarters, is a feature of it.
_SELF: Final = frozenset({"i", "i'll", "i'm", "i've", "i'd", "let's", "let", "we", "we'll",
                          "we're", "we've", "my"})


def tokens(text: str) -> list[str]:
    """The claim's words, lower case, with code, paths, flags, numbers and blobs as their
    kind. Blobs first: the patterns after it then never meet a run longer than
    BLOB_CHARS, over which the path pattern's time grows with the run's square."""
    text = CODE.sub(" <code> ", without_blobs(text))
    text = _PATH.sub(" <path> ", text)
    text = _FLAG.sub(" <flag> ", text)
    text = _NUMBER.sub(" <num> ", text)
    return _WORD.findall(text.lower().replace("\u2019", "'"))


@cache
def cues() -> dict[str, str]:
    """The cue phrases (lower case) and the group of each."""
    raw = files("memspool.distill").joinpath(CUES_FILE).read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for line in raw.splitlines():
        if line.strip() and not line.startswith("#"):
            phrase, group, _ = line.split("\t")
            found[phrase.strip().lower()] = group.strip()
    return found


@cache
def _cue_pattern() -> re.Pattern[str]:
    ordered = sorted(cues(), key=lambda cue: (-len(cue), cue))
    alternatives = "|".join(re.escape(cue) for cue in ordered)
    return re.compile(rf"(?<![a-z])(?:{alternatives})(?![a-z])")


def _lowered(text: str) -> str:
    return " ".join(text.lower().replace("\u2019", "'").split())


def _cue_features(text: str, prefix: str, *, starts: bool = False,
                  count: bool = False) -> set[str]:
    """``prefix:phrase`` and ``prefix-group:group`` for each cue in ``text``; with
    ``starts``, also ``prefix^:...`` for the cue the text opens with; with ``count``,
    how many of each group (1, 2, 3 or more) instead of the phrases."""
    lowered = _lowered(text)
    groups = cues()
    found: set[str] = set()
    tally: Counter[str] = Counter()
    for match in _cue_pattern().finditer(lowered):
        phrase = match.group()
        tally[groups[phrase]] += 1
        if not count:
            found.add(f"{prefix}:{phrase}")
            found.add(f"{prefix}-group:{groups[phrase]}")
        if starts and not lowered[: match.start()].strip(" *_>#`\"'([-"):
            found.add(f"{prefix}^:{phrase}")
            found.add(f"{prefix}^group:{groups[phrase]}")
    if count:
        found.update(f"{prefix}-groups:{group}:{min(n, 3)}" for group, n in tally.items())
    return found


def message_features(text: str, found: list[Claim], role: str) -> list[str]:
    """The features of a whole message (``found``: its claims) said by ``role``."""
    words = tokens(text)
    names: set[str] = {"bias", f"role:{role}"}
    names.update(f"w:{word}" for word in words)
    names.update(f"b:{a}_{b}" for a, b in itertools.pairwise(words))
    names.update(_starts("s", words))
    names.update(_cue_features(text, "cue"))
    names.update(_cue_features(text, "mcue", count=True))
    if "?" in CODE.sub("", text):
        names.add("has:?")
    if "```" in text:
        names.add("has:block")
    if found:
        names.update(_cue_features(found[0].text, "ocue", starts=True))
        last = tokens(found[-1].text)
        names.update(f"l{n}:{'_'.join(last[:n])}" for n in (1, 2) if len(last) >= n)
        own = sum(1 for c in found if (tokens(c.text)[:1] or [""])[0] in _SELF)
        names.add(f"self:{round(4 * own / len(found))}")
        opening = Counter(group for c in found for group in _opening_groups(c.text))
        names.update(f"opens:{group}:{round(4 * n / len(found))}"
                     for group, n in opening.items())
        if any(c.kind == "item" for c in found):
            names.add("has:list")
        for claim in found:
            if claim.intro:
                names.update(_cue_features(claim.intro, "icue"))
    if role != "assistant":
        # A prompt is another kind of message (a request, a question, now and then
        # a rule of the user's): its features weigh apart from a reply's.
        return sorted(f"{role}:{name}" for name in names)
    return sorted(names)


def _opening_groups(text: str) -> set[str]:
    """The groups of the cues a claim opens with."""
    return {name.split(":", 1)[1] for name in _cue_features(text, "c", starts=True)
            if name.startswith("c^group:")}


def _bucket(count: int) -> str:
    for limit in _LENGTHS:
        if count <= limit:
            return f"len:{limit}"
    return "len:more"


def _starts(prefix: str, words: list[str]) -> list[str]:
    return [f"{prefix}{n}:{'_'.join(words[:n])}" for n in (1, 2, 3) if len(words) >= n]


def _ending(text: str) -> str:
    return text.rstrip("*_` ")[-1:]


def asks(claim: Claim) -> bool:
    """Whether ``claim`` is a question ("the rows are still missing?", "way bigger per
    gpu right?"). A question states nothing: it is never a fact, whoever asks it,
    however much of the subject it names (the claim model also reads the mark, as
    ``ends:?``, and learns its weight, which a project's words can outweigh). A
    question mark inside code (`` `Order#refundable?` ``) asks nothing."""
    return asking(_LIST_MARK.sub("", claim.text))


def _shape(text: str, words: list[str], claim: Claim) -> list[str]:
    """How the claim ends, what it holds, and where it stands in its message."""
    found: list[str] = []
    ending = _ending(text)
    if ending in ("?", ":", "!"):
        found.append(f"ends:{ending}")
    kinds = (("has:code", "<code>" in words), ("has:block", "```" in text),
             ("has:num", "<num>" in words),
             ("has:ident", "<flag>" in words or "<path>" in words))
    found.extend(name for name, present in kinds if present)
    if claim.count == 1:
        found.append("pos:only")
    elif claim.index == 0:
        found.append("pos:first")
    elif claim.index == claim.count - 1:
        found.append("pos:last")
    return found


def features(claim: Claim, role: str) -> list[str]:
    """The features of ``claim`` said by ``role`` (``assistant`` or ``user``)."""
    text = _LIST_MARK.sub("", claim.text)
    words = tokens(text)
    found: list[str] = ["bias", f"role:{role}", f"kind:{claim.kind}", _bucket(len(words))]
    found.extend(f"w:{word}" for word in set(words))
    found.extend(f"b:{a}_{b}" for a, b in set(itertools.pairwise(words)))
    starts = _starts("s", words)
    found.extend(starts)
    matched = _cue_features(text, "cue", starts=True)
    found.extend(matched)
    # The same openers and cues weigh differently in a user's prompt (a request)
    # than in the assistant's reply: a copy of them marked with the role.
    found.extend(f"{role}:{name}" for name in (*starts, *matched))
    found.extend(_shape(text, words, claim))
    if claim.intro:
        found.append("has:intro")
        found.extend(f"i:{word}" for word in set(tokens(claim.intro)))
    if claim.previous:
        found.extend(_starts("p", tokens(claim.previous))[:2])
    if claim.opening and claim.index:
        found.extend(_starts("o", tokens(claim.opening))[:2])
    if claim.heading:
        found.extend(f"h:{word}" for word in set(tokens(claim.heading)))
    return found
