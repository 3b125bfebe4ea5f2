"""The claim model on the labelled assistant messages (tests/data/archivist_messages.jsonl).

The model is trained on the tuning splits (``tuned`` to ``tuned11``); the
held-out splits (``heldout``, ``heldout2``, ``heldout3``), never read by the training
script, pin that it keeps generalising at least as well as when it was
shipped (docs/benchmarks.md has the figures and the goal); so do the
held-out user prompts. A message is kept when any note comes of it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import REPO

from memspool.archivist.minor import notes_of
from memspool.distill.claims import claims
from memspool.distill.transcript import transcript_notes

#: Slow, left out of the inner loop (`-m "not slow"`): a quality floor over the labelled sets.
pytestmark = pytest.mark.slow

ROWS = [json.loads(line) for line in
        (REPO / "tests" / "data" / "archivist_messages.jsonl").read_text().splitlines()]

#: split -> (least share of durable messages kept, most share of ephemeral kept): what
#: the shipped model measures (docs/benchmarks.md), a message or two below. The goal is
#: 90% and 3% on every held-out split; heldout3 (short messages) is short of it.
FLOORS = {"heldout": (0.93, 0.03), "heldout2": (0.95, 0.07), "heldout3": (0.83, 0.03)}
#: user_prompts.jsonl: split -> (least share of rules kept, most share of requests kept).
PROMPT_FLOORS = {"heldout": (0.81, 0.08), "heldout2": (0.80, 0.10), "heldout3": (0.77, 0.05)}
PROMPTS = [json.loads(line) for line in
           (REPO / "tests" / "data" / "user_prompts.jsonl").read_text().splitlines()]
#: Known misses of the shipped model, kept as tests of the goal (docs/benchmarks.md).
KNOWN_MISS = pytest.mark.xfail(strict=True, reason=(
    "the claim model misses short casual facts (heldout3 durable kept 85%)"))


def _kept(text: str) -> bool:
    return bool(transcript_notes(f"[assistant] {text}"))


def _rates(split: str) -> tuple[float, float]:
    rows = [r for r in ROWS if r["split"] == split]
    durable = [_kept(r["text"]) for r in rows if r["label"] == "durable"]
    ephemeral = [_kept(r["text"]) for r in rows if r["label"] == "ephemeral"]
    return sum(durable) / len(durable), sum(ephemeral) / len(ephemeral)


@pytest.mark.parametrize("split", sorted(FLOORS))
def test_durable_kept_and_ephemeral_dropped_on_held_out_messages(split: str) -> None:
    durable, ephemeral = _rates(split)
    least, most = FLOORS[split]
    assert durable >= least and ephemeral <= most, (split, durable, ephemeral)


def test_hard_ephemeral_cases_with_trigger_words_are_dropped() -> None:
    for text in ("Let me find the root cause.",
                 "I decided to look at the logs first.",
                 "I'll never guess this without the stack trace, let me print it.",
                 "The root cause could be the pool, but I'm not sure yet."):
        assert not _kept(text), text


@pytest.mark.parametrize("split", sorted(PROMPT_FLOORS))
def test_rules_kept_and_requests_dropped_on_held_out_prompts(split: str) -> None:
    rows = [r for r in PROMPTS if r["split"] == split]
    # A value change under the bar is no rule kept: it is saved only where it
    # replaces a memory (tests/test_archivist.py).
    kept = {r["id"]: any(n.only_if is None for n in notes_of(f"[user] {r['text']}")[0])
            for r in rows}
    rules = [kept[r["id"]] for r in rows if r["label"] == "durable"]
    requests = [kept[r["id"]] for r in rows if r["label"] == "ephemeral"]
    least, most = PROMPT_FLOORS[split]
    rates = (sum(rules) / len(rules), sum(requests) / len(requests))
    assert rates[0] >= least and rates[1] <= most, (split, rates)


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


@pytest.mark.xfail(strict=True, reason=(
    "a person's aside beside their rule ('my train is delayed again so im working from "
    "the platform') enters the rule's memory in 9 of heldout3's 40 rule prompts "
    "(docs/benchmarks.md)"))
def test_a_persons_chatter_never_enters_the_memory_of_their_rule() -> None:
    carried = []
    for row in (r for r in PROMPTS if r["split"] == "heldout3" and r["label"] == "durable"):
        facts = [_norm(f["text"]) for f in row["facts"]]
        bodies = [_norm(n.body) for n in notes_of(f"[user] {row['text']}")[0]]
        carried += [(row["id"], c.text) for c in claims(row["text"])
                    if (said := _norm(c.text)) and not any(said in f or f in said for f in facts)
                    and any(said in body for body in bodies)]
    assert carried == []


@KNOWN_MISS
def test_casual_durable_facts_are_kept() -> None:
    for text in ("heads up: pnpm 9 rewrites the lockfile unless you pass --frozen-lockfile",
                 "fwiw the staging db only accepts connections from the VPN range 10.8.0.0/16"):
        assert _kept(text), text


def test_a_users_rule_is_memory_and_a_request_is_not() -> None:
    # The agent's "Noted." and "Sure, on it." are not even offered as claims that may
    # say a memory again: too few terms to restate anything (can_restate).
    notes, _ = notes_of("[user] remember: the nightly export runs at 02:00 UTC from the "
                        "reporting replica\n\n[assistant] Noted.")
    assert [n.summary for n in notes] == [
        "The nightly export runs at 02:00 UTC from the reporting replica"]
    notes, _ = notes_of("[user] please fix the flaky test in test_orders.py right away\n\n"
                        "[assistant] Sure, on it.")
    assert notes == []


def test_a_learnings_section_gives_one_note_per_item() -> None:
    text = ("[assistant] Done.\n\n## Key Learnings:\n"
            "1. WAL mode lets readers run beside the one writer\n"
            "2. `PRAGMA quick_check` is the cheap way to tell a damaged store\n")
    assert [n.body for n in transcript_notes(text)] == [
        "WAL mode lets readers run beside the one writer",
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


@pytest.mark.xfail(strict=True, reason=(
    "the claim model keeps a report of work done written as a component list "
    "(5 notes of the planning session)"))
def test_real_transcripts_give_few_notes_and_no_plan() -> None:
    """On the bundled Claude Code transcripts (a planning session and a session that
    wires up tracing): the plan, the progress and the summaries of work done stay out."""
    folder = REPO / "tests" / "fixtures" / "transcripts"
    notes = [note for path in sorted(folder.rglob("*.jsonl"))
             for text in _assistant_texts(path) for note in transcript_notes(f"[assistant] {text}")]
    assert len(notes) <= 5, [n.summary for n in notes]
    for note in notes:
        assert not note.summary.lower().startswith(("let me", "i'll", "now ", "next", "done"))
