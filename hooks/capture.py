"""Claude Code hook: append the payload to the spool, wake a drainer, exit 0.

Run as ``python -I -S capture.py --home HOME`` with the hook payload on stdin.
It parses nothing, prints nothing, opens no socket and no database, and exits
0 whatever happens; a failure goes to ``HOME/hook-errors.log``. It imports
the standard library and ``memspool.spool`` only (the interpreter runs
without site-packages, so it finds the spool package beside its own folder).
"""

# Annotations stay strings (never evaluated), so they cost the hook nothing;
# __future__ is imported by the spool modules anyway.
from __future__ import annotations

import fcntl
import os
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Final

ERROR_LOG: Final = "hook-errors.log"
LOCK_NAME: Final = "drainer.lock"
SPOOL_NAME: Final = "spool"
#: The drainer is told where home is; it runs with site-packages (no -S) but
#: ignores PYTHON* variables (-E) and the current folder (-P).
DRAINER_ARGS: Final = ("-E", "-P", "-m", "memspool.drainer", "--detached")


def _spool_module() -> ModuleType:
    # Installed: .../site-packages/memspool/{hooks,spool}; from a checkout:
    # <repo>/{hooks,spool}. Either way the spool is the sibling folder, so a
    # bare `memspool` package rooted at our parent folder finds it.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "memspool" not in sys.modules:
        package = type(sys)("memspool")
        package.__path__ = [root]
        sys.modules["memspool"] = package
    import memspool.spool.writer

    return memspool.spool.writer


def _wake_drainer(home: str) -> None:
    fd = os.open(os.path.join(home, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # A drainer holds the lock. Our frame is already on disk, and a
            # drainer re-checks the spool after it lets go of the lock, so it
            # either reads the frame or a later wake-up spawns a new drainer.
            return
        null = os.devnull
        os.posix_spawn(
            sys.executable,
            [sys.executable, *DRAINER_ARGS, "--home", home],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0),
            ],
            # A new session: `claude -p` kills the hook's process group at teardown.
            setsid=True,
        )
    finally:
        os.close(fd)  # the new drainer waits for this lock, then takes it


def _log_failure(home: str, exc: BaseException) -> None:
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} hook failed: {type(exc).__name__}: {exc}\n"
    # Without a home there is no private folder: fall back to a per-user file
    # in /tmp, never following a symlink someone else may have planted there.
    path = (
        os.path.join(home, ERROR_LOG) if home
        else f"/tmp/memspool-hook-errors-{os.getuid()}.log"  # noqa: S108 - see above
    )
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass  # nowhere left to report; the agent must still carry on


def main(argv: list[str]) -> int:
    os.umask(0o077)
    if "--home" in argv[:-1]:
        home = argv[argv.index("--home") + 1]
    else:
        home = os.environ.get("MEMSPOOL_HOME", "")
    try:
        if not home:
            raise RuntimeError(
                "no --home given and MEMSPOOL_HOME unset; reinstall with `memspool install`"
            )
        payload = sys.stdin.buffer.read()
        spool = _spool_module()
        spool.append(os.path.join(home, SPOOL_NAME), payload)
    except BaseException as exc:  # noqa: BLE001 - the hook must exit 0 whatever happens
        _log_failure(home, exc)
        return 0
    try:
        _wake_drainer(home)
    except BaseException as exc:  # noqa: BLE001 - as above: the frame is stored, exit 0
        _log_failure(home, exc)
    return 0


if __name__ == "__main__":
    main(sys.argv)
    # Skip interpreter teardown (about 1.5 ms): everything was written with
    # os.write, so no buffer is waiting to be flushed.
    os._exit(0)
