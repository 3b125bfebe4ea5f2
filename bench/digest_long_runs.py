"""The digest of a slice that holds one long run of non-space characters.

A hash, a dump or an encoded payload pasted into a conversation is one run of
thousands of characters; a slice holds up to 200,000 of them. Patterns written
for words and names can take time in the square of such a run's length, so the
digest reads a run longer than ``BLOB_CHARS`` as one word, ``<blob>``
(``memspool.distill.blobs``). This times, for runs of several alphabets at
20,000, 80,000 and 200,000 characters, best of ``--repeats``:

* ``redact()`` on the slice's text, as the drainer redacts each entry before it
  stores it;
* the minor pass's reading of the slice (``memspool.archivist.minor.notes_of``:
  printable, messages, claims, the claim model, notes, their redaction);

each next to the same slice without the run, and prints the run's own cost
(the time less that of the slice without it) and how it grows per doubling of
the run: about 2x is linear, 4x would be the square. The run's own cost is a
few milliseconds at most, so its ratios move with the machine's noise.

Then the most the bound leaves: a slice of 200,000 characters in runs of
``BLOB_CHARS`` characters each (the longest read as written, so the patterns
read every one of them), timed once, next to the same text in runs one
character longer (each a blob).

Last, one long message of plain prose (sentences of made-up words, so each has
features of its own) at 25,000 to 200,000 characters, timed once each: the type
model sums the message's features once for all its claims, not once per claim.
Then the same prose as one aside in brackets: a stop inside brackets closed later
ends no sentence, and telling so reads each character once, not once per stop.

Usage::

    python bench/digest_long_runs.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import base64
import functools
import math
import random
import sys
import time
from collections.abc import Callable
from typing import Final

from _machine import print_header

from memspool.archivist.minor import notes_of
from memspool.distill.blobs import BLOB_CHARS
from memspool.redact import redact

#: The run lengths timed: from a large paste to a whole slice.
SIZES: Final = (20_000, 80_000, 200_000)
#: The fact the run sits beside: the digest must still keep it.
SLICE: Final = (
    "[user] the first request after a deploy fails\n\n"
    "[assistant] One gotcha: PgBouncer drops idle server connections after a deploy, so "
    "set `pool_pre_ping=True` on the engine or the first request gets a dead connection. "
    "The failing request's trace: {run}")


def run_of(kind: str, size: int) -> str:
    """``size`` characters of one alphabet, as a transcript holds them in one piece."""
    rng = random.Random(kind)
    pieces: dict[str, Callable[[], str]] = {
        "hex": lambda: rng.randbytes(size).hex(),
        "base64": lambda: base64.b64encode(rng.randbytes(size)).decode(),
        "base64url": lambda: base64.urlsafe_b64encode(rng.randbytes(size)).decode(),
        "digits": lambda: "1" * size,
        "a_a_": lambda: "a_" * size,
        "a-a-": lambda: "a-" * size,
        "a.a.": lambda: "a." * size,
        "a/a/": lambda: "a/" * size,
        "url": lambda: "https://example.com/" + "a-b/" * size,
    }
    return pieces[kind]()[:size]


KINDS: Final = ("hex", "base64", "base64url", "digits", "a_a_", "a-a-", "a.a.", "a/a/", "url")


def best(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def per_doubling(small: tuple[int, float], large: tuple[int, float]) -> str:
    """How the cost grows each time the run's length doubles, between two sizes."""
    (n1, t1), (n2, t2) = small, large
    if t1 <= 0 or t2 <= 0:
        return "  -  "
    return f"{(t2 / t1) ** (1 / math.log2(n2 / n1)):4.1f}x"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="timed runs, best one counts")
    args = parser.parse_args(argv)

    print_header("memspool digest of a slice with one long run")
    print(f"  runs over {BLOB_CHARS} characters are read as <blob>; best of {args.repeats}")
    plain = SLICE.format(run="")
    notes_of(plain)  # the model and the rules load once, outside the timings
    base = {"redact": best(lambda: redact(plain), args.repeats),
            "digest": best(lambda: notes_of(plain), args.repeats)}
    print(f"\nthe slice without the run: redact {base['redact'] * 1e3:.2f} ms, "
          f"digest {base['digest'] * 1e3:.2f} ms")
    header = "".join(f"{size:>10,} ch" for size in SIZES)
    print(f"\nthe run's own cost (ms)\n  {'run':<10} {'step':<7}{header}   per doubling: "
          f"{SIZES[0] // 1000}k-{SIZES[1] // 1000}k  {SIZES[1] // 1000}k-{SIZES[2] // 1000}k")
    kept_everywhere = True
    for kind in KINDS:
        texts = [SLICE.format(run=run_of(kind, size)) for size in SIZES]
        kept_everywhere &= all(any("pool_pre_ping" in note.summary for note in notes_of(text)[0])
                               for text in texts)
        for step, call in (("redact", redact), ("digest", notes_of)):
            costs = [max(0.0, best(functools.partial(call, text), args.repeats) - base[step])
                     for text in texts]
            figures = "".join(f"{cost * 1e3:13.3f}" for cost in costs)
            points = list(zip(SIZES, costs, strict=True))
            print(f"  {kind:<10} {step:<7}{figures}   {per_doubling(points[0], points[1]):>13}"
                  f"  {per_doubling(points[1], points[2]):>8}")
    print(f"\nthe fact beside the run kept at every size: {'yes' if kept_everywhere else 'NO'}")
    print(f"\na slice of {SIZES[-1]:,} characters in runs of {BLOB_CHARS} (read as written) and "
          f"of {BLOB_CHARS + 1} (blobs), digest (s)")
    for kind in ("hex", "digits", "a-a-"):
        seconds = []
        for length in (BLOB_CHARS, BLOB_CHARS + 1):
            runs = " ".join(run_of(kind, length) for _ in range(SIZES[-1] // (length + 1)))
            seconds.append(best(functools.partial(notes_of, SLICE.format(run=runs)), 1))
        print(f"  {kind:<10} {seconds[0]:8.2f} {seconds[1]:8.2f}")
    print("\none message of plain prose, digest (s)")
    rng = random.Random(5)
    words = ["".join(rng.choice("etaoinshrdlucmfwyp") for _ in range(rng.randint(3, 9)))
             for _ in range(5000)]
    for opening, closing in (("", ""), ("(", ")")):
        if opening:
            print("\nthe same prose as one aside in brackets (every stop inside them), digest (s)")
        previous: tuple[int, float] | None = None
        for size in (25_000, 50_000, 100_000, 200_000):
            sentences: list[str] = []
            while sum(len(s) + 1 for s in sentences) < size:
                sentences.append(" ".join(rng.choice(words) for _ in range(rng.randint(8, 20)))
                                 .capitalize() + ".")
            text = f"[assistant] {opening}{' '.join(sentences)}{closing}"
            seconds = best(functools.partial(notes_of, text), 1)
            growth = per_doubling(previous, (size, seconds)) if previous else ""
            print(f"  {size:>9,} ch {seconds:8.2f}   {growth}")
            previous = (size, seconds)
    return 0 if kept_everywhere else 1


if __name__ == "__main__":
    sys.exit(main())
