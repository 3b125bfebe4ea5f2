"""Sign-in, sign-out, and the forms that change memory (edit, pin, forget).

Every form posts ``application/x-www-form-urlencoded`` with the session's
CSRF token; the guard has already checked that the request came from this
server's own origin. A client using the bearer token sends no cookie, so no
other site can make its browser send the token: it needs no CSRF token.
After a change the browser is sent (303) to a page that shows it.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import parse_qsl, urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from memspool.base.errors import PayloadError
from memspool.http.fields import listed, once, parse_query
from memspool.http.web import LOGIN_PATH
from memspool.http.web.auth import CODE_SECS, SESSION_SECS, Logins
from memspool.http.web.pages import browser, common, memory_id, memory_page
from memspool.http.web.render import as_stored, html_page
from memspool.http.workers import Workers
from memspool.results import Edited
from memspool.service import Service
from memspool.untrusted import no_surrogates

__all__ = ["action_routes"]

#: Fields one form may carry at most; every form here has four or fewer.
MAX_FIELDS: Final = 8
_FORM: Final = "application/x-www-form-urlencoded"


def _logins(request: Request) -> Logins:
    logins: Logins = request.app.state.logins
    return logins


def _workers(request: Request) -> Workers:
    workers: Workers = request.app.state.workers
    return workers


async def read_form(request: Request, allowed: tuple[str, ...]) -> dict[str, str]:
    """The posted form's fields; refused (403) without the session's CSRF token."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind != _FORM:
        raise PayloadError(f"Send this form from its page (as {_FORM}), not as "
                           f"{kind or 'no type'}.")
    try:
        text = (await request.body()).decode("utf-8")
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FIELDS)
    except (UnicodeDecodeError, ValueError):
        raise PayloadError("The form could not be read; send it again from its page.") from None
    fields = once(((name, no_surrogates(value)) for name, value in pairs), "field")
    sent = fields.pop("csrf", "")
    session = browser(request)
    if session is not None and not session.csrf_matches(sent):
        raise HTTPException(403, "This form is stale or came from another page (its CSRF "
                                 "token does not match); reload the page and try again.")
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        takes = f"takes {', '.join(allowed)}" if allowed else "takes no field but its csrf"
        raise PayloadError(f"Unknown field(s) {listed(unknown)}; this form {takes}.")
    return fields


def _see(path: str, **query: Any) -> RedirectResponse:
    target = f"{path}?{urlencode(query)}" if query else path
    return RedirectResponse(target, status_code=303, headers={"cache-control": "no-store"})


async def edit(request: Request) -> Response:
    """Save the edit form. Its fields were filled with the stored text's stand-ins
    (render.visible): :func:`~memspool.http.web.render.as_stored` carries what was
    left as shown back to the stored text, so a field not changed is saved as it was.
    A refusal (an empty or over-long field) shows the form again, with what was sent
    and why it was refused."""
    wanted = memory_id(request)
    fields = await read_form(request, ("summary", "body", "type"))

    def call(service: Service) -> Edited:
        stored = service.memory_page(wanted).memory
        return service.edit(wanted, summary=as_stored(fields.get("summary", ""), stored.summary),
                            body=as_stored(fields.get("body", ""), stored.body),
                            type=fields.get("type", ""))

    try:
        result = await _workers(request).run(call)
    except PayloadError as exc:
        return await memory_page(request, wanted, refused=str(exc), draft=fields)
    return _see(f"/ui/memories/{wanted}", note="edited" if result.changed else "unchanged")


async def pin(request: Request) -> Response:
    wanted = memory_id(request)
    fields = await read_form(request, ("pinned",))
    if fields.get("pinned") not in ("0", "1"):
        raise PayloadError("pinned must be 1 (pin) or 0 (unpin).")
    on = fields["pinned"] == "1"
    await _workers(request).run(lambda service: service.pin(wanted, on))
    return _see(f"/ui/memories/{wanted}", note="pinned" if on else "unpinned")


async def forget(request: Request) -> Response:
    wanted = memory_id(request)
    fields = await read_form(request, ("confirm",))
    if fields.get("confirm") != "yes":
        raise PayloadError("Forgetting needs confirm=yes, which the confirmation page sends.")
    result = await _workers(request).run(lambda service: service.forget(wanted))
    return _see("/ui/memories", project=result.project, note="forgot", forgot=wanted)


async def login(request: Request) -> Response:
    """Trade a one-time code for a session cookie; without a code, say how to get one."""
    fields = parse_query(request.query_params, ("code", "out"))
    code = fields.text("code")
    if code is None:
        signed_out = fields.flag("out")
        return html_page("message.html", {
            **common(request, ""), "title": "Signed out" if signed_out else "Sign in",
            "message": ("You are signed out. " if signed_out else "") + "To open memspool "
                       "here, run `memspool open` (or `memspool serve --open`) and follow "
                       "the link it prints."}, status=200 if signed_out else 401)
    logins = _logins(request)
    if request.method == "HEAD":
        # A link checker or a preview asks with HEAD: the code is for the person.
        return Response(status_code=200, headers={"cache-control": "no-store"})
    session = logins.redeem(code)
    if session is None:
        return html_page("message.html", {
            **common(request, ""), "title": "This login link does not work",
            "message": f"It was used already, it is older than {CODE_SECS / 60:.0f} minutes, "
                       f"or it belongs to another server. Run `memspool open` for a new one."},
            status=401)
    response = _see("/")
    response.set_cookie(logins.cookie, session.id, max_age=int(SESSION_SECS), path="/",
                        httponly=True, samesite="strict")
    return response


async def logout(request: Request) -> Response:
    await read_form(request, ())
    session = browser(request)
    logins = _logins(request)
    if session is not None:
        logins.end(session)
    response = _see(LOGIN_PATH, out="1")
    response.delete_cookie(logins.cookie, path="/", httponly=True, samesite="strict")
    return response


def action_routes() -> list[Any]:
    from starlette.routing import Route

    return [
        Route("/ui/memories/{memory_id}/edit", edit, methods=["POST"]),
        Route("/ui/memories/{memory_id}/pin", pin, methods=["POST"]),
        Route("/ui/memories/{memory_id}/forget", forget, methods=["POST"]),
        Route(LOGIN_PATH, login, methods=["GET"]),
        Route("/logout", logout, methods=["POST"]),
    ]
