"""Small helpers shared by the command modules."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson


def add_home(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", type=Path, default=None,
                        help="memspool home folder "
                             "(default: MEMSPOOL_HOME, else the user data folder)")


def print_json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def command(sub: Any, name: str, doc: str, handler: Any) -> argparse.ArgumentParser:
    """Add subcommand ``name``; its help is ``doc`` (first line short, then an Example:)."""
    summary = doc.strip().splitlines()[0]
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=summary, description=doc.strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=handler)
    return parser
