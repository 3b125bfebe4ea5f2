"""The capture verb against a real store: create, update, merge, skip, caps, dry run."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from conftest import capture_with

from memspool.archivist.reconcile import DUPLICATE_WINDOW_SECS, CaptureReport
from memspool.base.errors import MemspoolError, PayloadError, StoreError
from memspool.config import Config
from memspool.distill import MAX_PAYLOAD_BYTES
from memspool.service import Service
from memspool.store import memories as memory
from memspool.store import transaction

REPORT_FIELDS = {
    "ok",
    "captured",
    "created",
    "updated",
    "merged",
    "superseded",
    "skipped",
    "dropped",
    "candidates",
    "dry_run",
    "distiller",
    "notes",
}
NOTE_FIELDS = {"id", "key", "type", "summary", "action", "supersedes"}
T0 = 1_800_000_000.0


def run(conn: sqlite3.Connection, config: Config, text: str, **kwargs: object) -> CaptureReport:
    kwargs.setdefault("project", "api")
    kwargs.setdefault("now", T0)
    return capture_with(text, config=config, conn=conn, **kwargs)  # type: ignore[arg-type]


def actions(report: CaptureReport) -> list[str]:
    return [note.action for note in report.notes]


def table_counts(conn: sqlite3.Connection) -> dict[str, int]:
    tables = ("memories", "provenance", "memory_terms")
    return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}  # noqa: S608


# new memories ------------------------------------------------------------------------------------


def test_new_notes_are_provisional_memories_with_provenance(
    conn: sqlite3.Connection, config: Config
) -> None:
    report = run(
        conn,
        config,
        "Pitfall: requests has no default timeout, so a hung server blocks.\n\n"
        "We decided to store timestamps as UTC epoch floats.",
    )
    assert actions(report) == ["created", "created"]
    assert [n.type for n in report.notes] == ["pitfall", "decision"]
    for note in report.notes:
        assert note.id is not None
        found = memory.get(conn, note.id)
        assert found is not None
        assert (
            found.project,
            found.layer,
            found.importance,
            found.confidence,
            found.corroborations,
        ) == ("api", "buffer", 0.6, 0.5, 0)
        assert found.key == note.key and found.summary == note.summary
        [record] = memory.provenance(conn, note.id)
        assert (record.action, record.session, record.source, record.slice_id, record.at) == (
            "created",
            "manual-save-api",
            "manual",
            None,
            T0,
        )


def test_default_project_is_the_git_root(
    conn: sqlite3.Connection, config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "billing-service"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(root / "src" / "deep")
    report = capture_with("A note captured without naming a project.", config=config, conn=conn)
    found = memory.get(conn, report.notes[0].id or 0)
    identity = str(root.resolve())  # no remote: the git root's path
    assert found is not None and found.project == identity
    assert memory.provenance(conn, found.id)[0].session == f"manual-save-{identity}"


def test_session_and_source_are_recorded(conn: sqlite3.Connection, config: Config) -> None:
    report = run(
        conn, config, "A note with explicit provenance fields.", session="s-42", source="mcp"
    )
    [record] = memory.provenance(conn, report.notes[0].id or 0)
    assert (record.session, record.source) == ("s-42", "mcp")


def test_queued_slices_are_named_in_provenance(conn: sqlite3.Connection, config: Config) -> None:
    with transaction(conn):
        slice_id = conn.execute(
            "INSERT INTO slices (session_id, project, event, transcript_path, byte_start,"
            " byte_end,"
            " records_kept, records_dropped, raw_bytes, text_chars, stored_bytes, body, created_at)"
            " VALUES ('s1', 'api', 'Stop', '/t.jsonl', 0, 10, 1, 0, 10, 10, 10, x'00', 0)"
        ).lastrowid
    report = run(
        conn,
        config,
        "A note distilled from a queued slice.",
        slice_id=slice_id,
        session="s1",
        source="archivist",
    )
    assert memory.provenance(conn, report.notes[0].id or 0)[0].slice_id == slice_id
    with pytest.raises(PayloadError, match="Slice 999 is not in the queue"):
        run(conn, config, "A note naming a capture that does not exist.", slice_id=999)


def test_the_payload_is_redacted_before_anything_is_stored(
    conn: sqlite3.Connection, config: Config
) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    report = run(conn, config, f"The deploy token {token} leaked into the logs.")
    found = memory.get(conn, report.notes[0].id or 0)
    assert found is not None
    assert token not in found.body and token not in found.summary
    assert "[REDACTED:github]" in found.body


# update in place, exact duplicates ---------------------------------------------------------------


def test_same_key_updates_in_place(conn: sqlite3.Connection, config: Config) -> None:
    first = run(conn, config, "# Zstd level\nCaptures use zstd level 10 for the ratio.")
    second = run(
        conn, config, "# Zstd level\nCaptures use zstd level 10 for their ratio.\n"
        "Level 12 was too slow for the drainer.", now=T0 + 60
    )
    assert actions(second) == ["updated"]
    assert second.notes[0].id == first.notes[0].id
    found = memory.get(conn, first.notes[0].id or 0)
    assert found is not None
    assert "Level 12" in found.body and found.updated_at == T0 + 60 and found.corroborations == 0
    assert [r.action for r in memory.provenance(conn, found.id)] == ["created", "updated"]


def test_a_reworded_note_under_the_same_key_updates_in_place(
    conn: sqlite3.Connection, config: Config
) -> None:
    first = run(
        conn, config, "## Decision\nWe chose SQLite for the local store: a single file, no server."
    )
    second = run(
        conn, config, "## Decision\nSQLite was picked for the local store because it is a "
        "single file with no server.", now=T0 + 60,
    )
    # A type's label as heading is not the subject: the two keys come from the
    # facts, and the rewording is found by its words and corroborates.
    assert actions(second) == ["merged"] and second.notes[0].id == first.notes[0].id
    assert len(memory.list_memories(conn, "api")) == 1
    assert second.notes[0].summary.startswith("We chose SQLite")


def test_a_different_fact_under_the_same_key_gets_a_key_of_its_own(
    conn: sqlite3.Connection, config: Config
) -> None:
    first = run(conn, config, "## Decision\nUse Postgres for the session store.")
    second = run(conn, config, "## Decision\nDeploys happen on Tuesdays after the standup.",
                 now=T0 + 60)
    assert actions(second) == ["created"]
    [note] = second.notes
    assert note.id != first.notes[0].id
    assert note.key != first.notes[0].key
    kept = memory.get(conn, first.notes[0].id or 0)
    assert kept is not None and kept.body.endswith("Use Postgres for the session store.")
    assert [r.action for r in memory.provenance(conn, kept.id)] == ["created"]
    # Captured again later, the second fact lands on its own key, not on the first.
    again = run(conn, config, "## Decision\nDeploys happen on Tuesdays after the standup.",
                now=T0 + DUPLICATE_WINDOW_SECS + 120)
    assert actions(again) == ["updated"]
    assert (again.notes[0].id, again.notes[0].key) == (note.id, note.key)
    assert len(memory.list_memories(conn, "api")) == 2


def test_a_new_value_under_the_same_key_does_not_overwrite_the_old(
    conn: sqlite3.Connection, config: Config
) -> None:
    first = run(conn, config, "# Zstd level\nCaptures use zstd level 10 for the ratio.")
    second = run(conn, config, "# Zstd level\nCaptures use zstd level 12 for the ratio.",
                 now=T0 + 60)
    # The new value is a memory of its own, under the subject's key; the old one
    # stays, superseded, pointing at it, under a key of its own text.
    assert actions(second) == ["created"] and second.notes[0].supersedes == first.notes[0].id
    assert second.notes[0].key == "zstd-level"
    old = memory.get(conn, first.notes[0].id or 0)
    assert old is not None and old.layer == "superseded"
    assert old.superseded_by == second.notes[0].id and old.key != "zstd-level"
    assert sorted(m.body[-32:] for m in memory.list_memories(conn, "api")) == [
        "use zstd level 10 for the ratio.",
        "use zstd level 12 for the ratio.",
    ]


def test_an_exact_recapture_within_fifteen_minutes_is_skipped(
    conn: sqlite3.Connection, config: Config
) -> None:
    text = "Careful: git stash does not include untracked files unless you pass -u."
    first = run(conn, config, text)
    again = run(
        conn,
        config,
        "  careful:  GIT stash does not include untracked files unless you pass -u.",
        now=T0 + DUPLICATE_WINDOW_SECS - 1,
    )
    assert actions(again) == ["skipped"]
    assert again.notes[0].id == first.notes[0].id
    assert len(memory.provenance(conn, first.notes[0].id or 0)) == 1
    later = run(conn, config, text, now=T0 + DUPLICATE_WINDOW_SECS + 1)
    assert actions(later) == ["updated"]


def test_exact_duplicates_are_scoped_to_the_project(
    conn: sqlite3.Connection, config: Config
) -> None:
    text = "Careful: git stash does not include untracked files unless you pass -u."
    run(conn, config, text, project="api")
    other = run(conn, config, text, project="web")
    assert actions(other) == ["created"]


def test_a_repeated_key_within_one_payload_keeps_the_first(
    conn: sqlite3.Connection, config: Config
) -> None:
    report = run(
        conn,
        config,
        "# Cache key\nIncludes the lock file hash.\n\n"
        "# Cache key\nIt includes the hash of the lock file.\n",
    )
    assert actions(report) == ["created", "skipped"]
    assert report.notes[1].id == report.notes[0].id
    found = memory.get(conn, report.notes[0].id or 0)
    assert found is not None and "lock file hash" in found.body


def test_different_facts_under_one_heading_in_one_payload_are_all_kept(
    conn: sqlite3.Connection, config: Config
) -> None:
    report = run(
        conn,
        config,
        "## Decision\nUse Postgres for the session store.\n\n"
        "## Decision\nDeploys happen on Tuesdays after the standup.\n\n"
        "## Decision\nDeploys happen on Tuesdays after the standup.\n",
    )
    assert actions(report) == ["created", "created", "skipped"]
    assert len({n.key for n in report.notes}) == 2
    assert report.notes[2].id == report.notes[1].id
    assert len(memory.list_memories(conn, "api")) == 2


# near-duplicates ------------------------------------------------------------------------------


def test_a_reworded_recapture_merges_and_counts_a_corroboration(
    conn: sqlite3.Connection, config: Config
) -> None:
    first = run(
        conn, config, "The flaky upload test failed because two workers shared one temp directory."
    )
    again = run(
        conn,
        config,
        "Upload test flakiness: two workers were sharing a single temp directory.",
        session="s2",
        source="hook",
        now=T0 + 10,
    )
    assert actions(again) == ["merged"]
    assert again.candidates >= 1
    merged = again.notes[0]
    assert (merged.id, merged.key, merged.summary) == (
        first.notes[0].id,
        first.notes[0].key,
        first.notes[0].summary,
    )
    found = memory.get(conn, merged.id or 0)
    assert found is not None and found.corroborations == 1 and found.updated_at == T0 + 10
    assert [(r.action, r.session, r.source) for r in memory.provenance(conn, found.id)] == [
        ("created", "manual-save-api", "manual"),
        ("merged", "s2", "hook"),
    ]
    assert len(memory.list_memories(conn, "api")) == 1


def test_a_different_fact_on_the_same_topic_is_a_new_memory(
    conn: sqlite3.Connection, config: Config
) -> None:
    run(conn, config, "The flaky upload test failed because two workers shared one temp directory.")
    other = run(
        conn,
        config,
        "The flaky upload test also fails when the S3 mock is not reset between tests.",
    )
    assert actions(other) == ["created"]
    assert len(memory.list_memories(conn, "api")) == 2


def test_a_correction_in_one_slot_is_not_merged_into_the_old_fact(
    conn: sqlite3.Connection, config: Config
) -> None:
    first = run(conn, config, "Staging uses the eu-west-1 region for all buckets")
    second = run(conn, config, "Staging uses the us-east-1 region for all buckets", now=T0 + 60)
    assert actions(second) == ["created"] and second.notes[0].id != first.notes[0].id
    assert sorted(m.body for m in memory.list_memories(conn, "api")) == [
        "Staging uses the eu-west-1 region for all buckets",
        "Staging uses the us-east-1 region for all buckets",
    ]


def test_the_readme_report_example(conn: sqlite3.Connection, config: Config) -> None:
    run(
        conn,
        config,
        "Decision: captures use zstd level 10 for the ratio.\n\n"
        "The flaky upload test failed because two workers shared one temp directory.",
    )
    report = run(
        conn,
        config,
        "Decision: captures use zstd level 10 for the ratio.\n"
        "Level 19 was too slow for the drainer.\n\n"
        "Upload test flakiness: two workers were sharing a single temp directory.\n\n"
        "The CDN cached the API response for 10 minutes.\n\nok",
        now=T0 + 60,
    ).as_dict()
    assert {k: report[k] for k in ("captured", "created", "updated", "merged", "candidates")} == {
        "captured": 3, "created": 1, "updated": 1, "merged": 1, "candidates": 1,
    }
    assert [(n["id"], n["key"], n["action"]) for n in report["notes"]] == [  # type: ignore[attr-defined]
        (1, "decision-captures-use-zstd-level-10-for-the-ratio", "updated"),
        (2, "the-flaky-upload-test-failed-because-two-workers-shared-f5f60dd9", "merged"),
        (3, "the-cdn-cached-the-api-response-for-10-minutes", "created"),
    ]


def test_near_duplicates_are_scoped_to_the_project(
    conn: sqlite3.Connection, config: Config
) -> None:
    run(conn, config, "The flaky upload test failed because two workers shared one temp directory.")
    other = run(
        conn,
        config,
        "Upload test flakiness: two workers were sharing a single temp directory.",
        project="web",
    )
    assert actions(other) == ["created"] and other.candidates == 0


def test_a_merge_that_adds_detail_keeps_the_richer_text(
    conn: sqlite3.Connection, config: Config
) -> None:
    first = run(conn, config, "JWT refresh tokens need atomic rotation.")
    richer = run(
        conn,
        config,
        "Atomic rotation of JWT refresh tokens, or two tabs race and log out.",
        now=T0 + 5,
    )
    assert actions(richer) == ["merged"]
    found = memory.get(conn, first.notes[0].id or 0)
    assert found is not None and "two tabs race" in found.body
    assert found.key == first.notes[0].key  # the identity stays; the summary follows the text
    assert found.summary == "Atomic rotation of JWT refresh tokens, or two tabs race and log out."


def test_notes_within_one_payload_merge_into_each_other(
    conn: sqlite3.Connection, config: Config
) -> None:
    report = run(
        conn,
        config,
        "The CDN cached the API response for 10 minutes, which made the dashboard stale.\n\n"
        "Stale dashboard: the API response was cached by the CDN for 10 minutes.",
    )
    assert actions(report) == ["created", "merged"]
    assert report.notes[1].id == report.notes[0].id


def test_candidates_come_from_the_term_index_not_a_scan(
    conn: sqlite3.Connection, config: Config
) -> None:
    for i in range(30):
        run(conn, config, f"Unrelated fact number {i} about topic{i} and subject{i} widgets.")
    run(conn, config, "The flaky upload test failed because two workers shared one temp directory.")
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        report = run(
            conn, config, "Upload test flakiness: two workers were sharing a single temp directory."
        )
    finally:
        conn.set_trace_callback(None)
    assert actions(report) == ["merged"] and report.candidates == 1
    [query] = [s for s in statements if "FROM memory_terms" in s]
    plan = " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query))
    assert "SEARCH memory_terms USING PRIMARY KEY" in plan, plan
    assert "SCAN memories" not in plan and "SCAN m " not in plan + " ", plan
    assert "SCAN l " not in plan + " ", plan  # the layer is read by id, per posting


# caps --------------------------------------------------------------------------------------------


def _paragraphs(n: int) -> str:
    return "\n\n".join(
        f"Distinct fact {i}: widget{i} needs gadget{i} configured." for i in range(n)
    )


def test_at_most_twenty_notes_per_call_the_rest_dropped(
    conn: sqlite3.Connection, config: Config
) -> None:
    report = run(conn, config, _paragraphs(25))
    assert (report.captured, len(report.notes), report.dropped) == (25, 20, 5)
    assert report.as_dict()["created"] == 20
    assert len(memory.list_memories(conn)) == 20


def test_max_entities_lowers_the_cap_but_never_raises_it(
    conn: sqlite3.Connection, config: Config
) -> None:
    low = run(conn, config, _paragraphs(25), max_entities=5, dry_run=True)
    assert (len(low.notes), low.dropped) == (5, 20)
    high = run(conn, config, _paragraphs(25), max_entities=500, dry_run=True)
    assert (len(high.notes), high.dropped) == (20, 5)
    for bad in (0, -3, True, 2.5):
        with pytest.raises(PayloadError, match="max_entities"):
            run(conn, config, _paragraphs(2), max_entities=bad)


# dry run -----------------------------------------------------------------------------------------


def test_dry_run_writes_nothing_and_reports_the_same_actions(
    conn: sqlite3.Connection, config: Config
) -> None:
    run(
        conn,
        config,
        "# Zstd level\nCaptures use zstd level 10 for the ratio.\n\n"
        "# Upload test\nThe flaky upload test failed because two workers shared one temp "
        "directory.",
    )
    payload = (
        # updated:
        "# Zstd level\nCaptures use zstd level 10 for the ratio; 19 was too slow.\n\n"
        # merged:
        "# Flakiness\nUpload test flakiness: two workers were sharing a single temp directory.\n\n"
        # created:
        "# New fact\nThe CDN cached the API response for 10 minutes.\n\n"
        # merged into the memory just created:
        "# Same fact again\nThe API response was cached by the CDN for 10 minutes.\n\n"
        "# New fact\nThe CDN cached the API response for ten minutes.\n"
    )  # skipped
    before = table_counts(conn)
    dry = run(conn, config, payload, dry_run=True, now=T0 + 60)
    assert table_counts(conn) == before
    assert not conn.in_transaction
    real = run(conn, config, payload, now=T0 + 60)
    assert actions(dry) == actions(real) == ["updated", "merged", "created", "merged", "skipped"]
    dry_dict, real_dict = dry.as_dict(), real.as_dict()
    assert dry_dict["dry_run"] is True and real_dict["dry_run"] is False
    for field in ("captured", "created", "updated", "merged", "skipped", "dropped", "candidates"):
        assert dry_dict[field] == real_dict[field], field
    # Ids of memories that exist are reported; ids a dry run would create are not.
    assert [n.id for n in dry.notes][:2] == [n.id for n in real.notes][:2]
    assert [n.id for n in dry.notes][2:] == [None, None, None]


# transactions ------------------------------------------------------------------------------------


def test_all_writes_of_one_call_commit_together(
    conn: sqlite3.Connection, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_insert = memory.insert
    calls = []

    def failing_insert(*args: object, **kwargs: object) -> int:
        calls.append(1)
        if len(calls) == 3:
            raise sqlite3.OperationalError("disk I/O error (injected)")
        return real_insert(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(memory, "insert", failing_insert)
    before = table_counts(conn)
    with pytest.raises(StoreError, match="injected") as caught:
        run(conn, config, _paragraphs(5))
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    assert table_counts(conn) == before
    assert not conn.in_transaction


def test_inside_a_callers_transaction_the_caller_decides(
    conn: sqlite3.Connection, config: Config
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    report = run(conn, config, "A note written inside the archivist's transaction.")
    assert conn.in_transaction and actions(report) == ["created"]
    conn.execute("ROLLBACK")
    assert memory.list_memories(conn) == []
    conn.execute("BEGIN IMMEDIATE")
    dry = run(conn, config, "A dry run inside a caller's transaction.", dry_run=True)
    kept = run(conn, config, "A note the caller commits with its own work.")
    conn.execute("COMMIT")
    assert actions(dry) == ["created"] and dry.notes[0].id is None
    assert [m.id for m in memory.list_memories(conn)] == [kept.notes[0].id]


# passive -----------------------------------------------------------------------------------------


def test_passive_capture_follows_the_issue_example(
    conn: sqlite3.Connection, config: Config
) -> None:
    first = run(
        conn,
        config,
        "## Key Learnings:\n\n"
        "1. bcrypt cost=12 is the right balance for our server performance\n"
        "2. JWT refresh tokens need atomic rotation to prevent race conditions\n",
        passive=True,
    )
    assert first.passive_counts() == {"saved": 2, "skipped": 0, "total": 2}
    second = run(
        conn,
        config,
        "## Key Learnings:\n\n"
        "1. bcrypt cost=12 is the right balance\n"
        "2. New learning about rate limiting\n",
        passive=True,
        now=T0 + 60,
    )
    assert second.passive_counts() == {"saved": 1, "skipped": 1, "total": 2}
    saved = memory.list_memories(conn, "api")
    assert [m.type for m in saved] == ["passive"] * 3
    assert saved[0].summary == "bcrypt cost=12 is the right balance for our server"
    assert saved[0].body == "bcrypt cost=12 is the right balance for our server performance"


def test_passive_skips_the_same_items_within_fifteen_minutes(
    conn: sqlite3.Connection, config: Config
) -> None:
    text = (
        "Narrative that passive capture ignores entirely.\n\n### Learnings\n"
        "- WAL mode lets readers run beside the single writer\n"
        "- Use busy_timeout on every connection\n"
    )
    assert run(conn, config, text, passive=True).passive_counts() == {
        "saved": 2,
        "skipped": 0,
        "total": 2,
    }
    again = run(conn, config, text, passive=True, now=T0 + DUPLICATE_WINDOW_SECS - 1)
    assert again.passive_counts() == {"saved": 0, "skipped": 2, "total": 2}
    later = run(conn, config, text, passive=True, now=T0 + DUPLICATE_WINDOW_SECS + 1)
    assert later.passive_counts() == {"saved": 2, "skipped": 0, "total": 2}  # updated in place
    assert len(memory.list_memories(conn)) == 2


def test_passive_items_that_start_alike_are_different_memories(
    conn: sqlite3.Connection, config: Config
) -> None:
    # The same first 50 characters, different facts: the title is shared, the key is not.
    start = "Always pin the exact version of ruff in the CI config"
    first = run(conn, config, f"## Key Learnings\n- {start}, new rules break builds\n",
                passive=True)
    assert first.passive_counts() == {"saved": 1, "skipped": 0, "total": 1}
    second = run(conn, config, f"## Key Learnings\n- {start} and in pre-commit hooks\n"
                 f"- {start} of the docs repository\n", passive=True, now=T0 + 60)
    assert second.passive_counts() == {"saved": 2, "skipped": 0, "total": 2}
    saved = memory.list_memories(conn, "api")
    assert len(saved) == 3 and len({m.key for m in saved}) == 3
    assert len({m.summary for m in saved}) == 1


def test_passive_takes_only_learnings_sections(conn: sqlite3.Connection, config: Config) -> None:
    report = run(
        conn, config, "A paragraph that a normal capture would keep as a note.", passive=True
    )
    assert report.passive_counts() == {"saved": 0, "skipped": 0, "total": 0}
    assert memory.list_memories(conn) == []


def test_passive_items_over_the_cap_count_as_skipped(
    conn: sqlite3.Connection, config: Config
) -> None:
    items = "\n".join(f"- learning item number {i} about widget{i}" for i in range(23))
    report = run(conn, config, f"## Key Learnings\n{items}\n", passive=True)
    assert report.passive_counts() == {"saved": 20, "skipped": 3, "total": 23}
    assert report.as_dict()["dropped"] == 3


# the report and bad input ------------------------------------------------------------------------


def test_the_report_has_exactly_the_issue_fields(conn: sqlite3.Connection, config: Config) -> None:
    report = run(conn, config, "A note for checking the report fields.").as_dict()
    assert set(report) == REPORT_FIELDS
    assert report["ok"] is True and report["distiller"] == "rule_based"
    assert all(set(note) == NOTE_FIELDS for note in report["notes"])  # type: ignore[attr-defined]


@pytest.mark.parametrize("text", ["", "   \n\t\n  "])
def test_an_empty_payload_is_a_clear_error(
    conn: sqlite3.Connection, config: Config, text: str
) -> None:
    with pytest.raises(PayloadError, match="empty") as caught:
        run(conn, config, text)
    assert isinstance(caught.value, MemspoolError)


def test_an_oversized_payload_is_a_clear_error(conn: sqlite3.Connection, config: Config) -> None:
    with pytest.raises(PayloadError, match="4 MiB"):
        run(conn, config, "x" * (MAX_PAYLOAD_BYTES + 1))
    # Bytes, not characters: 4 MiB of two-byte characters is twice over.
    with pytest.raises(PayloadError, match="4 MiB"):
        run(conn, config, "é" * (MAX_PAYLOAD_BYTES // 2 + 1))


def test_a_payload_of_only_chatter_captures_nothing(
    conn: sqlite3.Connection, config: Config
) -> None:
    report = run(conn, config, "ok\n\nthanks!\n\ndone")
    assert (report.captured, report.notes) == (0, [])


def test_the_default_time_is_now(conn: sqlite3.Connection, config: Config) -> None:
    before = time.time()
    report = capture_with("A note stamped with the real clock.", config=config, conn=conn,
                          project="api")
    found = memory.get(conn, report.notes[0].id or 0)
    assert found is not None and before <= found.created_at <= time.time()


def test_a_secret_escaped_in_a_jsonl_payload_is_redacted_after_decoding(
        conn: sqlite3.Connection, config: Config) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    escaped = "\\u0067" + token[1:]  # what a JSON writer may emit for the "g"
    payload = '{"content": "Pitfall: the deploy script printed ' + escaped + ' in CI logs."}'
    report = run(conn, config, payload)
    found = memory.get(conn, report.notes[0].id or 0)
    assert found is not None
    assert token not in found.body and token[4:] not in found.body
    assert "[REDACTED:github]" in found.body


def test_a_deeply_nested_jsonl_payload_is_a_note_not_a_traceback(
        conn: sqlite3.Connection, config: Config) -> None:
    deep = '{"content": ' + "[" * 5000 + "]" * 5000 + "}"
    report = run(conn, config, deep + "\n" + deep)
    assert report.captured >= 1  # read as plain text, not as JSONL records


def test_a_saved_runbook_is_never_merged_into_another_services(home: Path) -> None:
    # A save answered "merged" into another memory keeps nothing of its own text.
    steps = " ".join(f"Step {i}: check {{0}} on node {{1}}{i} and record result."
                     for i in range(32))
    with Service() as service:
        first = service.save("Postgres runbook", steps.format("postgres", "db"), project="rb")
        second = service.save("Redis runbook", steps.format("redis", "cache"), project="rb")
        assert (first.action, second.action) == ("created", "created")
        assert first.id != second.id
        assert service.search("redis cache7", project="rb").results[0].id == second.id
        assert "redis" in service.get(second.id).memory.body


def test_a_document_is_refused_as_a_memory_and_nothing_is_saved(home: Path) -> None:
    # An 8 MB save took the store's lock for half a minute and every later search
    # scored its text: a memory's text has a bound, said in the refusal.
    with Service() as service:
        with pytest.raises(PayloadError, match=r"65,536.*capture the whole text"):
            service.save("Design doc", "paragraph of the design. " * 3000, project="docs")
        assert service.memories() == []
        kept = service.save("Design doc", "paragraph of the design. " * 2000, project="docs")
        assert kept.action == "created"


def test_a_long_captured_memory_still_exports_imports_and_takes_an_edit_of_its_type(
        home: Path, tmp_path: Path) -> None:
    # The bound is on text written whole: a long captured section stays the store's,
    # goes out and back in, and can be retyped without being cut.
    with Service() as service:
        report = service.capture("Pitfall: the cache never expires. " + "It grows. " * 9000,
                                 project="big")
        memory_id = report.notes[0].id
        long_body = service.get(memory_id).memory.body
        assert len(long_body) > 65_536
        dump = b"".join(service.export())
        edited = service.edit(memory_id, summary="The cache never expires.", body=long_body,
                              type="decision")
        assert edited.changed
        with pytest.raises(PayloadError, match="65,536"):
            service.edit(memory_id, summary="x", body=long_body + " More.", type="decision")
    with Service(tmp_path / "other") as other:
        assert other.import_lines(dump.splitlines()).created == 1
