"""``memspool backfill``."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path

from memspool.cli._common import Subparsers, add_home, add_json, command, print_json

DOC = """Capture the Claude Code history that exists already, then digest it into memory.

Reads every transcript under the transcript roots (or the PATHs given:
files or folders, which must lie under the roots too), subagent transcripts
included, through the drainer's own cursors: running it again, or after the
hooks captured a session, stores nothing twice. Then digests the queued
slices into memories. Claude Code deletes transcripts older than
cleanupPeriodDays (30 by default), so backfill soon after installing.

Example:
    memspool backfill --since 30
    memspool backfill ~/.claude/projects/-home-me-api --json
"""


def _days(value: str) -> float:
    try:
        days = float(value)
    except ValueError:
        days = 0.0
    if not 0 < days < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of days above 0, got {value!r}")
    return days


def _size(count: int) -> str:
    if count < 1000:
        return f"{count} bytes"
    size, unit = count / 1000, "KB"
    for bigger in ("MB", "GB"):
        if size < 1000:
            break
        size, unit = size / 1000, bigger
    return f"{size:.1f} {unit}"


def _run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from memspool.config import load_config
    from memspool.drainer.backfill import backfill

    config = load_config(getattr(args, "home", None))
    with contextlib.ExitStack() as bars:
        def progress(phase: str, total: int) -> Callable[[int], None]:
            bars.close()  # one bar a phase: the files, then the slices digested
            bar = bars.enter_context(tqdm(total=total, unit=f" {phase}", desc=f"backfill {phase}",
                                          disable=not sys.stderr.isatty(), file=sys.stderr))
            update: Callable[[int], None] = bar.update
            return update

        report = backfill(config, [Path(p) for p in args.paths], args.since, progress=progress)
    if args.json:
        print_json(report.as_dict())
        return 0
    for skipped in report.skipped:
        print(f"skipped {skipped.path}: {skipped.reason}")
    older = f"; {report.older} older file(s) left out" if report.older else ""
    print(f"read {report.files} transcript(s) ({_size(report.raw_bytes)} new): "
          f"{report.slices} slice(s) stored, {report.memories_created} new memories"
          f"{older}; {len(report.skipped)} skipped")
    return 0


def register(sub: Subparsers) -> None:
    parser = command(sub, "backfill", DOC, _run)
    add_home(parser)
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="transcripts or folders of them (default: every transcript "
                             "under transcript_roots)")
    parser.add_argument("--since", type=_days, metavar="DAYS",
                        help="only transcripts changed in the last DAYS days")
    add_json(parser, "the report")
