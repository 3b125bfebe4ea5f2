"""The HTTP API's defaults, and which Host headers a server answers to.

Standard library only: the CLI imports this on every start.
"""

from __future__ import annotations

import dataclasses
from typing import Final

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_MAX_BODY",
    "DEFAULT_PORT",
    "LOOPBACK_HOSTS",
    "TOKEN_NAME",
    "WORKER_THREADS",
    "HostCheck",
    "is_loopback",
]

#: Loopback only: the API reads and writes a user's memory, so nothing off
#: the machine reaches it unless the user asks with --host.
DEFAULT_HOST: Final = "127.0.0.1"
#: An unassigned port in IANA's registry, easy to remember.
DEFAULT_PORT: Final = 8765
#: 8 MiB: twice the 4 MiB the capture verb takes in one call
#: (memspool.distill.MAX_PAYLOAD_BYTES), room for JSON escaping of that text.
DEFAULT_MAX_BODY: Final = 8 * 1024 * 1024
#: The token's file under the home (0600, like every file there).
TOKEN_NAME: Final = "api-token"  # noqa: S105 - a file name, not a secret
#: Threads calling the Service, each with its own warm connection. SQLite
#: takes one writer at a time; a few threads beside it keep searches quick
#: while a capture or the drainer writes.
WORKER_THREADS: Final = 4
#: The names a local client puts in Host for a loopback server.
LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    return host.strip("[]").lower() in LOOPBACK_HOSTS


def _bracketed(host: str) -> str:
    # An IPv6 address in a Host header is written in brackets: [::1]:8765.
    bare = host.strip("[]").lower()
    return f"[{bare}]" if ":" in bare else bare


@dataclasses.dataclass(frozen=True)
class HostCheck:
    """Which Host header values a server bound to ``host``:``port`` accepts.

    The loopback names always, with or without the port; the bound address
    too when it was given with --host. A browser page whose DNS name was
    rebound to 127.0.0.1 still sends its own name, so it is refused. Port 0
    (any free port) accepts any port in the header.
    """

    names: frozenset[str]
    port: int

    @classmethod
    def for_server(cls, host: str, port: int) -> HostCheck:
        return cls(frozenset({_bracketed(n) for n in (*LOOPBACK_HOSTS, host)}), port)

    def accepts(self, header: str) -> bool:
        header = header.strip().lower()
        if header.startswith("["):
            end = header.find("]") + 1
            name, rest = header[:end], header[end:]
        else:
            name, colon, port = header.partition(":")
            rest = colon + port
        if rest:
            digits = rest[1:]
            # A port has at most 5 digits (int() refuses thousands of them).
            if not (rest.startswith(":") and digits.isascii() and digits.isdigit()
                    and len(digits) <= 5):
                return False
            if self.port and int(digits) != self.port:
                return False
        return bool(name) and name in self.names
