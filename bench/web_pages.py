"""Memory browser pages: the list and search pages over 100,000 memories, beside the JSON API.

    python bench/web_pages.py [--memories 100000] [--runs 300] [--home H] [--store zipf]

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

``--store zipf`` builds recall_latency.py's store instead (words drawn from
the labelled data with a Zipf law, as in real notes), as api_latency.py does:
its "shared" queries are that bench's six, its selective ones two words of
middling frequency (the list's text filter takes the selective ones).
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

import recall_latency
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


def _inputs(args: argparse.Namespace) -> tuple[Callable[[int], list[bytes]], list[str], list[str]]:
    """The store's generator, and the shared and selective queries."""
    if args.store == "zipf":
        rng = random.Random(3)
        middling = recall_latency.vocabulary()[200:3000]
        shared = [recall_latency.QUERIES[i % len(recall_latency.QUERIES)]
                  for i in range(args.runs)]
        return (recall_latency.lines, shared,
                [" ".join(rng.sample(middling, 2)) for _ in range(args.runs)])
    return (lines, _queries(args.memories, args.runs, shared=True),
            _queries(args.memories, args.runs, shared=False))


def _cases(runs: int, shared: list[str], selective: list[str]) -> list[tuple[str, list[str]]]:
    rng = random.Random(11)

    def paths(make: Callable[[], str]) -> list[str]:
        return [make() for _ in range(runs)]

    return [
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
        ("GET /ui/search, shared words", ["/ui/search?" + urlencode({"q": q}) for q in shared]),
        ("GET /search (JSON), selective", [
            "/search?" + urlencode({"q": q, "limit": 10}) for q in selective]),
        ("GET /ui/search, selective", ["/ui/search?" + urlencode({"q": q}) for q in selective]),
        ("GET /health", paths(lambda: "/health")),
    ]


def _time_server(home: Path, cases: list[tuple[str, list[str]]]) -> dict[str, list[float]]:
    port = _free_port()
    proc = _start(home, port, {})
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
    return timings


def _print(timings: dict[str, list[float]], runs: int) -> None:
    print(f"{runs} requests each, kept-alive connection; load average "
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--home", type=Path,
                        help="build the store here, or reuse the one built by an earlier run")
    parser.add_argument("--store", choices=("template", "zipf"), default="template")
    args = parser.parse_args(argv)
    make, shared, selective = _inputs(args)
    with tempfile.TemporaryDirectory(prefix="memspool-bench-") as folder:
        home = args.home or Path(folder) / "home"
        started = time.perf_counter()
        with Service(home, env={}) as service:
            built = (service.status().memories or 0) < args.memories
            if built:
                service.import_lines(iter(make(args.memories)))
            semantic = service.semantic.encoder is not None
        print(f"store: {args.memories} memories ({args.store}), "
              + (f"built in {time.perf_counter() - started:.1f} s" if built else "reused")
              + f"; semantic recall {'on' if semantic else 'off'}")
        timings = _time_server(home, _cases(args.runs, shared, selective))
    _print(timings, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
