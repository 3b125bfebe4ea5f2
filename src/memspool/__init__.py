"""memspool: crash-safe memory capture for AI coding agents.

Claude Code hooks append their payloads to a write-ahead spool
(``memspool.spool``); a detached drainer (``memspool.drainer``) turns each
session's transcript into redacted, compressed slices in a local SQLite
store (``memspool.store``); the capture verb (``memspool.distill``) turns
text into durable memories. ``memspool.service`` holds the operations the
command line calls. This package exports the exception tree only, so that
importing it stays cheap for the drainer.
"""

from __future__ import annotations

from memspool.base.errors import (
    ConfigError,
    DrainerBusy,
    HomeError,
    LlmError,
    MemspoolError,
    NotFound,
    PayloadError,
    SettingsError,
    SliceNotFound,
    SpoolCorrupt,
    StoreError,
    TeamError,
    TranscriptError,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DrainerBusy",
    "HomeError",
    "LlmError",
    "MemspoolError",
    "NotFound",
    "PayloadError",
    "SettingsError",
    "SliceNotFound",
    "SpoolCorrupt",
    "StoreError",
    "TeamError",
    "TranscriptError",
    "__version__",
]
