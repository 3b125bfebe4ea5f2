"""The memory browser in a real browser: Debian's headless Chromium, driven through its
chromedriver by Selenium, against a real `memspool serve` on 127.0.0.1 whose store was
built through the real hooks and drainer.

Skipped, saying so, where Chromium or its driver is missing (`apt-get install -y
chromium chromium-driver`; .ci/run installs them). No browser or driver is ever
downloaded: Selenium is given both paths, and runs offline.
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import WAIT_SECS, run_cli
from web_support import WebServer, build_store

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
MISSING = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]

pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=(
        f"the browser tests need Debian's Chromium and its driver ({', '.join(MISSING)} "
        f"missing): apt-get install -y chromium chromium-driver")),
    pytest.mark.timeout(240),
    # Slow: a Chromium and a server per test.
    pytest.mark.slow,
]

if not MISSING:
    webdriver = pytest.importorskip("selenium.webdriver", reason=(
        "the browser tests need selenium, from the test extra: pip install -e '.[test]'"))
    from selenium.common.exceptions import (
        NoAlertPresentException,
        StaleElementReferenceException,
        WebDriverException,
    )
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

#: Chromium's flags: headless, and no call home of any kind (the machine has no
#: network; a page must not need one either).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--disable-dev-shm-usage")


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    # Selenium Manager must not look for a browser or driver online.
    monkeypatch.setenv("SE_OFFLINE", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}",
                 "--window-size=1280,900"):
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path=str(CHROMEDRIVER),
                                      log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(WAIT_SECS)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)


@pytest.fixture
def web(home: Path, tmp_path: Path, projects: Path) -> Iterator[WebServer]:
    build_store(tmp_path / "work", projects)
    server = WebServer(home, tmp_path / "serve.log")
    yield server
    log = server.stop()
    assert "Traceback" not in log, log


#: Chromium's word for an element read while its page is being replaced (a form
#: posted, the next page loading): no answer yet, not a failure.
_PAGE_REPLACED = "does not belong to the document"


def _until(driver: Any, what: str, condition: Callable[[Any], Any]) -> Any:
    """Wait for ``condition(driver)`` (at most WAIT_SECS), failing with ``what``."""
    def check(d: Any) -> Any:
        try:
            return condition(d)
        except WebDriverException as exc:
            if _PAGE_REPLACED in str(exc):
                return False
            raise

    # A page the script is updating may swap an element out under the check, and a
    # page being left may lose it between finding and reading it: look again.
    return WebDriverWait(driver, WAIT_SECS, poll_frequency=0.1,
                         ignored_exceptions=(StaleElementReferenceException,)).until(
        check, message=f"waited {WAIT_SECS:g} s for: {what}")


def _heading(driver: Any) -> str:
    text: str = driver.find_element(By.TAG_NAME, "h1").text
    return text


def _memory_ids(driver: Any) -> list[int]:
    cards = driver.find_elements(By.CSS_SELECTOR, "#results .card-title a")
    return [int(a.get_attribute("href").rsplit("/", 1)[1]) for a in cards]


def _search(driver: Any, web: WebServer, query: str) -> list[int]:
    """Type ``query`` into the search page: its script fetches the results as one
    types (the form's plain GET, without a script, is tested in test_web.py)."""
    driver.get(f"{web.origin}/ui/search")
    driver.find_element(By.ID, "q").send_keys(query)
    _until(driver, f"the results for {query!r}",
           lambda d: f"“{query}”" in d.find_element(By.ID, "results").text)
    _until(driver, "the address to follow the query", lambda d: "q=" in d.current_url)
    ids: list[int] = _until(driver, "the results' links", lambda d: _memory_ids(d) or [0])
    return [i for i in ids if i]


def _no_alert(driver: Any) -> None:
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - reading it is the check


def test_sign_in_search_read_edit_and_forget(browser: Any, web: WebServer) -> None:
    # Sign in with the one-time link `memspool open` prints.
    browser.get(web.login_url())
    _until(browser, "the overview after signing in", lambda d: _heading(d) == "Overview")
    cookies = {c["name"]: c for c in browser.get_cookies()}
    cookie = cookies[f"memspool_session_{web.port}"]
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert browser.execute_script("return document.cookie") == ""  # HttpOnly: no script sees it
    overview = browser.find_element(By.TAG_NAME, "main").text
    assert "shop" in overview and "Last sessions captured" in overview

    # Find a memory by search: the refunds root cause, which two sessions agreed on.
    found = _search(browser, web, "refunds twice")
    cli = json.loads(run_cli("search", "refunds twice", "--json").stdout)["results"]
    assert found == [hit["id"] for hit in cli] and found
    marks = [m.text.lower() for m in browser.find_elements(By.CSS_SELECTOR, "#results mark")]
    assert "refund" in marks and "twice" in marks

    # Open it: its history and provenance (two sessions, each save with its slice).
    browser.find_element(By.CSS_SELECTOR, "#results .card-title a").click()
    _until(browser, "the memory's page", lambda d: d.current_url.endswith(f"/{found[0]}"))
    provenance = browser.find_element(By.ID, "provenance").find_element(By.XPATH, "..")
    rows = provenance.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) == 2 and "canonical" in browser.find_element(By.CLASS_NAME, "meta").text
    slice_link = provenance.find_element(By.PARTIAL_LINK_TEXT, "slice")
    history = browser.find_element(By.ID, "history").find_element(By.XPATH, "..").text
    assert "History" in history

    # The slice's redacted text is one click away.
    slice_link.click()
    _until(browser, "the slice page", lambda d: _heading(d).startswith("Slice "))
    assert "refund" in browser.find_element(By.CSS_SELECTOR, "pre.block").text.lower()
    browser.back()
    _until(browser, "the memory's page again", lambda d: d.find_elements(By.ID, "edit-body"))

    # Edit it: the new text shows, the old one is in the history, reason "edited".
    body = browser.find_element(By.ID, "edit-body")
    body.clear()
    body.send_keys("Root cause: refund webhook retries were not idempotent; the handler now "
                   "dedupes on the Stripe event id (edited in the browser).")
    browser.find_element(By.CSS_SELECTOR, "form.edit button[type=submit]").click()
    _until(browser, "the edit's confirmation", lambda d: "Saved." in d.find_element(
        By.CSS_SELECTOR, "p.note").text)
    assert "edited in the browser" in browser.find_element(By.ID, "memory-text").text
    history = browser.find_element(By.CSS_SELECTOR, "ol.history").text
    assert "edited" in history and "inserted rows twice" in history
    shown = json.loads(run_cli("memories", "show", str(found[0]), "--json").stdout)
    assert shown["history"][-1]["reason"] == "edited"

    # Forget it, after the confirmation page: gone from search and the context block.
    context_before = _context_text(browser, web)
    assert f"#{found[0]} " in context_before
    browser.get(f"{web.origin}/ui/memories/{found[0]}")
    browser.find_element(By.LINK_TEXT, "Forget…").click()
    _until(browser, "the confirmation page", lambda d: _heading(d).startswith("Forget memory"))
    browser.find_element(By.ID, "confirm-forget").click()
    _until(browser, "the list after forgetting", lambda d: "is gone from memory" in d.find_element(
        By.TAG_NAME, "main").text)
    assert found[0] not in _search(browser, web, "refunds twice")
    assert f"#{found[0]} " not in _context_text(browser, web)
    browser.get(f"{web.origin}/ui/memories/{found[0]}")
    assert _heading(browser) == "Not found"


def _context_text(driver: Any, web: WebServer) -> str:
    driver.get(f"{web.origin}/ui/context?project=shop")
    text: str = driver.find_element(By.ID, "context-text").text
    return text


def test_a_form_sent_as_shown_keeps_the_direction_marks(browser: Any, web: WebServer) -> None:
    """Chromium sends the edit form back as it fills it (stand-ins, CR LF line ends):
    saved as it is, or with only its type changed, the text is the stored text."""
    from memspool.service import Service

    summary = "\u05e9\u05dc\u05d5\u05dd\u200f deploy note: staging first."
    body = "Line one \u05d0\u200f.\nLine two with a \u200e mark.\n\nLast line \u05d1\u200f."
    with Service(web.home) as service:
        memory = service.save(summary, body, type="decision", project="shop").id
    browser.get(web.login_url())
    _until(browser, "the overview after signing in", lambda d: _heading(d) == "Overview")
    browser.get(f"{web.origin}/ui/memories/{memory}")
    browser.find_element(By.CSS_SELECTOR, "form.edit button[type=submit]").click()
    _until(browser, "the page saying nothing changed", lambda d: "Nothing changed" in
           d.find_element(By.CSS_SELECTOR, "p.note").text)
    browser.find_element(By.CSS_SELECTOR, "#edit-type option[value=pitfall]").click()
    browser.find_element(By.CSS_SELECTOR, "form.edit button[type=submit]").click()
    _until(browser, "the edit's confirmation", lambda d: "Saved." in d.find_element(
        By.CSS_SELECTOR, "p.note").text)
    with Service(web.home, readonly=True) as service:
        page = service.memory_page(memory)
    assert (page.memory.type, page.memory.summary, page.memory.body) == ("pitfall", summary, body)
    assert [entry.reason for entry in page.history] == ["edited"]


def test_refused_without_the_cookie_or_from_another_origin(browser: Any, web: WebServer) -> None:
    # No cookie: a page says how to sign in, and shows no memory.
    browser.get(f"{web.origin}/ui/memories?project=shop")
    assert _heading(browser) == "Sign in"
    assert "refund" not in browser.page_source.lower()

    browser.get(web.login_url())
    _until(browser, "the overview after signing in", lambda d: _heading(d) == "Overview")
    memory = json.loads(run_cli("search", "staging port", "--json").stdout)["results"][0]["id"]

    # A page of another origin (another port of this host: the same site, so even
    # SameSite=Strict lets the cookie go along) posts to the pin form: refused by Origin.
    attacker = _serve_page(
        f'<!doctype html><title>other</title><form method="post" '
        f'action="{web.origin}/ui/memories/{memory}/pin"><input name="pinned" value="1">'
        f'<button id="go">go</button></form>')
    try:
        browser.get(attacker.url)
        browser.find_element(By.ID, "go").click()
        _until(browser, "the refusal", lambda d: _heading(d) == "Refused")
        assert "another site" in browser.find_element(By.CSS_SELECTOR, "p.message").text
    finally:
        attacker.close()
    shown = json.loads(run_cli("memories", "show", str(memory), "--json").stdout)
    from memspool.service import Service
    with Service(web.home, readonly=True) as service:
        assert service.memory_page(memory).pinned is False
    assert shown["id"] == memory

    # The memory that quotes HTML and a script shows it as text, and runs nothing.
    hostile = json.loads(run_cli("search", "release banner", "--json").stdout)["results"][0]
    browser.get(f"{web.origin}/ui/memories/{hostile['id']}")
    _no_alert(browser)
    assert "<script>alert('memspool')</script>" in browser.find_element(
        By.ID, "memory-text").text
    _search(browser, web, "release banner")
    _no_alert(browser)


def test_keyboard_and_a_phone_width(browser: Any, web: WebServer) -> None:
    browser.get(web.login_url())
    _until(browser, "the overview after signing in", lambda d: _heading(d) == "Overview")
    # The first Tab reaches the skip link, and Enter moves focus to the content.
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    active = browser.switch_to.active_element
    assert active.text == "Skip to content"
    active.send_keys(Keys.ENTER)
    _until(browser, "focus on the main content",
           lambda d: d.switch_to.active_element.get_attribute("id") == "main")
    # At a phone's width (390 CSS pixels) no page scrolls sideways.
    browser.set_window_size(390, 844)
    memory = json.loads(run_cli("search", "nightly export", "--json").stdout)["results"][0]["id"]
    for path in ("/", "/ui/memories?project=shop", f"/ui/memories/{memory}",
                 "/ui/search?q=staging", "/ui/context?project=shop",
                 "/ui/timeline?project=shop"):
        browser.get(f"{web.origin}{path}")
        inner = browser.execute_script("return window.innerWidth")
        wide = browser.execute_script("return document.documentElement.scrollWidth")
        assert wide <= inner, (path, wide, inner)


class _Page:
    def __init__(self, server: http.server.ThreadingHTTPServer) -> None:
        self.server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}/"
        self.thread = threading.Thread(target=server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=WAIT_SECS)


def _serve_page(markup: str) -> _Page:
    """A page of another origin, served on another port of 127.0.0.1."""
    body = markup.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return _Page(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler))
