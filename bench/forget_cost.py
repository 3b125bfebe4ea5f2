"""What forgetting costs once it leaves no trace, next to a bare delete, at a store's size.

A forget now merges the full-text index into one segment (FTS5 keeps a deleted
memory's terms in its old segments until then) and checkpoints and truncates the
WAL. Both grow with the store. This builds a store of ``--memories`` memories (by
import, semantic recall off), then times, side by side:

* ``Service.forget()`` of one memory, whole (delete, tombstone, index merge, context
  block, WAL truncate);
* the parts: the index merge (``'optimize'``) and ``wal_checkpoint(TRUNCATE)``;
* a bare ``DELETE FROM memories WHERE id = ?`` in a transaction, as forget did before;
* ``PRAGMA quick_check``, which ``memspool status`` now runs as doctor does.

Usage::

    .venv-test/bin/python bench/forget_cost.py [--memories 100000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _machine import print_header


def _lines(count: int) -> list[bytes]:
    return [json.dumps({
        "project": f"p{n % 7}", "key": f"k{n}", "type": "takeaway",
        "summary": f"Worker pool {n} drains under load",
        "body": f"Worker pool {n} drains under load after {n * 7} requests; the fix raised "
                f"the queue bound to {n % 97} and retried with backoff {n % 13} times.",
    }).encode() for n in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memspool-bench-forget-") as scratch:
        return _run(args, Path(scratch) / "home")


def _run(args: argparse.Namespace, home: Path) -> int:
    os.environ["MEMSPOOL_HOME"] = str(home)
    os.environ["MEMSPOOL_SEMANTIC"] = "off"
    from memspool.service import Service
    from memspool.store import damaged, erase, transaction

    print_header("memspool forget cost")
    with Service(home) as service:
        started = time.perf_counter()
        service.import_lines(_lines(args.memories))
        built = time.perf_counter() - started
        conn = service.conn
        size = (home / "memspool.db").stat().st_size / 1e6
        print(f"  store:    {args.memories:,} memories, {size:.1f} MB (built in {built:.0f} s)")
        ids = [row[0] for row in conn.execute(
            "SELECT id FROM memories ORDER BY random() LIMIT ?", (3 * args.repeats,))]
        timings: dict[str, list[float]] = {"forget": [], "merge": [], "checkpoint": [],
                                           "delete": [], "quick_check": []}
        for n in range(args.repeats):
            started = time.perf_counter()
            service.forget(ids[3 * n])
            timings["forget"].append(time.perf_counter() - started)
            with transaction(conn):
                conn.execute("DELETE FROM memories WHERE id = ?", (ids[3 * n + 1],))
                started = time.perf_counter()
                erase.merge_search_index(conn)
                timings["merge"].append(time.perf_counter() - started)
            started = time.perf_counter()
            erase.clear_wal(conn)
            timings["checkpoint"].append(time.perf_counter() - started)
            started = time.perf_counter()
            with transaction(conn):
                conn.execute("DELETE FROM memories WHERE id = ?", (ids[3 * n + 2],))
            timings["delete"].append(time.perf_counter() - started)
            started = time.perf_counter()
            damaged(home / "memspool.db")
            timings["quick_check"].append(time.perf_counter() - started)
    bare = statistics.median(timings["delete"])
    print(f"\n  median of {args.repeats}, ms        ratio to a bare delete")
    for name, values in timings.items():
        median = statistics.median(values)
        print(f"  {name:<12} {median * 1000:>10.1f}   {median / bare:>8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
