"""Semantic recall with a tiny static model made here: storage, reindex, isolation, fusion, forget.

The model is a real model2vec folder (a word-level tokenizer built in
memory, seeded random vectors): words of one cluster ("refund", "payment",
"money") get nearby vectors, so a query can find a note by meaning alone.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_cli
from model2vec import StaticModel
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from memspool.base.errors import HomeError
from memspool.recall import vectors as vectors_module
from memspool.recall.embed import SHIPPED_MODEL, Encoder
from memspool.recall.vectors import VECTORS_DIR, embed_pending
from memspool.service import Service

CLUSTERS = {
    "money": ["refund", "refunds", "payment", "payments", "money", "charge", "billing"],
    "twice": ["twice", "double", "duplicate", "duplicated", "again", "repeated"],
    "slow": ["slow", "latency", "sluggish", "timeout", "lag"],
    "disk": ["disk", "storage", "full", "space", "volume"],
    "deploy": ["deploy", "release", "rollout", "ship", "shipping"],
}
PLAIN = ["the", "a", "were", "was", "is", "why", "webhook", "rows", "handler", "node", "images",
         "kubelet", "cache", "tests", "api", "our", "after", "on", "and", "of", "pitfall",
         "decision", "root", "cause", "takeaway", "friday", "never"]

#: Five notes the capture verb keeps apart (no two are near-duplicates).
DISTINCT = ["Refund payment rows were inserted twice.", "The kubelet node disk is full.",
            "Api latency after the friday deploy.", "Cache tests never run on release.",
            "Billing handler charge timeout."]


def make_model(folder: Path, seed: int = 7, dims: int = 16) -> Path:
    """A model2vec model: clusters of words with nearby vectors, other words random."""
    rng = np.random.default_rng(seed)
    words = ["[UNK]", *PLAIN, *(w for group in CLUSTERS.values() for w in group)]
    vectors = np.zeros((len(words), dims), dtype=np.float32)
    index = {w: i for i, w in enumerate(words)}
    for w in PLAIN:
        vectors[index[w]] = rng.normal(size=dims) * 0.3
    for group in CLUSTERS.values():
        centre = rng.normal(size=dims) * 3
        for w in group:
            vectors[index[w]] = centre + rng.normal(size=dims) * 0.2
    tokenizer = Tokenizer(models.WordLevel(vocab=index, unk_token="[UNK]"))  # noqa: S106
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True).save_pretrained(folder)
    return folder


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return make_model(tmp_path / "tiny-model")


@pytest.fixture
def service(home: Path, model: Path) -> Any:
    with Service(home, env={"MEMSPOOL_SEMANTIC_MODEL": str(model)}) as found:
        yield found


def _json(*args: str, env: dict[str, str]) -> Any:
    return json.loads(run_cli(*args, "--json", env=env).stdout.decode())


def _vectors(conn: sqlite3.Connection) -> dict[int, tuple[str, bytes, int]]:
    return {r[0]: (r[1], bytes(r[2]), r[3]) for r in conn.execute(
        "SELECT memory_id, model, vector, seq FROM memory_vectors")}


def test_the_fast_encoder_equals_model2vec_on_the_shipped_model() -> None:
    texts = [json.loads(line)["body"] for line in
             (Path(__file__).parent / "data" / "recall_notes.jsonl").read_text().splitlines()]
    texts += ["", "🙂", "x" * 20_000, "SparklineChart imageGCHighThresholdPercent=70",
              "The deploy runbook. " * 200 + "Last, rotate the TLS certificates."]
    ours = Encoder(SHIPPED_MODEL).encode(texts)
    theirs = StaticModel.from_pretrained(SHIPPED_MODEL, normalize=True).encode(
        texts, max_length=None)
    assert ours.shape == (len(texts), 256)
    assert np.allclose(ours, theirs, atol=1e-5)
    # The whole text makes the vector: model2vec's default cut (512 tokens) would
    # leave the runbook's last step out.
    cut = StaticModel.from_pretrained(SHIPPED_MODEL, normalize=True).encode(texts[-1:])
    assert not np.allclose(ours[-1:], cut, atol=1e-3)


def test_the_end_of_a_long_memory_is_found_by_meaning(service: Any) -> None:
    # 520 words of nothing in particular, then a subject: the vector is the whole
    # text's (a cut at 512 tokens would hold none of the subject), so a query
    # in other words of that subject finds it.
    text = "the a was is " * 130 + "Refund payment charge. " * 60
    long = service.save("Cluster notes", text, project="shop").id
    service.save("Node notes", "The kubelet node images were tested.", project="shop")
    nearest = service.vectors().nearest(service.conn, "money billing", limit=2)
    assert nearest[0].memory_id == long and nearest[0].similarity > 0.9
    assert [r.id for r in service.search("money billing", project="shop").results] == [long]


def test_vectors_cut_by_an_older_memspool_are_made_again(home: Path, model: Path) -> None:
    env = {"MEMSPOOL_SEMANTIC_MODEL": str(model)}
    with Service(home, env=env) as service:
        long = service.save("Cluster notes", "The kubelet node. " * 60, project="shop").id
        short = service.save("Refunds", "Refund payment charge.", project="shop").id
        service.vectors().embed(service.conn)
        assert service.conn.execute("SELECT count(*) FROM vectors_pending").fetchone()[0] == 0
    old = sqlite3.connect(home / "memspool.db")
    old.execute("PRAGMA user_version = 17")
    old.commit()
    old.close()
    with Service(home, env=env) as service:
        waiting = {r[0] for r in service.conn.execute("SELECT memory_id FROM vectors_pending")}
        assert waiting == {long, short}  # which were cut depends on the model: all of them
        kept = {r[0] for r in service.conn.execute("SELECT memory_id FROM memory_vectors")}
        assert kept == {long, short}  # the old vector answers until the new one is made
        service.vectors().embed(service.conn)
        assert service.conn.execute("SELECT count(*) FROM vectors_pending").fetchone()[0] == 0


def test_the_shipped_model_is_the_one_recorded() -> None:
    import hashlib

    record = json.loads((SHIPPED_MODEL / "SOURCE.json").read_text())
    for name, digest in record["sha256"].items():
        assert hashlib.sha256((SHIPPED_MODEL / name).read_bytes()).hexdigest() == digest, name
    assert (SHIPPED_MODEL / "LICENSE").read_text().startswith(" " * 32 + "Apache License")


def test_every_memory_written_gets_a_vector_of_the_model(service: Any) -> None:
    service.save("Refunds counted twice", "The webhook handler inserted rows twice.",
                 project="shop")
    service.capture("Pitfall: the kubelet node filled its disk with old images.",
                     project="infra")
    vectors = _vectors(service.conn)
    assert len(vectors) == 2
    assert {m for m, _, _ in vectors.values()} == {service.vectors().encoder.hash}
    for _, blob, _ in vectors.values():
        row = np.frombuffer(blob, dtype=np.float32)
        assert row.shape == (16,) and abs(float(np.linalg.norm(row)) - 1) < 1e-5
    status = service.status().semantic
    assert status["on"] and status["vectors"] == 2 and status["waiting"] == 0


def test_a_text_change_makes_a_new_vector(service: Any) -> None:
    first = service.save("Deploy rule", "Never deploy on friday.", key="deploy-rule",
                         project="shop")
    before = _vectors(service.conn)[first.id]
    service.save("Deploy rule", "Slow payment rollout after cache tests.", key="deploy-rule",
                 project="shop")
    after = _vectors(service.conn)[first.id]
    assert after[2] > before[2] and after[1] != before[1]


def test_meaning_finds_what_words_miss_and_says_so(service: Any) -> None:
    target = service.save("Refunds counted twice", "The webhook handler inserted refund rows "
                          "twice.", project="shop").id
    service.save("Kubelet disk", "The node filled its disk with old images.", project="shop")
    query = "money again"
    assert service.search(query, project="shop").results[0].id == target
    hit = service.search(query, project="shop").results[0]
    assert hit.found_by == "meaning"
    both = service.search("refunds twice", project="shop").results[0]
    assert both.id == target
    assert both.found_by.startswith("words") and both.found_by.endswith("+meaning")
    # Without the vectors the same query finds nothing by its words.
    from memspool.recall import search

    assert [h.id for h in search(service.conn, query, project="shop")] == []


def test_projects_stay_apart(service: Any) -> None:
    shop = service.save("Refunds counted twice", "Refund rows inserted twice.",
                        project="shop").id
    infra = service.save("Payments duplicated", "Payment rows repeated again.",
                         project="infra").id
    index = service.vectors()
    index.refresh(service.conn, force=True)  # from the matrix file as well as the store
    for project, own in (("shop", shop), ("infra", infra)):
        found = [n.memory_id for n in index.nearest(service.conn, "money twice", limit=10,
                                                   project=project)]
        assert found == [own]
        results = service.search("money twice", project=project).results
        assert {r.project for r in results} == {project}
    assert {n.memory_id for n in index.nearest(service.conn, "money twice", limit=10)} == {
        shop, infra}


def _ids_on_disk(home: Path) -> set[int]:
    return {int(i) for path in (home / VECTORS_DIR).glob("*/ids.npy") for i in np.load(path)[:, 0]}


@pytest.mark.parametrize("which", ["oldest", "newest"])
def test_forget_removes_the_vector_from_the_store_and_the_files(service: Any, home: Path,
                                                               which: str) -> None:
    first = service.save("Refunds counted twice", "Refund rows inserted twice.",
                         project="shop").id
    second = service.save("Slow api", "The api latency after deploy.", project="shop").id
    service.vectors().refresh(service.conn, force=True)
    assert _ids_on_disk(home) == {first, second}
    gone, kept = (first, second) if which == "oldest" else (second, first)
    service.forget(gone)
    assert gone not in _vectors(service.conn)
    assert _ids_on_disk(home) == {kept}
    assert len(list((home / VECTORS_DIR).iterdir())) == 1
    assert all(r.id != gone for r in service.search("payment twice latency").results)


def test_forget_removes_the_files_even_with_semantic_recall_off(service: Any,
                                                                home: Path) -> None:
    gone = service.save("Refunds counted twice", "Refund rows inserted twice.",
                        project="shop").id
    service.vectors().refresh(service.conn, force=True)
    assert _ids_on_disk(home) == {gone}
    with Service(home, env={"MEMSPOOL_SEMANTIC": "off"}) as plain:
        plain.forget(gone)
    assert _ids_on_disk(home) == set() and not list((home / VECTORS_DIR).iterdir())


def test_the_store_scores_every_candidate(service: Any) -> None:
    """The files pick candidates; each is scored by the vector the store holds now:
    the files' copy only when the store holds that very row (same memory, same seq)."""
    ids = [service.save(f"Note {i}", text, project="shop").id for i, text in enumerate(
        ["Refund rows inserted twice.", "The node disk is full.", "Slow api latency."])]
    index = service.vectors()
    assert index.refresh(service.conn, force=True)
    query = "refund payment money twice"
    before = {n.memory_id: n.similarity for n in index.nearest(service.conn, query, limit=3)}
    assert before[ids[0]] > before[ids[1]] + 0.1
    disk = service.conn.execute("SELECT vector FROM memory_vectors WHERE memory_id = ?",
                                (ids[1],)).fetchone()[0]
    # The same row (memory and seq) is scored from the files' copy: memspool never
    # changes a row in place, so this edit is not read.
    service.conn.execute("UPDATE memory_vectors SET vector = ? WHERE memory_id = ?",
                         (disk, ids[0]))
    same = {n.memory_id: n.similarity for n in index.nearest(service.conn, query, limit=3)}
    assert same[ids[0]] == before[ids[0]]
    # The store's row of the refund note becomes another one at an older seq (as
    # a store restored from a backup and embedded again could have): the files
    # still hold the old row, and the store's is the one scored.
    service.conn.execute("UPDATE memory_vectors SET seq = 0 WHERE memory_id = ?", (ids[0],))
    near = {n.memory_id: n.similarity for n in index.nearest(service.conn, query, limit=3)}
    assert near[ids[0]] == pytest.approx(near[ids[1]], abs=1e-6)
    # A memory changed after the files were written is found by its new text.
    service.conn.execute("UPDATE memories SET body = 'Storage volume space.' WHERE id = ?",
                         (ids[2],))
    embed_pending(service.conn, index.encoder)
    assert not index.refresh(service.conn)
    assert ids[2] in [n.memory_id for n in index.nearest(service.conn, "storage volume",
                                                         limit=2)]
    service.conn.execute("DELETE FROM memories WHERE id = ?", (ids[1],))
    assert ids[1] not in [n.memory_id for n in index.nearest(service.conn, "disk", limit=5)]


def test_files_from_another_store_are_never_used(service: Any, home: Path) -> None:
    old = service.save("Refunds counted twice", "Refund rows inserted twice.",
                       project="shop").id
    service.vectors().refresh(service.conn, force=True)
    service.close()
    for path in home.glob("memspool.db*"):
        path.rename(path.with_name(path.name + ".aside"))  # the store moved aside
    # A new store, whose first memory has the old one's id and another meaning.
    fresh = service.save("Disk full", "The storage volume space is low.", project="shop").id
    service.conn.execute("DELETE FROM memory_vectors")
    service.conn.execute("INSERT INTO vectors_pending VALUES (?)", (fresh,))
    embed_pending(service.conn, service.vectors().encoder)
    assert fresh == old
    near = service.vectors().nearest(service.conn, "refund payment money", limit=5)
    assert all(n.similarity < 0.5 for n in near), near


def test_the_two_stage_search_finds_what_the_whole_search_finds(
        service: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from memspool.recall import vectors as vector_module

    words = [w for group in CLUSTERS.values() for w in group] + PLAIN
    rng = np.random.default_rng(3)
    texts = sorted({" ".join(rng.choice(words, 4)) for _ in range(400)})
    service.import_lines([json.dumps({"project": "shop", "key": f"k{i}", "type": "takeaway",
                                      "summary": t, "body": t}).encode()
                          for i, t in enumerate(texts)])
    index = service.vectors()
    index.refresh(service.conn, force=True)
    whole = [n.memory_id for n in index.nearest(service.conn, "refund twice slow", limit=5)]
    monkeypatch.setattr(vector_module, "TWO_STAGE_ROWS", 50)
    monkeypatch.setattr(vector_module, "HEAD_POOL", 60)
    monkeypatch.setattr(vector_module, "HEAD_DIMS", 8)
    index.refresh(service.conn, force=True)
    two = [n.memory_id for n in index.nearest(service.conn, "refund twice slow", limit=5)]
    assert len(whole) == 5 and len(set(whole) & set(two)) >= 4


def test_searches_at_once_on_many_threads_answer_as_one_at_a_time(home: Path,
                                                                    model: Path) -> None:
    """Each search probes the vectors on the shared worker threads: eight threads
    searching at once (as the HTTP API's workers do), each with its own Service,
    get exactly the answers of the same searches made one after the other."""
    import threading

    words = [w for group in CLUSTERS.values() for w in group] + PLAIN
    rng = np.random.default_rng(11)
    texts = sorted({" ".join(rng.choice(words, 5)) for _ in range(300)})
    env = {"MEMSPOOL_SEMANTIC_MODEL": str(model)}
    queries = [" ".join(rng.choice(words, 3)) for _ in range(40)]
    with Service(home, env=env) as service:
        service.import_lines([json.dumps({"project": "shop" if i % 3 else "ops", "key": f"k{i}",
                                          "type": "takeaway", "summary": t,
                                          "body": t}).encode() for i, t in enumerate(texts)])
        service.reindex()

        def answers(one: Any) -> list[list[tuple[int, float, str]]]:
            return [[(r.id, r.score, r.found_by) for r in one.search(
                q, project="shop" if i % 2 else None, limit=8).results]
                for i, q in enumerate(queries)]

        alone = answers(service)
    assert sum(map(len, alone)) > 100 and any("meaning" in r[2] for a in alone for r in a)
    found: list[Any] = [None] * 8
    start = threading.Barrier(8)

    def run(slot: int) -> None:
        with Service(home, env=env) as own:
            start.wait()
            found[slot] = answers(own)

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [alone] * 8


def test_a_write_embeds_within_a_budget_and_leaves_the_rest_waiting(
        service: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import memspool.service

    monkeypatch.setattr(memspool.service, "EMBED_BUDGET_SECS", 0.0)
    service.save("Refunds counted twice", "Refund rows inserted twice.", project="shop")
    assert service.status().semantic["waiting"] == 1
    service.maintain(reindex=True)
    assert service.status().semantic["waiting"] == 0


def test_a_symlinked_vectors_folder_is_neither_followed_nor_emptied(
        service: Any, home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    elsewhere.chmod(0o755)  # whatever the umask an earlier test left
    (elsewhere / "notes").mkdir()
    (elsewhere / "notes" / "mine.txt").write_text("mine")
    home.mkdir(parents=True, exist_ok=True)
    (home / VECTORS_DIR).symlink_to(elsewhere)
    memory = service.save("Refunds counted twice", "Refund rows inserted twice.",
                          project="shop").id
    with pytest.raises(HomeError, match="symlink"):
        service.vectors().refresh(service.conn, force=True)
    service.forget(memory)
    assert (elsewhere / "notes" / "mine.txt").read_text() == "mine"
    assert elsewhere.stat().st_mode & 0o777 == 0o755


def test_writers_at_once_leave_one_whole_set(service: Any, home: Path, model: Path) -> None:
    for i, text in enumerate(DISTINCT):
        service.save(f"Note {i}", text, project="shop")
    with Service(home, env={"MEMSPOOL_SEMANTIC_MODEL": str(model)}) as other:
        for _ in range(3):
            service.vectors().refresh(service.conn, force=True)
            other.vectors().refresh(other.conn, force=True)
    sets = list((home / VECTORS_DIR).iterdir())
    assert len(sets) == 1 and {p.name for p in sets[0].iterdir()} == {
        "matrix.npy", "head.npy", "ids.npy", "meta.json"}
    assert len(_ids_on_disk(home)) == len(DISTINCT)


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_model_folder_of_junk_is_a_clear_error_and_the_write_stands(
        home: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "config.json").write_text("{}")
    (junk / "tokenizer.json").write_text("not a tokenizer")
    (junk / "model.safetensors").write_bytes(b"\x00" * 64)
    env = {"MEMSPOOL_SEMANTIC_MODEL": str(junk)}
    proc = run_cli("capture", "--project", "shop", input=b"Pitfall: the disk fills up on "
                   b"friday because logs are never rotated.", env=env)
    assert b"Traceback" not in proc.stderr
    proc = run_cli("search", "disk", check=False, env=env)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert "Cannot load the model" in proc.stderr.decode()
    status = run_cli("status", env=env).stdout.decode()
    assert "semantic recall:   off: Cannot load the model" in status
    found = _json("search", "disk", env={"MEMSPOOL_SEMANTIC": "0"})["results"]
    assert found and "friday" in found[0]["summary"]


def test_a_memory_changed_while_embedded_keeps_its_place_in_the_queue(
        service: Any) -> None:
    from memspool.store import transaction
    from memspool.store import vectors as vector_rows

    memory = service.save("Refunds", "Refund rows inserted twice.", project="shop").id
    service.conn.execute("DELETE FROM memory_vectors")
    service.conn.execute("INSERT INTO vectors_pending VALUES (?)", (memory,))
    batch = vector_rows.pending(service.conn)
    service.conn.execute("UPDATE memories SET body = 'The node disk is full.' WHERE id = ?",
                         (memory,))
    encoder = service.vectors().encoder
    with transaction(service.conn):
        stored = vector_rows.put(service.conn, encoder.hash,
                                 [(batch[0], encoder.encode([batch[0].text])[0].tobytes())])
    assert stored == 0 and vector_rows.pending_count(service.conn) == 1
    assert embed_pending(service.conn, encoder) == 1


def test_superseded_never_outranks_its_successor_after_fusion(service: Any) -> None:
    old = service.save("Refund rule", "Refund payments twice daily.", project="shop").id
    new = service.save("Refund rule now", "Charge billing once.", project="shop").id
    service.conn.execute("UPDATE memories SET layer = 'superseded', superseded_by = ?"
                         " WHERE id = ?", (new, old))
    results = service.search("refund payments twice", include_all=True).results
    ranks = {r.id: i for i, r in enumerate(results)}
    assert ranks[new] < ranks[old]
    assert [r.id for r in service.search("refund payments twice").results] == [new]


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_reindex_fills_in_and_follows_a_model_change(home: Path, tmp_path: Path,
                                                     model: Path) -> None:
    with Service(home, env={"MEMSPOOL_SEMANTIC": "0"}) as plain:
        for i, text in enumerate(DISTINCT):
            plain.save(f"Note {i}", text, project="shop")
        assert plain.vectors() is None
        assert plain.status().semantic["on"] is False
    env = {"MEMSPOOL_SEMANTIC_MODEL": str(model)}
    proc = run_cli("status", "--json", env=env)
    semantic = json.loads(proc.stdout)["semantic"]
    assert semantic["on"] and semantic["vectors"] == 0 and semantic["waiting"] == 5
    report = _json("maintain", "--reindex", env=env)["reindex"]
    assert report["embedded"] == 5
    other = make_model(tmp_path / "other-model", seed=99)
    env = {"MEMSPOOL_SEMANTIC_MODEL": str(other)}
    semantic = _json("status", env=env)["semantic"]
    assert semantic["vectors"] == 0 and semantic["vectors_other_models"] == 5
    assert "--reindex" in run_cli("status", env=env).stdout.decode()
    report = _json("maintain", "--reindex", env=env)["reindex"]
    assert report["queued"] == 5 and report["embedded"] == 5
    hits = _json("search", "money again", env=env)["results"]
    assert hits and "meaning" in hits[0]["found_by"]


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_without_the_extra_everything_works_and_status_says_how(home: Path) -> None:
    def cli(*args: str, stdin: bytes = b"") -> str:
        return run_cli(*args, input=stdin, hide=("model2vec",)).stdout.decode()

    cli("capture", "--project", "shop", stdin=b"Root cause: refunds were counted twice "
        b"because the webhook double-inserts rows.")
    found = json.loads(cli("search", "--json", "refunds twice"))["results"]
    assert found and "meaning" not in found[0]["found_by"]
    status = cli("status")
    assert "semantic recall:   off: the semantic extra is not installed: " in status
    assert "-m pip install '.[semantic]'" in status
    assert not (home / VECTORS_DIR).exists()


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_bad_setting_or_model_folder_is_a_clear_error(home: Path, tmp_path: Path) -> None:
    proc = run_cli("status", check=False, env={"MEMSPOOL_SEMANTIC": "maybe"})
    assert proc.returncode == 1
    assert "semantic must be auto, on (1) or off (0)" in proc.stderr.decode()
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    run_cli("capture", "--project", "shop", input=b"Pitfall: the disk fills up on friday.",
            env={"MEMSPOOL_SEMANTIC": "0"})
    proc = run_cli("search", "disk", check=False, env={"MEMSPOOL_SEMANTIC_MODEL": str(empty)})
    assert proc.returncode == 1 and "is not a model2vec model folder" in proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    status = run_cli("status", env={"MEMSPOOL_SEMANTIC_MODEL": str(empty)}).stdout.decode()
    assert "semantic recall:   off:" in status and "not a model2vec model folder" in status


def test_vector_files_are_private(service: Any, home: Path) -> None:
    service.save("Refunds counted twice", "Refund rows inserted twice.", project="shop")
    service.vectors().refresh(service.conn, force=True)
    folder = home / VECTORS_DIR
    assert folder.stat().st_mode & 0o777 == 0o700
    for path in folder.rglob("*"):
        assert path.stat().st_mode & 0o777 == (0o700 if path.is_dir() else 0o600), path


def test_the_drainer_embeds_what_waits(home: Path, model: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from memspool.config import load_config
    from memspool.drainer import Drainer
    from memspool.drainer.upkeep import Upkeep

    with Service(home, env={"MEMSPOOL_SEMANTIC": "off"}) as plain:
        for i, text in enumerate(DISTINCT[:3]):
            plain.save(f"Note {i}", text, project="shop")
    monkeypatch.setenv("MEMSPOOL_SEMANTIC_MODEL", str(model))
    upkeep = Upkeep()
    drainer = Drainer(load_config(), upkeep)
    drainer.initialize()
    try:
        assert upkeep.embed(drainer, 5.0) == 3
        assert upkeep.embed(drainer, 5.0) == 0
    finally:
        drainer.shutdown()
    with Service(home, env={"MEMSPOOL_SEMANTIC_MODEL": str(model)}) as service:
        assert service.status().semantic["vectors"] == 3


def test_meaning_alone_must_be_near_enough(service: Any) -> None:
    refund = service.save("Refunds counted twice", "Refund rows inserted twice.",
                          project="shop").id
    assert service.search("disk storage volume").results == []
    assert service.search("xyzzy plugh").results == []  # no word the model knows
    assert [r.id for r in service.search("money").results] == [refund]


def test_rows_stored_after_the_set_are_found(service: Any) -> None:
    for i, text in enumerate(DISTINCT):
        service.save(f"Note {i}", text, project="shop")
    index = service.vectors()
    index.refresh(service.conn, force=True)
    new = service.save("Storage", "Volume space storage.", project="shop").id
    assert not index.refresh(service.conn)  # one row after the set: no new set
    assert new in [n.memory_id for n in index.nearest(service.conn, "storage volume space",
                                                       limit=2)]


def test_a_set_from_another_store_is_not_read(service: Any, home: Path) -> None:
    """The old store's set covers seqs 1-3 but holds only memory 3 (1 and 2 were
    forgotten); the new store has memories 1-3 at seqs 1-3. Read as the new
    store's, the set would hide memories 1 and 2."""
    for i, text in enumerate(DISTINCT[:3]):
        service.save(f"Note {i}", text, project="shop")
    service.forget(1)
    service.forget(2)
    service.vectors().refresh(service.conn, force=True)
    service.close()
    for path in home.glob("memspool.db*"):
        path.rename(path.with_name(path.name + ".aside"))
    with Service(home, env={"MEMSPOOL_SEMANTIC_MODEL": str(service.config.semantic_model),
                            "MEMSPOOL_SEMANTIC": "off"}) as plain:
        for i, text in enumerate(DISTINCT[:3]):
            plain.save(f"Note {i}", text, project="shop")
    service.conn.execute("INSERT OR IGNORE INTO vectors_pending SELECT id FROM memories")
    embed_pending(service.conn, service.vectors().encoder)
    found = {n.memory_id for n in service.vectors().nearest(service.conn, DISTINCT[0], limit=3)}
    assert found == {1, 2, 3}


def test_a_set_written_from_before_a_forget_is_never_read(
        service: Any, home: Path, model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer takes its snapshot, a forget runs, then the writer publishes."""
    gone = service.save("Refunds counted twice", "Refund rows inserted twice.",
                        project="shop").id
    kept = service.save("Slow api", "The api latency after deploy.", project="shop").id
    late = Service(home, env={"MEMSPOOL_SEMANTIC_MODEL": str(model)})
    index = late.vectors()
    real_ensure = vectors_module.ensure_private_dir
    calls: list[Path] = []

    def forget_first(path: Path) -> Path:
        if not calls:  # after the snapshot, before the set is made and published
            calls.append(path)
            service.forget(gone)
        return real_ensure(path)

    monkeypatch.setattr(vectors_module, "ensure_private_dir", forget_first)
    index.refresh(late.conn, force=True)
    monkeypatch.setattr(vectors_module, "ensure_private_dir", real_ensure)
    late.close()
    # The late set (with the forgotten vector) is what is on disk, but no reader uses it.
    assert gone in _ids_on_disk(home)
    near = service.vectors().nearest(service.conn, "refund payment twice", limit=5)
    assert gone not in {n.memory_id for n in near} and kept in {n.memory_id for n in near}
    assert service.vectors()._latest(service.conn) is None
    service.save("Disk", "The node disk is full.", project="shop")  # the next writer replaces it
    assert gone not in _ids_on_disk(home)


def test_a_forget_while_a_set_is_being_made_stops_it(service: Any, home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    gone = service.save("Refunds counted twice", "Refund rows inserted twice.",
                        project="shop").id
    real_save = vectors_module._save

    def save_then_forget(path: Path, array: Any) -> None:
        real_save(path, array)
        if path.name == "matrix.npy":
            service.forget(gone)  # removes the half-made set too

    monkeypatch.setattr(vectors_module, "_save", save_then_forget)
    with pytest.raises(FileNotFoundError):
        service.vectors().refresh(service.conn, force=True)
    assert not list((home / VECTORS_DIR).iterdir())


def test_a_damaged_set_is_ignored_then_replaced(service: Any, home: Path) -> None:
    for i, text in enumerate(DISTINCT):
        service.save(f"Note {i}", text, project="shop")
    service.vectors().refresh(service.conn, force=True)
    (next((home / VECTORS_DIR).iterdir()) / "ids.npy").write_bytes(b"")
    fresh = Service(home, env={"MEMSPOOL_SEMANTIC_MODEL": str(service.config.semantic_model)})
    assert fresh.search("refund payment twice").results  # the store answers
    fresh.save("Kubelet", "Kubelet images on the node.", project="shop")
    everyone = {r[0] for r in fresh.conn.execute("SELECT id FROM memories")}
    assert _ids_on_disk(home) == everyone and len(everyone) == len(DISTINCT) + 1
    fresh.close()


def test_rows_of_another_model_do_not_stop_the_candidates_widening(service: Any) -> None:
    """Memories embedded by another model since the files were written have a row in
    the store that scores nothing: the candidates widen past them until enough of
    this model's pass the filters."""
    words = [w for group in CLUSTERS.values() for w in group] + PLAIN
    rng = np.random.default_rng(5)
    texts = sorted({" ".join(rng.choice(words, 4)) for _ in range(200)})[:120]
    service.import_lines([json.dumps({"project": "shop", "key": f"k{i}",
                                      "type": "decision" if i % 2 else "takeaway",
                                      "summary": t, "body": t}).encode()
                          for i, t in enumerate(texts)])
    index = service.vectors()
    index.refresh(service.conn, force=True)
    decisions = [r[0] for r in service.conn.execute(
        "SELECT id FROM memories WHERE type = 'decision' ORDER BY id")]
    other = decisions[:40]
    with service.conn:
        for memory_id in other:  # as a reindex with another model would leave them
            blob = service.conn.execute("SELECT vector FROM memory_vectors WHERE memory_id = ?",
                                        (memory_id,)).fetchone()[0]
            service.conn.execute("DELETE FROM memory_vectors WHERE memory_id = ?", (memory_id,))
            service.conn.execute("INSERT INTO memory_vectors (memory_id, project, model, vector)"
                                 " VALUES (?, 'shop', 'another-model', ?)", (memory_id, blob))
    near = index.nearest(service.conn, "refund twice slow", limit=12, type="decision")
    assert len(near) == 12 and not {n.memory_id for n in near} & set(other)


def test_a_store_put_back_from_a_copy_never_scores_a_row_from_the_files(
        home: Path, model: Path) -> None:
    """A store copied back from a backup gives a seq again to another row of the same
    memory id: the files written before the copy went back are removed before it."""
    env = {"MEMSPOOL_SEMANTIC_MODEL": str(model)}
    with Service(home, env=env) as service:
        for i, text in enumerate(DISTINCT[1:]):
            service.save(f"Note {i}", text, project="shop")
        service.vectors().refresh(service.conn, force=True)  # the store's id is in the copy
    backup = home.parent / "backup.db"
    shutil.copy2(home / "memspool.db", backup)
    with Service(home, env=env) as service:
        refund = service.save("Refunds", "Refund payment money rows inserted twice.",
                              project="shop").id
        service.vectors().refresh(service.conn, force=True)
    for suffix in ("", "-wal", "-shm"):
        (home / f"memspool.db{suffix}").unlink(missing_ok=True)
    shutil.copy2(backup, home / "memspool.db")
    with Service(home, env=env) as service:
        disk = service.save("Disk", "The kubelet disk volume is full of storage.",
                            project="shop").id
        assert disk == refund  # the same id and the same seq, given again
        index = service.vectors()
        query = "refund payment money twice"
        near = {n.memory_id: n.similarity for n in index.nearest(service.conn, query, limit=5)}
        stored = np.frombuffer(service.conn.execute(
            "SELECT vector FROM memory_vectors WHERE memory_id = ?", (disk,)).fetchone()[0],
            dtype=np.float32)
        assert near.get(disk, 0.0) == pytest.approx(
            float(stored @ index.encoder.encode([query])[0]), abs=1e-5)


def test_a_set_written_before_seqs_were_kept_still_answers(service: Any, home: Path) -> None:
    """A set whose ids file has no seq column (written by an earlier memspool) is
    read, and every candidate it picks is scored from the store."""
    ids = [service.save(f"Note {i}", text, project="shop").id for i, text in enumerate(DISTINCT)]
    index = service.vectors()
    index.refresh(service.conn, force=True)
    query = "refund payment money twice"
    expected = index.nearest(service.conn, query, limit=3)
    folder = next((home / VECTORS_DIR).iterdir())
    written = np.load(folder / "ids.npy")
    assert written.shape == (len(ids), 2) and set(written[:, 0]) == set(ids)
    (folder / "ids.npy").unlink()
    np.save(folder / "ids.npy", written[:, :1])
    fresh = Service(home, env={"MEMSPOOL_SEMANTIC_MODEL": str(service.config.semantic_model)})
    old = fresh.vectors()
    assert old is not None and old._latest(fresh.conn) is not None
    assert old.nearest(fresh.conn, query, limit=3) == expected
    fresh.close()


def test_type_and_layer_filters_apply_before_the_meaning_window(service: Any) -> None:
    rows = [json.dumps({"project": "shop", "key": f"t{i}", "type": "takeaway",
                        "summary": f"Refund payment {i}",
                        "body": "Money charge billing " * (i % 5 + 1)}).encode()
            for i in range(120)]
    service.import_lines(rows)
    decision = service.save("Billing", "Charge the money again, twice.",
                            type="decision", project="shop").id
    service.vectors().refresh(service.conn, force=True)
    found = service.search("money again", type="decision").results
    assert [r.id for r in found] == [decision]


def test_maintain_embeds_everything_waiting(service: Any,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import memspool.service

    monkeypatch.setattr(memspool.service, "EMBED_BUDGET_SECS", 0.0)
    for i, text in enumerate(DISTINCT):
        service.save(f"Note {i}", text, project="shop")
    assert service.status().semantic["waiting"] == len(DISTINCT)
    service.maintain()
    assert service.status().semantic["waiting"] == 0


def test_saving_the_same_text_keeps_the_vector(service: Any) -> None:
    memory = service.save("Deploy rule", "Never deploy on friday.", key="deploy",
                          project="shop").id
    before = _vectors(service.conn)[memory]
    service.save("Deploy rule", "Never deploy on friday.", key="deploy", project="shop")
    assert _vectors(service.conn)[memory] == before


def test_a_broken_model_is_logged_once_by_the_drainer(home: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    from memspool.config import load_config
    from memspool.drainer import Drainer
    from memspool.drainer.upkeep import Upkeep

    with Service(home, env={"MEMSPOOL_SEMANTIC": "off"}) as plain:
        plain.save("Note", DISTINCT[0], project="shop")
    empty = tmp_path / "no-model"
    empty.mkdir()
    monkeypatch.setenv("MEMSPOOL_SEMANTIC_MODEL", str(empty))
    upkeep = Upkeep()
    drainer = Drainer(load_config(), upkeep)
    drainer.initialize()
    try:
        for _ in range(5):
            assert upkeep.embed(drainer, 1.0) == 0
    finally:
        drainer.shutdown()
    said = [r for r in caplog.records if "semantic recall is off" in r.getMessage()]
    assert len(said) == 1 and not any(r.exc_info for r in caplog.records)
