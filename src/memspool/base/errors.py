"""The one exception tree of memspool.

    MemspoolError
     ├── SpoolCorrupt(ValueError)             a spool frame's header or checksum is wrong
     ├── ConfigError(ValueError)              config.toml or an environment value is invalid
     ├── SettingsError(ValueError)            a Claude Code settings.json cannot be merged
     ├── PayloadError(ValueError)             a hook payload or capture input is unusable
     ├── TranscriptError(OSError)             a transcript is missing, unreadable or
     │                                        outside the allowed roots
     ├── HomeError(OSError)                   the home folder cannot be used
     ├── StoreError(RuntimeError)             the SQLite store cannot be opened or written
     ├── DrainerBusy(RuntimeError)            another drainer holds the lock
     ├── LlmError(RuntimeError)               the optional LLM could not produce notes
     ├── TeamError(RuntimeError)              the team server cannot be reached or used
     └── NotFound(LookupError)                no slice or memory with that id
          └── SliceNotFound

Each also subclasses the builtin named beside it.
Messages are full sentences that name the file, session or id and say what
to do about it; the CLI prints them as they are.

Standard library only, with no import at all: the hooks load this module
under ``python -I -S`` (a damaged frame, an unusable home folder), and their
errors belong to the same tree as every other memspool error. ``memspool``
re-exports every class.
"""

from __future__ import annotations

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
]


class MemspoolError(Exception):
    """Base class of every error memspool raises on purpose."""


class SpoolCorrupt(MemspoolError, ValueError):
    """A frame's header or checksum is wrong; the reader quarantines it and resyncs."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class HomeError(MemspoolError, OSError):
    """The home folder (or a file in it) cannot be used: not a folder, not ours, full."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


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
    """The SQLite store cannot be opened, migrated or written."""


class DrainerBusy(MemspoolError, RuntimeError):
    """Another drainer holds the lock."""


class LlmError(MemspoolError, RuntimeError):
    """The LLM path could not produce notes; the message says why, for the report."""


class TeamError(MemspoolError, RuntimeError):
    """Team memory's PostgreSQL server cannot be reached, is not set up, or refuses.

    ``retry`` says whether trying again later may work (the server is down or
    busy) or the user must act first (no membership, no schema, no psycopg).
    """

    def __init__(self, message: str, *, retry: bool = False) -> None:
        super().__init__(message)
        self.retry = retry


class NotFound(MemspoolError, LookupError):
    """No row with the id asked for."""


class SliceNotFound(NotFound):
    def __init__(self, slice_id: int) -> None:
        super().__init__(f"No slice with id {slice_id}; `memspool slices list` shows the ids.")
        self.slice_id = slice_id
