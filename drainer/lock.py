"""The one-drainer lock, its pid file, and telling from outside whether a drainer runs.

A drainer is known by a lock, not by a name. While it holds the drainer lock,
the drainer also holds an exclusive ``flock`` on its pid file, taken before
the file is put in place and kept until the file is removed. So:

- a pid file whose ``flock`` is held names the live process that holds it
  (the kernel drops a ``flock`` when the last descriptor of it closes, so a
  drainer that dies, however it dies, lets go at once);
- a pid file whose ``flock`` can be had is left over from a drainer that
  died: whatever process has that pid now is not a drainer, whatever its
  command line says.

The probe takes a shared ``flock`` without waiting and lets it go at once; it
never touches the drainer lock itself, which the hooks probe to decide
whether to spawn a drainer. It needs no procfs (macOS has none) and costs an
open, a ``flock`` and a read (``bench/drainer_identity.py`` measures it
beside the alternatives; docs/architecture.md, "Is a drainer running?").
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memspool.config import Config, ensure_private_dir

if TYPE_CHECKING:
    import filelock

__all__ = ["DrainerLock", "acquire_lock", "drainer_pid", "drainer_running"]

#: The pid file is written whole under this name, locked, then renamed into place.
_DRAFT_SUFFIX = ".draft"


class DrainerLock:
    """The one-drainer lock, and a pid file that exists only while it is held.

    The pid file is removed before the lock is let go, so finding one on
    acquiring means the last holder died holding the lock (its ``flock``
    ended with it): ``crashed_pid`` names that drainer.
    """

    def __init__(self, lock: filelock.BaseFileLock, pid_path: Path, pid_fd: int,
                 crashed_pid: int | None) -> None:
        self._lock = lock
        self._pid_fd: int | None = pid_fd
        self.pid_path = pid_path
        self.crashed_pid = crashed_pid

    def release(self) -> None:
        """Let go (a no-op the second time): the pid file goes first, then its
        ``flock``, then the drainer lock, so no moment shows a lock-free pid file
        of a live drainer."""
        if self._pid_fd is None:
            return
        self.pid_path.unlink(missing_ok=True)
        os.close(self._pid_fd)
        self._pid_fd = None
        self._lock.release()


def acquire_lock(config: Config, timeout: float) -> DrainerLock | None:
    """The drainer lock, or ``None`` if another drainer kept it for ``timeout`` seconds."""
    # Loaded here: asking whether a drainer runs (every command does) needs
    # only the pid file's flock, and filelock takes ~10 ms to import.
    import filelock

    ensure_private_dir(config.home)
    lock = filelock.FileLock(config.lock_path, timeout=timeout, mode=0o600)
    try:
        lock.acquire()
    except filelock.Timeout:
        return None
    pid_path = config.pid_path
    try:
        crashed: int | None = int(pid_path.read_text(encoding="ascii"))
    except (OSError, ValueError):
        crashed = None
    try:
        fd = _publish_pid(pid_path)
    except BaseException:
        lock.release()
        raise
    return DrainerLock(lock, pid_path, fd, crashed)


def _publish_pid(pid_path: Path) -> int:
    """Write this process's pid to a draft, lock the draft, then rename it into place.

    Locked before the rename, so a probe never finds the new pid file unlocked;
    written before the rename, so it never finds it empty. The descriptor is
    close-on-exec: a child the drainer starts must not keep its ``flock``
    alive after the drainer dies.
    """
    draft = pid_path.with_name(pid_path.name + _DRAFT_SUFFIX)
    draft.unlink(missing_ok=True)  # a draft left by a drainer killed mid-write
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(draft, flags, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        draft.replace(pid_path)
    except BaseException:
        os.close(fd)
        draft.unlink(missing_ok=True)
        raise
    return fd


def drainer_pid(config: Config) -> int | None:
    """The pid of the drainer holding the lock right now, or ``None``.

    A pid file counts only while its ``flock`` is held (see the module's
    docstring): a pid file left by a drainer that died names nobody, even
    when its pid now belongs to another live process.
    """
    try:
        fd = os.open(config.pid_path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            # A live drainer holds it: the pid it wrote is its own.
            with contextlib.suppress(OSError, ValueError):
                return int(os.read(fd, 32).decode("ascii"))
            return None
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None  # left over from a drainer that died
    finally:
        os.close(fd)


def drainer_running(config: Config) -> bool:
    """Does a drainer hold the lock right now? (See :func:`drainer_pid`.)"""
    return drainer_pid(config) is not None
