"""``memspool search`` and ``memspool context``."""

from __future__ import annotations

import argparse
import sys

from memspool.base.errors import PayloadError
from memspool.base.kinds import NOTE_TYPES
from memspool.cli._common import (
    Subparsers,
    add_home,
    add_json,
    bounded_int,
    command,
    for_terminal,
    open_service,
    print_json,
    unknown_project_hint,
)
from memspool.results import CONTEXT_CHARS, SEARCH_LIMIT, SEARCH_OFFSET

SEARCH_DOC = """Search memories (never slices); every project unless --project is given.

Any text is safe to search: quotes, parentheses and words like NOT are only
words. Identifiers are found by their parts (SparklineChart, get_user_by_id,
src/db/pool.py), and a concept map adds words for the same trouble
(slow/latency/timeout) with less weight than your own. --all adds
superseded and archived memories.

Each line shows how well the memory answers the query, from 0% to 100%:
the share of the query it holds, by weight (with semantic recall, blended
with how near its meaning is). A query no memory answers well prints
"no memory matches".

Example:
    memspool search "refunds counted twice" --project shop
    memspool search imageGCHighThreshold --json
"""

CONTEXT_DOC = """Print a project's context block: its most useful memories, as a session sees them.

The block is the one the SessionStart hook injects (rendered when memory
changes): canonical and high-confidence memories first, grouped by type,
each with its id.

Example:
    memspool context --project shop --max-chars 4000
"""



def _search(args: argparse.Namespace) -> int:
    if not args.query.strip():
        raise PayloadError("The query is empty: give the words to look for "
                           "(`memspool search 'stale connections'`).")
    with open_service(args.home, readonly=True) as service:
        page = service.search(args.query, project=args.project, type=args.type,
                              limit=args.limit, offset=args.offset, include_all=args.all)
        if not page.results:
            unknown_project_hint(service, args.project)
    if args.json:
        print_json(page.as_dict())
        return 0
    if not page.results:
        print("no memory matches")
        return 0
    for hit in page.results:
        layer = "" if hit.layer in ("buffer", "canonical") else f" [{hit.layer}]"
        print(f"{hit.id:>6}  {round(100 * hit.score):>3d}%  "
              f"{for_terminal(hit.project_name, one_line=True)}/{hit.type}{layer}: "
              f"{for_terminal(hit.summary, one_line=True)}")
    if page.more:
        print(f"more: --offset {page.offset + len(page.results)}", file=sys.stderr)
    return 0


def _context(args: argparse.Namespace) -> int:
    with open_service(args.home, readonly=True) as service:
        block = service.context(args.project, max_chars=args.max_chars)
        project, text = block.project, block.text
        if not text:
            unknown_project_hint(service, args.project)
    if args.json:
        print_json({"project": project, "text": text})
    elif text:
        sys.stdout.write(for_terminal(text))
    else:
        print(f"no memories in recall for the project {for_terminal(project, one_line=True)}",
              file=sys.stderr)
    return 0


def register(sub: Subparsers) -> None:
    search = command(sub, "search", SEARCH_DOC, _search)
    add_home(search)
    search.add_argument("query", help="what to look for")
    search.add_argument("--project", help="only this project's memories")
    search.add_argument("--type", choices=NOTE_TYPES, help="only memories of this type")
    search.add_argument("--limit", type=bounded_int(SEARCH_LIMIT), default=SEARCH_LIMIT.default,
                        help=f"at most N (default {SEARCH_LIMIT.default}; "
                             f"at most {SEARCH_LIMIT.most} a call)")
    search.add_argument("--offset", type=bounded_int(SEARCH_OFFSET), default=0,
                        help="skip the first N results (the next page)")
    search.add_argument("--all", action="store_true",
                        help="also superseded and archived memories")
    add_json(search, "the results")
    context = command(sub, "context", CONTEXT_DOC, _context)
    add_home(context)
    context.add_argument("--project",
                         help="the project: its name, identity or folder "
                              "(default: the current folder's repository)")
    context.add_argument("--max-chars", type=bounded_int(CONTEXT_CHARS), default=None,
                         help=f"the block's limit, {CONTEXT_CHARS.least} to "
                              f"{CONTEXT_CHARS.most} characters (default: context_max_chars, "
                              f"{CONTEXT_CHARS.default})")
    add_json(context, "the block")
