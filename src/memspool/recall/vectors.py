"""Memory vectors: embedding the queued memories, and the nearest ones to a query.

The store holds every vector (``memory_vectors``, the truth). Reading 100 MB
of rows per query would make a CLI search slow, so a reader first looks in a
matrix set: a folder ``vectors/<model>-<generation>/`` holding
``matrix.npy`` (float32, one row per memory, rows grouped by project),
``head.npy`` (its first ``HEAD_DIMS`` columns alone), ``ids.npy`` (memory
id and seq per row) and ``meta.json`` (the store it came from, the highest
seq it covers, the projects' row ranges). A set is built in a hidden folder
and published by renaming that folder, so it is complete and never changes;
the newest generation wins and older ones are removed.

A query scores the set (memory-mapped: a warm process keeps it in memory,
a new one reads only the pages it touches) to pick candidates, adds the rows
stored after the set, and scores every candidate again with the vector the
store holds now: a memory gone since drops out, one changed since is scored
by its new vector. The set only makes the answer fast; the store makes it.
A set from another store (one moved aside, or restored from a backup) is
never used: ``meta.json`` names the store's ``vectors_store`` id, and a set
covering seqs the store has not reached is ignored.

Past ``TWO_STAGE_ROWS`` rows the head is scored first and the whole rows of
the best ``HEAD_POOL`` only: the model's dimensions come out of a PCA,
largest variance first, so the head ranks almost as the whole does at a
quarter of the memory read (``bench/recall_latency.py`` prints how often the
two agree).

Whoever embeds writes a new set once more than ``REWRITE_AFTER_ROWS`` rows
came after the last one. A forget removes every set at once (and writes a
new one when the model is at hand), so a forgotten memory's vector does not
stay on disk.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from memspool.config import DIR_MODE, FILE_MODE, ensure_private_dir
from memspool.errors import HomeError
from memspool.recall.embed import Encoder
from memspool.store import get_state, set_state, transaction
from memspool.store import vectors as vector_rows

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["VECTORS_DIR", "Nearest", "VectorIndex", "embed_pending", "remove_sets"]

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
    vectors: NDArray[np.float32]
    head: NDArray[np.float32]
    ids: NDArray[np.int64]
    projects: dict[str, tuple[int, int]]


def _sets(folder: Path, prefix: str = "") -> list[str]:
    """The published sets in ``folder`` (of the model ``prefix``), oldest first."""
    if folder.is_symlink():
        return []  # never followed: a planted link must not steer reads or deletes
    try:
        names = [e.name for e in os.scandir(folder)
                 if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")]
    except OSError:
        return []
    return sorted((n for n in names if n.startswith(prefix)),
                  key=lambda n: n.rpartition("-")[2])


def remove_sets(home: Path) -> int:
    """Remove every matrix set under ``home`` (any model); how many. Needs no model."""
    folder = home / VECTORS_DIR
    removed = 0
    for name in _sets(folder):
        shutil.rmtree(folder / name, ignore_errors=True)
        removed += 1
    return removed


class VectorIndex:
    """The nearest memories to a query vector, for one home and one model."""

    def __init__(self, home: Path, encoder: Encoder) -> None:
        self.folder = home / VECTORS_DIR
        self.encoder = encoder
        self._matrix: _Matrix | None = None

    # -- reading ----------------------------------------------------------------

    def _latest(self, conn: sqlite3.Connection) -> _Matrix | None:
        """The newest set of this model made from this store, or ``None``."""
        import numpy as np

        names = _sets(self.folder, f"{self.encoder.hash}-")
        if not names:
            return None
        name = names[-1]
        found = self._matrix
        if found is None or found.name != name:
            where = self.folder / name
            try:
                meta = json.loads((where / "meta.json").read_text())
                ids = np.load(where / "ids.npy")
                found = _Matrix(
                    name, int(meta["seq"]), str(meta["store"]),
                    np.load(where / "matrix.npy", mmap_mode="r"),
                    np.load(where / "head.npy", mmap_mode="r"), ids[:, 0],
                    {str(k): (int(v[0]), int(v[1])) for k, v in meta["projects"].items()})
            except (OSError, ValueError, KeyError, TypeError, IndexError):
                return None  # removed meanwhile, or damaged: the store answers alone
            self._matrix = found
        reached = conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'memory_vectors'").fetchone()
        if found.store != get_state(conn, STORE_KEY) or found.seq > int(reached[0] if reached
                                                                           else 0):
            return None
        return found

    def nearest(self, conn: sqlite3.Connection, query: str, *, limit: int,
                project: str | None = None) -> list[Nearest]:
        """The ``limit`` memories (of ``project``) whose vectors are nearest to ``query``'s."""
        import numpy as np

        q = self.encoder.encode([query])[0]
        if not q.any():
            return []
        conn.execute("BEGIN")  # one snapshot of the store for the whole query
        try:
            matrix = self._latest(conn)
            candidates: set[int] = set()
            if matrix is not None:
                start, end = ((0, len(matrix.ids)) if project is None
                              else matrix.projects.get(project, (0, 0)))
                if end > start:
                    rows = _best_rows(matrix, start, end, q, 2 * limit + 20)
                    candidates.update(int(matrix.ids[i]) for i in rows)
            current = vector_rows.delta(conn, self.encoder.hash,
                                        matrix.seq if matrix is not None else 0)
            current += vector_rows.current(conn, self.encoder.hash, sorted(candidates))
        finally:
            conn.execute("COMMIT")
        if project is not None:
            current = [row for row in current if row.project == project]
        if not current:
            return []
        block = np.frombuffer(b"".join(row.vector for row in current), dtype=np.float32)
        sims = block.reshape(len(current), -1) @ q
        scored = {row.memory_id: float(s) for row, s in zip(current, sims, strict=True)}
        best = sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return [Nearest(memory_id, round(sim, 6)) for memory_id, sim in best]

    # -- writing ----------------------------------------------------------------

    def refresh(self, conn: sqlite3.Connection, *, force: bool = False) -> bool:
        """Write a new set when enough rows came after the newest (or ``force``).

        True when one was written.
        """
        matrix = self._latest(conn)
        covered = matrix.seq if matrix is not None else 0
        after = int(conn.execute("SELECT count(*) FROM memory_vectors WHERE seq > ? AND model = ?",
                                 (covered, self.encoder.hash)).fetchone()[0])
        if not force and after <= REWRITE_AFTER_ROWS:
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
        generation = f"{time.time_ns():020d}{secrets.token_hex(4)}"
        scratch = self.folder / f".{self.encoder.hash}-{generation}"
        scratch.mkdir(mode=DIR_MODE)
        try:
            _save(scratch / "matrix.npy", vectors)
            _save(scratch / "head.npy", np.ascontiguousarray(vectors[:, :HEAD_DIMS]))
            _save(scratch / "ids.npy", ids)
            _write_private(scratch / "meta.json", json.dumps({
                "store": store, "seq": top, "rows": len(rows), "dims": self.encoder.dims,
                "projects": projects}).encode())
            scratch.rename(self.folder / scratch.name[1:])
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        self._matrix = None
        # The new set is the newest: every older one, of any model, goes.
        for name in _sets(self.folder):
            if name != scratch.name[1:] and name.rpartition("-")[2] < generation:
                shutil.rmtree(self.folder / name, ignore_errors=True)


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
