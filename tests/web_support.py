"""Shared by the memory browser's tests (and scripts/web_screenshots.py): a store
built through the real hooks, and a real `memspool serve` with a small client."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from conftest import run_cli, wait_for

#: What the sessions say: two sessions agree on the refunds root cause; the
#: staging port changes (the older value is superseded); one answer carries
#: HTML and a script, which every page must show as text. (Each answer is one the
#: claim model keeps; what it misses is measured in tests/test_archivist_quality.py.)
FIRST_SESSION = (
    ("Why were refunds counted twice?",
     "Root cause: the refund webhook inserted rows twice because its retries were not "
     "idempotent; the handler now checks the Stripe event id before inserting."),
    ("Which port does staging use?",
     "Heads up: the staging API listens on port 8080, not the default 3000."),
    ("Why does the release banner look broken?",
     "Pitfall: the release banner renders the changelog verbatim because it uses "
     "`|safe`, so a line like <script>alert('memspool')</script> or "
     "<img src=x onerror=alert(2)> runs in the admin page. Escape the changelog "
     "before rendering it."),
    ("ok", "Let me look at the logs first."),
)
SECOND_SESSION = (
    ("Refunds doubled again in the report?",
     "Root cause: the refund webhook inserted rows twice because its retries were not "
     "idempotent. The handler now checks the Stripe event id before inserting, so a "
     "retried event is ignored."),
    ("Staging moved?",
     "Heads up: the staging API listens on port 9090, not the default 3000."),
    ("What about the nightly export?",
     "Decision: the nightly export runs from the VPN host because the reporting replica "
     "rejects connections from outside 10.8.0.0/16."),
)


def _line(kind: str, text: str) -> bytes:
    content: object = text if kind == "user" else [{"type": "text", "text": text}]
    return json.dumps({"type": kind, "uuid": str(uuid.uuid4()),
                       "message": {"role": kind, "content": content}}).encode() + b"\n"


class Claude:
    """Sessions of one project, driven through the installed hooks as Claude Code runs them."""

    def __init__(self, root: Path, projects: Path, name: str = "shop") -> None:
        self.cwd = root / name
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.projects = projects / f"-{name}"
        self.projects.mkdir(parents=True, exist_ok=True)
        settings = root / "settings.json"
        run_cli("install", "--settings", str(settings))
        hooks = json.loads(settings.read_text())["hooks"]
        self.commands = {e: g[-1]["hooks"][0]["command"] for e, g in hooks.items()}
        # Claude Code's environment knows nothing of memspool: the command carries the home.
        self.env = {k: v for k, v in os.environ.items() if k != "MEMSPOOL_HOME"}

    def session(self, *turns: tuple[str, str]) -> str:
        session = str(uuid.uuid4())
        transcript = self.projects / f"{session}.jsonl"
        base = {"session_id": session, "transcript_path": str(transcript),
                "cwd": str(self.cwd)}
        for prompt, answer in turns:
            with transcript.open("ab") as out:
                out.write(_line("user", prompt) + _line("assistant", answer))
            self.fire("Stop", base)
        self.fire("SessionEnd", base)
        return session

    def fire(self, event: str, base: dict[str, str]) -> None:
        proc = subprocess.run(["sh", "-c", self.commands[event]], env=self.env,
                              input=json.dumps({**base, "hook_event_name": event}).encode(),
                              capture_output=True, timeout=30, check=False)
        assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""


def settled() -> dict[str, Any]:
    """Wait until the spool is drained, the drainer gone and the queue digested."""
    def idle() -> dict[str, Any] | None:
        status = json.loads(run_cli("status", "--json").stdout)
        done = (status["pending_frames"] == 0 and not status["drainer_running"]
                and status["slices_total"] > 0 and status["slices_queued"] == 0)
        return status if done else None
    found: dict[str, Any] = wait_for(idle)  # type: ignore[assignment]
    return found


def build_store(root: Path, projects: Path) -> tuple[str, str]:
    """The two sessions through the real hooks and drainer, then `memspool maintain`;
    returns the sessions' ids."""
    claude = Claude(root, projects)
    first = claude.session(*FIRST_SESSION)
    settled()
    second = claude.session(*SECOND_SESSION)
    settled()
    run_cli("maintain")
    return first, second


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.body)


class WebServer:
    """A `memspool serve` process on 127.0.0.1, and a client that keeps one cookie."""

    def __init__(self, home: Path, log: Path, *extra: str) -> None:
        self.home = home
        self.log = log
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        argv = [sys.executable, "-m", "memspool", "serve", "--port", str(self.port), *extra]
        env = {k: v for k, v in os.environ.items() if k not in ("BROWSER", "DISPLAY",
                                                                 "WAYLAND_DISPLAY")}
        with log.open("wb") as err:
            self.proc = subprocess.Popen(argv, stdout=err, stderr=err, env=env,
                                         start_new_session=True)
        wait_for(self._up)
        self.token = (home / "api-token").read_text().strip()
        self.cookie: str | None = None

    def _up(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the server exited {self.proc.returncode}: "
                                 f"{self.log.read_text()}")
        with contextlib.suppress(OSError):
            return self.request("GET", "/health").status == 200
        return False

    def login_url(self) -> str:
        """A one-time sign-in link, as `memspool open` prints it."""
        out = run_cli("open", "--port", str(self.port), "--no-browser",
                      env={"BROWSER": "", "DISPLAY": "", "WAYLAND_DISPLAY": ""})
        url = out.stdout.decode().strip()
        assert re.fullmatch(rf"{re.escape(self.origin)}/login\?code=[\w-]+", url), url
        return url

    def sign_in(self) -> str:
        """Sign this client in; returns its session cookie's value."""
        url = self.login_url()
        answer = self.request("GET", url[len(self.origin):])
        assert answer.status == 303, answer.text
        match = re.match(r"(memspool_session_\d+)=([\w-]+)", answer.headers["set-cookie"])
        assert match is not None, answer.headers
        self.cookie = f"{match.group(1)}={match.group(2)}"
        return self.cookie

    def request(self, method: str, path: str, *, body: bytes | None = None,
                headers: dict[str, str] | None = None, token: bool = False,
                cookie: bool = False) -> Answer:
        sent = dict(headers or {})
        if token:
            sent["Authorization"] = f"Bearer {self.token}"
        if cookie and self.cookie:
            sent["Cookie"] = self.cookie
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            return Answer(response.status, {k.lower(): v for k, v in response.getheaders()},
                          response.read())
        finally:
            conn.close()

    def post_form(self, path: str, fields: dict[str, str], *, origin: str | None = "",
                  **options: Any) -> Answer:
        """A form post as a browser sends it: urlencoded, with this server's Origin
        (``origin=None`` for none, or another origin)."""
        from urllib.parse import urlencode

        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if origin is not None:
            headers["Origin"] = origin or self.origin
        return self.request("POST", path, body=urlencode(fields).encode(), headers=headers,
                            **options)

    def stop(self) -> str:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        return self.log.read_text()
