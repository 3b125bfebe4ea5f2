"""Drain throughput, compression and completeness on large real transcripts.

Builds several-MB transcripts by concatenating the fixture transcripts
(tests/fixtures/transcripts) again and again, giving every record a fresh
``uuid`` (and the fields that point at uuids) per copy so the drainer's replay
dedup does not skip the copies. Then, per data set and side by side in one
run, alternating:

* parse only: ``orjson.loads`` on every line of the file;
* drain: a spool frame for the session, then one ``Drainer.loop()`` pass in a
  fresh home: spool read, payload check, transcript slicing, compression,
  redaction, zstd, the SQLite transaction per capture, the spool checkpoint.

It prints MB/s for both and their ratio (target: drain >= 20% of parse only),
the compression (raw transcript bytes / stored kept text bytes; target for the
tool-heavy ccviewer data: kept text <= 10% of raw), and verifies that every user
prompt, assistant text block and thinking block of the drained transcript is
in the stored captures, in order. MB here is 10**6 bytes.

Usage::

    .venv/bin/python bench/drain_throughput.py [--mb 16] [--repeats 5] [--profile ccviewer]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import os
import platform
import pstats
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from memspool.config import load_config
from memspool.drainer.daemon import Drainer, PassResult
from memspool.redact import redact
from memspool.spool import append
from memspool.store.slices import slice_text

FIXTURES: Final = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "transcripts"
DATASETS: Final = {
    # Tool-heavy, no thinking: the case the 10% kept-text target is about.
    "ccviewer": ["ccviewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"],
    # Main session with thinking blocks, plus its two subagent transcripts.
    "spotter": [
        "spotter-subagent.jsonl",
        "spotter-ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl",
        "spotter-ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-acompact-946d2b.jsonl",
    ],
}
DEFAULT_MB: Final = 16.0
DEFAULT_REPEATS: Final = 5
MB: Final = 1_000_000
TARGET_DRAIN_SHARE: Final = 0.20
TARGET_KEPT_SHARE: Final = 0.10
#: Fields whose value is a record uuid (or points at one); rewritten per copy.
_UUID_FIELD: Final = re.compile(
    rb'"(uuid|parentUuid|leafUuid|logicalParentUuid|sourceToolAssistantUUID|messageId)":'
    rb'"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"'
)
#: The same rule as drainer/keep.py: reminders are not the user's words.
_SYSTEM_REMINDER: Final = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.S)


@dataclass
class Dataset:
    name: str
    path: Path
    copies: int
    session_id: str

    @property
    def size(self) -> int:
        return self.path.stat().st_size


@dataclass
class Rounds:
    """Timed rounds of one data set, and where its last drain left the store."""

    parse: list[float] = field(default_factory=list)
    drain: list[float] = field(default_factory=list)
    slices: int = 0
    home: Path = Path()

    @property
    def share(self) -> float:
        """Drain rate as a share of the parse-only rate (medians)."""
        return statistics.median(self.parse) / statistics.median(self.drain)


@dataclass
class Check:
    """Expected kept snippets of one category, and how many the store holds."""

    total: int = 0
    in_order: int = 0
    anywhere: int = 0
    missing: list[str] = field(default_factory=list)


def build(name: str, sources: list[str], folder: Path, target_bytes: float) -> Dataset:
    """Concatenate ``sources`` until ``target_bytes``, with fresh uuids per copy."""
    lines = [
        line for s in sources for line in (FIXTURES / s).read_bytes().splitlines(keepends=True)
    ]
    one_copy = sum(len(line) for line in lines)
    copies = max(1, -(-int(target_bytes) // one_copy))
    session_id = str(uuid.uuid4())
    path = folder / f"{session_id}.jsonl"
    with path.open("wb") as out:
        for _ in range(copies):
            fresh: dict[bytes, bytes] = {}

            def swap(match: re.Match[bytes], fresh: dict[bytes, bytes] = fresh) -> bytes:
                new = fresh.setdefault(match[2], str(uuid.uuid4()).encode())
                return b'"' + match[1] + b'":"' + new + b'"'

            for line in lines:
                out.write(_UUID_FIELD.sub(swap, line))
    return Dataset(name, path, copies, session_id)


def parse_only(path: Path) -> float:
    """Seconds to read the file and ``orjson.loads`` every line."""
    start = time.perf_counter()
    with path.open("rb") as handle:
        for line in handle:
            orjson.loads(line)
    return time.perf_counter() - start


def drain(
    dataset: Dataset, home: Path, profile: cProfile.Profile | None = None
) -> tuple[float, PassResult]:
    """Seconds for one ``Drainer.loop()`` pass over the whole transcript in a fresh home."""
    config = load_config(home)
    drainer = Drainer(config)
    drainer.initialize()  # creates the store: a one-off, not timed
    try:
        payload = {
            "session_id": dataset.session_id,
            "transcript_path": str(dataset.path),
            "cwd": "/work/demo",
            # SessionEnd forces the flush, so the tail below the size floor ships
            # too and every byte is drained in this one pass.
            "hook_event_name": "SessionEnd",
        }
        append(str(config.spool_dir), orjson.dumps(payload))
        if profile is not None:
            profile.enable()
        start = time.perf_counter()
        result = drainer.loop()
        elapsed = time.perf_counter() - start
        if profile is not None:
            profile.disable()
    finally:
        drainer.shutdown()
    if result.raw_bytes != dataset.size:
        raise SystemExit(
            f"{dataset.name}: drained {result.raw_bytes} of {dataset.size} bytes; "
            "see the drainer's log lines above"
        )
    return elapsed, result


def clean(text: str) -> str:
    if "<system-reminder>" in text:
        text = _SYSTEM_REMINDER.sub("", text)
    return text.strip()


def record_snippets(record: dict[str, Any]) -> list[tuple[str, str]]:
    """``(category, text)`` of one record's prompt, assistant text and thinking blocks."""
    kind = record.get("type")
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    found: list[tuple[str, str]] = []
    if kind == "user" and not record.get("isMeta") and not record.get("isCompactSummary"):
        if isinstance(content, str):
            found.append(("user prompt", clean(content)))
        found += [
            ("user prompt", clean(str(b.get("text", ""))))
            for b in blocks
            if b.get("type") == "text"
        ]
    elif kind == "assistant":
        if isinstance(content, str):
            found.append(("assistant text", clean(content)))
        for block in blocks:
            if block.get("type") == "text":
                found.append(("assistant text", clean(str(block.get("text", "")))))
            elif block.get("type") == "thinking":
                found.append(("thinking", str(block.get("thinking", "")).strip()))
    return [(category, text) for category, text in found if text]


def expected_snippets(path: Path) -> Iterator[tuple[str, str]]:
    """``(category, text)`` for each prompt, assistant text and thinking block, in file order.

    Written apart from drainer/keep.py on purpose; shares only its rules
    (meta messages and tool results are not prompts; reminders are cut; a
    record whose uuid was already seen is a replay). Each text goes through
    the same redactor as the store.
    """
    seen: set[str] = set()
    with path.open("rb") as handle:
        for line in handle:
            record = orjson.loads(line)
            found = record_snippets(record) if isinstance(record, dict) else []
            if not found:
                continue
            key = record.get("uuid") or "line:" + hashlib.blake2b(line, digest_size=16).hexdigest()
            if key in seen:
                continue
            seen.add(key)
            for category, text in found:
                yield category, redact(text)[0]


_SUMS: Final = (
    ("slices", "count(*)"),
    ("raw_bytes", "sum(raw_bytes)"),
    ("zstd_bytes", "sum(stored_bytes)"),
    ("kept", "sum(records_kept)"),
    ("dropped", "sum(records_dropped)"),
    ("unknown", "sum(records_unknown)"),
    ("replayed", "sum(records_replayed)"),
    ("redactions", "sum(redactions)"),
)


def store_figures(home: Path) -> tuple[str, dict[str, int]]:
    """The stored text of every capture in order, and the captures table's sums."""
    drainer = Drainer(load_config(home))
    drainer.initialize()
    try:
        conn = drainer.conn
        ids = [row[0] for row in conn.execute("SELECT id FROM slices ORDER BY id")]
        # Joined with nothing: an entry longer than one capture is split across two.
        stored = "".join(slice_text(conn, i) for i in ids)
        columns = ", ".join(expression for _, expression in _SUMS)
        sums = conn.execute(f"SELECT {columns} FROM slices").fetchone()  # noqa: S608 - fixed
    finally:
        drainer.shutdown()
    figures = {name: int(value or 0) for (name, _), value in zip(_SUMS, sums, strict=True)}
    figures["text_bytes"] = len(stored.encode("utf-8", "surrogatepass"))
    return stored, figures


def verify(dataset: Dataset, home: Path) -> tuple[dict[str, Check], dict[str, int]]:
    """Compare the source's prompts, texts and thinking with the stored captures."""
    stored, figures = store_figures(home)
    checks: dict[str, Check] = {}
    position = 0
    for category, text in expected_snippets(dataset.path):
        check = checks.setdefault(category, Check())
        check.total += 1
        found = stored.find(text, position)
        if found >= 0:
            check.in_order += 1
            check.anywhere += 1
            position = found + len(text)
        elif text in stored:
            check.anywhere += 1
        else:
            check.missing.append(text)
    return checks, figures


def mbps(size: int, seconds: float) -> float:
    return size / MB / seconds


def verdict_at_least(value: float, target: float) -> str:
    return "met" if value >= target else f"MISSED by {100 * (target - value):.1f} points"


def measure(datasets: list[Dataset], root: Path, repeats: int) -> dict[str, Rounds]:
    """Alternate parse-only and drain rounds per data set."""
    rounds: dict[str, Rounds] = {}
    for d in datasets:
        r = rounds[d.name] = Rounds()
        for number in range(repeats):
            r.parse.append(parse_only(d.path))
            r.home = root / f"home-{d.name}-{number}"
            elapsed, result = drain(d, r.home)
            r.drain.append(elapsed)
            r.slices = result.slices
    return rounds


def print_throughput(datasets: list[Dataset], rounds: dict[str, Rounds]) -> None:
    target = f"target >= {100 * TARGET_DRAIN_SHARE:.0f}%"
    print("\nthroughput (MB of raw transcript per second, medians)")
    print(
        f"  {'data':<10} {'MB':>6} {'parse MB/s':>11} {'drain MB/s':>11} {'drain/parse':>12} "
        f"{'captures':>9}  drain rounds (s)"
    )
    total_parse = total_drain = 0.0
    total_size = 0
    for d in datasets:
        r = rounds[d.name]
        parse_s, drain_s = statistics.median(r.parse), statistics.median(r.drain)
        total_parse, total_drain, total_size = (
            total_parse + parse_s,
            total_drain + drain_s,
            total_size + d.size,
        )
        print(
            f"  {d.name:<10} {d.size / MB:6.2f} {mbps(d.size, parse_s):11.1f} "
            f"{mbps(d.size, drain_s):11.2f} {100 * r.share:11.1f}% {r.slices:9d}  "
            f"{' '.join(f'{t:.3f}' for t in r.drain)}  "
            f"({target}: {verdict_at_least(r.share, TARGET_DRAIN_SHARE)})"
        )
    share = total_parse / total_drain
    print(
        f"  {'both':<10} {total_size / MB:6.2f} {mbps(total_size, total_parse):11.1f} "
        f"{mbps(total_size, total_drain):11.2f} {100 * share:11.1f}%  "
        f"({target}: {verdict_at_least(share, TARGET_DRAIN_SHARE)})"
    )


def print_compression(
    datasets: list[Dataset], rounds: dict[str, Rounds], root: Path, projects: Path
) -> list[tuple[Dataset, dict[str, Check]]]:
    print("\ncompression (raw transcript bytes vs what the store keeps)")
    print(
        f"  {'data':<10} {'raw MB':>7} {'kept text MB':>13} {'raw/kept':>9} {'kept % raw':>11} "
        f"{'zstd MB':>8} {'raw/zstd':>9} {'1 copy':>7}  records kept/dropped/unknown/replayed"
    )
    verified: list[tuple[Dataset, dict[str, Check]]] = []
    for d in datasets:
        checks, f = verify(d, rounds[d.name].home)
        verified.append((d, checks))
        # zstd also finds the repeated copies inside one capture; a single copy
        # gives the ratio a real session would see.
        single = build(d.name, DATASETS[d.name], projects, 0)
        drain(single, root / f"home-{d.name}-one-copy")
        _, one = store_figures(root / f"home-{d.name}-one-copy")
        kept_share = f["text_bytes"] / f["raw_bytes"]
        note = ""
        if d.name == "ccviewer":
            verdict = verdict_at_least(-kept_share, -TARGET_KEPT_SHARE)
            note = f"  (tool-heavy target <= {100 * TARGET_KEPT_SHARE:.0f}%: {verdict})"
        print(
            f"  {d.name:<10} {f['raw_bytes'] / MB:7.2f} {f['text_bytes'] / MB:13.3f} "
            f"{f['raw_bytes'] / f['text_bytes']:8.1f}x {100 * kept_share:10.2f}% "
            f"{f['zstd_bytes'] / MB:8.3f} {f['raw_bytes'] / f['zstd_bytes']:8.1f}x "
            f"{one['raw_bytes'] / one['zstd_bytes']:6.1f}x  "
            f"{f['kept']}/{f['dropped']}/{f['unknown']}/{f['replayed']}{note}"
        )
        if f["redactions"]:
            print(f"  {'':<10} ({f['redactions']} redactions)")
    return verified


def print_completeness(verified: list[tuple[Dataset, dict[str, Check]]]) -> bool:
    print(
        "\ncompleteness (source text, after <system-reminder> removal and redaction, "
        "found in the stored captures)"
    )
    all_kept = True
    for d, checks in verified:
        for category in ("user prompt", "assistant text", "thinking"):
            check = checks.get(category, Check())
            ok = check.in_order == check.anywhere == check.total
            all_kept &= ok
            print(
                f"  {d.name:<10} {category:<15} {check.in_order:6d} of {check.total:6d} "
                f"in order, {check.anywhere:6d} anywhere  {'OK' if ok else 'MISSING'}"
            )
            for text in check.missing[:3]:
                print(f"      missing: {text[:120]!r}")
    print(f"  every prompt, assistant text and thinking block kept: {'yes' if all_kept else 'NO'}")
    return all_kept


def print_profile(dataset: Dataset, home: Path) -> None:
    profile = cProfile.Profile()
    elapsed, _ = drain(dataset, home, profile)
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(18)
    stats.sort_stats("cumulative").print_stats(25)
    print(f"\ncProfile of one drain of {dataset.name} ({elapsed:.3f} s under the profiler):")
    print(out.getvalue())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=DEFAULT_MB, help="size of each data set, MB")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="rounds per data set")
    parser.add_argument("--profile", choices=sorted(DATASETS), help="cProfile one more drain")
    args = parser.parse_args(argv)

    for key in [k for k in os.environ if k.startswith("MEMSPOOL_")]:
        del os.environ[key]
    with tempfile.TemporaryDirectory(prefix="memspool-bench-") as tmp:
        root = Path(tmp)
        projects = root / "projects" / "-work-demo"
        projects.mkdir(parents=True)
        # The drainer only reads transcripts below these folders.
        os.environ["MEMSPOOL_TRANSCRIPT_ROOTS"] = str(root / "projects")
        datasets = [build(name, files, projects, args.mb * MB) for name, files in DATASETS.items()]

        print("memspool drain throughput")
        print(
            f"  python:   {sys.executable} (Python {platform.python_version()}, "
            f"orjson {orjson.__version__})"
        )
        print(f"  machine:  {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
        print(
            f"  method:   per data set, {args.repeats} rounds of (parse only, drain in a fresh "
            "home), time.perf_counter"
        )
        for d in datasets:
            print(
                f"  data:     {d.name}: {d.size / MB:.2f} MB = {d.copies} copies of "
                f"{' + '.join(Path(s).name for s in DATASETS[d.name])}, fresh uuids per copy"
            )

        rounds = measure(datasets, root, args.repeats)
        print_throughput(datasets, rounds)
        verified = print_compression(datasets, rounds, root, projects)
        all_kept = print_completeness(verified)
        print(f"\n  load average at end: {os.getloadavg()[0]:.2f}")
        if args.profile:
            print_profile(next(d for d in datasets if d.name == args.profile), root / "home-prof")
    return 0 if all_kept else 1


if __name__ == "__main__":
    sys.exit(main())
