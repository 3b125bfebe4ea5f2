"""``memspool memories list|show|edit|pin|unpin|forget|export|import`` and ``memspool
maintain``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memspool.base.errors import NotFound, PayloadError
from memspool.base.kinds import LAYERS, NOTE_TYPES
from memspool.cli._common import (
    Subparsers,
    add_home,
    add_json,
    command,
    for_terminal,
    open_service,
    positive_int,
    print_json,
    record_id,
    unknown_project,
    unknown_project_hint,
)
from memspool.distill import LlmOptions
from memspool.distill.keys import whole_summary

if TYPE_CHECKING:
    from memspool.results import Corrected
    from memspool.store.memories import Memory

MEMORIES_DOC = """List, show, correct, pin, forget, export and import memories.

Example:
    memspool memories list --project api --layer canonical
    memspool memories show 12
    memspool memories edit 12 --type decision
    memspool memories export > memories.jsonl
"""

EDIT_DOC = """Correct a memory: its summary, its text or its type.

With no option, the memory opens in your editor (VISUAL, else EDITOR): its
type, its summary and its text; save and quit to correct it, empty the file
to cancel. What it held goes to its history first (reason `edited`); the new text is
redacted like any save, and the context block is rendered again at once. An
option left out keeps what the memory holds, so `--type` alone changes only
the heading it is shown under. The summary is the line the context block
shows: at most 300 characters, refused (never cut) past that. A summary of
eight words or fewer that ends no sentence reads as a title, and the block
shows it leading the text ("Deploys: use make deploy ...").

Example:
    memspool memories edit 12
    memspool memories edit 12 --type decision
    memspool memories edit 12 --summary "Deploys go through make deploy, never kubectl."
    memspool memories edit 12 --text-file fix.md
"""

PIN_DOC = """Pin a memory: decay never archives it.

A pinned memory that was archived comes back into recall, canonical: you
vouched for it. `memspool memories unpin` lets it decay again.

Example:
    memspool memories pin 12
"""

MAINTAIN_DOC = """Digest queued slices into memory, then keep memory true (merge, supersede, decay).

The minor pass turns every queued slice into memories by the transcript
rules (or --llm); the major pass then looks at what changed since the last
pass: merges near-duplicates, reconciles same-headline siblings, raises
confidence when distinct sessions agree, supersedes the older side of a
contradiction, promotes buffer memories to canonical, and archives what
decayed. The systemd timer memspool-maintain.timer runs it hourly.
--reindex gives every memory a vector of the current model (semantic recall).

Example:
    memspool maintain --json
    memspool maintain --reindex
"""



def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds)) if seconds else "-"


def _list(args: argparse.Namespace) -> int:
    with open_service(args.home, readonly=True) as service:
        found = service.memories(project=args.project, type=args.type, layer=args.layer,
                                 limit=args.limit, origin=args.origin)
        if not found:
            unknown_project_hint(service, args.project)
    if args.json:
        print_json([row.as_dict() for row in found])
        return 0
    if not found:
        print("no memories")
        return 0
    for row in found:
        m = row.memory
        who = f" (from {row.origin['user']})" if row.origin else ""
        print(f"{m.id:>6}  {m.layer:<10} {m.type:<10} {m.sessions:>2} session(s)  "
              f"conf {m.confidence:.2f}  {'pinned  ' if row.pinned else ''}"
              f"{for_terminal(row.project_name, one_line=True)}: "
              f"{for_terminal(m.summary, one_line=True)}{who}")
    return 0


def _print_text(summary: str, body: str) -> None:
    """A memory's text, under its summary when the text does not start with it (a
    summary a person edited, a title)."""
    if not " ".join(body.split()).lower().startswith(" ".join(summary.split()).lower()):
        print(f"summary: {for_terminal(summary, one_line=True)}")
    print(for_terminal(body))


def _tier_line(memory: dict[str, Any]) -> str:
    """Which tier of recall the memory is in, and why (docs/recall.md, "Two tiers")."""
    where = {"strict": "in the context block (the strict tier)",
             "searchable": "searchable only, not in the context block",
             "out of recall": "out of recall (search --all finds it)"}[memory["tier"]]
    if memory["tier"] == "strict" and not memory["in_context_block"]:
        where = "strict tier, past the context block's budget (search finds it)"
    return f"{where}: {memory['tier_why']}"


def _show(args: argparse.Namespace) -> int:
    with open_service(args.home, readonly=True) as service:
        memory = service.get(args.id).as_dict()
    if args.json:
        print_json(memory)
        return 0
    print(f"#{memory['id']} {memory['type']} in "
          f"{for_terminal(memory['project_name'], one_line=True)} "
          f"[{for_terminal(memory['project'], one_line=True)}] ({memory['layer']}"
          + (f", superseded by #{memory['superseded_by']}" if memory["superseded_by"] else "")
          + (", pinned" if memory["pinned"] else "")
          + (f", edited {_when(memory['edited_at'])}" if memory["edited_at"] else "")
          + f"); key {for_terminal(memory['key'], one_line=True)}")
    print(f"confidence {memory['confidence']:.2f}, importance {memory['importance']:.2f}, "
          f"clarity {memory['clarity']:.2f}, "
          f"{memory['sessions']} session(s); created {_when(memory['created_at'])}, "
          f"changed {_when(memory['updated_at'])}")
    print(_tier_line(memory))
    print()
    _print_text(memory["summary"], memory["body"])
    # Each earlier text, with the type it had when that differs from the one after it.
    history = memory["history"]
    for entry, later in zip(history, [*history[1:], memory], strict=False):
        was = f", type {entry['type']}" if entry["type"] != later["type"] else ""
        print(f"\n-- before {_when(entry['at'])} ({entry['reason']}{was}):")
        _print_text(entry["summary"], entry["body"])
    print("\nprovenance:")
    for p in memory["provenance"]:
        where = f" slice {p['slice_id']}" if p["slice_id"] else ""
        print(f"  {_when(p['at'])} {p['action']:<8} session "
              f"{for_terminal(p['session'], one_line=True)} "
              f"({for_terminal(p['source'], one_line=True)}{where})")
    return 0


#: How much of a forgotten memory's summary the confirmation repeats.
FORGOT_SUMMARY_CHARS = 120


def _forget(args: argparse.Namespace) -> int:
    with open_service(args.home, existing=True) as service:
        result = service.forget(args.id, purge_source=args.purge_source)
        name = service.project_names([result.project]).get(result.project, result.project)
    if args.json:
        print_json(result.as_dict())
        return 0
    # The project by its readable name, the summary whole or cut at a sentence end,
    # as every other listing shows them.
    summary = whole_summary(result.summary, FORGOT_SUMMARY_CHARS)
    print(f"forgot #{result.forgotten} ({for_terminal(name, one_line=True)}: "
          f"{for_terminal(summary, one_line=True)})")
    if args.purge_source:
        print(f"scrubbed its text from {result.slices_scrubbed} slice(s) it came from")
    if not result.wal_cleared:
        print("warning: another process was reading the store, so its write-ahead log "
              "(memspool.db-wal) may still hold the text until that process closes it or "
              "the next forget", file=sys.stderr)
    return 0


def _given_text(args: argparse.Namespace) -> str | None:
    """The new text of ``--text``, or of the file (or stdin) ``--text-file`` names."""
    if args.text_file is None:
        return args.text  # type: ignore[no-any-return]
    try:
        raw = (sys.stdin.buffer.read() if args.text_file == "-"
               else Path(args.text_file).read_bytes())
    except OSError as exc:
        raise PayloadError(f"Cannot read {args.text_file}: {exc.strerror or exc}. "
                           f"Nothing was changed.") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        source = "stdin" if args.text_file == "-" else args.text_file
        raise PayloadError(f"{source} is not UTF-8 text (byte {exc.start}). "
                           f"Nothing was changed.") from None


def _edit(args: argparse.Namespace) -> int:
    text = _given_text(args)
    if args.summary is None and text is None and args.type is None:
        return _edit_in_editor(args)
    with open_service(args.home, existing=True) as service:
        # Read as the web page reads it: looking at a memory to correct it is no recall.
        was = service.memory_page(args.id).memory
        result = service.correct(args.id, summary=args.summary, body=text, type=args.type)
        now = service.memory_page(args.id).memory
    return _edited(args, was, result, now)


def _edit_in_editor(args: argparse.Namespace) -> int:
    """``edit ID`` with no option: the memory in the person's editor (cli/editor.py)."""
    from memspool.cli.editor import discard, write_and_edit

    with open_service(args.home, existing=True) as service:
        was = service.memory_page(args.id).memory
    fields, draft = write_and_edit(was, os.environ)  # the store is not held meanwhile
    if fields is None:
        discard(draft)
        if args.json:
            print_json({"ok": True, "id": was.id, "changed": False})
        else:
            print(f"#{was.id} unchanged: the draft was left empty")
        return 0
    kind, summary, body = fields
    try:
        with open_service(args.home, existing=True) as service:
            held = service.memory_page(args.id).memory
            if (held.type, held.summary, held.body) != (was.type, was.summary, was.body):
                raise PayloadError(f"Memory #{was.id} changed while it was in the editor, "
                                   f"so nothing was saved over it.")
            result = service.correct(args.id, summary=summary, body=body, type=kind)
            now = service.memory_page(args.id).memory
    except PayloadError as exc:
        raise PayloadError(f"{exc} The draft is kept in {draft}.") from None
    discard(draft)
    return _edited(args, was, result, now)


def _edited(args: argparse.Namespace, was: Memory, result: Corrected, now: Memory) -> int:
    """Say what an edit changed."""
    if args.json:
        print_json({"ok": True, "id": result.id, "changed": result.changed})
        return 0
    if not result.changed:
        print(f"#{now.id} unchanged: it already says that")
        return 0
    changed = ([f"the type (was {was.type})"] if now.type != was.type else []) + [
        name for name, old, new in (("the summary", was.summary, now.summary),
                                    ("the text", was.body, now.body)) if old != new]
    print(f"edited #{now.id} ({now.type}): {', '.join(changed)}")
    print(f"  summary: {for_terminal(now.summary, one_line=True)}")
    if now.body != was.body and now.summary == was.summary:
        print("  (the summary is as it was: --summary changes it)")
    return 0


def _pin(args: argparse.Namespace, on: bool) -> int:
    with open_service(args.home, existing=True) as service:
        was = service.memory_page(args.id)  # no recall, as the web page reads it
        result = service.pin(args.id, on)
    if args.json:
        print_json(result.as_dict())
        return 0
    if not on:
        print(f"unpinned #{result.id}: it decays like any memory again"
              if result.changed else f"#{result.id} was not pinned")
        return 0
    back = (" It was archived and is back in recall, canonical."
            if was.memory.layer == "archived" else "")
    print(f"pinned #{result.id}: decay never archives it." + back
          if result.changed else f"#{result.id} was pinned already")
    return 0


def _export(args: argparse.Namespace) -> int:
    with open_service(args.home, readonly=True) as service:
        unknown = unknown_project(service, args.project)
        if unknown is not None:
            # An empty file from a typo would read as a backup of nothing, and the
            # next step of a backup is often removing the home.
            raise NotFound(f"{unknown[0].upper()}{unknown[1:]}. Nothing was exported.")
        out = sys.stdout.buffer
        for line in service.export(args.project):
            out.write(line)
    return 0


def _import(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    path = Path(args.file)
    try:
        handle = sys.stdin.buffer if args.file == "-" else path.open("rb")
    except OSError as exc:
        raise PayloadError(f"Cannot read {args.file}: {exc.strerror or exc}.") from None
    from memspool.archivist.transfer import read_lines

    total = None
    if args.file != "-" and path.is_file() and sys.stderr.isatty():
        with path.open("rb") as counting:  # line ends counted a block at a time
            total = sum(block.count(b"\n") for block in iter(lambda: counting.read(1 << 20), b""))
    with handle, open_service(args.home) as service, tqdm(
            total=total, unit=" memories", disable=not sys.stderr.isatty(),
            file=sys.stderr) as bar:
        # Importing into a new home is a restore; said, since a mistyped --home is one too.
        new_home = not service.config.db_path.exists()
        report = service.import_lines(read_lines(handle), progress=bar.update, trust=args.trust)
    if new_home:
        print(f"memspool: made a new home at {for_terminal(str(service.config.home))} for "
              f"this import (no store was there)", file=sys.stderr)
    if args.json:
        print_json({"ok": True, **report.as_dict()})
    else:
        print(f"imported {report.lines} line(s): {report.created} new, {report.updated} "
              f"updated, {report.unchanged} unchanged"
              + (f", {report.forgotten} left out (forgotten here on purpose; `memspool "
                 f"capture` brings one back)" if report.forgotten else ""))
    return 0


def _maintain(args: argparse.Namespace) -> int:
    llm = None
    if args.llm or args.llm_endpoint or args.llm_model:
        llm = LlmOptions(endpoint=args.llm_endpoint or "", model=args.llm_model or "")
    with open_service(args.home, existing=True) as service:
        result = service.maintain(llm=llm, reindex=args.reindex)
    if args.json:
        print_json(result.as_dict())
        return 0
    d, m = result.digest, result.maintain
    print(f"digested {d.slices} slice(s): {d.created} new memories, {d.updated} "
          f"updated, {d.merged} merged, {d.skipped} skipped; "
          f"{len(d.without_memory)} slice(s) gave none")
    print(f"maintained: looked at {m.examined} changed memories; {m.siblings} sibling(s) "
          f"and {m.merged} duplicate(s) folded, {m.superseded} superseded, "
          f"{m.corroborated} corroborated, {m.promoted} promoted, {m.archived} "
          f"archived ({m.seconds:.3f} s)")
    if result.reindex is not None:
        r = result.reindex
        print(f"reindexed: {r.embedded} memories embedded with model {r.model} "
              f"({r.secs:.1f} s)")
    return 0


def _register_corrections(inner: Subparsers) -> None:
    """``memories edit``, ``pin`` and ``unpin``: a person's corrections."""
    edit = command(inner, "edit", EDIT_DOC, _edit)
    add_home(edit)
    edit.add_argument("id", type=record_id, help="memory id")
    edit.add_argument("--summary", metavar="TEXT", help="the new summary (one line)")
    text = edit.add_mutually_exclusive_group()
    text.add_argument("--text", metavar="TEXT", help="the new text of the memory")
    text.add_argument("--text-file", metavar="FILE",
                      help="the new text from a UTF-8 file ('-' for stdin)")
    edit.add_argument("--type", choices=NOTE_TYPES, help="the new type")
    add_json(edit)
    pin = command(inner, "pin", PIN_DOC, lambda args: _pin(args, True))
    add_home(pin)
    pin.add_argument("id", type=record_id, help="memory id")
    add_json(pin)
    unpin = command(inner, "unpin", "Unpin a memory: it decays like any other again.\n\n"
                    "Example:\n    memspool memories unpin 12", lambda args: _pin(args, False))
    add_home(unpin)
    unpin.add_argument("id", type=record_id, help="memory id")
    add_json(unpin)


def register(sub: Subparsers) -> None:
    group = command(sub, "memories", MEMORIES_DOC, None)

    def _help(args: argparse.Namespace) -> int:
        group.print_help()
        return 0

    group.set_defaults(handler=_help)
    inner = group.add_subparsers(dest="memories_command", metavar="SUBCOMMAND")
    listing = command(inner, "list", "List memories, most recently changed first.\n\n"
                      "Example:\n    memspool memories list --type pitfall --json", _list)
    add_home(listing)
    listing.add_argument("--project", help="only this project's memories")
    mine = listing.add_mutually_exclusive_group()
    mine.add_argument("--mine", dest="origin", action="store_const", const="mine",
                      help="only memories learned here or by your team role")
    mine.add_argument("--team", dest="origin", action="store_const", const="team",
                      help="only memories teammates shared")
    listing.add_argument("--type", choices=NOTE_TYPES, help="only memories of this type")
    listing.add_argument("--layer", choices=LAYERS, help="only memories in this layer")
    listing.add_argument("--limit", type=positive_int, default=100,
                         help="at most this many (default 100)")
    add_json(listing, "the memories")
    show = command(inner, "show", "Show one memory with its history and provenance, and "
                   "whether the context block lists it and why.\n\n"
                   "Example:\n    memspool memories show 12", _show)
    add_home(show)
    show.add_argument("id", type=record_id, help="memory id (see `memspool memories list`)")
    add_json(show, "the memory")
    _register_corrections(inner)
    forget = command(inner, "forget", "Forget a memory: gone from the store and from recall; "
                     "digesting transcripts again does not bring it back.\n\n"
                     "Its text leaves every table, index and the database file (the WAL is\n"
                     "checkpointed); --purge-source also replaces it with [FORGOTTEN] in the\n"
                     "slices it was made from. Ids are never reused: forgetting the same id\n"
                     "again says there is no such memory.\n\n"
                     "Example:\n    memspool memories forget 12 --purge-source", _forget)
    add_home(forget)
    forget.add_argument("id", type=record_id, help="memory id")
    forget.add_argument("--purge-source", action="store_true",
                        help="also scrub its text (whole and line by line, earlier texts "
                             "too) from the slices it came from")
    add_json(forget)
    export = command(inner, "export", "Write memories as JSONL on stdout, one a line.\n\n"
                     "Example:\n    memspool memories export --project api > api.jsonl",
                     _export)
    add_home(export)
    export.add_argument("--project", help="only this project's memories")
    imported = command(inner, "import", "Import memories from a JSONL export (idempotent).\n\n"
                       "A file is untrusted input: its text is redacted and stripped of\n"
                       "control characters, and each memory lands as provisional memory\n"
                       "(buffer, confidence 0.5, one import session) that the archivist\n"
                       "still has to corroborate, whatever layer and confidence the file\n"
                       "claims. --trust keeps the file's layer, confidence, importance,\n"
                       "times and provenance: only for a file you made yourself.\n\n"
                       "Example:\n    memspool memories import api.jsonl\n"
                       "    memspool memories export | memspool --home ~/new memories import - "
                       "--trust", _import)
    add_home(imported)
    imported.add_argument("file", help="the JSONL file ('-' for stdin)")
    imported.add_argument("--trust", action="store_true",
                          help="keep the file's layer, confidence, importance, times and "
                               "provenance (a file you exported yourself)")
    add_json(imported)

    maintain = command(sub, "maintain", MAINTAIN_DOC, _maintain)
    add_home(maintain)
    add_json(maintain)
    maintain.add_argument("--llm", action="store_true",
                          help="digest slices with the configured LLM; on any failure the "
                               "transcript rules run")
    maintain.add_argument("--llm-endpoint", metavar="URL", help="implies --llm")
    maintain.add_argument("--llm-model", metavar="M", help="implies --llm")
    maintain.add_argument("--reindex", action="store_true",
                          help="embed every memory that has no vector from the current model "
                               "(after installing the semantic extra or changing the model)")
