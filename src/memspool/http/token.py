"""The API's bearer token: made once in HOME/api-token, read on every later start.

A token file others could read (its mode allows group or other access) may
have been read: it is replaced by a new token, and the server says so. A
token path that is not a regular file of the user's (a named pipe, a
device, a symlink) is refused with a sentence, never opened so that a read
could block.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import stat
from pathlib import Path
from typing import Final

from memspool.base.errors import HomeError
from memspool.http.limits import TOKEN_NAME

__all__ = ["ApiToken", "read_or_create_token", "read_token"]

#: 32 random bytes, URL-safe base64: 43 characters.
TOKEN_BYTES: Final = 32
_SHORTEST: Final = 32
_READ_LIMIT: Final = 1024


@dataclasses.dataclass(frozen=True)
class ApiToken:
    """The token, and why it was replaced (``None`` when it was not)."""

    value: str
    replaced: str | None = None


def read_or_create_token(home: Path) -> ApiToken:
    """The token in ``home``/api-token, made first if there is none, made anew if
    others could read it.

    ``home`` must exist. The file is created whole or not at all: the token
    is written to a private temporary file that is then hard-linked to its
    name, so a second server starting at the same moment reads a complete
    token, never an empty file.
    """
    path = home / TOKEN_NAME
    if not path.exists() and not path.is_symlink():
        _create(path)
    value, mode = _read(path)
    if not mode & 0o077:
        return ApiToken(value)
    _create(path, replace=True)
    value, _ = _read(path)
    return ApiToken(value, replaced=(
        f"the API token {path} was readable by others (mode {mode:o}), so it may have been "
        f"read: it was replaced by a new one (mode 600). Clients must read the new token."))


def read_token(home: Path) -> str:
    """The token in ``home``/api-token; a clear error when no server made one yet."""
    path = home / TOKEN_NAME
    if not path.exists() and not path.is_symlink():
        raise HomeError(f"There is no API token in {home}: no server has run on this home yet. "
                        f"Start one with `memspool serve --open`, which signs you in too.",
                        str(path))
    return _read(path)[0]


def _create(path: Path, *, replace: bool = False) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temporary, flags, 0o600)
        try:
            os.write(fd, (secrets.token_urlsafe(TOKEN_BYTES) + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            temporary.replace(path)  # atomically: a reader sees the old or the new
        else:
            # link() fails if the name exists: whoever linked first made the token.
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path)
    except OSError as exc:
        raise HomeError(f"Cannot create the API token {path}: {exc.strerror or exc}. Check "
                        f"that {path.parent} is yours and writable.", str(path)) from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


def _read(path: Path) -> tuple[str, int]:
    """The token in ``path`` and the file's permission bits."""
    advice = f"Delete {path} and start the server again; it makes a new token."
    try:
        # O_NOFOLLOW: a symlink planted in place of the token must not hand
        # the server (and so any client) a token chosen by someone else.
        # O_NONBLOCK: opening a named pipe for reading would wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise HomeError(f"Cannot read the API token {path}: {exc.strerror or exc}. {advice}",
                        str(path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise HomeError(f"The API token {path} is not a regular file (a named pipe, a "
                            f"socket or a device). {advice}", str(path))
        if info.st_uid != os.getuid():
            raise HomeError(f"The API token {path} is not a file of yours. {advice}", str(path))
        data = os.read(fd, _READ_LIMIT)
    finally:
        os.close(fd)
    token = data.decode("ascii", "replace").strip()
    if len(token) < _SHORTEST or not all(c.isalnum() or c in "-_" for c in token):
        raise HomeError(f"The API token {path} is damaged. {advice}", str(path))
    return token, stat.S_IMODE(info.st_mode)
