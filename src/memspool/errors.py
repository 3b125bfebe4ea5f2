"""The one exception tree of memspool.

    MemspoolError
     ├── ConfigError(MemspoolError, ValueError)      config.toml or an environment value is invalid
     ├── SettingsError(MemspoolError, ValueError)    a Claude Code settings.json cannot be merged
     ├── PayloadError(MemspoolError, ValueError)     a hook payload or capture input is unusable
     ├── TranscriptError(MemspoolError, OSError)     a transcript is missing, unreadable or
     │                                               outside the allowed roots
     └── StoreError(MemspoolError, RuntimeError)     the SQLite store cannot be opened or migrated

The spool's own errors (``memspool.spool.SpoolCorrupt``) live beside the
spool, which must stay importable with the standard library alone.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "MemspoolError",
    "PayloadError",
    "SettingsError",
    "StoreError",
    "TranscriptError",
]


class MemspoolError(Exception):
    """Base class of every error memspool raises on purpose."""


class ConfigError(MemspoolError, ValueError):
    """A configuration value (config.toml or environment) is invalid."""


class SettingsError(MemspoolError, ValueError):
    """A Claude Code settings.json cannot be read, parsed or written safely."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class PayloadError(MemspoolError, ValueError):
    """A hook payload or capture input cannot be used."""


class TranscriptError(MemspoolError, OSError):
    """A transcript is missing, unreadable, or not where transcripts may live."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class StoreError(MemspoolError, RuntimeError):
    """The SQLite store cannot be opened or brought to the current schema."""
