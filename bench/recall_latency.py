"""Recall latency at 100,000 memories: search in process and through the CLI, and the hooks.

    python bench/recall_latency.py [--memories 100000] [--runs 50]

Builds a store of generated memories whose words follow a Zipf law over the
vocabulary of the labelled notes and messages in tests/data (as words do in
real notes: a few very common, most rare), with their context blocks
rendered, then times, side by side in one run:

- search in a warm process, lexical and hybrid (when the semantic extra is
  installed), for short queries (``QUERIES``), for 15-word questions
  (``QUESTIONS``), and for short queries never asked before (two words drawn
  from the vocabulary's middle each time, so no memory they find was scored
  before); hybrid twice: as shipped (the vectors probed on a worker thread
  while the words are ranked) and "in turn" (the probe run first on the
  caller's thread), to show what the overlap gains;
- ``memspool search`` as a new process (both ways), and the CLI's own
  start-up apart (``memspool --version``);
- the SessionStart hook, and the UserPromptSubmit hook with a prompt of the
  most common words and one of rare words, exactly as installed (``sh -c``,
  payload on stdin);
- a bare ``python -I -S -c pass`` for scale.

Prints p50 and p95 in milliseconds and each one's ratio to the bare start,
and how long ``memspool maintain --reindex`` took to embed every memory.
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
from memspool.recall.vectors import VectorIndex, ready
from memspool.service import Service

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
QUERIES = ("connection pool exhausted", "SparklineChart", "why were refunds counted twice",
           "get_user_by_id cache", "helm upgrade resets replicas", "timeout")
#: Questions of 15 words, as a user or an agent asks them.
QUESTIONS = (
    "why does the api service drop requests when the connection pool drains during a deploy",
    "what did we decide about caching the user profile endpoint and how long it should live",
    "how do I run the flaky integration tests locally without the docker compose database up",
    "which config flag turned off the background job retries after the queue filled up last week",
)
#: Prompts for the UserPromptSubmit hook: the vocabulary's most common words, and rare ones.
COMMON_PROMPT = ("only one every run new build never per app tests time without first cache "
                 "test runs key instead api check")
RARE_PROMPT = ("why does grafana throttled backlog define privileges when selectorLabels "
               "concurrently applying ProfileViewModel")


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


class _InTurn(VectorIndex):
    """The index as shipped but for its probe, run on the caller's thread before the
    words are ranked: the two halves of a hybrid search one after the other."""

    def probe(self, conn: Any, query: str, *, limit: int, project: str | None = None) -> Any:
        return ready(self._probe(query, self._latest(conn), limit, project))


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


def _hooks(home: Path, folder: Path, env: dict[str, str], runs: int,
           ) -> tuple[list[float], dict[str, list[float]]]:
    """The SessionStart hook's times, and the UserPromptSubmit hook's per prompt."""
    project_dir = folder / "p3"
    project_dir.mkdir()
    start_payload = json.dumps({"session_id": "s", "cwd": str(project_dir),
                                "hook_event_name": "SessionStart",
                                "source": "startup"}).encode()
    context = _timed(["sh", "-c", hook_command(home, script=CONTEXT_SCRIPT)],
                     start_payload, env, runs)
    prompts = {}
    for name, text in (("common", COMMON_PROMPT), ("rare", RARE_PROMPT)):
        samples = []
        for run in range(runs):
            # A new session each run: the hook never gives a memory twice in one.
            prompt = json.dumps({"session_id": f"bench-{name}-{run}",
                                 "cwd": str(project_dir),
                                 "hook_event_name": "UserPromptSubmit",
                                 "prompt": text}).encode()
            samples += _timed(["sh", "-c", hook_command(home, script=RECALL_SCRIPT)],
                              prompt, env, 1)
        prompts[name] = samples
    return context, prompts


def _warm(conn: Any, vectors: Any, in_turn: Any, runs: int) -> dict[str, list[float]]:
    """Milliseconds of each in-process search, by way and kind of query."""
    timed: dict[str, list[float]] = {}
    rng = random.Random(7)
    middle = [w for w in vocabulary()[500:5000] if w.isalpha()]
    for run in range(runs):
        fresh = [f"{rng.choice(middle)} {rng.choice(middle)}" for _ in QUERIES]
        # The two hybrid ways take turns going first: the second finds the
        # pages the first read in the caches.
        ways = [("lexical", None), ("hybrid", vectors), ("hybrid in turn", in_turn)]
        if run % 2:
            ways[1:] = ways[:0:-1]
        for label, queries in (("short", QUERIES), ("question", QUESTIONS), ("fresh", fresh)):
            for way, index in ways:
                if way != "lexical" and index is None:
                    continue
                for query in queries:
                    started = time.perf_counter()
                    search(conn, query, limit=10, vectors=index)
                    timed.setdefault(f"{way} {label}", []).append(
                        (time.perf_counter() - started) * 1000)
    return timed


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
            in_turn = None
            if vectors is not None:
                reindex_secs = service.reindex().secs
                in_turn = _InTurn(home, vectors.encoder)
            timed = _warm(conn, vectors, in_turn, args.runs)
            agreement = _two_stage_agreement(conn, vectors) if vectors else None
        env = {**os.environ, "MEMSPOOL_HOME": str(home)}
        cli_argv = [sys.executable, "-m", "memspool", "search", QUERIES[0], "--limit", "10"]
        few = max(5, args.runs // 5)
        cli = _timed(cli_argv, b"", {**env, "MEMSPOOL_SEMANTIC": "off"}, few)
        cli_hybrid = _timed(cli_argv, b"", env, few) if vectors else []
        cli_start = _timed([sys.executable, "-m", "memspool", "--version"], b"", env, few)
        context, prompts = _hooks(home, Path(folder), env, args.runs)
        bare = _timed([sys.executable, "-I", "-S", "-c", "pass"], b"", env, args.runs)
    base50, _ = _percentiles(bare)
    print(f"{args.memories} memories")
    print(f"{'what':<40} {'p50 ms':>8} {'p95 ms':>8} {'p50 / bare':>10}")
    rows = [(f"search, warm, {key}", timed.get(key, [])) for key in (
        "lexical short", "lexical question", "lexical fresh",
        "hybrid short", "hybrid question", "hybrid fresh",
        "hybrid in turn short", "hybrid in turn question", "hybrid in turn fresh")]
    rows += [("memspool search (new process)", cli), ("  the same, hybrid", cli_hybrid),
             ("memspool --version (CLI start-up)", cli_start),
             ("SessionStart hook (sh -c)", context),
             ("UserPromptSubmit hook, common words", prompts["common"]),
             ("UserPromptSubmit hook, rare words", prompts["rare"]),
             ("bare python -I -S -c pass", bare)]
    for name, samples in rows:
        if not samples:
            print(f"{name:<40} (semantic recall is off)")
            continue
        p50, p95 = _percentiles(samples)
        print(f"{name:<40} {p50:>8.2f} {p95:>8.2f} {p50 / base50:>10.2f}")
    if agreement is not None:
        print(f"two-stage vector search returns {agreement:.1%} of the exact top 10")
    if reindex_secs is not None:
        print(f"reindex: {args.memories} memories embedded in {reindex_secs:.1f} s "
              f"({args.memories / reindex_secs:,.0f} memories/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
