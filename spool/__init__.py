"""The write-ahead spool: raw hook payloads, framed and checksummed, on disk.

Hooks append one frame per event to ``active.seg`` in a single ``write``;
the drainer seals that segment by renaming it, reads sealed segments from a
durable checkpoint, and deletes them once consumed. The spool only says
"this session has news": the transcript cursors in the store decide what is
captured, so replaying a frame is harmless.

Standard library only: the hook imports this package and nothing else.
"""

from __future__ import annotations

from memspool.spool.frame import (
    HEADER_SIZE,
    MAGIC,
    MAX_PAYLOAD,
    VERSION,
    Frame,
    SpoolCorrupt,
    decode_header,
    encode,
)
from memspool.spool.segments import (
    ACTIVE_NAME,
    Checkpoint,
    Position,
    Spool,
    append,
)

__all__ = [
    "ACTIVE_NAME",
    "HEADER_SIZE",
    "MAGIC",
    "MAX_PAYLOAD",
    "VERSION",
    "Checkpoint",
    "Frame",
    "Position",
    "Spool",
    "SpoolCorrupt",
    "append",
    "decode_header",
    "encode",
]
