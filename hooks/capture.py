"""Claude Code hook: append the payload to the spool, wake a drainer, exit 0.

Run as ``python -I -S capture.py [--home HOME]`` with the hook payload on stdin;
without ``--home`` the home is resolved as the CLI resolves it.
It parses nothing, prints nothing, opens no socket and no database, and exits
0 whatever happens; a failure goes to ``HOME/hook-errors.log``. It imports
the standard library, ``memspool.base`` and ``memspool.spool`` only (the
interpreter runs without site-packages, so it finds them from its own folder).
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


def _package_folder() -> str:
    # The interpreter runs without site-packages (-S), so `memspool` is not
    # importable by name: an empty `memspool` package rooted at the package's
    # folder finds base/ and spool/. Installed, that is our parent folder
    # (.../memspool/{base,hooks,spool}); in a checkout, <repo>/hooks/ is our
    # folder and the package is <repo>/src/memspool, which links in spool/
    # and hooks/ beside base/. (Putting a folder on sys.path instead would
    # import spool/ under the generic name `spool`, and its modules import
    # `memspool.spool.*`.)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    checkout = os.path.join(root, "src", "memspool")
    return checkout if os.path.isdir(checkout) else root


def _packages() -> tuple[ModuleType, ModuleType]:
    """``memspool.base`` (the home layout) and ``memspool.spool`` (the writer)."""
    if "memspool" not in sys.modules:
        package = type(sys)("memspool")
        package.__path__ = [_package_folder()]
        sys.modules["memspool"] = package
    import memspool.base.home
    import memspool.spool.writer

    return memspool.base, memspool.spool


def _wake_drainer(home: str, layout: ModuleType) -> None:
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(os.path.join(home, layout.LOCK_NAME), flags, 0o600)
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
            [sys.executable, *layout.DRAINER_ARGS, "--home", home],
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


def _log_failure(log_path: str, exc: BaseException) -> None:
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} hook failed: {type(exc).__name__}: {exc}\n"
    # Without a usable home there is no private folder: fall back to a
    # per-user file in /tmp, never following a symlink planted there.
    path = log_path or f"/tmp/memspool-hook-errors-{os.getuid()}.log"  # noqa: S108 - see above
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
    home = log_path = ""
    try:
        base, spool = _packages()
        layout = base.home
        home = argv[argv.index("--home") + 1] if "--home" in argv[:-1] else layout.default_home()
        spool_dir = os.path.join(home, layout.SPOOL_NAME)
        layout.check_private_folder(home)
        log_path = os.path.join(home, layout.ERROR_LOG)
        layout.check_private_folder(spool_dir)
        # One byte past the spool's limit is enough to refuse it: an endless
        # stdin (a pipe that never closes) must not fill memory.
        payload = sys.stdin.buffer.read(spool.frame.MAX_PAYLOAD + 1)
        spool.writer.append(spool_dir, payload)
    except BaseException as exc:  # noqa: BLE001 - the hook must exit 0 whatever happens
        _log_failure(log_path, exc)
        return 0
    try:
        _wake_drainer(home, layout)
    except BaseException as exc:  # noqa: BLE001 - as above: the frame is stored, exit 0
        _log_failure(log_path, exc)
    return 0


if __name__ == "__main__":
    main(sys.argv)
    # Skip interpreter teardown (about 1.5 ms): everything was written with
    # os.write, so no buffer is waiting to be flushed.
    os._exit(0)
