"""``memspool serve``: the local HTTP API."""

from __future__ import annotations

import argparse
import sys

from memspool.cli._common import Subparsers, add_home, command
from memspool.http import DEFAULT_HOST, DEFAULT_MAX_BODY, DEFAULT_PORT, TOKEN_NAME
from memspool.http.limits import is_loopback

DOC = f"""Serve memspool over a local HTTP API (JSON), until interrupted.

Listens on {DEFAULT_HOST}:{DEFAULT_PORT} unless told otherwise. Every route but
GET /health needs the bearer token kept in HOME/{TOKEN_NAME} (made at the
first start). Requests whose Host header is not a loopback name are refused,
so a web page cannot reach the API through DNS rebinding. GET /openapi.json
describes the routes; docs/http.md has examples.

Example:
    memspool serve --port 8765
    curl -H "Authorization: Bearer $(cat ~/.local/share/memspool/{TOKEN_NAME})" \\
        "http://127.0.0.1:8765/search?q=timeout"
"""


def _port(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535, got {value!r}")
    return int(value)


def _bytes(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a number of bytes of at least 1, "
                                         f"got {value!r}")
    return int(value)


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
    where = f"[{args.host}]" if ":" in args.host else args.host
    print(f"memspool: serving http://{where}:{args.port} (token in "
          f"{app.state.home / TOKEN_NAME}); Ctrl-C stops it", file=sys.stderr)
    run(app, args.host, args.port, sock)
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
