"""Browser sign-in: one-time login codes, the sessions they open, and CSRF tokens.

A browser cannot send the bearer token, and a token in a page's URL would
end up in history. So ``memspool open`` (holding the token) asks the server
for a login code: one use, ``CODE_SECS`` of life. Opening
``/login?code=...`` trades it for a session cookie that is HttpOnly (no
script reads it) and SameSite=Strict (no other site's page or link sends
it). Each session has its own CSRF token, which every form that changes
something carries back.

Everything lives in the server's memory: a restart signs every browser out,
and nothing about a session touches the disk.
"""

from __future__ import annotations

import dataclasses
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = ["CODE_SECS", "SESSION_SECS", "Logins", "Session"]

#: A login code must be used within this long: enough to click a printed link.
CODE_SECS: Final = 120.0
#: A browser session lasts a working day; `memspool open` starts another.
SESSION_SECS: Final = 12 * 3600.0
#: Outstanding codes and live sessions kept at most; the oldest go first, so a
#: client minting codes in a loop cannot grow the server's memory.
MAX_CODES: Final = 16
MAX_SESSIONS: Final = 64
#: 32 random bytes each (URL-safe base64): not guessable in any number of tries.
_SECRET_BYTES: Final = 32


@dataclasses.dataclass(frozen=True)
class Session:
    id: str
    csrf: str
    expires: float

    def csrf_matches(self, sent: str) -> bool:
        # compare_digest: the time taken says nothing about how much of a guess was right.
        return hmac.compare_digest(sent.encode("utf-8", "replace"), self.csrf.encode("ascii"))


class Logins:
    """The codes handed out and the sessions they opened (one server's memory)."""

    def __init__(self, port: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        #: Cookies are shared by every port of a host: the name carries the port,
        #: so two servers on one machine keep their sign-ins apart.
        self.cookie = f"memspool_session_{port}"
        self._clock = clock
        self._codes: dict[str, float] = {}
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def new_code(self) -> str:
        """A fresh one-time code, valid for ``CODE_SECS``."""
        code = secrets.token_urlsafe(_SECRET_BYTES)
        with self._lock:
            self._sweep()
            while len(self._codes) >= MAX_CODES:
                del self._codes[next(iter(self._codes))]
            self._codes[code] = self._clock() + CODE_SECS
        return code

    def redeem(self, code: str) -> Session | None:
        """The new session ``code`` opens, or ``None`` when it is unknown, used or
        expired. A code works once, whatever the outcome."""
        with self._lock:
            self._sweep()
            # Look the code up by constant-time comparison, not by hashing the
            # guess into the dict: no timing says how close a guess came.
            found = next((c for c in self._codes
                          if hmac.compare_digest(c.encode(), code.encode("utf-8", "replace"))),
                         None)
            if found is None:
                return None
            del self._codes[found]
            while len(self._sessions) >= MAX_SESSIONS:
                del self._sessions[next(iter(self._sessions))]
            session = Session(id=secrets.token_urlsafe(_SECRET_BYTES),
                              csrf=secrets.token_urlsafe(_SECRET_BYTES),
                              expires=self._clock() + SESSION_SECS)
            self._sessions[session.id] = session
            return session

    def session(self, cookie: str | None) -> Session | None:
        """The live session a cookie names, if any."""
        if not cookie:
            return None
        with self._lock:
            found = self._sessions.get(cookie)
            if found is None:
                return None
            if found.expires <= self._clock():
                del self._sessions[cookie]
                return None
            return found

    def end(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)

    def _sweep(self) -> None:
        now = self._clock()
        for code in [c for c, expires in self._codes.items() if expires <= now]:
            del self._codes[code]
        for key in [k for k, s in self._sessions.items() if s.expires <= now]:
            del self._sessions[key]
