"""The minor pass on labelled assistant messages, played through the real hooks.

    python bench/archivist_quality.py [--messages tests/data/archivist_messages.jsonl]

Each split's messages become Claude Code sessions (ten turns each: the
message's prompt, then the message as an assistant record). The installed
Stop hook fires after every turn and SessionEnd at the end, exactly as Claude
Code runs them (``sh -c``, payload on stdin); the detached drainer slices
the transcripts and digests the slices; whatever is still queued is digested
afterwards. A message is *kept* when a line of a memory's text comes from it
(:func:`_probes`).

Printed per split: durable messages kept and ephemeral messages kept, beside
the naive baseline (every assistant text of 16 or more characters becomes a
note). "tuned" to "tuned13" are what the claim model is trained on;
"heldout", "heldout2" and "heldout3" were written apart and are never
trained on (``--split heldout --split heldout2 --split heldout3`` plays
only them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _labelled import load_splits

from memspool.config import Config, load_config
from memspool.drainer.lock import drainer_running
from memspool.install import install_hooks, record_transcript_roots
from memspool.service import Service
from memspool.spool import Spool

MESSAGES = Path(__file__).resolve().parent.parent / "tests" / "data" / "archivist_messages.jsonl"
TURNS_PER_SESSION = 10
#: The naive baseline's floor: shorter assistant texts are chatter for it too.
NAIVE_MIN_CHARS = 16
#: A memory's line is traced to a message by this many of its first characters,
#: when it has at least PROBE_MIN_CHARS (:func:`_probes`).
PROBE_CHARS = 60
PROBE_MIN_CHARS = 20


def _record(kind: str, text: str, parent: str | None) -> tuple[str, bytes]:
    key = str(uuid.uuid4())
    if kind == "user":
        message: dict[str, Any] = {"role": "user", "content": text}
    else:
        message = {"role": "assistant", "id": f"msg_{key[:8]}",
                   "content": [{"type": "text", "text": text}]}
    record = {"type": kind, "uuid": key, "parentUuid": parent, "message": message,
              "timestamp": "2026-12-01T00:00:00Z"}
    return key, json.dumps(record).encode() + b"\n"


def _fire(command: str, payload: dict[str, Any], env: dict[str, str]) -> None:
    # Exactly as Claude Code runs a command hook: a shell, the JSON on stdin.
    subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(), env=env,  # noqa: S607
                   check=True, timeout=30)


def _wait_idle(config: Config, deadline: float) -> None:
    spool = Spool(config.spool_dir)
    while time.monotonic() < deadline:
        if not spool.has_pending() and not drainer_running(config):
            return
        time.sleep(0.05)
    raise SystemExit("the drainer did not finish in time")


def play(rows: list[dict[str, Any]], home: Path) -> dict[str, list[str]]:
    """Play ``rows`` through the hooks into ``home``; returns each message id's memory texts."""
    claude = home / "claude"
    projects = claude / "projects" / "bench"
    projects.mkdir(parents=True)
    record_transcript_roots(Config(home=home, transcript_roots=()), [claude / "projects"])
    config = load_config(home, env={})
    settings = claude / "settings.json"
    install_hooks(settings, config)
    hooks = json.loads(settings.read_text())["hooks"]
    command = {event: groups[-1]["hooks"][0]["command"] for event, groups in hooks.items()}
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPOOL_")}
    for start in range(0, len(rows), TURNS_PER_SESSION):
        session = str(uuid.uuid4())
        transcript = projects / f"{session}.jsonl"
        base = {"session_id": session, "transcript_path": str(transcript), "cwd": str(home)}
        parent = None
        for row in rows[start:start + TURNS_PER_SESSION]:
            prompt = row.get("context") or "Carry on with the task."
            parent, user_line = _record("user", prompt, parent)
            parent, answer_line = _record("assistant", row["text"], parent)
            with transcript.open("ab") as out:
                out.write(user_line + answer_line)
            _fire(command["Stop"], {**base, "hook_event_name": "Stop",
                                    "stop_hook_active": False}, env)
        _fire(command["SessionEnd"], {**base, "hook_event_name": "SessionEnd",
                                      "reason": "exit"}, env)
    _wait_idle(config, time.monotonic() + 120)
    with Service(home) as service:
        service.digest()
        bodies = [row.memory.body for row in service.memories(limit=1_000_000)]
    found: dict[str, list[str]] = {row["id"]: [] for row in rows}
    texts = {row["id"]: " ".join(row["text"].split()) for row in rows}
    for body in bodies:
        lines, whole = _probes(body)
        named = {key for key, text in texts.items() if whole and whole in text}
        for probe in lines:
            by_line = [key for key, text in texts.items() if probe in text]
            named.update(by_line if len(by_line) == 1 else ())
        for key in named:
            found[key].append(body)
    return found


def _probes(body: str) -> tuple[list[str], str]:
    """What of a memory's text tells which message it came from: the first
    PROBE_CHARS of the whole text, and of each of its lines (a note's claims, or a
    merged note's). The message's words merged into a memory that starts with other
    words (the agent saying back the rule its prompt gave: one memory, the prompt's
    words first) are kept too. A line shorter than PROBE_MIN_CHARS ("pls:") names no
    message, and one found in two or more messages (a table's rule line) names none
    of them (:func:`play`); the whole text names every message it is found in."""
    lines = [" ".join(line.split())[:PROBE_CHARS] for line in body.splitlines()]
    return ([line for line in lines if len(line) >= PROBE_MIN_CHARS],
            " ".join(body.split())[:PROBE_CHARS])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=Path, default=MESSAGES)
    parser.add_argument("--show", action="store_true", help="list every wrong verdict")
    parser.add_argument("--split", action="append", help="only these splits (repeatable)")
    args = parser.parse_args(argv)
    _, splits = load_splits(args.messages)
    print(f"{'split':<8} {'label':<10} {'messages':>8} {'kept':>6} {'rate':>6} "
          f"{'naive kept':>10} {'naive rate':>10}")
    for split in sorted(name for name in splits if name != "all"
                        and (not args.split or name in args.split)):
        rows = splits[split]
        # A drainer that just let go of its lock may still be closing its log.
        with tempfile.TemporaryDirectory(prefix="memspool-bench-",
                                         ignore_cleanup_errors=True) as folder:
            found = play(rows, Path(folder) / "home")
        for label in ("durable", "ephemeral"):
            subset = [r for r in rows if r["label"] == label]
            kept = sum(bool(found[r["id"]]) for r in subset)
            naive = sum(len(r["text"].strip()) >= NAIVE_MIN_CHARS for r in subset)
            print(f"{split:<8} {label:<10} {len(subset):>8} {kept:>6} "
                  f"{kept / len(subset):>6.1%} {naive:>10} {naive / len(subset):>10.1%}")
            if args.show:
                for r in subset:
                    if bool(found[r["id"]]) != (label == "durable"):
                        print(f"    wrong: {r['id']} ({r.get('type') or r.get('kind')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
