"""Every way into the store redacts: one test drives each door and then reads everything.

The doors: the installed hook (a transcript through the spool, the drainer and the
archivist), `memspool capture`, the MCP tools, the HTTP routes, `memories import`,
topic keys (MCP, HTTP and import), and an LLM's notes. Each gets secrets of its own,
some in disguise (a zero-width space, a fullwidth prefix, an HTML entity, a lower-case
AWS key id), so a door that lets one through is named by it. Afterwards nothing of any
secret may be found in any slice, memory, history, provenance, export, context block,
or in the raw database and WAL files.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SPOTTER, run_cli, wait_for
from mcp.client.session import ClientSession
from redact_corpus import aws_key_id, github, openai_project, slack_bot, stripe
from redact_obfuscated import _fullwidth
from test_capture_llm import Reply, _Server, ollama, serve, url  # noqa: F401 - the fixture
from test_http import Server
from test_mcp import _data, _session

from memspool.service import Service

_R = random.Random(180)
#: Secrets by the door they go through.
SECRETS: dict[str, str] = {
    "hook": github(_R), "hook-key-id": aws_key_id(_R),
    "capture": stripe(_R),
    "mcp-save": slack_bot(_R), "mcp-key": aws_key_id(_R), "mcp-capture": github(_R),
    "mcp-session": github(_R),
    "http-save": openai_project(_R), "http-key": aws_key_id(_R), "http-capture": github(_R),
    "http-source": github(_R),
    "import": stripe(_R), "import-key": aws_key_id(_R), "import-session": github(_R),
    "llm": github(_R),
}
WINDOW = 10


def _leaks(text: str) -> list[str]:
    """The doors whose secret has a stretch in ``text`` (in any case)."""
    lowered = text.lower()
    return sorted(door for door, secret in SECRETS.items()
                  if any(secret[i:i + WINDOW].lower() in lowered
                         for i in range(len(secret) - WINDOW + 1)))


def _record(kind: str, uuid: str, text: str) -> bytes:
    message: dict[str, Any] = ({"role": "user", "content": text} if kind == "user" else
                               {"role": "assistant", "id": f"msg_{uuid}",
                                "content": [{"type": "text", "text": text}]})
    return json.dumps({"type": kind, "uuid": uuid, "sessionId": "door-session",
                       "message": message}).encode() + b"\n"


def _through_the_hook(tmp_path: Path, projects: Path) -> None:
    settings = tmp_path / "settings.json"
    run_cli("install", "--settings", str(settings))
    command = json.loads(settings.read_text())["hooks"]["PreCompact"][-1]["hooks"][0]["command"]
    transcript = projects / "door-session.jsonl"
    token, key_id = SECRETS["hook"], SECRETS["hook-key-id"]
    transcript.write_bytes(SPOTTER.read_bytes() + b"".join([
        _record("user", "u1", f"Remember: the deploy bot logs in with {token[:6]}\u200b"
                              f"{token[6:]} and the key id {key_id.lower()}."),
        _record("assistant", "a1", f"Decision: the deploy bot uses GITHUB_TOKEN={token} and "
                                   f"AWS key {key_id.lower()} from now on, kept in the vault."),
    ]))
    env = {k: v for k, v in os.environ.items() if k != "MEMSPOOL_HOME"}
    subprocess.run(["sh", "-c", command], env=env, timeout=30, check=True, input=json.dumps({
        "session_id": "door-session", "transcript_path": str(transcript), "cwd": str(tmp_path),
        "hook_event_name": "PreCompact", "trigger": "manual"}).encode())
    wait_for(lambda: json.loads(run_cli("status", "--json").stdout)["slices_total"] >= 1)
    wait_for(lambda: not json.loads(run_cli("status", "--json").stdout)["drainer_running"])
    run_cli("maintain")


def _through_mcp(home: Path) -> None:
    async def body(session: ClientSession) -> None:
        token = SECRETS["mcp-save"]
        _data(await session.call_tool("save", {
            "title": f"Slack bot {token}", "project": "shop", "key": SECRETS["mcp-key"],
            "content": f"The alert bot posts with {token.replace('-', '&#45;', 1)} to #ops."}))
        _data(await session.call_tool("capture", {
            "text": f"Pitfall: CI fails when GH_TOKEN={SECRETS['mcp-capture']} expires; "
                    f"rotate it monthly.", "project": "shop",
            "session": f"ci {SECRETS['mcp-session']}"}))

    _session(home, body)


def _through_http(home: Path, tmp_path: Path) -> None:
    server = Server(home, tmp_path / "http.log", 8 * 1024 * 1024)
    try:
        token = SECRETS["http-save"]
        status, _ = server.request("POST", "/memories", {
            "title": f"OpenAI key {token[:8]}\u00ad{token[8:]}", "project": "shop",
            "content": f"The summariser calls the API with OPENAI_API_KEY={token}.",
            "key": SECRETS["http-key"].lower()})
        assert status == 200
        status, _ = server.request("POST", "/capture", {
            "text": f"Decision: the release job pushes with {SECRETS['http-capture']} "
                    f"from the vault.", "project": "shop",
            "source": f"release {SECRETS['http-source']}"})
        assert status == 200
    finally:
        log = server.stop()
    assert "Traceback" not in log


def _through_import(tmp_path: Path) -> None:
    token = SECRETS["import"]
    dump = tmp_path / "shared.jsonl"
    dump.write_bytes(json.dumps({
        "project": "shop", "key": f"billing {SECRETS['import-key']}", "type": "decision",
        "summary": f"Billing uses {token}", "layer": "canonical", "confidence": 1.0,
        "body": f"Billing charges through STRIPE_SECRET_KEY={token} in production.",
        "provenance": [{"session": SECRETS["import-session"], "source": "manual"}],
    }).encode() + b"\n")
    run_cli("memories", "import", str(dump))
    run_cli("memories", "import", str(dump), "--trust")  # trusted or not, redacted


def _through_an_llm(start: Callable[[Reply], _Server]) -> None:
    token = SECRETS["llm"]
    server = start(ollama({"notes": [
        {"type": "decision", "summary": f"Deploy token is {_fullwidth(token[:4])}{token[4:]}",
         "body": f"The deploy job reads GITHUB_TOKEN={token} from the runner."}]}))
    report = json.loads(run_cli(
        "capture", "--project", "shop", "--llm-endpoint", url(server, "/api/generate"),
        "--llm-model", "m", input=b"We talked about the deploy token for a while today.").stdout)
    assert report["distiller"] == "llm", report


def _everything(home: Path) -> dict[str, str]:
    """Every text memspool keeps or shows, by where it was read."""
    seen: dict[str, str] = {}
    with Service(home) as service:
        for row in service.slices(limit=1000):
            seen[f"slice {row.id}"] = service.slice_text(row.id)
        for row in service.memories(limit=1000):
            seen[f"memory {row.memory.id}"] = json.dumps(service.get(row.memory.id).as_dict())
        seen["export"] = b"".join(service.export()).decode()
        projects = {row.memory.project for row in service.memories(limit=1000)}
        for project in projects:
            seen[f"context {project}"] = service.context(project).text
    seen["raw files"] = b"".join(
        path.read_bytes() for path in home.iterdir()
        if path.name.startswith("memspool.db") and path.is_file()).decode("latin-1")
    return seen


@pytest.mark.slow  # every front end and file, one after another
def test_every_door_redacts(home: Path, tmp_path: Path, projects: Path,
                            serve: Callable[[Reply], _Server]) -> None:  # noqa: F811
    doors: list[tuple[str, Callable[[], None]]] = [
        ("hook", lambda: _through_the_hook(tmp_path, projects)),
        ("capture", lambda: run_cli("capture", "--project", "shop", input=(
            f"Decision: payments use {_fullwidth(SECRETS['capture'][:3])}"
            f"{SECRETS['capture'][3:]} in staging.").encode())),
        ("mcp", lambda: _through_mcp(home)),
        ("http", lambda: _through_http(home, tmp_path)),
        ("import", lambda: _through_import(tmp_path)),
        ("llm", lambda: _through_an_llm(serve)),
    ]
    for _, door in doors:
        door()
    seen = _everything(home)
    with Service(home) as service:
        keys = {row.memory.key for row in service.memories(limit=1000)}
        assert len(service.memories(limit=1000)) >= 8, keys
    # Each door's text did arrive (the keys of key doors redacted, not dropped).
    assert {"redacted-aws", "billing-redacted-aws"} <= keys, keys
    assert any(text.count("[REDACTED:") for text in seen.values())
    leaks = {where: _leaks(text) for where, text in seen.items() if _leaks(text)}
    assert leaks == {}, leaks
