"""Near-duplicate detection quality on the labelled pairs, next to the trigram baseline.

    python bench/dedup_quality.py [--pairs tests/data/dedup_pairs.jsonl] [--show]

Then relate() on tests/data/value_pairs.jsonl: an older memory and a later
text that gives it a new value (which must supersede it), states another
subject's value (which must not), or restates it; split ``tune`` and
``heldout`` (every third pair of each kind, never tuned on).

Prints, for memspool's method and for character-trigram Jaccard >= 0.7 on the
same pairs, the two error rates that matter: rewordings missed (a re-capture
stored twice) and different facts merged (a fact lost into another). Figures
are given for the whole set and for each split, in the order they were written:

    tune       the pairs the method was first tuned on
    holdout    written after that tuning
    review     a reviewer's pairs that it merged; the word-order vetoes were built on them
    holdout-2  written before those vetoes, never tuned on
    holdout-3  written after the method was frozen, measured once
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from _labelled import load_splits

from memspool.distill.similarity import (
    TRIGRAM_BASELINE,
    is_near_duplicate,
    relate,
    trigram_jaccard,
)

PAIRS = Path(__file__).resolve().parent.parent / "tests" / "data" / "dedup_pairs.jsonl"
VALUE_PAIRS = PAIRS.with_name("value_pairs.jsonl")
Method = Callable[[str, str], bool]


def _trigram(a: str, b: str) -> bool:
    return trigram_jaccard(a, b) >= TRIGRAM_BASELINE


def _agrees(a: str, b: str) -> bool:
    return relate(a, b).agrees


METHODS: dict[str, Method] = {
    "memspool (terms + vetoes)": is_near_duplicate,
    "relate: same or more": _agrees,
    f"trigram Jaccard >= {TRIGRAM_BASELINE}": _trigram,
}


def _rate(part: int, whole: int) -> str:
    return f"{part:>2}/{whole:<2} {100 * part / whole:5.1f}%" if whole else "  -        "


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--show", action="store_true", help="list every pair a method gets wrong")
    args = parser.parse_args(argv)
    pairs, splits = load_splits(args.pairs)
    rewordings = sum(1 for p in pairs if p["same"])
    print(
        f"{len(pairs)} labelled pairs from {args.pairs.name}: "
        f"{rewordings} rewordings, {len(pairs) - rewordings} different facts"
    )
    print()
    print(f"{'method':<28} {'pairs':<9} {'rewordings missed':<19} {'different facts merged'}")
    for name, method in METHODS.items():
        for split, subset in splits.items():
            same = [p for p in subset if p["same"]]
            different = [p for p in subset if not p["same"]]
            missed = [p for p in same if not method(p["a"], p["b"])]
            merged = [p for p in different if method(p["a"], p["b"])]
            print(
                f"{name:<28} {split:<9} {_rate(len(missed), len(same)):<19} "
                f"{_rate(len(merged), len(different))}"
            )
            if args.show and split == "all":
                for pair in missed + merged:
                    kind = "missed" if pair["same"] else "merged"
                    print(f"    {kind}: {pair['a']!r} | {pair['b']!r}")
    # What reconciliation would do with a different fact from another session: a
    # new value or a contradiction supersedes it, so those are the dangerous verdicts.
    print()
    print(f"{'relate on different facts':<28} {'pairs':<9} {'would supersede'}")
    for split, subset in splits.items():
        different = [p for p in subset if not p["same"]]
        replaced = [p for p in different if relate(p["a"], p["b"]).replaces]
        print(f"{'':<28} {split:<9} {_rate(len(replaced), len(different))}")
        if args.show and split == "all":
            for pair in replaced:
                print(f"    {relate(pair['a'], pair['b']).relation}: {pair['a']!r} | {pair['b']!r}")
    _value_pairs(args.show)
    return 0


def _value_pairs(show: bool) -> None:
    """relate() on changed values, other subjects' values and restatements."""
    rows = [json.loads(line) for line in VALUE_PAIRS.read_text(encoding="utf-8").splitlines()
            if line]
    right = {"new-value": lambda v: v.replaces, "different": lambda v: v.relation == "different",
             "same": lambda v: v.agrees}
    print()
    print(f"{'relate on value pairs':<28} {'split':<9} {'verdict right'}")
    for kind, wanted in (("new-value", "supersedes"), ("different", "stays apart"),
                         ("same", "corroborates")):
        for split in ("tune", "heldout"):
            subset = [r for r in rows if r["relation"] == kind and r["split"] == split]
            verdicts = [relate(r["old"], r["new"]) for r in subset]
            good = sum(1 for v in verdicts if right[kind](v))
            print(f"{kind + ': ' + wanted:<28} {split:<9} {_rate(good, len(subset))}")
            if show and split == "tune":
                for r, v in zip(subset, verdicts, strict=True):
                    if not right[kind](v):
                        print(f"    {v.relation}: {r['old']!r} | {r['new']!r}")


if __name__ == "__main__":
    sys.exit(main())
