"""``memspool capture`` as a real process: stdin/--file, the JSON report, errors, --llm."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

LEARNINGS_1 = (
    "## Key Learnings:\n\n"
    "1. bcrypt cost=12 is the right balance for our server performance\n"
    "2. JWT refresh tokens need atomic rotation to prevent race conditions\n"
)
LEARNINGS_2 = (
    "## Key Learnings:\n\n1. bcrypt cost=12 is the right balance\n"
    "2. New learning about rate limiting\n"
)
NOTES = (
    "Pitfall: requests has no default timeout, so a hung server blocks forever.\n\n"
    "We decided to store timestamps as UTC epoch floats.\n\nok\n"
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def cli(
    home: Path,
    *args: str,
    stdin: bytes = b"",
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int, Any, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPOOL_")}
    environment["MEMSPOOL_HOME"] = str(home)
    environment.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "memspool", "capture", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        env=environment,
        cwd=cwd,
        check=False,
    )
    out = proc.stdout.decode()
    return proc.returncode, json.loads(out) if out.strip() else None, proc.stderr.decode()


def rows(home: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(home / "memspool.db") as conn:
        result = conn.execute(sql).fetchall()
    conn.close()
    return result


def test_capture_from_stdin_prints_the_report(home: Path) -> None:
    code, report, _ = cli(home, "--project", "api", stdin=NOTES.encode())
    assert code == 0
    assert list(report) == [
        "ok",
        "captured",
        "created",
        "updated",
        "merged",
        "superseded",
        "skipped",
        "dropped",
        "candidates",
        "dry_run",
        "distiller",
        "notes",
    ]
    assert (report["ok"], report["captured"], report["created"], report["distiller"]) == (
        True,
        2,
        2,
        "rule_based",
    )
    assert [(n["type"], n["action"]) for n in report["notes"]] == [
        ("pitfall", "created"),
        ("decision", "created"),
    ]
    assert rows(home, "SELECT project, layer, importance FROM memories") == [
        ("api", "buffer", 0.6),
        ("api", "buffer", 0.6),
    ]
    assert rows(home, "SELECT DISTINCT session, source FROM provenance") == [
        ("manual-save-api", "manual")
    ]


def test_capture_from_a_file_with_provenance_flags(home: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Decision: SQLite over Postgres\nOne file, no server, WAL is enough.\n")
    code, report, _ = cli(
        home, "--file", str(notes), "--project", "api", "--session", "s1", "--source", "hook"
    )
    assert code == 0 and report["created"] == 1
    assert report["notes"][0]["key"] == "decision-sqlite-over-postgres"
    assert rows(home, "SELECT session, source FROM provenance") == [("s1", "hook")]


def test_the_project_defaults_to_the_git_root(home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "ledger"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg").mkdir()
    code, _, _ = cli(home, stdin=NOTES.encode(), cwd=repo / "pkg")
    assert code == 0
    # No remote: the git root's path is the identity; its name is kept beside it.
    identity = str(repo.resolve())
    assert rows(home, "SELECT DISTINCT project FROM memories") == [(identity,)]
    assert rows(home, "SELECT id, name FROM projects") == [(identity, "ledger")]
    assert rows(home, "SELECT DISTINCT session FROM provenance") == [
        (f"manual-save-{identity}",)]


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_passive_prints_saved_skipped_total(home: Path) -> None:
    code, first, _ = cli(home, "--passive", "--project", "api", stdin=LEARNINGS_1.encode())
    assert (code, first) == (0, {"saved": 2, "skipped": 0, "total": 2})
    code, second, _ = cli(home, "--passive", "--project", "api", stdin=LEARNINGS_2.encode())
    assert (code, second) == (0, {"saved": 1, "skipped": 1, "total": 2})
    assert rows(home, "SELECT DISTINCT type FROM memories") == [("passive",)]


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_dry_run_writes_nothing(home: Path) -> None:
    cli(home, "--project", "api", stdin=b"A first note so the store exists.")
    before = rows(home, "SELECT count(*) FROM memories") + rows(
        home, "SELECT count(*) FROM provenance"
    )
    code, report, _ = cli(home, "--dry-run", "--project", "api", stdin=NOTES.encode())
    assert code == 0 and report["dry_run"] is True and report["created"] == 2
    assert [n["id"] for n in report["notes"]] == [None, None]
    after = rows(home, "SELECT count(*) FROM memories") + rows(
        home, "SELECT count(*) FROM provenance"
    )
    assert before == after


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_max_entities_lowers_never_raises(home: Path) -> None:
    payload = "\n\n".join(
        f"Distinct fact {i}: widget{i} needs gadget{i}." for i in range(25)
    ).encode()
    _, low, _ = cli(home, "--dry-run", "--project", "api", "--max-entities", "3", stdin=payload)
    _, high, _ = cli(home, "--dry-run", "--project", "api", "--max-entities", "99", stdin=payload)
    assert (low["created"], low["dropped"]) == (3, 22)
    assert (high["created"], high["dropped"]) == (20, 5)


@pytest.mark.parametrize("value", ["0", "-3", "three", "2.5", "", "1_0", "\u0665"])
def test_a_bad_max_entities_is_a_json_error(home: Path, value: str) -> None:
    code, report, err = cli(home, "--project", "api", f"--max-entities={value}",
                            stdin=b"A note that is never captured.")
    # The capture's own sentence, as POST /capture says it (test_http.py).
    said = (f"--max-entities must be a whole number of at least 1 (a capture keeps at most "
            f"20 notes: a larger number means 20), got {value!r}.")
    assert code == 1 and report == {"ok": False, "error": said}
    assert err == f"memspool: error: {said}\n"  # and for the person at the terminal
    assert not (home / "memspool.db").exists()  # refused before the store is opened


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (b"", "empty"),
        (b"  \n\t\n", "empty"),
        (b"x" * (4 * 1024 * 1024 + 1), "4 MiB"),
        (b"caf\xe9 is latin-1, not UTF-8", "not UTF-8 (byte 3"),
    ],
)
def test_bad_input_exits_non_zero_with_a_json_error(home: Path, stdin: bytes, message: str) -> None:
    code, report, _ = cli(home, "--project", "api", stdin=stdin)
    assert code == 1
    assert report["ok"] is False and message in report["error"]
    assert set(report) == {"ok", "error"}


def test_a_missing_file_is_a_json_error(home: Path, tmp_path: Path) -> None:
    code, report, _ = cli(home, "--file", str(tmp_path / "nope.md"))
    assert code == 1 and report["ok"] is False and "Cannot read" in report["error"]


def test_passive_and_llm_are_exclusive(home: Path) -> None:
    code, _, err = cli(home, "--passive", "--llm", stdin=LEARNINGS_1.encode())
    assert code == 1 and "not allowed with" in err and len(err.splitlines()) == 1


def test_help_has_an_example() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "memspool", "capture", "--help"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert b"Example:" in proc.stdout and b"--max-entities" in proc.stdout


class _Model(BaseHTTPRequestHandler):
    delay = 0.0
    release = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        if self.delay:
            self.release.wait(self.delay)
        notes = {
            "notes": [
                {
                    "type": "pitfall",
                    "summary": "Model-made note about timeouts",
                    "body": "requests has no default timeout.",
                }
            ]
        }
        data = json.dumps({"response": json.dumps(notes), "done": True}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up waiting, as the slow test intends

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def model() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    server.daemon_threads = False
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    _Model.release.set()
    server.shutdown()
    server.server_close()
    thread.join()
    _Model.release.clear()
    _Model.delay = 0.0


def test_llm_flags_use_the_model(home: Path, model: ThreadingHTTPServer) -> None:
    endpoint = f"http://127.0.0.1:{model.server_address[1]}/api/generate"
    code, report, _ = cli(
        home,
        "--llm",
        "--llm-endpoint",
        endpoint,
        "--llm-model",
        "m",
        "--project",
        "api",
        stdin=NOTES.encode(),
    )
    assert code == 0 and report["distiller"] == "llm" and "llm_fallback" not in report
    assert [n["summary"] for n in report["notes"]] == ["Model-made note about timeouts"]


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_slow_model_falls_back_within_the_env_timeout(
    home: Path, model: ThreadingHTTPServer
) -> None:
    _Model.delay = 30.0
    endpoint = f"http://127.0.0.1:{model.server_address[1]}/api/generate"
    code, report, _ = cli(
        home,
        "--llm",
        "--project",
        "api",
        stdin=NOTES.encode(),
        env={"MEMSPOOL_LLM_ENDPOINT": endpoint, "MEMSPOOL_LLM_TIMEOUT_SECS": "0.5"},
    )
    assert code == 0
    assert report["distiller"] == "rule_based" and "within 0.5 s" in report["llm_fallback"]
    assert report["created"] == 2
