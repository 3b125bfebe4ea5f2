"""Memory vectors: embedding the queued memories, and the nearest ones to a query.

The store holds every vector (``memory_vectors``, the truth). Reading 100 MB
of rows per query would make a CLI search slow, so a reader first looks in a
matrix set: a folder ``vectors/<model>-<generation>/`` holding
``matrix.npy`` (float32, one row per memory, rows grouped by project),
``head.npy`` (its first ``HEAD_DIMS`` columns alone), ``ids.npy`` (memory
id and vector seq per row) and ``meta.json`` (the store it came from, the
store's forget epoch, the highest seq it covers, the projects' row ranges).
A set is built in a hidden folder and published by renaming that folder, so
it is complete and never changes; the writer that publishes last removes
every other set.

A query scores the set (memory-mapped: a warm process keeps it in memory,
a new one reads only the pages it touches) to pick candidates, adds the rows
stored after the set, and asks the store which row it holds now for each
candidate: a memory gone since (or filtered out) drops out; one whose row
in the store is the very row the set holds (the same seq: a row is never
changed in place, a new vector is a new seq) is scored from the set's copy;
any other is scored by the vector read from the store. The set only makes
the answer fast; the store makes it. A set is used only while it matches
the store: the same ``vectors_store`` id (a store moved aside and a new one
never share sets), the same ``vectors_epoch`` (every forget moves it on, so
a set written from a snapshot taken before a forget is never read after
it), and no seq the store has not reached (a store restored from a
backup). Whoever embeds (``VectorIndex.embed``) first removes every set
that covers seqs the store has not reached: a store put back from a copy
gives those seqs again, to other rows, and a set from before must never be
trusted for them. Whoever embeds next replaces a set that does not match.
A set written before seqs were kept (``ids.npy`` of one column) is read,
and every candidate of it is read from the store.

A search starts the costly half of a query (encoding it, scoring the set)
on a worker thread (``probe``) and ranks by words meanwhile; numpy and the
tokenizer let go of the GIL, so on two cores the two halves overlap.

Past ``TWO_STAGE_ROWS`` rows the head is scored first and the whole rows of
the best ``HEAD_POOL`` only: the model's dimensions come out of a PCA,
largest variance first, so the head ranks almost as the whole does at a
quarter of the memory read (``bench/recall_latency.py`` prints how often the
two agree).

Whoever embeds writes a new set once more than ``REWRITE_AFTER_ROWS`` rows
came after the last one. A forget removes every set at once, and a new one
is written when the model is at hand, so a forgotten memory's vector does
not stay on disk; a set being written meanwhile from an older snapshot is
removed by the next writer and never read.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from memspool.base.errors import HomeError
from memspool.config import DIR_MODE, FILE_MODE, ensure_private_dir
from memspool.recall.embed import Encoder
from memspool.store import get_state, set_state, transaction
from memspool.store import vectors as vector_rows

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    import numpy as np
    from numpy.typing import NDArray

__all__ = ["VECTORS_DIR", "Nearest", "Probe", "VectorIndex", "bump_epoch", "embed_pending",
           "ready", "remove_sets"]

VECTORS_DIR: Final = "vectors"
#: Rows stored after the newest set past which whoever embeds writes a new one: a
#: query reads those rows from the store, and a few hundred take well under a millisecond.
REWRITE_AFTER_ROWS: Final = 256
#: Leading dimensions scored first, past this many rows; candidates kept for the full score.
HEAD_DIMS: Final = 64
TWO_STAGE_ROWS: Final = 20_000
HEAD_POOL: Final = 1000
#: The state key naming this store in every set made from it.
STORE_KEY: Final = "vectors_store"
#: The state key every forget moves on: a set from before it is not read after it.
EPOCH_KEY: Final = "vectors_epoch"
#: A hidden set folder older than this was left by a writer that died.
SCRATCH_MAX_AGE_SECS: Final = 600.0
#: Threads that probe sets for searches running at once (the HTTP API has 4).
PROBE_THREADS: Final = 4
_WORKERS: ThreadPoolExecutor | None = None
_WORKERS_LOCK: Final = threading.Lock()


class Nearest(NamedTuple):
    memory_id: int
    similarity: float


def embed_pending(conn: sqlite3.Connection, encoder: Encoder, *,
                  budget_secs: float | None = None,
                  should_stop: Callable[[], bool] | None = None) -> int:
    """Embed queued memories, a batch per transaction; how many were embedded.

    Stops after ``budget_secs`` or when ``should_stop()`` says so, between
    batches. A memory whose text changes while its batch is being embedded
    keeps its place in the queue (its vector is made again from the new text).
    """
    deadline = None if budget_secs is None else time.monotonic() + budget_secs
    done = 0
    while deadline is None or time.monotonic() < deadline:
        if should_stop is not None and should_stop():
            break
        batch = vector_rows.pending(conn)
        if not batch:
            break
        matrix = encoder.encode([item.text for item in batch])
        with transaction(conn):
            stored = vector_rows.put(conn, encoder.hash,
                                     [(item, row.tobytes()) for item, row in zip(batch, matrix,
                                                                                  strict=True)])
        done += stored
        if stored == 0:  # every memory of the batch changed under us: let the writer finish
            break
    return done


class _Matrix(NamedTuple):
    name: str
    seq: int
    store: str
    epoch: str
    vectors: NDArray[np.float32]
    head: NDArray[np.float32]
    ids: NDArray[np.int64]
    #: Each row's seq in the store when the set was written, and the rows in
    #: the order of their memory ids (to find a memory's row).
    seqs: NDArray[np.int64]
    by_id: NDArray[np.intp]
    projects: dict[str, tuple[int, int]]


class Probe(NamedTuple):
    """A query's vector and, when a set was at hand, the rows of it nearest the
    query: the first round of ``nearest_and``, worked out ahead (``probe``)."""

    vector: NDArray[np.float32]
    matrix: _Matrix | None
    span: tuple[int, int]
    want: int
    rows: NDArray[np.intp] | None


def _sets(folder: Path, prefix: str = "", *, scratch: bool = False) -> list[str]:
    """The set folders in ``folder`` (of the model ``prefix``); with ``scratch``, the
    hidden ones being written (or left by a writer that died) instead."""
    if folder.is_symlink():
        return []  # never followed: a planted link must not steer reads or deletes
    try:
        names = [e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    if scratch:
        return [n for n in names if n.startswith(".")]
    return sorted(n for n in names if n.startswith(prefix) and not n.startswith("."))


def remove_sets(home: Path) -> int:
    """Remove every set under ``home`` (any model, published or being written); how many.

    Needs no model. A writer whose scratch folder goes fails to publish; that
    costs its work, not correctness.
    """
    folder = home / VECTORS_DIR
    names = _sets(folder) + _sets(folder, scratch=True)
    for name in names:
        shutil.rmtree(folder / name, ignore_errors=True)
    return len(names)


def bump_epoch(conn: sqlite3.Connection) -> None:
    """Move the forget epoch on (inside the forget's transaction)."""
    set_state(conn, EPOCH_KEY, str(int(get_state(conn, EPOCH_KEY) or 0) + 1))


class VectorIndex:
    """The nearest memories to a query vector, for one home and one model."""

    def __init__(self, home: Path, encoder: Encoder) -> None:
        self.folder = home / VECTORS_DIR
        self.encoder = encoder
        self._matrix: _Matrix | None = None

    # -- reading ----------------------------------------------------------------

    def _load(self, name: str) -> _Matrix | None:
        import numpy as np

        found = self._matrix
        if found is not None and found.name == name:
            return found
        where = self.folder / name
        try:
            meta = json.loads((where / "meta.json").read_text())
            ids = np.load(where / "ids.npy")
            if ids.shape[1] == 1:  # written before sets kept seqs: every row is read
                ids = np.column_stack((ids[:, 0], np.full(len(ids), -1, dtype=np.int64)))
            found = _Matrix(
                name, int(meta["seq"]), str(meta["store"]), str(meta["epoch"]),
                _mapped(where / "matrix.npy"), _mapped(where / "head.npy"), ids[:, 0],
                ids[:, 1], np.argsort(ids[:, 0]),
                {str(k): (int(v[0]), int(v[1])) for k, v in meta["projects"].items()})
            if len(found.vectors) != len(found.ids) or found.vectors.shape[1] != \
                    self.encoder.dims:
                return None
        except Exception:  # noqa: BLE001 - removed meanwhile or damaged: the store answers
            return None
        self._matrix = found
        return found

    def _latest(self, conn: sqlite3.Connection) -> _Matrix | None:
        """The set of this model that matches the store (the one covering most), or
        ``None``: then the store answers alone."""
        reached = _reached(conn)
        store, epoch = get_state(conn, STORE_KEY), get_state(conn, EPOCH_KEY) or "0"
        usable = [found for name in _sets(self.folder, f"{self.encoder.hash}-")
                  if (found := self._load(name)) is not None and found.store == store
                  and found.epoch == epoch and found.seq <= reached]
        return max(usable, key=lambda m: (m.seq, m.name)) if usable else None

    def nearest(self, conn: sqlite3.Connection, query: str, *, limit: int,  # noqa: PLR0913 - the filters, keyword-only
                project: str | None = None, type: str | None = None,
                live_only: bool = False) -> list[Nearest]:
        """The ``limit`` memories whose vectors are nearest to ``query``'s, of ``project``
        and ``type`` when given, and only buffer and canonical ones with ``live_only``."""
        probe = self._probe(query, self._latest(conn), limit, project)
        return self.nearest_and(conn, probe, limit=limit, project=project, type=type,
                                live_only=live_only)[0]

    def probe(self, conn: sqlite3.Connection, query: str, *, limit: int,
              project: str | None = None) -> Future[Probe]:
        """Start the costly half of ``nearest_and`` on a worker thread: encoding
        ``query`` and scoring the newest set for its best rows. The caller ranks by
        words meanwhile (the encoder and numpy let go of the GIL) and passes the
        result on to ``nearest_and`` with the same ``limit`` and ``project``."""
        matrix = self._latest(conn)
        try:
            return _workers().submit(self._probe, query, matrix, limit, project)
        except RuntimeError:  # no new thread (the interpreter is exiting): probe here
            return ready(self._probe(query, matrix, limit, project))

    def _probe(self, query: str, matrix: _Matrix | None, limit: int,
               project: str | None) -> Probe:
        q = self.encoder.encode([query])[0]
        want, span = _first_want(limit), _span(matrix, project)
        rows = (_best_rows(matrix, *span, q, want)
                if matrix is not None and q.any() and span[1] > span[0] else None)
        return Probe(q, matrix, span, want, rows)

    def nearest_and(self, conn: sqlite3.Connection, probe: Probe, *, limit: int,  # noqa: PLR0913 - the filters, keyword-only
                    project: str | None = None, type: str | None = None,
                    live_only: bool = False, also: tuple[int, ...] = (),
                    ) -> tuple[list[Nearest], dict[int, float]]:
        """The nearest memories to the query of ``probe`` (as ``nearest``), and the
        similarity of each memory of ``also`` that passes the same filters and has a
        vector, read in the same query of the store."""
        import numpy as np

        q = probe.vector
        if not q.any():
            return [], {}
        keep = vector_rows.Filter(project, type, live_only)
        conn.execute("BEGIN")  # one snapshot of the store for the whole query
        try:
            matrix = self._latest(conn)
            current = vector_rows.delta(conn, self.encoder.hash,
                                        matrix.seq if matrix is not None else 0, keep)
            seen = {row.memory_id for row in current}
            wanted = {i for i in also if i not in seen}
            in_set: dict[int, int] = {}  # memory id -> its row of the set
            read: list[vector_rows.VectorRow] | None = None  # rows read beside the delta
            if matrix is not None:
                start, end = _span(matrix, project)
                want = _first_want(limit)
                # The probe's rows stand for the first round when it scored this set.
                rows = (probe.rows if probe.matrix is matrix and probe.span == (start, end)
                        and probe.want == want else None)
                while end > start:
                    # Widen until enough candidates pass the filters, or none are left.
                    if rows is None:
                        rows = _best_rows(matrix, start, end, q, want)
                    ids = set(matrix.ids[rows].tolist())
                    live = vector_rows.seqs(conn, sorted(ids | wanted), keep)
                    # A memory whose row in the store is the very row the set holds
                    # (the same seq) is scored from the set; any other is read from
                    # the store, which checks its model (a row of another model counts
                    # for nothing).
                    in_set = _rows_held(matrix, live)
                    read = vector_rows.current(
                        conn, self.encoder.hash,
                        sorted(i for i in live if i not in in_set and i not in seen), keep)
                    found = len(in_set) + len(read) + sum(1 for i in live if i in seen)
                    if found >= limit or want >= end - start:
                        break
                    want, rows = want * 8, None
            if read is None and wanted:
                read = vector_rows.current(conn, self.encoder.hash, sorted(wanted), keep)
            current += read or []
        finally:
            conn.execute("COMMIT")
        scored: dict[int, float] = {}
        if current:
            block = np.frombuffer(b"".join(row.vector for row in current), dtype=np.float32)
            sims = block.reshape(len(current), -1) @ q
            scored.update((row.memory_id, float(s)) for row, s in zip(current, sims, strict=True))
        if in_set and matrix is not None:
            at = np.fromiter(sorted(in_set.values()), dtype=np.intp, count=len(in_set))
            scored.update(zip(matrix.ids[at].tolist(), (matrix.vectors[at] @ q).tolist(),
                              strict=True))
        extra = {i: round(scored[i], 6) for i in also if i in scored}
        ranked = sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return [Nearest(memory_id, round(sim, 6)) for memory_id, sim in ranked], extra

    # -- writing ----------------------------------------------------------------

    def embed(self, conn: sqlite3.Connection, *, budget_secs: float | None = None,
              should_stop: Callable[[], bool] | None = None) -> int:
        """``embed_pending`` with this index's model, after removing every set that
        covers seqs the store has not reached: such a set was written before the store
        was put back from a copy, and the seqs given from here on would name rows it
        does not hold (a set is trusted for a row of the same memory and seq)."""
        reached = _reached(conn)
        for name in _sets(self.folder):
            if _seq_of(name) > reached:
                shutil.rmtree(self.folder / name, ignore_errors=True)
                self._matrix = None
        return embed_pending(conn, self.encoder, budget_secs=budget_secs,
                             should_stop=should_stop)

    def refresh(self, conn: sqlite3.Connection, *, force: bool = False) -> bool:
        """Write a new set when enough rows came after the usable one, when none
        is usable, or with ``force``. True when one was written."""
        matrix = self._latest(conn)
        covered = matrix.seq if matrix is not None else 0
        after = int(conn.execute("SELECT count(*) FROM memory_vectors WHERE seq > ? AND model = ?",
                                 (covered, self.encoder.hash)).fetchone()[0])
        stale = matrix is None and bool(_sets(self.folder))
        if not (force or stale or after > REWRITE_AFTER_ROWS):
            return False
        self._write(conn)
        return True

    def _write(self, conn: sqlite3.Connection) -> None:
        import numpy as np

        if self.folder.is_symlink():
            raise HomeError(f"{self.folder} is a symlink; memspool keeps its vector files only "
                            f"in a plain folder of its home. Remove the link.", str(self.folder))
        with transaction(conn):  # one consistent view of the rows
            store = get_state(conn, STORE_KEY)
            if store is None:
                store = secrets.token_hex(8)
                set_state(conn, STORE_KEY, store)
            epoch = get_state(conn, EPOCH_KEY) or "0"
            top = vector_rows.top_seq(conn)
            rows = conn.execute(
                "SELECT memory_id, project, vector, seq FROM memory_vectors WHERE model = ?"
                " ORDER BY project, memory_id", (self.encoder.hash,)).fetchall()
        vectors = np.empty((len(rows), self.encoder.dims), dtype=np.float32)
        ids = np.empty((len(rows), 2), dtype=np.int64)  # memory id, seq
        projects: dict[str, list[int]] = {}
        for i, (memory_id, project, blob, seq) in enumerate(rows):
            vectors[i] = np.frombuffer(blob, dtype=np.float32)
            ids[i] = memory_id, seq
            projects.setdefault(project, [i, i])[1] = i + 1
        ensure_private_dir(self.folder)
        name = f"{self.encoder.hash}-{top:012d}-{secrets.token_hex(6)}"
        scratch = self.folder / f".{name}"
        scratch.mkdir(mode=DIR_MODE)
        try:
            _save(scratch / "matrix.npy", vectors)
            _save(scratch / "head.npy", np.ascontiguousarray(vectors[:, :HEAD_DIMS]))
            _save(scratch / "ids.npy", ids)
            _write_private(scratch / "meta.json", json.dumps({
                "store": store, "epoch": epoch, "seq": top, "rows": len(rows),
                "dims": self.encoder.dims, "projects": projects}).encode())
            scratch.rename(self.folder / name)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        self._matrix = None
        # The last to publish keeps only its own set: whatever another writer
        # published is at most as fresh for the reader (rows after a set and
        # the forget epoch cover the rest), and other models' sets are dead.
        for other in _sets(self.folder):
            if other != name:
                shutil.rmtree(self.folder / other, ignore_errors=True)
        for other in _sets(self.folder, scratch=True):
            with contextlib.suppress(OSError):
                if time.time() - (self.folder / other).stat().st_mtime > SCRATCH_MAX_AGE_SECS:
                    shutil.rmtree(self.folder / other, ignore_errors=True)


def _reached(conn: sqlite3.Connection) -> int:
    """The highest vector seq the store has given."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memory_vectors'").fetchone()
    return int(row[0]) if row else 0


def _seq_of(name: str) -> int:
    """The highest seq the set ``name`` covers (``<model>-<seq>-<token>``), 0 when
    the name does not say."""
    try:
        return int(name.rsplit("-", 2)[1])
    except (IndexError, ValueError):
        return 0


def _mapped(path: Path) -> NDArray[np.float32]:
    """The array in ``path``, memory-mapped read-only, as a plain array: slicing
    a ``np.memmap`` runs Python code on every query, holding the GIL that the
    caller's word ranking needs meanwhile."""
    import numpy as np

    mapped: NDArray[np.float32] = np.load(path, mmap_mode="r").view(np.ndarray)
    return mapped


def _rows_held(matrix: _Matrix, live: dict[int, int]) -> dict[int, int]:
    """The row of ``matrix`` of each memory of ``live`` (memory id -> its seq in the
    store now) whose row there is the one the store holds: the same seq."""
    import numpy as np

    if not live or not len(matrix.ids):
        return {}
    ids = np.fromiter(live.keys(), dtype=np.int64, count=len(live))
    seqs = np.fromiter(live.values(), dtype=np.int64, count=len(live))
    at = np.minimum(np.searchsorted(matrix.ids, ids, sorter=matrix.by_id), len(matrix.ids) - 1)
    rows = matrix.by_id[at]
    same = (matrix.ids[rows] == ids) & (matrix.seqs[rows] == seqs)
    return dict(zip(ids[same].tolist(), rows[same].tolist(), strict=True))


def _first_want(limit: int) -> int:
    """Rows a query first takes from a set, for ``limit`` results (more when the
    filters turn too many away)."""
    return 2 * limit + 20


def _span(matrix: _Matrix | None, project: str | None) -> tuple[int, int]:
    """The rows of ``matrix`` a query of ``project`` (or of every project) scores."""
    if matrix is None:
        return 0, 0
    return (0, len(matrix.ids)) if project is None else matrix.projects.get(project, (0, 0))


def ready(probe: Probe) -> Future[Probe]:
    """``probe``, already worked out, as the future ``VectorIndex.probe`` returns."""
    from concurrent.futures import Future

    finished: Future[Probe] = Future()
    finished.set_result(probe)
    return finished


def _workers() -> ThreadPoolExecutor:
    """The threads that probe sets beside the callers' word ranking (made once)."""
    global _WORKERS  # noqa: PLW0603 - one pool per process, made when first needed
    from concurrent.futures import ThreadPoolExecutor  # 5 ms of imports, for searches only

    with _WORKERS_LOCK:
        if _WORKERS is None:
            _WORKERS = ThreadPoolExecutor(max_workers=PROBE_THREADS,
                                          thread_name_prefix="memspool-vectors")
        return _WORKERS


def _best_rows(matrix: _Matrix, start: int, end: int, q: NDArray[np.float32],
               want: int) -> NDArray[np.intp]:
    """The indexes of (up to) the ``want`` rows of ``matrix[start:end]`` nearest ``q``."""
    import numpy as np

    if end - start > TWO_STAGE_ROWS and matrix.head.shape[1] < matrix.vectors.shape[1]:
        rough = matrix.head[start:end] @ q[: matrix.head.shape[1]]
        pool = np.argpartition(-rough, HEAD_POOL - 1)[:HEAD_POOL] + start
        pool.sort()  # rows in file order: the reads of the whole rows run forward
        sims = matrix.vectors[pool] @ q
        rows = pool
    else:
        sims = matrix.vectors[start:end] @ q
        rows = np.arange(start, end)
    if want < len(sims):
        return rows[np.argpartition(-sims, want - 1)[:want]]
    return rows


def _save(path: Path, array: NDArray[np.generic]) -> None:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    _write_private(path, buffer.getvalue())


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file ``path``, owner-only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
