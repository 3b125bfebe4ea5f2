"""Take the memory browser's screenshots in docs/ (docs/web.md and README show them).

    .venv-test/bin/python scripts/web_screenshots.py [--out docs]

Builds a store in a new temporary home through the real hooks and drainer
(the browser tests' sessions, tests/web_support.py), plus a few notes of a
second project and one edit, starts `memspool serve` on a free port, signs
Debian's headless Chromium in with `memspool open`'s link, and saves each
main page as a PNG: desktop width, and the memory page at a phone's width.
Needs /usr/bin/chromium and /usr/bin/chromedriver, and the test extra.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

NOTES = (
    "Pitfall: requests has no default timeout, so a hung upstream blocks a worker forever; "
    "pass timeout=(3, 30) everywhere.",
    "Decision: API pagination is cursor based (opaque base64 cursors), never offset based.",
    "Pattern: every migration ships with a down step, and CI runs up, down, up.",
)
EDIT = ("Root cause: refund webhook retries were not idempotent, so the handler inserted "
        "rows twice; it now dedupes on the Stripe event id before inserting.")


def _environment(root: Path) -> None:
    """Everything memspool and Claude Code would touch, inside ``root``."""
    (root / "claude" / "projects").mkdir(parents=True)
    (root / "user").mkdir()
    os.environ.update({
        "HOME": str(root / "user"), "MEMSPOOL_HOME": str(root / "home"),
        "CLAUDE_CONFIG_DIR": str(root / "claude"),
        "MEMSPOOL_TRANSCRIPT_ROOTS": str(root / "claude" / "projects"),
        "MEMSPOOL_IDLE_GRACE_SECS": "0.3", "XDG_DATA_HOME": str(root / "user" / "data"),
        "XDG_CONFIG_HOME": str(root / "user" / "config"), "SE_OFFLINE": "true"})
    for name in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY"):
        os.environ.pop(name, None)


def _shoot(driver: object, url: str, path: Path, width: int) -> None:
    driver.set_window_size(width, 900)  # type: ignore[attr-defined]
    driver.get(url)  # type: ignore[attr-defined]
    height = driver.execute_script(  # type: ignore[attr-defined]
        "return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(int(height) + 80, 2400))  # type: ignore[attr-defined]
    driver.save_screenshot(str(path))  # type: ignore[attr-defined]
    print(f"wrote {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    out = args.out.resolve()
    with tempfile.TemporaryDirectory(prefix="memspool-shots-") as folder:
        root = Path(folder)
        _environment(root)
        from conftest import run_cli
        from selenium import webdriver
        from web_support import WebServer, build_store

        build_store(root / "work", root / "claude" / "projects")
        for text in NOTES:
            run_cli("capture", "--project", "api", "--session", "manual", input=text.encode())
        refunds = json.loads(run_cli("search", "refunds twice", "--json").stdout)["results"][0]
        from memspool.service import Service
        with Service() as service:
            service.edit(refunds["id"], summary=refunds["summary"], body=EDIT,
                         type=refunds["type"])
        server = WebServer(root / "home", root / "serve.log")
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in ("--headless", "--no-sandbox", "--disable-gpu",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--no-first-run", "--hide-scrollbars",
                     "--force-prefers-reduced-motion", f"--user-data-dir={root / 'profile'}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(
            executable_path="/usr/bin/chromedriver"))
        try:
            driver.get(server.login_url())
            origin = server.origin
            pages = {
                "web-overview.png": "/",
                "web-memories.png": "/ui/memories?project=shop",
                "web-memory.png": f"/ui/memories/{refunds['id']}",
                "web-search.png": "/ui/search?q=staging+port&all=1",
                "web-context.png": "/ui/context?project=shop",
                "web-timeline.png": "/ui/timeline?project=shop",
            }
            for name, path in pages.items():
                _shoot(driver, origin + path, out / name, 1200)
            _shoot(driver, f"{origin}/ui/memories/{refunds['id']}", out / "web-phone.png", 390)
        finally:
            driver.quit()
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
