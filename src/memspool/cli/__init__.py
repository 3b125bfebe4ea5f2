"""The ``memspool`` command line: thin wrappers that parse, call the library, print.

Each module here registers one command (or one group) through
``register(subparsers)``; its handler returns the process exit code.
Library errors become a one-line message and exit code 1 only here, at the edge.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from memspool import __version__
from memspool.config import private_umask
from memspool.errors import MemspoolError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    # Imported here so `memspool --version` stays quick.
    from memspool.cli import capture, captures, demo, drainer, install, redact, status

    parser = argparse.ArgumentParser(
        prog="memspool",
        description="Crash-safe memory capture for AI coding agents.",
    )
    parser.add_argument("--version", action="version", version=f"memspool {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (demo, install, drainer, status, captures, redact, capture):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    # Whatever a command creates under the home (store, logs, config, demo
    # transcripts) is the user's alone.
    private_umask()
    try:
        code: int = args.handler(args)
    except MemspoolError as exc:
        print(f"memspool: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (`| head`) went away; say nothing more on a closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
