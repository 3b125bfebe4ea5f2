"""Note types by cheap local markers, checked in contract order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memspool.distill.classify import NOTE_TYPES, classify, coerce_type

NOTES = Path(__file__).parent / "data" / "classify_notes.jsonl"
#: The floor the classifier must hold on the labelled set (docs/benchmarks.md).
MIN_ACCURACY = 0.85


def _labelled() -> list[dict[str, str]]:
    return [json.loads(line) for line in NOTES.read_text(encoding="utf-8").splitlines() if line]


def test_the_labelled_set_is_large_enough_and_covers_every_type() -> None:
    rows = _labelled()
    assert len(rows) >= 60
    assert {row["type"] for row in rows} == set(NOTE_TYPES) - {"passive"}


def test_accuracy_on_the_labelled_set() -> None:
    rows = _labelled()
    wrong = [
        (row["type"], classify(row["text"]), row["text"])
        for row in rows
        if classify(row["text"]) != row["type"]
    ]
    accuracy = 1 - len(wrong) / len(rows)
    assert accuracy >= MIN_ACCURACY, f"accuracy {accuracy:.3f}; wrong: {wrong}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A root cause beats a pitfall: both markers present, root cause is checked first.
        (
            "Never share temp dirs between workers: the flaky test was caused by exactly that.",
            "root-cause",
        ),
        ("Gotcha, but the root cause was a missing index on users.email.", "root-cause"),
        (
            "The upload failed because the proxy buffers the whole body; "
            "don't use it for big files.",
            "root-cause",
        ),
        # A pitfall beats a decision, a decision beats a pattern.
        ("We decided on zstd, but beware: level 19 is very slow.", "pitfall"),
        ("We decided to always tag releases from main.", "decision"),
        ("Always tag releases from main.", "pattern"),
        ("PRAGMA user_version is a free integer in the header.", "takeaway"),
    ],
)
def test_types_are_checked_in_contract_order(text: str, expected: str) -> None:
    assert classify(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Turn on debug logging to see every SQL statement.",
        "The debugger starts anywhere with breakpoint().",
        "Debugging the drainer is easier with the frame offsets in the log.",
    ],
)
def test_debug_is_not_a_bug(text: str) -> None:
    assert classify(text) != "pitfall"


def test_a_bug_is_a_pitfall() -> None:
    assert classify("There is a bug in the retry helper with zero delays.") == "pitfall"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Decision: the archivist runs only from the timer, never from the hook.", "decision"),
        ("Pitfall: os.rename across filesystems raises EXDEV.", "pitfall"),
        ("## Root cause: the cache key ignored the locale", "root-cause"),
        ("TIL: git worktree checks out two branches side by side.", "takeaway"),
        ("Pattern: poll with a deadline, never sleep a fixed time.", "pattern"),
    ],
)
def test_a_leading_label_says_the_type(text: str, expected: str) -> None:
    assert classify(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("pitfall", "pitfall"),
        ("Root Cause", "root-cause"),
        ("root_cause", "root-cause"),
        (" DECISION ", "decision"),
        ("banana", "takeaway"),
        ("passive", "takeaway"),
        (None, "takeaway"),
        (3, "takeaway"),
        (["pattern"], "takeaway"),
    ],
)
def test_untrusted_type_names_are_coerced(value: object, expected: str) -> None:
    assert coerce_type(value) == expected
