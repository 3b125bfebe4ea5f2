"""Broken homes get one clear sentence and exit 1, never a traceback, and lose nothing."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SPOTTER, payload, run_cli

#: Every command that touches the home, as a user would type it.
COMMANDS = [
    ["status"], ["status", "--json"], ["slices", "list"], ["slices", "list", "--json"],
    ["slices", "show", "1"], ["drainer", "--once"], ["drainer", "--resume"],
    ["drainer", "--once", "--json"], ["install", "--settings", "SETTINGS"],
    ["install", "--settings", "SETTINGS", "--json"], ["capture"], ["captures", "list"],
]


def _run(args: list[str], settings: Path) -> subprocess.CompletedProcess[bytes]:
    argv = [str(settings) if a == "SETTINGS" else a for a in args]
    return run_cli(*argv, input=b"Pitfall: the pool leaks a connection per retry.", check=False)


def _assert_clear_failure(proc: subprocess.CompletedProcess[bytes], args: list[str],
                          *, says: str) -> None:
    assert proc.returncode == 1, (args, proc)
    assert b"Traceback" not in proc.stderr + proc.stdout, (args, proc.stderr.decode())
    if "--json" in args or args == ["capture"]:
        report = json.loads(proc.stdout)
        assert report["ok"] is False and says in report["error"], (args, report)
    else:
        lines = [line for line in proc.stderr.decode().splitlines()
                 if not line.startswith("memspool: `captures` was renamed")]
        assert len(lines) == 1 and says in lines[0], (args, lines)


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_a_home_that_is_a_file(args: list[str], home: Path, tmp_path: Path) -> None:
    home.write_text("not a folder\n")
    _assert_clear_failure(_run(args, tmp_path / "settings.json"), args, says="is not a folder")
    assert home.read_text() == "not a folder\n"
    assert not (tmp_path / "settings.json").exists()  # nothing half-installed


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_read_commands_do_not_create_a_mistyped_home(tmp_path: Path) -> None:
    typo = tmp_path / "no-such-home"
    for args in (["status"], ["slices", "list"], ["slices", "show", "1"]):
        run_cli("--home", str(typo), *args, check=False)
        assert not typo.exists(), args
    shown = run_cli("--home", str(typo), "status").stdout.decode()
    assert "does not exist yet" in shown
    failed = run_cli("--home", str(typo), "slices", "list", check=False)
    assert failed.returncode == 1 and b"There is no memspool home" in failed.stderr


def test_forget_and_maintain_do_not_create_a_mistyped_home(tmp_path: Path) -> None:
    # They act on memory that exists: a typo gets the sentence, not an empty home.
    typo = tmp_path / "no-such-home"
    for args in (["memories", "forget", "3"], ["maintain"], ["maintain", "--json"]):
        failed = run_cli("--home", str(typo), *args, check=False)
        _assert_clear_failure(failed, args, says="There is no memspool home")
        assert not typo.exists(), args


def test_an_import_into_a_new_home_says_it_made_one(tmp_path: Path) -> None:
    # A restore onto a new machine is an import into a new home: it works, and says so,
    # since a mistyped --home is one too.
    line = {"key": "pool-leak", "summary": "The pool leaks a connection per retry.",
            "body": "Each retry opens one.", "project": "api", "type": "pitfall"}
    source = tmp_path / "backup.jsonl"
    source.write_text(json.dumps(line) + "\n")
    new = tmp_path / "new-home"
    first = run_cli("--home", str(new), "memories", "import", str(source))
    assert b"made a new home at" in first.stderr and b"1 new" in first.stdout
    again = run_cli("--home", str(new), "memories", "import", str(source))
    assert b"made a new home" not in again.stderr and b"1 unchanged" in again.stdout


def _drained_home(projects: Path) -> None:
    transcript = projects / "s1.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    run_cli("capture", "--project", "api",
            input=b"Pitfall: the pool leaks a connection per retry.")
    from memspool.spool import append
    append(str(Path(os.environ["MEMSPOOL_HOME"]) / "spool"),
           payload("SessionEnd", "s1", transcript))
    run_cli("drainer", "--once")


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_damaged_store_is_reported_by_status_and_advice_is_given(
        home: Path, projects: Path) -> None:
    _drained_home(projects)
    db = home / "memspool.db"
    data = bytearray(db.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page, overwritten
    db.write_bytes(bytes(data))
    for name in ("memspool.db-wal", "memspool.db-shm"):
        (home / name).unlink(missing_ok=True)
    status = json.loads(run_cli("status", "--json").stdout)
    assert status["store"].startswith("unusable:") and "damaged" in status["store"]
    assert status["slices_total"] is None
    plain = run_cli("status").stdout.decode()  # counts it cannot read say so, not "None"
    assert "None" not in plain and "slices queued:     unknown (of unknown)" in plain
    failed = run_cli("slices", "list", check=False)
    assert failed.returncode == 1 and b"Move it aside" in failed.stderr
    assert b"Traceback" not in failed.stderr


@contextlib.contextmanager
def _mounted(tmp_path: Path, options: str) -> Iterator[Path]:
    """A tmpfs of our own (root only), for a full disk or a read-only home."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small or read-only file system needs root")
    point = tmp_path / "mnt"
    point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_read_only_home_can_still_be_read(
        tmp_path: Path, projects: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _mounted(tmp_path, "size=16m,mode=0700") as point:
        home = point / "home"
        monkeypatch.setenv("MEMSPOOL_HOME", str(home))
        _drained_home(projects)
        before = json.loads(run_cli("status", "--json").stdout)
        subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
        after = json.loads(run_cli("status", "--json").stdout)
        assert after["store"] == "ok" and after["slices_total"] == before["slices_total"] > 0
        listed = json.loads(run_cli("slices", "list", "--json").stdout)
        assert len(listed) == before["slices_total"]
        assert run_cli("slices", "show", str(listed[0]["id"])).stdout
        for args in (["drainer", "--once"], ["capture"]):
            proc = _run(args, tmp_path / "settings.json")
            _assert_clear_failure(proc, args, says="ead-only")
            assert b"Move it aside" not in proc.stdout + proc.stderr


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_full_disk_is_named_and_the_store_is_not_called_damaged(
        tmp_path: Path, projects: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _mounted(tmp_path, "size=8m,mode=0700") as point:
        home = point / "home"
        monkeypatch.setenv("MEMSPOOL_HOME", str(home))
        _drained_home(projects)
        memories = json.loads(run_cli("status", "--json").stdout)["memories"]
        filler = point / "filler"
        with filler.open("wb", buffering=0) as out, contextlib.suppress(OSError):
            while True:
                out.write(b"\0" * 65536)
        proc = run_cli("capture", "--project", "api", check=False,
                       input=b"Decision: keep zstd at level 10 for every slice we store.\n"
                             + b"x" * 300_000)
        report = json.loads(proc.stdout)
        assert proc.returncode == 1 and not report["ok"]
        assert "full" in report["error"] and "Move it aside" not in report["error"]
        status = json.loads(run_cli("status", "--json").stdout)
        assert status["store"] == "ok" and status["memories"] == memories
        drained = run_cli("drainer", "--once", check=False)
        assert b"Traceback" not in drained.stderr and b"Move it aside" not in drained.stderr
