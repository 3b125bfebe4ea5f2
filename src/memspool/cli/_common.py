"""Small helpers shared by the command modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeAlias

import orjson

__all__ = [
    "Handler", "Subparsers", "add_home", "add_json", "command", "positive_int", "print_json",
]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler: TypeAlias = Callable[[argparse.Namespace], int]


def add_home(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: a --home given before the command name (`memspool --home H
    # status`) is not overwritten by this one's default.
    parser.add_argument("--home", type=Path, default=argparse.SUPPRESS,
                        help="memspool home folder "
                             "(default: MEMSPOOL_HOME, else the user data folder)")


def add_json(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    parser.add_argument("--json", action="store_true",
                        help=f"print {what} as JSON (errors as {{\"ok\": false, \"error\": ...}})")


def positive_int(value: str) -> int:
    """An argparse ``type`` for counts and limits: a whole number of at least 1."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {value!r}")
    return number


def print_json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def command(sub: Subparsers, name: str, doc: str, handler: Handler | None, *,
            hidden: bool = False) -> argparse.ArgumentParser:
    """Add subcommand ``name``; its help is ``doc`` (first line short, then an Example:).

    A ``hidden`` command works but is left out of the parent's help (argparse
    lists a subcommand only when it is given a ``help``).
    """
    formatter = argparse.RawDescriptionHelpFormatter
    if hidden:
        parser = sub.add_parser(name, description=doc.strip(), formatter_class=formatter)
    else:
        parser = sub.add_parser(name, description=doc.strip(), formatter_class=formatter,
                                help=doc.strip().splitlines()[0])
    parser.set_defaults(handler=handler)
    return parser
