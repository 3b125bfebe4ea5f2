"""The MCP server over a raw stdio pipe: every line answered, a vanished client survived.

The SDK's own client cannot send a lone surrogate (it encodes valid Unicode only)
nor a malformed line, so these tests write JSON-RPC lines themselves, as a
JavaScript client (or a broken one) would.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import WAIT_SECS
from mcp.client.session import ClientSession
from test_mcp import _session

from memspool.mcp.refusals import refusal
from memspool.mcp.wire import without_surrogates
from memspool.service import Service


class Raw:
    """`memspool mcp` with pipes this test writes and reads line by line."""

    def __init__(self, home: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memspool", "mcp"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "MEMSPOOL_HOME": str(home)})
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        assert self.answer()["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any] | str | bytes) -> None:
        line = (message if isinstance(message, bytes) else
                (message if isinstance(message, str) else json.dumps(message)).encode())
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], WAIT_SECS)
        if not ready:
            pytest.fail(f"waited {WAIT_SECS:g} s for an answer from the MCP server")
        reply: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return reply

    def call(self, number: int, tool: str, arguments: str) -> dict[str, Any]:
        """Call ``tool`` with ``arguments`` written as raw JSON text."""
        self.send(f'{{"jsonrpc": "2.0", "id": {number}, "method": "tools/call", "params": '
                  f'{{"name": "{tool}", "arguments": {arguments}}}}}')
        reply = self.answer()
        assert reply["id"] == number
        return reply

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=WAIT_SECS)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"the MCP server was still running {WAIT_SECS:g} s after its input "
                        f"closed")
        if self.proc.stdout is not None and not self.proc.stdout.closed:
            self.proc.stdout.close()
        with self.proc.stderr:
            return self.proc.stderr.read().decode(errors="replace")


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_lone_surrogate_in_arguments_is_answered_and_stored_as_a_replacement(
        home: Path) -> None:
    raw = Raw(home)
    try:
        saved = raw.call(1, "save", '{"title": "Deploy \\ud83d window", '
                                    '"content": "Deploys run on Tuesdays \\udc00.", '
                                    '"project": "shop"}')
        assert not saved["result"]["isError"], saved
        found = raw.call(2, "search", '{"query": "deploy \\ud83d"}')
        assert found["result"]["structuredContent"]["results"]
        captured = raw.call(3, "capture", '{"text": "Pitfall: the \\ud83d cache stampedes '
                                          'when every key expires at once.", '
                                          '"project": "shop"}')
        assert not captured["result"]["isError"], captured
        # A well-formed pair is still one emoji.
        paired = raw.call(4, "save", '{"title": "Ship \\ud83d\\ude80 it", '
                                     '"content": "Releases go out on Fridays.", '
                                     '"project": "shop"}')
        assert not paired["result"]["isError"]
    finally:
        err = raw.close()
    assert "Traceback" not in err, err
    with Service(home) as service:
        summaries = {row.memory.summary for row in service.memories()}
    assert "Deploy \ufffd window" in summaries and "Ship \U0001f680 it" in summaries


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_client_that_disconnects_mid_call_leaves_no_traceback(home: Path) -> None:
    raw = Raw(home)
    text = "\n\n".join(f"Pitfall: worker pool {n} drains under load when its queue is full."
                       for n in range(20))
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "capture", "arguments": {"text": text, "project": "p"}}})
    assert raw.proc.stdout is not None
    raw.proc.stdout.close()  # the client is gone before the answer comes
    err = raw.close()
    assert raw.proc.returncode == 0
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_repairing_a_line_keeps_everything_else() -> None:
    assert without_surrogates(b'{"a": "x"}\n') == b'{"a": "x"}\n'
    assert without_surrogates(b"not json \\ud800\n") == b"not json \\ud800\n"
    fixed = json.loads(without_surrogates(b'{"a": ["\\ud800", {"\\udfff": 1}], "b": 2}\n'))
    assert fixed == {"a": ["\ufffd", {"\ufffd": 1}], "b": 2}


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_save_says_which_field_was_empty(home: Path) -> None:
    async def body(session: ClientSession) -> None:
        for arguments, said in (({"title": " ", "content": "Deploys run Tuesdays."},
                                 "the title was empty"),
                                ({"title": "Deploy window", "content": ""},
                                 "the content was empty"),
                                ({"title": "", "content": ""},
                                 "the title and the content were empty")):
            result = await session.call_tool("save", {**arguments, "project": "shop"})
            assert result.is_error and said in result.content[0].text, result

    _session(home, body)


#: Lines that are no JSON-RPC message, each with the error code and id of its answer.
MALFORMED = (
    (b"not json, password=hunter2", -32700, None),
    (b"\xff\xfe\x80 not UTF-8", -32700, None),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"q": "\xe9t\xe9"}}',
     -32700, None),  # JSON, but a Latin-1 byte where UTF-8 is due
    (b'{"jsonrpc": "2.0", "id": 2}', -32600, 2),
    (b"[1, 2]", -32600, None),
    (b"42", -32600, None),
    (b'{"jsonrpc": "2.0", "id": "seven", "method": 5, "token": "hunter2"}', -32600, "seven"),
)


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_every_line_that_is_no_message_is_answered_and_the_next_is_served(home: Path) -> None:
    raw = Raw(home)
    try:
        for line, code, request_id in MALFORMED:
            raw.send(b"")  # a blank line is skipped, unanswered
            raw.send(b"  \t")
            raw.send(line)
            reply = raw.answer()
            assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id, (line, reply)
            assert reply["error"]["code"] == code, (line, reply)
            said = reply["error"]["message"]
            assert said.endswith(".") and said.count(". ") == 0, said  # one sentence
            assert "hunter2" not in said and "not json" not in said, said  # the line not echoed
        raw.send({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
        listed = raw.answer()
        assert listed["id"] == 9 and listed["result"]["tools"], listed
    finally:
        err = raw.close()
    assert raw.proc.returncode == 0
    assert "Traceback" not in err, err


@pytest.mark.parametrize(("line", "code", "request_id", "reason"), [
    (b"{\"jsonrpc\": \"2.0\", \"id\": 3", -32700, None, "not JSON"),
    (b"\xc3\x28", -32700, None, "not valid UTF-8"),
    (b'"ghp_0123456789"', -32600, None, "a string, not a JSON-RPC object"),
    (b'{"id": 4, "method": "tools/list"}', -32600, 4, '"jsonrpc": "2.0"'),
    (b'{"jsonrpc": "2.0", "id": true, "result": {}}', -32600, None, '"id" is neither'),
    (b'{"jsonrpc": "2.0", "id": 1.5, "result": {}}', -32600, None, '"id" is neither'),
    (b'{"jsonrpc": "2.0", "id": "a", "method": "x", "params": [1]}', -32600, "a",
     '"params" is not an object'),
    (b'{"jsonrpc": "2.0", "id": 5, "result": 1}', -32600, 5, "not a well-formed"),
])
def test_a_refusal_says_what_was_wrong_and_answers_the_id_it_can_read(
        line: bytes, code: int, request_id: int | str | None, reason: str) -> None:
    error = refusal(line)
    assert error is not None
    assert (error.error.code, error.id) == (code, request_id)
    assert reason in error.error.message
    assert b"ghp_" not in line or "ghp_" not in error.error.message


def test_a_message_is_let_through_as_it_is() -> None:
    assert refusal(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\n') is None
    assert refusal(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}') is None
    assert refusal(b'{"jsonrpc": "2.0", "id": "x", "result": {}}') is None
