"""The archivist: slices become memory through the real hooks, and maintenance keeps it true."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

import pytest
from conftest import capture_with, run_cli, wait_for
from web_support import Claude

from memspool.archivist import capture, digest, maintain, manual_origin
from memspool.archivist.lifecycle import confidence
from memspool.archivist.reconcile import CaptureReport, Origin, save_notes
from memspool.base.errors import PayloadError
from memspool.config import Config
from memspool.distill.blobs import BLOB_CHARS
from memspool.distill.claim_model import model
from memspool.distill.keys import distinct_key
from memspool.distill.note import Note
from memspool.distill.similarity import index_terms
from memspool.distill.transcript import notes_of, transcript_notes
from memspool.recall.context import render
from memspool.recall.search import search
from memspool.service import Service
from memspool.store import memories as rows
from memspool.store import transaction
from memspool.store.slices import queued

DAY = 86400.0


def _settled(home: Path) -> dict[str, Any]:
    def idle() -> dict[str, Any] | None:
        status = json.loads(run_cli("status", "--json").stdout)
        done = (status["pending_frames"] == 0 and not status["drainer_running"]
                and status["slices_total"] > 0)
        return status if done else None
    return wait_for(idle)  # type: ignore[return-value]


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_two_sessions_corroborate_a_changed_value_supersedes_chatter_stays_out(
        tmp_path: Path, home: Path, projects: Path) -> None:
    claude = Claude(tmp_path, projects)
    first = claude.session(
        ("Why were refunds counted twice?",
         "Root cause: the refund webhook inserted rows twice because its retries were not "
         "idempotent; the handler now checks the Stripe event id before inserting."),
        ("Which port does staging use?",
         "Heads up: the staging API listens on port 8080, not the default 3000."),
        ("ok", "Let me look at the logs first."),
    )
    _settled(home)
    second = claude.session(
        ("Refunds doubled again in the report?",
         "Root cause: the refund webhook inserted rows twice because its retries were not "
         "idempotent. The handler now checks the Stripe event id before inserting, so a "
         "retried event is ignored."),
        ("Staging moved?",
         "Heads up: the staging API listens on port 9090, not the default 3000."),
        ("thanks", "Sure! Anything else you want me to look at?"),
    )
    status = _settled(home)
    assert status["slices_queued"] == 0  # the detached drainer digested them when idle
    # The minor pass supersedes a new value as it digests; maintain catches what it missed.
    run_cli("maintain", "--json")
    memories = json.loads(run_cli("memories", "list", "--json", "--project", "shop").stdout)
    current = [m for m in memories if m["layer"] in ("buffer", "canonical")]
    refunds = [m for m in current if "refund" in m["body"].lower()]
    assert len(refunds) == 1
    assert refunds[0]["layer"] == "canonical" and refunds[0]["sessions"] == 2
    assert refunds[0]["confidence"] == confidence(2)
    ports = {m["layer"]: m for m in memories if "staging API" in m["body"]}
    assert set(ports) == {"superseded", "buffer"}
    assert "9090" in ports["buffer"]["body"] and "8080" in ports["superseded"]["body"]
    assert ports["superseded"]["superseded_by"] == ports["buffer"]["id"]
    assert not any("logs first" in m["body"] or "Anything else" in m["body"] for m in memories)
    shown = json.loads(run_cli("memories", "show", str(refunds[0]["id"]), "--json").stdout)
    assert {p["session"] for p in shown["provenance"]} == {first, second}
    assert all(p["slice_id"] for p in shown["provenance"])


def _queue_slice(conn: Any, config: Config, text: str, session: str = "s1", *,
                 project: str = "api", agent: str | None = None) -> int:
    """A slice in the queue as the drainer stores it."""
    import zstandard

    from memspool.store import transaction
    from memspool.store.slices import NewSlice, insert_slice
    body = zstandard.ZstdCompressor().compress(text.encode())
    with transaction(conn):
        return insert_slice(conn, NewSlice(
            session_id=session, agent_id=agent, project=project, event="Stop",
            transcript_path="/t.jsonl", byte_start=0, byte_end=len(text), part=1,
            records_kept=2, records_dropped=0, records_unknown=0, records_replayed=0,
            text_chars=len(text), redactions=0, body=body, created_at=1.0))


def test_a_backfilled_session_keeps_every_fact_past_twenty(config: Config, conn: Any) -> None:
    # One slice holds a whole session when it is backfilled: 25 answers, a fact each.
    services = ("billing", "search", "ledger", "mailer", "thumbnails", "exports", "webhooks",
                "audit", "reports", "sessions", "uploads", "payments", "inventory", "pricing",
                "geocoder", "scheduler", "notifier", "catalog", "checkout", "importer",
                "metrics", "gateway", "tokens", "archive", "cache")
    _queue_slice(conn, config, "\n\n".join(
        f"[user] why does {name} keep failing?\n\n[assistant] Root cause: the {name} worker "
        f"reads `{name.upper()}_TIMEOUT` in seconds, but the chart sets it in milliseconds, "
        f"so every call times out after {number + 2} ms." for number, name in enumerate(services)))
    report = digest(conn, config)
    assert (report.created, report.dropped) == (25, 0)
    kept = {m.body for m in rows.list_memories(conn, "api")}
    assert all(any(f"`{name.upper()}_TIMEOUT`" in body for body in kept) for name in services)


def test_the_minor_pass_keeps_provenance_and_explicit_requests_to_remember(
        config: Config, conn: Any) -> None:
    # A person asking memory to keep something is obeyed, whatever the model makes of
    # it ("remember to ..." and what is scoped to today are the task at hand, not that);
    # the assistant's fact beside it is judged as always.
    slice_id = _queue_slice(conn, config, (
        "[user] remember: the nightly export runs at 02:00 UTC from the reporting replica\n\n"
        "[assistant] I'll note that.\n\n"
        "[user] remember to rerun the flaky test before you push\n\n"
        "[user] remember: we're only touching the read path today. writes come later.\n\n"
        "[thinking] maybe the cache\n\n"
        "[assistant] Pitfall: `pnpm install` without --frozen-lockfile rewrites the lockfile "
        "on CI runners.\n"
        "[tool Bash] pytest -x"))
    report = digest(conn, config, now=lambda: 1234.0)
    assert report.slices == 1 and report.created == 2
    found = rows.list_memories(conn, "api")
    assert sorted(m.summary for m in found) == [
        "The nightly export runs at 02:00 UTC from the reporting replica",
        "`pnpm install` without --frozen-lockfile rewrites the lockfile on CI runners."]
    assert not any("I'll note" in m.body or "maybe the cache" in m.body for m in found)
    asked = next(m for m in found if "nightly" in m.summary)
    assert asked.clarity >= model().clear  # clearly stated: the context block shows it
    block, _ = render(conn, "api", 8000)
    assert "The nightly export runs at 02:00 UTC" in block
    for memory in found:
        (save,) = rows.provenance(conn, memory.id)
        assert (save.session, save.slice_id, save.source, save.at) == (
            "s1", slice_id, "transcript", 1234.0)
    assert conn.execute("SELECT digested_at FROM slices").fetchone()[0] == 1234.0
    assert digest(conn, config).slices == 0  # nothing left, nothing twice


@pytest.mark.parametrize(("said", "kept"), [
    ("remember: the nightly backup runs at 2am from the reporting replica",
     ["The nightly backup runs at 2am from the reporting replica"]),
    ("note for the future: prod uses port 8443 for the admin api",
     ["Prod uses port 8443 for the admin api"]),
    ("dont forget that staging has no redis, the cache tests skip there",
     ["Staging has no redis, the cache tests skip there"]),
    ("for later reference, the billing service retries 3 times with backoff",
     ["The billing service retries 3 times with backoff"]),
    ("Remember:\n- the DB is Postgres 15\n- run it now\n- ok", ["The DB is Postgres 15"]),
    # Tasks for now, however they are framed.
    ("remember: fix the import in orders.py and push it to the branch", []),
    ("don't forget the changelog entry when you're done with the fix", []),
    ("remember the login bug from last week, it's back, fix it", []),
    ("remember, please rerun the failing tests and paste the output", []),
    ("remember what I said about the tests and apply it to the other file", []),
    ("remember: the demo is at 3pm, so anything risky waits until after.", []),
    ("Remember:\nyes.", []),
])
def test_a_fact_asked_to_be_kept_is_kept_and_a_task_is_not(said: str, kept: list[str]) -> None:
    notes, _ = notes_of(f"[user] {said}")
    assert [n.summary for n in notes if n.only_if is None] == kept


@pytest.mark.xfail(strict=True, reason=(
    "the claim model scores a cause and its fix in a short answer under the keep bar "
    "(0.54, 0.60 against 0.70; held-out short facts kept 85%, docs/benchmarks.md)"))
def test_a_short_answers_cause_and_fix_are_kept(config: Config, conn: Any) -> None:
    _queue_slice(conn, config, (
        "[user] why did CI fail?\n\n"
        "[assistant] CI broke because the runner image dropped Python 3.10. "
        "Pinning `python-version: 3.11` in the workflow fixes it.\n"))
    digest(conn, config)
    assert [m.type for m in rows.list_memories(conn, "api")] == ["root-cause"]


def test_a_forgotten_memory_is_not_brought_back_by_digesting_its_slice_again(
        config: Config, conn: Any, home: Path) -> None:
    _queue_slice(conn, config, "[assistant] Pitfall: `pnpm install` without "
                 "--frozen-lockfile rewrites the lockfile on CI runners.")
    digest(conn, config)
    (memory,) = rows.list_memories(conn, "api")
    run_cli("memories", "forget", str(memory.id))
    assert rows.list_memories(conn, "api") == []
    conn.execute("UPDATE slices SET digested_at = NULL")
    report = digest(conn, config)
    assert report.slices == 1 and report.created == 0 and report.skipped == 1
    assert rows.list_memories(conn, "api") == []


def test_a_subagents_prompt_is_its_parents_task_never_a_users_rule(
        config: Config, conn: Any) -> None:
    said = ("[user] I prefer named exports over default exports in all the TS packages, "
            "it keeps renames greppable.\n\n"
            "[assistant] Done: the three components now use named exports.")
    _queue_slice(conn, config, said, session="main")
    _queue_slice(conn, config, said, session="sub", project="web", agent="a1f3")
    digest(conn, config)
    assert [m.type for m in rows.list_memories(conn, "api")] == ["preference"]
    assert rows.list_memories(conn, "web") == []


def test_a_rule_applied_in_a_later_session_corroborates_it_in_other_words(
        config: Config, conn: Any) -> None:
    _queue_slice(conn, config, (
        "[user] ok. never run migrations by hand against production, they only go through "
        "the release pipeline with `make release-migrate`"), session="monday")
    _queue_slice(conn, config, (
        "[assistant] The orders index is written.\n\n"
        "[assistant] Since you don't want migrations run by hand against production, the "
        "new index ships in `migrations/0042_orders_idx.sql` and `make release-migrate` "
        "applies it during the release."), session="thursday")
    _queue_slice(conn, config, (
        "[assistant] Per your rule, the export job reads from the replica: "
        "`REPORTS_DSN` points at `db-replica-2`, never at the primary."), session="friday")
    digest(conn, config)
    found = rows.list_memories(conn, "api")
    (rule,) = [m for m in found if "release-migrate" in m.body]
    assert rows.sessions_of(conn, rule.id) == {"monday", "thursday"}
    assert rule.summary.startswith("Never run migrations by hand")  # the rule's own words
    assert "0042_orders_idx.sql" in rule.body  # and how it was applied, found by search
    # Pointing back at a rule is no licence to fold in a fact the memory does not hold.
    assert [m for m in found if "REPORTS_DSN" in m.body and m.id != rule.id]


def test_a_rule_said_again_in_passing_in_a_later_session_corroborates_it(
        config: Config, conn: Any) -> None:
    _queue_slice(conn, config, (
        "[user] we never run the browser suite locally, the playwright tests only run in "
        "the nightly `e2e-full` job on CI"), session="monday")
    _queue_slice(conn, config, (
        "[assistant] The checkout form validates the postcode now.\n\n"
        "[assistant] I didn't run the browser suite here: the playwright tests run in the "
        "nightly `e2e-full` job on CI. The unit tests pass."), session="thursday")
    _queue_slice(conn, config, (
        "[assistant] The cart badge shows the item count now. I ran the unit tests on "
        "the badge component; the nightly job is unchanged."), session="friday")
    digest(conn, config)
    found = rows.list_memories(conn, "api")
    (rule,) = [m for m in found if "e2e-full" in m.body]
    # No "per your rule": the words it shares with the rule say it is said again.
    assert rows.sessions_of(conn, rule.id) == {"monday", "thursday"}
    assert rule.summary.startswith("We never run the browser suite locally")
    # A report that shares a word or two with the rule corroborates nothing.
    assert "friday" not in rows.sessions_of(conn, rule.id)


def test_a_report_of_a_change_that_says_a_persons_rule_again_corroborates_it(
        config: Config, conn: Any) -> None:
    # The later sentence reports changes (so it is offered as a new value first) and
    # moves no value of the rule: it says the rule again, and the rule gains a session.
    _queue_slice(conn, config, (
        "[user] ok, open a PR. never apply terraform against prod from a laptop, prod only "
        "ever gets applied by the `apply.yml` workflow after the merge"), session="monday")
    _queue_slice(conn, config, (
        "[assistant] The bucket policy is written.\n\n"
        "[assistant] PR #88 is up with all three changes; once it's merged the prod apply goes "
        "through the `apply.yml` workflow, and nothing gets applied against prod from this "
        "laptop."), session="thursday")
    digest(conn, config)
    (rule,) = [m for m in rows.list_memories(conn, "api") if "apply.yml" in m.body]
    assert rows.sessions_of(conn, rule.id) == {"monday", "thursday"}
    assert rule.summary.startswith("Never apply terraform against prod")
    assert "PR #88" not in rule.body  # a claim under the bar adds no words


def test_two_items_of_one_list_are_two_facts_whatever_their_introduction_shares(
        config: Config, conn: Any) -> None:
    _queue_slice(conn, config, (
        "[assistant] The ingest pool is `max_conns=16` per pod, set through "
        "`db.maxConns` in `deploy/values-prod.yaml`."), session="monday")
    _queue_slice(conn, config, (
        "[assistant] Both settings live in `deploy/values-prod.yaml`, nothing changed on "
        "the cluster by hand:\n\n"
        "- Memory: the container limit is `1536Mi` now and `GOMEMLIMIT` moves with it to "
        "`1380MiB`, about 90% as before.\n"
        "- Pool: the ingest pool is `max_conns=24` per pod now, since the sweeper holds up "
        "to 4 connections during a batch."), session="thursday")
    digest(conn, config)
    live = [m for m in rows.list_memories(conn, "api") if m.live]
    (memory,) = [m for m in live if "1536Mi" in m.body]
    (pool,) = [m for m in live if "max_conns=24" in m.body]
    assert memory.id != pool.id
    # Keyed by its own subject, not by the introduction the two items share.
    assert "pool" in pool.key and "settings" not in pool.key and "settings" not in memory.key
    assert not [m for m in live if "max_conns=16" in m.body]  # the old value left


def _minor_pass(notes: list[Any], config: Config, conn: Any, *, session: str,
                at: float) -> CaptureReport:
    """``notes`` reconciled as the minor pass hands them over, in project "api"."""
    report = CaptureReport(dry_run=False)
    save_notes(notes, config=config, conn=conn, origin=Origin("api", session, "minor"),
               report=report, now=at)
    return report


def _memory(conn: Any, config: Config, text: str, *, session: str, at: float) -> int:
    report = capture_with(text, config=config, conn=conn, project="api", session=session, now=at)
    note_id = report.notes[0].id
    assert note_id is not None
    return note_id


def test_siblings_fold_into_one_memory_and_keep_the_other_text_in_history(
        config: Config, conn: Any) -> None:
    t0 = 1_000_000.0
    first = _memory(conn, config, "# Deploy freeze\nNo deploys on Fridays after 15:00.",
                    session="a", at=t0)
    second = _memory(conn, config, "# Deploy freeze\nReleases pause from Friday noon until "
                     "Monday; hotfixes need two approvals.", session="b", at=t0 + 60)
    assert first != second  # another fact under a taken key got a key of its own
    report = maintain(conn, config, now=t0 + 120)
    assert report.siblings == 1
    remaining = rows.list_memories(conn, "api")
    assert [m.id for m in remaining] == [first]
    assert "hotfixes need two approvals" in remaining[0].body
    history = rows.history(conn, first)
    assert any("No deploys on Fridays" in h.body for h in history)
    assert remaining[0].sessions == 2 and remaining[0].layer == "canonical"


def test_contradictions_supersede_the_older_and_polarity_counts(
        config: Config, conn: Any) -> None:
    t0 = 1_000_000.0
    old = _memory(conn, config, "Decision: use the connection pooler pgbouncer in "
                  "transaction mode for the API.", session="a", at=t0)
    said = capture_with("Decision: never use the connection pooler pgbouncer in transaction "
                        "mode for the API.", config=config, conn=conn, project="api",
                        session="b", now=t0 + 60)
    # The capture supersedes as it saves; maintain finds nothing left to do.
    new = said.notes[0].id
    assert said.notes[0].supersedes == old
    assert maintain(conn, config, now=t0 + 120).superseded == 0
    older, newer = rows.get(conn, old), rows.get(conn, new)
    assert older is not None and newer is not None
    assert older.layer == "superseded" and older.superseded_by == new
    assert newer.layer == "buffer" and newer.live


def test_promotion_after_a_quiet_week_and_archiving_after_decay(
        config: Config, conn: Any) -> None:
    t0 = 1_000_000.0
    kept = _memory(conn, config, "Pattern: every handler validates input with pydantic "
                   "models from `schemas/`.", session="a", at=t0)
    maintain(conn, config, now=t0 + 1)
    assert rows.get(conn, kept).layer == "buffer"  # type: ignore[union-attr]
    week = t0 + config.promote_after_days * DAY + 1
    assert maintain(conn, config, now=week).promoted == 1
    assert rows.get(conn, kept).layer == "canonical"  # type: ignore[union-attr]
    # 0.6 halves every 30 days: below 0.1 after log2(6) half-lives (~78 days)
    recalled = week + 50 * DAY
    rows.set_standing(conn, kept, recalled_at=recalled)
    assert maintain(conn, config, now=t0 + 100 * DAY).archived == 0  # the recall reset it
    assert maintain(conn, config, now=recalled + 80 * DAY).archived == 1
    gone = rows.get(conn, kept)
    assert gone is not None and gone.layer == "archived"


def test_the_pass_looks_only_at_what_changed(config: Config, conn: Any) -> None:
    """Work follows the delta: the count of memories examined is the count changed."""
    t0 = 1_000_000.0
    for n in range(30):
        _memory(conn, config, f"Takeaway {n}: the worker pool number {n} drains queue q{n} "
                f"with batch size {n * 7}.", session="a", at=t0 + n)
    assert maintain(conn, config, now=t0 + 100).examined == 30
    assert maintain(conn, config, now=t0 + 200).examined == 0
    _memory(conn, config, "Pitfall: `make release` skips the changelog step unless "
            "CHANGELOG=1 is set.", session="b", at=t0 + 300)
    assert maintain(conn, config, now=t0 + 400).examined == 1


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_export_then_import_adds_nothing_and_a_new_store_gets_the_same(
        config: Config, conn: Any, tmp_path: Path, home: Path) -> None:
    t0 = 1_000_000.0
    _memory(conn, config, "Decision: we use ULIDs for public ids because they sort by "
            "time.", session="a", at=t0)
    _memory(conn, config, "Pitfall: `jq -r` prints null for a missing key, never an "
            "error.", session="b", at=t0)
    exported = run_cli("memories", "export").stdout
    dump = tmp_path / "memories.jsonl"
    dump.write_bytes(exported)
    again = json.loads(run_cli("memories", "import", str(dump), "--json").stdout)
    assert again == {"ok": True, "lines": 2, "created": 0, "updated": 0, "unchanged": 2,
                     "forgotten": 0}
    other = tmp_path / "other-home"
    first = json.loads(run_cli("--home", str(other), "memories", "import", str(dump),
                               "--json").stdout)
    assert first["created"] == 2
    copied = run_cli("--home", str(other), "memories", "export").stdout
    fields = ("project", "type", "key", "summary", "body", "layer", "confidence")
    assert [{f: json.loads(x)[f] for f in fields} for x in copied.splitlines()] == \
        [{f: json.loads(x)[f] for f in fields} for x in exported.splitlines()]


_FIELDS = b'"project": "p", "key": "k2", "summary": "Second", "body": "A second body here."'


@pytest.mark.parametrize("line", [b"not json", b"[1]", b'{"project": "p"}',
                                  b"[" * 5000 + b"]" * 5000,
                                  b'{' + _FIELDS + b', "confidence": "high"}',
                                  b'{' + _FIELDS + b', "importance": NaN}',
                                  b'{' + _FIELDS + b', "created_at": "last tuesday"}',
                                  b'{' + _FIELDS + b', "created_at": true}'])
def test_a_bad_import_line_is_a_clear_error_and_imports_nothing_of_its_batch(
        tmp_path: Path, line: bytes) -> None:
    good = json.dumps({"project": "p", "key": "k", "summary": "A summary of it",
                       "body": "A body that is long enough.", "type": "pitfall"}).encode()
    dump = tmp_path / "bad.jsonl"
    dump.write_bytes(good + b"\n" + line + b"\n")
    proc = run_cli("memories", "import", str(dump), check=False)
    assert proc.returncode == 1 and b"Line 2" in proc.stderr and b"Traceback" not in proc.stderr
    assert b"nothing of the file was imported" in proc.stderr
    with Service() as service:
        assert service.memories() == []


def test_a_trusted_line_without_times_is_a_memory_made_now_not_in_1970(
        config: Config, conn: Any) -> None:
    """Kept as written (``--trust``), a line that does not say when it was made used to
    be made in 1970, and the next maintenance archived it; an ISO time is read."""
    from memspool.archivist.transfer import import_lines

    def line(key: str, **more: object) -> bytes:
        return json.dumps({"project": "tr", "key": key, "type": "pitfall", "layer": "canonical",
                           "summary": f"Pitfall: {key} needs care", "confidence": 0.9,
                           "body": f"The {key} step needs care on every deploy.", **more}).encode()

    now = time.time()
    report = import_lines(conn, [line("untimed"), line("iso", created_at="2026-11-30T08:00:00Z")],
                          config=config, trust=True, now=now)
    assert report.created == 2
    untimed, iso = (rows.get_by_key(conn, "tr", key) for key in ("untimed", "iso"))
    assert untimed is not None and untimed.created_at == untimed.updated_at == now
    assert iso is not None and iso.created_at == iso.updated_at == 1_796_025_600.0
    maintain(conn, config, now=now + 60)
    assert {m.layer for m in rows.list_memories(conn, "tr")} == {"canonical"}


def test_an_import_from_an_endless_stream_stops_at_the_line_limit() -> None:
    """No line end ever comes (/dev/zero): the line is refused once it passes the limit,
    not read until memory runs out."""
    with open("/dev/zero", "rb") as endless:
        proc = subprocess.run([sys.executable, "-m", "memspool", "memories", "import", "-"],
                              stdin=endless, capture_output=True, timeout=120, check=False)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert b"Line 1 is longer than 8388608 bytes" in proc.stderr


def test_old_exports_leave_forgotten_text_out_even_under_a_key_taken_since(
        config: Config, conn: Any) -> None:
    """Saved under a key, exported, forgotten, the key given to a new text: importing
    the old export does not write the forgotten text back over the new one."""
    from memspool.archivist.transfer import export_lines, import_lines

    with Service() as service:
        first = service.save("Staging DB", "The staging DB password is hunter2-rotated.",
                             key="staging-db", project="shop")
        old = list(export_lines(service.conn))
        service.forget(first.id)
        service.save("Staging DB", "The staging DB is reached through the bastion.",
                     key="staging-db", project="shop")
        report = import_lines(service.conn, old, trust=True)
        assert (report.forgotten, report.updated, report.created) == (1, 0, 0)
        (kept,) = service.memories()
        assert kept.memory.body == "The staging DB is reached through the bastion."


def test_trusted_provenance_times_are_read_as_the_memory_times_are(
        config: Config, conn: Any) -> None:
    from memspool.archivist.transfer import import_lines

    def line(at: object) -> bytes:
        return json.dumps({"project": "p", "key": "k", "summary": "A summary of it",
                           "body": "A body that is long enough.",
                           "provenance": [{"session": "s1", "at": at}]}).encode()

    import_lines(conn, [line("2026-11-30T08:00:00Z")], trust=True)
    (memory,) = rows.list_memories(conn, "p")
    assert [p.at for p in rows.provenance(conn, memory.id)] == [1_796_025_600.0]
    for bad in (float("nan"), "soon"):
        with pytest.raises(PayloadError, match="Line 1: 'at' must be"):
            import_lines(conn, [line(bad).replace(b'"k"', b'"k2"')], trust=True)
    # A number of 400 digits is a number, clamped like any other (it was a traceback).
    import_lines(conn, [line(10**400).replace(b'"k"', b'"k3"')], trust=True)
    assert [p.at for m in rows.list_memories(conn, "p") if m.key == "k3"
            for p in rows.provenance(conn, m.id)] == [1e11]


def test_a_bad_line_past_a_saved_batch_says_which_lines_were_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memspool.archivist import transfer

    monkeypatch.setattr(transfer, "IMPORT_BATCH", 2)
    lines = [json.dumps({"project": "p", "key": f"k{n}", "summary": f"Summary number {n}",
                         "body": f"Body number {n} that is long enough."}).encode()
             for n in range(3)]
    with Service() as service, pytest.raises(PayloadError) as raised:
        service.import_lines([*lines, b"{not json"])
    assert str(raised.value).startswith("Line 4 is not JSON; lines 1 to 2 were imported")
    with Service() as service:
        assert sorted(m.memory.key for m in service.memories()) == ["k0", "k1"]


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_status_shows_memories_by_layer_and_the_last_pass(config: Config, conn: Any) -> None:
    _memory(conn, config, "Pitfall: `git stash` does not stash untracked files without -u.",
            session="a", at=time.time())
    run_cli("maintain")
    status = json.loads(run_cli("status", "--json").stdout)
    assert status["memories_by_layer"] == {"buffer": 1}
    assert status["last_maintain"]["examined"] == 1
    assert "last maintenance:" in run_cli("status").stdout.decode()


def test_a_new_value_supersedes_every_memory_that_states_the_old_one(
        config: Config, conn: Any) -> None:
    t0 = 1_000_000.0
    first = _memory(conn, config, "Gunicorn runs with `--workers 2` on the production hosts.",
                    session="a", at=t0)
    again = _memory(conn, config, "The Procfile still says gunicorn `--workers 2`, set for "
                    "the small box.", session="b", at=t0 + 60)
    report = capture_with("Raised gunicorn to `--workers 4` on the production hosts.",
                          config=config, conn=conn, project="api", session="c", now=t0 + 120)
    (note,) = report.notes
    assert note.supersedes == first and report.superseded == 2
    current = [m for m in rows.list_memories(conn, "api") if m.live]
    assert [m.summary for m in current] == [
        "Raised gunicorn to `--workers 4` on the production hosts."]
    old = rows.get(conn, again)
    assert old is not None and old.layer == "superseded" and old.superseded_by == note.id


def test_a_value_changed_back_and_forth_never_collides_on_a_key(
        config: Config, conn: Any) -> None:
    old, new = ("Production runs gunicorn with `--workers 2 --threads 4`.",
                "Production runs gunicorn with `--workers 4 --threads 4`.")
    key = capture_with(old, config=config, conn=conn, project="api", session="s0",
                       dry_run=True).notes[0].key
    # As a value changed back and forth leaves them: the new text under the old
    # one's key, and an older memory of the same new text already set aside.
    with transaction(conn):
        aside = rows.insert(conn, project="api", key=distinct_key(key, new), type="takeaway",
                            summary=new, body=new, terms=(), at=1_000_000.0)
        rows.set_standing(conn, aside, layer="superseded")
        holder = rows.insert(conn, project="api", key=key, type="takeaway", summary=new,
                             body=new, terms=(), at=1_000_060.0)
    report = capture_with(old, config=config, conn=conn, project="api", session="s9",
                          now=1_000_120.0)
    (note,) = report.notes
    assert note.action == "created" and note.supersedes == holder and note.key == key
    keys = [m.key for m in rows.list_memories(conn, "api")]
    assert len(keys) == len(set(keys)) == 3


def test_a_text_said_again_after_its_memory_was_replaced_never_collides_on_a_key(
        config: Config, conn: Any) -> None:
    said = "Production runs gunicorn with `--workers 4 --threads 4`."
    key = capture_with(said, config=config, conn=conn, project="api", session="s0",
                       dry_run=True).notes[0].key
    # Another fact holds the key, and the same text's own key is held by its
    # memory of before, replaced since (a value changed back, a slice digested twice).
    with transaction(conn):
        rows.insert(conn, project="api", key=key, type="takeaway", terms=(), at=1_000_000.0,
                    summary="Staging serves the docs from `docs/` on port 4000.",
                    body="Staging serves the docs from `docs/` on port 4000.")
        before = rows.insert(conn, project="api", key=distinct_key(key, said), type="takeaway",
                             summary=said, body=said, terms=(), at=1_000_000.0)
        rows.set_standing(conn, before, layer="superseded")
    for session, at in (("s9", 1_000_120.0), ("s10", 1_000_180.0)):
        report = capture_with(said, config=config, conn=conn, project="api", session=session,
                              now=at)
    (note,) = report.notes
    memories = rows.list_memories(conn, "api")
    assert len(memories) == 3  # said twice more: one memory, re-captured under its key
    assert note.key not in (key, distinct_key(key, said))
    assert [m.body for m in memories if m.live and m.key == note.key] == [said]


def test_a_changed_value_read_as_a_report_of_work_still_supersedes_the_old(
        config: Config, conn: Any) -> None:
    t0 = 1_000_000.0
    old = _memory(conn, config, "Every connection gets `statement_timeout: 5000` from "
                  "`config/database.yml`, so a long migration is cancelled after 5 seconds.",
                  session="a", at=t0)
    said = ("[assistant] Pushed. `statement_timeout` in `config/database.yml` went from 5000 to "
            "10000 ms.\n[assistant] The build now takes 4 minutes on CI.")
    assert transcript_notes(said) == []  # the model reads both as reports of work done
    notes = transcript_notes(said, conditional=True)
    # Each says a value moved (the second may also be offered as a rule said again).
    assert [n.only_if for n in notes][:2] == ["replaces", "replaces"]
    assert {n.only_if for n in notes[2:]} <= {"restates"}
    report = _minor_pass(notes, config, conn, session="b", at=t0 + 60)
    # The one that gives a memory its new value takes its place; the others
    # replace or restate nothing and are not saved.
    assert [n.action for n in report.notes] == ["created"] + ["skipped"] * (len(notes) - 1)
    assert report.notes[0].supersedes == old
    assert all(n.id is None for n in report.notes[1:])
    current = [m for m in rows.list_memories(conn, "api") if m.live]
    assert [m.summary for m in current] == [
        "`statement_timeout` in `config/database.yml` went from 5000 to 10000 ms."]
    assert current[0].clarity == rows.get(conn, old).clarity  # in the block where the old was
    # The agent's question names a new value; it is none.
    asked = transcript_notes("[assistant] Should I raise `statement_timeout` in "
                             "`config/database.yml` from 10000 to 20000 ms now?",
                             conditional=True)
    assert asked == []
    assert [m.summary for m in rows.list_memories(conn, "api") if m.live] == [
        "`statement_timeout` in `config/database.yml` went from 5000 to 10000 ms."]


@pytest.mark.parametrize(("memory", "said", "other"), [
    # A person gives a setting in words; a session later the agent moves it by its
    # name in code. Every word of the name is one of the person's sentence's.
    ("Ops wants the upload lock TTL at 5 minutes, editors keep losing drafts to each "
     "other.",
     "Bumped `UPLOAD_LOCK_TTL_MINUTES` from 5 to 8.",
     "Bumped `UPLOAD_RETRY_MINUTES` from 5 to 8."),
    # The memory names the setting in code beside its value; the report opens with
    # that name and another value.
    ("The importer only refetches the price list when its copy is older than 6 hours "
     "(`priceListMaxAge`), since suppliers publish once a morning.",
     "`priceListMaxAge` is now 12 hours, and the boundary tests moved with it. All 14 "
     "importer tests pass.",
     "`stockListMaxAge` is now 12 hours, and the boundary tests moved with it."),
])
def test_a_setting_named_in_code_takes_its_new_value_from_a_report(
        config: Config, conn: Any, memory: str, said: str, other: str) -> None:
    # The report is under the keep bar and shares too few words with the memory for
    # the overlap a report is held to, but the setting's name pins the subject.
    t0 = 1_000_000.0
    old = _memory(conn, config, memory, session="a", at=t0)
    notes = transcript_notes(f"[assistant] {said}", conditional=True)
    assert [n.only_if for n in notes][:1] == ["replaces"]
    # A name the memory does not say is another setting's.
    others = transcript_notes(f"[assistant] {other}", conditional=True)
    assert {n.action for n in _minor_pass(others, config, conn, session="b",
                                          at=t0 + 30).notes} == {"skipped"}
    report = _minor_pass(notes, config, conn, session="b", at=t0 + 60)
    assert [(n.action, n.supersedes) for n in report.notes
            if n.action != "skipped"] == [("created", old)]
    (live,) = [m for m in rows.list_memories(conn, "api") if m.live]
    assert live.summary == notes[0].summary


def test_a_value_moved_in_one_line_of_a_grown_memory_supersedes_it(
        config: Config, conn: Any) -> None:
    # A merge joined another note's words to the memory of the line limit: its whole
    # text shares too little with a short report of the new value, its first line enough.
    t0 = 1_000_000.0
    old = _memory(conn, config, "The line limit lives in `src/config.zig` as `pub const "
                  "max_line_len = 64 * 1024;`: `tail` skips a longer line with a warning "
                  "on stderr instead of aborting the whole command.", session="a", at=t0)
    beside = ("The ring allocates from `ctx.gpa`, which is how the commands here split "
              "memory: everything in `src/cmd/` gets a `*const Ctx`, anything that lives as "
              "long as the command goes on `ctx.arena`, which `main.zig` frees once the "
              "command returns, and anything allocated per line and dropped again goes on "
              "`ctx.gpa`, because an arena would never give the evicted lines back; "
              "`std.heap.GeneralPurposeAllocator` reports any leak of the ring at exit in "
              "debug builds, and `zig build test` runs the allocator tests under "
              "`std.testing.allocator`.")
    memory = rows.get(conn, old)
    assert memory is not None
    with transaction(conn):
        grown = f"{memory.body}\n{beside}"
        rows.corroborate(conn, memory, at=t0 + 10, body=grown, terms=index_terms(grown))
    said = ("[assistant] The longest line there is 311,864 bytes, so `max_line_len` in "
            "`src/config.zig` is now `1024 * 1024` (1 MiB), about three times that.")
    notes = transcript_notes(said, conditional=True)
    assert [n.only_if for n in notes] == ["replaces", "restates"]  # under the keep bar
    _queue_slice(conn, config, said, session="b")
    digest(conn, config)
    assert rows.get(conn, old).layer == "superseded"
    (current,) = [m for m in rows.list_memories(conn, "api") if m.live]
    assert current.summary.startswith("The longest line there is 311,864 bytes")
    # The other fact the grown memory held stays in recall, with the new value.
    assert "64 * 1024" not in current.body and "`ctx.arena`" in current.body


#: A rule of a store package the tests of restatements and merged lines say again.
_WITH_TX_RULE = ("Every multi-statement transaction in the store package goes through "
                 "`store.WithTx` in `internal/store/tx.go`, which retries it on a "
                 "serialization error (40001).")


def _grown(conn: Any, config: Config, text: str, merged: str, *, at: float) -> int:
    """A memory of session "a" whose text a merge grew by a line, as `_merge` joins one."""
    memory_id = _memory(conn, config, text, session="a", at=at)
    memory = rows.get(conn, memory_id)
    assert memory is not None
    with transaction(conn):
        grown = f"{memory.body}\n{merged}"
        rows.corroborate(conn, memory, at=at + 10, body=grown, terms=index_terms(grown))
    return memory_id


def test_a_new_value_of_a_grown_memory_carries_no_line_of_the_old_value(
        config: Config, conn: Any) -> None:
    old = _grown(conn, config, "Production runs gunicorn with `--workers 2 --threads 4`.",
                 "We keep workers at 2 because PgBouncer only has 40 connections.\n"
                 "Deploys go out through `bin/deploy.sh` behind the load balancer on port "
                 "8443.", at=1_000_000.0)
    said = "[assistant] Production now runs gunicorn with `--workers 4 --threads 4`."
    _queue_slice(conn, config, said, session="b")
    digest(conn, config)
    assert rows.get(conn, old).layer == "superseded"
    (current,) = [m for m in rows.list_memories(conn, "api") if m.live]
    assert "workers at 2" not in current.body  # the old value's reason went with it
    assert "port 8443" in current.body  # a value of another fact stays in recall
    # The note's own words are what a forget buries and a digest of them again finds.
    with Service(config.home) as service:
        service.forget(current.id)
    _queue_slice(conn, config, said, session="c")
    digest(conn, config)
    assert not [m for m in rows.list_memories(conn, "api") if m.live]


def test_a_new_value_carries_no_introduction_without_what_it_introduced(
        config: Config, conn: Any) -> None:
    # A memory's line that introduced the value a new text moves leaves with it: it is
    # neither left behind in the old memory's text nor carried alone into the new one.
    _grown(conn, config, "two quick ones before lunch:\n"
           "CI runs terraform 1.7.5 and my laptop has 1.8.2 from brew.",
           "Deploys go out through `bin/deploy.sh` behind the load balancer on port 8443.",
           at=1_000_000.0)
    _queue_slice(conn, config, "[assistant] CI now runs terraform 1.9.8, pinned in "
                 "`.terraform-version`, and my laptop has 1.9.8 too.", session="b")
    digest(conn, config)
    live = [m for m in rows.list_memories(conn, "api") if m.live]
    assert [m for m in live if "terraform 1.9.8" in m.body]
    assert [m for m in live if "port 8443" in m.body]
    assert not [m.body for m in live if "before lunch" in m.body]


def test_a_new_value_of_news_merged_into_a_rule_leaves_the_rule_current(
        config: Config, conn: Any) -> None:
    # The old value said on its own by another session leaves recall with the new one.
    alone = _memory(conn, config, "Unpaid reservations expire after 15 minutes.", session="c",
                    at=999_990.0)
    rule = _grown(conn, config, _WITH_TX_RULE,
                  "Unpaid reservations expire after 15 minutes: the sweeper in "
                  "`internal/sweeper/expire.go` deletes each expired row from `reservations`.",
                  at=1_000_000.0)
    _queue_slice(conn, config, (
        "[assistant] Unpaid reservations now expire after 30 minutes: the sweeper in "
        "`internal/sweeper/expire.go` deletes each expired row from `reservations`."),
        session="b")
    digest(conn, config)
    kept = rows.get(conn, rule)
    assert kept is not None and kept.live
    assert "15 minutes" not in kept.body and "store.WithTx" in kept.body
    assert rows.get(conn, alone).layer == "superseded"
    assert [m.summary[:40] for m in rows.list_memories(conn, "api")
            if m.live and "30 minutes" in m.body] == ["Unpaid reservations now expire after 30 "]


def test_a_rule_said_again_as_always_corroborates_it_and_nothing_else_is_saved(
        config: Config, conn: Any) -> None:
    t0 = 1_000_000.0
    rule = _memory(conn, config, "Preference: specs for new endpoints are request specs only; "
                   "we are phasing out controller specs and want no new ones.",
                   session="a", at=t0)
    said = ("[user] ok ship the export. tests: request specs for the new endpoint, as always"
            "\n[user] the usual applies for the deploy window, thanks")
    assert all(n.only_if is None for n in transcript_notes(said))  # the model keeps neither
    notes = [n for n in transcript_notes(said, conditional=True) if n.only_if == "restates"]
    assert len(notes) == 2
    report = _minor_pass(notes, config, conn, session="b", at=t0 + 60)
    # The one that restates the rule corroborates it; the other restates nothing here.
    assert [(n.action, n.id) for n in report.notes] == [("merged", rule), ("skipped", None)]
    (memory,) = [m for m in rows.list_memories(conn, "api") if m.live]
    assert memory.sessions == 2 and memory.body.startswith("Preference: specs for new")
    assert "as always" not in memory.body  # an unsure claim adds no words


def test_a_setting_reported_as_changed_is_kept_though_its_old_value_never_was(
        config: Config, conn: Any) -> None:
    """The agent's account of a setting it changed is under the keep bar (a report
    of work done): its old value's memory would be replaced, but none was kept.
    The setting as it stands now is kept, searchable; its next change supersedes
    it. A report that writes no setting is not kept."""
    t0 = 1_000_000.0

    def played(said: str, session: str, at: float) -> CaptureReport:
        notes = transcript_notes(f"[assistant] {said}", conditional=True)
        assert len(notes) == 1 and notes[0].only_if == "replaces"
        return _minor_pass(notes, config, conn, session=session, at=at)

    first = played("Bumped it: `copyBatchSize = 20000` in `config/ingest.dhall` now.", "a", t0)
    assert [n.action for n in first.notes] == ["created"]
    # Written as it stands, no word of change ("again"): the setting's new value.
    second = played("`copyBatchSize = 50000` again in `config/ingest.dhall`.", "b", t0 + 60)
    assert [(n.action, n.supersedes) for n in second.notes] == [("created", first.notes[0].id)]
    report = played("Pushed it now, CI went from 9 to 12 checks and they are green.", "c",
                    t0 + 120)
    assert [n.action for n in report.notes] == ["skipped"]
    # A name and a number read out of a report, a place in a file, an image or a
    # commit write no setting.
    for said in ("Ran it: `testDebugUnitTest`: 229 tests, all green.",
                 "Fixed the off-by-one at `lexical.py:260` and the tests pass.",
                 "The job runs on `postgres:16` and `commit: 3f9c21a` has it."):
        notes = transcript_notes(f"[assistant] {said}", conditional=True)
        assert not [n for n in notes if n.only_if == "replaces"], said
    (live,) = [m for m in rows.list_memories(conn, "api") if m.live]
    assert "copyBatchSize = 50000" in live.body
    assert [h.id for h in search(conn, "copyBatchSize", project="api")] == [live.id]


def test_a_setting_of_another_subject_is_not_its_new_value_nor_a_persons_aside_kept(
        config: Config, conn: Any) -> None:
    t0 = 1_000_000.0

    def played(said: str, session: str, at: float) -> CaptureReport:
        notes = transcript_notes(said, conditional=True)
        return _minor_pass(notes, config, conn, session=session, at=at)

    primary = played("[assistant] On the primary, `max_connections = 200` in `postgresql.conf` "
                     "now.", "a", t0).notes[0].id
    played("[assistant] On the replica, `max_connections = 400` in `postgresql.conf` now.", "b",
           t0 + 60)
    live = [m for m in rows.list_memories(conn, "api") if m.live]
    assert len(live) == 2 and primary in {m.id for m in live}
    # A person's "as always" with a setting is a request: it replaces or keeps nothing.
    report = played("[user] Start the celery workers with `--concurrency 2` on the staging "
                    "box, as always.", "c", t0 + 120)
    assert [n.action for n in report.notes] == ["skipped"]
    assert len([m for m in rows.list_memories(conn, "api") if m.live]) == 2


def test_terminal_colours_leave_no_trace_in_memory_keys_or_search(
        config: Config, conn: Any) -> None:
    """A coloured word ("\\x1b[31mstaging\\x1b[0m", as tools print it) is the word alone
    in a transcript's memory and in a capture's key and report: no "[31m" left to
    split it from search."""
    red = "\x1b[1;31mstaging\x1b[0m"
    _queue_slice(conn, config, "[assistant] Pitfall: `pnpm install` without "
                 f"--frozen-lockfile rewrites the lockfile on the {red} runners.")
    assert digest(conn, config).created == 1
    report = capture(f"Pitfall: the {red} database \x1b]0;title\x07drops idle sessions "
                     "after 300 s.", config=config, conn=conn, origin=manual_origin("api"))
    (note,) = report.notes
    assert note.key.startswith("pitfall-the-staging-database-drops") and "\x1b" not in note.summary
    texts = [m.summary + m.body for m in rows.list_memories(conn, "api")]
    assert len(texts) == 2 and all("the staging " in text for text in texts)
    assert not any(junk in text for text in texts for junk in ("[0m", "31m", "\x1b", "title"))
    assert len(search(conn, "staging", project="api")) == 2


@pytest.mark.timeout(60)  # a guard: such a slice once held the pass for half an hour
def test_a_slice_filled_by_one_long_run_is_digested_to_its_fact_redacted_without_the_run(
        config: Config, conn: Any) -> None:
    """A 200,000-character dump beside a fact: the fact is a memory, its secret
    redacted as ever, and the dump no part of it."""
    dump = bytes(range(256)).hex() * 400
    _queue_slice(conn, config, "[assistant] Pitfall: `pnpm install` without "
                 "--frozen-lockfile rewrites the lockfile on the CI runners, which log in "
                 "with NPM_TOKEN=npm_Zq8wLp2vN4xKZq8wLp2vN4xKZq8wLp2vN4xK. The lockfile "
                 f"diff: {dump}")
    assert digest(conn, config).created == 1
    (memory,) = rows.list_memories(conn, "api")
    said = f"{memory.summary} {memory.body}"
    assert "frozen-lockfile" in said and "[REDACTED:npm]" in said
    assert "Zq8wLp2vN4xK" not in said
    assert all(len(run) <= BLOB_CHARS for run in said.split())


def test_a_value_change_is_offered_before_sentences_kept_only_as_restatements() -> None:
    from memspool.distill.transcript import NOTES_PER_MESSAGE, transcript_notes
    services = ["billing", "search", "ledger", "mailer", "exports", "webhooks", "audit",
                "reports", "uploads", "payments", "inventory", "pricing", "geocoder",
                "scheduler", "notifier", "catalog", "checkout", "importer", "sessions",
                "thumbnails", "accounts", "alerts", "metrics", "gateway", "invoices",
                "refunds", "coupons", "shipping", "returns", "reviews"]
    assert len(services) > NOTES_PER_MESSAGE
    report = " ".join(f"I checked the {s} service: its `{s}_worker` handles retries through "
                      "the queue." for s in services)
    said = f"[assistant] {report} The `statement_timeout` went from 5000 to 10000 ms."
    notes = transcript_notes(said, conditional=True)
    # A long report fills the message's share of notes; the change still has its place.
    assert [n.only_if for n in notes if "10000" in n.body] == ["replaces"]


#: A person's rule in a prompt that asks for something else.
PRISMA_RULE = ("[user] the invoice totals are off by a cent on some orders, can you look at "
               "the rounding in `lib/money.ts`? also i'd rather you never mock prisma in "
               "vitest, prisma mocks test nothing.")


def test_a_persons_rule_said_again_in_a_later_session_is_one_memory_of_two_sessions(
        config: Config, conn: Any) -> None:
    _queue_slice(conn, config, PRISMA_RULE, session="monday")
    _queue_slice(conn, config, (
        "[assistant] Pitfall: `prisma migrate dev` resets the shadow database, so a test "
        "run against it loses the seed data."), session="monday")
    _queue_slice(conn, config, (
        "[user] the export page times out for big teams, can you page the query in "
        "`app/export/route.ts`? and no prisma mocks in the tests for any of this, i want "
        "them against the test db"),
        session="thursday")
    _queue_slice(conn, config, (
        "[user] can you look at why the export is slow? and from now on seed the test data "
        "with `pnpm db:seed` after every prisma migrate dev, a test run needs the seed "
        "data."), session="thursday")
    digest(conn, config)
    found = [m for m in rows.list_memories(conn, "api") if m.live]
    (rule,) = [m for m in found if "mock" in m.body]
    # A person who says a rule of theirs again reminds: one memory, two sessions.
    assert rows.sessions_of(conn, rule.id) == {"monday", "thursday"}
    assert rule.summary.startswith("I'd rather you never mock prisma")
    # Their new rule shares most of its words with the agent's pitfall, but it is a
    # rule of theirs said once, not the agent's fact said again: two memories.
    (pitfall,) = [m for m in found if "shadow database" in m.body]
    assert rows.sessions_of(conn, pitfall.id) == {"monday"}
    (seed,) = [m for m in found if "db:seed" in m.body]
    assert rows.sessions_of(conn, seed.id) == {"thursday"}


def test_a_persons_clear_rule_said_again_in_their_own_words_is_one_memory(
        config: Config, conn: Any) -> None:
    _queue_slice(conn, config, (
        "[user] pls dont go adding alamofire or anything like that, i'd prefer we stay on "
        "plain URLSession, no networking pods or packages"), session="monday")
    _queue_slice(conn, config, (
        "[user] bug from the warehouse: POST /api/orders -> 201 with the new id, then GET "
        "/api/orders/<id> -> 404. and it STAYS 404 until we redeploy, then the order shows "
        "up. from the api logs:\n```\n2024-03-18T09:12:44.201Z INFO  http - POST /api/orders "
        "201 38ms\n2024-03-18T09:12:44.957Z INFO  http - GET /api/orders/17592186048811 404 "
        "3ms\n```"), session="monday")
    digest(conn, config)
    found = [m for m in rows.list_memories(conn, "api") if m.live]
    (rule,) = [m for m in found if "Alamofire" in m.body or "alamofire" in m.body]
    (report,) = [m for m in found if "/api/orders" in m.body]
    # The premise: the rule is one of theirs, stated clearly; their bug report is read
    # as theirs too, but as no rule.
    assert rule.type == report.type == "preference"
    assert rule.clarity >= model().clear > report.clarity
    # A later session: they say the rule again in words of their own, beside a request,
    # and give a new rule in their report's words.
    _queue_slice(conn, config, (
        "[user] the upload screen needs a progress bar. still plain URLSession pls, no "
        "third-party upload libs."), session="thursday")
    _queue_slice(conn, config, (
        "[user] from now on every POST /api/orders handler must read its own write back "
        "before returning 201, i never want that 404 again"), session="thursday")
    digest(conn, config)
    live = [m for m in rows.list_memories(conn, "api") if m.live]
    # Their rule said again is their rule: one memory of two sessions.
    assert rows.sessions_of(conn, rule.id) == {"monday", "thursday"}
    assert [m.id for m in live if "URLSession" in m.body] == [rule.id]
    # Their new rule is news, not their report said again: only a clear rule of theirs
    # is said again in words this loose.
    assert rows.sessions_of(conn, report.id) == {"monday"}
    (new,) = [m for m in live if "read its own write back" in m.body]
    assert new.id != report.id and rows.sessions_of(conn, new.id) == {"thursday"}


def test_a_person_reminding_of_their_clear_rule_in_their_own_words_corroborates_it(
        config: Config, conn: Any) -> None:
    _queue_slice(conn, config, (
        "[user] pls keep scripts/eval.py plain argparse, someone hydra-fied it once and it "
        "was a mess, i want to run eval with just a ckpt path and nothing else"),
        session="monday")
    # "reminder that ..." says it is said again: no stricter a bar than their rule said
    # again without the word.
    _queue_slice(conn, config, (
        "[user] love it. try 128 per gpu. and reminder that the eval script stays plain "
        "argparse, dont let the launcher/hydra stuff creep into it if you touch it"),
        session="thursday")
    digest(conn, config)
    (rule,) = [m for m in rows.list_memories(conn, "api") if m.live and "argparse" in m.body]
    assert rule.summary.startswith("Pls keep scripts/eval.py plain argparse")
    assert rows.sessions_of(conn, rule.id) == {"monday", "thursday"}


def test_a_persons_rule_said_again_under_the_bar_corroborates_only_their_rule(
        config: Config, conn: Any) -> None:
    request = ("[user] the export page times out for big teams, can you page the query in "
               "`app/export/route.ts`? ")
    again = f"{request}and don't mock prisma in the tests for this"
    aside = "[user] ugh the prisma mocks in the old branch broke again lol"
    # The premise: the model keeps neither outright. The rule, which their rule model
    # reads as one (not clearly enough to keep it whatever the request around it), is
    # offered as their rule said again; the aside, which shares its words, is not.
    assert transcript_notes(again) == transcript_notes(aside) == []
    assert [(n.only_if, n.restates) for n in transcript_notes(again, conditional=True)] \
        == [("restates", "person")]
    assert transcript_notes(aside, conditional=True) == []
    _queue_slice(conn, config, PRISMA_RULE, session="monday")
    _queue_slice(conn, config, (
        "[assistant] Pitfall: prisma mocks in vitest drift from the schema, so a test "
        "against a mock passes while the real query fails."), session="monday")
    digest(conn, config)
    (rule,) = [m for m in rows.list_memories(conn, "api") if "rather" in m.body]
    (pitfall,) = [m for m in rows.list_memories(conn, "api") if "drift" in m.body]
    body = rule.body
    # An aside that names the rule's words says it again of nothing.
    _queue_slice(conn, config, aside, session="tuesday")
    digest(conn, config)
    assert rows.sessions_of(conn, rule.id) == {"monday"}
    # Said again in passing, a session later: their rule gains the session and no words,
    # and the agent's pitfall, which shares them, gains nothing.
    _queue_slice(conn, config, again, session="thursday")
    digest(conn, config)
    assert rows.sessions_of(conn, rule.id) == {"monday", "thursday"}
    assert rows.get(conn, rule.id).body == body
    assert rows.sessions_of(conn, pitfall.id) == {"monday"}
    # Said again clearly, inside a request: kept outright (their rule model's keep
    # bar), it is their rule said again, and the rule gains its words.
    clearly = f"{request}and no prisma mocks in the tests for any of this, i want them against " \
        "the test db"
    assert [(n.only_if, n.restates) for n in transcript_notes(clearly)] == [(None, "person")]
    _queue_slice(conn, config, clearly, session="friday")
    digest(conn, config)
    assert rows.sessions_of(conn, rule.id) == {"monday", "thursday", "friday"}
    assert rows.get(conn, rule.id).body.startswith(body) and "test db" in rows.get(
        conn, rule.id).body
    assert rows.sessions_of(conn, pitfall.id) == {"monday"}
    assert len([m for m in rows.list_memories(conn, "api") if m.live]) == 2


def test_a_fact_said_again_in_a_report_of_later_work_corroborates_it(
        config: Config, conn: Any) -> None:
    # The agent's report of later work that says a fact of an earlier session again,
    # without pointing back at it, is that fact's second session; a later fact that
    # shares its words only in part is a fact of its own, and so is one of the same
    # session.
    _queue_slice(conn, config, (
        "[assistant] Worth keeping as a rule for this repo: nothing automated ever signs "
        "in as `root@pam`; template builds always authenticate with the `packer@pve!build` "
        "API token."), session="monday")
    _queue_slice(conn, config, (
        "[assistant] The debian12 template on pve03 is rebuilt with the same "
        "`packer@pve!build` API token as every template build; `root@pam` isn't involved "
        "anywhere in it."), session="thursday")
    _queue_slice(conn, config, (
        "[assistant] On PVE 8 nodes the `packer@pve!build` token's role also needs "
        "`SDN.Use`, or the build fails at the network device."), session="thursday")
    digest(conn, config)
    found = [m for m in rows.list_memories(conn, "api") if m.live]
    (rule,) = [m for m in found if "root@pam" in m.body]
    assert rows.sessions_of(conn, rule.id) == {"monday", "thursday"}
    assert "nothing automated ever signs in as `root@pam`" in rule.summary
    assert "pve03" in rule.body  # the restatement's words join it: search finds them
    (role,) = [m for m in found if "SDN.Use" in m.body]
    assert role.id != rule.id
    assert rows.sessions_of(conn, role.id) == {"thursday"}


def test_a_fact_said_again_with_its_cause_keeps_the_cause(config: Config, conn: Any) -> None:
    # A later session's fact that is the same as a memory's (it names the same
    # setting in the same file) and tells its cause besides: one memory of two
    # sessions, whose text holds both; the cause is not dropped with the merge.
    _queue_slice(conn, config, (
        "[assistant] `main` in `cmd/export/main.go` now sets `time.Local = time.UTC` first "
        "thing, so the nightly export writes UTC timestamps whatever zone the host is in."),
        session="monday")
    _queue_slice(conn, config, (
        "[assistant] The nightly export came out an hour off because cron starts it with an "
        "empty environment and Go took its zone from `/etc/localtime` on batch02 "
        "(Europe/Berlin); `time.Local = time.UTC` in `cmd/export/main.go` keeps it in UTC."),
        session="thursday")
    digest(conn, config)
    found = [m for m in rows.list_memories(conn, "api") if m.live and "time.Local" in m.body]
    (memory,) = found
    assert rows.sessions_of(conn, memory.id) == {"monday", "thursday"}
    assert memory.summary.startswith("`main` in `cmd/export/main.go` now sets")
    assert "/etc/localtime" in memory.body and "empty environment" in memory.body
    assert "first thing" in memory.body  # the memory's own words stay


def _said(conn: Any, memory_id: int, *, type: Any, summary: str, body: str) -> None:
    """Give a memory another text as a session's word would: not a person's correction
    (which the archivist leaves as it is; see test_a_persons_correction_stands_*)."""
    memory = rows.get(conn, memory_id)
    assert memory is not None
    with transaction(conn):
        rows.replace_text(conn, memory, type=type, summary=summary, body=body,
                          terms=index_terms(body), at=time.time(), reason="a session's word")


def _export_memories(conn: Any, config: Config) -> tuple[int, int]:
    """Two memories of two sessions: the export's fix, and an unrelated deploy step."""
    t0 = time.time()
    older = _memory(conn, config, "`main` in `cmd/export/main.go` now sets `time.Local = "
                    "time.UTC` first thing, so the nightly export writes UTC timestamps "
                    "whatever zone the host is in.", session="a", at=t0)
    newer = _memory(conn, config, "Deploy the export with `make ship` from `ops/`.",
                    session="b", at=t0 + 1)
    return older, newer


def test_folding_two_memories_of_one_fact_keeps_what_each_says(
        config: Config, conn: Any) -> None:
    # The major pass folds a memory into an older one of the same fact: the older keeps
    # its summary, and its text gains what only the newer says.
    older, newer = _export_memories(conn, config)
    # A later word makes the newer memory the same fact told with its cause: the
    # next pass finds the two alike.
    _said(conn, newer, type="root-cause", summary="Why the export was an hour off",
          body="The nightly export came out an hour off because cron starts it "
          "with an empty environment and Go took its zone from `/etc/localtime` "
          "on batch02 (Europe/Berlin); `time.Local = time.UTC` in "
          "`cmd/export/main.go` keeps it in UTC.")
    report = maintain(conn, config, now=time.time() + 1)
    assert report.merged == 1
    (memory,) = [m for m in rows.list_memories(conn, "api") if m.live]
    assert memory.id == older
    assert memory.summary.startswith("`main` in `cmd/export/main.go` now sets")
    assert "/etc/localtime" in memory.body and "first thing" in memory.body


def test_the_value_said_last_wins_though_its_memory_was_made_first(
        config: Config, conn: Any) -> None:
    # Monday's memory of the heap; Tuesday caps the cache at 512m; Wednesday's report
    # gives it 768m and says the heap setting again, so the pass folds it into
    # Monday's memory. That memory now states Wednesday's value: it replaces
    # Tuesday's, not the other way round because its row is older.
    t0 = time.time() - 3 * DAY
    monday = _memory(conn, config, "With `-XX:MaxRAMPercentage=75` the heap is sized from "
                     "the container limit, and the remaining quarter is left for "
                     "everything off-heap.", session="a", at=t0)
    tuesday = _memory(conn, config, "The peer's object cache is capped with "
                      "`-Ddatomic.objectCacheMax=512m`.", session="b", at=t0 + DAY)
    wednesday = _memory(conn, config, "The nightly backup runs from `ops/backup.sh` on the "
                        "bastion host.", session="c", at=t0 + 2 * DAY)
    # What Wednesday's report said, as the pass reads it.
    _said(conn, wednesday, type="decision", summary="The object cache cap is 768m",
          body="`-Ddatomic.objectCacheMax=768m`, still with `-XX:MaxRAMPercentage=75`")
    report = maintain(conn, config, now=time.time())
    assert report.merged == 1 and report.superseded == 1
    live = [m for m in rows.list_memories(conn, "api") if m.live]
    assert [m.id for m in live] == [monday]
    assert "objectCacheMax=768m" in live[0].body
    old = rows.get(conn, tuesday)
    assert old is not None and old.layer == "superseded" and old.superseded_by == monday


def test_a_memory_maintain_replaces_leaves_its_other_facts_with_the_new_value(
        config: Config, conn: Any) -> None:
    # Monday's memory of the pool grew by a second fact (a rule merged into it, a line
    # of its own). Tuesday gives the pool a new value. The pass supersedes Monday's
    # memory: the rule beside the old value stays in recall, in the new value's text,
    # and the old value does not.
    t0 = time.time() - 2 * DAY
    monday = _memory(conn, config, "The nightly backup runs from `ops/backup.sh`.",
                     session="a", at=t0)
    tuesday = _memory(conn, config, "Grafana dashboards live in `ops/grafana/`.",
                      session="b", at=t0 + DAY)
    rule = ("Jobs that write to the ledger go through the `ledger` queue only, never "
            "the default one, so a retry can't post twice.")
    # What the two sessions said, as the pass reads them.
    _said(conn, monday, type="decision", summary="The worker pool runs 8 processes",
          body=f"The worker pool runs 8 processes per node, set in `deploy/pool.toml`.\n{rule}")
    _said(conn, tuesday, type="decision", summary="The worker pool runs 12 processes",
          body="The worker pool runs 12 processes per node now, set in `deploy/pool.toml`.")
    report = maintain(conn, config, now=time.time())
    assert report.superseded == 1
    old = rows.get(conn, monday)
    assert old is not None and old.layer == "superseded" and old.superseded_by == tuesday
    (live,) = [m for m in rows.list_memories(conn, "api") if m.live]
    assert live.id == tuesday
    assert "12 processes" in live.body and rule in live.body
    assert "8 processes" not in live.body
    assert any("12 processes" in h.body and rule not in h.body
               for h in rows.history(conn, tuesday))


def test_an_imported_old_value_does_not_replace_a_newer_one_by_the_time_it_was_read(
        config: Config, conn: Any) -> None:
    # Read from a file today, the import's own save says nothing of when its words were
    # said: the memory's time does, and the port said since in a session still wins.
    from memspool.archivist.transfer import import_lines

    t0 = time.time() - 3 * DAY
    local = _memory(conn, config, "The api now listens on port 4100.", session="b",
                    at=t0 + DAY)
    line = json.dumps({"project": "api", "key": "old-api-port", "type": "takeaway",
                       "summary": "The api listens on port 4000.",
                       "body": "The api listens on port 4000.", "created_at": t0}).encode()
    assert import_lines(conn, [line], config=config, trust=False,
                        now=t0 + 2 * DAY).created == 1
    maintain(conn, config, now=time.time())
    imported = rows.get_by_key(conn, "api", "old-api-port")
    assert imported is not None and imported.superseded_by == local
    assert [m.id for m in rows.list_memories(conn, "api") if m.live] == [local]


def _queue_ttl_move(conn: Any, config: Config) -> None:
    """A value of Monday's, and Thursday's person saying it has to move, then the
    agent giving the new value."""
    _queue_slice(conn, config, (
        "[assistant] The price cache keeps entries for `ttl_seconds: 600` in "
        "`config/cache.yml`, because the upstream prices refresh every 10 minutes."),
        session="monday")
    _queue_slice(conn, config, (
        "[user] heads up, from now on upstream prices refresh every 5 minutes instead of "
        "10, so the cache ttl always has to match that\n"
        "[assistant] `ttl_seconds` is now 300 in `config/cache.yml`."), session="thursday")


def test_a_value_given_after_a_person_said_it_moves_is_the_new_value(
        config: Config, conn: Any) -> None:
    # A person says a value has to move, and that replaces the memory of it; the
    # agent then gives the value ("is now 300"), which the model does not keep as a
    # fact of its own: it is the new value, and the old memory points at it.
    _queue_ttl_move(conn, config)
    digest(conn, config)
    every = rows.list_memories(conn, "api")
    (old,) = [m for m in every if "ttl_seconds: 600" in m.body]
    (new,) = [m for m in every if m.live and "300" in m.body]
    assert old.layer == "superseded" and old.superseded_by == new.id


def test_a_new_value_is_the_same_kind_of_fact_as_the_value_it_replaces(
        config: Config, conn: Any) -> None:
    # Monday's decision sets a value; Tuesday's report moves it. The model reads the
    # report by its words (a takeaway), but the new value is the decision's.
    decided = ("[assistant] Decision: the API runs with `WORKERS = 4` per pod in "
               "`deploy/values.yaml`, since each worker holds a 200 MB model and pods get "
               "1 GiB.")
    moved = "[assistant] Bumped `WORKERS` in `deploy/values.yaml` from 4 to 3."
    assert transcript_notes(moved, conditional=True)[0].type != "decision"
    _queue_slice(conn, config, decided, session="monday")
    _queue_slice(conn, config, moved, session="tuesday")
    digest(conn, config)
    every = rows.list_memories(conn, "api")
    (old,) = [m for m in every if "WORKERS = 4" in m.body]
    (new,) = [m for m in every if m.live]
    assert old.type == "decision" and old.superseded_by == new.id
    assert new.type == "decision"
    # A person's rule that sets the value again is a rule of theirs, whatever it
    # replaces (a reminder of it then finds it: reminders corroborate rules).
    _queue_slice(conn, config, "[user] from now on always run `WORKERS = 2` in "
                 "`deploy/values.yaml`, i prefer fewer workers", session="wednesday")
    digest(conn, config)
    (rule,) = [m for m in rows.list_memories(conn, "api") if m.live]
    replaced = rows.get(conn, new.id)
    assert replaced is not None and replaced.superseded_by == rule.id
    assert rule.type == "preference"
    # A value inside a wider fact (a pitfall) is no value of that kind: its new value
    # keeps the type the note has.
    pitfall = ("The importer stalls when `BATCH_ROWS = 5000` in `importer/settings.py`: "
               "a batch that size holds the row lock past the 30 s lock timeout.")
    report = CaptureReport(dry_run=False)
    save_notes([Note(type="pitfall", summary=pitfall, body=pitfall)], config=config,
               conn=conn, origin=manual_origin("api", "monday", "save"), report=report)
    lowered = "[assistant] Lowered `BATCH_ROWS` in `importer/settings.py` from 5000 to 2000."
    (note,) = transcript_notes(lowered, conditional=True)[:1]
    _queue_slice(conn, config, lowered, session="tuesday")
    digest(conn, config)
    (batch,) = [m for m in rows.list_memories(conn, "api") if m.live and "BATCH_ROWS" in m.body]
    assert "2000" in batch.body and batch.type == note.type != "pitfall"
    # What a person or an agent saves keeps the type it was saved with.
    saved = "The importer runs with `BATCH_ROWS = 1000` in `importer/settings.py` now."
    report = CaptureReport(dry_run=False)
    save_notes([Note(type="pattern", summary=saved, body=saved)], config=config, conn=conn,
               origin=manual_origin("api", "thursday", "save"), report=report)
    assert report.notes[0].supersedes == batch.id
    newest = rows.get(conn, report.notes[0].id or 0)
    assert newest is not None and newest.type == "pattern"


def test_a_second_value_of_the_session_neither_fails_nor_leaves_two_current(
        config: Config, conn: Any) -> None:
    # The value given once, then again in a later slice of the same session: the
    # second finds the old memory replaced by the first (which holds the subject's
    # key), and is no new value of it; the queue goes on to the next session.
    _queue_ttl_move(conn, config)
    _queue_slice(conn, config, "[assistant] `ttl_seconds` is now 240 in `config/cache.yml`.",
                 session="thursday")
    _queue_slice(conn, config, (
        "[assistant] Deploys go out with `make ship` from `ops/`, never by hand."),
        session="friday")
    digest(conn, config)
    assert not queued(conn, 10)
    live = [m for m in rows.list_memories(conn, "api") if m.live and "ttl_seconds" in m.body]
    assert len(live) == 1 and "600" not in live[0].body
    assert any("make ship" in m.body for m in rows.list_memories(conn, "api"))


def test_memories_of_a_layer_are_found_however_many_of_another_share_the_terms(
        conn: Any) -> None:
    # The lookup keeps the most alike memories of the layers asked for: live ones
    # that share as many terms are no reason to miss a superseded one.
    terms = ["ttl_seconds", "config/cache.yml", "price", "cache"]
    with transaction(conn):
        old = rows.insert(conn, project="api", key="old", type="takeaway", summary="old",
                          body="old", terms=terms, at=1.0)
        newer = [rows.insert(conn, project="api", key=f"k{i}", type="takeaway",
                             summary=f"s{i}", body=f"b{i}", terms=terms, at=2.0 + i)
                 for i in range(10)]
        found = rows.get(conn, old)
        assert found is not None
        rows.supersede(conn, found, by=newer[0], at=20.0)
    superseded = rows.candidates(conn, "api", terms, min_shared=2, limit=8,
                                 layers=("superseded",))
    assert [m.id for m in superseded] == [old]
    live = rows.candidates(conn, "api", terms, min_shared=2, limit=8)
    assert len(live) == 8 and old not in {m.id for m in live}


def test_a_fact_said_again_in_its_own_session_is_no_corroboration(
        config: Config, conn: Any) -> None:
    for text in ("Worth keeping as a rule for this repo: nothing automated ever signs in "
                 "as `root@pam`; template builds always authenticate with the "
                 "`packer@pve!build` API token.",
                 "The debian12 template on pve03 is rebuilt with the same "
                 "`packer@pve!build` API token as every template build; `root@pam` isn't "
                 "involved anywhere in it."):
        _queue_slice(conn, config, f"[assistant] {text}", session="monday")
    digest(conn, config)
    found = [m for m in rows.list_memories(conn, "api") if m.live and "root@pam" in m.body]
    assert len(found) == 2
    assert all(rows.sessions_of(conn, m.id) == {"monday"} for m in found)


#: A person's rule of one session.
_VERSIONS_RULE: Final = ("[user] we never put dependency versions in the module build files, "
                         "every version goes through gradle/libs.versions.toml. reviewers "
                         "reject anything else.")
#: A person's new fact, said before their rule again in the same prompt.
_SYNC_NEWS: Final = ("fyi the sync worker runs every 3 hours now instead of every 6, product "
                     "asked for it.")


@pytest.mark.parametrize(("said", "rule", "news"), [
    # A report of later work: the whole note shares too little with the rule, its
    # last sentence shares most.
    pytest.param((
        f"[assistant] {_WITH_TX_RULE}",
        "[assistant] Unpaid reservations expire after 15 minutes: the sweeper in "
        "`internal/sweeper/expire.go` deletes each expired row from `reservations` and hands "
        "its quantity back to `stock_levels`, and the warehouse dashboard counts the "
        "`reservation_expired` events per hour. That expire step goes through `store.WithTx` "
        "like every other multi-statement write here, so a 40001 is retried."),
        ("store.WithTx", "Every multi-statement transaction"),
        ("15 minutes", "Unpaid reservations expire"), id="in-a-report"),
    # A person's rule reminded of in one sentence of a prompt that, whole, reminds of
    # nothing.
    pytest.param((
        "[user] never use wildcard resources in iam policies, security bounced our last PR "
        "for a `Resource: \"*\"` and i dont want that again",
        f"[user] {_SYNC_NEWS} arns only in its role policy, never wildcard resources in iam "
        "policies."),
        ("wildcard", "Never use wildcard resources"),
        ("3 hours", "The sync worker runs"), id="reminded-beside-news"),
    # A person's rule said again beside a new fact, the prompt reading as the rule whole
    # only because the two share a file name.
    pytest.param((
        _VERSIONS_RULE,
        f"[user] {_SYNC_NEWS} versions go in libs.versions.toml, never in the module build "
        "files."),
        ("libs.versions.toml", "We never put dependency versions"),
        ("3 hours", "The sync worker runs"), id="read-as-the-rule-whole"),
    # The rule said again first: the note takes the rule's key, and lands on it.
    pytest.param((
        _VERSIONS_RULE,
        "[user] we never put dependency versions in the module build files, they go in "
        f"libs.versions.toml. {_SYNC_NEWS}"),
        ("libs.versions.toml", "We never put dependency versions"),
        ("3 hours", "Fyi the sync worker runs"), id="at-the-rules-key"),
])
def test_a_fact_said_again_beside_news_corroborates_it_and_the_news_is_its_own(
        config: Config, conn: Any, said: tuple[str, str], rule: tuple[str, str],
        news: tuple[str, str]) -> None:
    _queue_slice(conn, config, said[0], session="monday")
    _queue_slice(conn, config, said[1], session="thursday")
    digest(conn, config)
    live = [m for m in rows.list_memories(conn, "api") if m.live]
    (memory,) = [m for m in live if rule[0] in m.body]
    assert memory.summary.startswith(rule[1])
    assert rows.sessions_of(conn, memory.id) == {"monday", "thursday"}
    # The news beside it is a memory of its own, not words hidden in the old one.
    (new,) = [m for m in live if news[0] in m.body]
    assert new.id != memory.id and new.summary.startswith(news[1])
    assert rows.sessions_of(conn, new.id) == {"thursday"}


def test_a_note_taken_apart_is_said_already_when_digested_again_and_stays_forgotten(
        config: Config, conn: Any, home: Path) -> None:
    later = (f"[user] {_SYNC_NEWS} versions go in libs.versions.toml, never in the module "
             "build files.")
    _queue_slice(conn, config, _VERSIONS_RULE, session="monday")
    _queue_slice(conn, config, later, session="thursday")
    digest(conn, config)
    before = {m.id: (m.body, rows.sessions_of(conn, m.id)) for m in rows.list_memories(conn, "api")}
    # The same words digested again (a hook fired twice): said already, nothing moves.
    conn.execute("UPDATE slices SET digested_at = NULL WHERE session_id = 'thursday'")
    report = digest(conn, config)
    assert report.skipped == 1 and report.created == report.merged == 0
    assert {m.id: (m.body, rows.sessions_of(conn, m.id))
            for m in rows.list_memories(conn, "api")} == before
    # The news forgotten: digesting its words again brings it back nowhere.
    (news,) = [m for m in rows.list_memories(conn, "api") if "3 hours" in m.body]
    run_cli("memories", "forget", str(news.id))
    conn.execute("UPDATE slices SET digested_at = NULL WHERE session_id = 'thursday'")
    digest(conn, config)
    assert not [m for m in rows.list_memories(conn, "api") if "3 hours" in m.body]


def test_a_report_too_long_to_join_keeps_its_news_in_a_memory_of_its_own(
        config: Config, conn: Any) -> None:
    # Merged, the news would not fit beside the memory's text: a corroboration that kept
    # none of its words would lose it, so the note stays a memory of its own.
    _queue_slice(conn, config, f"[assistant] {_WITH_TX_RULE}", session="monday")
    news = " ".join(
        f"Unpaid reservations of the `{zone}` warehouse expire after {minutes} minutes: "
        f"the sweeper in `internal/sweeper/{zone}.go` deletes each expired row and hands "
        f"its quantity back to `stock_levels_{zone}`." for zone, minutes in
        (("north", 15), ("south", 20), ("east", 25), ("west", 30), ("harbour", 35),
         ("airport", 40), ("depot", 45), ("annex", 50)))
    _queue_slice(conn, config, (
        f"[assistant] {news} That expire step goes through `store.WithTx` like every other "
        "multi-statement write here, so a 40001 is retried."), session="thursday")
    digest(conn, config)
    live = [m for m in rows.list_memories(conn, "api") if m.live]
    assert any("`stock_levels_annex`" in m.body for m in live)  # the news is in memory
    (rule,) = [m for m in live if m.summary.startswith("Every multi-statement transaction")]
    assert rows.sessions_of(conn, rule.id) == {"monday"}


def test_the_agent_saying_a_persons_rule_back_is_that_rule(config: Config, conn: Any) -> None:
    # The person's rule and the agent's answer that restates it: one memory, in that
    # session; a later session's "as always" corroborates it as before.
    _queue_slice(conn, config, (
        "[user] can you fix the off-by-one in the tokenizer? also always run `cargo fmt "
        "--check` before you push anything that touches the parser."), session="monday")
    # Its "no diff" is a negation the rule does not have: no contradiction of it.
    _queue_slice(conn, config, (
        "[assistant] Got it. Before any push that touches the parser I'll run `cargo fmt "
        "--check` first, and only push once it reports no diff."), session="monday")
    digest(conn, config)
    found = [m for m in rows.list_memories(conn, "api") if m.live and "fmt --check" in m.body]
    assert len(found) == 1
    (rule,) = found
    assert rule.type == "preference" and rule.summary.startswith("Always run `cargo fmt")
    assert rows.sessions_of(conn, rule.id) == {"monday"}


@pytest.mark.parametrize(("rule", "kept", "word", "summary"), [
    # "not just the 15" adds a device, it denies nothing: no contradiction to supersede.
    ("[user] from now on always run the tests on the iPhone SE (3rd generation) sim before "
     "pushing, not just the 15",
     "[user] sgtm. run the tests on the iPhone SE sim like always and push",
     "iPhone SE", "From now on always run the tests on the iPhone SE (3rd"),
    # "never npm" on one side only is no contradiction of a text that says it kept the rule.
    ("[user] can you add a date picker to the booking form? and from now on we use pnpm "
     "only, never npm: pnpm-lock.yaml is our one lockfile.",
     "[assistant] The date picker is on the booking form now.\n\n[assistant] Everything "
     "today ran through pnpm, and `pnpm-lock.yaml` is still the only lockfile in the repo, "
     "as you wanted.",
     "pnpm", "From now on we use pnpm only, never npm"),
])
def test_a_rule_kept_as_always_or_as_asked_corroborates_it_and_is_no_contradiction(  # noqa: PLR0917 - pytest passes fixtures positionally
        config: Config, conn: Any, rule: str, kept: str, word: str, summary: str) -> None:
    _queue_slice(conn, config, rule, session="monday")
    _queue_slice(conn, config, kept, session="thursday")
    digest(conn, config)
    found = [m for m in rows.list_memories(conn, "api") if word in m.body]
    (memory,) = [m for m in found if m.live]
    assert memory.summary.startswith(summary)
    assert rows.sessions_of(conn, memory.id) == {"monday", "thursday"}
    assert not [m for m in found if m.layer == "superseded"]


def test_the_words_that_frame_a_persons_rule_are_no_part_of_it(
        config: Config, conn: Any) -> None:
    _queue_slice(conn, config, (
        "[user] add a `refunded_at` field to the payment model. and remember: always run "
        "`makemigrations --check` before you commit anything that touches models."),
        session="monday")
    _queue_slice(conn, config, PRISMA_RULE, session="monday")
    digest(conn, config)
    summaries = sorted(m.summary for m in rows.list_memories(conn, "api") if m.live)
    # "and remember:" introduces the rule and "also" joins it to the prompt: neither
    # is the rule, in its summary, its text or its key.
    assert summaries == [
        "Always run `makemigrations --check` before you commit anything that touches models.",
        "I'd rather you never mock prisma in vitest, prisma mocks test nothing."]
    assert not [m for m in rows.list_memories(conn, "api")
                if "remember" in m.body or m.key.startswith(("and-", "also-"))]


GUNICORN = "Production runs gunicorn with 4 workers, set in `gunicorn.conf.py`."
GUNICORN_MORE = ("Production runs gunicorn with 4 workers, set in `gunicorn.conf.py`; more "
                 "workers than that exhaust the 40 PgBouncer connections.")
CORRECTED = "Gunicorn in prod: 4 workers (`gunicorn.conf.py`), capped by PgBouncer's 40."


def test_a_persons_correction_stands_when_a_later_session_says_more(
        config: Config, conn: Any) -> None:
    memory = _memory(conn, config, GUNICORN, session="monday", at=time.time() - DAY)
    with Service() as service:
        service.edit(memory, summary=CORRECTED, body=GUNICORN, type="decision")
    _queue_slice(conn, config, f"[user] how many workers does prod run?\n\n"
                 f"[assistant] {GUNICORN_MORE}", session="tuesday")
    report = digest(conn, config)
    kept = rows.get(conn, memory)
    assert kept is not None and report.merged == 1 and report.created == 0
    # The session's word corroborates the person's text; it does not replace it.
    assert (kept.summary, kept.body, kept.type) == (CORRECTED, GUNICORN, "decision")
    assert rows.sessions_of(conn, memory) == {"monday", "tuesday"}
    assert [h.reason for h in rows.history(conn, memory)] == ["edited"]
    # Text an agent captures over MCP, `memspool capture` and a save under its key say it
    # again too: only another correction rewrites it.
    for source in ("mcp", "manual"):
        capture_with(GUNICORN_MORE, config=config, conn=conn, project="api",
                     session=f"wednesday-{source}", source=source)
    with Service() as service:
        saved = service.save("Gunicorn workers", GUNICORN_MORE, key=kept.key, project="api")
    assert (saved.id, saved.action) == (memory, "merged")
    again = rows.get(conn, memory)
    assert again is not None and (again.summary, again.body) == (CORRECTED, GUNICORN)
    assert len(rows.sessions_of(conn, memory)) == 4 and rows.edited(conn, memory)


def test_a_persons_correction_is_said_when_it_was_made(config: Config, conn: Any) -> None:
    # Monday's memory; Tuesday's says the pool runs 8 processes; today a person corrects
    # Monday's to 12. The correction is the latest word: Tuesday's value is the stale one.
    t0 = time.time() - 3 * DAY
    monday = _memory(conn, config, "The nightly backup runs from `ops/backup.sh`.",
                     session="a", at=t0)
    tuesday = _memory(conn, config, "Grafana dashboards live in `ops/grafana/`.",
                      session="b", at=t0 + DAY)
    _said(conn, tuesday, type="decision", summary="The worker pool runs 8 processes",
          body="The worker pool runs 8 processes per node, set in `deploy/pool.toml`.")
    with Service() as service:
        service.edit(monday, type="decision", summary="The worker pool runs 12 processes",
                     body="The worker pool runs 12 processes per node now, set in "
                     "`deploy/pool.toml`.")
    assert maintain(conn, config, now=time.time()).superseded == 1
    stale, kept = rows.get(conn, tuesday), rows.get(conn, monday)
    assert stale is not None and stale.layer == "superseded" and stale.superseded_by == monday
    assert kept is not None and kept.live and "12 processes" in kept.body


def test_a_new_value_moves_out_of_a_persons_correction(config: Config, conn: Any) -> None:
    # A person's text holds a rule and, on a line of its own, the pool's size. A later
    # session's new size takes that line out (it would stay current beside its new
    # value); the rule stays theirs, and so does the memory.
    rule = "Jobs that write to the ledger go through the `ledger` queue only."
    memory = _memory(conn, config, GUNICORN, session="monday", at=time.time() - DAY)
    with Service() as service:
        service.edit(memory, summary="Ledger jobs go through the ledger queue", type="pattern",
                     body=f"{rule}\nThe worker pool runs 8 processes per node, set in "
                     "`deploy/pool.toml`.")
    _queue_slice(conn, config, "[user] is the pool bigger now?\n\n[assistant] The worker pool "
                 "runs 12 processes per node now, set in `deploy/pool.toml`.", session="tuesday")
    digest(conn, config)
    live = [m for m in rows.list_memories(conn, "api") if m.live]
    assert not [m for m in live if "8 processes" in m.body]
    assert [m for m in live if "12 processes" in m.body]
    kept = rows.get(conn, memory)
    assert kept is not None and kept.live and kept.body == rule and rows.edited(conn, memory)


def test_a_persons_correction_stands_when_the_pass_folds_its_memory(
        config: Config, conn: Any) -> None:
    older, newer = _export_memories(conn, config)
    said = ("The nightly export came out an hour off because cron starts it with an empty "
            "environment and Go took its zone from `/etc/localtime` on batch02; `time.Local "
            "= time.UTC` in `cmd/export/main.go` keeps it in UTC.")
    with Service() as service:  # a person's correction makes it the same fact
        service.edit(newer, type="root-cause", summary="Why the export was an hour off",
                     body=said)
    assert maintain(conn, config, now=time.time() + 1).merged == 1
    (memory,) = [m for m in rows.list_memories(conn, "api") if m.live]
    # One memory remains (the older row, whose id others cite), with the person's text.
    assert memory.id == older
    assert (memory.summary, memory.body) == ("Why the export was an hour off", said)
    assert rows.edited(conn, older)
