"""``memspool slices list`` and ``memspool slices show`` (and the old ``captures`` name)."""

from __future__ import annotations

import argparse
import sys

from memspool.cli._common import (
    Handler,
    Subparsers,
    add_home,
    add_json,
    command,
    for_terminal,
    open_service,
    positive_int,
    print_json,
    record_id,
)

DOC = """Inspect the queue of slices (redacted, zstd-compressed pieces of transcripts).

Example:
    memspool slices list --session 491e126e-1e71-469c-ade2-fcc8af567c74
    memspool slices show 3
"""

#: Said on stderr when the old command name is used.
RENAMED_NOTE = "memspool: `captures` was renamed `slices`; use `memspool slices ...`."



def _list(args: argparse.Namespace) -> int:
    with open_service(args.home, readonly=True) as service:
        rows = service.slices(session=args.session, limit=args.limit, queued_only=args.queued)
    if args.json:
        print_json([row.as_dict() for row in rows])
        return 0
    if not rows:
        print("no slices")
        return 0
    width = max(len("session"), *(len(r.session_id) for r in rows))
    print(f"{'id':>5}  {'event':<13} {'session':<{width}} {'agent':<10} {'bytes':>17}  "
          f"{'kept':>4} {'drop':>4}  {'raw':>8} {'text':>7} {'stored':>7}")
    for r in rows:
        span = f"{r.byte_start}-{r.byte_end}"
        print(f"{r.id:>5}  {r.event:<13} {r.session_id:<{width}} "
              f"{(r.agent_id or '-')[:10]:<10} {span:>17}  {r.records_kept:>4} "
              f"{r.records_dropped:>4}  {r.raw_bytes:>8} {r.text_chars:>7} "
              f"{r.stored_bytes:>7}")
    return 0


def _show(args: argparse.Namespace) -> int:
    with open_service(args.home, readonly=True) as service:
        text = service.slice_text(args.id)
    if sys.stdout.isatty():
        # A transcript's escape sequences are shown, not acted on; a pipe gets the text.
        text = for_terminal(text)
    # A terminal or pipe that cannot take a character gets an escape, not a traceback.
    data = (text if text.endswith("\n") else text + "\n").encode("utf-8", "backslashreplace")
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    return 0


def _register(sub: Subparsers, name: str, *, renamed: bool) -> None:
    group = command(sub, name, DOC, None, hidden=renamed)

    def _help(args: argparse.Namespace) -> int:
        # `memspool slices` without a subcommand: show the choices.
        group.print_help()
        return 0

    def _warned(handler: Handler) -> Handler:
        if not renamed:
            return handler

        def wrapper(args: argparse.Namespace) -> int:
            print(RENAMED_NOTE, file=sys.stderr)
            return handler(args)
        return wrapper

    group.set_defaults(handler=_warned(_help))
    inner = group.add_subparsers(dest="slices_command", metavar="SUBCOMMAND")
    listing = command(
        inner, "list",
        "List slices, newest first.\n\nExample:\n    memspool slices list --json",
        _warned(_list),
    )
    add_home(listing)
    listing.add_argument("--session", help="only this session's slices")
    listing.add_argument("--limit", type=positive_int, default=50,
                         help="at most this many (default 50)")
    listing.add_argument("--queued", action="store_true", help="only slices not yet digested")
    add_json(listing, "the slices")
    show = command(
        inner, "show",
        "Print one slice's decompressed, redacted text.\n\n"
        "Example:\n    memspool slices show 3",
        _warned(_show),
    )
    add_home(show)
    show.add_argument("id", type=record_id, help="slice id (see `memspool slices list`)")


def register(sub: Subparsers) -> None:
    _register(sub, "slices", renamed=False)
    _register(sub, "captures", renamed=True)
