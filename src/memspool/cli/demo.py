"""``memspool demo``."""

from __future__ import annotations

import argparse
from pathlib import Path

from memspool.cli._common import Subparsers, command, print_json

DOC = """Simulate a Claude Code session on bundled sample transcripts and show what is captured.

Installs the real hooks into a scratch settings.json under a new home (your
own settings and home are not touched), writes a transcript in stages, fires
the installed Stop, SubagentStop and PreCompact commands, lets the detached
drainer ship the slices, then prints the slices and their byte counts.
The temporary home is removed at the end; --home keeps one to look around in.

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
