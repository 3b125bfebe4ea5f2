"""Segments on disk, the drainer's side: seal, read, checkpoint, recover.

Files in the spool folder::

    active.seg                 hooks append here (O_APPEND, one write per frame)
    seg-<time_ns>.seg          sealed segments, read in name order
    checkpoint                 "v1 <segment> <offset>": everything before it is consumed
    quarantine/<seg>@<off>.bad bytes that failed the frame checks

Sealing renames ``active.seg``. A hook holds a shared ``flock`` on the file it
writes and, once it holds it, checks that the path still names that file; the
reader takes an exclusive ``flock`` on a sealed segment before reading it, so
every write that started before the rename has finished, and every later
write went to a new ``active.seg``. No frame can land in a segment after it
was read.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Final, NamedTuple

from memspool.spool.frame import HEADER_SIZE, MAGIC, Frame, SpoolCorrupt, decode, decode_header
from memspool.spool.writer import ACTIVE_NAME

__all__ = ["ACTIVE_NAME", "Position", "Spool"]

SEALED_PREFIX: Final = "seg-"
SEGMENT_SUFFIX: Final = ".seg"
CHECKPOINT_NAME: Final = "checkpoint"
QUARANTINE_DIR: Final = "quarantine"
#: Damaged regions are kept this long for a person to look at (30 days).
QUARANTINE_KEEP_SECS: Final = 30 * 24 * 3600
#: Bytes read at a time when searching for the next frame after damage.
SCAN_CHUNK: Final = 64 * 1024


class Position(NamedTuple):
    """A point in the spool: the segment name and the byte offset within it."""

    segment: str
    offset: int



def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Spool:
    """The drainer's view of a spool folder."""

    def __init__(self, directory: Path, log: Callable[[str], None] | None = None) -> None:
        self.directory = Path(directory)
        self._log = log or (lambda message: None)
        #: Damaged regions this instance has quarantined so far.
        self.quarantined = 0

    # -- layout -------------------------------------------------------------

    def ensure(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)

    def sealed_segments(self) -> list[str]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        return sorted(
            n for n in names if n.startswith(SEALED_PREFIX) and n.endswith(SEGMENT_SUFFIX)
        )

    def active_size(self) -> int:
        try:
            return os.stat(self.directory / ACTIVE_NAME).st_size
        except FileNotFoundError:
            return 0

    # -- checkpoint ---------------------------------------------------------

    def checkpoint(self) -> Position:
        """The durable consumed position; a missing or damaged file means the start."""
        path = self.directory / CHECKPOINT_NAME
        try:
            text = path.read_text(encoding="ascii")
        except FileNotFoundError:
            return Position("", 0)
        except (OSError, UnicodeDecodeError) as exc:
            self._log(f"spool checkpoint {path} unreadable ({exc}); replaying from the start")
            return Position("", 0)
        parts = text.split()
        if len(parts) == 3 and parts[0] == "v1" and parts[2].isdigit():
            return Position(parts[1], int(parts[2]))
        self._log(f"spool checkpoint {path} damaged ({text[:80]!r}); replaying from the start")
        return Position("", 0)

    def _unconsumed(self) -> list[tuple[str, int]]:
        """Sealed segments past the checkpoint, each with the offset reading starts at."""
        checkpoint = self.checkpoint()
        return [
            (name, checkpoint.offset if name == checkpoint.segment else 0)
            for name in self.sealed_segments()
            if name >= checkpoint.segment
        ]

    def _drop_consumed(self, position: Position) -> None:
        """Delete the sealed segments ``position`` has moved past."""
        for name in self.sealed_segments():
            seg = self.directory / name
            try:
                if name < position.segment or (
                    name == position.segment and seg.stat().st_size <= position.offset
                ):
                    seg.unlink()
            except FileNotFoundError:
                continue

    def commit(self, position: Position) -> None:
        """Record ``position`` as consumed (durably), then delete what it covers."""
        path = self.directory / CHECKPOINT_NAME
        tmp = path.with_name(f"{CHECKPOINT_NAME}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, f"v1 {position.segment} {position.offset}\n".encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        # rename after fsync: a crash leaves either the old or the new checkpoint.
        os.replace(tmp, path)
        _fsync_dir(self.directory)
        self._drop_consumed(position)

    # -- sealing and reading ------------------------------------------------

    def seal(self) -> str | None:
        """Rename a non-empty active segment to a sealed one; return its name."""
        active = self.directory / ACTIVE_NAME
        try:
            if active.stat().st_size == 0:
                return None
        except FileNotFoundError:
            return None
        # Names must sort after every segment already sealed and after the
        # checkpoint's (whose file may be gone): a wall clock stepped back
        # would otherwise name a segment the reader skips as consumed.
        stamp = time.time_ns()
        for name in [*self.sealed_segments()[-1:], self.checkpoint().segment]:
            if name.startswith(SEALED_PREFIX) and name.endswith(SEGMENT_SUFFIX):
                number = name[len(SEALED_PREFIX) : -len(SEGMENT_SUFFIX)]
                if number.isdigit():
                    stamp = max(stamp, int(number) + 1)
        name = f"{SEALED_PREFIX}{stamp:020d}{SEGMENT_SUFFIX}"
        os.rename(active, self.directory / name)
        _fsync_dir(self.directory)
        return name

    def has_pending(self) -> bool:
        """Is there anything past the checkpoint (sealed or still active)?"""
        if self.active_size() > 0:
            return True
        for name, start in self._unconsumed():
            try:
                if (self.directory / name).stat().st_size > start:
                    return True
            except FileNotFoundError:
                continue
        return False

    def pending(self) -> tuple[int, int]:
        """``(frames, bytes)`` past the checkpoint, counted from the headers alone."""
        frames = total = 0
        paths = [(self.directory / name, start) for name, start in self._unconsumed()]
        paths.append((self.directory / ACTIVE_NAME, 0))
        for path, start in paths:
            try:
                with path.open("rb") as handle:
                    size = os.fstat(handle.fileno()).st_size
                    offset = start
                    total += max(0, size - start)
                    while offset + HEADER_SIZE <= size:
                        handle.seek(offset)
                        try:
                            length, _ = decode_header(handle.read(HEADER_SIZE), offset)
                        except SpoolCorrupt:
                            break
                        frames += 1
                        offset += HEADER_SIZE + length
            except FileNotFoundError:
                continue
        return frames, total

    def read(self) -> Iterator[tuple[Position, Frame | None]]:
        """Every frame past the checkpoint in sealed segments, in order.

        Yields ``(position_after, frame)``; a damaged region is quarantined and
        yielded as ``(position_after, None)`` so the caller can commit past it.
        """
        for name, start in self._unconsumed():
            yield from self._read_segment(name, start)

    def _read_segment(self, name: str, start: int) -> Iterator[tuple[Position, Frame | None]]:
        path = self.directory / name
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            return
        with handle:
            # Wait out any hook that opened this file before it was sealed.
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            size = os.fstat(handle.fileno()).st_size
            offset = start
            while offset < size:
                handle.seek(offset)
                header = handle.read(HEADER_SIZE)
                try:
                    length, _ = decode_header(header, offset)
                    frame = decode(header, handle.read(length), offset)
                except SpoolCorrupt as exc:
                    resume = self._next_magic(handle, offset + 1, size)
                    self._quarantine(name, handle, offset, resume, str(exc))
                    offset = resume
                    yield Position(name, offset), None
                    continue
                offset += HEADER_SIZE + length
                yield Position(name, offset), frame

    @staticmethod
    def _next_magic(handle: BinaryIO, start: int, size: int) -> int:
        offset = start
        while offset < size:
            handle.seek(offset)
            chunk = handle.read(SCAN_CHUNK + len(MAGIC) - 1)
            found = chunk.find(MAGIC)
            if found >= 0:
                return offset + found
            offset += SCAN_CHUNK
        return size

    def _quarantine(self, name: str, handle: BinaryIO, start: int, end: int, reason: str) -> None:
        folder = self.directory / QUARANTINE_DIR
        folder.mkdir(mode=0o700, exist_ok=True)
        target = folder / f"{name}@{start}.bad"
        handle.seek(start)
        remaining = end - start
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            while remaining > 0:
                chunk = handle.read(min(SCAN_CHUNK, remaining))
                if not chunk:
                    break
                os.write(fd, chunk)
                remaining -= len(chunk)
        finally:
            os.close(fd)
        self.quarantined += 1
        self._log(f"spool: quarantined {end - start} bytes of {name} at offset {start} "
                  f"({reason}) to {target}")

    def prune_quarantine(self, now: float) -> int:
        """Delete quarantined regions older than :data:`QUARANTINE_KEEP_SECS`.

        They hold raw payloads (PreCompact instructions among them), kept for
        a person to look at, not forever.
        """
        folder = self.directory / QUARANTINE_DIR
        removed = 0
        try:
            entries = list(folder.iterdir())
        except FileNotFoundError:
            return 0
        for entry in entries:
            try:
                if now - entry.stat().st_mtime > QUARANTINE_KEEP_SECS:
                    entry.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
        return removed

    def recover(self) -> list[str]:
        """Tidy after a crash: drop a half-written checkpoint and consumed segments."""
        notes: list[str] = []
        tmp = self.directory / f"{CHECKPOINT_NAME}.tmp"
        if tmp.exists():
            tmp.unlink()
            notes.append("removed a half-written spool checkpoint")
        before = set(self.sealed_segments())
        self._drop_consumed(self.checkpoint())
        removed = before - set(self.sealed_segments())
        if removed:
            notes.append(f"removed {len(removed)} consumed spool segment(s)")
        return notes
