"""The root of memspool's exception tree, kept in the lowest room.

The hook path imports only the standard library and this package, and its
errors (a damaged frame) belong to the same tree as every other memspool
error; so the base class lives here and ``memspool.errors`` re-exports it.
"""

from __future__ import annotations

__all__ = ["HomeError", "MemspoolError"]


class MemspoolError(Exception):
    """Base class of every error memspool raises on purpose."""


class HomeError(MemspoolError, OSError):
    """The home folder (or a file in it) cannot be used: not a folder, not ours, full."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path
