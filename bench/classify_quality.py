"""Note classifier accuracy on the labelled notes, per split and per type.

    python bench/classify_quality.py [--notes tests/data/classify_notes.jsonl] [--show]

The "tune" notes were written first and the markers tuned on them; "dev" notes
were written next and informed one more round of general fixes; "holdout"
notes were written after the markers were frozen, so that row is the honest one.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from _labelled import load_splits

from memspool.distill.classify import classify

NOTES = Path(__file__).resolve().parent.parent / "tests" / "data" / "classify_notes.jsonl"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=Path, default=NOTES)
    parser.add_argument("--show", action="store_true", help="list every misclassified note")
    args = parser.parse_args(argv)
    rows, splits = load_splits(args.notes)
    print(f"{'split':<8} {'notes':>5} {'right':>5} {'accuracy':>8}")
    for split, subset in splits.items():
        right = sum(classify(r["text"]) == r["type"] for r in subset)
        print(f"{split:<8} {len(subset):>5} {right:>5} {right / len(subset):>8.3f}")
    confusion = Counter(
        (r["type"], classify(r["text"])) for r in rows if classify(r["text"]) != r["type"]
    )
    if confusion:
        print("\nconfusions (labelled -> classified):")
        for (labelled, got), n in confusion.most_common():
            print(f"  {labelled:>10} -> {got:<10} {n}")
    if args.show:
        for r in rows:
            if classify(r["text"]) != r["type"]:
                print(f"  [{r.get('split')}] {r['type']} -> {classify(r['text'])}: {r['text']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
