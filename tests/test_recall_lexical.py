"""The shared lexical ranking: stems as FTS5 stems, reads bounded, the relevance bar, fusion."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, run_cli

from memspool.base import lexical
from memspool.base.porter import porter_stem
from memspool.base.terms import query_terms
from memspool.recall import search
from memspool.service import Service

DATA = REPO / "tests" / "data"
SESSIONS = DATA / "sessions"


def test_the_stemmer_stems_every_word_of_the_labelled_data_as_fts5_does() -> None:
    words: set[str] = set()
    for path in DATA.glob("*.jsonl"):
        words.update(re.findall(r"[a-z0-9]+", path.read_text(encoding="utf-8").lower()))
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (x, tokenize = 'porter unicode61')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'row')")
    differ = []
    for chunk in range(0, len(words), 500):
        batch = sorted(words)[chunk:chunk + 500]
        conn.execute("DELETE FROM t")
        conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", enumerate(batch, 1))
        indexed = {row[0] for row in conn.execute("SELECT term FROM v")}
        differ += [w for w in batch if porter_stem(w) not in indexed]
    assert len(words) > 5000
    assert differ == []


def _import(home: Path, notes: list[dict[str, str]]) -> Service:
    service = Service(home, env={"MEMSPOOL_SEMANTIC": "off"})
    service.import_lines([json.dumps({"project": n.get("project", "p"), "key": n["key"],
                                      "type": "takeaway", "summary": n["text"],
                                      "body": n["text"]}).encode() for n in notes])
    return service


def test_reads_stay_bounded_however_common_the_words(home: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A query of words every memory holds reads no more rows than a rare one."""
    notes = [{"key": f"k{i}", "text": f"the worker pool drains requests {i} on service s{i % 7}"}
             for i in range(3 * lexical.TERM_READ)]
    notes.append({"key": "rare", "text": "the zeppelin quota drains once"})
    read: list[int] = []
    real = lexical.Query._read

    def counted(*args: Any) -> list[int]:
        found = real(*args)
        read.append(len(found))
        return found

    monkeypatch.setattr(lexical.Query, "_read", staticmethod(counted))
    with _import(home, notes) as service:
        common = search(service.conn, "worker pool drains requests service")
        assert len(common) == 10 and sum(read) <= lexical.READ_BUDGET + lexical.FIRST_STAGE
        read.clear()
        rare = search(service.conn, "zeppelin quota")
        assert [h.summary for h in rare] == ["the zeppelin quota drains once"]
        assert sum(read) == 2


def test_relevance_is_the_share_of_the_query_held(home: Path) -> None:
    notes = [{"key": "a", "text": "Gunicorn workers time out on the reports export endpoint"},
             {"key": "b", "text": "The reports page has a date filter"}]
    with _import(home, notes) as service:
        terms = query_terms("gunicorn reports export timeout")
        query = lexical.prepare(service.conn, terms)
        full = query.relevance(notes[0]["text"], notes[0]["text"])
        part = query.relevance(notes[1]["text"], notes[1]["text"])
        assert 0 < part[0] < full[0] < 1
        assert (full[1], part[1]) == (3, 1)


def _labelled_texts() -> list[str]:
    texts = [turn[role] for session in (SESSIONS / "tune_a.jsonl").read_text().splitlines()
             for turn in json.loads(session)["turns"] for role in ("user", "assistant")
             if turn.get(role)]
    return [*texts, "Deploys to the Zürich region use the naïve scheduler.",
            "データベース の バックアップ は 毎晩 3時 に 走る",
            "imageGCHighThresholdPercent=85", "very very slow, slow slow: `slow_slow`"]


def test_a_memory_is_scored_from_the_words_the_index_holds(home: Path) -> None:
    """The stems the store keeps beside a memory are its words as the index holds
    them: as many per column as FTS5 tokenised, its identifier parts the index's."""
    texts = _labelled_texts()
    notes = [{"key": f"k{i}", "text": text} for i, text in enumerate(texts)]
    with _import(home, notes) as service:
        rows = service.conn.execute(
            "SELECT m.summary, m.body, t.stems, s.idents, d.sz FROM memories m"
            " JOIN memory_stems t ON t.id = m.id JOIN memory_search s ON s.rowid = m.id"
            " JOIN memory_search_docsize d ON d.id = m.id").fetchall()
        assert len(rows) == len(texts)
        for summary, body, stems, idents, sizes in rows:
            assert stems == lexical.packed(summary, body)
            counted = lexical._counts(stems)
            assert [n for n, _ in counted] == lexical._varints(bytes(sizes)), summary[:60]
            assert counted[2][1] == Counter(lexical.tokens(idents))


def test_a_memory_scores_alike_read_from_its_stems_or_from_their_counts(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A memory scored for the first time by a short query is read by searching its
    packed stems; scored again, or by a long query, from their counts: one relevance."""
    texts = _labelled_texts()
    notes = [{"key": f"k{i}", "text": text} for i, text in enumerate(texts)]
    queries = ["slow", "very slow", "Zürich scheduler", "worker pool timeout",
               "imageGCHighThresholdPercent", "what runs every night on the database"]
    with _import(home, notes) as service:
        rows = service.conn.execute("SELECT m.id, m.summary, m.body, t.stems FROM memories m"
                                    " JOIN memory_stems t ON t.id = m.id").fetchall()
        for text in queries:
            query = lexical.prepare(service.conn, query_terms(text))
            ways = []
            for searched in (100, 0):
                monkeypatch.setattr(lexical, "SEARCHED_TERMS", searched)
                lexical._SEEN.clear()
                ways.append([(round(score, 12), held, related) for score, held, related in (
                    query.relevance(summary, body, memory_id, stems)
                    for memory_id, summary, body, stems in rows)])
            assert ways[0] == ways[1], text
            assert any(score for score, _, _ in ways[0]), text
    # Both ways count a stem said twice in a row twice.
    held = lexical._counts(lexical.packed("very very slow", ""))[0][1]
    assert held == {"veri": 2, "slow": 1}


def test_a_store_without_kept_stems_is_still_searched(home: Path) -> None:
    """A reader of a store its writers have not moved to the stems table yet (an
    older memspool's) ranks from the text; the next writer fills the table."""
    text = "The naïve_scheduler runs nightly in the Zürich_region."
    with _import(home, [{"key": "a", "text": text}]) as service:
        service.conn.executescript(
            "DROP TRIGGER memory_stems_insert; DROP TRIGGER memory_stems_delete;"
            " DROP TRIGGER memory_stems_update; DROP TABLE memory_stems;"
            " PRAGMA user_version = 19;")  # before migration 20
    lexical._SEEN.clear()
    conn = sqlite3.connect(home / "memspool.db")
    try:
        query = lexical.prepare(conn, query_terms("zurich scheduler nightly"))
        ranked = lexical.rank(conn, query, "m.id, m.summary, m.body")
        assert [row[1] for row, *_ in ranked] == [text]
        assert ranked[0][1] > lexical.RELEVANCE_FLOOR
    finally:
        conn.close()
    with Service(home, env={"MEMSPOOL_SEMANTIC": "off"}) as service:
        (stems,) = service.conn.execute("SELECT stems FROM memory_stems").fetchone()
        assert stems == lexical.packed(text, text)


def test_identifier_parts_an_older_reading_wrote_are_written_again(home: Path) -> None:
    """Migration 19: the index's identifier parts of a store written by an older
    reading of identifiers (as if "naïve_scheduler" had lost its accented letters)
    are written again, so search scores them as their text reads."""
    from memspool.store.db import MIGRATIONS

    text = "The naïve_scheduler runs in the Zürich_region."
    with _import(home, [{"key": "a", "text": text}]) as service:
        conn = service.conn
        conn.execute("UPDATE memory_search SET idents = 'vescheduler ve scheduler'")
        # Back to a store of migration 18: before 19, and before the stems of 20.
        conn.executescript(
            "DROP TRIGGER memory_stems_insert; DROP TRIGGER memory_stems_delete;"
            " DROP TRIGGER memory_stems_update; DROP TABLE memory_stems;"
            " PRAGMA user_version = 18;")
    with Service(home, env={"MEMSPOOL_SEMANTIC": "off"}) as service:
        (idents,) = service.conn.execute("SELECT idents FROM memory_search").fetchone()
        assert idents.split()[:3] == ["naivescheduler", "naive", "scheduler"]
        assert service.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


@pytest.mark.parametrize(("query", "found"), [
    ("Zürich", "a"), ("Zurich", "a"), ("naïve scheduler", "a"), ("café menu", "b"),
    ("データベース バックアップ", "c"), ("مرحبا", "d")])
def test_words_with_accents_and_in_other_scripts_are_query_terms(home: Path, query: str,
                                                                 found: str) -> None:
    notes = [{"key": "a", "text": "Deploys to the Zürich region use the naïve scheduler."},
             {"key": "b", "text": "The café menu service caches prices for an hour."},
             {"key": "c", "text": "データベース の バックアップ は 毎晩 3時 に 走る"},
             {"key": "d", "text": "The greeting screen says مرحبا to Arabic users."}]
    with _import(home, notes) as service:
        hits = search(service.conn, query)
        assert hits and hits[0].summary == next(n["text"] for n in notes if n["key"] == found)


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_query_about_nothing_stored_returns_nothing(home: Path) -> None:
    notes = [{"key": "n", "text": "Celery ETA tasks ran twice because the Redis visibility "
                                  "timeout was shorter than the ETA."},
             {"key": "m", "text": "Ubuntu needs python3-venv before python3 -m venv works."}]
    with _import(home, notes) as service:
        assert search(service.conn, "celery tasks ran twice")
        assert search(service.conn, "bluetooth headset has no sound on ubuntu") == []
    env = {"MEMSPOOL_HOME": str(home), "MEMSPOOL_SEMANTIC": "off"}
    proc = run_cli("search", "bluetooth headset has no sound on ubuntu", env=env)
    assert proc.stdout.decode().strip() == "no memory matches"
    proc = run_cli("search", "sourdough starter is not rising", "--json", env=env)
    assert json.loads(proc.stdout)["results"] == []
    proc = run_cli("search", "celery tasks twice", env=env)
    line = proc.stdout.decode().splitlines()[0]
    assert re.match(r"\s*\d+\s+\d{1,3}%\s+p/takeaway: Celery ETA", line), line


def test_the_hook_and_search_share_one_bar() -> None:
    hook = (REPO / "hooks" / "recall.py").read_text(encoding="utf-8")
    assert "lexical.relevant(" in hook and "MIN_SHARED" not in hook
    assert lexical.relevant(lexical.RELEVANCE_FLOOR, 2, 3)
    assert not lexical.relevant(lexical.RELEVANCE_FLOOR - 0.01, 3, 3)
    assert not lexical.relevant(0.9, 1, 3)
    assert lexical.relevant(0.9, 1, 1)


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_hybrid_keeps_the_top_three_that_hold_every_word(home: Path) -> None:
    """With the semantic extra, a memory that holds every query word and was in the
    top 3 by words alone is still in the top 3 (over the labelled notes and queries)."""
    notes = [json.loads(line) for line in
             (DATA / "recall_notes.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line) for line in
               (DATA / "recall_queries.jsonl").read_text(encoding="utf-8").splitlines()]
    with Service(home, env={}) as service:
        vectors = service.vectors()
        assert vectors is not None, service.semantic.reason
        service.import_lines([json.dumps({
            "project": n["project"], "key": n["id"], "type": n["type"], "summary": n["summary"],
            "body": n["body"]}).encode() for n in notes])
        checked = 0
        for q in queries:
            terms = query_terms(q["query"])
            query = lexical.prepare(service.conn, terms)
            lexical_top = search(service.conn, q["query"], limit=3)
            hybrid_top = {h.id for h in search(service.conn, q["query"], limit=3,
                                               vectors=vectors)}
            for hit in lexical_top:
                if query.relevance(hit.summary, hit.body)[1] == query.own:
                    checked += 1
                    assert hit.id in hybrid_top, (q["query"], hit.summary)
        assert checked > 50


def test_the_concept_words_counts_are_kept_and_stand_only_while_the_store_is_alike(
        home: Path) -> None:
    """Every writer's render counts the concept map's words into ``concept_counts``; a
    query reads them instead of counting, ranks exactly as with live counts, and
    counts again itself once the store has moved past COUNTS_DRIFT."""
    from memspool.recall import counts

    notes = [{"key": f"k{i}", "text": f"the {'socket' if i % 3 else 'database'} on worker "
                                      f"{i} was reset after the deploy"} for i in range(300)]
    service = _import(home, notes)
    conn = service.conn
    memories, ids = lexical.size(conn)
    kept = dict(conn.execute("SELECT phrase, df FROM concept_counts").fetchall())
    assert set(kept) == set(counts.phrases())
    for word in ("socket", "database", "reset", "network"):
        phrase = lexical.Term(word).phrase
        live = lexical.count(conn, phrase, ids, memories)
        assert kept[phrase] == live
        assert (live > 0) == (word != "network")  # a word no memory holds is kept as 0
    # The same ranking with the kept counts as with counting every word.
    query = "connection refused on the socket"
    with_kept = [(h.id, h.score) for h in search(conn, query)]
    conn.execute("DELETE FROM concept_counts")
    assert [(h.id, h.score) for h in search(conn, query)] == with_kept
    assert counts.refresh(conn) == len(counts.phrases())
    # Past the drift, a query counts for itself; the next render counts again.
    grown = int(memories * lexical.COUNTS_DRIFT) + 2
    service.import_lines([json.dumps({"project": "p", "key": f"more{i}", "type": "takeaway",
                                      "summary": f"socket {i} timed out",
                                      "body": f"socket {i} timed out"}).encode()
                          for i in range(grown)])
    memories, ids = lexical.size(conn)
    socket = lexical.Term("socket").phrase
    assert lexical.Query(conn, [lexical.Term("socket")]).df == [
        lexical.count(conn, socket, ids, memories)]
    assert tuple(conn.execute("SELECT df, rows FROM concept_counts WHERE phrase = ?",
                              (socket,)).fetchone()) == (lexical.count(conn, socket, ids, memories),
                                                  memories)
    conn.execute("UPDATE concept_counts SET rows = rows - ?", (grown,))  # as if counted before
    assert lexical.kept_counts(conn, [socket], memories, ids[1]) == {}
    assert lexical.Query(conn, [lexical.Term("socket")]).df == [
        lexical.count(conn, socket, ids, memories)]
    # A store without the table (one an older memspool wrote) counts every word.
    conn.execute("DROP TABLE concept_counts")
    assert [h.id for h in search(conn, query)] == [h.id for h in search(conn, query)]
    assert lexical.kept_counts(conn, [socket], memories, ids[1]) == {}
    service.close()
