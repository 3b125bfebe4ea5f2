"""Redaction on the normalised view: a disguised secret is redacted over its original span.

Scored on tests/redact_obfuscated.py, a labelled set of its own: the tuned cases and a
held-out third, reported side by side in the test ids (``pytest -v``).
"""

# ruff: noqa: RUF001 - fullwidth letters are the point

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redact_corpus import Case, github
from redact_obfuscated import CASES, HELD_OUT, TUNED, read_as

from memspool.redact import redact
from memspool.redact.normal import view

WINDOW = 8


def _survives(secret: str, text: str) -> bool:
    return any(secret[i:i + WINDOW] in text for i in range(len(secret) - WINDOW + 1))


def _caught(case: Case) -> bool:
    out, counts = redact(case.text)
    if case.negative:
        return out == case.text and counts == {}
    # Read the output as a reader would too: a secret may not survive in disguise.
    gone = not any(_survives(s, out) or _survives(s, read_as(out)) for s in case.secrets)
    return gone and case.family in counts


def test_the_set_holds_both_kinds_in_both_halves() -> None:
    assert len(CASES) >= 36 and len(HELD_OUT) * 3 >= len(CASES) - 3  # a third of each kind
    for half in (TUNED, HELD_OUT):
        assert any(c.negative for c in half) and any(not c.negative for c in half)
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=f"tuned/{c.name}") for c in TUNED]
                         + [pytest.param(c, id=f"held-out/{c.name}") for c in HELD_OUT])
def test_each_case(case: Case) -> None:
    assert _caught(case), redact(case.text)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_second_pass_changes_nothing(case: Case) -> None:
    once, _ = redact(case.text)
    assert redact(once) == (once, {})


def test_only_the_disguised_span_is_replaced() -> None:
    token = github(__import__("random").Random(5))
    text = f"before ｔｏｋｅｎ {token[:6]}\u200b{token[6:]} after\u200b end"
    out, counts = redact(text)
    assert out == "before ｔｏｋｅｎ [REDACTED:github] after\u200b end"
    assert counts == {"github": 1}


_INVISIBLE = st.sampled_from(["\u200b", "\u00ad", "\u2060", "\ufeff", "\u200d", "\u202e"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=4, max_value=39), _INVISIBLE), max_size=4),
       st.text(alphabet="abc \n=:ｘ&#;\\u0", max_size=30),
       st.text(alphabet="xyz \n.,ｙ", max_size=30))
def test_invisible_characters_anywhere_in_a_token_do_not_hide_it(
        marks: list[tuple[int, str]], before: str, after: str) -> None:
    token = github(__import__("random").Random(len(before) * 31 + len(after)))
    hidden = token
    for at, mark in sorted(marks, reverse=True):
        hidden = hidden[:at] + mark + hidden[at:]
    out, _ = redact(f"{before} {hidden} {after}")
    assert not _survives(token, read_as(out))
    assert redact(out)[0] == out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    *"ab_-=&#;x5fu\\ ", "\u200b", "\xad", "ｇ", "ﬁ", "&#95;", "\\u005f", "&amp;", "akia",
    "\U000e0041", "2"]), max_size=40).map("".join))
def test_the_view_maps_every_span_back_inside_the_original(text: str) -> None:
    seen = view(text)
    if seen is None:
        return
    size = len(seen.text)
    starts = [seen.original(start, size)[0] for start in range(size)]
    assert starts == sorted(starts)
    for start in range(size):
        for end in range(start + 1, size + 1):
            lo, hi = seen.original(start, end)
            # A non-empty span of the view comes from a non-empty span of the text.
            assert 0 <= lo < hi <= len(text), (start, end, lo, hi)
