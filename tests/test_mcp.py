"""The MCP server through the SDK's own client, over a real stdio session."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memspool.base.kinds import NOTE_TYPES

TOOLS = {"capture", "capture_passive", "save", "search", "get", "context", "forget", "stats"}


def _session(home: Path, body: Callable[[ClientSession], Awaitable[None]],
             cwd: Path | None = None) -> None:
    # The server runs the memspool under test: the one PYTHONPATH names, when it names one.
    path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memspool", "mcp"], cwd=cwd,
        env={"MEMSPOOL_HOME": str(home), "HOME": os.environ["HOME"],
             "CLAUDE_CONFIG_DIR": os.environ["CLAUDE_CONFIG_DIR"], **path})

    async def run() -> None:
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                await body(session)

    anyio.run(run)


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(result.content[0].text)


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_every_tool_is_listed_with_a_short_description_and_a_schema(home: Path) -> None:
    async def body(session: ClientSession) -> None:
        tools = (await session.list_tools()).tools
        assert {tool.name for tool in tools} == TOOLS
        for tool in tools:
            assert tool.description and len(tool.description) < 2048
            assert tool.input_schema["type"] == "object"

    _session(home, body)


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_save_search_get_context_forget_and_stats(home: Path) -> None:
    async def body(session: ClientSession) -> None:
        saved = _data(await session.call_tool("save", {
            "title": "Deploy window", "content": "Deploys run Tuesdays 10-12 UTC.",
            "type": "decision", "key": "deploy window", "project": "shop"}))
        assert saved["action"] == "created"
        again = _data(await session.call_tool("save", {
            "title": "Deploy window", "content": "Deploys moved to Wednesdays 14-16 UTC.",
            "type": "decision", "key": "deploy window", "project": "shop"}))
        assert again == {**saved, "action": "updated"}
        captured = _data(await session.call_tool("capture", {
            "text": "Pitfall: the SparklineChart component re-renders on every tick.",
            "project": "shop"}))
        assert captured["created"] == 1
        found = _data(await session.call_tool("search", {"query": "sparkline"}))
        assert [r["type"] for r in found["results"]] == ["pitfall"]
        assert set(found["results"][0]) == {"id", "project", "type", "summary", "score"}
        full = _data(await session.call_tool("get", {"ids": [saved["id"]], "history": True}))
        memory = full["memories"][0]
        assert "Wednesdays" in memory["body"] and "Tuesdays" in memory["history"][0]["body"]
        block = _data(await session.call_tool("context", {"project": "shop"}))
        assert "Deploy window" in block["text"] and "SparklineChart" in block["text"]
        passive = _data(await session.call_tool("capture_passive", {
            "content": "## Key Learnings:\n1. WAL mode lets readers run beside the writer\n",
            "session_id": "s9", "project": "shop"}))
        assert passive == {"saved": 1, "skipped": 0, "total": 1}
        _data(await session.call_tool("forget", {"id": saved["id"]}))
        missing = await session.call_tool("get", {"ids": [saved["id"]]})
        assert missing.is_error and "No memory with id" in missing.content[0].text
        stats = _data(await session.call_tool("stats", {}))
        assert stats["memories"] == 2 and stats["store"] == "ok"

    _session(home, body)


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_value_saved_in_a_later_session_supersedes_and_a_rule_saved_again_corroborates(
        home: Path) -> None:
    said: dict[str, Any] = {}

    def saving(title: str, name: str) -> Callable[[ClientSession], Awaitable[None]]:
        async def body(session: ClientSession) -> None:
            said[name] = _data(await session.call_tool("save", {
                "title": title, "content": f"{title}.", "type": "decision",
                "project": "shop"}))
        return body

    # Each agent session starts a server of its own, as Claude Code does.
    _session(home, saving("The API listens on port 8080", "old"))
    _session(home, saving("Never run migrations from a laptop", "rule"))
    _session(home, saving("The API now listens on port 9090", "new"))
    _session(home, saving("Never run migrations from a laptop", "again"))

    async def check(session: ClientSession) -> None:
        old = _data(await session.call_tool("get", {"ids": [said["old"]["id"]]}))
        assert old["memories"][0]["layer"] == "superseded"
        rule = _data(await session.call_tool("get", {"ids": [said["rule"]["id"]]}))
        assert said["again"]["id"] == said["rule"]["id"]
        assert rule["memories"][0]["sessions"] == 2
        block = _data(await session.call_tool("context", {"project": "shop"}))
        assert "9090" in block["text"] and "8080" not in block["text"]
        typo = _data(await session.call_tool("context", {"project": "shopp"}))
        assert typo["text"] == "" and "no project is known as 'shopp'" in typo["note"]
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert all(kind in (tools["save"].description or "") for kind in NOTE_TYPES)

    _session(home, check)


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_server_whose_folder_is_removed_says_why_and_still_answers_by_name(
        home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "worktree"
    folder.mkdir()

    async def body(session: ClientSession) -> None:
        _data(await session.call_tool("save", {"title": "Releases are cut on Mondays",
                                               "content": "Releases are cut on Mondays.",
                                               "project": "shop"}))
        folder.rmdir()  # a removed git worktree
        gone = await session.call_tool("context", {})
        assert gone.is_error and "folder this runs in is gone" in gone.content[0].text
        named = _data(await session.call_tool("context", {"project": "shop"}))
        assert "Mondays" in named["text"]
        found = _data(await session.call_tool("search", {"query": "releases",
                                                         "project": "shop"}))
        assert len(found["results"]) == 1

    _session(home, body, cwd=folder)


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
@pytest.mark.parametrize("query", ['"', "NOT (", "x" * 10_000])
def test_search_pages_and_takes_any_text(home: Path, query: str) -> None:
    async def body(session: ClientSession) -> None:
        for n in range(12):
            _data(await session.call_tool("save", {
                "title": f"Pool {n} drains", "content": f"Worker pool {n} drains under load.",
                "project": "p"}))
        first = _data(await session.call_tool("search", {"query": "worker pool drains",
                                                         "limit": 5}))
        second = _data(await session.call_tool("search", {"query": "worker pool drains",
                                                          "limit": 5, "offset": 5}))
        assert len(first["results"]) == 5 and first["more"]
        assert not {r["id"] for r in first["results"]} & {r["id"] for r in second["results"]}
        odd = await session.call_tool("search", {"query": query})
        assert not odd.is_error

    _session(home, body)


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_arguments_out_of_range_are_refused_with_the_reason_as_over_http(home: Path) -> None:
    """The bounds the HTTP API and the CLI hold a limit, an offset, a length and a type
    to are the tools' too, stated in their schemas: a call outside them is an error
    that says why, not an answer quietly clamped."""
    async def body(session: ClientSession) -> None:
        schemas = {tool.name: tool.input_schema for tool in (await session.list_tools()).tools}
        limit = schemas["search"]["properties"]["limit"]
        assert (limit["minimum"], limit["maximum"]) == (1, 100)
        _data(await session.call_tool("save", {
            "title": "Deploy window", "content": "Deploys run Tuesdays 10-12 UTC.",
            "project": "shop"}))
        for tool, arguments, said in (
                ("search", {"query": "deploy", "limit": 0}, "limit"),
                ("search", {"query": "deploy", "limit": 10**30}, "limit"),
                ("search", {"query": "deploy", "offset": -3}, "offset"),
                ("search", {"query": "deploy", "type": "evil"}, "type"),
                ("context", {"project": "shop", "max_chars": -5}, "max_chars"),
                ("get", {"ids": list(range(1, 12))}, "ids"),
                ("save", {"title": "t", "content": "c", "type": "nonsense"}, "type")):
            refused = await session.call_tool(tool, arguments)
            assert refused.is_error and said in refused.content[0].text, (tool, refused)
        # A secret in the wrong argument is not said back, by the SDK's type check or ours.
        token = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
        for tool, arguments in (("search", {"query": "deploy", "limit": token}),
                                ("save", {"title": "t", "content": "c", "type": token})):
            refused = await session.call_tool(tool, arguments)
            assert refused.is_error and token[:12] not in refused.content[0].text, refused
            assert "[REDACTED:github]" in refused.content[0].text, refused
        kept = _data(await session.call_tool("search", {"query": "deploy window", "limit": 100}))
        assert [r["summary"] for r in kept["results"]] == ["Deploy window"]

    _session(home, body)


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_whole_number_argument_is_never_true_or_false(home: Path) -> None:
    """The SDK's type check alone reads true as 1 and "1_0" as 10; the HTTP API refuses
    both, and so does every integer argument here: `forget {"id": true}` must not
    forget memory 1."""
    async def body(session: ClientSession) -> None:
        saved = _data(await session.call_tool("save", {
            "title": "Deploy window", "content": "Deploys run Tuesdays 10-12 UTC.",
            "project": "shop"}))
        assert saved["id"] == 1
        for tool, arguments, said in (
                ("forget", {"id": True}, "id"),
                ("get", {"ids": [True]}, "ids"),
                ("search", {"query": "deploy", "limit": True}, "limit"),
                ("search", {"query": "deploy", "offset": False}, "offset"),
                ("context", {"project": "shop", "max_chars": True}, "max_chars"),
                ("search", {"query": "deploy", "limit": "1_0"}, "limit"),
                ("forget", {"id": "\u0661"}, "id")):
            refused = await session.call_tool(tool, arguments)
            assert refused.is_error and said in refused.content[0].text, (tool, refused)
            assert "must be a whole number" in refused.content[0].text, (tool, refused)
        kept = _data(await session.call_tool("get", {"ids": ["1"]}))  # digits as text
        assert [m["id"] for m in kept["memories"]] == [1]

    _session(home, body)


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_project_named_with_a_control_character_is_refused(home: Path) -> None:
    async def body(session: ClientSession) -> None:
        for tool, arguments in (
                ("save", {"title": "Pool", "content": "It leaks.", "project": "a\x1bb"}),
                ("capture", {"text": "Pitfall: the pool leaks.", "project": "a\x1bb"}),
                ("search", {"query": "pool", "project": "a\x1bb"}),
                ("context", {"project": "a\x1bb"})):
            refused = await session.call_tool(tool, arguments)
            assert refused.is_error, (tool, refused)
            assert "holds a control character ('\\x1b')" in refused.content[0].text, refused
        assert _data(await session.call_tool("stats", {}))["memories"] == 0

    _session(home, body)


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_long_query_is_not_said_back_whole(home: Path) -> None:
    """An answer meant to stay small says a query of megabytes back in 200 characters."""
    async def body(session: ClientSession) -> None:
        _data(await session.call_tool("save", {
            "title": "Pool leak", "content": "The worker pool leaks a connection per retry.",
            "project": "p"}))
        query = "worker pool " * 200_000  # 2.4 MB
        result = await session.call_tool("search", {"query": query})
        found = _data(result)
        assert [r["summary"] for r in found["results"]] == ["Pool leak"]
        assert found["query"] == query[:199] + "\u2026"
        assert sum(len(part.text) for part in result.content) < 5_000
        short = _data(await session.call_tool("search", {"query": "worker pool"}))
        assert short["query"] == "worker pool"

    _session(home, body)


def test_install_mcp_registers_with_claude_or_prints_the_command(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import run_cli

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    printed = json.loads(run_cli("install", "--settings", str(tmp_path / "s.json"), "--mcp",
                                 "--json").stdout)["mcp"]
    assert not printed["registered"] and printed["command"].startswith(
        "claude mcp add --scope user memspool -- ")
    assert printed["command"].endswith(f"-m memspool mcp --home {home}")
    # A `claude` that records what it was asked: the real argv, no shell.
    calls = tmp_path / "calls"
    claude = bin_dir / "claude"
    claude.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {calls}\n')
    claude.chmod(0o755)
    done = json.loads(run_cli("install", "--settings", str(tmp_path / "s.json"), "--mcp",
                              "--json").stdout)["mcp"]
    assert done["registered"]
    argv = calls.read_text().splitlines()
    assert argv[:6] == ["mcp", "add", "--scope", "user", "memspool", "--"]
    assert argv[-4:] == ["memspool", "mcp", "--home", str(home)]


def test_the_plugin_ships_the_mcp_server() -> None:
    from memspool.install import plugin_mcp

    root = Path(__file__).resolve().parent.parent
    assert json.loads((root / ".mcp.json").read_text()) == plugin_mcp()
