"""The ASGI middleware every request passes first: Host check, bearer token, body limit.

Order matters: the Host check comes first (a page on another site, its DNS
name rebound to 127.0.0.1, must learn nothing, not even whether its token
is wrong), then the token, then the declared body size. The body's actual
size is counted as it streams, since a chunked upload declares none.
"""

from __future__ import annotations

import hmac
from typing import Final

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memspool.http.limits import HostCheck
from memspool.http.responses import error_response

__all__ = ["Guard", "too_large"]

#: The one route a client may call without the token: is a server up?
OPEN_ROUTES: Final = frozenset({("GET", "/health"), ("HEAD", "/health")})


def too_large(limit: int) -> str:
    return (f"The request body is larger than {limit} bytes, the most this server takes "
            f"(memspool serve --max-body). Send less, e.g. split a capture.")


class Guard:
    def __init__(self, app: ASGIApp, *, token: str, hosts: HostCheck, max_body: int) -> None:
        self.app = app
        self.token = token.encode("ascii")
        self.hosts = hosts
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, message, extra = refusal
            await error_response(status, message, extra)(scope, receive, send)
            return
        await self.app(scope, self._counting(receive), send)

    def _refusal(self, scope: Scope,
                 headers: dict[str, bytes]) -> tuple[int, str, dict[str, str]] | None:
        host = headers.get("host", b"").decode("latin-1")
        if not self.hosts.accepts(host):
            return (421, f"This server does not answer to the host {host!r}; call it as "
                         f"127.0.0.1, localhost or [::1] (or the address given to --host).", {})
        if (scope["method"], scope["path"]) not in OPEN_ROUTES and not self._authorized(
                headers.get("authorization", b"")):
            return (401, "A valid token is required: send 'Authorization: Bearer <token>' "
                         "with the token from the api-token file in the memspool home.",
                    {"www-authenticate": "Bearer"})
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                return 400, "The Content-Length header is not a number.", {}
            if int(declared) > self.max_body:
                return 413, too_large(self.max_body), {}
        return None

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
