"""Templates to HTML: one Jinja2 environment, its filters, and the page response.

Memory text is untrusted: it comes from transcripts, and a transcript can
hold HTML, scripts, control characters or bidirectional overrides. Every
value a template prints goes through :func:`visible` (``finalize``), which
turns control and direction characters into visible stand-ins, and then
through autoescaping, which no template turns off. A form field sent back
with those stand-ins is read back to the stored text by :func:`as_stored`.
The one filter that makes markup, :func:`highlight`, escapes every piece it
wraps. The Content-Security-Policy sent with each page allows scripts,
styles and requests from this server only: nothing on a page can load
anything from another host, even if a memory asked it to.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Mapping
from typing import Any, Final

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape
from starlette.responses import HTMLResponse

from memspool import __version__
from memspool.base.controls import BIDI, LINE_SEPARATORS, TAGS
from memspool.base.project import readable_name
from memspool.base.terms import query_terms, stem, terms_of

__all__ = ["HEADERS", "as_stored", "highlight", "html_page", "refusal_page", "visible", "when"]

#: Control characters (but tab and line ends), DEL, the C1 controls, direction
#: overrides and isolates, the tag characters, and lone surrogates (a slice decoded
#: with surrogatepass may hold them; UTF-8 cannot).
_UNSAFE: Final = re.compile(
    f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{BIDI}{LINE_SEPARATORS}{TAGS}\ud800-\udfff]")
#: Words as the search index's query side cuts them (memspool.base.terms).
_WORDS: Final = re.compile(r"[A-Za-z0-9]+(?:[._/:-][A-Za-z0-9]+)*")
_REPLACEMENT: Final = "\ufffd"
#: A browser sends a text area's line ends as CR LF.
_LINE_END: Final = re.compile("\r\n?")

#: Sent with every page: nothing from another host, no framing, no referrer to
#: another site (a login code in a URL goes nowhere), and no caching of memory
#: on disk. Not "no-referrer": with it Chromium sends "Origin: null" on a form
#: post, which the guard must refuse.
HEADERS: Final = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: NUL -> "␀"
    if code == 0x7F:
        return "\u2421"  # "␡"
    return _REPLACEMENT


def visible(value: Any) -> Any:
    """``value`` with unsafe characters replaced (one character each); markup
    already made safe, and anything not text, pass through."""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return _UNSAFE.sub(_stand_in, value)


def as_stored(sent: str, stored: str) -> str:
    """What a form field filled with ``stored`` means when it sends back ``sent``.

    The field showed ``visible(stored)``, so a browser sends back its stand-ins, not
    the characters they stood for (the direction marks of Hebrew text among them).
    Where ``sent`` begins and ends as the field showed, the characters are the stored
    ones and come back as stored: a field left as it was is ``stored`` exactly, and
    marks before and after the part a person changed stay. The changed part, from
    the first character that differs to the last, is kept as sent: a stand-in left
    inside it is saved as the character it is (U+FFFD, "␛"), since once the text
    around it changed, nothing says which character it stood for.
    """
    sent = _LINE_END.sub("\n", sent)
    shown = visible(stored)  # one character for one: positions in both agree
    if sent == shown:
        return stored
    most = min(len(sent), len(shown))
    head = 0
    while head < most and sent[head] == shown[head]:
        head += 1
    tail = 0
    while tail < most - head and sent[-1 - tail] == shown[-1 - tail]:
        tail += 1
    return stored[:head] + sent[head:len(sent) - tail] + stored[len(stored) - tail:]


@functools.lru_cache(maxsize=256)
def _wanted(query: str) -> frozenset[str]:
    """The stems of ``query``'s search terms (a page highlights with one query
    many times)."""
    return frozenset(stem(term) for term in query_terms(query))


def highlight(text: str, query: str) -> Markup:
    """``text``, escaped, with every word that matches a word of ``query`` (by its
    stem or its identifier parts, as search matches) in ``<mark>``."""
    text = visible(text)
    wanted = _wanted(query)
    if not wanted:
        return escape(text)
    pieces: list[str] = []
    last = 0
    seen: dict[str, bool] = {}
    for match in _WORDS.finditer(text):
        word = match.group(0)
        marked = seen.get(word)
        if marked is None:
            marked = seen[word] = any(stem(part) in wanted for part in terms_of(word))
        if marked:
            pieces.append(escape(text[last:match.start()]))
            pieces.append(Markup("<mark>%s</mark>") % word)
            last = match.end()
    pieces.append(escape(text[last:]))
    return Markup("").join(pieces)


def when(seconds: float | None) -> str:
    """A time as local date and minute; "never" for none."""
    if not seconds:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def clip(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("memspool.http.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        finalize=visible,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # A project is shown by its readable name; links and forms carry its identity.
    env.filters.update(highlight=highlight, when=when, clip=clip, project_name=readable_name)
    env.globals["version"] = __version__
    return env


ENVIRONMENT: Final = _environment()


def html_page(template: str, context: Mapping[str, Any], *, status: int = 200,
              headers: Mapping[str, str] | None = None) -> HTMLResponse:
    """The rendered template as a page, with the security headers."""
    body = ENVIRONMENT.get_template(template).render(**context)
    return HTMLResponse(body, status_code=status, headers={**HEADERS, **(headers or {})})


#: The heading of a page that answers with an error status.
TITLES: Final = {400: "That request cannot be used", 401: "Sign in", 403: "Refused",
                 404: "Not found", 405: "Not allowed", 413: "Too large",
                 421: "Wrong host", 500: "Something failed", 503: "The store is busy"}


def refusal_page(status: int, message: str,
                 headers: Mapping[str, str] | None = None) -> HTMLResponse:
    """A page that says, in one sentence, why a request was refused or failed."""
    return html_page("message.html", {"active": "", "csrf": "", "signed_in": False,
                                      "title": TITLES.get(status, "Refused"),
                                      "message": message},
                     status=status, headers=headers)
