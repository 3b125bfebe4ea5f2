"""Rebuild the word model the transcript rules consult (src/memspool/distill/durable_model.json).

    python scripts/train_durable_model.py

A naive Bayes count table over the words of labelled assistant messages:
the opening words, every word pair, and the first three words. Only the
splits written to tune the rules ("tuned" to "tuned4") are read;
"heldout" and "heldout2" are never used, so their figures in
bench/archivist_quality.py stay honest. A
feature seen once is left out (it says more about one message than about a
kind of message), which also keeps the file small. The output is sorted, so
the same data always gives the same file.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from memspool.distill.durable_words import features  # noqa: E402

DATA = ROOT / "tests" / "data" / "archivist_messages.jsonl"
OUT = ROOT / "src" / "memspool" / "distill" / "durable_model.json"
TRAINING_SPLITS = ("tuned", "tuned2", "tuned3", "tuned4")
MIN_COUNT = 2


def main() -> int:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
    rows = [r for r in rows if r["split"] in TRAINING_SPLITS]
    totals: Counter[str] = Counter()
    counts: dict[str, Counter[str]] = {"durable": Counter(), "ephemeral": Counter()}
    for row in rows:
        totals[row["label"]] += 1
        counts[row["label"]].update(features(row["text"]))
    kept = {
        name: [counts["durable"][name], counts["ephemeral"][name]]
        for name in sorted(set(counts["durable"]) | set(counts["ephemeral"]))
        if counts["durable"][name] + counts["ephemeral"][name] >= MIN_COUNT
    }
    model = {"trained_on": list(TRAINING_SPLITS), "durable": totals["durable"],
             "ephemeral": totals["ephemeral"], "features": kept}
    OUT.write_text(json.dumps(model, sort_keys=True, separators=(",", ":")) + "\n",
                   encoding="utf-8")
    print(f"{len(rows)} messages, {len(kept)} features -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
