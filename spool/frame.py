"""One frame: a fixed header, then the payload bytes exactly as the hook read them.

Layout (little-endian, 24 bytes of header)::

    0   4  magic  b"\\xffMSP"  (0xFF never occurs in UTF-8, so JSON payloads cannot fake it)
    4   1  version
    5   1  kind            0 = hook payload
    6   2  reserved        zero
    8   4  length          payload bytes
    12  4  crc32           over bytes 4..12, 16..24 and the payload
    16  8  time_ns         when the hook wrote it (wall clock)

The CRC covers the length too, so a damaged length is caught instead of
being followed into the middle of the next frame.
"""

from __future__ import annotations

import time
import zlib

from memspool.base.errors import SpoolCorrupt

# No `typing` here: this module is on the hook path, where every import
# costs start-up time (typing alone pulls in re, collections and more).
# Annotations are never evaluated, so `Final` is imported for mypy only.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

__all__ = [
    "HEADER_SIZE",
    "MAGIC",
    "MAX_PAYLOAD",
    "VERSION",
    "Frame",
    "SpoolCorrupt",
    "decode_header",
    "encode",
]

MAGIC: Final = b"\xffMSP"
VERSION: Final = 1
KIND_HOOK: Final = 0
HEADER_SIZE: Final = 24
#: Claude Code payloads are a few KB; PreCompact custom instructions can be
#: long. Anything past 64 MiB is not a hook payload, and the cap bounds what
#: a damaged length can make the reader allocate.
MAX_PAYLOAD: Final = 64 * 1024 * 1024


class Frame:
    """A verified frame: its kind, when the hook wrote it, and the payload bytes."""

    __slots__ = ("kind", "payload", "time_ns")

    def __init__(self, kind: int, time_ns: int, payload: bytes) -> None:
        self.kind = kind
        self.time_ns = time_ns
        self.payload = payload

    def __repr__(self) -> str:
        return f"Frame(kind={self.kind}, time_ns={self.time_ns}, payload={self.payload[:40]!r})"


def _crc(header: bytes | bytearray, payload: bytes) -> int:
    crc = zlib.crc32(header[4:12])
    crc = zlib.crc32(header[16:24], crc)
    return zlib.crc32(payload, crc)


def encode(payload: bytes, *, kind: int = KIND_HOOK, time_ns: int | None = None) -> bytes:
    """The frame for ``payload``, ready for a single ``write``."""
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(payload)} bytes exceeds the spool's {MAX_PAYLOAD}")
    stamp = time.time_ns() if time_ns is None else time_ns
    header = bytearray(HEADER_SIZE)
    header[0:4] = MAGIC
    header[4] = VERSION
    header[5] = kind
    header[8:12] = len(payload).to_bytes(4, "little")
    header[16:24] = stamp.to_bytes(8, "little")
    header[12:16] = _crc(header, payload).to_bytes(4, "little")
    return bytes(header) + payload


def decode_header(header: bytes, offset: int) -> tuple[int, int]:
    """Check a header's fixed fields; return ``(length, crc)``. Raises :class:`SpoolCorrupt`."""
    if len(header) < HEADER_SIZE:
        raise SpoolCorrupt(f"torn header at offset {offset}", offset)
    if header[0:4] != MAGIC:
        raise SpoolCorrupt(f"bad magic at offset {offset}", offset)
    if header[4] != VERSION:
        raise SpoolCorrupt(f"unknown frame version {header[4]} at offset {offset}", offset)
    length = int.from_bytes(header[8:12], "little")
    if length > MAX_PAYLOAD:
        raise SpoolCorrupt(f"frame length {length} past the limit at offset {offset}", offset)
    return length, int.from_bytes(header[12:16], "little")


def decode(header: bytes, payload: bytes, offset: int) -> Frame:
    """Verify ``payload`` against its header. Raises :class:`SpoolCorrupt`."""
    length, crc = decode_header(header, offset)
    if len(payload) != length:
        raise SpoolCorrupt(
            f"torn frame at offset {offset}: {len(payload)} of {length} bytes", offset
        )
    if _crc(header, payload) != crc:
        raise SpoolCorrupt(f"checksum mismatch at offset {offset}", offset)
    return Frame(header[5], int.from_bytes(header[16:24], "little"), payload)
