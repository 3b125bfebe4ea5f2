"""Claude Code SessionStart hook: print the project's stored context block.

Run as ``python -I -S context.py [--home HOME]`` with the hook payload on
stdin. It reads one row (the block rendered when the project's memory last
changed) with the standard library's ``sqlite3``, read-only, and prints
``{"hookSpecificOutput": {"hookEventName": "SessionStart",
"additionalContext": ...}}``. On any error, a missing store, no block, or
past its deadline it prints nothing and exits 0: a session never waits for
memory, nor fails because of it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from types import FrameType, ModuleType
    from typing import Final

#: The whole hook gives up after this long (Claude Code's own timeout is longer).
DEADLINE_SECS: Final = 2.0
#: A reader waits this long for a writer's lock before giving up.
BUSY_MS: Final = 300
#: A payload past this size is not a SessionStart payload.
MAX_PAYLOAD: Final = 1024 * 1024


def _base_package() -> ModuleType:
    # As in capture.py: the package folder is our parent's (installed) or
    # src/memspool (a checkout), found without site-packages.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    checkout = os.path.join(root, "src", "memspool")
    if "memspool" not in sys.modules:
        package = type(sys)("memspool")
        package.__path__ = [checkout if os.path.isdir(checkout) else root]
        sys.modules["memspool"] = package
    import memspool.base.home
    import memspool.base.project

    return memspool.base


def _give_up(signum: int, frame: FrameType | None) -> None:
    os._exit(0)


def read_only(db: str) -> sqlite3.Connection:
    """The store opened for reading only (never created).

    Reading a WAL store needs its -shm index, which a read-only home (or a
    full disk) does not let SQLite create. With no WAL content waiting, the
    database file is the whole store: it is then read as an immutable file,
    as ``memspool context`` reads it (memspool.store.db).
    """
    uri = "file:" + db.replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        conn.close()
        try:
            waiting = os.stat(db + "-wal").st_size > 0
        except OSError:
            waiting = False
        if waiting:
            raise
        conn = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None)
    return conn


def payload_and_home(argv: list[str], base: ModuleType) -> tuple[dict[str, object], str]:
    data = json.loads(sys.stdin.buffer.read(MAX_PAYLOAD + 1)[:MAX_PAYLOAD] or b"{}")
    if not isinstance(data, dict):
        raise ValueError("the payload is not a JSON object")
    home = argv[argv.index("--home") + 1] if "--home" in argv[:-1] else base.home.default_home()
    return data, home


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGALRM, _give_up)
    signal.setitimer(signal.ITIMER_REAL, DEADLINE_SECS)
    try:
        base = _base_package()
        data, home = payload_and_home(argv, base)
        project = base.project.project_name(data.get("cwd"))
        conn = read_only(os.path.join(home, base.home.DB_NAME))
        try:
            row = conn.execute("SELECT text FROM context_blocks WHERE project = ?",
                               (project,)).fetchone()
        finally:
            conn.close()
        if row is None or not row[0]:
            return 0
        out = {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                      "additionalContext": row[0]}}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001, S110 - a session must never fail because of memory
        pass
    return 0


if __name__ == "__main__":
    main(sys.argv)
    os._exit(0)
