"""``memspool doctor``: look over an install and say what is wrong and how to fix it.

Each check reads and never writes: the hooks in settings.json, the home's
permissions, the spool, the drainer and its backlog, the store, the logs,
the systemd units, the MCP registration, semantic recall and team memory. Every finding
is ``ok``, a
``note`` (something optional that is simply not set up, or worth knowing)
or a ``problem``, and a problem carries the command that fixes it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from memspool import install
from memspool.base import home as layout
from memspool.base.errors import ConfigError, MemspoolError
from memspool.config import Config, default_home, load_config
from memspool.drainer.lock import drainer_pid
from memspool.recall.embed import install_hint, semantic_state
from memspool.recall.vectors import VECTORS_DIR
from memspool.spool import ACTIVE_NAME, Spool
from memspool.store import MIGRATIONS, damaged
from memspool.store import vectors as vector_rows
from memspool.untrusted import parse_json

__all__ = ["CHECKS", "Finding", "diagnose", "diagnose_home"]

Level: TypeAlias = Literal["ok", "note", "problem"]
#: What a check yields: level, message, and the fix (``None`` when there is nothing to do).
Report: TypeAlias = Iterator[tuple[Level, str, str | None]]

#: The files ``tighten_home`` makes 0600; the doctor checks the same ones.
PRIVATE_FILES: Final = (
    layout.DB_NAME, f"{layout.DB_NAME}-wal", f"{layout.DB_NAME}-shm", layout.DRAINER_LOG,
    layout.ERROR_LOG, layout.CONFIG_NAME, layout.LOCK_NAME, layout.PID_NAME,
)
#: A hook spawns a drainer right after it appends, so frames younger than
#: this are most likely being picked up; older ones with no drainer are stranded.
STALE_BACKLOG_SECS: Final = 60.0
#: A hook error this recent means captures are failing now, not once long ago.
RECENT_HOOK_ERROR_SECS: Final = 24 * 3600.0
#: How many of the latest lines of each log are shown.
LOG_LINES: Final = 3
#: Only the end of a log is read: the drainer's rotates at 1 MiB, the hook's never does.
LOG_TAIL_BYTES: Final = 64 * 1024
#: The drainer log's format is "%(asctime)s %(process)d %(levelname)s %(message)s".
_ERROR_LINE: Final = re.compile(r"^\S+ \S+ \d+ ERROR ")
#: Where the hook logs when the home itself is refused (hooks/capture.py).
_FALLBACK_HOOK_LOG: Final = "/tmp/memspool-hook-errors-{uid}.log"  # noqa: S108 - the hook's path
_PLUGIN_ROOT: Final = "${CLAUDE_PLUGIN_ROOT}"


@dataclasses.dataclass(frozen=True)
class Finding:
    """One thing the doctor found: which check, how bad, what, and how to fix it."""

    check: str
    level: Level
    message: str
    fix: str | None = None


def _q(path: Path | str) -> str:
    return shlex.quote(str(path))


def _runnable(program: str) -> bool:
    """Does ``program`` (a path, or a name looked up on PATH) exist and run?"""
    if os.sep not in program:
        return shutil.which(program) is not None
    return Path(program).is_file() and os.access(program, os.X_OK)


def _install_fix(config: Config, flags: str = "") -> str:
    # The hooks carry the home they were installed for: a home other than the
    # default must be named again.
    home = "" if config.home == default_home() else f" --home {_q(config.home)}"
    return f"run `memspool install{flags}{home}`"


def _our_commands(data: object) -> list[tuple[str, str]]:
    """``(event, command)`` for every memspool hook in a parsed settings.json."""
    def items(value: object) -> list[Any]:
        return value if isinstance(value, list) else []

    hooks = data.get("hooks") if isinstance(data, dict) else None
    return [(event, str(hook.get("command")))
            for event, groups in (hooks.items() if isinstance(hooks, dict) else ())
            for group in items(groups) if isinstance(group, dict)
            for hook in items(group.get("hooks"))
            if isinstance(hook, dict) and layout.HOOK_MARKER in str(hook.get("command", ""))]


def _broken_command(command: str) -> str | None:
    """What is missing for a pinned hook command to run, or ``None``."""
    try:
        words = shlex.split(command, comments=True)  # drops the "# memspool-hook" marker
    except ValueError as exc:
        return f"cannot be parsed ({exc})"
    if not words or not _runnable(words[0]):
        return f"runs {words[0] if words else 'nothing'}, which does not exist or cannot run"
    script = next((w for w in words[1:] if not w.startswith("-")), None)
    if script is not None and script.endswith(".py") and not Path(script).is_file():
        return f"runs the script {script}, which does not exist"
    return None


def check_hooks(config: Config, now: float) -> Report:
    settings = install.default_settings_path("user")
    try:
        data = parse_json(settings.read_bytes()) if settings.exists() else {}
    except (OSError, ValueError) as exc:
        yield ("problem", f"{settings} cannot be read as JSON ({exc}).",
               f"fix the file, then {_install_fix(config)}")
        return
    events = install.installed_events(settings, config.home)
    # SessionStart is part of every install, as the capture events are.
    missing = [e for e in (*layout.HOOK_EVENTS, layout.CONTEXT_EVENT) if e not in events]
    if missing:
        elsewhere = "" if events or not _our_commands(data) else (
            " (memspool's hooks there write to another home)")
        yield ("problem", f"memspool's hooks for {config.home} are missing from {settings}: "
               f"{', '.join(missing)}{elsewhere}.", _install_fix(config))
    else:
        yield "ok", f"Capture and {layout.CONTEXT_EVENT} hooks are in {settings}.", None
    if events:
        # The folder the file is in, not its symlink's target: Claude Code keeps
        # transcripts beside the settings it reads (a dotfiles link points elsewhere).
        yield from _roots_hold(config, settings.absolute().parent / "projects")
    if layout.RECALL_EVENT not in events:
        yield ("note", f"Recall on prompt ({layout.RECALL_EVENT}) is off; it is opt-in.",
               _install_fix(config, " --recall-on-prompt"))
    commands: dict[str, list[str]] = {}
    for event, command in _our_commands(data):
        # The plugin's form is resolved by Claude Code, not by a shell here.
        if _PLUGIN_ROOT not in command:
            commands.setdefault(command, []).append(event)
    for command, hook_events in commands.items():
        broken = _broken_command(command)
        if broken:
            yield ("problem", f"The memspool hook for {', '.join(hook_events)} {broken}.",
                   _install_fix(config))


def _roots_hold(config: Config, projects: Path) -> Report:
    """A problem when the transcripts of the sessions whose hooks write here (the
    settings folder's ``projects``) lie outside ``transcript_roots``: the drainer
    refuses every frame from them, so nothing of those sessions is captured."""
    roots = [root.resolve() for root in config.transcript_roots]
    if not any(projects.resolve().is_relative_to(root) for root in roots):
        yield ("problem", f"Transcripts in {projects} are outside transcript_roots "
               f"({', '.join(map(str, roots)) or 'none'}): the sessions whose hooks write "
               f"here are not captured.", f"add {_q(projects)} to transcript_roots in "
               f"{_q(config.home / layout.CONFIG_NAME)}")


def _lstat(path: Path) -> os.stat_result | None:
    """``path``'s own status, or ``None`` if it is gone (a drainer may seal a segment meanwhile)."""
    try:
        return path.lstat()
    except FileNotFoundError:
        return None


def check_home(config: Config, now: float) -> Report:
    home = config.home
    try:
        st = home.stat()  # a symlinked home is the user's choice; its target counts
    except FileNotFoundError:
        yield "problem", f"The home {home} does not exist.", _install_fix(config)
        return
    if not stat.S_ISDIR(st.st_mode):
        yield ("problem", f"The home {home} is not a folder.", f"move it aside "
               f"(`mv {_q(home)} {_q(f'{home}.aside')}`), then {_install_fix(config)}")
        return
    if st.st_uid != os.getuid():
        yield ("problem", f"The home {home} belongs to uid {st.st_uid}, not to you; memspool "
               f"refuses it.", "point MEMSPOOL_HOME (or --home) at a folder of your own")
        return
    found: list[tuple[Level, str, str | None]] = []
    if st.st_mode & 0o077:
        why = ("others may write into it, so the hook refuses it and captures are lost"
               if st.st_mode & 0o022 else "others may read it")
        found.append(("problem", f"The home {home} has mode {st.st_mode & 0o777:o}: {why}.",
                      f"run `chmod 700 {_q(home)}`"))
    # A symlink is left alone, as tighten_home does: chmod would change its target.
    files = {path: fst for path in (home / name for name in PRIVATE_FILES)
             if (fst := _lstat(path)) and stat.S_ISREG(fst.st_mode)}
    if loose := [p for p, f in files.items() if f.st_uid == st.st_uid and f.st_mode & 0o077]:
        modes = ", ".join(f"{p.name} ({files[p].st_mode & 0o777:o})" for p in loose)
        found.append(("problem", f"Open to others (should be 600): {modes}.", f"run `chmod 600 "
                      f"{' '.join(map(_q, loose))}` (or `memspool drainer --once`, which "
                      f"narrows them all)"))
    if foreign := [str(p) for p, f in files.items() if f.st_uid != st.st_uid]:
        found.append(("problem", f"Not yours: {', '.join(foreign)}.",
                      "move them aside; memspool makes new ones"))
    yield from found or [("ok", f"The home {home} is private (700, files 600).", None)]


def check_spool(config: Config, now: float) -> Report:
    spool = config.spool_dir
    try:
        st = spool.stat()
    except FileNotFoundError:
        yield "note", f"No spool yet at {spool}; it is created at the first capture.", None
        return
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        yield ("problem", f"{spool} is not a folder of yours; the hook refuses it.",
               f"move it aside (`mv {_q(spool)} {_q(f'{spool}.aside')}`); the next capture "
               f"makes a new one")
    elif st.st_mode & 0o077 or not os.access(spool, os.W_OK | os.X_OK):
        yield ("problem", f"{spool} has mode {st.st_mode & 0o777:o}; it must be 700 and "
               f"writable by you.", f"run `chmod 700 {_q(spool)}`")
    else:
        yield "ok", f"The spool {spool} is private and writable.", None


def check_drainer(config: Config, now: float) -> Report:
    pid = drainer_pid(config)
    spool = Spool(config.spool_dir)
    frames, size = spool.pending() if config.spool_dir.is_dir() else (0, 0)
    waiting = f"{frames} frame(s) ({size} bytes) wait in the spool"
    if pid is not None:
        yield "ok", f"A drainer runs (pid {pid}); {waiting}.", None
        return
    if config.pid_path.exists():
        # The pid file outlives its drainer only when that drainer died holding the lock.
        yield ("note", "The last drainer stopped without cleaning up (a crash or a kill); "
               "the next one recovers.", "run `memspool drainer --resume`")
    if not frames:
        yield "ok", "No drainer runs and nothing waits.", None
    elif now - max((st.st_mtime for name in (*spool.sealed_segments(), ACTIVE_NAME)
                    if (st := _lstat(spool.directory / name))), default=0.0) < STALE_BACKLOG_SECS:
        yield ("note", f"{waiting}, written in the last minute; the drainer its hook starts "
               f"should take them.", None)
    else:
        yield "problem", f"{waiting} and no drainer runs.", "run `memspool drainer --once`"


def _schema_version(db: Path) -> int | None:
    """The store's ``user_version``, read only; ``None`` when it cannot be read."""
    try:
        conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1.0)
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def check_store(config: Config, now: float) -> Report:
    db = config.db_path
    if not db.exists():
        yield "note", f"No store yet at {db}; the first drain creates it.", None
        return
    broken = damaged(db)
    if broken is None:
        version = _schema_version(db)
        if version is not None and version > len(MIGRATIONS):
            yield ("problem", f"The store {db} is at schema version {version}, newer than this "
                   f"memspool knows ({len(MIGRATIONS)}): every command refuses it.",
                   "upgrade memspool (a newer install wrote it), then `memspool install` "
                   "so the hooks run it")
            return
        yield "ok", f"The store {db} passes SQLite's quick_check.", None
        return
    # The WAL holds committed pages of this database: it moves with it, or it
    # would be replayed into the new one.
    moves = [f"mv {_q(f'{db}{s}')} {_q(f'{db}.damaged{s}')}" for s in ("", "-wal", "-shm")
             if Path(f"{db}{s}").exists()]
    yield ("problem", f"The store {db} is damaged ({broken}). Transcripts still on disk are "
           f"read again into a new one.", f"with no drainer running, move it aside (keep the "
           f"copy): `{' && '.join(moves)} && memspool drainer --resume`")


def _tail(path: Path) -> list[str]:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            data = handle.read()
    except FileNotFoundError:
        return []
    return [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]


def _stamped(line: str) -> float:
    """The local time hooks/capture.py puts first on a line; 0 if there is none."""
    try:
        return time.mktime(time.strptime(line[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return 0.0


def check_logs(config: Config, now: float) -> Report:
    errors = [line for line in _tail(config.log_path) if _ERROR_LINE.match(line)]
    shown: list[tuple[Level, str, str | None]] = [
        ("note", f"{layout.DRAINER_LOG}: {line}", None) for line in errors[-LOG_LINES:]]
    fallback = Path(_FALLBACK_HOOK_LOG.format(uid=os.getuid()))
    for log, only_ours in ((config.hook_log_path, False), (fallback, True)):
        # The fallback log is shared by every home of this user: only lines
        # naming this home are about it.
        lines = [ln for ln in _tail(log) if not only_ours or str(config.home) in ln]
        shown += [("note", f"{log}: {line}", None) for line in lines[-LOG_LINES:]]
        if lines and now - _stamped(lines[-1]) < RECENT_HOOK_ERROR_SECS:
            shown[-1] = ("problem", shown[-1][1], f"fix what it says (often the home's "
                         f"permissions, checked above), then clear the log: `rm {_q(log)}`")
    yield from shown or [("ok", "No errors in the drainer's or the hook's log.", None)]


def _unit_problem(path: Path, home: Path) -> tuple[Level, str] | None:
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("ExecStart="):
            continue
        try:  # systemd's quoting is close enough to the shell's for these words
            words = shlex.split(line[len("ExecStart="):].lstrip("-@:+!"))
        except ValueError as exc:
            return "problem", f"its ExecStart cannot be parsed ({exc})"
        if not words or not _runnable(words[0]):
            return "problem", f"it runs {words[0] if words else 'nothing'}, which does not exist"
        if "--home" in words[:-1] and Path(words[words.index("--home") + 1]) != home:
            return "note", f"it serves another home, {words[words.index('--home') + 1]}"
    return None


def check_systemd(config: Config, now: float) -> Report:
    # An empty XDG_CONFIG_HOME means unset (XDG spec), as install_systemd_unit reads it.
    folder = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "systemd/user"
    names = (install.UNIT_NAME, install.MAINTAIN_UNIT, install.MAINTAIN_TIMER)
    present = [name for name in names if (folder / name).is_file()]
    fix = ("run `memspool install --systemd`, then `systemctl --user daemon-reload && "
           "systemctl --user enable --now memspool-drainer memspool-maintain.timer`")
    if not present:
        yield ("note", f"No memspool units in {folder} (optional: a drainer that stays up, "
               f"hourly maintenance).", fix)
        return
    for name in present:
        verdict = _unit_problem(folder / name, config.home)
        if verdict:
            yield verdict[0], f"{folder / name}: {verdict[1]}.", fix
        else:
            yield "ok", f"{name} is in {folder}.", None
    if names[2] in present and names[1] not in present:
        yield "problem", f"{names[2]} starts {names[1]}, which is not in {folder}.", fix
    elif len(present) < len(names):
        yield "note", f"Not in {folder}: {', '.join(n for n in names if n not in present)}.", fix


def check_mcp(config: Config, now: float) -> Report:
    # `claude mcp list` is not run: it may reach the network. Claude Code keeps
    # its registrations in .claude.json, user-wide and per project.
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    path = (Path(config_dir).expanduser() if config_dir else Path.home()) / ".claude.json"
    # The command itself: `memspool install --mcp` only prints it where `claude` is missing.
    fix = f"run `{shlex.join(install.mcp_command(config))}`"
    try:
        data = parse_json(path.read_bytes()) if path.exists() else {}
    except (OSError, ValueError) as exc:
        yield "note", f"{path} cannot be read ({exc}).", None
        return
    data = data if isinstance(data, dict) else {}
    projects = data.get("projects")
    tables = [data, *(projects.values() if isinstance(projects, dict) else ())]
    servers = [t.get("mcpServers") for t in tables if isinstance(t, dict)]
    entries = [s["memspool"] for s in servers if isinstance(s, dict) and "memspool" in s]
    gone = [e["command"] for e in entries if isinstance(e, dict)
            and isinstance(e.get("command"), str) and not _runnable(e["command"])]
    if not entries:
        on_path = "" if shutil.which("claude") else " (`claude` is not on PATH either)"
        yield "note", f"No MCP server named memspool in {path}{on_path}.", fix
    elif gone:
        yield "problem", f"memspool's MCP server in {path} runs {gone[0]}: gone.", (
            f"run `claude mcp remove --scope user {install.MCP_NAME}`, then {fix[4:]}")
    else:
        yield "ok", f"The memspool MCP server is registered in {path}.", None


def _vector_counts(config: Config, model: str) -> tuple[int, int, int] | None:
    """(vectors of ``model``, of other models, memories waiting), read-only; ``None``
    when the store has none of that yet."""
    try:
        conn = sqlite3.connect(f"{config.db_path.as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            by_model = vector_rows.count_by_model(conn)
            waiting = vector_rows.pending_count(conn)
        finally:
            conn.close()
    except sqlite3.Error:
        return None  # no store yet, or one from before semantic recall: nothing to say
    ours = by_model.pop(model, 0)
    return ours, sum(by_model.values()), waiting


def check_semantic(config: Config, now: float) -> Report:
    folder = config.home / VECTORS_DIR
    if folder.is_symlink():
        yield ("problem", f"{folder} is a symlink; memspool writes its vector files only in a "
               f"plain folder of its home.", f"remove the link: `rm {_q(folder)}`")
    try:
        state = semantic_state(config)
    except ConfigError as exc:
        yield "problem", str(exc), "fix or remove the semantic_model setting"
        return
    if not state.on or state.encoder is None:
        fix = install_hint() if "not installed" in state.reason else None
        # The reason already holds the command; the fix says it again, on its own.
        reason = state.reason.split(": ")[0] if fix else state.reason
        yield "note", f"Semantic recall is off: {reason}.", fix and f"run `{fix}`"
        return
    counts = _vector_counts(config, state.encoder.hash) if config.db_path.exists() else None
    if counts is None:
        yield "ok", "Semantic recall is on; no memory has a vector yet.", None
        return
    ours, others, waiting = counts
    reindex = "run `memspool maintain --reindex`"
    if others:
        yield ("note", f"{others} memories have vectors of another model: search finds them by "
               f"their words only.", reindex)
    if waiting:
        yield ("note", f"{waiting} memories wait for a vector (the drainer and `memspool "
               f"maintain` embed them).", reindex)
    if not (others or waiting):
        yield "ok", f"Semantic recall is on: {ours} memories have a vector.", None


def check_team(config: Config, now: float) -> Report:
    """Team memory: the server answers, its schema version, membership, lag."""
    if not config.db_path.exists():
        return
    try:
        conn = sqlite3.connect(f"{config.db_path.as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            shared = conn.execute("SELECT count(*) FROM team_projects").fetchone()[0]
            if not shared:
                yield ("note", "Team memory is off: no project is shared (docs/team.md).",
                       None)
                return
            from memspool.team.ops import check

            for found in check(config, conn):
                level: Level = "ok" if found["ok"] else "problem"
                fix = f"`{found['fix']}`" if found["fix"] else None
                yield level, f"{found['check']}: {found['detail']}", fix
        finally:
            conn.close()
    except sqlite3.Error:
        return  # a store from before team memory, or one status says is damaged


#: Each check by the name its findings carry, in the order they are shown.
CHECKS: Final[dict[str, Callable[[Config, float], Report]]] = {
    "hooks": check_hooks, "home": check_home, "spool": check_spool, "drainer": check_drainer,
    "store": check_store, "logs": check_logs, "systemd": check_systemd, "mcp": check_mcp,
    "semantic": check_semantic, "team": check_team,
}


def diagnose(config: Config, *, now: float | None = None) -> list[Finding]:
    """Every check's findings, in order. Reads only; ``now`` is for tests."""
    moment = time.time() if now is None else now
    found: list[Finding] = []
    for name, check in CHECKS.items():
        try:
            found.extend(Finding(name, *report) for report in check(config, moment))
        except (OSError, MemspoolError) as exc:
            # One check that cannot look (a folder it may not read) must not
            # hide what the others find.
            found.append(Finding(name, "problem", f"This check could not finish: {exc}.",
                                 "check that the memspool home and its files are yours"))
    return found


def diagnose_home(home: Path | None = None, *, now: float | None = None) -> list[Finding]:
    """:func:`diagnose` for ``home``; a config.toml that does not load is a finding too."""
    try:
        return diagnose(load_config(home), now=now)
    except ConfigError as exc:
        fallback = Config(home=(home or default_home()).absolute())
        return [Finding("config", "problem", str(exc), f"fix the setting it names, in "
                        f"{fallback.home / layout.CONFIG_NAME} or the environment"),
                *diagnose(fallback, now=now)]
