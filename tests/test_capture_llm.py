"""The LLM path against a real HTTP server on 127.0.0.1: good, junk, slow, and silent."""

from __future__ import annotations

import contextlib
import json
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import capture_with

from memspool.archivist import CaptureReport
from memspool.config import Config, load_config
from memspool.distill import LlmOptions
from memspool.distill.llm import MAX_BODY_CHARS
from memspool.store import memories as memory

#: How long the slow server waits before answering: far beyond the test's timeout.
SLOW_SECS = 10.0
TIMEOUT_SECS = 0.5
PAYLOAD = (
    "We spent the morning on the upload bug.\n\n"
    "The flaky upload test failed because two workers shared one temp directory.\n\n"
    "Decided to give each worker its own tmp_path."
)
GOOD_NOTES = [
    {
        "type": "root-cause",
        "summary": "Flaky upload test: workers shared a temp directory",
        "body": "Two workers shared one temp directory, so uploads collided.",
    },
    {"type": "decision", "summary": "Each worker gets its own tmp_path", "body": ""},
]

Reply = Callable[["_Handler", dict[str, Any]], None]


class _Server(ThreadingHTTPServer):
    # Join handler threads on close so none outlives the test.
    daemon_threads = False
    block_on_close = True

    def __init__(self, reply: Reply) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reply = reply
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.release = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (timeout) closes its socket: expected here


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body))
        self.server.reply(self, body)

    def send(self, status: int, data: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Callable[[Reply], _Server]]:
    started: list[tuple[_Server, threading.Thread]] = []

    def start(reply: Reply) -> _Server:
        server = _Server(reply)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        started.append((server, thread))
        return server

    yield start
    for server, thread in started:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def url(server: _Server, path: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def ollama(content: object) -> Reply:
    def reply(handler: _Handler, body: dict[str, Any]) -> None:
        text = content if isinstance(content, str) else json.dumps(content)
        handler.send(
            200, json.dumps({"model": body.get("model"), "response": text, "done": True}).encode()
        )

    return reply


def openai(content: object) -> Reply:
    def reply(handler: _Handler, body: dict[str, Any]) -> None:
        text = content if isinstance(content, str) else json.dumps(content)
        handler.send(
            200,
            json.dumps(
                {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
            ).encode(),
        )

    return reply


def run(
    conn: sqlite3.Connection, config: Config, llm: LlmOptions, text: str = PAYLOAD, **kwargs: Any
) -> CaptureReport:
    return capture_with(text, config=config, conn=conn, project="api", llm=llm, **kwargs)


def assert_fell_back(report: CaptureReport, reason: str) -> None:
    data = report.as_dict()
    assert data["distiller"] == "rule_based"
    assert reason in str(data["llm_fallback"]), data["llm_fallback"]
    # The rule-based distiller did the work: one note per paragraph.
    assert data["captured"] == 3


# answers well ------------------------------------------------------------------------------------


def test_ollama_answers_well(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config
) -> None:
    server = serve(ollama({"notes": GOOD_NOTES}))
    report = run(
        conn, config, LlmOptions(endpoint=url(server, "/api/generate"), model="qwen2.5:3b")
    )
    data = report.as_dict()
    assert data["distiller"] == "llm" and "llm_fallback" not in data
    assert [(n.type, n.summary, n.action) for n in report.notes] == [
        ("root-cause", "Flaky upload test: workers shared a temp directory", "created"),
        ("decision", "Each worker gets its own tmp_path", "created"),
    ]
    second = memory.get(conn, report.notes[1].id or 0)
    assert (
        second is not None and second.body == "Each worker gets its own tmp_path"
    )  # empty body -> summary
    [(path, body)] = server.requests
    assert path == "/api/generate"
    assert (body["model"], body["stream"], body["format"]) == ("qwen2.5:3b", False, "json")
    assert "two workers shared one temp directory" in body["prompt"]


def test_openai_compatible_answers_well(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config
) -> None:
    server = serve(openai({"notes": GOOD_NOTES}))
    report = run(
        conn, config, LlmOptions(endpoint=url(server, "/v1/chat/completions"), model="local")
    )
    assert report.distiller == "llm" and len(report.notes) == 2
    [(path, body)] = server.requests
    assert path == "/v1/chat/completions"
    assert body["model"] == "local" and body["messages"][0]["role"] == "system"
    assert "two workers shared one temp directory" in body["messages"][1]["content"]


def test_endpoint_and_model_come_from_the_config(
    serve: Callable[[Reply], _Server],
    conn: sqlite3.Connection,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = serve(ollama({"notes": GOOD_NOTES}))
    monkeypatch.setenv("MEMSPOOL_LLM_ENDPOINT", url(server, "/api/generate"))
    monkeypatch.setenv("MEMSPOOL_LLM_MODEL", "from-env")
    report = run(conn, load_config(), LlmOptions())
    assert report.distiller == "llm"
    assert server.requests[0][1]["model"] == "from-env"


def test_only_the_redacted_payload_reaches_the_model(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config
) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    server = serve(
        ollama(
            {
                "notes": [
                    {
                        "type": "pitfall",
                        "summary": f"Token {token} leaked",
                        "body": f"the model echoed {token}",
                    }
                ]
            }
        )
    )
    report = run(
        conn,
        config,
        LlmOptions(endpoint=url(server, "/api/generate")),
        text=f"The deploy token {token} leaked into the logs.",
    )
    assert token not in json.dumps(server.requests)
    found = memory.get(conn, report.notes[0].id or 0)
    assert found is not None and token not in found.summary + found.body


# untrusted output --------------------------------------------------------------------------------


def test_the_models_notes_are_sanitised(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config
) -> None:
    notes: list[object] = [
        {"type": "banana", "summary": "Unknown types become takeaway", "body": "first body"},
        {"type": "Root Cause", "summary": "  spelled   loosely\n across lines ", "body": "second"},
        {"type": "pitfall", "summary": "   ", "body": "no summary: dropped"},
        {"type": "pitfall", "body": "missing summary: dropped"},
        "not an object",
        42,
        None,
        {"type": "decision", "summary": "S" * 500, "body": "B" * 10_000},
        {"type": "pattern", "summary": "control\x00 chars\x1b[31m removed", "body": "x\x07y"},
        {"type": ["pattern"], "summary": 12, "body": "a non-string summary is dropped"},
    ]
    server = serve(ollama({"notes": notes, "extra": "ignored"}))
    report = run(conn, config, LlmOptions(endpoint=url(server, "/api/generate")))
    assert report.distiller == "llm"
    assert [(n.type, n.summary) for n in report.notes] == [
        ("takeaway", "Unknown types become takeaway"),
        ("root-cause", "spelled loosely across lines"),
        ("decision", "S" * 296 + " ..."),  # no sentence end to cut at: cut and marked
        ("pattern", "control chars removed"),  # the escape sequence goes whole
    ]
    long = memory.get(conn, report.notes[2].id or 0)
    assert long is not None and long.body == "B" * MAX_BODY_CHARS
    control = memory.get(conn, report.notes[3].id or 0)
    assert control is not None and control.body == "xy"


def test_more_notes_than_the_cap_are_dropped(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config
) -> None:
    notes = [
        {"type": "takeaway", "summary": f"Fact {i} about widget{i}", "body": f"widget{i} detail"}
        for i in range(25)
    ]
    server = serve(openai({"notes": notes}))
    report = run(
        conn, config, LlmOptions(endpoint=url(server, "/v1/chat/completions")), max_entities=7
    )
    assert (report.captured, len(report.notes), report.dropped) == (25, 7, 18)
    assert "At most 7 notes" in server.requests[0][1]["messages"][0]["content"]


def test_an_empty_notes_list_is_a_valid_answer(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config
) -> None:
    server = serve(ollama({"notes": []}))
    report = run(conn, config, LlmOptions(endpoint=url(server, "/api/generate")))
    assert (report.distiller, report.captured) == ("llm", 0)


# answers with junk -------------------------------------------------------------------------------


OLLAMA, OPENAI = "/api/generate", "/v1/chat/completions"


def redirect(handler: _Handler, location: str) -> None:
    handler.send_response(307)
    handler.send_header("Location", location)
    handler.send_header("Content-Length", "0")
    handler.end_headers()


@pytest.mark.parametrize(
    ("path", "reply", "reason"),
    [
        (OLLAMA, ollama("Sure! Here are your notes: 1. workers shared a dir"), "reply is not JSON"),
        (OLLAMA, ollama({"items": []}), 'not an object with a "notes" list'),
        (OLLAMA, ollama(["a", "list"]), 'not an object with a "notes" list'),
        (
            OLLAMA,
            ollama({"notes": [{"type": "pitfall"}, "x"]}),
            "none of the model's notes had a summary",
        ),
        (OPENAI, openai({"notes": "not a list"}), 'not an object with a "notes" list'),
        (OPENAI, openai('```json\n{"notes": []}\n```'), "reply is not JSON"),
        (OPENAI, ollama({"notes": GOOD_NOTES}), "has no openai reply field"),
        (
            OLLAMA,
            lambda h, b: h.send(200, b"<html>not json</html>", "text/html"),
            "answer is not JSON",
        ),
        (OLLAMA, lambda h, b: h.send(200, b'{"choices": []}'), "has no ollama reply field"),
        (
            OLLAMA,
            lambda h, b: h.send(200, json.dumps({"response": 12}).encode()),
            "reply is not text",
        ),
        (OLLAMA, lambda h, b: h.send(500, b'{"error": "model not found"}'), "answered HTTP 500"),
        (OPENAI, lambda h, b: h.send(302, b""), "answered HTTP 302"),
        (OPENAI, lambda h, b: redirect(h, "http://127.0.0.1:9/api/generate"), "answered HTTP 307"),
        (OLLAMA, lambda h, b: redirect(h, "file:///etc/passwd"), "answered HTTP 307"),
        (OLLAMA, lambda h, b: h.send(200, b" " * (1024 * 1024 + 10)), "larger than"),
        # Nested past every parser's depth: the envelope, then the reply inside it.
        (OLLAMA, lambda h, b: h.send(200, b"[" * 100_000 + b"]" * 100_000), "answer is not JSON"),
        (OLLAMA, ollama("[" * 100_000 + "]" * 100_000), "reply is not JSON"),
    ],
)
def test_junk_answers_fall_back_to_the_rules(  # noqa: PLR0917 - pytest passes fixtures positionally
    serve: Callable[[Reply], _Server],
    conn: sqlite3.Connection,
    config: Config,
    path: str,
    reply: Reply,
    reason: str,
) -> None:
    server = serve(reply)
    report = run(conn, config, LlmOptions(endpoint=url(server, path)))
    assert_fell_back(report, reason)


def test_a_dropped_connection_falls_back(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config
) -> None:
    def hang_up(handler: _Handler, body: dict[str, Any]) -> None:
        handler.close_connection = True
        handler.connection.shutdown(socket.SHUT_RDWR)

    server = serve(hang_up)
    report = run(conn, config, LlmOptions(endpoint=url(server, "/api/generate")))
    assert_fell_back(report, "")
    assert report.llm_fallback


# answers slowly, or not at all -------------------------------------------------------------------


def test_a_slow_server_times_out_and_falls_back(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config
) -> None:
    def slow(handler: _Handler, body: dict[str, Any]) -> None:
        handler.server.release.wait(SLOW_SECS)
        handler.send(200, json.dumps({"response": json.dumps({"notes": GOOD_NOTES})}).encode())

    server = serve(slow)
    started = time.monotonic()
    report = run(
        conn, config, LlmOptions(endpoint=url(server, "/api/generate"), timeout_secs=TIMEOUT_SECS)
    )
    assert time.monotonic() - started < SLOW_SECS
    assert_fell_back(report, f"within {TIMEOUT_SECS:g} s")


def test_a_trickling_server_meets_the_overall_deadline(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config
) -> None:
    def trickle(handler: _Handler, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        for _ in range(100):
            if handler.server.release.wait(0.1):
                return
            handler.wfile.write(b" ")
            handler.wfile.flush()

    server = serve(trickle)
    started = time.monotonic()
    report = run(
        conn, config, LlmOptions(endpoint=url(server, "/api/generate"), timeout_secs=TIMEOUT_SECS)
    )
    assert time.monotonic() - started < SLOW_SECS
    assert_fell_back(report, f"within {TIMEOUT_SECS:g} s")


@pytest.fixture
def trickler() -> Iterator[Callable[[bytes], str]]:
    """A raw server on 127.0.0.1 that sends ``head`` one byte every 0.1 s (far past the
    timeout: each byte would restart a socket timeout), then a good answer."""
    stop = threading.Event()
    started: list[tuple[socket.socket, threading.Thread]] = []

    def start(head: bytes) -> str:
        listener = socket.create_server(("127.0.0.1", 0))

        def serve() -> None:
            client, _ = listener.accept()
            with client:
                client.recv(65536)
                for byte in head:
                    if stop.wait(0.1):
                        return
                    try:
                        client.sendall(bytes([byte]))
                    except OSError:
                        return  # the client gave up: what the test wants
                answer = json.dumps({"response": json.dumps({"notes": GOOD_NOTES})}).encode()
                with contextlib.suppress(OSError):
                    client.sendall(b"Content-Length: %d\r\n\r\n%s" % (len(answer), answer))

        thread = threading.Thread(target=serve)
        thread.start()
        started.append((listener, thread))
        return f"http://127.0.0.1:{listener.getsockname()[1]}/api/generate"

    yield start
    stop.set()
    for listener, thread in started:
        thread.join()
        listener.close()


@pytest.mark.parametrize(
    "head",
    [
        pytest.param(b"HTTP/1.1 200 " + b"O" * 120 + b"\r\n", id="status-line"),
        pytest.param(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 150 + b"\r\n", id="headers"),
    ],
)
def test_a_server_trickling_its_head_meets_the_overall_deadline(
    trickler: Callable[[bytes], str], conn: sqlite3.Connection, config: Config, head: bytes
) -> None:
    assert len(head) * 0.1 > SLOW_SECS  # the whole head takes longer than SLOW_SECS
    endpoint = trickler(head)
    started = time.monotonic()
    report = run(conn, config, LlmOptions(endpoint=endpoint, timeout_secs=TIMEOUT_SECS))
    assert time.monotonic() - started < SLOW_SECS
    assert_fell_back(report, f"timed out: no complete answer from {endpoint} within 0.5 s")


def test_the_timeout_comes_from_the_environment(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow(handler: _Handler, body: dict[str, Any]) -> None:
        handler.server.release.wait(SLOW_SECS)

    server = serve(slow)
    monkeypatch.setenv("MEMSPOOL_LLM_TIMEOUT_SECS", "0.4")
    report = run(conn, load_config(), LlmOptions(endpoint=url(server, "/api/generate")))
    assert_fell_back(report, "within 0.4 s")


@pytest.mark.parametrize("junk", ["soon", "-3", "0", "nan", "inf", ""])
def test_junk_timeouts_mean_thirty_seconds(monkeypatch: pytest.MonkeyPatch, junk: str) -> None:
    monkeypatch.setenv("MEMSPOOL_LLM_TIMEOUT_SECS", junk)
    assert load_config().llm_timeout_secs == 30.0


def test_nothing_listening_falls_back(conn: sqlite3.Connection, config: Config) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    report = run(conn, config, LlmOptions(endpoint=f"http://127.0.0.1:{port}/api/generate"))
    assert_fell_back(report, "cannot reach")


def test_a_server_that_accepts_but_never_answers_falls_back(
    conn: sqlite3.Connection, config: Config
) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # the kernel completes the handshake; nobody ever reads or answers
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}/v1/chat/completions"
        report = run(conn, config, LlmOptions(endpoint=endpoint, timeout_secs=TIMEOUT_SECS))
    assert_fell_back(report, f"within {TIMEOUT_SECS:g} s")


@pytest.mark.parametrize(
    ("endpoint", "reason"),
    [
        ("", "no LLM endpoint"),
        ("file:///etc/passwd", "not an http(s) URL"),
        ("http://127.0.0.1:9/v1/models", "must end with /api/generate"),
    ],
)
def test_unusable_endpoints_fall_back(
    conn: sqlite3.Connection, config: Config, endpoint: str, reason: str
) -> None:
    assert_fell_back(run(conn, config, LlmOptions(endpoint=endpoint)), reason)


def test_a_payload_too_long_for_a_model_falls_back(
    serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config
) -> None:
    server = serve(ollama({"notes": GOOD_NOTES}))
    text = "\n\n".join(f"Paragraph {i} " + "word " * 200 for i in range(120))
    report = run(conn, config, LlmOptions(endpoint=url(server, "/api/generate")), text=text)
    assert report.distiller == "rule_based" and "characters" in str(report.llm_fallback)
    assert server.requests == []


def test_the_minor_pass_can_ask_the_model_and_falls_back_to_the_rules(
        serve: Callable[[Reply], _Server], conn: sqlite3.Connection, config: Config) -> None:
    """`memspool maintain --llm`: the same contract and the same fallback as capture."""
    import zstandard

    from memspool.archivist import digest
    from memspool.store import transaction
    from memspool.store.slices import NewSlice, insert_slice

    def queue(text: str) -> int:
        body = zstandard.ZstdCompressor().compress(text.encode())
        with transaction(conn):
            return insert_slice(conn, NewSlice(
                session_id="s1", agent_id=None, project="api", event="Stop",
                transcript_path="/t.jsonl", byte_start=0, byte_end=1, part=1, records_kept=1,
                records_dropped=0, records_unknown=0, records_replayed=0,
                text_chars=len(text), redactions=0, body=body, created_at=1.0))

    answer = ("[user] why is the export slow?\n\n[assistant] Root cause: the export query "
              "scanned `events` without the (account_id, at) index; adding it fixed the scan.")
    server = serve(ollama({"notes": [{"type": "root-cause", "summary": "Export scan lacked an "
                                      "index", "body": "The export query needs the "
                                      "(account_id, at) index on events."}]}))
    queue(answer)
    report = digest(conn, config, llm=LlmOptions(endpoint=url(server, OLLAMA), model="m"))
    assert report.slices == 1 and report.created == 1 and report.llm_fallbacks == 0
    (memory,) = rows_of(conn)
    assert memory["summary"] == "Export scan lacked an index"
    sent = server.requests[0][1]["prompt"]
    assert "user: why is the export slow?" in sent and "[tool" not in sent

    broken = serve(lambda h, b: h.send(200, b"<html>not json</html>", "text/html"))
    queue(answer.replace("export", "report"))
    report = digest(conn, config, llm=LlmOptions(endpoint=url(broken, OLLAMA), model="m"))
    assert report.slices == 1 and report.llm_fallbacks == 1 and report.created == 1
    assert any("report query" in m["body"] for m in rows_of(conn))


def rows_of(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute("SELECT summary, body FROM memories ORDER BY id")]
