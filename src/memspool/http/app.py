"""The Starlette app, and :func:`serve`, which runs it under uvicorn.

The listening socket is bound here, before uvicorn starts (:func:`listen`),
so a port in use is one sentence from the CLI, not uvicorn's log lines and
exit code 3.
"""

from __future__ import annotations

import contextlib
import errno
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware

from memspool.base.errors import ConfigError
from memspool.config import ensure_private_dir, load_config
from memspool.http.errors import HANDLERS
from memspool.http.guard import Guard
from memspool.http.limits import (
    DEFAULT_HOST,
    DEFAULT_MAX_BODY,
    DEFAULT_PORT,
    WORKER_THREADS,
    HostCheck,
)
from memspool.http.protocol import GuardedH11Protocol
from memspool.http.routes import ROUTES
from memspool.http.token import read_or_create_token
from memspool.http.web.actions import action_routes
from memspool.http.web.auth import Logins
from memspool.http.web.pages import page_routes
from memspool.http.workers import Workers

__all__ = ["create_app", "listen", "run", "serve"]

#: Connections the kernel queues before the server accepts them.
BACKLOG: Final = 128


def create_app(home: Path | None = None, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
               max_body: int = DEFAULT_MAX_BODY, threads: int = WORKER_THREADS) -> Starlette:
    """The API and the memory browser over the memspool home ``home`` (default:
    MEMSPOOL_HOME, else the user's).

    Creates the home and the token on first use. ``host`` and ``port`` are
    where the server listens, for the Host header check.
    """
    config = load_config(home)
    ensure_private_dir(config.home)
    token = read_or_create_token(config.home)
    workers = Workers(config.home, threads)
    logins = Logins(port)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            workers.close()

    app = Starlette(
        routes=[*ROUTES, *page_routes(), *action_routes()],
        middleware=[Middleware(Guard, token=token.value, hosts=HostCheck.for_server(host, port),
                               max_body=max_body, logins=logins)],
        exception_handlers=dict(HANDLERS),
        lifespan=lifespan,
    )
    app.state.workers = workers
    app.state.home = config.home
    #: Why the token was made anew at this start, for the server to say (or None).
    app.state.token_replaced = token.replaced
    app.state.logins = logins
    return app


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` and listening; :class:`ConfigError` with one
    sentence when that is not possible (the port is in use, the address is not here)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError(f"Cannot listen on {host}: it is not an address or a name this "
                          f"machine resolves ({exc}). Pass --host 127.0.0.1.") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"Port {port} is in use on {host} (another memspool serve, or "
                              f"another program); pass --port to choose another.") from None
        raise ConfigError(f"Cannot listen on {host}:{port}: {exc.strerror or exc}. Pass "
                          f"--host and --port for an address of this machine.") from None
    return sock


def run(app: Starlette, host: str, port: int, sock: socket.socket | None = None) -> None:
    """Serve ``app`` on ``host``:``port`` (or on ``sock``, already listening there) until
    SIGINT or SIGTERM."""
    # proxy_headers off: nothing sits in front of a local server, so an
    # X-Forwarded-For header is a client's claim, not a proxy's report.
    config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                            proxy_headers=False, server_header=False,
                            http=GuardedH11Protocol)
    listening = sock if sock is not None else listen(host, port)
    try:
        uvicorn.Server(config).run(sockets=[listening])
    finally:
        listening.close()


def serve(home: Path | None = None, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          max_body: int = DEFAULT_MAX_BODY) -> None:
    """Serve the API over ``home`` until SIGINT or SIGTERM (what `memspool serve` runs)."""
    run(create_app(home, host=host, port=port, max_body=max_body), host, port)
