"""``memspool captures list`` and ``memspool captures show``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memspool.captures import capture_text, list_captures
from memspool.cli._common import add_home, command, print_json
from memspool.config import load_config
from memspool.store import connect

DOC = """Inspect the capture queue (captures are stored redacted and zstd-compressed).

Example:
    memspool captures list --session 491e126e-1e71-469c-ade2-fcc8af567c74
    memspool captures show 3
"""


def _list(args: argparse.Namespace) -> int:
    conn = connect(load_config(args.home))
    try:
        rows = list_captures(conn, session=args.session, limit=args.limit, queued_only=args.queued)
    finally:
        conn.close()
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("no captures")
        return 0
    print(f"{'id':>5}  {'event':<13} {'session':<14} {'agent':<10} {'bytes':>17}  "
          f"{'kept':>4} {'drop':>4}  {'raw':>8} {'text':>7} {'stored':>7}")
    for r in rows:
        span = f"{r['byte_start']}-{r['byte_end']}"
        print(f"{r['id']:>5}  {r['event']:<13} {r['session_id'][:14]:<14} "
              f"{(r['agent_id'] or '-')[:10]:<10} {span:>17}  {r['records_kept']:>4} "
              f"{r['records_dropped']:>4}  {r['raw_bytes']:>8} {r['text_chars']:>7} "
              f"{r['stored_bytes']:>7}")
    return 0


def _show(args: argparse.Namespace) -> int:
    conn = connect(load_config(args.home))
    try:
        text = capture_text(conn, args.id)
    finally:
        conn.close()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def register(sub: Any) -> None:
    group = command(sub, "captures", DOC, None)

    def _help(args: argparse.Namespace) -> int:
        # `memspool captures` without a subcommand: show the choices, exit 2.
        group.print_help()
        return 2

    group.set_defaults(handler=_help)
    inner = group.add_subparsers(dest="captures_command", metavar="SUBCOMMAND")
    listing = command(
        inner, "list",
        "List captures, newest first.\n\nExample:\n    memspool captures list --json",
        _list,
    )
    add_home(listing)
    listing.add_argument("--session", help="only this session's captures")
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    listing.add_argument("--queued", action="store_true", help="only captures not yet digested")
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = command(
        inner, "show",
        "Print one capture's decompressed, redacted text.\n\n"
        "Example:\n    memspool captures show 3",
        _show,
    )
    add_home(show)
    show.add_argument("id", type=int, help="capture id (see `memspool captures list`)")
