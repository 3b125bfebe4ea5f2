"""The ``memspool`` command line: thin wrappers that parse, call the library, print.

Each module here registers one command (or one group) through
``register(subparsers)``; its handler returns the process exit code. Every
failure is reported here, at the edge, the same way: one sentence on stderr
that says what to do, exit 1; with ``--json`` (and for ``capture``, whose
answer is JSON), ``{"ok": false, "error": ...}`` on stdout as well, for the
program that reads it.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import orjson

from memspool import __version__
from memspool.base.errors import MemspoolError
from memspool.config import private_umask

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """Usage errors the way every failure is reported: one sentence, exit 1."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"memspool: error: {_said(message)}. See `{self.prog} --help`.\n")


def _said(message: str) -> str:
    """An error as it is said: a refused value it quotes may be a secret pasted into
    the wrong argument (``--limit ghp_...``), and is redacted like anything stored."""
    from memspool.redact import redact

    return redact(message)[0]


def build_parser() -> argparse.ArgumentParser:
    # Imported here so `memspool --version` stays quick.
    from memspool.cli import (
        backfill,
        capture,
        demo,
        doctor,
        drainer,
        install,
        mcp,
        memories,
        recall,
        redact,
        serve,
        slices,
        status,
        team,
    )

    parser = _Parser(
        prog="memspool",
        description="Crash-safe memory capture for AI coding agents.",
    )
    parser.add_argument("--version", action="version", version=f"memspool {__version__}")
    parser.add_argument("--home", type=Path, default=None,
                        help="memspool home folder for any command "
                             "(default: MEMSPOOL_HOME, else the user data folder)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (demo, install, drainer, backfill, status, doctor, recall, slices, memories,
                   redact, capture, mcp, serve, team):
        module.register(sub)
    return parser


def _os_error_message(exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    reason = exc.strerror or str(exc)
    return (f"{reason}{where}. Check that the memspool home is a folder you own and can "
            f"write to, that the disk has room, then run the command again.")


def _store_failure(args: argparse.Namespace, exc: sqlite3.Error) -> MemspoolError:
    from memspool.config import load_config
    from memspool.store import diagnose

    try:
        config = load_config(getattr(args, "home", None))
    except MemspoolError:
        return MemspoolError(f"The store refused the operation: {exc}. `memspool doctor` "
                             f"says what is wrong.")
    return diagnose(config.db_path, exc)


def report_failure(message: str, *, as_json: bool) -> int:
    """Say what went wrong the one way every command does; returns the exit code 1."""
    message = _said(message)
    if as_json:
        sys.stdout.write(orjson.dumps({"ok": False, "error": message}).decode() + "\n")
    # The sentence is for the person at the terminal, whatever a program reads.
    print(f"memspool: error: {message}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:  # noqa: PLR0911 - one exit per failure kind
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    # Whatever a command creates under the home (store, logs, config, demo
    # transcripts) is the user's alone.
    private_umask()
    as_json = bool(getattr(args, "json", False))
    try:
        code: int = args.handler(args)
    except MemspoolError as exc:
        return report_failure(str(exc), as_json=as_json)
    except sqlite3.Error as exc:
        # What is wrong (a full disk, a read-only folder, a damaged file, a deleted
        # WAL) is worth more than a guess that another process holds the store.
        return report_failure(str(_store_failure(args, exc)), as_json=as_json)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (`| head`) went away; say nothing more on a closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        return report_failure(_os_error_message(exc), as_json=as_json)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
