"""The API's bearer token: made once in HOME/api-token, read on every later start."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Final

from memspool.errors import HomeError
from memspool.http.limits import TOKEN_NAME

__all__ = ["read_or_create_token", "read_token"]

#: 32 random bytes, URL-safe base64: 43 characters.
TOKEN_BYTES: Final = 32
_SHORTEST: Final = 32
_READ_LIMIT: Final = 1024


def read_or_create_token(home: Path) -> str:
    """The token in ``home``/api-token, made first if there is none.

    ``home`` must exist. The file is created whole or not at all: the token
    is written to a private temporary file that is then hard-linked to its
    name, so a second server starting at the same moment reads a complete
    token, never an empty file.
    """
    path = home / TOKEN_NAME
    if not path.exists() and not path.is_symlink():
        _create(path)
    return _read(path)


def read_token(home: Path) -> str:
    """The token in ``home``/api-token; a clear error when no server made one yet."""
    path = home / TOKEN_NAME
    if not path.exists() and not path.is_symlink():
        raise HomeError(f"There is no API token in {home}: no server has run on this home yet. "
                        f"Start one with `memspool serve --open`, which signs you in too.",
                        str(path))
    return _read(path)


def _create(path: Path) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temporary, flags, 0o600)
        try:
            os.write(fd, (secrets.token_urlsafe(TOKEN_BYTES) + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        # link() fails if the name exists: whoever linked first made the token.
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    except OSError as exc:
        raise HomeError(f"Cannot create the API token {path}: {exc.strerror or exc}. Check "
                        f"that {path.parent} is yours and writable.", str(path)) from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


def _read(path: Path) -> str:
    advice = f"Delete {path} and start the server again; it makes a new token."
    try:
        # O_NOFOLLOW: a symlink planted in place of the token must not hand
        # the server (and so any client) a token chosen by someone else.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise HomeError(f"Cannot read the API token {path}: {exc.strerror or exc}. {advice}",
                        str(path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise HomeError(f"The API token {path} is not a file of yours. {advice}", str(path))
        if info.st_mode & 0o077:
            os.fchmod(fd, 0o600)
        data = os.read(fd, _READ_LIMIT)
    finally:
        os.close(fd)
    token = data.decode("ascii", "replace").strip()
    if len(token) < _SHORTEST or not all(c.isalnum() or c in "-_" for c in token):
        raise HomeError(f"The API token {path} is damaged. {advice}", str(path))
    return token
