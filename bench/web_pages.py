"""Memory browser pages: the list and search pages over 100,000 memories, beside the JSON API.

    python bench/web_pages.py [--memories 100000] [--runs 300] [--home H]

Imports generated memories (bench/import_speed.py's lines: 20 projects, one
template) into a new home (or reuses the store in --home), starts a real
`memspool serve` on 127.0.0.1, warms it, then times over one kept-alive
connection, each request rendered whole on the server:

- GET /ui/memories: all projects, page 1; one project; one project and
  layer, page 20 (an offset of 950); a text filter (every word held);
- GET /ui/search: the same queries as GET /search, the JSON API beside it;
- GET /health, the HTTP floor (no store, no template).

Pages are asked for with the bearer token, which opens them as the cookie
does. Prints p50 and p95 in milliseconds and each page's ratio to the JSON
route beside it: GET /search with the same queries for the search page; a
selective GET /search (the API's cheapest store read) for the list, which
has no JSON twin. Target: every page p50 under 50 ms. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

from api_latency import _free_port, _queries, _start
from import_speed import lines

from memspool.service import Service

TARGET_P50_MS = 50.0


def _timed(call: Callable[[str], None], inputs: list[str]) -> list[float]:
    times = []
    for item in inputs:
        started = time.perf_counter()
        call(item)
        times.append((time.perf_counter() - started) * 1000)
    return times


def _report(name: str, times: list[float], base: list[float] | None) -> float:
    p50 = statistics.median(times)
    p95 = statistics.quantiles(times, n=20)[-1]
    ratio = f"{p50 / statistics.median(base):>6.1f}x" if base else f"{'':>7}"
    print(f"{name:<44} {p50:>8.2f} {p95:>8.2f} {ratio}")
    return p50


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--home", type=Path,
                        help="build the store here, or reuse the one built by an earlier run")
    args = parser.parse_args(argv)
    rng = random.Random(11)
    shared = _queries(args.memories, args.runs, shared=True)
    selective = _queries(args.memories, args.runs, shared=False)
    with tempfile.TemporaryDirectory(prefix="memspool-bench-") as folder:
        home = args.home or Path(folder) / "home"
        started = time.perf_counter()
        with Service(home, env={}) as service:
            built = service.status()["memories"] < args.memories
            if built:
                service.import_lines(iter(lines(args.memories)))
            semantic = service.semantic.encoder is not None
        print(f"store: {args.memories} memories in 20 projects, "
              + (f"built in {time.perf_counter() - started:.1f} s" if built else "reused")
              + f"; semantic recall {'on' if semantic else 'off'}")
        port = _free_port()
        proc = _start(home, port)
        auth = {"Authorization": f"Bearer {(home / 'api-token').read_text().strip()}"}
        kept = [http.client.HTTPConnection("127.0.0.1", port, timeout=60)]

        def fresh() -> None:
            # uvicorn closes a connection idle for 5 s: each phase opens its own.
            kept[0].close()
            kept[0] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        def get(path: str) -> None:
            kept[0].request("GET", path, headers=auth)
            response = kept[0].getresponse()
            body = response.read()
            if response.status != 200:
                raise SystemExit(f"GET {path} answered {response.status}: {body[:300]!r}")

        def paths(make: Callable[[], str]) -> list[str]:
            return [make() for _ in range(args.runs)]

        cases: list[tuple[str, list[str]]] = [
            ("GET /ui/memories, all projects", paths(lambda: "/ui/memories")),
            ("GET /ui/memories?project", paths(
                lambda: "/ui/memories?" + urlencode({"project": f"p{rng.randrange(20)}"}))),
            ("GET /ui/memories?project&layer&page=20", paths(
                lambda: "/ui/memories?" + urlencode({"project": f"p{rng.randrange(20)}",
                                                     "layer": "canonical", "page": 20}))),
            ("GET /ui/memories?q (selective words)", [
                "/ui/memories?" + urlencode({"q": q}) for q in selective]),
            ("GET /search (JSON), shared words", [
                "/search?" + urlencode({"q": q, "limit": 10}) for q in shared]),
            ("GET /ui/search, shared words", [
                "/ui/search?" + urlencode({"q": q}) for q in shared]),
            ("GET /search (JSON), selective", [
                "/search?" + urlencode({"q": q, "limit": 10}) for q in selective]),
            ("GET /ui/search, selective", [
                "/ui/search?" + urlencode({"q": q}) for q in selective]),
            ("GET /health", paths(lambda: "/health")),
        ]
        timings: dict[str, list[float]] = {}
        try:
            for _, inputs in cases:
                _timed(get, inputs[:30])  # warm the workers and their caches
            for name, inputs in cases:
                fresh()
                timings[name] = _timed(get, inputs)
        finally:
            kept[0].close()
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    print(f"{args.runs} requests each, kept-alive connection; load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'':<44} {'p50 ms':>8} {'p95 ms':>8} {'ratio':>7}")
    beside = {"GET /ui/search, shared words": "GET /search (JSON), shared words",
              "GET /ui/search, selective": "GET /search (JSON), selective"}
    pages = {}
    for name, times in timings.items():
        base = timings.get(beside.get(name, "GET /search (JSON), selective")) \
            if name.startswith("GET /ui/") else None
        pages[name] = _report(name, times, base)
    for name, p50 in pages.items():
        if name.startswith("GET /ui/"):
            verdict = "meets" if p50 < TARGET_P50_MS else "misses"
            print(f"{name}: p50 {p50:.2f} ms {verdict} the target of {TARGET_P50_MS:.0f} ms")
    print("ratio: a page's p50 over its JSON neighbour's (the same search as JSON for the "
          "search page; a selective JSON search for the list)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
