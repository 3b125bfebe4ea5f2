"""Importing memories: 100,000 JSONL lines into a new store, then the same file again.

    python bench/import_speed.py [--lines 100000]

Prints lines per second for the first import (every line new) and the
second (every line unchanged, which must add nothing), through the same code
as `memspool memories import`, one transaction per batch.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from memspool.service import Service


def lines(n: int) -> list[bytes]:
    return [json.dumps({
        "id": i, "project": f"p{i % 20}", "type": "pitfall", "key": f"generated-{i}",
        "summary": f"Pitfall {i}: service s{i % 97} drops requests when pool {i % 13} drains",
        "body": f"Pitfall {i}: service s{i % 97} drops requests when pool {i % 13} drains; "
                f"set MAX_IDLE_{i % 31} above the worker count.",
        "layer": "canonical" if i % 3 else "buffer", "confidence": 0.75, "importance": 0.6,
        "sessions": 2, "created_at": 1.7e9 + i, "updated_at": 1.7e9 + i, "superseded_by": None,
        "provenance": [{"session": f"s{i % 50}", "source": "transcript", "slice": i,
                        "action": "created", "at": 1.7e9 + i}],
    }).encode() + b"\n" for i in range(n)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    args = parser.parse_args(argv)
    data = lines(args.lines)
    with tempfile.TemporaryDirectory(prefix="memspool-bench-") as folder, \
            Service(Path(folder), env={}) as service:
        started = time.perf_counter()
        first = service.import_lines(iter(data))
        first_s = time.perf_counter() - started
        started = time.perf_counter()
        second = service.import_lines(iter(data))
        second_s = time.perf_counter() - started
    print(f"{'import':<8} {'lines':>8} {'created':>8} {'unchanged':>9} {'seconds':>8} "
          f"{'lines/s':>8}")
    for name, report, seconds in (("first", first, first_s), ("again", second, second_s)):
        print(f"{name:<8} {report.lines:>8} {report.created:>8} {report.unchanged:>9} "
              f"{seconds:>8.1f} {report.lines / seconds:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
