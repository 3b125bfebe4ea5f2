"""``memspool demo``."""

from __future__ import annotations

import argparse
from pathlib import Path

from memspool.cli._common import Subparsers, command, print_json

DOC = """Simulate Claude Code sessions on bundled samples and show what memspool makes of them.

Installs the real hooks into a scratch settings.json under a new home (your
own settings and home are not touched), writes a real planning transcript in
stages and fires the installed Stop, SubagentStop, PreCompact and SessionEnd
commands; the detached drainer ships the slices (printed with their byte
counts). Then a made-up coding session with a few facts in its chatter goes
through the same hooks, the queue is digested and maintained, and the demo
prints the memories, the context block a new session would get, and one
search. The temporary home is removed at the end; --home keeps one to look
around in.

Example:
    memspool demo
"""


def _demo(args: argparse.Namespace) -> int:
    from memspool.demo import run_demo

    result = run_demo(args.home,
                      out=(lambda line: None) if args.json else print)
    if args.json:
        print_json(result)
    return 0 if result["drained"] and result["slices"] else 1


def register(sub: Subparsers) -> None:
    parser = command(sub, "demo", DOC, _demo)
    parser.add_argument("--home", type=Path, default=argparse.SUPPRESS,
                        help="use this folder as the demo's home, and keep it (default: a new "
                             "temporary folder, removed at the end)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
