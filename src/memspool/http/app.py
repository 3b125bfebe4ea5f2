"""The Starlette app, and :func:`serve`, which runs it under uvicorn."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware

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
from memspool.http.routes import ROUTES
from memspool.http.token import read_or_create_token
from memspool.http.web.actions import action_routes
from memspool.http.web.auth import Logins
from memspool.http.web.pages import page_routes
from memspool.http.workers import Workers

__all__ = ["create_app", "run", "serve"]


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
        middleware=[Middleware(Guard, token=token, hosts=HostCheck.for_server(host, port),
                               max_body=max_body, logins=logins)],
        exception_handlers=dict(HANDLERS),
        lifespan=lifespan,
    )
    app.state.workers = workers
    app.state.home = config.home
    app.state.logins = logins
    return app


def run(app: Starlette, host: str, port: int) -> None:
    """Serve ``app`` on ``host``:``port`` until SIGINT or SIGTERM."""
    # proxy_headers off: nothing sits in front of a local server, so an
    # X-Forwarded-For header is a client's claim, not a proxy's report.
    uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=False,
                server_header=False)


def serve(home: Path | None = None, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          max_body: int = DEFAULT_MAX_BODY) -> None:
    """Serve the API over ``home`` until SIGINT or SIGTERM (what `memspool serve` runs)."""
    run(create_app(home, host=host, port=port, max_body=max_body), host, port)
