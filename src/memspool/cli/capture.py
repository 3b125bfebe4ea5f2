"""``memspool capture``: distil a payload into durable memory notes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import BinaryIO

from memspool.archivist import CaptureOptions
from memspool.base.errors import PayloadError
from memspool.cli._common import Subparsers, add_home, command, open_service
from memspool.distill import MAX_NOTES, MAX_PAYLOAD_BYTES, LlmOptions
from memspool.distill.payload import note_cap
from memspool.untrusted import whole_number

DOC = f"""Distil a payload (stdin, or --file) into durable memory notes; print a JSON report.

The payload is redacted, split (JSONL records, markdown sections, or
paragraphs; learnings sections one note per item), classified and keyed;
each note updates the memory with its key, merges into a near-duplicate, or
becomes a new provisional memory. At most {MAX_NOTES} notes per call.

Example:
    echo "Pitfall: requests has no default timeout" | memspool capture --project api
    memspool capture --file notes.md --dry-run
    memspool capture --passive < answer.md
"""


def _read_payload(stream: BinaryIO, name: str) -> str:
    # One byte past the limit is enough to know it is too big, without slurping a 50 MB file.
    data = stream.read(MAX_PAYLOAD_BYTES + 1)
    if len(data) > MAX_PAYLOAD_BYTES:
        raise PayloadError(
            f"{name} is larger than {MAX_PAYLOAD_BYTES} bytes (4 MiB), the most one capture "
            f"takes. Split it into smaller captures."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PayloadError(
            f"{name} is not UTF-8 (byte {exc.start}: {data[exc.start:exc.start + 1]!r}). "
            f"Convert it, e.g. with iconv, and capture again."
        ) from None


def _payload(args: argparse.Namespace) -> str:
    if args.file is None or args.file == "-":
        return _read_payload(sys.stdin.buffer, "stdin")
    try:
        with Path(args.file).open("rb") as stream:
            return _read_payload(stream, args.file)
    except OSError as exc:
        raise PayloadError(f"Cannot read {args.file}: {exc.strerror or exc}.") from None


def _max_entities(value: str | None) -> int | None:
    # Checked here rather than by argparse, so a bad value is a failed capture
    # like any other: exit 1 with {"ok": false, "error": ...} on stdout; and by the
    # capture's own check, so it is refused as over HTTP, in the same words.
    if value is None:
        return None
    number = whole_number(value)
    # What was typed goes to the check when it is no count, to be quoted as typed.
    note_cap(number if number is not None and number >= 1 else value, "--max-entities")
    return number


def _run(args: argparse.Namespace) -> int:
    llm = None
    if args.llm or args.llm_endpoint or args.llm_model:
        llm = LlmOptions(endpoint=args.llm_endpoint or "", model=args.llm_model or "")
    max_entities = _max_entities(args.max_entities)
    text = _payload(args)
    with open_service(args.home) as service:
        report = service.capture(
            text, project=args.project, session=args.session, source=args.source,
            options=CaptureOptions(dry_run=args.dry_run, max_entities=max_entities,
                                   passive=args.passive, llm=llm),
        )
    sys.stdout.write(report.to_json() + "\n")
    return 0


def register(sub: Subparsers) -> None:
    parser = command(sub, "capture", DOC, _run)
    # The report is JSON already, so a failure is JSON too: {"ok": false, "error": ...}.
    parser.set_defaults(json=True)
    add_home(parser)
    parser.add_argument("--file", metavar="F", help="read the payload from F (default: stdin)")
    parser.add_argument("--project", metavar="P",
                        help="project the notes belong to: its name, identity or folder "
                             "(default: the current folder's repository)")
    parser.add_argument("--session", metavar="S",
                        help="session for provenance (default: manual-save-<project>)")
    parser.add_argument("--source", metavar="SRC", help="source for provenance (default: manual)")
    parser.add_argument("--dry-run", action="store_true",
                        help="report what would happen and write nothing")
    parser.add_argument("--max-entities", metavar="N", default=None,
                        help=f"at most N notes, N a whole number of at least 1 (can lower the "
                             f"cap of {MAX_NOTES}, never raise it: a larger N means {MAX_NOTES})")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--passive", action="store_true",
                       help='only learnings sections, saved as passive memories; prints '
                            '{"saved", "skipped", "total"}')
    modes.add_argument("--llm", action="store_true",
                       help="distil with an LLM first; on any failure the rules run "
                            "and the report says why (llm_fallback)")
    parser.add_argument("--llm-endpoint", metavar="URL",
                        help="Ollama .../api/generate or OpenAI-compatible "
                             ".../v1/chat/completions (default: llm_endpoint in config.toml); "
                             "implies --llm")
    parser.add_argument("--llm-model", metavar="M",
                        help="model name (default: llm_model in config.toml); implies --llm")
