"""The major pass follows the delta: 100 new memories among 1,000 and among 100,000.

    python bench/maintain_cost.py [--small 1000] [--large 100000] [--new 100]

Both stores get the same generated background memories (a vocabulary of
engineering words, so terms recur as in real notes), one maintenance pass
over them, then the same 100 new memories through the capture verb; only
the second pass is timed. Printed: each pass's time and memories examined,
and the ratio large/small.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from memspool.archivist import CaptureOptions, Origin, capture, maintain
from memspool.config import load_config
from memspool.distill.similarity import Profiles, index_terms
from memspool.store import connect, transaction
from memspool.store import memories as rows

WORDS = (
    "cache", "pool", "worker", "queue", "retry", "timeout", "index", "migration", "schema",
    "deploy", "rollback", "token", "session", "cookie", "header", "proxy", "socket", "thread",
    "lock", "mutex", "channel", "buffer", "stream", "batch", "shard", "replica", "primary",
    "backup", "cron", "webhook", "payload", "parser", "encoder", "decoder", "schema",
    "fixture", "snapshot", "container", "image", "layer", "volume", "mount", "secret",
    "config", "flag", "feature", "release", "branch", "merge", "rebase", "commit", "hook",
    "linter", "formatter", "compiler", "bundler", "runtime",
)


def background(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    notes = []
    for i in range(n):
        words = rng.sample(WORDS, 6)
        notes.append(f"Note {i}: the {words[0]} {words[1]} uses {words[2]} for {words[3]} "
                     f"and {words[4]} {words[5]} v{rng.randint(1, 400)}.")
    return notes


def fresh(n: int) -> list[str]:
    return [f"Pitfall {i}: `svc-{i}` drops its {WORDS[i % len(WORDS)]} when the "
            f"{WORDS[(i * 7) % len(WORDS)]} restarts; set RETRY_{i}=3." for i in range(n)]


def run(existing: int, new: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="memspool-bench-") as folder:
        config = load_config(Path(folder), env={})
        conn = connect(config)
        profiles = Profiles()
        now = time.time()
        with transaction(conn):
            for i, text in enumerate(background(existing, 7)):
                rows.insert(conn, project="bench", key=f"bg-{i}", type="takeaway",
                            summary=text, body=text, terms=index_terms(text, profiles=profiles),
                            at=now - 3600)
        maintain(conn, config, now=now - 1800, profiles=profiles)
        for text in fresh(new):
            capture(text, config=config, conn=conn, origin=Origin(project="bench", session="s"),
                    options=CaptureOptions(now=now - 60))
        started = time.perf_counter()
        report = maintain(conn, config, now=now, profiles=profiles)
        seconds = time.perf_counter() - started
        conn.close()
    return seconds, report.examined


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=100)
    args = parser.parse_args(argv)
    small, small_examined = run(args.small, args.new)
    large, large_examined = run(args.large, args.new)
    print(f"{'existing':>9} {'new':>5} {'examined':>8} {'pass (ms)':>10}")
    print(f"{args.small:>9} {args.new:>5} {small_examined:>8} {small * 1000:>10.1f}")
    print(f"{args.large:>9} {args.new:>5} {large_examined:>8} {large * 1000:>10.1f}")
    print(f"ratio large/small: {large / small:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
