"""The ASGI middleware every request passes first: Host, Origin, sign-in, body limit.

Order matters: the Host check comes first (a page on another site, its DNS
name rebound to 127.0.0.1, must learn nothing, not even whether its token
is wrong), then the Origin (a browser names the page a request comes from:
any page but this server's own is refused, whatever it carries), then the
credentials: the bearer token opens every route; a browser's session
cookie opens the pages only (never the JSON API), and a change it asks for
must name this server as its Origin (the form's CSRF token is checked by
the form itself, memspool.http.web.actions). Then the declared body size;
the body's actual size is counted as it streams, since a chunked upload
declares none.
"""

from __future__ import annotations

import hmac
from typing import Final

from starlette.exceptions import HTTPException
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memspool.http.limits import HostCheck
from memspool.http.responses import error_response
from memspool.http.web import LOGIN_PATH, STATIC_PREFIX, is_page
from memspool.http.web.auth import Logins, Session
from memspool.http.web.render import refusal_page

__all__ = ["Guard", "too_large"]

#: The routes a client may call without the token: is a server up? and the
#: login page, which trades a one-time code for a session.
OPEN_ROUTES: Final = frozenset({("GET", "/health"), ("HEAD", "/health"),
                                ("GET", LOGIN_PATH), ("HEAD", LOGIN_PATH)})
#: Methods that change nothing: no Origin needed for them.
SAFE_METHODS: Final = frozenset({"GET", "HEAD"})


def too_large(limit: int) -> str:
    return (f"The request body is larger than {limit} bytes, the most this server takes "
            f"(memspool serve --max-body). Send less, e.g. split a capture.")


class Guard:
    def __init__(self, app: ASGIApp, *, token: str, hosts: HostCheck, max_body: int,
                 logins: Logins | None = None) -> None:
        self.app = app
        self.token = token.encode("ascii")
        self.hosts = hosts
        self.max_body = max_body
        self.logins = logins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, message, extra = refusal
            if is_page(scope["path"]):
                await refusal_page(status, message, extra)(scope, receive, send)
            else:
                await error_response(status, message, extra)(scope, receive, send)
            return
        await self.app(scope, self._counting(receive), send)

    def _refusal(self, scope: Scope,
                 headers: dict[str, bytes]) -> tuple[int, str, dict[str, str]] | None:
        host = headers.get("host", b"").decode("latin-1")
        if not self.hosts.accepts(host):
            return (421, f"This server does not answer to the host {host!r}; call it as "
                         f"127.0.0.1, localhost or [::1] (or the address given to --host).", {})
        origin = headers.get("origin")
        if origin is not None and origin.decode("latin-1").strip().lower() != (
                f"http://{host.strip().lower()}"):
            return (403, f"A request from another site ({origin.decode('latin-1')!r}) is "
                         f"refused; open memspool's pages from this server itself.", {})
        refusal = self._credentials(scope, headers, signed_origin=origin is not None)
        if refusal is not None:
            return refusal
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                return 400, "The Content-Length header is not a number.", {}
            if int(declared) > self.max_body:
                return 413, too_large(self.max_body), {}
        return None

    def _credentials(self, scope: Scope, headers: dict[str, bytes], *,
                     signed_origin: bool) -> tuple[int, str, dict[str, str]] | None:
        """Token, or (for a page) a session cookie, which is noted in the scope's state."""
        method, path = scope["method"], scope["path"]
        session = None
        if (method, path) not in OPEN_ROUTES and not path.startswith(STATIC_PREFIX) \
                and not self._authorized(headers.get("authorization", b"")):
            session = self._session(headers) if is_page(path) else None
            if session is None:
                return (401, "A valid token is required: send 'Authorization: Bearer <token>' "
                             "with the token from the api-token file in the memspool home "
                             "(in a browser: run `memspool open` to sign in).",
                        {"www-authenticate": "Bearer"})
            if method not in SAFE_METHODS and not signed_origin:
                return (403, "A change asked for by a browser must say where it comes from "
                             "(the Origin header); send it from memspool's own page.", {})
        scope.setdefault("state", {})["browser"] = session
        return None

    def _session(self, headers: dict[str, bytes]) -> Session | None:
        raw = headers.get("cookie")
        if self.logins is None or raw is None:
            return None
        value = cookie_parser(raw.decode("latin-1")).get(self.logins.cookie)
        return self.logins.session(value)

    def _authorized(self, header: bytes) -> bool:
        scheme, _, credentials = header.strip().partition(b" ")
        # compare_digest: the time taken says nothing about how much of a guess was right.
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(),
                                                                   self.token)

    def _counting(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise HTTPException(413, too_large(self.max_body))
            return message

        return counted
