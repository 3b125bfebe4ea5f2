"""Loading the labelled JSONL sets the quality benches score against."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def load_splits(path: Path) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Every row of ``path``, and the rows grouped as ``{"all": rows, <split>: [...]}``.

    A row without a ``split`` counts in ``all`` only.
    """
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    splits: dict[str, list[dict[str, Any]]] = {"all": rows}
    for row in rows:
        split = row.get("split")
        if split and split != "all":
            splits.setdefault(split, []).append(row)
    return rows, splits


def holds(memory: dict[str, Any], anchors: list[str]) -> bool:
    """Does ``memory`` (a row of the store, as a dict) hold every anchor of a planted
    fact, in its summary or body, whatever the case?"""
    text = f"{memory['summary']}\n{memory['body']}".lower()
    return all(anchor.lower() in text for anchor in anchors)
