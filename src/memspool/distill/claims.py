"""A message cut into claims: the sentences, list items and user statements a
decision is made on.

The minor pass decides per claim, not per message, so a chatty opener
("Found it.") or a list does not sink the facts beside it, and chatter never
rides along into a memory. A claim keeps what it needs to be read alone:

- ``previous``: the claim before it in the same message (a durable claim
  that opens with "It" or "This" takes its subject from there);
- ``intro``: the line that introduces its list ("The endpoint conventions
  here:"); that line is a claim too (``introduces``), judged like the others
  and taken along only when it is not chatter;
- ``heading``: the markdown heading it sits under.

Shapes: a paragraph gives one claim per sentence; a list gives one claim per
item (its nested lines included, a question it closes with apart, and a line
back at the margin after it a paragraph of its own); a fenced code block belongs to the claim
before it; a table row is an item introduced by the header row; quoted
lines (``>``) are a draft or a paste, never claims. A blob (a hash, a dump, an
encoded payload: :mod:`memspool.distill.blobs`) is read as ``<blob>``, so no
claim holds one and no pattern here reads one.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterator
from typing import Final, Literal

from memspool.distill.blobs import without_blobs

__all__ = ["CODE", "Claim", "ClaimKind", "asking", "claims", "sentences"]

ClaimKind = Literal["sentence", "item"]

_FENCE: Final = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING: Final = re.compile(r"^\s{0,3}#{1,6}\s+(?P<title>.*?)\s*#*\s*$")
_ITEM: Final = re.compile(r"^(?P<indent>\s*)(?:[-*+\u2022]|\d{1,3}[.)])\s+(?P<text>.*)$")
_QUOTE: Final = re.compile(r"^\s{0,3}>")
_TABLE_ROW: Final = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE: Final = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_RULE: Final = re.compile(r"^\s{0,3}(?:[-*_]\s*){3,}$")
#: Spans a sentence never ends inside: inline code, links, URLs, paths and
#: dotted names ("config.py", "os.rename", "3.11"), and common abbreviations.
_PROTECTED: Final = re.compile(
    r"`[^`\n]*`|\[[^\]\n]*\]\([^)\n]*\)|\b[a-z][a-z0-9+.-]*://\S+"
    r"|\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|resp|min|max|no|fig|ca)\.(?=\s)"
    r"|\b\w+(?:\.\w+)+\b",
    re.IGNORECASE,
)
#: A sentence ends at ., ! or ? (with closing quotes, brackets or emphasis)
#: followed by space. "Label: what it says" stays one sentence.
_BOUNDARY: Final = re.compile(r"[.!?][\"')\]*_]*(?P<space>\s+)(?=\S)")
#: A line that stands as its own sentence: a labelled line ("Fix: ...") or one
#: that ends a sentence.
_LINE_ENDS: Final = re.compile(r"[.!?:;]\s*$")
_LABEL_LINE: Final = re.compile(r"^\W{0,3}[A-Za-z][\w /-]{0,30}:\s")
#: A sentence that opens with a short label ("Root cause:", "Heads up for next
#: time:", "Right, that's the snag:") before what it says.
_LABELLED: Final = re.compile(
    r"^(?P<label>[^:`\n]{2,50}?:)\s+(?P<rest>(?:\S+\s+){3,}\S.*)$", re.DOTALL)
#: A label has at most this many words, and no number: "The api now listens on
#: port 4100:" is a statement that goes on, not a label.
_LABEL_WORDS: Final = 6
#: Code in a text: fenced blocks (one left open runs to the end) and inline spans.
CODE: Final = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`", re.DOTALL)
#: A mask character for protected spans while boundaries are looked for.
_MASK: Final = "\x00"


@dataclasses.dataclass(frozen=True)
class Claim:
    """One sentence or list item of a message, with what it needs to be read alone."""

    text: str
    kind: ClaimKind
    #: Position among the message's claims, and how many there are.
    index: int
    count: int
    previous: str = ""
    intro: str = ""
    heading: str = ""
    #: The message's first claim (its framing: "Found it.", "Let me check").
    opening: str = ""
    #: This sentence introduces the list that follows ("The conventions here:"): it
    #: is judged like any claim, but is only ever its items' context, never a note.
    introduces: bool = False
    #: Which block of the message (a paragraph, a list, a table) it is in.
    block: int = 0


@dataclasses.dataclass
class _Draft:
    text: str
    kind: ClaimKind
    intro: str = ""
    heading: str = ""
    #: A question an item closed with, set apart from it.
    asked: bool = False
    block: int = 0


def sentences(paragraph: str) -> list[str]:
    """The sentences of one paragraph, in order, whitespace collapsed.

    Inline code, links, URLs, dotted names and abbreviations never end a
    sentence; a sentence of chat that starts in lower case ("nice. heads-up
    though: ...") does.
    """
    text = " ".join(paragraph.split())
    if not text:
        return []
    masked = _PROTECTED.sub(lambda m: _MASK * len(m.group()), text)
    brackets = _Brackets(masked) if "(" in masked else None
    found: list[str] = []
    start = 0
    for boundary in _BOUNDARY.finditer(masked):
        if brackets is not None and brackets.hold(start, boundary.start("space")):
            continue
        piece = text[start:boundary.start("space")].strip()
        if piece:
            found.append(piece)
        start = boundary.end()
    tail = text[start:].strip()
    if tail:
        found.append(tail)
    return found


class _Brackets:
    """Which stops of a paragraph are inside a bracket opened since the sentence began
    and closed later in the paragraph: "(Riverside, St. Bride's open day)" and "(see
    the logs. all of them)" are asides of their sentence, not its end. A bracket never
    closed ("(not by me") holds no sentence back. Each character is read once, however
    many stops a long aside holds."""

    def __init__(self, masked: str) -> None:
        self._masked = masked
        # The brackets open before each position, closes counted whatever opened them;
        # and the fewest open from each position on.
        self._level = [0, *itertools.accumulate((c == "(") - (c == ")") for c in masked)]
        self._lowest = list(itertools.accumulate(reversed(self._level), min))[::-1]
        self._start = self._read = self._depth = 0

    def hold(self, start: int, end: int) -> bool:
        """Whether the stop at ``end``, in the sentence begun at ``start``, is inside."""
        if start != self._start:
            self._start, self._read, self._depth = start, start, 0
        for char in self._masked[self._read:end]:
            self._depth = self._depth + 1 if char == "(" else max(self._depth - (char == ")"), 0)
        self._read = end
        # Closed later: somewhere after the stop, the level falls by the depth open at it.
        return self._depth > 0 and self._lowest[end + 1] <= self._level[end] - self._depth


def _paragraph_lines(lines: list[str]) -> Iterator[str]:
    """A paragraph's lines joined into runs: a line that ends a sentence, or a
    labelled line ("Fix: ..."), stands apart from the next."""
    run: list[str] = []
    for line in lines:
        stripped = line.strip()
        if run and _LABEL_LINE.match(stripped):
            yield " ".join(run)
            run = []
        run.append(stripped)
        if _LINE_ENDS.search(stripped):
            yield " ".join(run)
            run = []
    if run:
        yield " ".join(run)


def _blocks(text: str) -> Iterator[tuple[str, list[str]]]:
    """(kind, lines) of the message: heading, paragraph, list, code, table, quote."""
    lines = text.replace("\r\n", "\n").split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip() or _RULE.match(line):
            index += 1
            continue
        if _FENCE.match(line):
            fence = _FENCE.match(line).group(1)  # type: ignore[union-attr]
            end = index + 1
            while end < len(lines) and not lines[end].lstrip().startswith(fence):
                end += 1
            yield "code", lines[index:end + 1]
            index = end + 1
            continue
        if _HEADING.match(line):
            yield "heading", [line]
            index += 1
            continue
        kind = ("list" if _ITEM.match(line) else "table" if _TABLE_ROW.match(line)
                else "quote" if _QUOTE.match(line) else "paragraph")
        end = index + 1
        while end < len(lines):
            nxt = lines[end]
            if not nxt.strip():
                # A list goes on past a blank line when the next line is an item
                # or indented under one.
                after = next((ln for ln in lines[end + 1:] if ln.strip()), "")
                if kind == "list" and (_ITEM.match(after) or after[:1].isspace()):
                    end += 1
                    continue
                break
            if _FENCE.match(nxt) or _HEADING.match(nxt):
                break
            if _ends_block(kind, nxt, lines[end + 1:]):
                break
            end += 1
        yield kind, lines[index:end]
        index = end


def _ends_block(kind: str, line: str, rest: list[str]) -> bool:
    """Whether ``line`` (not blank; ``rest``: the lines after it) starts a block of
    another kind after a ``kind`` block. A line back at the margin after a list's
    last item is a paragraph of its own: the next thought ("and fyi ...", "Want me
    to tag it?"); one with more items after it, before a blank line, goes on with
    the item above it ("- set `--max-surge 1`" / "because the pool is full" / "- ...")."""
    if kind == "paragraph":
        return bool(_ITEM.match(line) or _TABLE_ROW.match(line))
    if kind == "table":
        return not _TABLE_ROW.match(line)
    if kind == "quote":
        return not _QUOTE.match(line)
    if _ITEM.match(line) or line[:1].isspace():  # indented: a no-break space too
        return False
    following = itertools.takewhile(str.strip, rest)
    return not any(_ITEM.match(after) for after in following)


def _items(lines: list[str]) -> Iterator[str]:
    """Top-level list items, each with its nested lines."""
    margin: int | None = None
    current: list[str] = []
    for line in lines:
        match = _ITEM.match(line)
        if match is not None and (margin is None or len(match.group("indent")) <= margin):
            margin = len(match.group("indent")) if margin is None else margin
            if current:
                yield " ".join(current)
            current = [match.group("text").strip()]
        elif line.strip():
            nested = _ITEM.match(line)
            current.append(nested.group("text").strip() if nested else line.strip())
    if current:
        yield " ".join(current)


def asking(text: str) -> bool:
    """Whether ``text`` ends in a question mark outside code (emphasis and closing
    backticks aside): "the rows are still missing?" asks; "`Order#refundable?`"
    names a method."""
    return CODE.sub(" ", text).rstrip("*_` ")[-1:] == "?"


def _item_drafts(item: str, intro: str, heading: str) -> list[_Draft]:
    """A list item, and apart from it the questions it ends with ("`LIMIT = 4` now,
    in `config.ts`. Should I migrate the old rows too?"): the item states what it
    states; its closing question is a claim of its own, one that states nothing."""
    said = sentences(item)
    asked = len(said)
    while asked > 1 and asking(said[asked - 1]):
        asked -= 1
    if asked == len(said) or asking(said[asked - 1]):
        return [_Draft(item, "item", intro, heading)]
    # Cut the item where its first question starts, so the statement keeps its own
    # spacing (``sentences`` collapses it, inside code spans too).
    first = re.compile(r"\s+".join(map(re.escape, said[asked].split())))
    starts = [found.start() for found in first.finditer(item)]
    stated = item[:starts[-1]].rstrip() if starts else " ".join(said[:asked])
    return [_Draft(stated, "item", intro, heading),
            *(_Draft(question, "sentence", "", heading, asked=True)
              for question in said[asked:])]


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _attach_code(drafts: list[_Draft], code: str) -> None:
    """The claim before a code block is what the code shows ("Set it in X:"); after an
    item's closing question, the item."""
    if not drafts:
        return
    at = len(drafts) - 1
    while at and drafts[at].asked:
        at -= 1
    drafts[at] = dataclasses.replace(drafts[at], text=f"{drafts[at].text}\n{code}")


def _drafts(text: str) -> list[_Draft]:
    drafts: list[_Draft] = []
    heading = ""
    pending_intro = ""
    starts: list[int] = []  # where each block's drafts start
    for kind, lines in _blocks(text):
        starts.append(len(drafts))
        if kind == "heading":
            match = _HEADING.match(lines[0])
            heading = match.group("title").strip() if match else ""
            pending_intro = ""
            continue
        if kind == "quote":
            pending_intro = ""
            continue
        if kind == "code":
            _attach_code(drafts, "\n".join(lines).strip())
            pending_intro = ""
            continue
        if kind == "list":
            drafts.extend(draft for item in _items(lines) if item.strip()
                          for draft in _item_drafts(item, pending_intro, heading))
            pending_intro = ""
            continue
        if kind == "table":
            rows = [ln for ln in lines if not _TABLE_RULE.match(ln)]
            header = " | ".join(_cells(rows[0])) if len(rows) > 1 else ""
            cells = [" | ".join(c for c in _cells(row) if c) for row in rows[1 if header else 0:]]
            drafts.extend(_Draft(row, "item", header or pending_intro, heading)
                          for row in cells if row.strip())
            pending_intro = ""
            continue
        said = [s for run in _paragraph_lines(lines) for s in sentences(run)]
        if not said:
            continue
        for sentence in said[:-1] if said[-1].endswith(":") else said:
            label = _LABELLED.match(sentence)
            if label is not None and len(label.group("label").split()) <= _LABEL_WORDS \
                    and not any(ch.isdigit() for ch in label.group("label")):
                # "Heads up for next time: the stubs ...": the label is a claim of its
                # own, judged apart, and the statement's intro if it is not chatter.
                drafts.append(_Draft(label.group("label"), "sentence", "", heading))
                drafts.append(_Draft(label.group("rest"), "sentence", label.group("label"),
                                     heading))
            else:
                drafts.append(_Draft(sentence, "sentence", "", heading))
        if said[-1].endswith(":"):
            drafts.append(_Draft(said[-1], "sentence", "", heading))
        # "The conventions here:" introduces what follows: a list takes it as its
        # intro; anything else keeps it as a sentence of its own.
        pending_intro = said[-1] if said[-1].endswith(":") else ""
    return _numbered(drafts, starts)


def _numbered(drafts: list[_Draft], starts: list[int]) -> list[_Draft]:
    """``drafts``, each given the number of the block it was made in (``starts``: the
    index of each block's first draft, in order)."""
    for block, (start, end) in enumerate(itertools.pairwise([*starts, len(drafts)])):
        for draft in drafts[start:end]:
            draft.block = block
    return drafts


def claims(text: str) -> list[Claim]:
    """The claims of one message, in order."""
    drafts = _drafts(without_blobs(text))
    intros = {draft.intro for draft in drafts if draft.intro}
    count = len(drafts)
    opening = drafts[0].text if drafts else ""
    found: list[Claim] = []
    for index, draft in enumerate(drafts):
        previous = drafts[index - 1].text if index else ""
        found.append(Claim(text=draft.text, kind=draft.kind, index=index, count=count,
                           previous=previous, intro=draft.intro, heading=draft.heading,
                           opening=opening, block=draft.block,
                           introduces=draft.kind == "sentence" and draft.text in intros))
    return found
