"""Shared fixtures: every test gets its own MEMSPOOL_HOME and Claude folder."""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memspool.archivist import CaptureOptions, CaptureReport, capture, manual_origin
from memspool.config import Config, load_config
from memspool.drainer import Drainer
from memspool.drainer.lock import drainer_pid
from memspool.store import connect

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
SPOTTER = FIXTURES / "spotter-subagent.jsonl"
CCVIEWER = FIXTURES / "ccviewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
SPOTTER_AGENT = (
    FIXTURES / "spotter-ae4a77f8-aedd-4bc1-888f-c94edc91af04" / "subagents" / "agent-aac57f5.jsonl"
)
REPO = Path(__file__).resolve().parent.parent
#: Where each XDG variable points, under the test's own HOME.
XDG_FOLDERS = {
    "XDG_DATA_HOME": ".local/share", "XDG_CONFIG_HOME": ".config",
    "XDG_STATE_HOME": ".local/state", "XDG_CACHE_HOME": ".cache",
}


@pytest.fixture(autouse=True)
def memspool_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private home and Claude folder; nothing of the real user's is read or written.

    HOME, CLAUDE_CONFIG_DIR, every XDG folder and MEMSPOOL_HOME point into
    the test's temporary folder, so a command that falls back to a default
    (``~/.claude/settings.json``, the platform data folder) lands there too.
    """
    home = tmp_path / "home"
    projects = tmp_path / "claude" / "projects"
    projects.mkdir(parents=True)
    user_home = tmp_path / "user"
    user_home.mkdir()
    for name in list(os.environ):
        if name.startswith(("MEMSPOOL_", "XDG_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(user_home))
    for name, folder in XDG_FOLDERS.items():
        monkeypatch.setenv(name, str(user_home / folder))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("MEMSPOOL_HOME", str(home))
    monkeypatch.setenv("MEMSPOOL_TRANSCRIPT_ROOTS", str(projects))
    # Keep detached drainers short-lived so tests do not leave them behind.
    monkeypatch.setenv("MEMSPOOL_IDLE_GRACE_SECS", "0.3")
    yield home
    _kill_drainers(home)


def _kill_drainers(home: Path) -> None:
    pid = drainer_pid(load_config(home, env={}))
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def home(memspool_env: Path) -> Path:
    return memspool_env


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    return tmp_path / "claude" / "projects"


@pytest.fixture
def config(memspool_env: Path) -> Config:
    """The test's configuration (its own home, from the autouse fixture)."""
    return load_config()


@pytest.fixture
def conn(config: Config) -> Iterator[sqlite3.Connection]:
    """An open store connection, closed after the test."""
    connection = connect(config)
    yield connection
    connection.close()


@pytest.fixture
def drainer(home: Path, request: pytest.FixtureRequest,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Drainer]:
    """A ready drainer; ``@pytest.mark.settings(key=value)`` changes its settings."""
    marker = request.node.get_closest_marker("settings")
    for key, value in (marker.kwargs if marker else {}).items():
        monkeypatch.setenv(f"MEMSPOOL_{key.upper()}", str(value))
    d = Drainer(load_config())
    d.initialize()
    yield d
    d.shutdown()


#: The longest any test waits for one thing: a wait that runs out fails the test
#: with what it waited for, well before the test's own time-out.
WAIT_SECS = 30.0


def _described(predicate: Callable[[], object]) -> str:
    """What a condition is, for a failure message: its source line where there is one."""
    with contextlib.suppress(OSError, TypeError):
        return " ".join(inspect.getsource(predicate).split())
    return repr(predicate)


def wait_for(
    predicate: Callable[[], object], timeout: float = WAIT_SECS, interval: float = 0.05
) -> object:
    """Poll ``predicate`` until it returns something truthy; fail the test at the deadline,
    naming the condition."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:g} s for: {_described(predicate)}")
        time.sleep(interval)


def run_cli(
    *args: str, input: bytes | None = None, check: bool = True,
    env: dict[str, str] | None = None, hide: tuple[str, ...] = (),
    timeout: float = WAIT_SECS,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m memspool ARGS`` in a real process with the test's environment
    (and ``env`` on top of it); the packages named in ``hide`` cannot be imported
    there, as if they were not installed. A command still running after
    ``timeout`` seconds fails the test, named."""
    start = ["-m", "memspool"]
    if hide:
        start = ["-c", f"import runpy, sys\nsys.modules.update(dict.fromkeys({list(hide)!r}))\n"
                       f"runpy.run_module('memspool', run_name='__main__', alter_sys=True)"]
    try:
        proc = subprocess.run([sys.executable, *start, *args], input=input,
                              capture_output=True, timeout=timeout, check=False,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        pytest.fail(f"memspool {' '.join(args)} was still running after {timeout:g} s")
    if check and proc.returncode != 0:
        pytest.fail(f"memspool {' '.join(args)} exited {proc.returncode}: {proc.stderr.decode()}")
    return proc


def payload(
    event: str, session: str, transcript: Path, cwd: Path | str = "/tmp", **extra: object
) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(transcript), "cwd": str(cwd),
                       "hook_event_name": event, **extra}).encode()


def capture_with(text: str, *, config: Config, conn: sqlite3.Connection,
                 project: str | None = None, session: str | None = None,
                 source: str | None = None, slice_id: int | None = None,
                 **options: Any) -> CaptureReport:
    """The capture verb as the Service calls it: where the notes go as one
    :class:`Origin` (with :func:`manual_origin`'s defaults), how it runs as
    :class:`CaptureOptions` (``dry_run``, ``max_entities``, ``passive``,
    ``llm``, ``now``, ``profiles``)."""
    return capture(text, config=config, conn=conn,
                   origin=manual_origin(project, session, source, slice_id),
                   options=CaptureOptions(**options))
