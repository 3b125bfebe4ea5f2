"""`memspool serve` at its edges: the token file, a busy port, slow and many connections."""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path

import pytest
from conftest import WAIT_SECS, run_cli
from test_http import Server, _free_port

from memspool.http.protocol import MAX_CONNECTIONS, REQUEST_READ_SECS


def _stopped(server: Server) -> str:
    log = server.stop()
    assert "Traceback" not in log, log
    return log


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_token_others_could_read_is_replaced_and_said(home: Path, tmp_path: Path) -> None:
    first = Server(home, tmp_path / "first.log", 1024)
    old = first.token
    _stopped(first)
    (home / "api-token").chmod(0o644)
    second = Server(home, tmp_path / "second.log", 1024)
    try:
        assert second.token != old
        assert (home / "api-token").stat().st_mode & 0o777 == 0o600
        assert second.request("GET", "/status", token=old)[0] == 401
        assert second.request("GET", "/status")[0] == 200
    finally:
        log = _stopped(second)
    assert "was readable by others (mode 644)" in log and "replaced by a new one" in log


def test_a_named_pipe_as_the_token_is_one_sentence_not_a_hang(home: Path) -> None:
    home.mkdir(mode=0o700)
    os.mkfifo(home / "api-token", 0o600)
    proc = run_cli("serve", "--port", str(_free_port()), check=False)
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, lines
    assert "is not a regular file" in lines[0] and "Traceback" not in lines[0]


def test_a_busy_port_is_one_sentence_and_exit_1(home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_cli("serve", "--port", str(port), check=False)
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 1, proc
    assert lines == [f"memspool: error: Port {port} is in use on 127.0.0.1 (another memspool "
                     f"serve, or another program); pass --port to choose another."]


def _closed_by_server(conn: socket.socket, timeout: float) -> bool:
    """Whether the server closes ``conn`` (EOF or reset) within ``timeout`` seconds."""
    conn.settimeout(timeout)
    try:
        while conn.recv(1024):
            pass
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return True


@pytest.mark.slow  # waits out the server's request deadline
def test_a_request_sent_too_slowly_is_cut_off(home: Path, tmp_path: Path) -> None:
    server = Server(home, tmp_path / "server.log", 1024)
    try:
        slow = socket.create_connection(("127.0.0.1", server.port))
        idle = socket.create_connection(("127.0.0.1", server.port))
        with slow, idle:
            slow.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            started = time.monotonic()
            for conn in (slow, idle):
                left = max(1.0, WAIT_SECS - (time.monotonic() - started))
                assert _closed_by_server(conn, left), (
                    f"the server kept a connection that sent no whole request open for "
                    f"{WAIT_SECS:g} s (its deadline is {REQUEST_READ_SECS:g} s)")
        assert server.request("GET", "/health", token=None)[0] == 200
    finally:
        _stopped(server)


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_connections_past_the_cap_are_closed_at_once(home: Path, tmp_path: Path) -> None:
    server = Server(home, tmp_path / "server.log", 1024)
    held: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS + 20):
            held.append(socket.create_connection(("127.0.0.1", server.port)))
        # The first ones stay open; the ones past the cap are closed without a word
        # (as soon as the server has accepted them: the wait is shared, and named).
        assert not _closed_by_server(held[0], 0.2)
        deadline = time.monotonic() + WAIT_SECS
        for conn in held[-10:]:
            assert _closed_by_server(conn, max(0.1, deadline - time.monotonic())), (
                f"waited {WAIT_SECS:g} s for the server to close a connection past its cap")
        for conn in held:
            conn.close()
        held.clear()
        deadline = time.monotonic() + WAIT_SECS
        while True:  # the server notices the closed connections, then serves again
            with contextlib.suppress(OSError):
                if server.request("GET", "/health", token=None)[0] == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"waited {WAIT_SECS:g} s for the server to serve again")
            time.sleep(0.05)
    finally:
        for conn in held:
            conn.close()
        _stopped(server)
