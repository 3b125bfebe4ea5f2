"""``memspool status``."""

from __future__ import annotations

import argparse
import time

from memspool.cli._common import Subparsers, add_home, add_json, command, open_service, print_json

# The first line is the one-line summary in `memspool --help`, so it may not
# wrap; the string is split in the source instead.
DOC = (
    "Show memspool's state: spool backlog, slices queued, memories, sessions, last drain"
    " and error.\n"
    "\n"
    "Example:\n"
    "    memspool status --json\n"
)


def _status(args: argparse.Namespace) -> int:
    with open_service(args.home, readonly=True) as service:
        status = service.status()
    if args.json:
        print_json(status.as_dict())
        return 0
    note = "" if status.home_exists else " (does not exist yet: `memspool install` creates it)"
    print(f"home:              {status.home}{note}")
    print(f"store:             {status.store}")
    print(f"spool pending:     {status.pending_frames} frame(s), "
          f"{status.pending_bytes} bytes")
    print(f"drainer running:   {'yes' if status.drainer_running else 'no'}")
    events = status.hooks_installed
    hooks = (f"{', '.join(events)} in {status.hooks_settings}" if events else
             f"not in {status.hooks_settings} for this home (run `memspool install`)")
    print(f"hooks:             {hooks}")
    print(f"slices queued:     {_n(status.slices_queued)} (of {_n(status.slices_total)}) "
          f"not yet digested into memory")
    layers = status.memories_by_layer or {}
    shown = ", ".join(f"{n} {layer}" for layer, n in sorted(layers.items())) or "none"
    print(f"memories:          {_n(status.memories)} ({shown})")
    current = sum(n for layer, n in layers.items() if layer in ("buffer", "canonical"))
    if status.memories_in_context is not None and current:
        rest = " (the rest are found by search)" if status.memories_in_context < current else ""
        print(f"in context blocks: {status.memories_in_context} of the {current} current{rest}")
    last = status.last_maintain
    print("last maintenance:  " + ("never (run `memspool maintain`)" if not last else
          f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(last['started_at']))}: "
          f"{last['examined']} examined, {last['merged'] + last['siblings']} folded, "
          f"{last['superseded']} superseded, {last['promoted']} promoted, "
          f"{last['archived']} archived"))
    print(f"semantic recall:   {_semantic_line(status.semantic)}")
    print(f"sessions tracked:  {_n(status.sessions_tracked)}")
    print(f"held back:         {_n(status.slices_held_back)} slice(s) below the size floor")
    print(f"missing:           {_n(status.transcripts_missing)} transcript(s) being retried")
    print(f"quarantined:       {status.quarantined_files} damaged spool region(s)")
    print(f"hook errors:       {status.hook_errors}")
    print(f"last drain:        {_when(status.last_drain)}")
    print(f"last error:        {status.last_error or 'none'}")
    for line in _team_lines(status.team):
        print(line)
    return 0


def _n(count: int | None) -> str:
    """A count, or "unknown" where the store could not be read (``store`` says why)."""
    return "unknown" if count is None else str(count)


def _when(seconds: object) -> str:
    """A time as the status shows it; "never" for none."""
    if not isinstance(seconds, (int, float)) or not seconds:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def _team_lines(team: dict[str, object] | None) -> list[str]:
    """Team memory as the plain output shows it: this machine, then each server with
    its role, last sync and error, and each shared project's waiting changes."""
    if not team:
        return ["team memory:       off (no project shared)"]
    lines = [f"team memory:       machine {team['machine']}, {team['pending']} change(s) "
             f"waiting to be pushed"]
    for server in team["servers"]:  # type: ignore[attr-defined]
        lines.append(f"  server:          {server['server']} as {server['role']}; last sync "
                     f"{_when(server['last_sync'])}; last error {server['last_error'] or 'none'}")
        lines.extend(f"  project:         {one['project']}: {one['pending']} waiting"
                     for one in server["projects"])
    return lines


def _semantic_line(semantic: dict[str, object]) -> str:
    if not semantic["on"]:
        return f"off: {semantic['reason']}"
    line = f"on (model {semantic['model_hash']})"
    if "vectors" in semantic:
        line += f", {semantic['vectors']} memories embedded, {semantic['waiting']} waiting"
        if semantic.get("vectors_other_models"):
            line += (f", {semantic['vectors_other_models']} from another model "
                     f"(`memspool maintain --reindex`)")
    return line


def register(sub: Subparsers) -> None:
    parser = command(sub, "status", DOC, _status)
    add_home(parser)
    add_json(parser, "the status")
