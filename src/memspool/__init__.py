"""memspool: crash-safe memory capture for AI coding agents.

Claude Code hooks append their payloads to a write-ahead spool
(``memspool.spool``); a detached drainer (``memspool.drainer``) turns each
session's transcript into redacted, compressed captures in a local SQLite
store; the distiller and archivist turn captures into durable memory notes.
"""

from __future__ import annotations

from memspool.errors import (
    ConfigError,
    MemspoolError,
    PayloadError,
    SettingsError,
    StoreError,
    TranscriptError,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "MemspoolError",
    "PayloadError",
    "SettingsError",
    "StoreError",
    "TranscriptError",
    "__version__",
]
