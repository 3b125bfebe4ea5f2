"""The one-drainer lock, its pid file, and telling from outside whether a drainer runs."""

from __future__ import annotations

import os
from pathlib import Path

import filelock

from memspool.config import Config, ensure_private_dir

__all__ = ["DrainerLock", "acquire_lock", "drainer_pid", "drainer_running"]


class DrainerLock:
    """The one-drainer lock, and a pid file that exists only while it is held.

    The pid file is removed before the lock is let go, so finding one on
    acquiring means the last holder died holding the lock (its ``flock``
    ended with it): ``crashed_pid`` names that drainer.
    """

    def __init__(
        self, lock: filelock.BaseFileLock, pid_path: Path, crashed_pid: int | None
    ) -> None:
        self._lock = lock
        self.pid_path = pid_path
        self.crashed_pid = crashed_pid

    def release(self) -> None:
        self.pid_path.unlink(missing_ok=True)
        self._lock.release()


def acquire_lock(config: Config, timeout: float) -> DrainerLock | None:
    """The drainer lock, or ``None`` if another drainer kept it for ``timeout`` seconds."""
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
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(pid_path, flags, 0o600)
    try:
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
    finally:
        os.close(fd)
    return DrainerLock(lock, pid_path, crashed)


def drainer_pid(config: Config) -> int | None:
    """The pid of the drainer holding the lock right now, or ``None``.

    Read from the pid file a drainer keeps only while it holds the lock, and
    checked against the process table (a pid reused by something else does
    not count). Taking the lock to probe it would be wrong: a hook that came
    at that moment would think a drainer runs and spawn none.
    """
    try:
        pid = int(config.pid_path.read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None
    if not Path("/proc/self").exists():  # no procfs: is the process there at all?
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # someone else's process holds that pid: still alive
        return pid
    try:
        return pid if b"memspool" in Path(f"/proc/{pid}/cmdline").read_bytes() else None
    except OSError:
        return None


def drainer_running(config: Config) -> bool:
    """Does a drainer hold the lock right now? (See :func:`drainer_pid`.)"""
    return drainer_pid(config) is not None
