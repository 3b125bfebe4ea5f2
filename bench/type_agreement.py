"""How far two readers of the type definitions agree with the session labels' types.

    python bench/type_agreement.py [--readers tests/data/type_readers.jsonl]

150 planted facts of the tuning sessions (tests/data/sessions/tune_*.jsonl)
were typed by two readers who had the six types' definitions of
tests/data/sessions/BRIEF.md, the message holding each fact and its anchors,
and not the labels (tests/data/README.md). Prints each reader's agreement
with the labels and with the other reader, and the commonest ways they part
from the labels: what a careful reader of the same definitions reaches, beside
the claim model's type accuracy that bench/archivist_sessions.py measures.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
READERS = ("reader_a", "reader_b")


def labels(sessions: Path) -> dict[str, str]:
    """Each planted fact's labelled type, by its id (tuning files only)."""
    found: dict[str, str] = {}
    for path in sorted(sessions.glob("tune_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for fact in json.loads(line)["facts"]:
                found.setdefault(fact["id"], fact["type"])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readers", type=Path, default=DATA / "type_readers.jsonl")
    parser.add_argument("--sessions", type=Path, default=DATA / "sessions")
    args = parser.parse_args(argv)
    labelled = labels(args.sessions)
    rows = [json.loads(line) for line in
            args.readers.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(f"{len(rows)} facts")
    for reader in READERS:
        same = sum(row[reader] == labelled[row["fact"]] for row in rows)
        print(f"{reader}: agrees with the labels on {same}/{len(rows)} "
              f"({same / len(rows):.1%})")
        parted = Counter((labelled[row["fact"]], row[reader]) for row in rows
                         if row[reader] != labelled[row["fact"]])
        for (label, read), count in parted.most_common(3):
            print(f"    labelled {label}, read as {read}: {count}")
    both = sum(row[READERS[0]] == row[READERS[1]] for row in rows)
    print(f"the two readers agree on {both}/{len(rows)} ({both / len(rows):.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
