"""The labelled corpus: every listed secret is gone, every negative is untouched."""

from __future__ import annotations

import json

import pytest
from redact_corpus import CASES, NEGATIVES, POSITIVES, Case

from memspool.redact import FAMILIES, redact

#: The issue's rule: no 8-character stretch of a secret may survive redaction.
WINDOW = 8


def _surviving_windows(secret: str, text: str) -> list[str]:
    if len(secret) <= WINDOW:
        return [secret] if secret in text else []
    windows = {secret[i : i + WINDOW] for i in range(len(secret) - WINDOW + 1)}
    return sorted(w for w in windows if w in text)


def test_corpus_is_large_and_at_least_a_third_negative() -> None:
    assert len(CASES) >= 120
    assert len(NEGATIVES) * 3 >= len(CASES)
    assert len({case.name for case in CASES}) == len(CASES), "case names must be unique"


def test_every_family_has_a_positive_case() -> None:
    covered = {case.family for case in POSITIVES}
    assert set(FAMILIES) <= covered, f"no corpus case for {set(FAMILIES) - covered}"


def test_no_negative_contains_a_positive_secret() -> None:
    # A negative that held a listed secret would make the two halves contradict.
    negatives = "\n".join(case.text for case in NEGATIVES)
    for case in POSITIVES:
        for secret in case.secrets:
            assert not _surviving_windows(secret, negatives), case.name


@pytest.mark.parametrize("case", POSITIVES, ids=[c.name for c in POSITIVES])
def test_positive_loses_every_secret(case: Case) -> None:
    out, counts = redact(case.text)
    for secret in case.secrets:
        assert not _surviving_windows(secret, out), f"{case.name}: part of a secret survived"
    assert counts, case.name
    if case.family is not None:
        assert case.family in counts, f"{case.name}: counted as {counts}"
        assert f"[REDACTED:{case.family}]" in out


@pytest.mark.parametrize("case", NEGATIVES, ids=[c.name for c in NEGATIVES])
def test_negative_is_byte_identical(case: Case) -> None:
    out, counts = redact(case.text)
    assert out == case.text
    assert counts == {}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_second_pass_changes_nothing(case: Case) -> None:
    once, _ = redact(case.text)
    assert redact(once) == (once, {})


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


JSON_CASES = [c for c in CASES if _is_json(c.text)]


@pytest.mark.parametrize("case", JSON_CASES, ids=[c.name for c in JSON_CASES])
def test_json_lines_stay_valid_json(case: Case) -> None:
    before = json.loads(case.text)
    after = json.loads(redact(case.text)[0])
    assert type(after) is type(before)
