"""The HTTP exchange with a model server, under one deadline (see ``llm``).

The timeout is one deadline for the whole call: connecting, the status line
and headers, and the body. A socket timeout alone restarts with every byte,
so a server trickling its headers could hold a capture for minutes. The
request runs in a daemon thread the caller waits for until the deadline; at
the deadline the call's sockets are shut down, which ends the thread's
blocked read, and the caller falls back at once. Redirects are refused, and a
model on this machine is never reached through a proxy.

Kept apart from ``llm`` because urllib and http.client take tens of
milliseconds to import, which every command line start would otherwise pay.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.error
import urllib.request
from typing import Any, Final

from memspool.base.errors import LlmError

__all__ = ["post"]

#: A reply larger than this is junk for a list of at most 20 short notes.
MAX_REPLY_BYTES: Final = 1024 * 1024
#: Bytes read per chunk.
READ_CHUNK_BYTES: Final = 64 * 1024
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises HTTPError for the 3xx


class _Connections:
    """The HTTP connections one call opens, so its deadline can cut them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._opened: list[http.client.HTTPConnection] = []

    def factory(self, http_class: Any) -> Any:
        """``http_class`` as urllib calls it, keeping each connection it makes."""
        def make(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
            connection: http.client.HTTPConnection = http_class(*args, **kwargs)
            with self._lock:
                self._opened.append(connection)
            return connection
        return make

    def cut(self) -> None:
        """Shut the sockets down: a read blocked on them returns at once."""
        with self._lock:
            sockets = [c.sock for c in self._opened if c.sock is not None]
        for sock in sockets:
            # The plain socket's shutdown, also under TLS: the reading thread
            # owns the TLS state, only the file descriptor is shared.
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _CutMixin:
    """Opens connections through ``_Connections`` so the deadline can cut them."""

    def __init__(self, connections: _Connections) -> None:
        super().__init__()
        self._connections = connections

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(  # type: ignore[misc]
            self._connections.factory(http_class), req, **kwargs)


class _CutHTTPHandler(_CutMixin, urllib.request.HTTPHandler):
    pass


class _CutHTTPSHandler(_CutMixin, urllib.request.HTTPSHandler):
    pass


def _opener(host: str, connections: _Connections) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = [
        _NoRedirect(), _CutHTTPHandler(connections), _CutHTTPSHandler(connections),
    ]
    if host in _LOOPBACK:
        # A model on this machine is never reached through a proxy, whatever *_proxy says.
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


def _timed_out(endpoint: str, timeout: float) -> LlmError:
    return LlmError(f"timed out: no complete answer from {endpoint} within {timeout:g} s.")


def post(endpoint: str, host: str, body: dict[str, Any], timeout: float) -> bytes:
    """The answer to one POST, within ``timeout`` seconds all told, or :class:`LlmError`."""
    connections = _Connections()
    outcome: list[bytes | LlmError] = []

    def exchange() -> None:
        try:
            outcome.append(_exchange(endpoint, host, body, timeout, connections))
        except LlmError as exc:
            outcome.append(exc)
        except Exception as exc:  # noqa: BLE001 - any failure of the model path means fall back
            outcome.append(LlmError(f"the request to {endpoint} failed: {exc!r}."))

    worker = threading.Thread(target=exchange, name="memspool-llm", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive() or not outcome:
        connections.cut()  # the worker's blocked read returns now, and the worker ends
        raise _timed_out(endpoint, timeout)
    result = outcome[0]
    if isinstance(result, LlmError):
        raise result
    return result


def _exchange(
    endpoint: str, host: str, body: dict[str, Any], timeout: float, connections: _Connections
) -> bytes:
    request = urllib.request.Request(  # noqa: S310 - scheme checked in _endpoint_kind
        endpoint, data=json.dumps(body).encode("utf-8"), method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        # The socket timeout bounds connecting when the worker is left behind
        # (a connection not yet made cannot be cut); post keeps the deadline.
        with _opener(host, connections).open(request, timeout=timeout) as response:
            chunks: list[bytes] = []
            size = 0
            while True:
                chunk = response.read1(READ_CHUNK_BYTES)
                if not chunk:
                    return b"".join(chunks)
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise LlmError(
                        f"answer from {endpoint} is larger than {MAX_REPLY_BYTES} bytes."
                    )
                chunks.append(chunk)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise LlmError(f"{endpoint} answered HTTP {exc.code} {exc.reason}.") from None
    except TimeoutError:
        raise _timed_out(endpoint, timeout) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise _timed_out(endpoint, timeout) from None
        raise LlmError(f"cannot reach {endpoint}: {exc.reason}.") from None
    except (OSError, http.client.HTTPException) as exc:
        raise LlmError(f"connection to {endpoint} failed: {exc!r}.") from None
