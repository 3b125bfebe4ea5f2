"""Memory vectors: embedding the queued memories, and the nearest ones to a query.

The store holds every vector (``memory_vectors``, the truth). Reading 100 MB
of rows per query would make a CLI search slow, so a reader uses a matrix
file set, immutable, named for the model and the highest vector seq it
covers: ``vectors/<model>-<seq>.npy`` (float32, one row per memory, rows
grouped by project), ``.ids.npy`` (memory id and seq per row), ``.head.npy``
(the first ``HEAD_DIMS`` columns alone) and ``.json`` (the projects' row
ranges; written last, so a set without it is incomplete and ignored).

A query scores the matrix (memory-mapped, so a warm process keeps it in
memory and a cold one reads only pages), adds the few rows stored after
``<seq>``, and drops any matrix row whose memory has since lost or changed
its vector: the answer is always the store's, the file only makes it fast.
Past ``TWO_STAGE_ROWS`` rows it scores the head first and the whole rows of
the best ``HEAD_POOL`` only: the model's dimensions come out of a PCA,
largest variance first, so the head ranks almost as the whole does at a
quarter of the memory read (``bench/recall_latency.py`` prints how often
the two agree).

Whoever embeds rewrites the files when more than ``REWRITE_AFTER_ROWS``
rows came after them; a forget rewrites them at once, so a forgotten
memory's vector does not linger on disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from memspool.config import FILE_MODE, ensure_private_dir
from memspool.recall.embed import Encoder
from memspool.store import transaction
from memspool.store import vectors as vector_rows

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["VECTORS_DIR", "Nearest", "VectorIndex", "embed_pending"]

VECTORS_DIR: Final = "vectors"
#: Rows stored after the matrix file past which whoever embeds rewrites it: a query
#: reads those rows from the store, and a few hundred take well under a millisecond.
REWRITE_AFTER_ROWS: Final = 256
#: Leading dimensions scored first, past this many rows; candidates kept for the full score.
HEAD_DIMS: Final = 64
TWO_STAGE_ROWS: Final = 20_000
HEAD_POOL: Final = 1000


class Nearest(NamedTuple):
    memory_id: int
    similarity: float


def embed_pending(conn: sqlite3.Connection, encoder: Encoder, *,
                  budget_secs: float | None = None) -> int:
    """Embed queued memories, a batch per transaction; how many were embedded.

    A memory whose text changes while its batch is being embedded keeps its
    place in the queue (its vector is made again from the new text).
    """
    deadline = None if budget_secs is None else time.monotonic() + budget_secs
    done = 0
    while deadline is None or time.monotonic() < deadline:
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
    seq: int
    vectors: NDArray[np.float32]
    head: NDArray[np.float32]
    ids: NDArray[np.int64]
    seqs: NDArray[np.int64]
    projects: dict[str, tuple[int, int]]


class VectorIndex:
    """The nearest memories to a query vector, for one home and one model."""

    def __init__(self, home: Path, encoder: Encoder) -> None:
        self.folder = home / VECTORS_DIR
        self.encoder = encoder
        self._matrix: _Matrix | None = None

    # -- reading ----------------------------------------------------------------

    def _latest(self) -> _Matrix | None:
        import numpy as np

        prefix = f"{self.encoder.hash}-"
        best = -1
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.folder):
                name = entry.name
                if name.startswith(prefix) and name.endswith(".json"):
                    with contextlib.suppress(ValueError):
                        best = max(best, int(name[len(prefix):-5]))
        if best < 0:
            return None
        if self._matrix is not None and self._matrix.seq == best:
            return self._matrix
        stem = self.folder / f"{prefix}{best}"
        try:
            meta = json.loads(stem.with_suffix(".json").read_text())
            vectors = np.load(f"{stem}.npy", mmap_mode="r")
            head = np.load(f"{stem}.head.npy", mmap_mode="r")
            ids = np.load(f"{stem}.ids.npy")
        except (OSError, ValueError):
            return None  # being replaced, or damaged: the store answers alone
        projects = {str(k): (int(v[0]), int(v[1])) for k, v in meta["projects"].items()}
        self._matrix = _Matrix(best, vectors, head, ids[:, 0], ids[:, 1], projects)
        return self._matrix

    def nearest(self, conn: sqlite3.Connection, query: str, *, limit: int,
                project: str | None = None) -> list[Nearest]:
        """The ``limit`` memories (of ``project``) whose vectors are nearest to ``query``'s."""
        import numpy as np

        q = self.encoder.encode([query])[0]
        if not q.any():
            return []
        matrix = self._latest()
        covered = matrix.seq if matrix is not None else 0
        fresh = vector_rows.delta(conn, self.encoder.hash, covered)
        if project is not None:
            fresh = [row for row in fresh if row.project == project]
        scored: dict[int, float] = {}
        if fresh:
            block = np.frombuffer(b"".join(row.vector for row in fresh), dtype=np.float32)
            sims = block.reshape(len(fresh), -1) @ q
            scored.update({row.memory_id: float(s) for row, s in zip(fresh, sims, strict=True)})
        if matrix is not None:
            start, end = ((0, len(matrix.ids)) if project is None
                          else matrix.projects.get(project, (0, 0)))
            if end > start:
                want = 2 * limit + 20
                rows, near = _scores(matrix, start, end, q, want)
                found = {int(matrix.ids[i]): (int(matrix.seqs[i]), float(s))
                         for i, s in zip(rows, near, strict=True)}
                current = vector_rows.seqs(conn, list(found))
                for memory_id, (seq, sim) in found.items():
                    # A row whose memory is gone, or has a newer vector, is not the store's.
                    if current.get(memory_id) == seq and memory_id not in scored:
                        scored[memory_id] = sim
        best = sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return [Nearest(memory_id, round(sim, 6)) for memory_id, sim in best]

    # -- writing ----------------------------------------------------------------

    def refresh(self, conn: sqlite3.Connection, *, force: bool = False) -> bool:
        """Rewrite the matrix file when enough rows came after it (or ``force``).

        True when it was rewritten.
        """
        matrix = self._latest()
        covered = matrix.seq if matrix is not None else 0
        after = int(conn.execute("SELECT count(*) FROM memory_vectors WHERE seq > ? AND model = ?",
                                 (covered, self.encoder.hash)).fetchone()[0])
        if not force and after <= REWRITE_AFTER_ROWS:
            return False
        self._write(conn)
        return True

    def _write(self, conn: sqlite3.Connection) -> None:
        import numpy as np

        dims = self.encoder.dims
        with transaction(conn):  # one consistent view of the rows
            top = vector_rows.top_seq(conn)
            rows = conn.execute(
                "SELECT memory_id, seq, project, vector FROM memory_vectors WHERE model = ?"
                " ORDER BY project, memory_id", (self.encoder.hash,)).fetchall()
        vectors = np.empty((len(rows), dims), dtype=np.float32)
        ids = np.empty((len(rows), 2), dtype=np.int64)
        projects: dict[str, list[int]] = {}
        for i, (memory_id, seq, project, blob) in enumerate(rows):
            vectors[i] = np.frombuffer(blob, dtype=np.float32)
            ids[i] = (memory_id, seq)
            projects.setdefault(project, [i, i])[1] = i + 1
        ensure_private_dir(self.folder)
        stem = self.folder / f"{self.encoder.hash}-{top}"
        _save(Path(f"{stem}.npy"), vectors)
        _save(Path(f"{stem}.head.npy"), np.ascontiguousarray(vectors[:, :HEAD_DIMS]))
        _save(Path(f"{stem}.ids.npy"), ids)
        _write_private(stem.with_suffix(".json"),
                       json.dumps({"seq": top, "rows": len(rows), "dims": dims,
                                   "projects": projects}).encode())
        self._matrix = None
        for old in self.folder.iterdir():
            # Older sets and other models' go; what another writer is making
            # (".tmp"), or has made newer, stays.
            model, _, seq = old.name.partition(".")[0].rpartition("-")
            if old.name.startswith(".") or (model == self.encoder.hash and seq.isdigit()
                                             and int(seq) >= top):
                continue
            with contextlib.suppress(OSError):
                old.unlink()


def _scores(matrix: _Matrix, start: int, end: int, q: NDArray[np.float32],
            want: int) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """The best ``want`` rows of ``matrix[start:end]`` for ``q``, and their similarities."""
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
        best = np.argpartition(-sims, want - 1)[:want]
        return rows[best], sims[best]
    return rows, sims


def _save(path: Path, array: NDArray[np.generic]) -> None:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    _write_private(path, buffer.getvalue())


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, owner-only."""
    scratch = path.with_name(f".{path.name}.tmp")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    scratch.replace(path)
