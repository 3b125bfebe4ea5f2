"""How far two readers of the type definitions agree with the session labels' types.

    python bench/type_agreement.py [--readers tests/data/type_readers.jsonl] [--kept DIR]

150 planted facts of the tuning sessions (tests/data/sessions/tune_*.jsonl)
were typed by two readers who had the six types' definitions of
tests/data/sessions/BRIEF.md, the message holding each fact and its anchors,
and not the labels (tests/data/README.md). Prints each reader's agreement
with the labels and with the other reader, and the commonest ways they part
from the labels: what a careful reader of the same definitions reaches, beside
the claim model's type accuracy that bench/archivist_sessions.py measures.
With ``--kept DIR`` (the folder ``bench/archivist_sessions.py --split tune
--keep DIR`` left), the claim model's types too: for each fact a current
memory of its project holds (every anchor), whether one such memory has the
labels' type, and each reader's.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from _labelled import holds

from memspool.service import Service

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
READERS = ("reader_a", "reader_b")


def planted(sessions: Path) -> dict[str, dict[str, Any]]:
    """Each planted fact of the tuning files as first said, with its project, by id."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(sessions.glob("tune_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            session = json.loads(line)
            for fact in session["facts"]:
                found.setdefault(fact["id"], {**fact, "project": session["project"]})
    return found


def model_types(kept: Path, facts: list[dict[str, Any]]) -> list[set[str] | None]:
    """The types of the current memories of each fact's project that hold all its
    anchors, in a store the sessions bench kept (``None``: no memory holds it)."""
    with Service(kept / "tune" / "home") as service:
        memories = [row.as_dict() for row in service.memories(limit=1_000_000)]
    current = [memory for memory in memories if memory["layer"] in ("buffer", "canonical")]
    found: list[set[str] | None] = []
    for fact in facts:
        # A project is its folder in the kept store: matched by its name.
        types = {str(memory["type"]) for memory in current
                 if memory["project_name"] == fact["project"]
                 and holds(memory, fact["anchors"])}
        found.append(types or None)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readers", type=Path, default=DATA / "type_readers.jsonl")
    parser.add_argument("--sessions", type=Path, default=DATA / "sessions")
    parser.add_argument("--kept", type=Path, metavar="DIR",
                        help="a store kept by archivist_sessions.py --split tune --keep DIR")
    args = parser.parse_args(argv)
    facts = planted(args.sessions)
    labelled = {fact_id: str(fact["type"]) for fact_id, fact in facts.items()}
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
    if args.kept is not None:
        typed = model_types(args.kept, [facts[row["fact"]] for row in rows])
        held = [(row, types) for row, types in zip(rows, typed, strict=True) if types]
        print(f"the claim model: {len(held)} of the {len(rows)} facts held by a memory")
        columns = {"the labels": [labelled[row["fact"]] for row, _ in held],
                   **{reader: [row[reader] for row, _ in held] for reader in READERS}}
        for name, read in columns.items():
            same = sum(kind in types for kind, (_, types) in zip(read, held, strict=True))
            print(f"    agrees with {name} on {same}/{len(held)} ({same / len(held):.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
