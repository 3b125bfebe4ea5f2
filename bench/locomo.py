"""Search quality on LoCoMo: every question asked of its conversation's memories.

    python bench/locomo.py PATH [--unit turn|session|both] [--show N]

PATH is LoCoMo's JSON (``locomo10.json``, or the half of it kept beside the
project in ``../shared/benchmarks/locomo/``), or the folder holding it. The
data is read where it is and never copied into the repository (its licence,
CC BY-NC 4.0, allows evaluation only): the memories are written to a JSONL
file in a temporary folder and go in through the public path, ``memspool
memories import`` and then ``memspool maintain --reindex``, into a home in
that folder.

Each conversation is one project. With ``--unit turn`` each dialog turn is
one memory (``"Speaker: text"``, and ``[photo: caption]`` for an image);
with ``--unit session`` each session is one memory (its turns, one a line).
Every question is then asked of its conversation's project, and each system
is scored on the evidence turns (or their sessions): recall@5, recall@10
(the share of a question's evidence in the first 5 or 10) and NDCG@10, by
category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5,
adversarial, apart: its questions ask about what was never said), for

- ``lexical``: memspool's search with semantic recall off (``MEMSPOOL_SEMANTIC=0``);
- ``hybrid``: memspool's search with the semantic extra (the default when installed);
- ``vector``: the shipped static model's nearest memories alone;
- ``bm25``: Okapi BM25 (k1 1.2, b 0.75) over lowercase words, no stemming;
- ``fts5``: plain FTS5, each question word quoted, OR-ed, ranked by ``bm25``.

Conversations are split in two, and the split is printed beside every
figure: ``tune`` (conv-26, conv-30, conv-41) is what search was changed
against; every other conversation is ``holdout`` and was never used to
choose anything. The other half of LoCoMo (conv-44 onwards) lands in
``holdout`` too.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memspool.service import Service

#: The conversations search was tuned against; every other one is held out.
TUNE = frozenset({"conv-26", "conv-30", "conv-41"})
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
SYSTEMS = ("lexical", "hybrid", "vector", "bm25", "fts5")
_SESSION = re.compile(r"session_(\d+)$")
_DIA = re.compile(r"D(\d+):(\d+)")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class Question:
    conversation: str
    text: str
    category: int
    #: The keys of the memories that hold the evidence (turns or sessions).
    evidence: frozenset[str]
    split: str


@dataclass
class Corpus:
    memories: list[dict[str, Any]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def load(path: Path) -> list[dict[str, Any]]:
    if path.is_dir():
        found = sorted(path.glob("*.json"))
        if not found:
            sys.exit(f"{path} holds no .json file; pass LoCoMo's JSON file or its folder.")
        path = found[0]
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        sys.exit(f"{path} is not LoCoMo's JSON (a list of conversations).")
    return data


def _turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [photo: {turn['blip_caption']}]"
    return text


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]]]]:
    found = []
    for name, turns in conversation.items():
        match = _SESSION.match(name)
        if match and isinstance(turns, list):
            found.append((int(match.group(1)), turns))
    return sorted(found, key=lambda pair: pair[0])


def corpus(data: list[dict[str, Any]], unit: str) -> Corpus:
    """The memories (as import lines' fields) and the questions, for ``unit``."""
    out = Corpus()
    for sample in data:
        name = str(sample["sample_id"])
        conversation = sample["conversation"]
        pair = f"{conversation.get('speaker_a', '')} and {conversation.get('speaker_b', '')}"
        for number, turns in _sessions(conversation):
            if unit == "session":
                when = conversation.get(f"session_{number}_date_time", "")
                out.memories.append({
                    "project": name, "key": f"s{number}",
                    "summary": f"{pair}, session {number}, {when}",
                    "body": "\n".join(_turn_text(t) for t in turns)})
                continue
            for turn in turns:
                text = _turn_text(turn)
                # Keys are slugs (lower case) in the store: "D1:3" is "d1-3".
                out.memories.append({"project": name,
                                     "key": turn["dia_id"].replace(":", "-").lower(),
                                     "summary": text, "body": text})
        for qa in sample.get("qa", []):
            evidence = set()
            for ref in qa.get("evidence") or []:
                for session, turn in _DIA.findall(str(ref)):
                    evidence.add(f"s{int(session)}" if unit == "session"
                                 else f"d{int(session)}-{int(turn)}")
            if not evidence:
                continue
            out.questions.append(Question(name, str(qa["question"]), int(qa["category"]),
                                          frozenset(evidence),
                                          "tune" if name in TUNE else "holdout"))
    return out


def build_home(memories: list[dict[str, Any]], folder: Path) -> Path:
    """A home holding ``memories``, through ``memories import`` and ``maintain --reindex``."""
    home = folder / "home"
    source = folder / "memories.jsonl"
    now = time.time()
    with source.open("w", encoding="utf-8") as handle:
        for memory in memories:
            # A recent time: an old one would be archived by the decay of the next pass.
            handle.write(json.dumps({**memory, "type": "takeaway", "created_at": now,
                                     "updated_at": now}) + "\n")
    env = {**os.environ, "MEMSPOOL_HOME": str(home)}
    env.pop("MEMSPOOL_SEMANTIC", None)
    for argv in (["memories", "import", str(source)], ["maintain", "--reindex"]):
        done = subprocess.run([sys.executable, "-m", "memspool", *argv, "--json"], env=env,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"memspool {' '.join(argv)} failed: {done.stderr.strip() or done.stdout}")
    return home


class Okapi:
    """Okapi BM25 over one project's memories (k1 1.2, b 0.75, Lucene's idf)."""

    def __init__(self, docs: list[tuple[str, str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.keys = [key for key, _ in docs]
        self.tfs = []
        df: dict[str, int] = {}
        for _, text in docs:
            tf: dict[str, int] = {}
            for word in _WORD.findall(text.lower()):
                tf[word] = tf.get(word, 0) + 1
            self.tfs.append(tf)
            for word in tf:
                df[word] = df.get(word, 0) + 1
        n = len(docs)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}
        self.lengths = [sum(tf.values()) for tf in self.tfs]
        self.average = sum(self.lengths) / max(1, n)
        self.k1, self.b = k1, b

    def top(self, query: str, k: int) -> list[str]:
        words = set(_WORD.findall(query.lower()))
        scored = []
        for i, tf in enumerate(self.tfs):
            norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.average)
            score = sum(self.idf[w] * tf[w] * (self.k1 + 1) / (tf[w] + norm)
                        for w in words if w in tf)
            if score > 0:
                scored.append((-score, i))
        scored.sort()
        return [self.keys[i] for _, i in scored[:k]]


def _fts5(memories: list[dict[str, Any]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (project UNINDEXED, key UNINDEXED, body)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)",
                     [(m["project"], m["key"], m["body"]) for m in memories])
    return conn


def _fts5_top(conn: sqlite3.Connection, project: str, query: str, k: int) -> list[str]:
    words = ['"' + w + '"' for w in _WORD.findall(query.lower())]
    if not words:
        return []
    rows = conn.execute("SELECT key FROM t WHERE t MATCH ? AND project = ? ORDER BY bm25(t)"
                        " LIMIT ?", (" OR ".join(words), project, k)).fetchall()
    return [str(r[0]) for r in rows]


def rankers(home: Path, memories: list[dict[str, Any]],
            ) -> tuple[dict[str, Callable[[Question], list[str]]], list[Service]]:
    """system -> a function giving the first 10 memory keys for a question."""
    lexical = Service(home, env={"MEMSPOOL_SEMANTIC": "off"})
    hybrid = Service(home, env={})
    key_of = {int(r[0]): str(r[1]) for r in lexical.conn.execute("SELECT id, key FROM memories")}
    vectors = hybrid.vectors()
    okapi = {}
    by_project: dict[str, list[tuple[str, str]]] = {}
    for m in memories:
        by_project.setdefault(m["project"], []).append((m["key"], m["body"]))
    for project, docs in by_project.items():
        okapi[project] = Okapi(docs)
    plain = _fts5(memories)

    def through(service: Service) -> Callable[[Question], list[str]]:
        def top(q: Question) -> list[str]:
            found = service.search(q.text, project=q.conversation, limit=10).results
            return [key_of[hit.id] for hit in found]
        return top

    def vector(q: Question) -> list[str]:
        if vectors is None:
            return []
        return [key_of[n.memory_id] for n in vectors.nearest(
            hybrid.conn, q.text, limit=10, project=q.conversation, live_only=True)]

    systems = {
        "lexical": through(lexical),
        "hybrid": through(hybrid) if vectors is not None else (lambda q: []),
        "vector": vector,
        "bm25": lambda q: okapi[q.conversation].top(q.text, 10),
        "fts5": lambda q: _fts5_top(plain, q.conversation, q.text, 10),
    }
    return systems, [lexical, hybrid]


def scores(ranked: list[str], evidence: frozenset[str]) -> tuple[float, float, float]:
    """recall@5, recall@10 and NDCG@10 of one ranking."""
    r5 = len(evidence.intersection(ranked[:5])) / len(evidence)
    r10 = len(evidence.intersection(ranked[:10])) / len(evidence)
    dcg = sum(1 / math.log2(i + 2) for i, key in enumerate(ranked[:10]) if key in evidence)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(evidence))))
    return r5, r10, dcg / ideal


def evaluate(questions: Iterable[Question], systems: dict[str, Callable[[Question], list[str]]],
             ) -> dict[tuple[str, str, str], list[tuple[float, float, float]]]:
    """(system, split, category) -> the per-question scores."""
    out: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
    for q in questions:
        for name, top in systems.items():
            got = scores(top(q), q.evidence)
            category = str(q.category)
            groups = [category] + (["1-4"] if q.category != 5 else [])
            for split in (q.split, "all"):
                for group in groups:
                    out.setdefault((name, split, group), []).append(got)
    return out


def report(unit: str, results: dict[tuple[str, str, str], list[tuple[float, float, float]]],
           memories: int, live: int) -> None:
    print(f"\n## {unit}s: {memories} memories imported, {live} in recall after maintain")
    for metric, index in (("recall@5", 0), ("recall@10", 1), ("NDCG@10", 2)):
        print(f"\n{metric}")
        print(f"{'category':<16} {'split':<8} {'questions':>9} "
              + " ".join(f"{s:>8}" for s in SYSTEMS))
        for group in ("1-4", "1", "2", "3", "4", "5"):
            label = "1-4 (all four)" if group == "1-4" else f"{group} {CATEGORIES[int(group)]}"
            for split in ("tune", "holdout", "all"):
                rows = results.get((SYSTEMS[0], split, group))
                if not rows:
                    continue
                cells = []
                for system in SYSTEMS:
                    got = results[(system, split, group)]
                    cells.append(f"{sum(r[index] for r in got) / len(got):>8.3f}")
                print(f"{label:<16} {split:<8} {len(rows):>9} " + " ".join(cells))


def run(data: list[dict[str, Any]], unit: str, show: int) -> None:
    found = corpus(data, unit)
    with tempfile.TemporaryDirectory(prefix="memspool-locomo-") as folder:
        home = build_home(found.memories, Path(folder))
        systems, services = rankers(home, found.memories)
        try:
            live = int(services[0].conn.execute(
                "SELECT count(*) FROM memories WHERE layer IN ('buffer', 'canonical')"
            ).fetchone()[0])
            results = evaluate(found.questions, systems)
            report(unit, results, len(found.memories), live)
            if show:
                missed = [q for q in found.questions if q.split == "tune" and q.category != 5
                          and not q.evidence.intersection(systems["hybrid"](q)[:5])]
                print(f"\nfirst {show} tune questions hybrid misses at 5:")
                for q in missed[:show]:
                    print(f"  [{q.category}] {q.text}  evidence {sorted(q.evidence)}")
        finally:
            for service in services:
                service.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="LoCoMo's JSON file, or the folder holding it")
    parser.add_argument("--unit", choices=("turn", "session", "both"), default="both")
    parser.add_argument("--show", type=int, default=0,
                        help="list this many tune questions hybrid misses")
    args = parser.parse_args(argv)
    data = load(args.path)
    for unit in ("turn", "session") if args.unit == "both" else (args.unit,):
        run(data, unit, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
