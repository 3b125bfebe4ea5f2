"""The local HTTP API (`memspool serve`), through a real server process on 127.0.0.1."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CCVIEWER, SPOTTER, payload, wait_for

from memspool.spool import append

LEARNINGS = (
    "## Key Learnings:\n\n"
    "1. bcrypt cost=12 is the right balance for our server performance\n"
    "2. JWT refresh tokens need atomic rotation to prevent race conditions\n"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Server:
    """A `memspool serve` process and a small client for it."""

    def __init__(self, home: Path, log: Path, max_body: int) -> None:
        self.home = home
        self.log = log
        self.port = _free_port()
        argv = [sys.executable, "-m", "memspool", "serve", "--port", str(self.port),
                "--max-body", str(max_body)]
        with log.open("wb") as err:
            self.proc = subprocess.Popen(argv, stdout=err, stderr=err, start_new_session=True)
        wait_for(self._up)
        self.token = (home / "api-token").read_text().strip()

    def _up(self) -> bool:
        if self.proc.poll() is not None:
            pytest.fail(f"the server exited {self.proc.returncode}: {self.log.read_text()}")
        with contextlib.suppress(OSError):
            return self.request("GET", "/health", token=None)[0] == 200
        return False

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = "",
                headers: dict[str, str] | None = None, raw: bytes | None = None,
                ) -> tuple[int, Any]:
        """(status, parsed JSON); ``token=""`` sends this server's token, ``None`` none."""
        sent = dict(headers or {})
        if token is not None:
            sent.setdefault("Authorization", f"Bearer {token or self.token}")
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        if data is not None:
            sent.setdefault("Content-Type", "application/json")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            conn.close()

    def stop(self) -> str:
        """Stop the whole process group; returns what the server logged."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        return self.log.read_text()


@pytest.fixture
def start(home: Path, tmp_path: Path) -> Iterator[Any]:
    servers: list[Server] = []

    def _start(max_body: int = 8 * 1024 * 1024) -> Server:
        server = Server(home, tmp_path / f"server-{len(servers)}.log", max_body)
        servers.append(server)
        return server

    yield _start
    logs = [server.stop() for server in servers]
    for log in logs:
        assert "Traceback" not in log, log


@pytest.fixture
def server(start: Any) -> Server:
    started: Server = start()
    return started


@pytest.mark.parametrize(("header", "accepted"), [
    ("127.0.0.1", True), ("127.0.0.1:8765", True), ("LOCALHOST:8765", True),
    ("[::1]:8765", True), ("[::1]", True), ("127.0.0.1:8766", False), ("evil.example", False),
    ("evil.example:8765", False), ("127.0.0.1:", False), ("[::1", False), ("", False),
    ("localhost.evil.example", False), ("127.0.0.1:87x", False),
    ("127.0.0.1:008765", False), ("127.0.0.1:" + "9" * 5000, False),  # int() refuses 4,300+
])
def test_the_host_check(header: str, accepted: bool) -> None:
    from memspool.http.limits import HostCheck

    assert HostCheck.for_server("127.0.0.1", 8765).accepts(header) is accepted


def test_an_explicit_host_is_accepted_too() -> None:
    from memspool.http.limits import HostCheck

    check = HostCheck.for_server("192.168.1.20", 8765)
    assert check.accepts("192.168.1.20:8765") and check.accepts("localhost:8765")
    assert not check.accepts("192.168.1.21:8765")


def test_the_serve_command_has_help_with_an_example() -> None:
    import argparse

    from memspool.cli import serve

    parser = argparse.ArgumentParser(prog="memspool")
    serve.register(parser.add_subparsers())
    args = parser.parse_args(["serve", "--port", "9000", "--max-body", "1024"])
    assert (args.port, args.max_body, args.host) == (9000, 1024, "127.0.0.1")
    assert "Example:" in serve.DOC


def test_health_needs_no_token_and_the_token_file_is_private(server: Server) -> None:
    status, body = server.request("GET", "/health", token=None)
    assert status == 200 and body["ok"] is True and body["version"]
    token = server.home / "api-token"
    assert token.stat().st_mode & 0o777 == 0o600
    assert len(server.token) >= 40


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_the_token_is_made_once_and_reused(start: Any) -> None:
    first = start()
    token = first.token
    first.stop()
    assert start().token == token


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", "Basic dXNlcjpwYXNz",
                                           "Bearer"])
def test_every_route_but_health_needs_the_token(server: Server,
                                                authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    for method, path in (("GET", "/status"), ("GET", "/search?q=x"), ("POST", "/capture"),
                         ("GET", "/openapi.json"), ("GET", "/no-such-route")):
        status, body = server.request(method, path, token=None, headers=headers)
        assert status == 401 and body["ok"] is False and "token" in body["error"], (path, body)


def test_a_foreign_host_header_is_refused(server: Server) -> None:
    status, body = server.request("GET", "/status", headers={"Host": "evil.example"})
    assert status == 421 and body["ok"] is False and "evil.example" in body["error"]
    status, _ = server.request("GET", "/health", token=None, headers={"Host": "evil.example"})
    assert status == 421
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", "localhost"):
        assert server.request("GET", "/status", headers={"Host": host})[0] == 200
    status, body = server.request("GET", "/health", token=None,
                                  headers={"Host": "127.0.0.1:" + "9" * 5000})
    assert status == 421 and body["ok"] is False  # refused, not a 500


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_body_over_the_limit_is_refused(start: Any) -> None:
    server = start(max_body=4096)
    big = {"text": "Pitfall: " + "x" * 5000}
    status, body = server.request("POST", "/capture", big)
    assert status == 413 and body["ok"] is False and "4096" in body["error"]
    # A chunked upload declares no length: the server counts what streams in.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.request("POST", "/capture", body=iter([b"x" * 1024] * 8), encode_chunked=True,
                     headers={"Authorization": f"Bearer {server.token}"})
        response = conn.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["ok"] is False
    finally:
        conn.close()
    assert server.request("POST", "/capture", {"text": "Pitfall: small is fine here."})[0] == 200


def test_capture_then_search_finds_it(server: Server) -> None:
    status, report = server.request("POST", "/capture", {
        "text": "Pitfall: the connection pool leaks one connection per retry.",
        "project": "api", "session": "s1", "source": "test"})
    assert status == 200 and report["ok"] is True and report["created"] == 1
    status, found = server.request("GET", "/search?q=pool+leaks&project=api")
    assert status == 200 and found["query"] == "pool leaks"
    assert [hit["id"] for hit in found["results"]] == [report["notes"][0]["id"]]
    status, none = server.request("GET", "/search?q=pool+leaks&project=other&limit=5&all=true")
    assert (status, none["results"]) == (200, [])
    # An empty page for a project the store has never seen says so, and names the
    # projects it has: "nothing matched" would send the caller looking elsewhere.
    assert none["note"] == "no project is known as 'other'; projects with memory here: api"
    assert "note" not in server.request("GET", "/search?q=nothing+like+this&project=api")[1]


def test_capture_dry_run_and_passive(server: Server) -> None:
    status, dry = server.request("POST", "/capture", {
        "text": "Pitfall: dry runs save nothing at all.", "project": "api", "dry_run": True})
    assert status == 200 and dry["dry_run"] is True
    assert server.request("GET", "/search?q=dry+runs")[1]["results"] == []
    status, counts = server.request("POST", "/capture", {
        "text": LEARNINGS, "project": "api", "passive": True})
    assert (status, counts) == (200, {"saved": 2, "skipped": 0, "total": 2})


@pytest.mark.parametrize(("given", "said"), [
    (0, "0"), (-1, "-1"), (True, "True"), ("5", "'5'"), (2.5, "2.5"), (None, None),
    (1, None), (20, None), (5000, None)])
def test_max_entities_is_held_to_the_capture_verbs_one_bound(server: Server, given: Any,
                                                             said: str | None) -> None:
    """One bound and one sentence for max_entities, the CLI's --max-entities too
    (test_capture_cli.py): a whole number of at least 1, a larger one than the cap of
    20 meaning 20. The HTTP API took 1 to 1000 before, and said so."""
    text = "\n\n".join(f"Distinct fact {i}: widget{i} needs gadget{i}." for i in range(25))
    status, body = server.request("POST", "/capture", {
        "text": text, "project": "api", "dry_run": True, "max_entities": given})
    if said is not None:
        assert (status, body["error"]) == (400, (
            f"max_entities must be a whole number of at least 1 (a capture keeps at most 20 "
            f"notes: a larger number means 20), got {said}.")), body
        assert server.request("GET", "/status")[1]["memories"] == 0
        return
    assert status == 200 and len(body["notes"]) == min(given or 20, 20), body


def test_passive_observations(server: Server) -> None:
    body = {"content": LEARNINGS, "session_id": "s9", "project": "api"}
    assert server.request("POST", "/observations/passive", body) == (
        200, {"saved": 2, "skipped": 0, "total": 2})
    status, again = server.request("POST", "/observations/passive", body)
    assert status == 200 and again["saved"] == 0 and again["total"] == 2


def test_save_upserts_by_key_then_get_and_forget(server: Server) -> None:
    first = {"title": "Envs", "content": "We manage envs with uv.", "key": "envs",
             "project": "api", "type": "decision"}
    status, created = server.request("POST", "/memories", first)
    assert status == 200 and created["action"] == "created"
    status, updated = server.request("POST", "/memories",
                                     {**first, "content": "We manage envs with uv 0.5."})
    assert status == 200 and (updated["action"], updated["id"]) == ("updated", created["id"])
    status, memory = server.request("GET", f"/memories/{created['id']}")
    assert status == 200 and memory["body"] == "We manage envs with uv 0.5."
    assert memory["type"] == "decision" and memory["history"]
    status, forgotten = server.request("DELETE", f"/memories/{created['id']}")
    assert status == 200 and forgotten["forgotten"] == created["id"]
    status, gone = server.request("GET", f"/memories/{created['id']}")
    assert status == 404 and gone["ok"] is False and str(created["id"]) in gone["error"]
    assert server.request("DELETE", f"/memories/{created['id']}")[0] == 404


def test_a_patch_corrects_only_the_fields_it_names(server: Server) -> None:
    _, saved = server.request("POST", "/memories", {
        "title": "Envs are managed with pip", "content": "We manage envs with pip-tools.",
        "project": "api", "type": "takeaway"})
    path = f"/memories/{saved['id']}"
    status, done = server.request("PATCH", path, {"type": "decision"})
    assert (status, done) == (200, {"ok": True, "id": saved["id"], "changed": True,
                                    "pinned": False})
    _, memory = server.request("GET", path)
    assert (memory["type"], memory["summary"], memory["body"]) == (
        "decision", "Envs are managed with pip", "We manage envs with pip-tools.")
    status, done = server.request("PATCH", path, {
        "summary": "Envs are managed with uv", "body": "We manage envs with uv, not pip.",
        "pinned": True})
    assert (status, done["changed"], done["pinned"]) == (200, True, True)
    _, memory = server.request("GET", path)
    assert memory["summary"] == "Envs are managed with uv" and memory["pinned"] is True
    assert [entry["reason"] for entry in memory["history"]] == ["edited", "edited"]
    assert "uv, not pip" in server.request("GET", "/context?project=api")[1]["text"]
    # The same again changes nothing; a pin alone leaves the text as it is.
    assert server.request("PATCH", path, {"type": "decision", "pinned": True})[1] == {
        "ok": True, "id": saved["id"], "changed": False, "pinned": True}
    assert server.request("PATCH", path, {"pinned": False})[1]["pinned"] is False
    # A refusal changes nothing, the pin it also asked for included.
    before = server.request("GET", path)[1]
    for refused in ({}, {"summary": "x" * 301, "pinned": True}, {"type": "guess"},
                    {"pinned": "yes"}, {"body": " ", "pinned": True}, {"colour": "red"}):
        status, answer = server.request("PATCH", path, refused)
        assert status == 400 and answer["error"].endswith("."), (refused, answer)
    assert server.request("GET", path)[1] == before
    assert server.request("PATCH", "/memories/999999", {"pinned": True})[0] == 404


def test_context_and_status(server: Server) -> None:
    server.request("POST", "/capture", {"text": "Pitfall: the cache never expires keys.",
                                        "project": "shop"})
    status, context = server.request("GET", "/context?project=shop&max_chars=4000")
    assert status == 200 and context["project"] == "shop"
    assert "the cache never expires keys" in context["text"]
    assert server.request("GET", "/context?project=empty")[1] == {
        "project": "empty", "text": "",
        "note": "no project is known as 'empty'; projects with memory here: shop"}
    status, state = server.request("GET", "/status")
    assert status == 200 and state["memories"] == 1 and state["store"] == "ok"


@pytest.mark.parametrize(("method", "path", "raw"), [
    ("POST", "/capture", b"{not json"),
    ("POST", "/capture", b"[1, 2]"),
    ("POST", "/capture", b""),
    ("POST", "/capture", b'{"text": 3}'),
    ("POST", "/capture", b'{"text": "Pitfall: fine text.", "dry_run": "yes"}'),
    ("POST", "/capture", b'{"txt": "a typo in the field name"}'),
    ("POST", "/capture", b'{"text": "Pitfall: fine text.", "max_entities": 0}'),
    ("POST", "/memories", b'{"title": "t", "content": "c", "type": "nonsense"}'),
    ("POST", "/memories", b'{"title": "", "content": "c"}'),
    ("POST", "/memories", b'{"title": "doc", "content": "' + b"word " * 14_000 + b'"}'),
    ("POST", "/observations/passive", b'{"content": null}'),
    ("GET", "/search", None),
    ("GET", "/search?q=x&limit=many", None),
    ("GET", f"/search?q=x&limit={'1' * 5000}", None),  # past what int() reads
    ("GET", f"/search?q=x&offset={'9' * 5000}", None),
    ("GET", f"/context?project=shop&max_chars={'7' * 4400}", None),
    ("GET", "/search?q=x&colour=red", None),
    ("GET", "/context", None),
    ("GET", "/memories/abc", None),
])
def test_bad_input_is_a_400_sentence(server: Server, method: str, path: str,
                                     raw: bytes | None) -> None:
    status, body = server.request(method, path, raw=raw)
    assert status == 400 and body["ok"] is False, body
    assert body["error"].endswith(".") and "Traceback" not in body["error"]


def test_a_body_cut_short_by_its_client_is_no_server_error(server: Server) -> None:
    """The client says 100 bytes and hangs up after 8: nobody reads the answer, and
    the log holds no traceback (the fixture checks the log when the server stops)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(f"POST /capture HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                     f"Authorization: Bearer {server.token}\r\nContent-Type: application/json"
                     f"\r\nContent-Length: 100\r\n\r\n{{\"text\":".encode())
    assert server.request("GET", "/health", token=None)[0] == 200  # still serving


def test_unknown_routes_and_methods_are_json(server: Server) -> None:
    status, body = server.request("GET", "/nowhere")
    assert status == 404 and "/nowhere" in body["error"]
    status, body = server.request("PUT", "/memories/1", raw=b"{}")
    assert status == 405 and "PUT" in body["error"]
    assert server.request("GET", "/capture")[0] == 405


def test_a_route_that_takes_no_query_refuses_one_and_does_nothing(server: Server) -> None:
    _, saved = server.request("POST", "/memories", {"title": "Pool", "content":
                                                    "The pool leaks a connection per retry.",
                                                    "project": "api"})
    memory = saved["id"]
    # A caller who believes in a dry run must not lose the memory.
    status, body = server.request("DELETE", f"/memories/{memory}?dry_run=true")
    assert status == 400 and "dry_run" in body["error"] and "no query" in body["error"]
    assert server.request("GET", f"/memories/{memory}")[0] == 200
    status, body = server.request("POST", "/capture?project=api",
                                  {"text": "Pitfall: the cache is never warmed."})
    assert status == 400 and "project" in body["error"]
    assert server.request("GET", "/status?verbose=1")[0] == 400
    assert server.request("GET", f"/memories/{memory}")[0] == 200


@pytest.mark.parametrize(("method", "path", "raw", "twice"), [
    ("GET", "/search?q=pool&limit=1&limit=2", None, "limit"),
    ("GET", "/search?q=pool&q=leak", None, "q"),
    ("GET", "/context?project=api&project=web", None, "project"),
    ("GET", "/search?q=pool&all=1&all=", None, "all"),
    ("POST", "/capture", b'{"text": "Pitfall: the pool leaks a connection per retry.", '
                         b'"dry_run": true, "dry_run": false, "project": "api"}', "dry_run"),
    ("POST", "/memories", b'{"title": "Pool", "content": "c", "project": "api", '
                          b'"project": "web"}', "project"),
])
def test_a_name_given_twice_is_refused_naming_it(server: Server, method: str, path: str,
                                                 raw: bytes | None, twice: str) -> None:
    """The last value would win, answering what the sender may not have meant (a
    capture it believed a dry run): a parameter or a field given twice is a 400."""
    status, body = server.request(method, path, raw=raw)
    assert status == 400, body
    assert body["error"].startswith(f"The {'field' if raw else 'parameter'} {twice!r} "
                                    f"is given twice"), body
    assert server.request("GET", "/status")[1]["memories"] == 0


def test_a_project_named_with_a_control_character_is_refused(server: Server) -> None:
    said = "The project name 'a\\x1bb' holds a control character ('\\x1b')"
    for method, path, body in (
            ("POST", "/capture", {"text": "Pitfall: the pool leaks.", "project": "a\x1bb"}),
            ("POST", "/memories", {"title": "Pool", "content": "It leaks.", "project": "a\x1bb"}),
            ("POST", "/observations/passive", {"content": "## Key Learnings:\n\n1. Pools leak",
                                               "project": "a\x1bb"}),
            ("GET", "/search?q=pool&project=a%1Bb", None),
            ("GET", "/context?project=a%1Bb", None)):
        status, answer = server.request(method, path, body)
        assert status == 400 and answer["error"].startswith(said), (path, answer)
    assert server.request("GET", "/status")[1]["memories"] == 0


def test_the_openapi_document_lists_the_routes(server: Server) -> None:
    from memspool.http.routes import ROUTES

    status, document = server.request("GET", "/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.")
    described = {(path, method.upper()) for path, ops in document["paths"].items()
                 for method in ops}
    served = {(route.path, method) for route in ROUTES for method in route.methods or ()
              if method != "HEAD"}
    assert described == served


class DrainLoop(threading.Thread):
    """Queue transcripts and run `memspool drainer --once`, round after round, until told
    to stop (at least one round), so drains write while the clients do."""

    def __init__(self, home: Path, projects: Path) -> None:
        super().__init__()
        self.home, self.projects = home, projects
        self.done = threading.Event()
        self.results: list[tuple[int, str]] = []

    def run(self) -> None:
        round_ = 0
        while not self.results or not self.done.is_set():
            for name, source in (("ccviewer", CCVIEWER), ("spotter", SPOTTER)):
                session = f"http-{round_}-{name}"
                transcript = self.projects / f"{session}.jsonl"
                shutil.copyfile(source, transcript)
                for event in ("Stop", "SessionEnd"):
                    append(str(self.home / "spool"), payload(event, session, transcript))
            drained = subprocess.run([sys.executable, "-m", "memspool", "drainer", "--once"],
                                     capture_output=True, timeout=120, check=False,
                                     start_new_session=True)
            self.results.append((drained.returncode, drained.stderr.decode()))
            round_ += 1


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_concurrent_clients_while_the_drainer_drains(server: Server, home: Path,
                                                     projects: Path) -> None:
    statuses: list[int] = []
    failures: list[str] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        for i in range(20):
            try:
                if i % 2:
                    status, _ = server.request("GET", f"/search?q=pool+{number}+drains")
                else:
                    status, _ = server.request("POST", "/capture", {
                        "text": f"Pitfall: worker {number} drops request {i} when pool "
                                f"p{number}x{i} drains; raise MAX_IDLE_{number}_{i}.",
                        "project": f"load{number % 3}", "session": f"client-{number}"})
            except (OSError, http.client.HTTPException, ValueError) as exc:
                with lock:
                    failures.append(f"client {number} request {i}: {exc!r}")
                continue
            with lock:
                statuses.append(status)

    drains = DrainLoop(home, projects)
    drains.start()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    drains.done.set()
    drains.join(timeout=240)
    assert not failures, failures
    assert len(statuses) == 200 and set(statuses) == {200}, sorted(set(statuses))
    assert drains.results and all(code == 0 for code, _ in drains.results), drains.results
    status, state = server.request("GET", "/status")
    # Later rounds copy the same records, which the drainer has seen: every frame
    # drained, the first round's two transcripts sliced.
    assert status == 200 and state["pending_frames"] == 0 and state["slices_total"] >= 2
    assert state["memories"] > 0


def test_search_pages_within_the_bounds_the_document_states(server: Server) -> None:
    from memspool.results import CONTEXT_CHARS, SEARCH_LIMIT

    for fact in ("the pool leaks on retry", "the pool leaks on timeout",
                 "the pool leaks on cancel"):
        assert server.request("POST", "/memories", {"title": fact, "content": fact,
                                                    "project": "api"})[0] == 200
    _, first = server.request("GET", "/search?q=pool+leaks&limit=2")
    _, rest = server.request("GET", "/search?q=pool+leaks&limit=2&offset=2")
    assert (len(first["results"]), first["offset"], first["more"]) == (2, 0, True)
    assert (len(rest["results"]), rest["offset"], rest["more"]) == (1, 2, False)
    assert {h["id"] for h in first["results"]}.isdisjoint(h["id"] for h in rest["results"])
    _, document = server.request("GET", "/openapi.json")
    stated = {p["name"]: p["schema"] for p in document["paths"]["/search"]["get"]["parameters"]}
    assert stated["limit"]["maximum"] == SEARCH_LIMIT.most
    status, refused = server.request("GET", f"/search?q=pool&limit={SEARCH_LIMIT.most + 1}")
    assert status == 400 and f"from 1 to {SEARCH_LIMIT.most}" in refused["error"]
    context = {p["name"]: p["schema"]
               for p in document["paths"]["/context"]["get"]["parameters"]}["max_chars"]
    assert (context["minimum"], context["maximum"]) == (CONTEXT_CHARS.least, CONTEXT_CHARS.most)
    body = document["paths"]["/capture"]["post"]["requestBody"]["content"]["application/json"]
    assert set(body["schema"]["properties"]) == {"text", "project", "session", "source",
                                                 "dry_run", "max_entities", "passive"}


def test_a_refusal_quoting_a_secret_redacts_it(server: Server) -> None:
    token = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    status, body = server.request("GET", f"/search?q=x&limit={token}")
    assert status == 400 and "[REDACTED:github]" in body["error"]
    assert token[:12] not in body["error"]
