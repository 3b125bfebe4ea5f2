"""Recall latency at 100,000 memories: search in process and through the CLI, and the hooks.

    python bench/recall_latency.py [--memories 100000] [--runs 50]

Builds a store of generated memories whose words follow a Zipf law over the
vocabulary of the labelled notes and messages in tests/data (as words do in
real notes: a few very common, most rare), with their context blocks
rendered, then times, side
by side in one run: search in a warm process (lexical, and hybrid when the
semantic extra is installed), `memspool search` as a new process (both
ways), the SessionStart and UserPromptSubmit hooks exactly as installed
(`sh -c`, payload on stdin), and a bare `python -I -S -c pass` for scale.
Prints p50 and p95 in milliseconds and each hook's ratio to the bare start,
and how long `memspool maintain --reindex` took to embed every memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memspool.hooks import CONTEXT_SCRIPT, RECALL_SCRIPT
from memspool.install import hook_command
from memspool.recall import search
from memspool.service import Service

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
QUERIES = ("connection pool exhausted", "SparklineChart", "why were refunds counted twice",
           "get_user_by_id cache", "helm upgrade resets replicas", "timeout")


def vocabulary() -> list[str]:
    """Words of the labelled data, most frequent first."""
    counts: dict[str, int] = {}
    for name in ("recall_notes.jsonl", "archivist_messages.jsonl"):
        for line in (DATA / name).read_text().splitlines():
            row = json.loads(line)
            for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", row.get("body") or row["text"]):
                counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda w: -counts[w])


def lines(n: int, seed: int = 5) -> list[bytes]:
    """``n`` memories as export lines; word ranks drawn from a Zipf law."""
    words = vocabulary()
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    out = []
    for i in range(n):
        picked = rng.choices(words, weights, k=18)
        summary = " ".join(picked[:8]).capitalize()
        body = f"{summary}. {' '.join(picked[8:])}."
        out.append(json.dumps({"project": f"p{i % 40}", "key": f"m{i}", "type": "takeaway",
                               "summary": summary, "body": body}).encode())
    return out


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def _timed(argv: list[str], stdin: bytes, env: dict[str, str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, input=stdin, env=env, capture_output=True, check=True)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _two_stage_agreement(conn: Any, vectors: Any) -> float:
    """Share of the exact top 10 (every row, every dimension) that the two-stage search
    returns, over the bench queries and as many generated ones."""
    import numpy as np

    matrix = vectors._latest(conn)
    queries = [*QUERIES, *(" ".join(random.Random(i).sample(vocabulary()[:3000], 4))
                           for i in range(50))]
    kept = total = 0
    for query in queries:
        q = vectors.encoder.encode([query])[0]
        exact = {int(matrix.ids[i]) for i in np.argsort(-(matrix.vectors @ q))[:10]}
        found = {n.memory_id for n in vectors.nearest(conn, query, limit=10)}
        kept += len(exact & found)
        total += len(exact)
    return kept / total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memspool-bench-") as folder:
        home = Path(folder) / "home"
        with Service(home, env={"MEMSPOOL_SEMANTIC": "off"}) as service:
            service.import_lines(lines(args.memories))
        reindex_secs = None
        with Service(home, env={}) as service:
            conn = service.conn
            vectors = service.vectors()
            if vectors is not None:
                reindex_secs = service.reindex()["secs"]
            in_process: list[float] = []
            hybrid: list[float] = []
            for _ in range(args.runs):
                for query in QUERIES:
                    for index, samples in ((None, in_process), (vectors, hybrid)):
                        if samples is hybrid and vectors is None:
                            continue
                        started = time.perf_counter()
                        search(conn, query, limit=10, vectors=index)
                        samples.append((time.perf_counter() - started) * 1000)
            agreement = _two_stage_agreement(conn, vectors) if vectors else None
        env = {**os.environ, "MEMSPOOL_HOME": str(home)}
        cli_argv = [sys.executable, "-m", "memspool", "search", QUERIES[0], "--limit", "10"]
        cli = _timed(cli_argv, b"", {**env, "MEMSPOOL_SEMANTIC": "off"},
                     max(5, args.runs // 5))
        cli_hybrid = _timed(cli_argv, b"", env, max(5, args.runs // 5)) if vectors else []
        project_dir = Path(folder) / "p3"
        project_dir.mkdir()
        start_payload = json.dumps({"session_id": "s", "cwd": str(project_dir),
                                    "hook_event_name": "SessionStart",
                                    "source": "startup"}).encode()
        context = _timed(["sh", "-c", hook_command(home, script=CONTEXT_SCRIPT)],
                         start_payload, env, args.runs)
        prompt = json.dumps({"session_id": "bench", "cwd": str(project_dir),
                             "hook_event_name": "UserPromptSubmit",
                             "prompt": "why does service s42 drop requests when pool 3 "
                                       "drains"}).encode()
        recall = _timed(["sh", "-c", hook_command(home, script=RECALL_SCRIPT)],
                        prompt, env, args.runs)
        bare = _timed([sys.executable, "-I", "-S", "-c", "pass"], b"", env, args.runs)
    base50, _ = _percentiles(bare)
    print(f"{args.memories} memories")
    print(f"{'what':<34} {'p50 ms':>8} {'p95 ms':>8} {'p50 / bare':>10}")
    for name, samples in (("search, warm process", in_process),
                          ("hybrid search, warm process", hybrid),
                          ("memspool search (new process)", cli),
                          ("  the same, hybrid", cli_hybrid),
                          ("SessionStart hook (sh -c)", context),
                          ("UserPromptSubmit hook (sh -c)", recall),
                          ("bare python -I -S -c pass", bare)):
        if not samples:
            print(f"{name:<34} (semantic recall is off)")
            continue
        p50, p95 = _percentiles(samples)
        print(f"{name:<34} {p50:>8.2f} {p95:>8.2f} {p50 / base50:>10.2f}")
    if agreement is not None:
        print(f"two-stage vector search returns {agreement:.1%} of the exact top 10")
    if reindex_secs is not None:
        print(f"reindex: {args.memories} memories embedded in {reindex_secs:.1f} s "
              f"({args.memories / reindex_secs:,.0f} memories/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
