"""``memspool demo``: Claude Code sessions simulated on bundled samples.

It installs the real hooks into a scratch settings.json and plays two
sessions through them, exactly as Claude Code runs hooks (``sh -c``, the
payload on stdin):

1. a real transcript (``memspool.samples``, a planning session): written in
   stages, with a subagent and a compaction; the report shows what was
   captured and the byte counts;
2. a made-up coding session (``session.json`` beside this module: prompts,
   thinking, tool calls, chatter and a few facts), written record by record
   as Claude Code writes it (:class:`SessionWriter`).

Then the queue is digested and a maintenance pass runs, and the demo prints
the memories, the context block a new session of the project would get,
and one search.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any, Final

from memspool.base.errors import HomeError
from memspool.config import Config, default_home, load_config
from memspool.install import install_hooks, record_transcript_roots
from memspool.spool import Spool
from memspool.store import connect
from memspool.store.slices import SliceRow, list_slices, slice_text

__all__ = ["SessionWriter", "run_demo"]

MAIN_SAMPLE: Final = "spotter-subagent.jsonl"
SUBAGENT_SAMPLE: Final = (
    "spotter-ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl"
)
SESSION_ID: Final = "491e126e-1e71-469c-ade2-fcc8af567c74"
#: How long the demo waits for the detached drainer before it gives up.
DRAIN_DEADLINE_SECS: Final = 60.0
#: The excerpt of the first slice: whole lines, about this many characters.
EXCERPT_CHARS: Final = 700


def _sample(name: str) -> bytes:
    return files("memspool.samples").joinpath(name).read_bytes()


class SessionWriter:
    """One session's transcript, written record by record as Claude Code writes it:
    a user record per prompt; per assistant turn its thinking block, each tool
    call (one line each, sharing ``message.id``) with a progress record and its
    result (with the bulky ``toolUseResult``), then the answer's text."""

    def __init__(self, path: Path, session: str, cwd: Path) -> None:
        self.path = path
        self.session = session
        self.cwd = cwd
        self._parent: str | None = None

    def _write(self, record: dict[str, Any]) -> None:
        key = str(uuid.uuid4())
        record = {"uuid": key, "parentUuid": self._parent, "sessionId": self.session,
                  "cwd": str(self.cwd), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                   time.gmtime()), **record}
        self._parent = key
        with self.path.open("ab") as out:
            out.write(json.dumps(record).encode() + b"\n")

    def user(self, text: str) -> None:
        self._write({"type": "user", "message": {"role": "user", "content": text}})

    def assistant(self, turn: dict[str, Any]) -> None:
        """An assistant turn: ``{"assistant": text, "thinking"?: text, "tools"?: [...]}``."""
        message_id = f"msg_{uuid.uuid4().hex[:12]}"

        def block(content: dict[str, Any]) -> None:
            self._write({"type": "assistant", "message": {
                "id": message_id, "role": "assistant", "content": [content]}})

        if turn.get("thinking"):
            block({"type": "thinking", "thinking": turn["thinking"], "signature": "c2ln" * 10})
        for call in turn.get("tools") or []:
            tool_id = f"toolu_{uuid.uuid4().hex[:12]}"
            block({"type": "tool_use", "id": tool_id, "name": call["name"],
                   "input": {"command": call.get("input", "")}})
            self._write({"type": "progress", "data": {"type": "bash_progress"}})
            output = str(call.get("output", ""))
            self._write({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": output,
                 "is_error": bool(call.get("error"))}]},
                "toolUseResult": {"stdout": output, "stderr": ""}})
        if turn.get("assistant"):
            block({"type": "text", "text": turn["assistant"]})


def _run_hook(command: str, payload: dict[str, Any], env: dict[str, str], home: Path) -> None:
    # Exactly as Claude Code runs a command hook: a shell, the JSON on stdin.
    fired = time.time()
    subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(),  # noqa: S607
                   env=env, check=True, timeout=30)
    # A person reads the answer before the next turn; let the drainer catch up.
    _wait_drained(home, time.monotonic() + DRAIN_DEADLINE_SECS, since=fired)


def _wait_drained(home: Path, deadline: float, *, since: float | None = None) -> bool:
    """Poll until the spool is empty and a drain pass ended after ``since``
    (or, without ``since``, until the detached drainer has exited)."""
    from memspool.drainer.lock import drainer_running
    from memspool.store import get_state

    config = load_config(home, env={})
    spool = Spool(config.spool_dir)
    while time.monotonic() < deadline:
        if not spool.has_pending():
            if since is None:
                if not drainer_running(config):
                    return True
            else:
                conn = connect(config)
                try:
                    last = get_state(conn, "last_drain")
                finally:
                    conn.close()
                if last is not None and float(last) > since:
                    return True
        time.sleep(0.05)
    return False


def memspool_command() -> str:
    """How to run this memspool from a shell: ``memspool`` when that name on PATH is this
    install's, else this interpreter with ``-m memspool``."""
    found = shutil.which("memspool")
    if found and Path(found).resolve().parent == Path(sys.executable).resolve().parent:
        return "memspool"
    return f"{shlex.quote(sys.executable)} -m memspool"


def _excerpt(text: str, chars: int) -> list[str]:
    """The first whole lines of ``text`` within ``chars`` (a longer first line cut at a
    word), and "..." when there is more."""
    lines: list[str] = []
    used = 0
    for line in text.splitlines():
        if used + len(line) > chars:
            head = line[:chars]
            # A first line too long is cut at a word; else the excerpt ends at a line.
            lines.append(f"{head.rsplit(' ', 1)[0]} ..." if not lines and " " in head
                         else "...")
            break
        lines.append(line)
        used += len(line) + 1
    return lines


def run_demo(home: Path | None = None, out: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the simulated session; returns the numbers it printed.

    Without ``home`` it runs in a new temporary folder, removed at the end (once
    the detached drainer has exited); a ``home`` given is kept to look around in.
    """
    if home is not None:
        if home.resolve() == default_home().resolve():
            # Its config.toml would name the demo's transcripts alone: the user's
            # own sessions would no longer be captured there.
            raise HomeError(f"{home} is your memspool home (MEMSPOOL_HOME, or the default): "
                            f"the demo needs a folder of its own.", str(home))
        if home.exists() and not home.is_dir():
            raise HomeError(f"{home} is a file: the demo needs a new or empty folder.",
                            str(home))
        if home.is_dir() and any(home.iterdir()):
            # A second run would append to the first one's transcripts and count
            # their bytes twice; another folder's files are not the demo's to mix with.
            raise HomeError(f"{home} is not empty: the demo needs a new or empty folder "
                            f"(remove it, or give another --home).", str(home))
        result = _simulate(home.absolute(), out)
        out(f"  look around: MEMSPOOL_HOME={shlex.quote(result['home'])} "
            f"{memspool_command()} memories list")
        return result
    scratch = Path(tempfile.mkdtemp(prefix="memspool-demo-")).absolute()
    result = _simulate(scratch, out)
    from memspool.drainer.lock import drainer_running

    if drainer_running(load_config(scratch, env={})):
        out(f"  the demo's home {scratch} is kept: its drainer is still running")
        return result
    shutil.rmtree(scratch, ignore_errors=True)
    result["home"] = None
    out(f"  the demo's home was a temporary folder, now removed; to keep one and look "
        f"around: {memspool_command()} demo --home DIR")
    return result


# One long function on purpose: it reads top to bottom as the session it simulates.
def _simulate(home: Path, out: Callable[[str], None]) -> dict[str, Any]:  # noqa: PLR0915
    """The simulated session in ``home``; returns the numbers it printed."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    claude = home / "demo-claude"
    project_dir = claude / "projects" / "-home-user-projects-spotter"
    project_dir.mkdir(parents=True, exist_ok=True)
    # Only the demo's own Claude folder: nothing of the user's is read.
    record_transcript_roots(Config(home=home, transcript_roots=()), [claude / "projects"])
    config = load_config(home, env={})
    settings = claude / "settings.json"
    install_hooks(settings, config)
    commands = {
        event: groups[-1]["hooks"][0]["command"]
        for event, groups in json.loads(settings.read_text())["hooks"].items()
    }
    out(f"memspool demo: home {home}")
    out(f"  hooks installed in {settings}")

    # The installed command carries its home; Claude Code's environment knows
    # nothing of memspool, and the demo's settings must not be overridden.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPOOL_")}
    transcript = project_dir / f"{SESSION_ID}.jsonl"
    lines = _sample(MAIN_SAMPLE).splitlines(keepends=True)
    spotter = home / "demo-work" / "spotter"
    spotter.mkdir(parents=True, exist_ok=True)
    cwd = str(spotter)
    base = {"session_id": SESSION_ID, "transcript_path": str(transcript), "cwd": cwd}
    stages = [lines[: len(lines) // 3], lines[len(lines) // 3 : 2 * len(lines) // 3],
              lines[2 * len(lines) // 3 :]]
    raw_total = 0
    with transcript.open("ab") as handle:
        handle.write(b"".join(stages[0]))
    raw_total += sum(map(len, stages[0]))
    _run_hook(commands["Stop"], {**base, "hook_event_name": "Stop", "stop_hook_active": False},
              env, home)
    out(f"  turn 1: wrote {len(stages[0])} transcript lines, fired Stop")

    with transcript.open("ab") as handle:
        handle.write(b"".join(stages[1]))
    raw_total += sum(map(len, stages[1]))
    agent = transcript.with_suffix("") / "subagents" / "agent-aac57f5.jsonl"
    agent.parent.mkdir(parents=True, exist_ok=True)
    agent_bytes = _sample(SUBAGENT_SAMPLE)
    agent.write_bytes(agent_bytes)
    raw_total += len(agent_bytes)
    _run_hook(commands["SubagentStop"], {**base, "hook_event_name": "SubagentStop",
              "stop_hook_active": False, "agent_id": "aac57f5",
              "agent_transcript_path": str(agent)}, env, home)
    out(f"  turn 2: wrote {len(stages[1])} lines and a subagent transcript, fired SubagentStop")

    with transcript.open("ab") as handle:
        handle.write(b"".join(stages[2]))
    raw_total += sum(map(len, stages[2]))
    _run_hook(commands["PreCompact"], {**base, "hook_event_name": "PreCompact", "trigger": "manual",
              "custom_instructions": "Keep the decisions about the credo and dialyzer setup."},
              env, home)
    out(f"  turn 3: wrote {len(stages[2])} lines, fired PreCompact (forces the tail out)")

    drained = _wait_drained(home, time.monotonic() + DRAIN_DEADLINE_SECS)
    conn = connect(config)
    try:
        rows = list(reversed(list_slices(conn, limit=1000)))
        sample_text = slice_text(conn, rows[0].id) if rows else ""
    finally:
        conn.close()
    text_chars = sum(r.text_chars for r in rows)
    stored = sum(r.stored_bytes for r in rows)
    covered = sum(r.raw_bytes for r in rows)
    out("")
    out(f"  detached drainer {'finished' if drained else 'did NOT finish in time'}; "
        f"{len(rows)} slice(s):")
    for r in rows:
        who = f"subagent {r.agent_id}" if r.agent_id else "main"
        out(f"    #{r.id:<3} {r.event:<12} {who:<17} "
            f"bytes {r.byte_start}-{r.byte_end}: "
            f"kept {r.records_kept} records, dropped {r.records_dropped}; "
            f"{r.raw_bytes} raw -> {r.text_chars} chars -> {r.stored_bytes} zstd bytes")
    out("")
    ratio = covered / stored if stored else 0.0
    out(f"  transcript bytes written: {raw_total}; covered by slices: {covered}")
    out(f"  kept text: {text_chars} chars ({100 * text_chars / max(covered, 1):.1f}% of raw); "
        f"stored zstd: {stored} bytes ({ratio:.0f}x smaller than raw)")
    out("")
    out("  start of the first slice:")
    for line in _excerpt(sample_text, EXCERPT_CHARS):
        out(f"    | {line}")
    out("")
    session = _play_coding_session(home, claude, commands, env, out)
    memories, unused, block, hits = _outcome(home, session)
    out("")
    out(f"  memories ({len(memories)}), digested from the slices and kept true by a "
        f"maintenance pass:")
    for m in memories:
        out(f"    #{m['id']:<3} {m['project']}/{m['type']}: {m['summary']}")
    if unused:
        out("  slices that gave no memory:")
        for r in unused:
            out(f"    #{r.id:<3} {r.digest_note}")
    out("")
    out(f"  the context block a new session of {session['project']} gets at start:")
    for line in (block or "(none)").splitlines():
        out(f"    | {line}")
    out("")
    out(f"  memspool search {session['search']!r} --project {session['project']}:")
    if not hits:
        out("    no memory matches")
    for hit in hits:
        # As `memspool search` prints a hit: how well it answers, 0-100%.
        out(f"    #{hit['id']:<3} {round(100 * hit['score']):>3d}%  {hit['summary']}")
    return {"home": str(home), "slices": len(rows), "raw_bytes": raw_total, "covered": covered,
            "text_chars": text_chars, "stored_bytes": stored, "drained": drained,
            "memories": len(memories), "slices_without_memory": len(unused),
            "context_chars": len(block), "search_hits": len(hits)}


def _play_coding_session(home: Path, claude: Path, commands: dict[str, str],
                         env: dict[str, str], out: Callable[[str], None]) -> dict[str, Any]:
    """The made-up coding session of ``session.json``, through the installed hooks."""
    session = json.loads(files("memspool.demo").joinpath("session.json").read_text("utf-8"))
    cwd = home / "demo-work" / session["project"]
    cwd.mkdir(parents=True, exist_ok=True)
    folder = claude / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    session_id = str(uuid.uuid4())
    writer = SessionWriter(folder / f"{session_id}.jsonl", session_id, cwd)
    base = {"session_id": session_id, "transcript_path": str(writer.path), "cwd": str(cwd)}
    answers = 0
    for turn in session["turns"]:
        if "user" in turn:
            writer.user(turn["user"])
            continue
        writer.assistant(turn)
        answers += 1
        _run_hook(commands["Stop"], {**base, "hook_event_name": "Stop",
                                     "stop_hook_active": False}, env, home)
    _run_hook(commands["SessionEnd"], {**base, "hook_event_name": "SessionEnd",
                                       "reason": "exit"}, env, home)
    out("")
    out(f"  a coding session in {session['project']}: {answers} answers with thinking, tool "
        f"calls and chatter, fired Stop after each and SessionEnd")
    _wait_drained(home, time.monotonic() + DRAIN_DEADLINE_SECS)
    return dict(session)


def _outcome(home: Path, session: dict[str, Any]) -> tuple[
        list[dict[str, Any]], list[SliceRow], str, list[dict[str, Any]]]:
    """Memories, slices that gave none, the project's context block and one search."""
    from memspool.service import Service

    with Service(home) as service:
        service.digest()  # whatever the drainer's time budget left queued
        service.maintain()
        memories = sorted((row.as_dict() for row in service.memories(limit=1000)),
                          key=lambda m: m["id"])
        names = service.project_names(m["project"] for m in memories)
        memories = [{**m, "project": names.get(m["project"], m["project"])} for m in memories]
        unused = [r for r in service.slices(limit=1000) if r.digest_note]
        block = service.context(session["project"]).text
        hits = [hit.as_dict() for hit in service.search(
            session["search"], project=session["project"], limit=3).results]
    current = [m for m in memories if m["layer"] in ("buffer", "canonical")]
    return current, sorted(unused, key=lambda r: r.id), block, hits
