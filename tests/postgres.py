"""A real PostgreSQL server for the team memory tests and bench, from the installed binaries.

``initdb`` in a fresh temporary folder, then ``postgres`` on a free loopback
port, password authentication over TCP only (no Unix socket). PostgreSQL
refuses to run as root, so as root (as CI runs) the server runs as the
``postgres`` system user (created when it does not exist), in a folder that
user owns. :func:`find_binaries` is ``None`` where no server is installed;
the tests skip then, saying so.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Where Debian and Ubuntu install the server binaries, newest first.
BINARY_GLOBS = ("/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin", "/opt/homebrew/bin",
                "/usr/local/bin", "/usr/bin")
SUPERUSER = "postgres"
SUPERUSER_PASSWORD = "memspool-test-superuser"  # noqa: S105 - a throwaway local test server
START_SECS = 30.0


def find_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``postgres`` (the newest version), or ``None``."""
    found = []
    for pattern in BINARY_GLOBS:
        for folder in glob.glob(pattern):
            if os.access(os.path.join(folder, "initdb"), os.X_OK) and \
                    os.access(os.path.join(folder, "postgres"), os.X_OK):
                found.append(Path(folder))
    def version(path: Path) -> tuple[int, ...]:
        parts = [p for p in path.parts if p.isdigit()]
        return tuple(int(p) for p in parts) or (0,)
    return max(found, key=version) if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user() -> pwd.struct_passwd | None:
    """The unprivileged user the server runs as when we are root (else ``None``)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        "postgres"], check=True, capture_output=True)
        return pwd.getpwnam("postgres")


class PostgresServer:
    """One throwaway server: start, stop (fast or immediate), start again, connect."""

    def __init__(self, binaries: Path) -> None:
        self.binaries = binaries
        self.user = _server_user()
        # /tmp and not the test's tmp_path: the server's user must be able to
        # reach its folder, and pytest's are private to root.
        self.root = Path(tempfile.mkdtemp(prefix="memspool-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = self.root / "server.log"
        self._initdb()

    def _as_server(self) -> dict[str, Any]:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid,
                "extra_groups": [], "env": {"PATH": os.environ.get("PATH", ""),
                                            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}}

    def _initdb(self) -> None:
        os.chmod(self.root, 0o700)
        password = self.root / "pw"
        password.write_text(SUPERUSER_PASSWORD)
        if self.user is not None:
            for path in (self.root, password):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        subprocess.run(
            [str(self.binaries / "initdb"), "-D", str(self.data), "-U", SUPERUSER,
             "--pwfile", str(password), "--auth-host=scram-sha-256", "--auth-local=reject",
             "-E", "UTF8", "--no-sync"],
            check=True, capture_output=True, cwd=self.root, timeout=120, **self._as_server())
        password.unlink()

    def start(self) -> None:
        options = ["-c", f"port={self.port}", "-c", "listen_addresses=127.0.0.1",
                   "-c", "unix_socket_directories=",
                   # Commits are durable as on any real server (a stopped server keeps
                   # what it acknowledged); only the flush to disk is skipped, which an
                   # immediate stop of the server process does not lose.
                   "-c", "fsync=off", "-c", "full_page_writes=off",
                   "-c", "max_connections=60", "-c", "shared_buffers=64MB"]
        self.log.touch()
        if self.user is not None:
            os.chown(self.log, self.user.pw_uid, self.user.pw_gid)
        handle = self.log.open("ab")
        self.process = subprocess.Popen(
            [str(self.binaries / "postgres"), "-D", str(self.data), *options],
            stdout=handle, stderr=subprocess.STDOUT, cwd=self.root, start_new_session=True,
            **self._as_server())
        handle.close()
        deadline = time.monotonic() + START_SECS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited {self.process.returncode}: "
                                   f"{self.log.read_text()[-2000:]}")
            with contextlib.suppress(Exception):
                self.superuser().close()
                return
            time.sleep(0.1)
        raise RuntimeError(f"postgres did not accept connections within {START_SECS:g} s: "
                           f"{self.log.read_text()[-2000:]}")

    def stop(self, *, immediate: bool = False) -> None:
        """Stop the server: a fast shutdown, or (``immediate``) as if it crashed."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT if immediate else signal.SIGINT)
            try:
                self.process.wait(timeout=START_SECS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=START_SECS)
        self.process = None

    def destroy(self) -> None:
        self.stop(immediate=True)
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, role: str, password: str, database: str = "postgres") -> str:
        return f"postgresql://{role}:{password}@127.0.0.1:{self.port}/{database}"

    def superuser(self, database: str = "postgres") -> Any:
        import psycopg

        return psycopg.connect(self.url(SUPERUSER, SUPERUSER_PASSWORD, database),
                               autocommit=True, connect_timeout=5)


@contextlib.contextmanager
def running(binaries: Path) -> Iterator[PostgresServer]:
    server = PostgresServer(binaries)
    try:
        server.start()
        yield server
    finally:
        server.destroy()
