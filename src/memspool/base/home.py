"""The home folder's layout, shared by the hook, the drainer and the CLI.

Standard library only: the hook resolves its home and names its files
through this module, with no site-packages, so every part of memspool
agrees on where state lives without importing the hook script.
"""

from __future__ import annotations

import os
import stat
import sys

from memspool.base.errors import HomeError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Final

__all__ = [
    "CONFIG_NAME",
    "CONTEXT_EVENT",
    "DB_NAME",
    "DRAINER_ARGS",
    "DRAINER_LOG",
    "ERROR_LOG",
    "HOOK_EVENTS",
    "HOOK_MARKER",
    "HOOK_TIMEOUT_SECS",
    "LOCK_NAME",
    "PID_NAME",
    "RECALL_EVENT",
    "RECALL_TIMEOUT_SECS",
    "SPOOL_NAME",
    "HomeError",
    "check_owner",
    "check_private_folder",
    "default_home",
]

SPOOL_NAME: Final = "spool"
DB_NAME: Final = "memspool.db"
CONFIG_NAME: Final = "config.toml"
LOCK_NAME: Final = "drainer.lock"
#: Written by a drainer while it holds the lock, removed before it lets go.
PID_NAME: Final = "drainer.pid"
DRAINER_LOG: Final = "drainer.log"
#: Where the hook reports what it could not do.
ERROR_LOG: Final = "hook-errors.log"
#: The drainer is told where home is; it runs with site-packages (no -S) but
#: ignores PYTHON* variables (-E) and the current folder (-P).
DRAINER_ARGS: Final = ("-E", "-P", "-m", "memspool.drainer", "--detached")

#: The capture hook's events. Stop and SubagentStop end a turn; PreCompact
#: comes before context is summarised away; SessionEnd lets a held-back tail
#: ship when a session closes.
HOOK_EVENTS: Final = ("Stop", "SubagentStop", "PreCompact", "SessionEnd")
#: The recall hooks' events: the context block at session start, and (opt-in)
#: the memories that match a prompt as it is submitted.
CONTEXT_EVENT: Final = "SessionStart"
RECALL_EVENT: Final = "UserPromptSubmit"
#: Seconds Claude Code gives a recall hook; each has its own, shorter deadline.
RECALL_TIMEOUT_SECS: Final = 5
#: A trailing shell comment that marks memspool's entries in settings.json.
HOOK_MARKER: Final = "# memspool-hook"
#: Seconds Claude Code gives the hook; it needs about 10 ms.
HOOK_TIMEOUT_SECS: Final = 10


def default_home(env: Mapping[str, str] | None = None) -> str:
    """``MEMSPOOL_HOME`` if set, else the platform's user data folder for memspool.

    The same answer as ``platformdirs.user_data_dir("memspool", appauthor=False)``
    (a test holds the two together), computed without site-packages so the
    hook finds the home the CLI uses.
    """
    env = os.environ if env is None else env
    explicit = env.get("MEMSPOOL_HOME", "").strip()
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Application Support")
    else:
        # The XDG spec: an unset, empty or relative XDG_DATA_HOME means the default.
        base = env.get("XDG_DATA_HOME", "").strip()
        if not base or not os.path.isabs(base):
            base = os.path.expanduser("~/.local/share")
    return os.path.join(base, "memspool")


def _check_uid(path: str, st: os.stat_result) -> None:
    if st.st_uid != os.getuid():
        raise HomeError(f"{path} belongs to uid {st.st_uid}, not to this user; memspool "
                        f"keeps its state only in a folder of its own user", path)


def check_owner(path: str) -> None:
    """Refuse a folder that belongs to another user (it is tightened, not refused,
    when it is merely too open and ours)."""
    _check_uid(path, os.stat(path))


def check_private_folder(path: str) -> None:
    """Refuse a folder that is not ours or that others may write into.

    A folder another user can write to lets them plant a symlink where a
    state file should be; one they own can be changed under us at will.
    Raises :class:`HomeError`; a missing folder is fine (it is created 0700).
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        st = os.stat(path)  # a symlinked home is the user's choice; its target is checked
    if not stat.S_ISDIR(st.st_mode):
        raise HomeError(f"{path} is not a folder; move it aside or point MEMSPOOL_HOME "
                        f"elsewhere", path)
    _check_uid(path, st)
    if st.st_mode & 0o022:
        raise HomeError(
            f"{path} is writable by others (mode {st.st_mode & 0o777:o}); "
            f"run `chmod 700 {path}` or any memspool command to make it private", path)
