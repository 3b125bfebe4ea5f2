"""Reading what comes from outside: JSON of any depth, text with lone surrogates.

Hook payloads, transcript lines, capture payloads and LLM replies are all
untrusted. Every one of them is parsed through :func:`parse_json`, which
turns *any* failure (bad syntax, nesting deeper than a parser allows) into
``ValueError``, so one hostile record is skipped like any malformed one and
never escapes a per-record guard as ``RecursionError``. Text that enters the
store passes :func:`no_surrogates` first: a lone UTF-16 surrogate (an emoji
cut in half, ``"\\ud83d"`` in JSON) cannot be encoded as UTF-8, so it would
make a stored slice unshowable. Memory text passes :func:`printable` too:
an escape sequence (ESC, BEL, OSC 52) from a transcript, a capture or an
import must not reach a terminal that prints it, and a carriage return must
not forge a line. A number given as text (an id, a limit) is read by
:func:`whole_number`, ASCII digits only, at every door that takes one.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import orjson

from memspool.base.controls import TAGS

__all__ = [
    "MAX_DIGITS", "REPLACEMENT", "SHOWN_CHARS", "no_surrogates", "parse_json", "printable",
    "shown", "whole_number",
]

#: Characters of a refused value an error quotes at most.
SHOWN_CHARS: Final = 60
#: Digits a whole number from outside has at most: no id or bound comes near 40
#: (SQLite's ids have 19), and int() refuses a number of thousands of digits.
MAX_DIGITS: Final = 40
#: What a lone surrogate becomes: U+FFFD, the Unicode replacement character.
REPLACEMENT: Final = "\ufffd"
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_LINE_BREAK: Final = re.compile("\r\n?")
#: C0 controls but tab and line feed, DEL, and the C1 controls (0x9b is CSI,
#: an escape sequence's start to many terminals); and the tag characters, a copy of
#: ASCII that shows as nothing: a sentence in them is read by a model and seen by
#: no one (the emoji flags of a country's regions are written with them and lose
#: their region: a price paid for never keeping an invisible instruction).
_CONTROL: Final = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{TAGS}]")
#: A whole terminal escape sequence (ECMA-48), so that no part of it is left
#: behind as text ("[31m" in a word would hide the word from search): a
#: control sequence (ESC [, parameters, a final byte); a string (ESC ] OSC,
#: ESC P DCS, SOS, PM, APC: a window title, a clipboard write) up to its
#: terminator, BEL or ESC backslash, when it has one nearby; any other escape (ESC,
#: intermediates, a final byte). Only the 7-bit forms: a lone C1 byte (0x9b,
#: 0x9d) is as often a character of text decoded wrongly, and is removed
#: alone, as every control is. An unterminated string loses only its
#: opening controls. Each match stops at the next ESC, so the cost is linear.
_ESCAPE: Final = re.compile(
    "\x1b\\[[0-?]*[ -/]*[@-~]"
    "|\x1b[\\]PX^_][^\x07\x1b]{0,4096}(?:\x07|\x1b\\\\)"
    "|\x1b[ -/]*[0-~]")


def parse_json(data: str | bytes) -> Any:
    """Parse JSON from outside memspool; ``ValueError`` for anything unusable.

    orjson first (fast); what it refuses is tried once more with the standard
    library, which also accepts escaped lone surrogates and invalid UTF-8
    (replaced), so a record is not lost to one bad character.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested deeper than memspool parses") from None


def no_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD; other text unchanged."""
    return _SURROGATE.sub(REPLACEMENT, text)


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` as memory keeps it: lone surrogates become U+FFFD, CR LF and a lone CR
    become LF, terminal escape sequences are removed whole and every other
    control character but tab and LF is removed, and so are the tag characters; with
    ``one_line`` (a summary, a key, a project) every run of white space becomes one
    blank."""
    text = _CONTROL.sub("", _ESCAPE.sub("", _LINE_BREAK.sub("\n", no_surrogates(text))))
    return " ".join(text.split()) if one_line else text


def whole_number(text: str) -> int | None:
    """``text`` as a whole number when it is ASCII digits and nothing else (at most
    MAX_DIGITS), else ``None``. int() reads more: Arabic-Indic and full-width digits,
    ``1_000``, a sign, blanks around; a number from outside is read the one way
    at every door (the CLI, the HTTP API and its pages, MCP), so what one takes, all
    take."""
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_DIGITS:
        return None
    return int(text)


def shown(value: object) -> str:
    """``value`` as an error quotes it: its repr, cut to ``SHOWN_CHARS`` with its length
    said (a refused value of 100 KB is not sent back whole)."""
    quoted = repr(value)
    if len(quoted) <= SHOWN_CHARS:
        return quoted
    size = len(value) if isinstance(value, str) else len(quoted)
    return f"{quoted[:SHOWN_CHARS]}... ({size} characters)"
