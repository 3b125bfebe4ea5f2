"""Which memories were recalled, and when: the clock importance decays from.

Recall happens where the store is only read (a search, a `show`, the
recall hook), so a recall is noted as a line in a file under
``HOME/recall/`` (one id a line; the file's time is when), never as a write
to the store. The maintenance pass reads those files, sets each memory's
``recalled_at`` and reschedules its decay, then empties the searches file.
The recall hook's per-session files (``HOME/recall/<session>``) count the
same way.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

__all__ = ["SEARCHES", "note_recalled", "recalled"]

#: The file searches and `show` append to.
SEARCHES: Final = "searches"
FOLDER: Final = "recall"
#: A recall file longer than this is not read (it is not ours to trust).
MAX_FILE_BYTES: Final = 1024 * 1024


def note_recalled(home: Path, ids: list[int]) -> None:
    """Append ``ids`` to the searches file; silently nothing when the home is read-only."""
    if not ids:
        return
    folder = home / FOLDER
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(folder / SEARCHES, flags, 0o600)
        try:
            os.write(fd, "".join(f"{i}\n" for i in ids).encode("ascii"))
        finally:
            os.close(fd)


def recalled(home: Path) -> dict[int, float]:
    """memory id -> the last time it was recalled, from every recall file."""
    found: dict[int, float] = {}
    folder = home / FOLDER
    try:
        entries = list(folder.iterdir())
    except OSError:
        return found
    for path in entries:
        try:
            st = path.lstat()
            if not path.is_file() or path.is_symlink() or st.st_size > MAX_FILE_BYTES:
                continue
            text = path.read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if line.strip().isdigit():
                memory_id = int(line)
                found[memory_id] = max(found.get(memory_id, 0.0), st.st_mtime)
    return found
