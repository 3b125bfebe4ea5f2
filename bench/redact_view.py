"""What the normalised view costs redaction, side by side with redaction without it.

``redact()`` also runs the rules over the text as it reads (invisible characters
removed, NFKC, entities and escapes decoded; see memspool.redact.normal), around
each place the view differs. This times, alternating, best of ``--repeats``, on the
same 200 KB slices of the fixture transcripts (as bench/redact_speed.py builds them):

* ``redact()`` as shipped;
* ``redact()`` with the view turned off (the engine's ``view`` replaced by one that
  finds nothing), i.e. redaction as it was before;

on three data sets: the transcripts as they are (a few ellipses and variation
selectors: the view is built, the rules rerun near each), the transcripts made
ASCII (no view at all), and the transcripts with a disguised character (a zero-width
space, a fullwidth letter, an entity) every ~2 KB.

Usage::

    .venv-test/bin/python bench/redact_view.py [--mb 2] [--repeats 5]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from _machine import print_header

from memspool.redact import engine

FIXTURES: Final = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "transcripts"
SLICE_CHARS: Final = 200_000
DISGUISES: Final = ("\u200b", "\u00ad", "\uff58", "&#95;", "\\u005f")  # ZWSP, SHY, fullwidth x


def _transcripts(megabytes: float) -> str:
    data = "".join(p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.jsonl")))
    want = int(megabytes * 1_000_000)
    return (data * (want // len(data) + 1))[:want]


def _disguised(text: str, every: int = 2000) -> str:
    rng = random.Random(7)
    pieces = []
    for start in range(0, len(text), every):
        pieces += [text[start:start + every], rng.choice(DISGUISES)]
    return "".join(pieces)


def _slices(text: str) -> list[str]:
    return [text[i:i + SLICE_CHARS] for i in range(0, len(text), SLICE_CHARS)]


def _best(run: Callable[[], None], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print_header("memspool redaction with and without the normalised view")
    print(f"  timing:   best of {args.repeats}, alternating")
    text = _transcripts(args.mb)
    sets = {
        "transcripts": text,
        "transcripts, ASCII only": text.encode("ascii", "replace").decode(),
        "a disguise every ~2 KB": _disguised(text),
    }
    shipped = engine.view
    print(f"\n  {'data':<26} {'MB':>5} {'with view':>12} {'without':>12} {'ratio':>7}")
    for name, data in sets.items():
        slices = _slices(data)
        size = len(data.encode()) / 1e6
        timings = {"with": float("inf"), "without": float("inf")}
        for _ in range(args.repeats):
            engine.view = shipped
            timings["with"] = min(timings["with"], _best(
                lambda slices=slices: [engine.redact(s) for s in slices], 1))
            engine.view = lambda _text: None
            timings["without"] = min(timings["without"], _best(
                lambda slices=slices: [engine.redact(s) for s in slices], 1))
        engine.view = shipped
        print(f"  {name:<26} {size:>5.2f} {size / timings['with']:>8.1f} MB/s "
              f"{size / timings['without']:>8.1f} MB/s "
              f"{timings['without'] / timings['with']:>6.2f}")
    print("\n  ratio: speed with the view / speed without it (1.00 = free)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
