"""Memory vectors: embedding the queued memories, and the nearest ones to a query.

The store holds every vector (``memory_vectors``, the truth). Reading 100 MB
of rows per query would make a CLI search slow, so a reader first looks in a
matrix set: a folder ``vectors/<model>-<generation>/`` holding
``matrix.npy`` (float32, one row per memory, rows grouped by project),
``head.npy`` (its first ``HEAD_DIMS`` columns alone), ``ids.npy`` (memory
id per row) and ``meta.json`` (the store it came from, the store's forget
epoch, the highest seq it covers, the projects' row ranges). A set is built
in a hidden folder and published by renaming that folder, so it is complete
and never changes; the writer that publishes last removes every other set.

A query scores the set (memory-mapped: a warm process keeps it in memory,
a new one reads only the pages it touches) to pick candidates, adds the rows
stored after the set, and scores every candidate again with the vector the
store holds now: a memory gone since drops out, one changed since is scored
by its new vector. The set only makes the answer fast; the store makes it.
A set is used only while it matches the store: the same ``vectors_store``
id (a store moved aside and a new one never share sets), the same
``vectors_epoch`` (every forget moves it on, so a set written from a
snapshot taken before a forget is never read after it), and no seq the
store has not reached (a store restored from a backup). Whoever embeds next
replaces a set that does not match.

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
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["VECTORS_DIR", "Nearest", "VectorIndex", "bump_epoch", "embed_pending", "remove_sets"]

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
    projects: dict[str, tuple[int, int]]


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
            found = _Matrix(
                name, int(meta["seq"]), str(meta["store"]), str(meta["epoch"]),
                np.load(where / "matrix.npy", mmap_mode="r"),
                np.load(where / "head.npy", mmap_mode="r"), ids[:, 0],
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
        reached = conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'memory_vectors'").fetchone()
        store, epoch = get_state(conn, STORE_KEY), get_state(conn, EPOCH_KEY) or "0"
        usable = [found for name in _sets(self.folder, f"{self.encoder.hash}-")
                  if (found := self._load(name)) is not None and found.store == store
                  and found.epoch == epoch and found.seq <= int(reached[0] if reached else 0)]
        return max(usable, key=lambda m: (m.seq, m.name)) if usable else None

    def nearest(self, conn: sqlite3.Connection, query: str, *, limit: int,  # noqa: PLR0913 - the filters, keyword-only
                project: str | None = None, type: str | None = None,
                live_only: bool = False, vector: NDArray[np.float32] | None = None,
                ) -> list[Nearest]:
        """The ``limit`` memories whose vectors are nearest to ``query``'s (or to
        ``vector``, the query's, when the caller has it), of ``project`` and ``type``
        when given, and only buffer and canonical ones with ``live_only``."""
        q = self.encoder.encode([query])[0] if vector is None else vector
        return self.nearest_and(conn, q, limit=limit, project=project, type=type,
                                live_only=live_only)[0]

    def nearest_and(self, conn: sqlite3.Connection, q: NDArray[np.float32], *, limit: int,  # noqa: PLR0913 - the filters, keyword-only
                    project: str | None = None, type: str | None = None,
                    live_only: bool = False, also: tuple[int, ...] = (),
                    ) -> tuple[list[Nearest], dict[int, float]]:
        """The nearest memories to the query vector ``q`` (as ``nearest``), and the
        similarity of each memory of ``also`` that passes the same filters and has a
        vector, read in the same query of the store."""
        import numpy as np

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
            if matrix is not None:
                start, end = ((0, len(matrix.ids)) if project is None
                              else matrix.projects.get(project, (0, 0)))
                want = 2 * limit + 20
                found: list[vector_rows.VectorRow] = []
                while end > start:
                    # Widen until enough candidates pass the filters, or none are left.
                    rows = _best_rows(matrix, start, end, q, want)
                    ids = {int(matrix.ids[i]) for i in rows}
                    found = vector_rows.current(conn, self.encoder.hash,
                                                sorted(ids | wanted), keep)
                    if len(found) >= limit or want >= end - start:
                        break
                    want *= 8
                current += found
            elif wanted:
                current += vector_rows.current(conn, self.encoder.hash, sorted(wanted), keep)
        finally:
            conn.execute("COMMIT")
        if not current:
            return [], {}
        block = np.frombuffer(b"".join(row.vector for row in current), dtype=np.float32)
        sims = block.reshape(len(current), -1) @ q
        scored = {row.memory_id: float(s) for row, s in zip(current, sims, strict=True)}
        extra = {i: round(scored[i], 6) for i in also if i in scored}
        ranked = sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return [Nearest(memory_id, round(sim, 6)) for memory_id, sim in ranked], extra

    # -- writing ----------------------------------------------------------------

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
                "SELECT memory_id, project, vector FROM memory_vectors WHERE model = ?"
                " ORDER BY project, memory_id", (self.encoder.hash,)).fetchall()
        vectors = np.empty((len(rows), self.encoder.dims), dtype=np.float32)
        ids = np.empty((len(rows), 1), dtype=np.int64)
        projects: dict[str, list[int]] = {}
        for i, (memory_id, project, blob) in enumerate(rows):
            vectors[i] = np.frombuffer(blob, dtype=np.float32)
            ids[i, 0] = memory_id
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
