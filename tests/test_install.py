"""memspool install / uninstall against real settings.json files, and the systemd unit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SPOTTER, payload, run_cli, wait_for

from memspool.base.home import CONTEXT_EVENT, RECALL_EVENT
from memspool.config import load_config
from memspool.install import HOOK_EVENTS, HOOK_MARKER, install_systemd_unit

#: Every event a plain `memspool install` hooks: capture, and the context block.
INSTALLED = (*HOOK_EVENTS, CONTEXT_EVENT)


def _ours(settings: dict) -> dict[str, list[str]]:  # type: ignore[type-arg]
    return {
        event: [h["command"] for g in groups for h in g.get("hooks", [])
                if HOOK_MARKER in h["command"]]
        for event, groups in settings.get("hooks", {}).items()
    }


USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
    },
}


def test_install_merges_keeps_others_is_idempotent_and_backs_up(tmp_path: Path, home: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(USER_SETTINGS))
    run_cli("install", "--settings", str(settings))
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["permissions"] == USER_SETTINGS["permissions"]
    assert data["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert data["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]
    ours = _ours(data)
    assert all(len(ours[e]) == 1 for e in HOOK_EVENTS)
    command = ours["Stop"][0]
    assert " -I -S " in command and f"--home {home}" in command
    backups = list(tmp_path.glob("settings.json.memspool-backup-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == USER_SETTINGS
    before = settings.read_bytes()
    run_cli("install", "--settings", str(settings))
    assert settings.read_bytes() == before  # idempotent: nothing changed, no new backup
    assert len(list(tmp_path.glob("settings.json.memspool-backup-*"))) == 1
    assert home.stat().st_mode & 0o777 == 0o700


def test_uninstall_removes_only_memspool(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(USER_SETTINGS))
    run_cli("install", "--settings", str(settings))
    run_cli("uninstall", "--settings", str(settings))
    assert json.loads(settings.read_text()) == USER_SETTINGS


def test_refuses_to_overwrite_unparseable_settings(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    broken = b'{"hooks": {"Stop": [ // a comment and a trailing comma,\n]}'
    settings.write_bytes(broken)
    proc = run_cli("install", "--settings", str(settings), check=False)
    assert proc.returncode == 1
    assert b"not valid JSON" in proc.stderr and b"Nothing was changed" in proc.stderr
    assert settings.read_bytes() == broken
    assert not list(tmp_path.glob("settings.json.memspool-backup-*"))


@pytest.mark.parametrize("number", [b"1e999", b"-1E400", b"NaN", b"Infinity"])
def test_refuses_a_number_it_could_not_write_back(tmp_path: Path, number: bytes) -> None:
    # 1e999 is JSON that Python reads as inf and would write back as Infinity, which
    # no JSON reader takes: the whole file would be lost to Claude Code. NaN and
    # Infinity are not JSON at all.
    settings = tmp_path / "settings.json"
    text = b'{"model": "x", "limit": ' + number + b"}"
    settings.write_bytes(text)
    proc = run_cli("install", "--settings", str(settings), check=False)
    assert proc.returncode == 1
    assert number in proc.stderr and b"Nothing was changed" in proc.stderr
    assert settings.read_bytes() == text
    assert not list(tmp_path.glob("settings.json.memspool-backup-*"))
    settings.write_bytes(b'{"limit": 1.5e300, "small": 1e-400}')
    run_cli("install", "--settings", str(settings))
    kept = json.loads(settings.read_text())
    assert kept["limit"] == 1.5e300 and kept["small"] == 0.0 and "hooks" in kept


def test_default_settings_path_honours_claude_config_dir(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    run_cli("install")
    data = json.loads((tmp_path / "cc" / "settings.json").read_text())
    assert set(_ours(data)) == set(INSTALLED)
    mode = (tmp_path / "cc" / "settings.json").stat().st_mode & 0o777
    assert mode == 0o600  # a new settings file is private


def test_project_scope_writes_dot_claude(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run([sys.executable, "-m", "memspool", "install", "--scope", "project"],
                   cwd=project, check=True, capture_output=True, timeout=60)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert set(_ours(settings)) == set(INSTALLED)


def test_plugin_manifest_and_hooks_json_are_valid() -> None:
    root = Path(__file__).resolve().parent.parent
    manifest = json.loads((root / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "memspool"
    hooks = json.loads((root / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(HOOK_EVENTS) <= set(hooks)
    for event in HOOK_EVENTS:
        command = hooks[event][0]["hooks"][0]["command"]
        assert "${CLAUDE_PLUGIN_ROOT}" in command and "capture.py" in command


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
@pytest.mark.parametrize("home_name", ["home", "my memspool 100%"])
def test_systemd_units_verify(tmp_path: Path, home_name: str) -> None:
    home = tmp_path / home_name
    units = install_systemd_unit(load_config(home), tmp_path / "units")
    text = units[0].read_text()
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}  # --user needs one, CI has none
    proc = subprocess.run(["systemd-analyze", "--user", "verify", *map(str, units)],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    problems = [line for line in (proc.stdout + proc.stderr).splitlines()
                if "memspool-" in line]
    assert proc.returncode == 0 and not problems, proc.stdout + proc.stderr
    if " " in home_name:  # quoted, with % doubled so systemd does not read a specifier
        assert f'--home "{tmp_path}/my memspool 100%%"' in text


def test_install_systemd_writes_the_unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    run_cli("install", "--settings", str(tmp_path / "s.json"), "--systemd")
    folder = tmp_path / "xdg" / "systemd" / "user"
    unit = (folder / "memspool-drainer.service").read_text()
    assert "Type=exec" in unit and "Restart=on-failure" in unit
    assert "-m memspool.drainer --watch --home" in unit
    maintain = (folder / "memspool-maintain.service").read_text()
    assert "Type=oneshot" in maintain and "-m memspool maintain --home" in maintain
    assert "OnCalendar=hourly" in (folder / "memspool-maintain.timer").read_text()


def test_a_symlinked_settings_file_stays_a_symlink(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    real.write_text(json.dumps(USER_SETTINGS))
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    run_cli("install", "--settings", str(link))
    assert link.is_symlink()
    ours = _ours(json.loads(real.read_text()))
    assert all(len(ours[event]) == 1 for event in HOOK_EVENTS)


def test_install_records_the_transcript_roots_for_every_drainer(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A drainer started without CLAUDE_CONFIG_DIR (systemd, a terminal) still accepts them."""
    monkeypatch.delenv("MEMSPOOL_TRANSCRIPT_ROOTS")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "work-claude"))
    run_cli("install")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    roots = load_config().transcript_roots
    assert tmp_path / "work-claude" / "projects" in roots
    assert Path("~/.claude/projects").expanduser() in roots
    assert (home / "config.toml").stat().st_mode & 0o777 == 0o600
    before = (home / "config.toml").read_text()
    run_cli("install")  # idempotent
    assert (home / "config.toml").read_text() == before


def test_a_bad_setting_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSPOOL_MAX_CAPTURE_CHARS", "0")
    proc = run_cli("status", check=False)
    assert proc.returncode == 1
    assert b"max_slice_chars must be a number of at least 1, got '0'" in proc.stderr


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_status_says_whether_the_hooks_are_installed(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    before = json.loads(run_cli("status", "--json").stdout)
    assert before["hooks_installed"] == []
    assert "run `memspool install`" in run_cli("status").stdout.decode()
    run_cli("install")
    after = json.loads(run_cli("status", "--json").stdout)
    assert after["hooks_installed"] == list(INSTALLED)
    assert after["hooks_settings"] == str(tmp_path / "cc" / "settings.json")
    run_cli("uninstall")
    assert json.loads(run_cli("status", "--json").stdout)["hooks_installed"] == []


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_concurrent_installs_leave_a_valid_config(tmp_path: Path, home: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMSPOOL_TRANSCRIPT_ROOTS")
    procs = [subprocess.Popen([sys.executable, "-m", "memspool", "install", "--settings",
                               str(tmp_path / f"c{n}" / "settings.json")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for n in range(5)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    roots = load_config().transcript_roots  # parses: the key is there once
    assert sum((tmp_path / f"c{n}" / "projects") in roots for n in range(5)) >= 1


@pytest.mark.skipif(not (REPO / ".venv" / "bin" / "python").exists(),
                    reason="the plugin runs the clone's .venv, made by the README's set-up")
def test_the_plugin_hook_is_drained(tmp_path: Path, home: Path, projects: Path) -> None:
    command = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]["Stop"][0][
        "hooks"][0]["command"]
    transcript = projects / "plugin-session.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    env = {**os.environ, "CLAUDE_PLUGIN_ROOT": str(REPO)}
    subprocess.run(["sh", "-c", command], input=payload("Stop", "plugin-session", transcript),
                   env=env, check=True, timeout=30)
    wait_for(lambda: json.loads(run_cli("status", "--json").stdout)["slices_total"] == 1)


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_recall_on_prompt_is_kept_by_a_plain_install_and_removed_on_request(
        tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    run_cli("install", "--settings", str(settings), "--recall-on-prompt")
    hooks = json.loads(settings.read_text())["hooks"]
    assert "recall.py" in hooks[RECALL_EVENT][0]["hooks"][0]["command"]
    assert "context.py" in hooks[CONTEXT_EVENT][0]["hooks"][0]["command"]
    again = json.loads(run_cli("install", "--settings", str(settings), "--json").stdout)
    assert RECALL_EVENT in json.loads(settings.read_text())["hooks"]
    assert again["removed"] == [] and not again["changed"]
    said = run_cli("install", "--settings", str(settings), "--no-recall-on-prompt").stdout
    assert RECALL_EVENT not in json.loads(settings.read_text())["hooks"]
    assert f"removed: the memspool hook at {RECALL_EVENT}".encode() in said
    plain = run_cli("install", "--settings", str(settings)).stdout
    assert RECALL_EVENT not in json.loads(settings.read_text())["hooks"]
    assert b"removed:" not in plain


def test_the_plugin_hooks_json_is_the_one_install_would_write() -> None:
    from memspool.install import plugin_hooks

    committed = json.loads((Path(__file__).resolve().parent.parent / "hooks" /
                            "hooks.json").read_text())
    assert committed == plugin_hooks()
    assert "--home" not in json.dumps(committed)  # the hook resolves its home like the CLI
