"""The pages a browser reads: each parses its query, makes Service calls on a
worker, and renders one template. Nothing here changes memory (actions.py does)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from memspool.base.errors import NotFound, PayloadError
from memspool.base.kinds import LAYERS, NOTE_TYPES
from memspool.distill.keys import SUMMARY_CHARS
from memspool.http.fields import parse_query, path_id
from memspool.http.web.auth import Session
from memspool.http.web.render import html_page
from memspool.http.workers import Workers
from memspool.results import SEARCH_LIMIT, BrowsePage, SearchPage, Timeline
from memspool.service import Service
from memspool.untrusted import MAX_DIGITS, shown

__all__ = ["common", "memory_id", "memory_page", "page_routes"]

#: Memories on one page of the list.
PER_PAGE: Final = 50
MAX_PAGE: Final = 1_000_000
#: What a page says after a form did its work; only these fixed sentences are
#: shown, never text taken from the URL.
NOTES: Final = {
    "edited": "Saved. The earlier text is kept in the history below, reason: edited.",
    "unchanged": "Nothing changed: the text and type are the same as before.",
    "pinned": "Pinned: decay will never archive this memory.",
    "unpinned": "Unpinned: this memory decays like any other again.",
    "forgot": "Forgotten. Digesting its transcripts again will not bring it back.",
}


def _workers(request: Request) -> Workers:
    workers: Workers = request.app.state.workers
    return workers


def browser(request: Request) -> Session | None:
    """The signed-in browser session of this request; ``None`` for a token client."""
    found: Session | None = request.scope.get("state", {}).get("browser")
    return found


def common(request: Request, active: str) -> dict[str, Any]:
    """What every page's frame needs: the active tab, the CSRF token, signed in."""
    session = browser(request)
    return {"active": active, "csrf": session.csrf if session else "",
            "signed_in": session is not None}


def memory_id(request: Request, name: str = "memory_id") -> int:
    return path_id(request.path_params[name], "An id is a whole number, got {given}.")


def _note(fields_note: str | None) -> str | None:
    return NOTES.get(fields_note or "")


async def overview(request: Request) -> Response:
    parse_query(request.query_params, ())
    found = await _workers(request).run(lambda service: service.overview())
    return html_page("overview.html", {**common(request, "overview"), **found.as_dict()})


async def memories(request: Request) -> Response:
    fields = parse_query(request.query_params,
                         ("project", "type", "layer", "q", "page", "note", "forgot"))
    project, text = fields.text("project"), fields.text("q")
    kind, layer = fields.choice("type", NOTE_TYPES), fields.choice("layer", LAYERS)
    page = fields.count("page", most=MAX_PAGE) or 1
    forgot = fields.count("forgot", most=10**18)

    def call(service: Service) -> tuple[BrowsePage, bool]:
        found = service.browse(project=project, type=kind, layer=layer, text=text, page=page,
                               per_page=PER_PAGE)
        return found, forgot is not None and not _exists(service, forgot)

    found, gone = await _workers(request).run(call)
    filters = {"project": project or "", "type": kind or "", "layer": layer or "",
               "q": text or ""}
    return html_page("memories.html", {
        **common(request, "memories"), **found.as_dict(), "filters": filters, "types": NOTE_TYPES,
        "layers": LAYERS, "note": _note(fields.text("note")), "forgot": forgot if gone else None})


def _exists(service: Service, wanted: int) -> bool:
    """Whether memory ``wanted`` is there: a page says one is gone only when it is (the
    number in its URL is anyone's to write)."""
    try:
        service.memory_page(wanted)
    except NotFound:
        return False
    return True


async def memory(request: Request) -> Response:
    wanted = memory_id(request)
    fields = parse_query(request.query_params, ("note",))
    return await memory_page(request, wanted, note=_note(fields.text("note")))


async def memory_page(request: Request, wanted: int, *, note: str | None = None,
                      refused: str | None = None,
                      draft: Mapping[str, str] | None = None) -> Response:
    """Memory ``wanted``'s page. ``refused``: why its edit form's last post was refused,
    said beside the form, which holds what was sent (``draft``) so that nothing typed
    is lost; the page is then a 400."""
    found = (await _workers(request).run(lambda service: service.memory_page(wanted))).as_dict()
    return html_page("memory.html", {
        **common(request, "memories"), "memory": found, "types": NOTE_TYPES, "note": note,
        "refused": refused, "summary_chars": SUMMARY_CHARS,
        "draft": {"summary": found["summary"], "body": found["body"], "type": found["type"],
                  **(draft or {})}}, status=400 if refused else 200)


async def forget_confirm(request: Request) -> Response:
    wanted = memory_id(request)
    parse_query(request.query_params, ())
    found = await _workers(request).run(lambda service: service.memory_page(wanted))
    return html_page("forget.html", {**common(request, "memories"),
                                     "memory": found.as_dict()})


async def search(request: Request) -> Response:
    fields = parse_query(request.query_params, ("q", "project", "type", "all", "limit",
                                                "fragment"))
    query, project = fields.text("q"), fields.text("project")
    kind = fields.choice("type", NOTE_TYPES)
    include_all, fragment = fields.flag("all"), fields.flag("fragment")
    limit = fields.count("limit", most=SEARCH_LIMIT.most) or SEARCH_LIMIT.default

    def call(service: Service) -> tuple[SearchPage | None, list[tuple[str, str]]]:
        found = (service.search(query, project=project, type=kind, limit=limit,
                                include_all=include_all) if query and query.strip() else None)
        return found, ([] if fragment else service.project_choices())

    found, projects = await _workers(request).run(call)
    context = {**common(request, "search"), "query": query or "", "found": found,
               "projects": projects, "types": NOTE_TYPES,
               "filters": {"project": project or "", "type": kind or "", "all": include_all,
                           "limit": limit}}
    return html_page("results.html" if fragment else "search.html", context)


async def context_block(request: Request) -> Response:
    fields = parse_query(request.query_params, ("project",))
    project = fields.text("project")

    def call(service: Service) -> tuple[str, str, list[tuple[str, str]], str | None]:
        names = service.project_choices()
        unknown = service.unknown_project(project)
        if unknown is not None:
            return "", "", names, unknown
        chosen = (service.project(project) if project else _latest_project(service)) or ""
        return chosen, service.injected_context(chosen) if chosen else "", names, None

    chosen, text, projects, unknown = await _workers(request).run(call)
    return html_page("context.html", {**common(request, "context"), "project": chosen,
                                      "text": text, "projects": projects, "unknown": unknown})


def _latest_project(service: Service) -> str | None:
    """The project whose memory changed last."""
    latest = service.browse(per_page=1).memories
    return str(latest[0]["project"]) if latest else None


async def timeline(request: Request) -> Response:
    fields = parse_query(request.query_params, ("project", "before"))
    project = fields.text("project")
    raw_before = fields.text("before")
    before = None
    if raw_before is not None:
        # Plain ASCII seconds: float() also takes "nan", "-inf" and full-width digits.
        whole, _, part = raw_before.partition(".")
        if not (whole.isascii() and whole.isdigit() and (not part or (
                part.isascii() and part.isdigit()))) or len(raw_before) > MAX_DIGITS:
            raise PayloadError(f"before must be a time in seconds, got {shown(raw_before)}.")
        before = float(raw_before)

    def call(service: Service) -> tuple[Timeline | None, list[tuple[str, str]]]:
        names = service.project_choices()
        chosen = service.project(project) if project else _latest_project(service)
        return (service.timeline(chosen, before=before) if chosen else None), names

    found, projects = await _workers(request).run(call)
    return html_page("timeline.html", {**common(request, "timeline"), "found": found,
                                       "projects": projects})


async def slice_page(request: Request) -> Response:
    wanted = memory_id(request, "slice_id")
    parse_query(request.query_params, ())
    found = await _workers(request).run(lambda service: service.slice_page(wanted))
    return html_page("slice.html", {**common(request, "memories"), "slice": found})


def page_routes() -> list[Any]:
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    return [
        Route("/", overview, methods=["GET"]),
        Route("/ui/memories", memories, methods=["GET"]),
        Route("/ui/memories/{memory_id}", memory, methods=["GET"]),
        Route("/ui/memories/{memory_id}/forget", forget_confirm, methods=["GET"]),
        Route("/ui/search", search, methods=["GET"]),
        Route("/ui/context", context_block, methods=["GET"]),
        Route("/ui/timeline", timeline, methods=["GET"]),
        Route("/ui/slices/{slice_id}", slice_page, methods=["GET"]),
        Mount("/ui/static", StaticFiles(packages=[("memspool.http.web", "static")]),
              name="static"),
    ]
