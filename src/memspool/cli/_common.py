"""Small helpers shared by the command modules."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import orjson

from memspool.base.controls import BIDI, CONTROLS, LINE_SEPARATORS, TAGS
from memspool.untrusted import whole_number

if TYPE_CHECKING:
    from memspool.results import Bound
    from memspool.service import Service

__all__ = [
    "Handler", "Subparsers", "add_home", "add_json", "bounded_int", "command", "for_terminal",
    "non_negative_int", "open_service", "positive_int", "print_json", "record_id",
    "unknown_project", "unknown_project_hint",
]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler: TypeAlias = Callable[[argparse.Namespace], int]


def open_service(home: Path | None, *, readonly: bool = False,
                 existing: bool = False) -> Service:
    """The service over ``home`` (see :class:`~memspool.service.Service` for ``readonly``
    and ``existing``). Loaded when a command runs, not when the parser is built:
    ``memspool --help`` and ``--version`` do not load the library."""
    from memspool.service import Service

    return Service(home, readonly=readonly, existing=existing)


def unknown_project(service: Service, given: str | None) -> str | None:
    """When ``--project`` names a project the store has never seen (a typo, most
    often), the sentence that says so and which projects it has; else ``None``."""
    return service.unknown_project(given, lambda text: for_terminal(text, one_line=True))


def unknown_project_hint(service: Service, given: str | None) -> None:
    """On stderr, :func:`unknown_project`'s sentence: an empty answer alone would read
    as "nothing matched" in a project that exists."""
    said = unknown_project(service, given)
    if said is not None:
        print(f"memspool: {said}", file=sys.stderr)


def add_home(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: a --home given before the command name (`memspool --home H
    # status`) is not overwritten by this one's default.
    parser.add_argument("--home", type=Path, default=argparse.SUPPRESS,
                        help="memspool home folder "
                             "(default: MEMSPOOL_HOME, else the user data folder)")


def add_json(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    parser.add_argument("--json", action="store_true",
                        help=f"print {what} as JSON (errors as {{\"ok\": false, \"error\": ...}})")


#: What a terminal would act on instead of printing: C0 controls (ESC, BEL, CR, ...),
#: DEL, C1 controls (CSI), the bidi controls that reorder a line as it shows, and the
#: tag characters that show as nothing.
_TERMINAL_CONTROL: Final = re.compile(f"[{CONTROLS}{BIDI}{LINE_SEPARATORS}{TAGS}]")
#: The same but for the tab and the line feed, which a text of several lines keeps.
_CONTROLS_BUT_LINES: Final = CONTROLS.replace("\t", "").replace("\n", "")
_LINE_CONTROL: Final = re.compile(f"[{_CONTROLS_BUT_LINES}{BIDI}{LINE_SEPARATORS}{TAGS}]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def for_terminal(text: str, *, one_line: bool = False) -> str:
    """``text`` safe to print: every control character shown as an escape (``\\x1b``)
    instead of acted on, so stored text cannot retitle the terminal, clear it, write
    the clipboard (OSC 52) or forge a line. ``one_line``: line breaks and tabs too."""
    return (_TERMINAL_CONTROL if one_line else _LINE_CONTROL).sub(_escaped, text)


# Each number is read by memspool.untrusted.whole_number, as the HTTP API reads
# one: ASCII digits only (int() would also take Arabic-Indic digits, "1_0", "+5").


def positive_int(value: str) -> int:
    """An argparse ``type`` for counts and limits: a whole number of at least 1."""
    number = whole_number(value)
    if number is None or number < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {value!r}")
    return number


def non_negative_int(value: str) -> int:
    """An argparse ``type`` for offsets: a whole number of at least 0."""
    number = whole_number(value)
    if number is None:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 0, got {value!r}")
    return number


def record_id(value: str) -> int:
    """An argparse ``type`` for the id of a memory or a slice: a whole number (one too
    large for any row names none, and the command says so)."""
    number = whole_number(value)
    if number is None:
        raise argparse.ArgumentTypeError(f"must be a whole number (an id), got {value!r}")
    return number


def bounded_int(bound: Bound) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number in ``bound``'s range, the range the HTTP
    API and the MCP server hold the same argument to."""
    def parse(value: str) -> int:
        number = whole_number(value)
        if number is None or not bound.least <= number <= bound.most:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {bound.least} to {bound.most}, got {value!r}")
        return number
    return parse


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
