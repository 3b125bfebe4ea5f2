"""Whole labelled sessions through the real hooks: which planted facts become memory.

    python bench/archivist_sessions.py [--sessions tests/data/sessions] [--show]

Each project's sessions (tests/data/sessions/*.jsonl) are written as Claude
Code transcripts, line by line as it writes them: the prompt, the thinking
block, the answer, each tool call and its result (with the bulky
``toolUseResult``), progress records. The installed Stop hook fires after
every assistant turn and SessionEnd at the end of a session, as Claude Code
runs them; the last session of each project is captured by ``memspool
backfill`` instead (written with no hook). Then ``memspool maintain`` runs.

Scored per split (``tune`` and the held-out ``heldout`` and ``heldout2`` side by side):

- facts kept: planted facts (as of the last session: a changed value
  counts as its new value) held by a current memory of their project, all
  anchors present;
- changed values superseded: no current memory holds the old value's anchors
  without the new value's (a memory that says the move, "from 43200 to
  86400", states the new value, not the old);
- restatements corroborated: the restated fact is one current memory with
  two or more sessions;
- corroborated without a restatement: current memories of two or more
  sessions that hold no fact said in two sessions (a corroboration the
  sessions do not back);
- memories carrying chatter: memories whose text holds a chatter sentence;
- type accuracy: kept facts whose memory has the fact's type;
- context lines cut: context-block lines that end mid-sentence (a line showing
  its memory's whole summary is not cut, full stop or not);
- context lines of chatter: context-block lines whose memory carries chatter
  (the block is the strict tier: what every new session is given);
- kept facts in the block: kept facts with a memory the context block shows
  (the rest are only searchable);
- leaks: memories of another project holding a fact's anchors that its own
  sessions never say;
- noise: a search for something no session spoke of returns nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from _labelled import holds

from memspool.base.quoting import inert
from memspool.config import Config, load_config
from memspool.demo import SessionWriter
from memspool.drainer.lock import drainer_running
from memspool.install import install_hooks, record_transcript_roots
from memspool.service import Service
from memspool.spool import Spool

SESSIONS = Path(__file__).resolve().parent.parent / "tests" / "data" / "sessions"
#: Queries about things no session spoke of.
NOISE_QUERIES = ("quarterly marketing newsletter font", "kubernetes ingress for the cafeteria menu",
                 "how to knit a scarf")


@dataclasses.dataclass
class Scores:
    facts: int = 0
    kept: int = 0
    changed: int = 0
    superseded: int = 0
    restated: int = 0
    corroborated: int = 0
    #: Current memories of two or more sessions that hold no restated fact.
    corroborated_unrestated: int = 0
    memories: int = 0
    chatter: int = 0
    typed: int = 0
    typed_right: int = 0
    lines: int = 0
    lines_cut: int = 0
    #: Context-block lines whose memory carries chatter, and kept facts a block shows.
    lines_chatter: int = 0
    facts_shown: int = 0
    #: The memories carrying chatter, and the memories holding each kept fact.
    chattering: set[int] = dataclasses.field(default_factory=set)
    holding: dict[str, set[int]] = dataclasses.field(default_factory=dict)
    leaks: int = 0
    noise_queries: int = 0
    noise_answered: int = 0
    misses: list[str] = dataclasses.field(default_factory=list)


def _fire(command: str, payload: dict[str, Any], env: dict[str, str]) -> None:
    subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(), env=env,  # noqa: S607
                   check=True, timeout=30)


def _wait_idle(config: Config) -> None:
    spool, deadline = Spool(config.spool_dir), time.monotonic() + 120
    while time.monotonic() < deadline:
        if not spool.has_pending() and not drainer_running(config):
            return
        time.sleep(0.05)
    raise SystemExit("the drainer did not finish in time")


def _cli(home: Path, *args: str) -> Any:
    proc = subprocess.run([sys.executable, "-m", "memspool", *args, "--home", str(home),
                           "--json"], capture_output=True, check=True, timeout=300)
    return json.loads(proc.stdout)


def play(sessions: list[dict[str, Any]], home: Path) -> None:
    """Every project's sessions, in order, through the hooks (the last by backfill)."""
    claude = home.parent / "claude"
    (claude / "projects").mkdir(parents=True)
    record_transcript_roots(Config(home=home, transcript_roots=()), [claude / "projects"])
    config = load_config(home, env={})
    settings = claude / "settings.json"
    install_hooks(settings, config)
    hooks = json.loads(settings.read_text())["hooks"]
    command = {event: groups[-1]["hooks"][0]["command"] for event, groups in hooks.items()}
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPOOL_")}
    by_project: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for session in sessions:
        by_project[session["project"]].append(session)
    for project, played in sorted(by_project.items()):
        played.sort(key=lambda s: s["order"])
        cwd = home.parent / "work" / project
        cwd.mkdir(parents=True)
        folder = claude / "projects" / str(cwd).replace("/", "-")
        folder.mkdir()
        for number, session in enumerate(played, 1):
            backfilled = number == len(played) and len(played) > 1
            session_id = str(uuid.uuid4())
            transcript = SessionWriter(folder / f"{session_id}.jsonl", session_id, cwd)
            base = {"session_id": session_id, "transcript_path": str(transcript.path),
                    "cwd": str(cwd)}
            for turn in session["turns"]:
                if "user" in turn:
                    transcript.user(turn["user"])
                    continue
                transcript.assistant(turn)
                if not backfilled:
                    _fire(command["Stop"], {**base, "hook_event_name": "Stop",
                                            "stop_hook_active": False}, env)
            if backfilled:
                _wait_idle(config)
                _cli(home, "backfill", str(transcript.path))
            else:
                _fire(command["SessionEnd"], {**base, "hook_event_name": "SessionEnd",
                                              "reason": "exit"}, env)
                _wait_idle(config)
    _cli(home, "maintain")


def score(sessions: list[dict[str, Any]], home: Path) -> Scores:
    scores = Scores()
    with Service(home) as service:
        memories = [row.as_dict() for row in service.memories(limit=1_000_000)]
        for memory in memories:  # a project is its folder here: scored by its name
            memory["project"] = memory["project_name"]
        blocks = {s["project"]: service.context(service.project(s["project"])).text
                  for s in sessions}
        for query in NOISE_QUERIES:
            for project in {s["project"] for s in sessions}:
                scores.noise_queries += 1
                scores.noise_answered += bool(service.search(query, project=project).results)
    _score_facts(sessions, memories, scores)
    _score_chatter(sessions, memories, scores)
    # A line shows its summary as an agent reads it (memspool.base.quoting).
    summaries = {int(m["id"]): inert(str(m["summary"]).strip()) for m in memories}
    shown: set[int] = set()
    for block in blocks.values():
        for line in block.splitlines():
            if line.startswith("- "):
                scores.lines += 1
                scores.lines_cut += _cut(line, summaries)
                listed = re.match(r"- #(\d+) ", line)
                if listed:
                    shown.add(int(listed.group(1)))
                    scores.lines_chatter += int(listed.group(1)) in scores.chattering
    scores.facts_shown = sum(1 for ids in scores.holding.values() if ids & shown)
    return scores


def _cut(line: str, summaries: dict[int, str]) -> bool:
    """Does a context line (``- #ID summary (standing)``) end mid-sentence? A line
    that shows its memory's whole summary is not cut, whatever its last character (a
    person's rule often ends without a full stop); a summary cut at a clause end says
    so with "..."."""
    fact = line.rsplit(" (", 1)[0].rstrip()
    found = re.match(r"- #(\d+) (.*)", fact, re.DOTALL)
    if found and summaries.get(int(found.group(1))) == found.group(2).strip():
        return False
    return not fact.endswith((".", "!", "?", "...", "`", ")", '"', "'"))


def _project_texts(sessions: list[dict[str, Any]]) -> dict[str, str]:
    """What each project's sessions say (prompts, answers, thinking), lower case."""
    said: dict[str, list[str]] = defaultdict(list)
    for session in sessions:
        for turn in session["turns"]:
            said[session["project"]] += [turn.get(k) or "" for k in ("user", "assistant",
                                                                     "thinking")]
    return {project: "\n".join(texts).lower() for project, texts in said.items()}


def _said(said_in: dict[str, str], project: str, anchors: list[str]) -> bool:
    """The project's own sessions say every anchor: its memory holding them is its own
    fact (two projects can share a setting), not a leak."""
    return all(anchor.lower() in said_in.get(project, "") for anchor in anchors)


def _score_facts(sessions: list[dict[str, Any]], memories: list[dict[str, Any]],
                 scores: Scores) -> None:
    """Planted facts kept, corroborated, leaked; changed values superseded."""
    current = [m for m in memories if m["layer"] in ("buffer", "canonical")]
    facts: dict[str, dict[str, Any]] = {}
    replaced: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    sessions_of: dict[str, set[str]] = defaultdict(set)
    said_in = _project_texts(sessions)
    for session in sorted(sessions, key=lambda s: (s["project"], s["order"])):
        for planted in session["facts"]:
            fact = {**planted, "project": session["project"]}
            sessions_of[fact["id"]].add(session["id"])
            if fact.get("kind") == "changed" and fact.get("replaces") in facts:
                replaced[fact["replaces"]] = (facts.pop(fact["replaces"]), fact)
            facts[fact["id"]] = fact
    for fact_id, fact in facts.items():
        scores.facts += 1
        mine = [m for m in current if m["project"] == fact["project"]
                and holds(m, fact["anchors"])]
        if mine:
            scores.kept += 1
            scores.holding[fact_id] = {int(m["id"]) for m in mine}
            scores.typed += 1
            scores.typed_right += any(m["type"] == fact["type"] for m in mine)
        else:
            scores.misses.append(f"lost {fact_id}: {fact['anchors']}")
        if len(sessions_of[fact_id]) > 1:
            scores.restated += 1
            if len(mine) == 1 and mine[0]["sessions"] >= 2:
                scores.corroborated += 1
            else:
                scores.misses.append(f"not corroborated {fact_id}: "
                                     f"{[(m['id'], m['sessions']) for m in mine]}")
        scores.leaks += sum(1 for m in memories if m["project"] != fact["project"]
                            and holds(m, fact["anchors"])
                            and not _said(said_in, m["project"], fact["anchors"]))
    _score_unrestated(current, [f for f in facts.values() if len(sessions_of[f["id"]]) > 1],
                      scores)
    for old_id, (old, new) in replaced.items():
        scores.changed += 1
        stale = [m for m in current if m["project"] == old["project"]
                 and holds(m, old["anchors"]) and not holds(m, new["anchors"])]
        if stale:
            scores.misses.append(f"still current {old_id}: {[m['id'] for m in stale]}")
        else:
            scores.superseded += 1


def _score_unrestated(current: list[dict[str, Any]], restated: list[dict[str, Any]],
                      scores: Scores) -> None:
    """Current memories of two or more sessions that hold no fact said in two."""
    for memory in current:
        if memory["sessions"] >= 2 and not any(
                f["project"] == memory["project"] and holds(memory, f["anchors"])
                for f in restated):
            scores.corroborated_unrestated += 1
            scores.misses.append(f"corroborated, no fact restated: #{memory['id']} "
                                 f"{memory['summary'][:60]!r}")


def _score_chatter(sessions: list[dict[str, Any]], memories: list[dict[str, Any]],
                   scores: Scores) -> None:
    """Memories whose text carries a sentence marked as chatter."""
    chatter = {(s["project"], c.lower()) for s in sessions for c in s["chatter"]
               if len(c) >= 12}
    scores.memories = len(memories)
    for memory in memories:
        text = f"{memory['summary']}\n{memory['body']}".lower()
        carried = [c for p, c in chatter if p == memory["project"] and c in text]
        if carried:
            scores.chatter += 1
            scores.chattering.add(int(memory["id"]))
            scores.misses.append(f"chatter in #{memory['id']}: {carried[0][:60]!r}")


def _rate(part: int, whole: int) -> str:
    return f"{part}/{whole} {part / whole:.0%}" if whole else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=Path, default=SESSIONS)
    parser.add_argument("--split", action="append", help="only these splits")
    parser.add_argument("--show", action="store_true", help="list what went wrong (tune only)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="build each split's home under DIR and keep it (tune only)")
    args = parser.parse_args(argv)
    rows = [json.loads(line) for path in sorted(args.sessions.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    splits = sorted({r["split"] for r in rows} & set(args.split or {r["split"] for r in rows}))
    results: dict[str, Scores] = {}
    for split in splits:
        chosen = [r for r in rows if r["split"] == split]
        if args.keep and not split.startswith("heldout"):
            home = args.keep / split / "home"
            play(chosen, home)
            results[split] = score(chosen, home)
            continue
        with tempfile.TemporaryDirectory(prefix="memspool-bench-",
                                         ignore_cleanup_errors=True) as folder:
            home = Path(folder) / "home"
            play(chosen, home)
            results[split] = score(chosen, home)
    print(f"{'':<28}" + "".join(f"{s:>16}" for s in splits))
    lines = [
        ("planted facts kept", lambda s: _rate(s.kept, s.facts)),
        ("changed values superseded", lambda s: _rate(s.superseded, s.changed)),
        ("restatements corroborated", lambda s: _rate(s.corroborated, s.restated)),
        ("corroborated, none restated", lambda s: str(s.corroborated_unrestated)),
        ("memories carrying chatter", lambda s: _rate(s.chatter, s.memories)),
        ("type right (kept facts)", lambda s: _rate(s.typed_right, s.typed)),
        ("context lines cut", lambda s: _rate(s.lines_cut, s.lines)),
        ("context lines of chatter", lambda s: _rate(s.lines_chatter, s.lines)),
        ("kept facts in the block", lambda s: _rate(s.facts_shown, s.kept)),
        ("facts leaked to a project", lambda s: str(s.leaks)),
        ("noise queries answered", lambda s: _rate(s.noise_answered, s.noise_queries)),
    ]
    for name, show in lines:
        print(f"{name:<28}" + "".join(f"{show(results[s]):>16}" for s in splits))
    if args.show:
        for split in splits:
            if split.startswith("heldout"):
                continue  # held out: figures only, never a case to tune on
            for miss in results[split].misses:
                print(f"  {split}: {miss}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
