"""``memspool serve``: the local HTTP API and memory browser; ``memspool open``: sign in."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Final

import orjson

from memspool.base.errors import MemspoolError
from memspool.cli._common import Subparsers, add_home, command
from memspool.http import DEFAULT_HOST, DEFAULT_MAX_BODY, DEFAULT_PORT, TOKEN_NAME
from memspool.http.limits import is_loopback
from memspool.untrusted import whole_number

DOC = f"""Serve memspool over a local HTTP API (JSON) and a memory browser, until interrupted.

Listens on {DEFAULT_HOST}:{DEFAULT_PORT} unless told otherwise. Every route but
GET /health needs the bearer token kept in HOME/{TOKEN_NAME} (made at the
first start). Requests whose Host header is not a loopback name are refused,
so a web page cannot reach the API through DNS rebinding. GET /openapi.json
describes the routes; docs/http.md has examples.

The memory browser is at / : overview, memories, search, the context block,
timeline, and corrections (edit, pin, forget). --open prints a one-time
sign-in link and opens it in a browser where there is one; `memspool open`
does the same for a server already running. docs/web.md says more.

The token's file is in the memspool home (MEMSPOOL_HOME, else the default
folder `memspool status` names); the example reads the default one.

Example:
    memspool serve --open
    curl -H "Authorization: Bearer $(cat ~/.local/share/memspool/{TOKEN_NAME})" \\
        "http://127.0.0.1:8765/search?q=timeout"
"""

OPEN_DOC = f"""Sign a browser in to a running `memspool serve`: print a one-time link, and open it.

Asks the server on --host:--port (default {DEFAULT_HOST}:{DEFAULT_PORT}) for a
sign-in code with this home's API token, prints the link (it works once,
within 2 minutes) and opens it in your browser where there is one. The
browser then keeps a session cookie for 12 hours.

Example:
    memspool open
    memspool open --port 9000 --no-browser
"""

#: How long `memspool open` waits for the server's answer.
ASK_TIMEOUT_SECS: Final = 10.0
#: How long `serve --open` waits for its own port to listen before opening a browser.
LISTEN_WAIT_SECS: Final = 15.0


def _port(value: str) -> int:
    port = whole_number(value)
    if port is None or not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535, got {value!r}")
    return port


def _bytes(value: str) -> int:
    size = whole_number(value)
    if size is None or size < 1:
        raise argparse.ArgumentTypeError(f"must be a number of bytes of at least 1, "
                                         f"got {value!r}")
    return size


def _origin(host: str, port: int) -> str:
    # A bound "any address" is reached through loopback.
    if host in ("0.0.0.0", "::"):  # noqa: S104 - naming the address, not binding it
        host = DEFAULT_HOST
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def can_open_browser() -> bool:
    """Whether a graphical browser can be started here: on a terminal without a
    display, Python's webbrowser falls back to text browsers that take the
    terminal over, so the link is only printed."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _open_browser(url: str) -> bool:
    import webbrowser

    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


def _open_when_listening(host: str, port: int, url: str) -> None:
    deadline = time.monotonic() + LISTEN_WAIT_SECS
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
            _open_browser(url)
            return
        time.sleep(0.1)


def _serve(args: argparse.Namespace) -> int:
    # Imported here: Starlette and uvicorn load only when a server starts.
    from memspool.http.app import create_app, listen, run

    # Bound first: a port in use is said before anything claims to be serving.
    sock = listen(args.host, args.port)
    app = create_app(args.home, host=args.host, port=args.port, max_body=args.max_body)
    if app.state.token_replaced:
        print(f"memspool: warning: {app.state.token_replaced}", file=sys.stderr)
    if not is_loopback(args.host):
        print(f"memspool: warning: serving on {args.host}, not only this machine: anyone who "
              f"can reach it and holds the token can read and change your memory. Prefer "
              f"the default, {DEFAULT_HOST}.", file=sys.stderr)
    origin = _origin(args.host, args.port)
    print(f"memspool: serving {origin} (token in {app.state.home / TOKEN_NAME}); Ctrl-C "
          f"stops it", file=sys.stderr)
    if args.open:
        url = f"{origin}/login?code={app.state.logins.new_code()}"
        print(f"memspool: sign in to the memory browser (once, within 2 minutes): {url}",
              file=sys.stderr, flush=True)
        if can_open_browser() and not args.no_browser:
            threading.Thread(target=_open_when_listening, args=(args.host, args.port, url),
                             daemon=True).start()
    run(app, args.host, args.port, sock)
    return 0


def _ask_for_code(host: str, port: int, token: str) -> dict[str, Any]:
    import http.client  # here: every other command would pay for loading it

    where = f"{_origin(host, port)[len('http://'):]}"
    conn = http.client.HTTPConnection(host, port, timeout=ASK_TIMEOUT_SECS)
    try:
        conn.request("POST", "/login/codes", headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        status, raw = response.status, response.read()
    except OSError:
        raise MemspoolError(f"No memspool server answers on {where}; start one with "
                            f"`memspool serve --open` (it signs you in too).") from None
    finally:
        conn.close()
    if status == 401:
        raise MemspoolError(f"The server on {where} does not take this home's token: it serves "
                            f"another home. Pass that --home, or the --port of yours.")
    try:
        answer: dict[str, Any] = orjson.loads(raw)
    except orjson.JSONDecodeError:
        answer = {}
    if status != 200 or not isinstance(answer.get("path"), str):
        raise MemspoolError(f"The server on {where} gave no sign-in code (HTTP {status}); is "
                            f"it memspool serve, of this version?")
    return answer


def _open(args: argparse.Namespace) -> int:
    from memspool.config import load_config
    from memspool.http.token import read_token

    home: Path | None = getattr(args, "home", None)
    token = read_token(load_config(home).home)
    answer = _ask_for_code(args.host, args.port, token)
    url = f"{_origin(args.host, args.port)}{answer['path']}"
    print(url)
    opened = can_open_browser() and not args.no_browser and _open_browser(url)
    print("memspool: opened in your browser" if opened else
          "memspool: open that link in your browser (it works once, within 2 minutes)",
          file=sys.stderr)
    return 0


def register(sub: Subparsers) -> None:
    serve = command(sub, "serve", DOC, _serve)
    add_home(serve)
    serve.add_argument("--host", default=DEFAULT_HOST,
                       help=f"address to listen on (default {DEFAULT_HOST}); any other than a "
                            f"loopback address exposes the API beyond this machine")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT,
                       help=f"port to listen on (default {DEFAULT_PORT})")
    serve.add_argument("--max-body", type=_bytes, default=DEFAULT_MAX_BODY, metavar="BYTES",
                       help=f"largest request body taken, in bytes (default {DEFAULT_MAX_BODY}, "
                            f"8 MiB)")
    serve.add_argument("--open", action="store_true",
                       help="print a one-time sign-in link for the memory browser and open it")
    serve.add_argument("--no-browser", action="store_true",
                       help="with --open: only print the link")
    opener = command(sub, "open", OPEN_DOC, _open)
    add_home(opener)
    opener.add_argument("--host", default=DEFAULT_HOST,
                        help=f"the server's address (default {DEFAULT_HOST})")
    opener.add_argument("--port", type=_port, default=DEFAULT_PORT,
                        help=f"the server's port (default {DEFAULT_PORT})")
    opener.add_argument("--no-browser", action="store_true", help="only print the link")
