"""Secret redaction: every slice and every captured payload passes through here.

:func:`redact` replaces each secret it recognises with ``[REDACTED:<family>]`` and counts
them per family. It works on text as it sits in a JSONL transcript (inside JSON strings,
escaped once or twice) and never breaks the JSON around a secret: a replacement holds no
quote or backslash, and no match ends inside an escape sequence or takes a closing quote.
A second pass changes nothing.

How it stays fast on the ~200 KB slices the drainer hands it: one regular expression made of
every rule's triggers (short literals, see :mod:`memspool.redact.rules`) scans the text once;
only where a trigger sits is a rule tried, anchored, with bounded repetition. Text a finding
covers is settled: inside it only rules that outrank the finding are tried, found by a scan
of their own triggers, so a long secret full of triggers (``password=password=...``) is
judged once, not once per trigger. A bare value rejected on its content settles its text
the same way (``token=token=...``, see :class:`_Claims`). The work is linear in the text,
and no input makes a pattern backtrack catastrophically.

A redaction marker is neither a secret nor the name that finds one: in
``https://[REDACTED:github]@host`` there is no URL password, so a second pass changes
nothing.

What no rule recognises goes through unchanged: a pasted secret must be treated as exposed.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from typing import Final

from memspool.redact.normal import view
from memspool.redact.rules import (
    BARE_RUN,
    CONTEXT,
    CONTEXT_RULES,
    FORMAT,
    GENERIC,
    GENERIC_RULES,
    MARKER_NAME_MAX,
    TRAILING_NAME,
    Rule,
    secret_span,
)
from memspool.redact.rules_commands import COMMAND_RULES
from memspool.redact.rules_vendor import VENDOR_RULES

__all__ = ["FAMILIES", "RULES", "redact", "replacement"]

#: Every rule, in the order tried at a shared trigger: vendor formats, commands' and files'
#: own places, then context, then names.
RULES: Final[tuple[Rule, ...]] = VENDOR_RULES + COMMAND_RULES + CONTEXT_RULES + GENERIC_RULES

#: Every family name a count may carry, sorted.
FAMILIES: Final[tuple[str, ...]] = tuple(sorted({rule.family for rule in RULES}))


def replacement(family: str) -> str:
    """The text a secret of ``family`` becomes."""
    return f"[REDACTED:{family}]"


#: What :func:`replacement` writes; its longest form bounds the look around a match.
_MARKER: Final = re.compile(rf"\[REDACTED:[a-z_]{{1,{MARKER_NAME_MAX}}}\]")
_MARKER_MAX: Final = len("[REDACTED:]") + MARKER_NAME_MAX
#: How far a trigger reaches past its first character: the longest literal (16) and the
#: longest guard's look-ahead (32 hex digits after ``AC`` or ``SK``), with room to spare.
_TRIGGER_REACH: Final = 64
#: A shorter run holds no glued name and value worth skipping: not worth a claim.
_CLAIM_MIN: Final = 64
#: The longest name and operator :data:`~memspool.redact.rules.TRAILING_NAME` takes.
_TRAILING_NAME_MAX: Final = 128


def _trigger_table(
    rules: tuple[Rule, ...],
) -> tuple[re.Pattern[str], dict[str, tuple[Rule, ...]]]:
    guards: dict[str, set[str]] = {}
    for rule in rules:
        for literal, guard in rule.triggers:
            guards.setdefault(literal, set()).add(guard)
    # A literal's rules include those of every shorter trigger it begins with: where two
    # triggers start at one place, the regex reports only the longer one.
    table = {
        literal: tuple(
            rule for rule in rules if any(literal.startswith(t) for t, _ in rule.triggers)
        )
        for literal in guards
    }
    by_first: dict[str, list[str]] = {}
    for literal in sorted(guards, key=lambda lit: (-len(lit), lit)):
        tried = guards[literal]
        guard = "" if "" in tried else "(?:" + "|".join(sorted(tried)) + ")"
        by_first.setdefault(literal[0], []).append(re.escape(literal[1:]) + guard)
    # One alternative per first character, each starting with that literal character: the
    # regex engine then skips to the next possible first character in C instead of trying
    # every alternative at every position (about twice as fast as a flat alternation).
    pattern = "|".join(
        re.escape(first) + "(?:" + "|".join(rests) + ")" for first, rests in by_first.items()
    )
    return re.compile(pattern), table


#: Inside text settled at priority ``p``, only rules above ``p`` are tried: for each ``p``
#: (and -1, nothing settled) the scan of their triggers. Text settled by a FORMAT finding
#: is skipped whole.
_SCANS: Final = {
    level: _trigger_table(tuple(rule for rule in RULES if rule.priority > level))
    for level in (-1, GENERIC, CONTEXT)
}


def _holds_marker(text: str, start: int, end: int) -> bool:
    """True when a redaction marker overlaps ``text[start:end]``."""
    lo, stop = max(0, start - _MARKER_MAX), min(len(text), end + _MARKER_MAX)
    if text.find("[REDACTED:", lo, stop) < 0:
        return False
    marker = _MARKER.search(text, lo, stop)
    while marker is not None and marker.start() < end:
        if marker.end() > start:
            return True
        marker = _MARKER.search(text, marker.end(), stop)
    return False


class _Claims:
    """Where a bare value a rule judged, and rejected on its content, settles the text.

    Its run (:data:`~memspool.redact.rules.BARE_RUN`) settles, but for a name and operator
    that end it, and only when no rule above the claiming one has a trigger in the run:
    nothing in it is then replaced, so a second pass sees the same run and settles it again.
    Both look-ups remember their last answer, which holds for every later start inside it,
    so a run full of names is read once, not once per name.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.run = (0, 0)
        #: Per priority: from where, up to which run end, the first trigger above it (or -1).
        self.above: dict[int, tuple[int, int, int]] = {}

    def settles(self, start: int, priority: int) -> int:
        run_start, run_end = self.run
        if not run_start <= start <= run_end:
            run = BARE_RUN.match(self.text, start)
            run_end = start if run is None else run.end()
            self.run = (start, run_end)
        if run_end - start < _CLAIM_MIN or self._trigger_above(start, run_end, priority):
            return -1
        lo = max(start, run_end - _TRAILING_NAME_MAX)
        trailing = TRAILING_NAME.search(self.text, lo, run_end)
        return run_end if trailing is None else trailing.start()

    def _trigger_above(self, start: int, end: int, priority: int) -> bool:
        """Whether a trigger of a rule above ``priority`` starts in ``text[start:end]``."""
        began, until, found = self.above.get(priority, (-1, -1, -1))
        if not (0 <= began <= start and until == end and (found < 0 or found >= start)):
            hit = _SCANS[priority][0].search(self.text, start, end + _TRIGGER_REACH)
            found = hit.start() if hit is not None and hit.start() < end else -1
            self.above[priority] = (start, end, found)
        return found >= 0


Finding = tuple[int, int, str, int]


def _level(settled: list[int], pos: int) -> int:
    """The highest priority whose findings settled the text at ``pos``, else -1."""
    for priority in (FORMAT, CONTEXT, GENERIC):
        if settled[priority] > pos:
            return priority
    return -1


def _finding_at(
    text: str, at: int, rules: tuple[Rule, ...], settled: list[int], claims: _Claims
) -> Finding | None:
    """The first of ``rules`` that finds a secret from the trigger at ``at``, if any."""
    for rule in rules:
        start = rule.locate(text, at) if rule.locate is not None else at - rule.back
        if start < 0:
            continue
        match = rule.pattern.match(text, start)
        if match is None:
            continue
        if rule.check is not None and not rule.check(match):
            value_start = -1 if rule.claim is None else rule.claim(match)
            if value_start >= 0:
                end = claims.settles(value_start, rule.priority)
                settled[rule.priority] = max(settled[rule.priority], end)
            continue
        begin, end = secret_span(match)
        if rule.extend is not None:
            end = rule.extend(match)
        if end <= begin or _holds_marker(text, begin, end) or _holds_marker(text, at, at + 1):
            continue  # a marker is neither a secret nor the name that finds one
        return begin, end, rule.family, rule.priority
    return None


def _matches(text: str, start: int = 0, end: int | None = None) -> Iterator[Finding]:
    """Yield ``(start, end, family, priority)`` for every secret found, in trigger order;
    only triggers in ``text[start:end]`` are looked at (a match may reach past ``end``)."""
    stop = len(text) if end is None else end
    # Per priority (GENERIC, CONTEXT, FORMAT: 0, 1, 2), where the text its findings (and
    # claims) settled ends.
    settled = [start, start, start]
    # Findings whose secret starts after their trigger (a command's password, words on)
    # settle their text only from where the secret starts: what lies between (a URL's
    # password, a SQL statement in ``-e "..."``) is looked at by every rule.
    waiting: list[tuple[int, int, int]] = []  # (secret start, end, priority), a heap
    claims = _Claims(text)
    pos = start
    while pos < stop:
        while waiting and waiting[0][0] <= pos:
            _, until, priority = heapq.heappop(waiting)
            settled[priority] = max(settled[priority], until)
        level = _level(settled, pos)
        if level == FORMAT:
            pos = settled[FORMAT]
            continue
        scan, rules_at = _SCANS[level]
        if level < 0:
            hit = scan.search(text, pos, stop + _TRIGGER_REACH)
            if hit is None or hit.start() >= stop:
                return
        else:
            # Within the settled text, and as far past it as a trigger there may reach.
            bound = settled[level]
            hit = scan.search(text, pos, bound + _TRIGGER_REACH)
            if hit is None or hit.start() >= bound:
                pos = bound  # past the settled text: every rule again
                continue
        at = hit.start()
        if waiting and waiting[0][0] <= at:
            pos = max(pos, waiting[0][0])  # a waiting secret starts first: settle it, look again
            continue
        # Step one character, not past the trigger: triggers may overlap (``_authToken``).
        pos = at + 1
        finding = _finding_at(text, at, rules_at[hit.group()], settled, claims)
        if finding is not None:
            yield finding
            if finding[0] > pos:
                heapq.heappush(waiting, (finding[0], finding[1], finding[3]))
            else:
                settled[finding[3]] = max(settled[finding[3]], finding[1])


#: A secret the normalised view reveals has a change of the view inside it, and
#: the trigger it is found by inside it too, so the rules run on the view only
#: around each change: back as far as the longest secret a rule takes whole
#: (the PEM block of a 4096-bit RSA key is about 3.3 KB), forward as far as a
#: trigger may sit from the start of its match.
_VIEW_BACK: Final = 4096
_VIEW_AHEAD: Final = 1024


def _view_windows(changes: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The stretches of the view around ``changes`` (view spans), merged."""
    windows: list[tuple[int, int]] = []
    for start, end in changes:
        lo, hi = max(0, start - _VIEW_BACK), min(size, end + _VIEW_AHEAD)
        if windows and lo <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(windows[-1][1], hi))
        else:
            windows.append((lo, hi))
    return windows


def _json_safe(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink a span so it neither starts on an escaped character nor ends on a backslash.

    The rules' character classes already keep quotes and lone backslashes out of a secret;
    this guards the one invariant the caller cannot repair: valid JSON stays valid.
    """
    slashes = 0
    while start - slashes > 0 and text[start - slashes - 1] == "\\":
        slashes += 1
    if slashes % 2:
        start += 1
    while end > start and text[end - 1] == "\\":
        end -= 1
    return start, end


def redact(text: str) -> tuple[str, dict[str, int]]:
    """Return ``text`` with secrets replaced by ``[REDACTED:<family>]`` and counts per family.

    Overlapping findings become one replacement, named after the finding of the highest
    priority (a vendor format over a header or URL over a generic name), else the first.

    The rules also run over the text as it reads (:mod:`memspool.redact.normal`: invisible
    characters removed, NFKC, entities and escapes decoded, AWS key ids upper-cased); a
    secret found there is replaced over the span of the original it was read from.
    """
    found = list(_matches(text))
    normal = view(text)
    if normal is not None:
        for lo, hi in _view_windows(normal.changed(), len(normal.text)):
            for start, end, family, priority in _matches(normal.text, lo, hi):
                begin, stop = normal.original(start, end)
                if stop > begin:
                    found.append((begin, stop, family, priority))
    found.sort(key=lambda m: (m[0], -m[1]))
    if not found:
        return text, {}
    spans: list[tuple[int, int, str, int]] = []
    for start, end, family, priority in found:
        if spans and start < spans[-1][1]:
            first, last_end, last_family, last_priority = spans[-1]
            if priority > last_priority:
                last_family, last_priority = family, priority
            spans[-1] = (first, max(last_end, end), last_family, last_priority)
        else:
            spans.append((start, end, family, priority))
    pieces: list[str] = []
    counts: dict[str, int] = {}
    done = 0
    for span_start, span_end, family, _ in spans:
        start, end = _json_safe(text, span_start, span_end)
        if end <= start:
            continue
        pieces += (text[done:start], replacement(family))
        counts[family] = counts.get(family, 0) + 1
        done = end
    pieces.append(text[done:])
    return "".join(pieces), counts
