"""Appending a frame: the hook's whole part in the spool.

Only ``os`` and ``fcntl``: this runs inside the hook, where start-up time is
the budget. See ``segments`` for why the shared ``flock`` and the inode check
make sealing safe.
"""

from __future__ import annotations

import fcntl
import os

from memspool.spool.frame import encode

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

__all__ = ["ACTIVE_NAME", "append"]

ACTIVE_NAME: Final = "active.seg"
#: A hook that lost the race with a seal just opens the new active segment;
#: more than a few rounds means something else is renaming the file.
APPEND_ATTEMPTS: Final = 8


def append(spool_dir: str, payload: bytes) -> None:
    """Append one frame to the active segment (the hook's whole job in the spool).

    Raises ``OSError`` when the spool cannot be written; a short write leaves a
    torn frame that the reader detects and quarantines.
    """
    frame = encode(payload)
    path = os.path.join(spool_dir, ACTIVE_NAME)
    # O_NOFOLLOW: a symlink planted as active.seg must not redirect a frame
    # into some other file of the user's.
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    for _ in range(APPEND_ATTEMPTS):
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            os.makedirs(spool_dir, mode=0o700, exist_ok=True)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            # A seal may have renamed the file between open and flock; then this
            # descriptor points at a sealed segment that may already be read.
            mine = os.fstat(fd)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                continue
            if (mine.st_ino, mine.st_dev) != (current.st_ino, current.st_dev):
                continue
            written = os.write(fd, frame)
            if written != len(frame):
                raise OSError(f"short write to {path}: {written} of {len(frame)} bytes")
            return
        finally:
            os.close(fd)  # also drops the shared flock
    raise OSError(f"{path} kept being replaced during {APPEND_ATTEMPTS} append attempts")
