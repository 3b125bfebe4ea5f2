"""The HTTP connection: uvicorn's h11 protocol with a deadline per request and a cap.

uvicorn bounds the idle time between two requests on a kept-alive
connection, but not the time a client takes to send a request: a client
that sends one header byte every few seconds (slowloris) held a connection
open for as long as it liked, and nothing bounded how many connections
were open at once. Here:

- a request (head and body) must arrive whole within ``REQUEST_READ_SECS``
  of the connection opening, or of its first byte after a response; else
  the connection is closed;
- past ``MAX_CONNECTIONS`` open connections, a new one is closed as soon as
  it is accepted, before anything is read from it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["MAX_CONNECTIONS", "REQUEST_READ_SECS", "GuardedH11Protocol"]

#: Seconds a client has to send one whole request. A local client sends an 8 MiB
#: body in well under a second; ten is room for a loaded machine.
REQUEST_READ_SECS: Final = 10.0
#: Open connections at once. The API serves a few local clients (an editor, a
#: script, a dashboard) through 4 worker threads; 256 is far above their need.
MAX_CONNECTIONS: Final = 256


class GuardedH11Protocol(H11Protocol):
    """One HTTP connection, with the deadline and the cap above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > MAX_CONNECTIONS:
            transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # Still reading a request (its head, or its body): the deadline runs; a
        # request read whole is the app's to answer, without a deadline from here.
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            if self._read_deadline is None:
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._read_deadline = self.loop.call_later(REQUEST_READ_SECS, self._too_slow)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _too_slow(self) -> None:
        self._read_deadline = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            self.transport.close()
