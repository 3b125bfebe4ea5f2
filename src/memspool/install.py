"""Putting memspool's hooks into a Claude Code settings.json, and taking them out.

Merging is idempotent and leaves every other hook and setting alone: our
entries are recognised by a trailing ``# memspool-hook`` shell comment, the
file is backed up before it changes, and a file that does not parse is
never overwritten.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from memspool.base.errors import SettingsError
from memspool.base.home import (
    CONTEXT_EVENT,
    HOOK_EVENTS,
    HOOK_MARKER,
    HOOK_TIMEOUT_SECS,
    RECALL_EVENT,
    RECALL_TIMEOUT_SECS,
)
from memspool.config import CONFIG_NAME, Config, ensure_private_dir
from memspool.hooks import CONTEXT_SCRIPT, HOOK_SCRIPT, RECALL_SCRIPT

__all__ = [
    "HOOK_EVENTS",
    "HOOK_MARKER",
    "default_settings_path",
    "hook_command",
    "install_hooks",
    "install_systemd_unit",
    "installed_events",
    "record_transcript_roots",
    "uninstall_hooks",
]

#: The mode of a settings.json memspool creates.
NEW_SETTINGS_MODE: Final = 0o600
UNIT_NAME: Final = "memspool-drainer.service"
MAINTAIN_UNIT: Final = "memspool-maintain.service"
MAINTAIN_TIMER: Final = "memspool-maintain.timer"


def default_settings_path(scope: str = "user", env: dict[str, str] | None = None) -> Path:
    """The settings.json to edit for ``scope``.

    ``~/.claude/settings.json`` (or under ``CLAUDE_CONFIG_DIR``) for the user;
    ``.claude/settings.json`` in the current folder for a project.
    """
    env = dict(os.environ) if env is None else env
    if scope == "project":
        return Path.cwd() / ".claude" / "settings.json"
    config_dir = env.get("CLAUDE_CONFIG_DIR", "").strip()
    base = Path(config_dir).expanduser() if config_dir else Path.home() / ".claude"
    return base / "settings.json"


def hook_command(home: Path, python: str | None = None, script: str = HOOK_SCRIPT) -> str:
    """The shell command Claude Code runs: this install's interpreter, isolated, no site."""
    interpreter = python or sys.executable
    return (
        f"{shlex.quote(interpreter)} -I -S {shlex.quote(str(script))} "
        f"--home {shlex.quote(str(home))} {HOOK_MARKER}"
    )


def plugin_command(script: str) -> str:
    """A plugin hook's command: the plugin folder's own virtualenv if it has one, else
    python3; no --home, so the hook resolves it as the CLI does (MEMSPOOL_HOME, else the
    platform's user data folder)."""
    return ('p="${CLAUDE_PLUGIN_ROOT}/.venv/bin/python"; [ -x "$p" ] || p=python3; '
            f'"$p" -I -S "${{CLAUDE_PLUGIN_ROOT}}/hooks/{Path(script).name}" {HOOK_MARKER}')


def hook_entries(command: Callable[[str], str], *,
                 recall_on_prompt: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The settings.json ``hooks`` entries, each running ``command(script)``: capture at
    every capture event, the context block at SessionStart, and recall on each prompt
    when asked for."""
    def entry(script: str, timeout: int) -> list[dict[str, Any]]:
        return [{"hooks": [{"type": "command", "command": command(script),
                            "timeout": timeout}]}]

    entries = {event: entry(HOOK_SCRIPT, HOOK_TIMEOUT_SECS) for event in HOOK_EVENTS}
    entries[CONTEXT_EVENT] = entry(CONTEXT_SCRIPT, RECALL_TIMEOUT_SECS)
    if recall_on_prompt:
        entries[RECALL_EVENT] = entry(RECALL_SCRIPT, RECALL_TIMEOUT_SECS)
    return entries


def plugin_hooks() -> dict[str, Any]:
    """The plugin's ``hooks/hooks.json``; a test holds the committed file to this."""
    return {
        "description": "memspool hooks: capture each turn into the spool, and give the "
                       "project's memory back when a session starts",
        "hooks": hook_entries(plugin_command),
    }


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and HOOK_MARKER in str(hook.get("command", ""))


def _finite(text: str) -> float:
    # 1e999 is valid JSON that Python reads as inf and would write back as Infinity,
    # which is not JSON: Claude Code could read none of the file after that.
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(text)
    return value


def _not_json(text: str) -> float:
    raise ValueError(text)  # NaN, Infinity, -Infinity: Python's, not JSON's


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"Cannot read {path}: {exc}. Nothing was changed.", str(path)) from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text, parse_float=_finite, parse_constant=_not_json)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{path} is not valid JSON ({exc}). memspool will not overwrite it: fix the file "
            f"(or point --settings at another one) and run the command again. Nothing was changed.",
            str(path),
        ) from None
    except ValueError as exc:  # a number no JSON writer takes back
        raise SettingsError(
            f"{path} holds the number {str(exc)[:40]}, which memspool cannot write back as it "
            f"is (it is not a finite JSON number). Write it as a finite number or a string and "
            f"run the command again. Nothing was changed.", str(path)) from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} does not hold a JSON object. Nothing was changed.", str(path))
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise SettingsError(
            f"{path} has a \"hooks\" entry memspool does not understand. Nothing was changed.",
            str(path),
        )
    return data


def _strip_ours(hooks: dict[str, Any]) -> int:
    removed = 0
    for event in list(hooks):
        groups = []
        for group in hooks[event]:
            entry = group
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = [h for h in group["hooks"] if not _is_ours(h)]
                removed += len(group["hooks"]) - len(kept)
                if not kept and len(group["hooks"]) > 0:
                    continue
                entry = {**group, "hooks": kept}
            groups.append(entry)
        if groups:
            hooks[event] = groups
        else:
            del hooks[event]
    return removed


def _write(path: Path, data: dict[str, Any]) -> Path | None:
    # A settings.json that is a symlink (dotfiles) is written through: the
    # link stays a link and its target gets the change.
    path = path.resolve()
    backup = None
    # An existing settings.json keeps the mode its owner gave it; a new one
    # is private, since it names this user's paths.
    mode = NEW_SETTINGS_MODE
    if path.exists():
        mode = path.stat().st_mode & 0o777
        backup = path.with_name(f"{path.name}.memspool-backup-{time.strftime('%Y%m%d-%H%M%S')}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    _replace_file(path, json.dumps(data, indent=2, allow_nan=False) + "\n", mode)
    return backup


def _replace_file(path: Path, text: str, mode: int) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.memspool-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)  # exactly ``mode``: the process umask is memspool's private one
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        # Rename over the old file only once the new one is on disk: a crash
        # leaves either the old file or the new, never half of one.
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def record_transcript_roots(config: Config, roots: list[Path]) -> list[str]:
    """Write ``transcript_roots`` into config.toml so every drainer agrees on them.

    A drainer started by systemd or from a terminal lacks Claude Code's
    ``CLAUDE_CONFIG_DIR``; without this, frames from such sessions would be
    refused as outside the roots. An existing setting is never rewritten;
    a root it lacks is reported instead.
    """
    warnings: list[str] = []
    wanted: list[Path] = []
    for root in dict.fromkeys([*config.transcript_roots, *roots]):
        try:
            str(root).encode("utf-8")
        except UnicodeEncodeError:  # TOML holds Unicode text only
            warnings.append(f"skipped transcript root {root!r}: its name is not valid UTF-8")
            continue
        wanted.append(root)
    path = config.home / CONFIG_NAME
    import filelock  # here: only an install writes config.toml, and it is slow to load

    # Two installs at once must not both add the key (TOML refuses a repeat).
    with filelock.FileLock(config.home / "config.lock", mode=0o600):
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if "transcript_roots" in tomllib.loads(text):
            missing = [str(r) for r in roots if r not in config.transcript_roots]
            if missing:
                warnings.append(f"{path} sets transcript_roots without {', '.join(missing)}; "
                                f"add it, or transcripts there are not captured")
            return warnings
        # json.dumps writes a valid TOML array of basic strings (same escapes).
        line = f"transcript_roots = {json.dumps([str(r) for r in wanted])}\n"
        text += ("\n" if text and not text.endswith("\n") else "") + line
        _replace_file(path, text, 0o600)
    return warnings


def _our_events(hooks: dict[str, Any]) -> set[str]:
    """The events that hold a memspool hook (any home) in a settings.json's hooks."""
    return {event for event, groups in hooks.items() if isinstance(groups, list) and any(
        _is_ours(hook) for group in groups if isinstance(group, dict)
        and isinstance(group.get("hooks"), list) for hook in group["hooks"])}


def install_hooks(settings: Path, config: Config, python: str | None = None,
                  transcript_roots: list[Path] | None = None, *,
                  recall_on_prompt: bool | None = None) -> dict[str, Any]:
    """Merge memspool's hook commands into ``settings``; returns what was done, with the
    events whose memspool hook it removed (``removed``).

    ``recall_on_prompt``: add the UserPromptSubmit hook (True), remove it
    (False), or keep it as the file has it (None). ``transcript_roots``
    (besides the configured ones) are where the Claude Code that reads
    ``settings`` keeps its transcripts; they are recorded in config.toml.
    """
    data = _read(settings)
    original = json.dumps(data, sort_keys=True)
    hooks = data.setdefault("hooks", {})
    before = _our_events(hooks)
    if recall_on_prompt is None:
        recall_on_prompt = RECALL_EVENT in before
    _strip_ours(hooks)
    def command(script: str) -> str:
        return hook_command(config.home, python, script)

    entries = hook_entries(command, recall_on_prompt=recall_on_prompt)
    for event, groups in entries.items():
        hooks.setdefault(event, []).extend(groups)
    ensure_private_dir(config.home)
    ensure_private_dir(config.spool_dir)
    warnings = record_transcript_roots(config, transcript_roots or [])
    changed = json.dumps(data, sort_keys=True) != original
    backup = _write(settings, data) if changed else None
    return {"settings": str(settings), "changed": changed,
            "backup": str(backup) if backup else None,
            "events": list(entries), "removed": sorted(before - set(entries)),
            "command": command(HOOK_SCRIPT), "home": str(config.home),
            "warnings": warnings}


def uninstall_hooks(settings: Path) -> dict[str, Any]:
    """Remove memspool's hook entries (only those) from ``settings``.

    A file left holding nothing (``{}``) that memspool created itself (no
    backup of an earlier version exists beside it) is removed.
    """
    data = _read(settings)
    hooks = data.get("hooks")
    removed = _strip_ours(hooks) if isinstance(hooks, dict) else 0
    if isinstance(hooks, dict) and not hooks:
        del data["hooks"]
    deleted = False
    backup = None
    if removed and not data and not _backups(settings):
        settings.resolve().unlink()
        deleted = True
    elif removed:
        backup = _write(settings, data)
    return {"settings": str(settings), "removed": removed, "deleted": deleted,
            "backup": str(backup) if backup else None}


def _backups(settings: Path) -> list[Path]:
    path = settings.resolve()
    return sorted(path.parent.glob(f"{path.name}.memspool-backup-*"))


def installed_events(settings: Path, home: Path) -> list[str]:
    """The events whose memspool hook in ``settings`` writes to ``home`` (none if unreadable)."""
    try:
        data = json.loads(settings.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return []
    wanted = f"--home {shlex.quote(str(home))} {HOOK_MARKER}"
    return [
        event for event, groups in hooks.items() if isinstance(groups, list) and any(
            _is_ours(hook) and wanted in str(hook.get("command", ""))
            for group in groups if isinstance(group, dict)
            for hook in group.get("hooks", []) if isinstance(group.get("hooks"), list)
        )
    ]


#: The command each unit runs, after the interpreter (its --home is appended).
UNIT_COMMANDS: Final = {
    UNIT_NAME: "-m memspool.drainer --watch",
    MAINTAIN_UNIT: "-m memspool maintain",
}


def unit_template(name: str = UNIT_NAME) -> str:
    from importlib.resources import files

    return files("memspool.systemd").joinpath(name).read_text(encoding="utf-8")


def _systemd_word(value: str) -> str:
    """One ExecStart= word: ``%`` starts a systemd specifier, blanks and quotes need quoting."""
    value = value.replace("%", "%%")
    if any(c.isspace() or c in "\"'\\;" for c in value):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def render_unit(config: Config, python: str | None = None, name: str = UNIT_NAME) -> str:
    """Unit ``name`` with this install's interpreter and home filled in."""
    interpreter = python or sys.executable
    lines = unit_template(name).splitlines()
    if name in UNIT_COMMANDS:
        exec_start = (f"ExecStart={_systemd_word(interpreter)} {UNIT_COMMANDS[name]} "
                      f"--home {_systemd_word(str(config.home))}")
        lines = [exec_start if line.startswith("ExecStart=") else line for line in lines]
    return "\n".join(lines) + "\n"


def install_systemd_unit(config: Config, unit_dir: Path | None = None) -> list[Path]:
    """Write the drainer's user unit and the maintenance service and timer; enable them
    with ``systemctl --user enable --now memspool-drainer memspool-maintain.timer``."""
    folder = unit_dir or (
        # An empty XDG_CONFIG_HOME means unset (XDG spec), not the current folder.
        Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "systemd" / "user"
    )
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in (UNIT_NAME, MAINTAIN_UNIT, MAINTAIN_TIMER):
        target = folder / name
        target.write_text(render_unit(config, name=name), encoding="utf-8")
        written.append(target)
    return written


#: The MCP server's name in Claude Code's registry.
MCP_NAME: Final = "memspool"


def mcp_command(config: Config, python: str | None = None) -> list[str]:
    """``claude mcp add`` arguments that register this install's MCP server for the user."""
    interpreter = python or sys.executable
    return ["claude", "mcp", "add", "--scope", "user", MCP_NAME, "--",
            interpreter, "-m", "memspool", "mcp", "--home", str(config.home)]


def register_mcp(config: Config, python: str | None = None) -> dict[str, Any]:
    """Register the MCP server with ``claude mcp add`` when the ``claude`` command exists;
    otherwise return the exact command to run."""
    argv = mcp_command(config, python)
    printable = shlex.join(argv)
    claude = shutil.which("claude")
    if claude is None:
        return {"registered": False, "command": printable,
                "reason": "the claude command is not on PATH; run the command yourself"}
    done = subprocess.run([claude, *argv[1:]], capture_output=True, text=True, timeout=60,
                          check=False)
    if done.returncode != 0:
        return {"registered": False, "command": printable,
                "reason": (done.stderr or done.stdout).strip()[:500]}
    return {"registered": True, "command": printable, "reason": ""}


def plugin_mcp() -> dict[str, Any]:
    """The plugin's ``.mcp.json``; a test holds the committed file to this."""
    launcher = ('p="${CLAUDE_PLUGIN_ROOT}/.venv/bin/python"; [ -x "$p" ] || p=python3; '
                'exec "$p" -m memspool mcp')
    return {"mcpServers": {MCP_NAME: {"command": "sh", "args": ["-c", launcher]}}}
