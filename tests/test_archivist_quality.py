"""The transcript rules on the labelled assistant messages (tests/data/archivist_messages.jsonl).

The tuning splits pin what the rules were written to do; the held-out split,
never used to change them, pins that they keep generalising at least as well
as when they were frozen (docs/benchmarks.md has the figures and the goal).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO

from memspool.archivist.minor import notes_of
from memspool.distill.durable import durable_blocks, remembered

ROWS = [json.loads(line) for line in
        (REPO / "tests" / "data" / "archivist_messages.jsonl").read_text().splitlines()]

#: split -> (least share of durable messages kept, most share of ephemeral kept)
FLOORS = {"tuned": (0.95, 0.03), "tuned2": (0.95, 0.03), "tuned3": (0.95, 0.03),
          "tuned4": (0.90, 0.03), "heldout": (0.85, 0.05), "heldout2": (0.85, 0.05)}


def _rates(split: str) -> tuple[float, float]:
    rows = [r for r in ROWS if r["split"] == split]
    kept = {r["id"]: bool(durable_blocks(r["text"])) for r in rows}
    durable = [kept[r["id"]] for r in rows if r["label"] == "durable"]
    ephemeral = [kept[r["id"]] for r in rows if r["label"] == "ephemeral"]
    return sum(durable) / len(durable), sum(ephemeral) / len(ephemeral)


@pytest.mark.parametrize("split", sorted(FLOORS))
def test_durable_kept_and_ephemeral_dropped(split: str) -> None:
    durable, ephemeral = _rates(split)
    least, most = FLOORS[split]
    assert durable >= least and ephemeral <= most, (split, durable, ephemeral)


def test_hard_ephemeral_cases_with_trigger_words_are_dropped() -> None:
    for text in ("Let me find the root cause.",
                 "I decided to look at the logs first.",
                 "I'll never guess this without the stack trace, let me print it.",
                 "The root cause could be the pool, but I'm not sure yet."):
        assert durable_blocks(text) == [], text


def test_casual_durable_facts_are_kept() -> None:
    for text in ("heads up: pnpm 9 rewrites the lockfile unless you pass --frozen-lockfile",
                 "fwiw the staging db only accepts connections from the VPN range 10.8.0.0/16"):
        assert durable_blocks(text), text


def test_an_explicit_request_to_remember_is_memory_and_other_prompts_are_not() -> None:
    assert remembered("remember: the nightly export runs at 02:00 UTC") == \
        "the nightly export runs at 02:00 UTC"
    assert remembered("Can you remember why the export failed?") is None
    notes, _ = notes_of("[user] please fix the flaky test in test_orders.py right away\n\n"
                        "[assistant] Sure, on it.")
    assert notes == []


def test_a_learnings_section_gives_one_note_per_item() -> None:
    text = ("Done.\n\n## Key Learnings:\n1. WAL mode lets readers run beside the one writer\n"
            "2. `PRAGMA quick_check` is the cheap way to tell a damaged store\n")
    assert durable_blocks(text) == ["WAL mode lets readers run beside the one writer",
                                    "`PRAGMA quick_check` is the cheap way to tell a damaged store"]


def _assistant_texts(path: Path) -> list[str]:
    texts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") != "assistant":
            continue
        content = record.get("message", {}).get("content") or []
        texts += [c["text"] for c in content if isinstance(c, dict) and c.get("type") == "text"]
    return texts


def test_real_transcripts_give_only_their_learnings() -> None:
    """On the bundled Claude Code transcripts: a completion summary, a compaction
    summary's narrative, its files, pending tasks and next step are all dropped;
    its "Errors and Fixes" section is what is kept."""
    folder = REPO / "tests" / "fixtures" / "transcripts"
    kept = [block for path in sorted(folder.rglob("*.jsonl"))
            for text in _assistant_texts(path) for block in durable_blocks(text)]
    assert len(kept) == 1, kept
    assert kept[0].startswith("4. Errors and Fixes:")
    assert "set_text_map_propagators" in kept[0] and "Pending" not in kept[0]
