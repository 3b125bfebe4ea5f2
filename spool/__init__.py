"""The write-ahead spool: raw hook payloads, framed and checksummed, on disk.

Hooks append one frame per event to ``active.seg`` in a single ``write``;
the drainer seals that segment by renaming it, reads sealed segments from a
durable checkpoint, and deletes them once consumed. The spool only says
"this session has news": the transcript cursors in the store decide what is
captured, so replaying a frame is harmless.

Standard library only: the hook imports this package and nothing else. The
names below load on first use, so the hook pays only for ``writer`` and
``frame`` (no ``typing``, ``pathlib`` or ``re``).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
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
    from memspool.spool.segments import Position, Spool
    from memspool.spool.writer import ACTIVE_NAME, append

_HOMES = {
    "HEADER_SIZE": "frame", "MAGIC": "frame", "MAX_PAYLOAD": "frame", "VERSION": "frame",
    "Frame": "frame", "SpoolCorrupt": "frame", "decode_header": "frame", "encode": "frame",
    "Position": "segments", "Spool": "segments",
    "ACTIVE_NAME": "writer", "append": "writer",
}

__all__ = [
    "ACTIVE_NAME",
    "HEADER_SIZE",
    "MAGIC",
    "MAX_PAYLOAD",
    "VERSION",
    "Frame",
    "Position",
    "Spool",
    "SpoolCorrupt",
    "append",
    "decode_header",
    "encode",
]


def __getattr__(name: str) -> object:
    module = _HOMES.get(name)
    if module is None:
        raise AttributeError(f"module 'memspool.spool' has no attribute {name!r}")
    qualified = f"memspool.spool.{module}"
    __import__(qualified)  # importlib.import_module would cost the hook an extra import
    value = getattr(sys.modules[qualified], name)
    globals()[name] = value
    return value
