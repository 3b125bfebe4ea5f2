"""The memory browser: HTML pages over the same Service as the JSON API.

Served by ``memspool serve`` at ``/`` (the overview) and under ``/ui/``,
on the same loopback server, behind the same guard (Host check first). A
browser signs in with a one-time code from ``memspool open`` and then
carries an HttpOnly, SameSite=Strict cookie; API clients keep using the
bearer token, which opens the pages too.

    auth.py       one-time login codes, browser sessions, CSRF tokens (in memory)
    render.py     the Jinja2 environment, its escaping filters, the page headers
    pages.py      the pages a browser reads (GET)
    actions.py    sign-in and sign-out, and the forms that change memory (POST)
    templates/    the pages' HTML; static/ their stylesheet and script

Only the path rules are here, so the guard can tell a page from an API
route without loading Jinja2.
"""

from __future__ import annotations

from typing import Final

__all__ = ["LOGIN_PATH", "PAGE_PREFIX", "STATIC_PREFIX", "is_page"]

#: Every page but the overview lives under this prefix.
PAGE_PREFIX: Final = "/ui/"
#: The stylesheet and script: the same for everyone, readable without signing in.
STATIC_PREFIX: Final = "/ui/static/"
LOGIN_PATH: Final = "/login"
_PAGE_PATHS: Final = frozenset({"/", LOGIN_PATH, "/logout"})


def is_page(path: str) -> bool:
    """Whether ``path`` is a page (answered in HTML) rather than an API route (JSON)."""
    return path in _PAGE_PATHS or path.startswith(PAGE_PREFIX)
