"""Where memspool keeps its state, and the settings that steer it.

Everything lives under one home folder: ``MEMSPOOL_HOME`` when set, else the
platformdirs user data folder. ``config.toml`` in that folder holds settings;
an environment variable ``MEMSPOOL_<NAME>`` overrides the key ``<name>``.
The home is private: folders 0700, files 0600.
"""

from __future__ import annotations

import dataclasses
import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from memspool.base import home as layout
from memspool.base.errors import ConfigError, HomeError

__all__ = [
    "CONFIG_NAME",
    "Config",
    "default_home",
    "ensure_private_dir",
    "load_config",
    "private_umask",
    "tighten_home",
]

CONFIG_NAME: Final = layout.CONFIG_NAME
#: Owner-only permissions for everything under the home (docs/architecture.md, invariant 7).
DIR_MODE: Final = 0o700
FILE_MODE: Final = 0o600
#: The LLM timeout's default; a value that is not a positive number means this too.
DEFAULT_LLM_TIMEOUT_SECS: Final = 30.0


def default_home(env: Mapping[str, str] | None = None) -> Path:
    """The home folder: ``MEMSPOOL_HOME`` if set, else the user data folder."""
    return Path(layout.default_home(os.environ if env is None else env))


def _default_transcript_roots(env: Mapping[str, str]) -> tuple[Path, ...]:
    roots = [Path("~/.claude/projects").expanduser()]
    config_dir = env.get("CLAUDE_CONFIG_DIR", "").strip()
    if config_dir:
        roots.append(Path(config_dir).expanduser() / "projects")
    return tuple(roots)


@dataclasses.dataclass(frozen=True)
class Config:
    """Resolved settings. Build one with :func:`load_config`."""

    home: Path
    #: Kept characters below which a slice is held back (not lost) until more
    #: arrives or a PreCompact/SessionEnd forces it out.
    size_floor_chars: int = 400
    #: Kept characters per slice; a longer piece of transcript becomes several slices.
    max_slice_chars: int = 200_000
    #: A held-back slice older than this ships at the next drain anyway.
    hold_max_secs: float = 3600.0
    #: Seconds a detached drainer lingers for late transcript lines and new
    #: frames before it exits.
    idle_grace_secs: float = 3.0
    #: The watch daemon also runs a pass this often without a wake-up, for
    #: held-back slices and retries.
    watch_tick_secs: float = 30.0
    #: How long a transcript that does not exist yet is retried.
    missing_retry_secs: float = 86400.0
    #: A transcript line longer than this is skipped unread, counted, and
    #: marked in the slice text. 64 MiB: Claude Code's longest lines are
    #: tool results (an Edit carries a whole file); parsing one costs a few
    #: times its size in memory, which must stay bounded.
    max_line_bytes: int = 64 * 1024 * 1024
    #: zstd level for stored slices: 10 is where ratio gains flatten on
    #: transcript text while compression still runs at tens of MB/s.
    zstd_level: int = 10
    #: Transcripts are only read below these folders (a payload's path is
    #: never trusted on its own).
    transcript_roots: tuple[Path, ...] = ()
    #: Seconds a detached drainer may spend digesting queued slices into
    #: memory once the spool is drained; a new frame stops it at once.
    digest_budget_secs: float = 2.0
    #: A provisional memory no session contradicted for this long becomes canonical.
    promote_after_days: float = 7.0
    #: Importance halves for every this many days nobody recalls a memory.
    importance_half_life_days: float = 30.0
    #: A memory whose importance decays below this is archived (kept, out of recall).
    archive_floor: float = 0.1
    #: The context block's hard limit in characters (Claude Code replaces hook
    #: output over 10,000 characters with a short preview).
    context_max_chars: int = 8000
    llm_timeout_secs: float = DEFAULT_LLM_TIMEOUT_SECS
    #: Semantic recall: "auto" (on when the semantic extra is installed), "on" or "off".
    semantic: str = "auto"
    #: A model2vec model folder to embed with instead of the one memspool ships.
    semantic_model: str = ""
    llm_endpoint: str = ""
    llm_model: str = ""
    #: Team memory: the drainer and ``maintain`` sync shared projects at most
    #: this often (a failed sync waits longer each time, up to 16 times this).
    team_sync_secs: float = 300.0
    #: Outbox rows pushed, or server changes pulled, per transaction.
    team_batch: int = 1000

    @property
    def spool_dir(self) -> Path:
        return self.home / layout.SPOOL_NAME

    @property
    def db_path(self) -> Path:
        return self.home / layout.DB_NAME

    @property
    def log_path(self) -> Path:
        return self.home / layout.DRAINER_LOG

    @property
    def lock_path(self) -> Path:
        return self.home / layout.LOCK_NAME

    @property
    def pid_path(self) -> Path:
        """Written by a drainer while it holds the lock, removed before it lets go."""
        return self.home / layout.PID_NAME

    @property
    def hook_log_path(self) -> Path:
        """Where the hook reports what it could not do."""
        return self.home / layout.ERROR_LOG


#: Integers that must be positive for the drainer to work at all: a slice
#: and a line need room for at least some text; zstd levels start at 1.
_INT_MINIMUM: Final = {"max_slice_chars": 1, "max_line_bytes": 1, "zstd_level": 1,
                       "context_max_chars": 200, "team_batch": 1}
#: Settings that were renamed: the old name still works for one release.
_RENAMED: Final = {"max_capture_chars": "max_slice_chars"}
#: Each setting's kind, from the annotations of Config (strings, with
#: ``from __future__ import annotations``): a new setting needs no second edit.
_KINDS: Final = {f.name: str(f.type) for f in dataclasses.fields(Config) if f.name != "home"}


def _coerce(key: str, value: Any, origin: str) -> Any:
    if key in _SPECIAL:
        return _SPECIAL[key](value, origin)
    kind = _KINDS.get(key)
    lowest = _INT_MINIMUM.get(key, 0)
    try:
        if kind == "int":
            if isinstance(value, bool):
                raise ValueError
            number = int(value)
            if number < lowest:
                raise ValueError
            return number
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError
            seconds = float(value)
            if not seconds >= 0:  # also rejects NaN
                raise ValueError
            return seconds
    except (TypeError, ValueError):
        raise ConfigError(
            f"{origin}: {key} must be a number of at least {lowest}, got {value!r}. "
            f"Fix the value or remove it to use the default."
        ) from None
    if kind == "str":
        return str(value)
    if key == "transcript_roots":
        if isinstance(value, str):
            value = [part for part in value.split(os.pathsep) if part]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{origin}: transcript_roots must be a list of folder paths.")
        return tuple(Path(v).expanduser().absolute() for v in value)
    raise ConfigError(f"{origin}: unknown setting {key!r}.")


#: The words a three-way switch accepts, and what each means.
_SWITCH: Final = {"auto": "auto", "on": "on", "1": "on", "true": "on", "yes": "on",
                  "off": "off", "0": "off", "false": "off", "no": "off"}


def _switch(value: Any, origin: str) -> str:
    word = str(value).strip().lower()
    if isinstance(value, bool):
        word = "on" if value else "off"
    if word not in _SWITCH:
        raise ConfigError(f"{origin}: semantic must be auto, on (1) or off (0), got {value!r}.")
    return _SWITCH[word]


def _llm_timeout(value: Any, origin: str) -> float:
    return llm_timeout_from(value)  # junk means the default, by contract


#: Settings with a coercion of their own.
_SPECIAL: Final = {"llm_timeout_secs": _llm_timeout, "semantic": _switch}


def llm_timeout_from(raw: object) -> float:
    """Seconds for an LLM call; anything that is not a positive number means 30."""
    try:
        seconds = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return DEFAULT_LLM_TIMEOUT_SECS
    if not 0 < seconds < float("inf"):
        return DEFAULT_LLM_TIMEOUT_SECS
    return seconds


def load_config(home: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Read ``config.toml`` under the home, then apply ``MEMSPOOL_*`` overrides.

    The home is not created here; :func:`ensure_private_dir` does that when a
    command is about to write.
    """
    env = os.environ if env is None else env
    home = (home or default_home(env)).absolute()
    values: dict[str, Any] = {"transcript_roots": _default_transcript_roots(env)}
    config_file = home / CONFIG_NAME
    if config_file.is_file():
        try:
            data = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{config_file} is not valid TOML ({exc}). Fix or remove it."
            ) from None
        for written, value in data.items():
            key = _RENAMED.get(written, written)
            values[key] = _coerce(key, value, str(config_file))
    for old, new in _RENAMED.items():
        if f"MEMSPOOL_{old.upper()}" in env and f"MEMSPOOL_{new.upper()}" not in env:
            values[new] = _coerce(new, env[f"MEMSPOOL_{old.upper()}"], f"MEMSPOOL_{old.upper()}")
    for field in dataclasses.fields(Config):
        if field.name == "home":
            continue
        name = f"MEMSPOOL_{field.name.upper()}"
        if name not in env:
            continue
        values[field.name] = _coerce(field.name, env[name], name)
    return Config(home=home, **values)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) owner-only; tighten it if it already exists.

    Raises :class:`~memspool.base.errors.HomeError` with what to do when the path
    is a file, belongs to someone else or cannot be created.
    """
    try:
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise HomeError(
            f"{path} is not a folder. Move that file aside, or point MEMSPOOL_HOME "
            f"(or --home) at a folder.", str(path)) from None
    except OSError as exc:
        raise HomeError(
            f"Cannot create {path}: {exc.strerror or exc}. Check the path and its "
            f"permissions, or point MEMSPOOL_HOME (or --home) elsewhere.", str(path)) from None
    layout.check_owner(str(path))
    if path.stat().st_mode & 0o777 != DIR_MODE:
        try:
            path.chmod(DIR_MODE)
        except OSError as exc:
            raise HomeError(f"Cannot make {path} private (chmod 700): "
                            f"{exc.strerror or exc}.", str(path)) from None
    return path


#: The files memspool keeps in its home; each is made 0600 if it is not.
_PRIVATE_FILES: Final = (
    layout.DB_NAME, f"{layout.DB_NAME}-wal", f"{layout.DB_NAME}-shm", layout.DRAINER_LOG,
    layout.ERROR_LOG, layout.CONFIG_NAME, layout.LOCK_NAME, layout.PID_NAME,
)


def tighten_home(config: Config) -> None:
    """Make an existing home private: the folders 0700, memspool's files 0600.

    A home made by hand (or by an older tool) may be group- or
    world-readable; its files are narrowed in place. Symlinks are left alone:
    chmod would change whatever they point at.
    """
    ensure_private_dir(config.home)
    if config.spool_dir.is_dir() and not config.spool_dir.is_symlink():
        ensure_private_dir(config.spool_dir)
    names = [*_PRIVATE_FILES]
    names += [p.name for p in config.home.glob(f"{layout.DRAINER_LOG}.*")]
    for name in names:
        path = config.home / name
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mode & 0o077:
            try:
                path.chmod(FILE_MODE)
            except OSError as exc:
                raise HomeError(f"Cannot make {path} private (chmod 600): "
                                f"{exc.strerror or exc}.", str(path)) from None


def private_umask() -> int:
    """Make files this process creates owner-only; returns the previous umask."""
    return os.umask(0o077)
