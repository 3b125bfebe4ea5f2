"""``memspool redact``: the redactor as a filter, for checking text before it goes anywhere."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, BinaryIO, Final

from memspool.base.errors import PayloadError
from memspool.cli._common import Subparsers, command
from memspool.redact import redact

DOC = """Redact secrets from stdin (or --file) and write the result to stdout.

Each secret becomes [REDACTED:<family>]; everything else, including bytes
that are not UTF-8, comes out unchanged. With --json, print
{"text": ..., "counts": {family: n}} instead. What no rule recognises goes
through: treat a secret that was pasted anywhere as exposed, and rotate it.
One run reads at most 64 MiB; a larger input is refused, not cut.

Example:
    memspool redact < session.jsonl > session.redacted.jsonl
    memspool redact --file .env --json
"""

#: Undecodable bytes become lone surrogates and are encoded back to the same bytes, so
#: the filter neither fails on nor alters text that is not UTF-8.
_ERRORS = "surrogateescape"
#: The most one run reads: the text, its decoded copy and the redacted one are held
#: at once (a few hundred MB at this size), and an endless input (`/dev/zero`, a
#: pipe that never closes) must end in an error, not in the machine's memory.
MAX_REDACT_BYTES: Final = 64 * 1024 * 1024


def _bounded(stream: BinaryIO, name: str) -> bytes:
    # One byte past the limit says it is too big without reading the rest.
    data = stream.read(MAX_REDACT_BYTES + 1)
    if len(data) > MAX_REDACT_BYTES:
        raise PayloadError(f"{name} is larger than {MAX_REDACT_BYTES} bytes (64 MiB), the most "
                           f"one redact reads. Split it (for example with split -l) and redact "
                           f"each part.")
    return data


def _read(args: argparse.Namespace) -> bytes:
    if args.file is None or args.file == "-":
        return _bounded(sys.stdin.buffer, "stdin")
    try:
        with Path(args.file).open("rb") as handle:
            return _bounded(handle, args.file)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise PayloadError(f"Cannot read {args.file}: {reason}. Check the path.") from None


def _run(args: argparse.Namespace) -> int:
    data = _read(args)
    text, counts = redact(data.decode("utf-8", _ERRORS))
    if args.json:
        # ensure_ascii keeps undecodable bytes (lone surrogates) representable in JSON.
        report: dict[str, Any] = {"text": text, "counts": counts}
        sys.stdout.write(json.dumps(report, ensure_ascii=True) + "\n")
    else:
        sys.stdout.buffer.write(text.encode("utf-8", _ERRORS))
    sys.stdout.flush()
    return 0


def register(sub: Subparsers) -> None:
    parser = command(sub, "redact", DOC, _run)
    parser.add_argument("--file", "-f", metavar="F", default=None,
                        help="read this file instead of stdin ('-' is stdin)")
    parser.add_argument("--json", action="store_true",
                        help='print {"text": ..., "counts": {family: n}}')
