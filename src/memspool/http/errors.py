"""Every failure as ``{"ok": false, "error": "<one sentence>"}``; never a traceback.

A page (memspool.http.web) answers the same sentence and status as HTML.

    PayloadError, other MemspoolError 400   the input cannot be used; the message says why
    NotFound                          404   no memory with that id
    StoreError, sqlite3.Error         503   the store is busy, damaged or full; try again
    HTTPException                     its status (401, 404 no route, 405, 413, 421)
    anything else                     500   the traceback goes to the server's log only
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from memspool.base.errors import MemspoolError, NotFound, StoreError
from memspool.config import load_config
from memspool.http.responses import error_response
from memspool.http.web import is_page
from memspool.http.web.render import refusal_page
from memspool.store import diagnose

__all__ = ["HANDLERS"]

Handler = Callable[[Request, Exception], Awaitable[Response]]

#: What a 500 says: the details stay in the server's log, out of reach of a client.
INTERNAL: Final = ("The server failed on this request (an internal error). Its log says "
                   "why; try again, and report it if it keeps failing.")


def _answer(request: Request, status: int, message: str,
            headers: Mapping[str, str] | None = None) -> Response:
    if is_page(request.url.path):
        return refusal_page(status, message, headers)
    return error_response(status, message, headers)


async def _memspool(request: Request, exc: Exception) -> Response:
    if isinstance(exc, NotFound):
        return _answer(request, 404, str(exc))
    if isinstance(exc, StoreError):
        return _answer(request, 503, str(exc))
    return _answer(request, 400, str(exc))


async def _sqlite(request: Request, exc: Exception) -> Response:
    if isinstance(exc, sqlite3.Error):
        # What is wrong (full disk, read-only, damaged, a deleted WAL), in one sentence.
        home = request.app.state.home
        return _answer(request, 503, str(diagnose(load_config(home).db_path, exc)))
    return _answer(request, 503, f"The store refused the operation ({exc}). If another memspool "
                               f"process holds it, try again; GET /status says whether the "
                               f"store is damaged.")


async def _http(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, HTTPException):
        return await _internal(request, exc)
    headers = exc.headers or {}
    if exc.status_code == 404:
        message = (f"There is no route {request.method} {request.url.path}; "
                   f"GET /openapi.json lists the routes.")
    elif exc.status_code == 405:
        message = (f"{request.url.path} does not take {request.method}; it takes "
                   f"{headers.get('Allow', 'other methods')}.")
    else:
        message = str(exc.detail)
    return _answer(request, exc.status_code, message, headers)


async def _gone(request: Request, exc: Exception) -> Response:
    """The client stopped sending before its body ended (or the server's deadline
    cut it): nobody reads the answer, and it is no failure of the server's, so
    nothing is logged as one."""
    return _answer(request, 400, "The request ended before its body did; send it again.")


async def _internal(request: Request, exc: Exception) -> Response:
    return _answer(request, 500, INTERNAL)


HANDLERS: Final[Mapping[int | type[Exception], Handler]] = {
    MemspoolError: _memspool,
    sqlite3.Error: _sqlite,
    HTTPException: _http,
    ClientDisconnect: _gone,
    Exception: _internal,
}
