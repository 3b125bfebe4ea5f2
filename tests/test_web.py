"""The memory browser (`memspool serve` at /) over HTTP, through a real server on 127.0.0.1:
sign-in, what a request needs, escaping, and the Service calls behind the pages."""

from __future__ import annotations

import html
import html.parser
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import REPO, run_cli
from hypothesis import given
from hypothesis import strategies as st
from web_support import WebServer

from memspool.http.web.auth import CODE_SECS, MAX_CODES, SESSION_SECS, Logins
from memspool.http.web.render import as_stored, highlight, visible
from memspool.service import Service

HOSTILE = ("Pitfall: the banner <script>alert('x')</script> and <img src=x onerror=alert(2)> "
           "print \x1b[31mred\x1b[0m, \u202eevil\u202c and a NUL \x00 into the admin log.")


def _capture(text: str, project: str = "api") -> int:
    report = json.loads(run_cli("capture", "--project", project, input=text.encode()).stdout)
    note_id: int = report["notes"][0]["id"]
    return note_id


@pytest.fixture
def web(home: Path, tmp_path: Path) -> Iterator[WebServer]:
    server = WebServer(home, tmp_path / "serve.log")
    yield server
    log = server.stop()
    assert "Traceback" not in log, log


@pytest.fixture
def signed_in(web: WebServer) -> WebServer:
    web.sign_in()
    return web


def _csrf(page: str) -> str:
    match = re.search(r'name="csrf" value="([\w-]+)"', page)
    assert match is not None, "the page has no CSRF field"
    return match.group(1)


# -- sign-in ------------------------------------------------------------------------------


def test_a_login_code_opens_a_session_once(web: WebServer) -> None:
    url = web.login_url()
    # A link checker or a preview asks with HEAD first: the code stays the person's.
    peek = web.request("HEAD", url[len(web.origin):])
    assert peek.status == 200 and "set-cookie" not in peek.headers
    answer = web.request("GET", url[len(web.origin):])
    assert answer.status == 303 and answer.headers["location"] == "/"
    cookie = answer.headers["set-cookie"]
    assert f"memspool_session_{web.port}=" in cookie
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    again = web.request("GET", url[len(web.origin):])
    assert again.status == 401 and "set-cookie" not in again.headers
    assert "does not work" in again.text
    assert web.request("GET", "/login?code=made-up").status == 401


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_no_page_is_readable_without_the_cookie_or_the_token(web: WebServer) -> None:
    memory = _capture("Pitfall: the secret page shows the pool size of the payments API.")
    for path in ("/", "/ui/memories", f"/ui/memories/{memory}", "/ui/search?q=pool",
                 "/ui/context", "/ui/timeline", "/ui/slices/1",
                 f"/ui/memories/{memory}/forget"):
        answer = web.request("GET", path)
        assert answer.status == 401, path
        assert "pool size" not in answer.text and "memspool open" in answer.text
        stale = web.request("GET", path, headers={"Cookie": f"memspool_session_{web.port}=x"})
        assert stale.status == 401, path
        assert web.request("GET", path, token=True).status in (200, 404), path
    # The stylesheet and script are the same for everyone.
    assert web.request("GET", "/ui/static/app.css").status == 200


def test_the_cookie_opens_the_pages_but_not_the_json_api(signed_in: WebServer) -> None:
    assert signed_in.request("GET", "/", cookie=True).status == 200
    answer = signed_in.request("GET", "/status", cookie=True)
    assert answer.status == 401 and answer.json()["ok"] is False
    # ...and the bearer token keeps working for API clients.
    assert signed_in.request("GET", "/status", token=True).status == 200


def test_a_login_code_needs_the_token(web: WebServer) -> None:
    assert web.request("POST", "/login/codes").status == 401
    answer = web.request("POST", "/login/codes", token=True)
    assert answer.status == 200 and answer.json()["path"].startswith("/login?code=")


def test_sign_out_ends_the_session(signed_in: WebServer) -> None:
    page = signed_in.request("GET", "/", cookie=True).text
    answer = signed_in.post_form("/logout", {"csrf": _csrf(page)}, cookie=True)
    assert answer.status == 303 and "Max-Age=0" in answer.headers["set-cookie"]
    assert signed_in.request("GET", "/", cookie=True).status == 401


def test_login_codes_and_sessions_expire_and_are_bounded() -> None:
    now = [1000.0]
    logins = Logins(8765, clock=lambda: now[0])
    code = logins.new_code()
    now[0] += CODE_SECS + 1
    assert logins.redeem(code) is None
    session = logins.redeem(logins.new_code())
    assert session is not None and logins.session(session.id) == session
    assert logins.redeem("") is None
    now[0] += SESSION_SECS + 1
    assert logins.session(session.id) is None
    codes = [logins.new_code() for _ in range(MAX_CODES + 5)]
    assert logins.redeem(codes[0]) is None and logins.redeem(codes[-1]) is not None


def test_open_says_what_to_do_without_a_server_or_a_token(home: Path) -> None:
    proc = run_cli("open", "--port", "1", "--no-browser", check=False)
    assert proc.returncode == 1 and "no server has run on this home" in proc.stderr.decode()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "api-token").write_text("t" * 43 + "\n")
    (home / "api-token").chmod(0o600)
    proc = run_cli("open", "--port", "1", "--no-browser", check=False)
    assert proc.returncode == 1 and "No memspool server answers on 127.0.0.1:1" in \
        proc.stderr.decode()


def test_serve_open_prints_a_link_that_signs_in(home: Path, tmp_path: Path) -> None:
    server = WebServer(home, tmp_path / "serve.log", "--open")
    try:
        match = re.search(r"(/login\?code=[\w-]+)", server.log.read_text())
        assert match is not None, server.log.read_text()
        assert server.request("GET", match.group(1)).status == 303
    finally:
        server.stop()


# -- what a change needs ----------------------------------------------------------------------


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_change_needs_this_origin_and_the_csrf_token(signed_in: WebServer) -> None:
    memory = _capture("Pitfall: the export job retries forever when the bucket is gone.")
    path = f"/ui/memories/{memory}/pin"
    csrf = _csrf(signed_in.request("GET", f"/ui/memories/{memory}", cookie=True).text)
    for origin, fields in ((None, {"pinned": "1", "csrf": csrf}),
                           ("http://evil.example", {"pinned": "1", "csrf": csrf}),
                           ("null", {"pinned": "1", "csrf": csrf}),
                           ("", {"pinned": "1"}),
                           ("", {"pinned": "1", "csrf": "wrong"})):
        answer = signed_in.post_form(path, fields, origin=origin, cookie=True)
        assert answer.status == 403, (origin, fields, answer.text)
    assert Service().memory_page(memory).pinned is False
    answer = signed_in.post_form(path, {"pinned": "1", "csrf": csrf}, cookie=True)
    assert answer.status == 303 and answer.headers["location"].endswith("note=pinned")
    assert Service().memory_page(memory).pinned is True


def test_a_foreign_origin_is_refused_even_with_the_token(web: WebServer) -> None:
    for method, path in (("GET", "/status"), ("GET", "/"), ("POST", "/capture")):
        answer = web.request(method, path, token=True, headers={"Origin": "http://evil.example"})
        assert answer.status == 403, path
    assert web.request("GET", "/", token=True,
                       headers={"Origin": web.origin}).status == 200


def test_the_host_check_stays_for_pages(signed_in: WebServer) -> None:
    answer = signed_in.request("GET", "/", cookie=True, headers={"Host": "evil.example"})
    assert answer.status == 421 and "evil.example" in answer.text


def test_forms_refuse_what_they_do_not_take(signed_in: WebServer) -> None:
    memory = _capture("Pitfall: the cron job runs twice when the host clock jumps.")
    csrf = _csrf(signed_in.request("GET", f"/ui/memories/{memory}", cookie=True).text)
    edit = f"/ui/memories/{memory}/edit"
    cases = [
        (edit, {"csrf": csrf, "summary": "x", "body": "y", "type": "nonsense"}, "type must be"),
        (edit, {"csrf": csrf, "summary": " ", "body": "y", "type": "pitfall"}, "was empty"),
        (edit, {"csrf": csrf, "summary": "s", "body": "b", "type": "pitfall", "layer": "x"},
         "Unknown field"),
        (f"/ui/memories/{memory}/forget", {"csrf": csrf}, "confirm=yes"),
        (f"/ui/memories/{memory}/pin", {"csrf": csrf, "pinned": "maybe"}, "pinned must be"),
        ("/logout", {"csrf": csrf, "x": "1"}, "this form takes no field but its csrf"),
    ]
    for path, fields, said in cases:
        answer = signed_in.post_form(path, fields, cookie=True)
        assert answer.status == 400 and said in answer.text, (path, answer.text)
    answer = signed_in.request("POST", edit, body=b'{"type": "pitfall"}', cookie=True,
                               headers={"Origin": signed_in.origin,
                                        "Content-Type": "application/json"})
    assert answer.status == 400
    assert signed_in.post_form("/ui/memories/999999/pin", {"csrf": csrf, "pinned": "1"},
                               cookie=True).status == 404


class _EditForm(html.parser.HTMLParser):
    """The edit form's fields as a browser fills them from the page: the summary's
    value, the text area's text (the parser drops one line end after its tag), the
    type selected."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.fields: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        name = values.get("name") or ""
        if tag == "input" and name in ("csrf", "summary"):
            self.fields.setdefault(name, values.get("value") or "")
        elif tag == "textarea" and name == "body":
            self._in = "body"
            self.fields["body"] = ""
        elif tag == "option" and "selected" in values:
            self.fields["type"] = values.get("value") or ""

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            self.fields[self._in] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea" and self._in is not None:
            text = self.fields[self._in]
            # As a browser's parser does, and as it sends a text area: CR LF.
            self.fields[self._in] = text[1:] if text.startswith("\n") else text
            self.fields[self._in] = self.fields[self._in].replace("\n", "\r\n")
            self._in = None


#: Text as memory holds it (no CR: printable makes every line end LF), rich in what a
#: page shows as a stand-in.
_STORED = st.text(st.one_of(st.sampled_from("\u200e\u200f\u202e\u2066\u2028\x1b\x00\t\n"),
                            st.characters(blacklist_characters="\r",
                                          blacklist_categories=("Cs",))))


@given(_STORED, _STORED, _STORED, _STORED)
def test_a_form_field_sent_back_is_the_stored_text_where_it_was_not_changed(
        head: str, old: str, new: str, tail: str) -> None:
    stored = head + old + tail
    sent = visible(head) + new + visible(tail)
    assert as_stored(visible(stored).replace("\n", "\r\n"), stored) == stored
    kept = as_stored(sent.replace("\n", "\r\n"), stored)
    # What was sent is what is saved, as the page shows it; the stored characters stay
    # before the change (and after it, unless the change's own end is ambiguous:
    # test_an_edit_keeps_what_the_form_showed_as_a_stand_in has an example).
    assert visible(kept) == visible(sent) and kept.startswith(head)


def _edit_form(server: WebServer, memory: int) -> dict[str, str]:
    form = _EditForm()
    form.feed(server.request("GET", f"/ui/memories/{memory}", cookie=True).text)
    return form.fields


def test_an_edit_keeps_what_the_form_showed_as_a_stand_in(signed_in: WebServer,
                                                          home: Path) -> None:
    """The form shows a direction mark as a stand-in (U+FFFD); sending the form back as
    it was, or with only its type changed, keeps the stored text exactly, and a change
    in one place keeps the marks before and after it."""
    summary = "\u05e9\u05dc\u05d5\u05dd\u200f deploy note: staging first."
    body = ("Line one \u05d0\u200f.\nLine two with a \u200e mark.\n\tand a tab.\n"
            "Last line \u05d1\u200f.")
    with Service(home) as service:
        memory = service.save(summary, body, type="decision", project="api").id
        assert memory is not None
    path = f"/ui/memories/{memory}/edit"
    form = _edit_form(signed_in, memory)
    assert "\ufffd" in form["summary"] and "\u200f" not in form["body"]  # shown as stand-ins
    answer = signed_in.post_form(path, form, cookie=True)
    assert answer.status == 303 and answer.headers["location"].endswith("note=unchanged")
    with Service(home) as service:
        page = service.memory_page(memory)
    assert (page.memory.summary, page.memory.body, page.history) == (summary, body, [])
    shown = signed_in.request("GET", f"/ui/memories/{memory}", cookie=True).text
    assert "<dt>Corrected</dt><dd>no</dd>" in shown
    assert "<dt>Context block</dt><dd>listed: clearly stated (clarity 1.00" in shown

    answer = signed_in.post_form(path, {**form, "type": "pitfall"}, cookie=True)
    assert answer.headers["location"].endswith("note=edited")
    with Service(home) as service:
        page = service.memory_page(memory)
    assert (page.memory.type, page.memory.summary, page.memory.body) == ("pitfall", summary, body)
    assert [entry.reason for entry in page.history] == ["edited"]
    assert page.edited_at is not None
    shown = signed_in.request("GET", f"/ui/memories/{memory}", cookie=True).text
    assert "later sessions corroborate this text, never rewrite it" in shown
    assert "<dt>Context block</dt><dd>listed: corrected by a person</dd>" in shown

    # One word changed in the middle: every mark outside the change is kept.
    form = _edit_form(signed_in, memory)
    changed = form["body"].replace("a tab", "one tab")
    assert signed_in.post_form(path, {**form, "body": changed}, cookie=True).status == 303
    with Service(home) as service:
        assert service.memory_page(memory).memory.body == body.replace("a tab", "one tab")


def test_an_over_long_summary_is_refused_beside_the_form(signed_in: WebServer,
                                                         home: Path) -> None:
    """The summary holds what the context block shows of a memory, SUMMARY_CHARS: the
    form says so (maxlength), and a longer one is refused with that number, never cut,
    the form shown again with what was sent."""
    memory = _capture("Pitfall: the cron job runs twice when the host clock jumps.")
    form = _edit_form(signed_in, memory)
    assert 'maxlength="300"' in signed_in.request("GET", f"/ui/memories/{memory}",
                                                  cookie=True).text
    long = "Summary " + "x" * 4992
    answer = signed_in.post_form(f"/ui/memories/{memory}/edit",
                                 {**form, "summary": long, "body": "A new text."}, cookie=True)
    assert answer.status == 400, answer.text[:500]
    assert "The summary is 5,000 characters; a summary holds at most 300" in answer.text
    again = _EditForm()
    again.feed(answer.text)
    assert again.fields["summary"] == long and again.fields["body"] == "A new text."
    with Service(home) as service:
        page = service.memory_page(memory)
    assert page.memory.summary.startswith("Pitfall: the cron job") and not page.history
    fits = "Summary " + "x" * 292
    answer = signed_in.post_form(f"/ui/memories/{memory}/edit", {**form, "summary": fits},
                                 cookie=True)
    assert answer.status == 303
    with Service(home) as service:
        assert service.memory_page(memory).memory.summary == fits


def test_a_form_field_or_a_parameter_given_twice_is_refused(signed_in: WebServer) -> None:
    memory = _capture("Pitfall: the cron job runs twice when the host clock jumps.")
    csrf = _csrf(signed_in.request("GET", f"/ui/memories/{memory}", cookie=True).text)
    answer = signed_in.request(
        "POST", f"/ui/memories/{memory}/pin", body=f"csrf={csrf}&pinned=0&pinned=1".encode(),
        cookie=True, headers={"Origin": signed_in.origin,
                              "Content-Type": "application/x-www-form-urlencoded"})
    assert answer.status == 400 and "The field &#39;pinned&#39; is given twice" in answer.text
    assert Service().memory_page(memory).pinned is False
    answer = signed_in.request("GET", "/ui/search?q=cron&limit=1&limit=5", cookie=True)
    assert answer.status == 400 and "The parameter &#39;limit&#39; is given twice" in answer.text


# -- the pages ----------------------------------------------------------------------------


class _Links(html.parser.HTMLParser):
    """Every address a page would make its browser load or follow."""

    ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "srcset", "poster", "data",
                            "background", "cite", "manifest", "ping"})

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.labels: set[str] = set()
        self.fields: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = dict(attrs)
        self.found.extend(v or "" for k, v in attrs if k in self.ATTRIBUTES)
        if tag == "label" and values.get("for"):
            self.labels.add(values["for"] or "")
        if tag in ("input", "select", "textarea") and values.get("type") != "hidden":
            self.fields.append(values.get("id") or "")


def _pages(server: WebServer, memory: int) -> dict[str, str]:
    paths = ["/", "/ui/memories", "/ui/memories?project=api&type=pitfall&q=banner",
             f"/ui/memories/{memory}", f"/ui/memories/{memory}/forget",
             "/ui/search?q=banner+admin", "/ui/search?q=banner&fragment=1",
             "/ui/context?project=api", "/ui/timeline?project=api", "/login",
             "/ui/memories/424242"]
    pages = {}
    for path in paths:
        answer = server.request("GET", path, cookie=True)
        assert answer.status in (200, 401, 404), (path, answer.status)
        assert answer.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in answer.headers["content-security-policy"]
        pages[path] = answer.text
    return pages


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_every_page_shows_memory_text_as_text(signed_in: WebServer) -> None:
    memory = _capture(HOSTILE)
    pages = _pages(signed_in, memory)
    for path in ("/ui/memories", f"/ui/memories/{memory}", "/ui/search?q=banner+admin",
                 "/ui/context?project=api", "/ui/timeline?project=api"):
        page = pages[path]
        # The context block is what an agent reads: its tags are made inert there
        # (memspool.base.quoting) before the page escapes what is left.
        assert "&lt;script&gt;" in page or "\u2039script\u203a" in page, path
    for path, page in pages.items():
        assert "<script>alert" not in page and "<img src=x" not in page, path
        assert "onerror=alert(2)>" not in page, path
        assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]",
                             page), path
    # Control characters never reach the store (memspool.untrusted.printable), escape
    # sequences go whole; a page would show any that did as visible symbols.
    shown = pages[f"/ui/memories/{memory}"]
    assert "print red, " in shown and "[31m" not in shown


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_no_page_asks_for_anything_from_another_host(signed_in: WebServer) -> None:
    memory = _capture("Pitfall: see https://example.com/outage for the pool outage notes.")
    for path, page in _pages(signed_in, memory).items():
        links = _Links()
        links.feed(page)
        external = [a for a in links.found if re.match(r"\s*(?:[a-z][\w+.-]*:|//)", a, re.I)]
        assert not external, (path, external)
        assert "<style" not in page and " style=" not in page, path
        assert all(src.startswith("/ui/static/") for src in re.findall(r'src="([^"]*)"', page))
    static = REPO / "src" / "memspool" / "http" / "web" / "static"
    for asset in static.iterdir():
        text = asset.read_text()
        assert not re.search(r"https?:|//[a-z]|@import|url\(", text, re.I), asset.name


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_every_field_has_a_label_and_pages_say_their_language(signed_in: WebServer) -> None:
    memory = _capture("Pitfall: the worker pool starves when the queue backs up.")
    for path, page in _pages(signed_in, memory).items():
        links = _Links()
        links.feed(page)
        unlabelled = [f for f in links.fields if f not in links.labels]
        assert not unlabelled, (path, unlabelled)
        if "fragment=1" in path:
            continue  # the search results alone, for the page's script
        assert page.startswith("<!doctype html>\n<html lang=\"en\">"), path
        assert 'name="viewport"' in page
        assert links.tags.count("h1") == 1, path


def test_the_list_filters_and_pages(signed_in: WebServer, home: Path) -> None:
    with Service(home) as service:
        for i in range(60):
            service.save(f"Pool setting {i}", f"The pool keeps {i} idle connections.",
                         type="decision", key=f"pool-{i}", project="api")
        service.save("Web fact", "The web tier caches pages for 30 s.", project="web")
    first = signed_in.request("GET", "/ui/memories?project=api", cookie=True).text
    assert first.count('class="card"') == 50 and 'rel="next"' in first
    assert first.index("Pool setting 59") < first.index("Pool setting 58")
    second = signed_in.request("GET", "/ui/memories?project=api&page=2", cookie=True).text
    assert second.count('class="card"') == 10 and 'rel="prev"' in second
    filtered = signed_in.request("GET", "/ui/memories?q=caches+pages", cookie=True).text
    assert filtered.count('class="card"') == 1 and "Web fact" in filtered
    none = signed_in.request("GET", "/ui/memories?q=%3F%3F", cookie=True).text
    assert 'class="card"' not in none
    bad = signed_in.request("GET", "/ui/memories?layer=gone", cookie=True)
    assert bad.status == 400 and "layer must be one of" in bad.text
    for query in (f"page={'1' * 5000}", f"forgot={'2' * 5000}"):  # past what int() reads
        huge = signed_in.request("GET", f"/ui/memories?{query}", cookie=True)
        assert huge.status == 400 and "must be a whole number" in huge.text, huge.text[:300]
    # A refused value is quoted, not sent back whole; a time is plain seconds.
    long = signed_in.request("GET", f"/ui/search?q=x&all={'a' * 100_000}", cookie=True)
    assert long.status == 400 and "(100000 characters)" in long.text and len(long.text) < 20_000
    many = "&".join(f"x{n}=1" for n in range(2000))
    listed = signed_in.request("GET", f"/ui/memories?{many}", cookie=True)
    assert listed.status == 400 and "(2000 in all)" in listed.text and len(listed.text) < 20_000
    for before in ("nan", "-inf", "\uff11\uff12", "1e9", "-5"):
        timeline = signed_in.request("GET", f"/ui/timeline?project=api&before={quote(before)}",
                                     cookie=True)
        assert timeline.status == 400 and "before must be a time in seconds" in timeline.text
    assert signed_in.request("GET", "/ui/timeline?project=api&before=1796025600.5",
                             cookie=True).status == 200
    unknown = signed_in.request("GET", "/ui/search?q=pool&project=nosuch", cookie=True).text
    assert "No memory matches" in unknown and "No project is known as &#39;nosuch&#39;" in unknown
    block = signed_in.request("GET", "/ui/context?project=nosuch", cookie=True).text
    assert "No project is known as &#39;nosuch&#39;" in block and "gets no context" not in block
    # The list says a memory is gone only when it is: the number in the URL is anyone's.
    kept = _capture("Pitfall: the nightly export skips tenants whose bucket name has a dot.")
    listed = signed_in.request("GET", f"/ui/memories?forgot={kept}", cookie=True).text
    assert "is gone from memory" not in listed
    gone = signed_in.request("GET", f"/ui/memories?forgot={kept + 1000}", cookie=True).text
    assert f"Memory #{kept + 1000} is gone from memory" in gone


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_search_gives_the_cli_results_with_matched_words_marked(signed_in: WebServer) -> None:
    _capture("Pitfall: requests has no default timeout, so a hung worker blocks forever.")
    _capture("Decision: retries use exponential backoff with a jittered timeout.")
    cli = json.loads(run_cli("search", "timeouts", "--json").stdout)["results"]
    page = signed_in.request("GET", "/ui/search?q=timeouts", cookie=True).text
    shown = [int(i) for i in re.findall(r'<a href="/ui/memories/(\d+)"><span class="id">', page)]
    assert shown == [hit["id"] for hit in cli] and len(shown) == 2
    assert "<mark>timeout</mark>" in page


def test_the_context_page_shows_the_block_as_injected(signed_in: WebServer, home: Path,
                                                      tmp_path: Path) -> None:
    folder = tmp_path / "api"
    folder.mkdir()
    # The project of a folder outside git is the folder: capture into it by its path.
    _capture("Pitfall: the deploy script <b>skips</b> migrations & needs --migrate.",
             project=str(folder))
    hook = REPO / "hooks" / "context.py"
    proc = subprocess.run([sys.executable, "-I", "-S", str(hook), "--home", str(home)],
                          input=json.dumps({"cwd": str(tmp_path / "api")}).encode(),
                          capture_output=True, timeout=30, check=True)
    injected = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    page = signed_in.request("GET", f"/ui/context?project={quote(str(folder), safe='')}",
                             cookie=True).text
    shown = re.search(r'<pre class="block" id="context-text" tabindex="0">(.*?)</pre>', page,
                      re.S)
    assert shown is not None
    assert html.unescape(shown.group(1)) == injected


# -- the Service behind the pages --------------------------------------------------------------


def test_edit_keeps_the_old_text_as_history_and_redacts(home: Path) -> None:
    memory = _capture("Pitfall: the cache key omits the tenant, so tenants see each other.")
    with Service(home) as service:
        result = service.edit(memory, summary="Pitfall: the cache key omits the tenant id.",
                              body="The cache key omits the tenant id; token "
                                   "ghp_abcdefghijklmnopqrstuvwxyz0123456789 leaked.",
                              type="root-cause")
        assert result.as_dict() == {"ok": True, "id": memory, "changed": True}
        page = service.memory_page(memory)
        assert page.memory.type == "root-cause" and "ghp_" not in page.memory.body
        assert "[REDACTED" in page.memory.body
        (entry,) = page.history
        assert entry.reason == "edited" and "see each other" in entry.body
        again = service.edit(memory, summary=page.memory.summary, body=page.memory.body,
                             type="root-cause")
        assert again.changed is False and len(service.memory_page(memory).history) == 1
        assert service.search("tenant id").results[0].id == memory


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_pinned_memory_is_never_archived_by_decay(home: Path) -> None:
    kept = _capture("Pitfall: the payments sandbox resets every Sunday at midnight.")
    other = _capture("Decision: we deploy the billing service from the release branch.")
    with Service(home) as service:
        service.pin(kept)
        far = time.time() + 10 * 365 * 86400
        from memspool.archivist import maintain
        maintain(service.conn, service.config)  # schedules decay
        report = maintain(service.conn, service.config, now=far)
        assert report.archived == 1
        assert service.memory_page(kept).memory.layer in ("buffer", "canonical")
        assert service.memory_page(other).memory.layer == "archived"
        # Pinning an archived memory brings it back, as canonical.
        service.pin(other)
        assert service.memory_page(other).memory.layer == "canonical"
        service.pin(kept, False)
        assert maintain(service.conn, service.config, now=far * 2).archived == 1
        assert service.memory_page(kept).memory.layer == "archived"


def test_the_timeline_groups_sessions_by_day(home: Path) -> None:
    with Service(home) as service:
        first = service.capture("Pitfall: the importer drops rows with a BOM.", project="api",
                                session="s-one")
        service.capture("Decision: the importer strips the BOM first.", project="api",
                        session="s-two")
        service.capture("Pitfall: the exporter writes CRLF line ends on Windows hosts.",
                        project="api", session="s-two")
        found = service.timeline("api")
        (day,) = found.days
        sessions = {s["session"]: s for s in day["sessions"]}
        assert set(sessions) == {"s-one", "s-two"}
        assert [m["id"] for m in sessions["s-one"]["memories"]] == [first.notes[0].id]
        assert len(sessions["s-two"]["memories"]) == 2
        assert found.next_before is None
        paged = service.timeline("api", limit=1)
        assert paged.next_before is not None
        assert service.timeline("nothing-here").days == []


def test_marking_and_cleaning_are_escaped() -> None:
    marked = highlight("<b>Timeouts</b> & pool_size in src/db/pool.py", "timeout pool")
    assert str(marked) == ("&lt;b&gt;<mark>Timeouts</mark>&lt;/b&gt; &amp; "
                           "<mark>pool_size</mark> in <mark>src/db/pool.py</mark>")
    assert str(highlight("<i>x</i>", "")) == "&lt;i&gt;x&lt;/i&gt;"
    assert visible("a\x00b\x1bc\x7fd\u202ee\ud800f\tg\nh") == (
        "a\u2400b\u241bc\u2421d\ufffde\ufffdf\tg\nh")
    assert visible(3) == 3


def test_a_store_without_memories_has_pages_too(web: WebServer, home: Path) -> None:
    for path in ("/", "/ui/memories", "/ui/search", "/ui/search?q=anything", "/ui/context",
                 "/ui/timeline"):
        answer = web.request("GET", path, token=True)
        assert answer.status == 200, (path, answer.text)


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_the_overview_counts_projects_and_sessions(signed_in: WebServer, home: Path) -> None:
    _capture("Pitfall: the importer drops rows with a BOM.", project="api")
    _capture("Decision: the web tier caches pages for 30 s.", project="web")
    page = signed_in.request("GET", "/", cookie=True).text
    assert re.search(r'href="/ui/memories\?project=api"[^>]*>api</a>', page)
    assert re.search(r'href="/ui/memories\?project=web"[^>]*>web</a>', page)
    assert "Last maintenance pass" in page and "Never" in page
    # Captured by a person, both are clear: both are in their project's block.
    assert "<dt>In context blocks</dt><dd>2 of the 2 current</dd>" in page
