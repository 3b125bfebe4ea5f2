"""Redaction speed on transcript text, next to a plain ``re.search`` scan of the same text.

The drainer calls ``redact()`` on slices of up to ~200 KB of transcript text, many times,
so its speed bounds the drain. This builds a few MB of real JSONL by repeating the fixture
transcripts (tests/fixtures/transcripts), cuts it into 200 KB slices, and times, side by
side in one run, alternating, best of ``--repeats``:

* ``redact()`` on every slice;
* ``re.search`` on every slice for one fixed string that does not occur (so it scans all
  of it): about the fastest any regex pass over the text can be.

It prints MB/s for both (MB = 10**6 UTF-8 bytes) and their ratio. Target: redact >= 50 MB/s.
A second data set plants one synthetic secret every ~8 KB, to show the cost of findings.

Then the pathological inputs: ``--patho-mb`` (1 MB) of one unit repeated (``password=``,
``&api_key=x``, runs of blanks or punctuation, a keyword every few characters), each handed
to ``redact()`` whole and timed side by side with as much transcript text, alternating,
best of ``--repeats``. Redaction is linear, so each should take about as long as the
transcript text; the ratio says how close it comes.

Usage::

    .venv/bin/python bench/redact_speed.py [--mb 4] [--patho-mb 1] [--repeats 7]
"""

from __future__ import annotations

import argparse
import random
import re
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from _machine import print_header

from memspool.redact import redact

FIXTURES: Final = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "transcripts"
#: The most text the drainer hands ``redact()`` at once.
SLICE_CHARS: Final = 200_000
#: The floor redaction must hold (docs/redaction.md): at 50 MB/s a full slice
#: (200,000 characters) is redacted in about 4 ms, small beside the
#: transcript read, compression and SQLite write of the same drainer pass.
TARGET_MB_S: Final = 50.0
#: A string that occurs in no transcript, so ``re.search`` has to scan every slice to the end.
ABSENT: Final = re.compile(re.escape("memspool-bench-marker-that-never-occurs"))
#: One planted secret per this many characters in the "with secrets" data set.
PLANT_EVERY: Final = 8_000
#: Units repeated into pathological inputs, with what each one exercises.
PATHOLOGICAL: Final = (
    ("password=", "one keyword after another: one long value"),
    ("&api_key=x", "a query string that never ends"),
    ("token=", "a long value rejected as too uniform"),
    ("password: ", "a keyword every 10 characters, each its own value"),
    (" ", "a run of blanks"),
    ("=", "a run of punctuation"),
    ("-_.:", "mixed punctuation"),
    ("eyJ", "a token prefix every 3 characters"),
)


def transcript_text(megabytes: float) -> str:
    files = sorted(FIXTURES.rglob("*.jsonl"))
    if not files:
        sys.exit(f"no transcripts under {FIXTURES}: run from a memspool checkout")
    base = "".join(path.read_text(encoding="utf-8") for path in files)
    copies = max(1, round(megabytes * 1e6 / len(base.encode())))
    return base * copies


def _planted_secret(rng: random.Random) -> str:
    alnum = string.ascii_letters + string.digits
    body = "".join(rng.choice(alnum) for _ in range(36))
    return rng.choice([
        f"export GITHUB_TOKEN=ghp_{body}",
        f"DB_PASSWORD={body[:14]}",
        f"curl -H 'Authorization: Bearer {body}' https://api.example.com",
        f"AWS_ACCESS_KEY_ID=AKIA{body[:16].upper()}",
        f"postgres://app:{body[:12]}@db:5432/app",
    ])  # fmt: skip


def with_secrets(text: str) -> str:
    # Secrets go in at line ends, so the JSON lines around them stay intact.
    rng = random.Random(3)
    pieces, start = [], 0
    while (at := text.find("\n", start + PLANT_EVERY)) != -1:
        pieces += (text[start:at], "\n", _planted_secret(rng))
        start = at
    pieces.append(text[start:])
    return "".join(pieces)


def _slices(text: str) -> list[str]:
    return [text[i : i + SLICE_CHARS] for i in range(0, len(text), SLICE_CHARS)]


def _time(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def measure(text: str, repeats: int) -> tuple[float, float, dict[str, int]]:
    """Best-of-``repeats`` seconds for redact and for re.search, alternating, and counts."""
    slices = _slices(text)
    counts: dict[str, int] = {}
    for piece in slices:
        for family, n in redact(piece)[1].items():
            counts[family] = counts.get(family, 0) + n
    redact_s, search_s = [], []
    for _ in range(repeats):
        redact_s.append(_time(lambda: [redact(piece) for piece in slices]))
        search_s.append(_time(lambda: [ABSENT.search(piece) for piece in slices]))
    return min(redact_s), min(search_s), counts


def pathological(unit: str, size: int) -> str:
    return unit * (size // len(unit))


def measure_side_by_side(normal: str, text: str, repeats: int) -> tuple[float, float]:
    """Best-of-``repeats`` seconds for ``redact(normal)`` and ``redact(text)``, alternating."""
    normal_s, text_s = [], []
    for _ in range(repeats):
        normal_s.append(_time(lambda: redact(normal)))
        text_s.append(_time(lambda: redact(text)))
    return min(normal_s), min(text_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=4.0, help="size of each data set (MB)")
    parser.add_argument("--patho-mb", type=float, default=1.0,
                        help="size of each pathological input (MB)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs, best one counts")
    args = parser.parse_args(argv)

    print_header("memspool redaction speed")
    print(f"  slices:   {SLICE_CHARS:,} characters, as the drainer hands them over; "
          f"best of {args.repeats}")
    base = transcript_text(args.mb)
    below_target = False
    for name, text in (("transcripts", base), ("with secrets", with_secrets(base))):
        size = len(text.encode("utf-8"))
        redact_s, search_s, counts = measure(text, args.repeats)
        redact_rate, search_rate = size / redact_s / 1e6, size / search_s / 1e6
        below_target |= redact_rate < TARGET_MB_S
        found = ", ".join(f"{f} {n}" for f, n in sorted(counts.items())) or "none"
        print(f"\n{name}: {size / 1e6:.2f} MB ({found})")
        print(f"  redact():          {redact_rate:8.1f} MB/s   (target >= {TARGET_MB_S:.0f})")
        print(f"  re.search(fixed):  {search_rate:8.1f} MB/s")
        print(f"  ratio:             redact runs at {redact_rate / search_rate:.1%} of the "
              f"plain scan ({search_rate / redact_rate:.0f}x slower)")

    size = int(args.patho_mb * 1e6)
    normal = base.encode("utf-8")[:size].decode("utf-8", errors="ignore")
    print(f"\npathological inputs: {size / 1e6:.2f} MB each, redact() on the whole input, next "
          f"to {len(normal.encode()) / 1e6:.2f} MB of transcripts")
    print(f"  {'unit repeated':<14} {'transcripts':>12} {'pathological':>13} {'ratio':>7}   what")
    for unit, what in PATHOLOGICAL:
        normal_s, text_s = measure_side_by_side(normal, pathological(unit, size), args.repeats)
        print(f"  {unit!r:<14} {normal_s * 1e3:9.1f} ms {text_s * 1e3:10.1f} ms "
              f"{text_s / normal_s:6.2f}x   {what}")
    return 1 if below_target else 0


if __name__ == "__main__":
    sys.exit(main())
