"""Search and the context block: hostile text, identifiers, concepts, ranking, isolation."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from conftest import capture_with, run_cli

from memspool.archivist import maintain
from memspool.config import Config
from memspool.recall import render, search, stored
from memspool.service import Service
from memspool.store import memories as rows

NOTES = {
    "shop": [
        "Pitfall: the SparklineChart component re-renders on every tick because its data "
        "prop is a new array each render.",
        "Root cause: refunds were counted twice because the webhook handler double-inserts "
        "rows when Stripe retries.",
        "Decision: get_user_by_id in src/db/users.py caches rows for 30 seconds to spare "
        "the primary.",
        "Takeaway: the kubelet flag imageGCHighThresholdPercent=70 stopped the node "
        "from filling its disk with old images.",
        "Pattern: API requests time out after 5 s; the p99 latency budget is 300 ms.",
    ],
    "infra": ["Pitfall: terraform plan on the infra repo needs AWS_PROFILE=staging set."],
}


@pytest.fixture
def memories(config: Config, conn: Any) -> dict[str, int]:
    ids = {}
    now = time.time()
    for project, notes in NOTES.items():
        for text in notes:
            report = capture_with(text, config=config, conn=conn, project=project, session="s",
                             now=now)
            ids[text.split(":")[0] + text[10:30]] = report.notes[0].id or 0
    return ids


def _top(conn: Any, query: str, **kwargs: Any) -> list[str]:
    return [hit.summary for hit in search(conn, query, **kwargs)]


@pytest.mark.parametrize("query", [
    '"', '"unbalanced', "db_pool.py", "refunds NOT", "(", ")", "a AND", "OR", "NEAR(x y",
    "col:refunds", "refunds*", "^start", "-x", "\x00", "🙂 emoji", "x" * 20_000, "",
    " ".join(f"word{i}" for i in range(500)), "SELECT * FROM memories; --", "'; DROP",
])
def test_no_text_is_a_syntax_error(conn: Any, memories: dict[str, int], query: str) -> None:
    search(conn, query)  # no exception is the assertion; results may be empty


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_hostile_text_through_the_cli_is_safe(memories: dict[str, int]) -> None:
    for query in ('"db_pool.py" NOT (', "refunds)", "-- --all"):
        proc = run_cli("search", "--json", "--", query, check=False)
        assert proc.returncode == 0 and b"Traceback" not in proc.stderr, query


def test_identifiers_are_found_by_their_parts(conn: Any, memories: dict[str, int]) -> None:
    assert "SparklineChart" in _top(conn, "SparklineChart")[0]
    assert "SparklineChart" in _top(conn, "sparkline")[0]
    assert "get_user_by_id" in _top(conn, "user_by_id")[0]
    assert "get_user_by_id" in _top(conn, "users.py")[0]
    assert "imageGCHighThresholdPercent" in _top(conn, "imageGCHighThreshold")[0]
    assert "AWS_PROFILE" in _top(conn, "aws profile")[0]


def test_the_concept_map_finds_other_words_and_weighs_them_less(
        conn: Any, memories: dict[str, int]) -> None:
    hits = search(conn, "why is the api so slow")
    assert "time out" in hits[0].summary
    doubled = search(conn, "refunds duplicated")
    assert "counted twice" in doubled[0].summary and doubled[0].found_by == "words+concepts"
    assert search(conn, "duplicate")[0].found_by == "concepts"


def test_filters_limit_and_project_isolation(conn: Any, memories: dict[str, int]) -> None:
    assert _top(conn, "terraform plan", project="shop") == []
    assert len(_top(conn, "terraform plan", project="infra")) == 1
    assert all(h.type == "pitfall" for h in search(conn, "the", type="pitfall"))
    assert len(search(conn, "the of a to rows the", limit=2)) <= 2
    shop = render(conn, "shop", 8000)[0]
    assert "terraform" not in shop and "SparklineChart" in shop


def test_json_has_every_field(memories: dict[str, int]) -> None:
    result = json.loads(run_cli("search", "refunds", "--json", "--limit", "3").stdout)
    assert result["query"] == "refunds"
    assert set(result["results"][0]) >= {"id", "project", "type", "summary", "body", "layer",
                                         "confidence", "sessions", "superseded_by", "score"}


def test_superseded_memories_need_all_and_never_outrank_their_successor(
        config: Config, conn: Any) -> None:
    now = time.time()
    old = "Decision: the staging API listens on port 8080 behind nginx."
    capture_with(old, config=config, conn=conn, project="p", session="a", now=now - 60)
    capture_with("Decision: the staging API listens on port 9090 behind nginx.", config=config,
            conn=conn, project="p", session="b", now=now)
    maintain(conn, config, now=now + 1)  # the capture already superseded it
    assert [m.layer for m in rows.list_memories(conn, "p")] == ["superseded", "buffer"]
    # The query names the old value; only the successor is in recall...
    assert [h.summary for h in search(conn, "staging api port 8080")] == [
        "Decision: the staging API listens on port 9090 behind nginx."]
    # ... and with --all the old one, which matches better, still ranks below it.
    hits = search(conn, "staging api port 8080", include_all=True)
    assert [h.layer for h in hits] == ["buffer", "superseded"]
    assert hits[0].score > hits[1].score


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_the_context_block_groups_facts_and_holds_its_limit(
        config: Config, conn: Any) -> None:
    now = time.time()
    for n in range(300):
        capture_with(f"Pitfall {n}: service s{n} drops requests when pool p{n} drains its "
                f"connections under load.", config=config, conn=conn, project="big",
                session=f"s{n}", now=now)
    text, listed = render(conn, "big", 2000)
    assert len(text) <= 2000 and 5 < listed < 300
    assert text.startswith("## memspool: what is known about the project big")
    assert "### Pitfalls" in text and "- #" in text
    lowered = text.lower()
    for instruction in ("you must", "always ", "ignore ", "do not "):
        assert instruction not in lowered  # facts, not instructions


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_the_block_is_rendered_when_memory_changes(home: Any) -> None:
    run_cli("capture", "--project", "shop", input=b"Pitfall: the CDN caches 404s for an hour, "
            b"so purge it after fixing a missing asset.")
    with Service(readonly=True) as service:
        block = stored(service.conn, "shop")
    assert block is not None and "CDN caches 404s" in block
    memory_id = json.loads(run_cli("memories", "list", "--json").stdout)[0]["id"]
    run_cli("memories", "forget", str(memory_id))
    with Service(readonly=True) as service:
        assert stored(service.conn, "shop") is None  # gone from context at once
    assert "no memories" in run_cli("context", "--project", "shop").stderr.decode()


def test_a_memory_saved_under_a_short_title_shows_its_fact_in_the_block(home: Any) -> None:
    with Service() as service:
        titled = service.save("staging db", "Pitfall: the staging DB refuses connections "
                              "without sslmode=require.", type="pitfall", project="shop")
        whole = service.save("Deploys are frozen on Fridays.", "Deploys are frozen on Fridays "
                             "after 14:00 UTC.", type="decision", project="shop")
        headed = service.save("Release train", "# Release train\nReleases leave main every "
                              "Tuesday at 10:00 UTC.", type="pattern", project="shop")
        block = service.context("shop").text
    lines = {int(line.split()[1][1:]): line for line in block.splitlines()
             if line.startswith("- #")}
    # A title alone says nothing: it leads the fact it names.
    assert "staging db: Pitfall: the staging DB refuses connections without sslmode=require." \
        in lines[titled.id]
    # So does the heading a text is under.
    assert "Release train: Releases leave main every Tuesday at 10:00 UTC." in lines[headed.id]
    # A summary that is a sentence is the line, as before.
    assert f"- #{whole.id} Deploys are frozen on Fridays. (" in lines[whole.id]


def test_the_blocks_headings_say_whose_preferences_they_are(home: Any) -> None:
    # "I prefer ..." is the person's voice: the heading tells the agent who "I" is.
    with Service() as service:
        service.save("I prefer small focused commits.", "I prefer small focused commits.",
                     type="preference", project="shop")
        service.save("The CDN caches 404s for an hour.", "The CDN caches 404s for an hour.",
                     type="pitfall", project="shop")
        block = service.context("shop").text
    headings = [line for line in block.splitlines() if line.startswith("### ")]
    assert headings == ["### The user's preferences and rules", "### Pitfalls"]
