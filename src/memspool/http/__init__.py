"""The local HTTP API: ``memspool serve``, a thin layer over :mod:`memspool.service`.

A Starlette app served by uvicorn, bound to loopback unless told otherwise.
Every request passes the guard first (the Host header against DNS
rebinding, the bearer token, the body limit), then a route turns JSON into
one :class:`~memspool.service.Service` call and its answer back into JSON.

    limits.py    defaults and which Host headers a server accepts (no heavy imports)
    token.py     the bearer token in HOME/api-token: created once, reused
    guard.py     the ASGI middleware: Host check, token, body limit
    fields.py    reading a JSON body or a query string into checked values
    workers.py   the threads that call the Service, one warm Service each
    routes.py    the routes: input in, one Service call, JSON out
    errors.py    every failure as {"ok": false, "error": ...} with its status
    responses.py JSON responses (orjson)
    openapi.py   the OpenAPI document served at GET /openapi.json
    app.py       create_app() and serve()

Only ``limits`` is imported here: the CLI reads its defaults on every
``memspool`` start, and Starlette is loaded only when a server starts
(``from memspool.http.app import create_app, serve``).
"""

from __future__ import annotations

from memspool.http.limits import DEFAULT_HOST, DEFAULT_MAX_BODY, DEFAULT_PORT, TOKEN_NAME

__all__ = ["DEFAULT_HOST", "DEFAULT_MAX_BODY", "DEFAULT_PORT", "TOKEN_NAME"]
