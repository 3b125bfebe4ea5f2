"""A memory in the person's own editor: ``memspool memories edit ID`` with no option.

The memory is written to a private temporary file (0600): a few lines of
instructions starting with ``#|`` (dropped when it is read back), ``type:``
and the type, the summary on one line, a blank line, then the text. The
program named by ``VISUAL``, else ``EDITOR``, is run on the file, its
arguments split as a shell would split them but never run through one. What
the file holds when the editor exits is the correction; a file left empty
cancels it. A draft that cannot be read, or that the store refuses, is kept
and its path given, so no typing is lost.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from memspool.base.errors import PayloadError
from memspool.base.kinds import NOTE_TYPES
from memspool.store.memories import Memory

__all__ = ["MARK", "Fields", "discard", "draft", "parse", "write_and_edit"]

#: What starts an instruction line of the file (no memory text starts so).
MARK: Final = "#|"
_TYPE: Final = "type:"

Fields = tuple[str, str, str]
"""What a draft says: (type, summary, text)."""


def draft(memory: Memory) -> str:
    """The file the editor opens for ``memory``."""
    return "\n".join((
        f"{MARK} memspool memory #{memory.id}. Lines starting with {MARK} are left out.",
        f"{MARK} First the type, one of: {', '.join(NOTE_TYPES)};",
        f"{MARK} then the summary on one line (at most 300 characters: the line the",
        f"{MARK} context block shows), a blank line, and the text. Save and quit to",
        f"{MARK} correct the memory; empty the file to cancel.",
        f"{_TYPE} {memory.type}", memory.summary, "", memory.body, ""))


def parse(text: str) -> Fields | None:
    """The draft's type, summary and text; ``None`` for a file left empty (cancel). A
    :class:`PayloadError` says what is missing."""
    # Lines as written: a text's own spaces (a markdown line break) are the person's.
    lines = [line for line in text.splitlines() if not line.startswith(MARK)]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return None
    first = lines.pop(0).strip()
    if not first.lower().startswith(_TYPE):
        raise PayloadError(f"The draft's first line must be the type ('{_TYPE} pitfall'), "
                           f"got {first[:60]!r}.")
    kind = first[len(_TYPE):].strip()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        raise PayloadError("The draft has a type but no summary and no text.")
    summary = lines.pop(0).strip()
    return kind, summary, "\n".join(lines).strip("\n")


def _command(env: Mapping[str, str]) -> list[str]:
    named = env.get("VISUAL") or env.get("EDITOR")
    if not named or not named.strip():
        raise PayloadError("Nothing to change: give --summary, --text (or --text-file) or "
                           "--type, or set EDITOR (or VISUAL) to correct the memory in your "
                           "editor.")
    try:
        return shlex.split(named)
    except ValueError as exc:
        raise PayloadError(f"Cannot read the editor's command {named!r}: {exc}.") from None


def write_and_edit(memory: Memory, env: Mapping[str, str]) -> tuple[Fields | None, Path]:
    """Run the editor on ``memory``'s draft; (what the draft says, the draft's path).
    The caller removes the file once the correction is saved (:func:`discard`)."""
    command = _command(env)
    fd, name = tempfile.mkstemp(prefix=f"memspool-memory-{memory.id}-", suffix=".md")
    path = Path(name)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(draft(memory))
    try:
        # The person's own editor, as a program and its arguments: never through a shell.
        done = subprocess.run([*command, str(path)], check=False)
    except OSError as exc:
        discard(path)
        raise PayloadError(f"Cannot run the editor {command[0]!r}: {exc.strerror or exc}. "
                           f"Nothing was changed.") from None
    if done.returncode != 0:
        discard(path)
        raise PayloadError(f"The editor {command[0]!r} exited {done.returncode}; nothing was "
                           f"changed.")
    try:
        return parse(path.read_text(encoding="utf-8")), path
    except (OSError, UnicodeDecodeError) as exc:
        raise PayloadError(f"Cannot read the draft {path}: {exc}. Nothing was changed.") \
            from None
    except PayloadError as exc:
        raise PayloadError(f"{exc} Nothing was changed. The draft is kept in {path}.") \
            from None


def discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
