"""``memspool doctor``: each check finds its problem on real files and names the fix."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli

from memspool.base.home import CONTEXT_EVENT, HOOK_EVENTS, HOOK_MARKER
from memspool.config import Config, ensure_private_dir, load_config
from memspool.doctor import Finding, diagnose, diagnose_home
from memspool.hooks import CONTEXT_SCRIPT, HOOK_SCRIPT
from memspool.install import MAINTAIN_UNIT, UNIT_NAME, render_unit
from memspool.spool import append
from memspool.store import MIGRATIONS

#: Well past the doctor's grace for a backlog a hook's drainer is still picking up.
LATER = 120.0

#: This interpreter as a shell command line names it (quoted where its path needs it).
PYTHON = shlex.quote(sys.executable)


def _problems(findings: list[Finding], check: str) -> list[Finding]:
    return [f for f in findings if f.check == check and f.level == "problem"]


def _one_problem(findings: list[Finding], check: str) -> Finding:
    found = _problems(findings, check)
    assert len(found) == 1, findings
    return found[0]


def _healthy() -> Config:
    run_cli("install")
    run_cli("drainer", "--once")
    return load_config()


def _write_settings(command: str) -> Path:
    settings = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    entry = [{"hooks": [{"type": "command", "command": command, "timeout": 10}]}]
    settings.write_text(json.dumps(
        {"hooks": dict.fromkeys((*HOOK_EVENTS, CONTEXT_EVENT), entry)}))
    return settings


def test_a_healthy_install_has_no_problem() -> None:
    findings = diagnose(_healthy())
    assert not [f for f in findings if f.level == "problem"], findings
    notes = {f.check for f in findings if f.level == "note"}
    # Optional parts that are simply not set up are notes.
    assert {"hooks", "systemd", "mcp"} <= notes


def test_the_doctor_creates_nothing(home: Path) -> None:
    diagnose(load_config())
    assert not home.exists()


def test_missing_hooks_are_a_problem_fixed_by_install(config: Config) -> None:
    problem = _one_problem(diagnose(config), "hooks")
    assert "Stop" in problem.message and CONTEXT_EVENT in problem.message
    assert problem.fix == "run `memspool install`"


def test_a_missing_session_start_hook_is_a_problem(config: Config) -> None:
    _healthy()
    settings = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    data = json.loads(settings.read_text())
    del data["hooks"][CONTEXT_EVENT]
    settings.write_text(json.dumps(data))
    problem = _one_problem(diagnose(config), "hooks")
    assert CONTEXT_EVENT in problem.message and "Stop" not in problem.message
    assert "memspool install" in (problem.fix or "")


def test_recall_on_prompt_absent_is_only_a_note(config: Config) -> None:
    _healthy()
    note = next(f for f in diagnose(config) if f.check == "hooks" and f.level == "note")
    assert "opt-in" in note.message
    assert note.fix == "run `memspool install --recall-on-prompt`"


def test_a_hook_pointing_at_a_deleted_interpreter(config: Config) -> None:
    _write_settings(f"/nonexistent/python -I -S {shlex.quote(HOOK_SCRIPT)} "
                    f"--home {shlex.quote(str(config.home))} {HOOK_MARKER}")
    problem = _one_problem(diagnose(config), "hooks")
    assert "/nonexistent/python" in problem.message
    assert problem.fix == "run `memspool install`"


def test_a_hook_pointing_at_a_deleted_script(config: Config, tmp_path: Path) -> None:
    gone = tmp_path / "old-venv" / "capture.py"
    _write_settings(f"{shlex.quote(sys.executable)} -I -S {shlex.quote(str(gone))} "
                    f"--home {shlex.quote(str(config.home))} {HOOK_MARKER}")
    problem = _one_problem(diagnose(config), "hooks")
    assert str(gone) in problem.message


def test_hooks_for_another_home_are_a_problem(config: Config, tmp_path: Path) -> None:
    _write_settings(f"{shlex.quote(sys.executable)} -I -S {shlex.quote(CONTEXT_SCRIPT)} "
                    f"--home {shlex.quote(str(tmp_path / 'other'))} {HOOK_MARKER}")
    problem = _one_problem(diagnose(config), "hooks")
    assert "another home" in problem.message


def test_transcripts_outside_the_roots_are_a_problem_with_the_line_to_add(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home whose config.toml names other roots (a demo's, kept with --home) refuses
    every frame of the sessions whose hooks write to it: nothing is captured."""
    monkeypatch.delenv("MEMSPOOL_TRANSCRIPT_ROOTS")  # the roots are config.toml's alone
    run_cli("install")
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    config_toml = home / "config.toml"
    config_toml.write_text(f"transcript_roots = {json.dumps([str(tmp_path / 'demo')])}\n")
    problem = _one_problem(diagnose(load_config()), "hooks")
    assert f"Transcripts in {projects} are outside transcript_roots" in problem.message
    assert problem.fix is not None and str(projects) in problem.fix
    config_toml.write_text(f"transcript_roots = {json.dumps([str(projects.parent)])}\n")
    assert not _problems(diagnose(load_config()), "hooks")  # a root above it holds it


def test_a_settings_file_linked_from_dotfiles_is_not_a_roots_problem(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """~/.claude/settings.json may be a link into a dotfiles folder; the transcripts are
    still beside the link, in ~/.claude/projects, not in the dotfiles folder."""
    monkeypatch.delenv("MEMSPOOL_TRANSCRIPT_ROOTS")
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "settings.json").write_text("{}")
    (Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json").symlink_to(
        dotfiles / "settings.json")
    run_cli("install")
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    assert projects in load_config().transcript_roots
    # The roots that hold the transcripts, and nothing of the link's target: no problem.
    (load_config().home / "config.toml").write_text(
        f"transcript_roots = {json.dumps([str(projects)])}\n")
    assert not _problems(diagnose(load_config()), "hooks")


def test_the_plugin_form_is_not_checked_as_a_path(config: Config) -> None:
    _write_settings('p="${CLAUDE_PLUGIN_ROOT}/.venv/bin/python"; [ -x "$p" ] || p=python3; '
                    f'"$p" -I -S "${{CLAUDE_PLUGIN_ROOT}}/hooks/capture.py" {HOOK_MARKER}')
    # Not installed for this home (no --home), but no "does not exist" either.
    problem = _one_problem(diagnose(config), "hooks")
    assert "does not exist" not in problem.message


def test_unreadable_settings_are_a_problem(config: Config) -> None:
    settings = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.write_text("{not json")
    problem = _one_problem(diagnose(config), "hooks")
    assert str(settings) in problem.message and "fix the file" in (problem.fix or "")


def test_a_home_others_may_read_is_fixed_by_chmod_700(config: Config) -> None:
    _healthy()
    config.home.chmod(0o755)
    problem = _one_problem(diagnose(config), "home")
    assert "755" in problem.message
    assert problem.fix == f"run `chmod 700 {config.home}`"


def test_a_home_others_may_write_says_the_hook_refuses_it(config: Config) -> None:
    _healthy()
    config.home.chmod(0o777)
    problem = _one_problem(diagnose(config), "home")
    assert "refuses" in problem.message


def test_a_file_others_may_read_is_fixed_by_chmod_600(config: Config) -> None:
    _healthy()
    config.db_path.chmod(0o644)
    problem = _one_problem(diagnose(config), "home")
    assert "memspool.db (644)" in problem.message
    assert f"chmod 600 {config.db_path}" in (problem.fix or "")
    assert "memspool drainer --once" in (problem.fix or "")


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_the_drainer_fixes_what_the_home_check_finds(config: Config) -> None:
    _healthy()
    config.home.chmod(0o755)
    (config.home / "config.toml").chmod(0o644)
    run_cli("drainer", "--once")
    assert not _problems(diagnose(config), "home")


def test_a_home_that_is_a_file_or_missing(config: Config) -> None:
    assert "does not exist" in _one_problem(diagnose(config), "home").message
    config.home.write_text("not a folder")
    problem = _one_problem(diagnose(config), "home")
    assert "not a folder" in problem.message and "mv" in (problem.fix or "")


def test_a_missing_spool_is_a_note(config: Config) -> None:
    ensure_private_dir(config.home)
    note = next(f for f in diagnose(config) if f.check == "spool")
    assert note.level == "note" and "first capture" in note.message


def test_an_open_spool_is_a_problem(config: Config) -> None:
    _healthy()
    config.spool_dir.chmod(0o755)
    problem = _one_problem(diagnose(config), "spool")
    assert problem.fix == f"run `chmod 700 {config.spool_dir}`"


def test_a_damaged_store_is_moved_aside_and_resumed(config: Config) -> None:
    ensure_private_dir(config.home)
    config.db_path.write_bytes(b"this is not a SQLite database, " * 200)
    config.db_path.chmod(0o600)
    problem = _one_problem(diagnose(config), "store")
    assert "damaged" in problem.message
    assert f"mv {config.db_path} {config.db_path}.damaged" in (problem.fix or "")
    assert "memspool drainer --resume" in (problem.fix or "")


def test_a_store_newer_than_this_memspool_is_a_problem(config: Config) -> None:
    _healthy()
    conn = sqlite3.connect(config.db_path)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.close()
    problem = _one_problem(diagnose(config), "store")
    assert "newer than this memspool knows" in problem.message
    assert "upgrade memspool" in (problem.fix or "")


def test_no_store_yet_is_a_note(config: Config) -> None:
    ensure_private_dir(config.home)
    store = next(f for f in diagnose(config) if f.check == "store")
    assert store.level == "note"


def test_a_stale_backlog_with_no_drainer(config: Config) -> None:
    ensure_private_dir(config.home)
    append(str(config.spool_dir), b'{"session_id": "s1"}')
    # Just written: the drainer its hook starts should take it.
    fresh = next(f for f in diagnose(config) if f.check == "drainer")
    assert fresh.level == "note"
    problem = _one_problem(diagnose(config, now=time.time() + LATER), "drainer")
    assert "1 frame(s)" in problem.message
    assert problem.fix == "run `memspool drainer --once`"


def test_a_pid_file_left_by_a_dead_drainer_is_a_note(config: Config) -> None:
    ensure_private_dir(config.home)
    config.pid_path.write_text("999999999\n")
    note = next(f for f in diagnose(config) if f.check == "drainer" and f.level == "note")
    assert note.fix == "run `memspool drainer --resume`"


def test_a_systemd_unit_with_a_missing_interpreter(config: Config) -> None:
    _healthy()
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"
    folder.mkdir(parents=True)
    (folder / UNIT_NAME).write_text(render_unit(config, python="/nonexistent/python"))
    (folder / MAINTAIN_UNIT).write_text(render_unit(config, name=MAINTAIN_UNIT))
    findings = diagnose(config)
    problem = _one_problem(findings, "systemd")
    assert UNIT_NAME in problem.message and "/nonexistent/python" in problem.message
    assert "memspool install --systemd" in (problem.fix or "")
    # The timer is absent: a note, not a problem.
    assert any(f.check == "systemd" and f.level == "note" for f in findings)


def test_units_written_by_install_are_ok(config: Config) -> None:
    run_cli("install", "--systemd")
    run_cli("drainer", "--once")
    findings = [f for f in diagnose(config) if f.check == "systemd"]
    assert [f.level for f in findings] == ["ok", "ok", "ok"]


def _hook_log_line(config: Config, when: float) -> None:
    ensure_private_dir(config.home)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(when))
    with config.hook_log_path.open("a") as log:
        log.write(f"{stamp} hook failed: OSError: [Errno 28] No space left on device\n")


def test_a_recent_hook_error_is_a_problem_an_old_one_a_note(config: Config) -> None:
    _hook_log_line(config, time.time() - 3 * 86400)
    old = [f for f in diagnose(config) if f.check == "logs"]
    assert [f.level for f in old] == ["note"]
    _hook_log_line(config, time.time())
    problem = _one_problem(diagnose(config), "logs")
    assert "No space left" in problem.message
    assert f"rm {config.hook_log_path}" in (problem.fix or "")


def test_the_last_three_drainer_errors_are_notes(config: Config) -> None:
    ensure_private_dir(config.home)
    lines = [f"2025-01-01 10:00:0{i},000 42 ERROR drain pass failed ({i})" for i in range(5)]
    lines.insert(2, "2025-01-01 10:00:00,000 42 WARNING transcript missing")
    config.log_path.write_text("\n".join(lines) + "\n")
    logs = [f for f in diagnose(config) if f.check == "logs"]
    assert [f.level for f in logs] == ["note"] * 3
    assert [f.message[-3:] for f in logs] == ["(2)", "(3)", "(4)"]


def _claude_json(data: object) -> None:
    (Path(os.environ["CLAUDE_CONFIG_DIR"]) / ".claude.json").write_text(json.dumps(data))


def test_mcp_absent_is_a_note_with_the_claude_mcp_add_line_itself(config: Config) -> None:
    mcp = next(f for f in diagnose(config) if f.check == "mcp")
    assert mcp.level == "note"
    assert mcp.fix == (f"run `claude mcp add --scope user memspool -- {PYTHON} -m "
                       f"memspool mcp --home {config.home}`")


def test_mcp_registered_for_a_project_is_ok(config: Config) -> None:
    _claude_json({"projects": {"/src/api": {"mcpServers": {"memspool": {
        "type": "stdio", "command": sys.executable, "args": ["-m", "memspool", "mcp"]}}}}})
    assert next(f for f in diagnose(config) if f.check == "mcp").level == "ok"


def test_mcp_registered_with_a_missing_command_is_a_problem(config: Config) -> None:
    _claude_json({"mcpServers": {"memspool": {"command": "/nonexistent/memspool"}}})
    problem = _one_problem(diagnose(config), "mcp")
    assert "/nonexistent/memspool" in problem.message
    assert problem.fix == (f"run `claude mcp remove --scope user memspool`, then `claude mcp "
                           f"add --scope user memspool -- {PYTHON} -m memspool mcp "
                           f"--home {config.home}`")


def test_a_config_that_does_not_load_is_a_finding(home: Path) -> None:
    ensure_private_dir(home)
    config_file = home / "config.toml"
    config_file.write_text("zstd_level = 0\n")
    try:
        problem = _one_problem(diagnose_home(), "config")
    finally:
        config_file.unlink()  # the shared teardown loads the config too
    assert "zstd_level" in problem.message


# -- the command (passes once `doctor` is registered in memspool.cli) ---------

@pytest.mark.slow  # real processes, several seconds (--durations)
def test_cli_exits_1_with_a_problem_and_0_when_healthy() -> None:
    broken = run_cli("doctor", check=False)
    assert broken.returncode == 1
    assert b"[problem] hooks:" in broken.stdout and b"memspool install" in broken.stdout
    _healthy()
    healthy = run_cli("doctor", check=False)
    assert healthy.returncode == 0, healthy.stdout.decode()
    assert b"0 problem(s)" in healthy.stdout


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
@pytest.mark.parametrize("healthy", [False, True])
def test_cli_json(healthy: bool) -> None:
    if healthy:
        _healthy()
    proc = run_cli("doctor", "--json", check=False)
    report = json.loads(proc.stdout)
    assert report["ok"] is healthy and proc.returncode == (0 if healthy else 1)
    assert {"check", "level", "message", "fix"} == set(report["findings"][0])


def _semantic(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.check == "semantic"]


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_memories_without_a_vector_are_a_note_fixed_by_reindex(config: Config) -> None:
    run_cli("capture", "--project", "shop", input=b"Pitfall: the disk fills up on friday "
            b"because logs are never rotated.", env={"MEMSPOOL_SEMANTIC": "0"})
    waiting = _semantic(diagnose(config))
    assert [f.level for f in waiting] == ["note"] and "1 memories wait" in waiting[0].message
    assert "memspool maintain --reindex" in (waiting[0].fix or "")
    run_cli("maintain", "--reindex")
    done = _semantic(diagnose(config))
    assert [f.level for f in done] == ["ok"] and "1 memories have a vector" in done[0].message


def test_semantic_recall_without_the_extra_is_a_note_with_the_install_command(
        home: Path) -> None:
    proc = run_cli("doctor", "--json", check=False, hide=("model2vec",))
    found = [f for f in json.loads(proc.stdout)["findings"] if f["check"] == "semantic"]
    assert [f["level"] for f in found] == ["note"]
    # The README's words, run by this install's interpreter.
    assert f"{PYTHON} -m pip install '.[semantic]'" in found[0]["fix"]


def test_a_broken_model_or_a_symlinked_vectors_folder_is_a_problem(config: Config,
                                                                  tmp_path: Path) -> None:
    ensure_private_dir(config.home)
    (config.home / "vectors").symlink_to(tmp_path)
    problem = _one_problem(diagnose(config), "semantic")
    assert "symlink" in problem.message and "rm " in (problem.fix or "")
    (config.home / "vectors").unlink()
    broken = load_config(env={**os.environ, "MEMSPOOL_SEMANTIC_MODEL": str(tmp_path)})
    problem = _one_problem(diagnose(broken), "semantic")
    assert "not a model2vec model folder" in problem.message
