"""A second opinion for the transcript rules: how much a message reads like knowledge.

Naive Bayes over word features, with counts taken from labelled assistant
messages (``scripts/train_durable_model.py`` writes ``durable_model.json``
beside this file from the tuning splits only). The rules decide which blocks
of a message are durable; this model vetoes a message whose wording, as a
whole, reads like running commentary. Both must agree, which favours
precision: a missed memory costs a re-discovery, a wrong one is read at every
session start.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from functools import cache
from importlib.resources import files
from typing import Final

__all__ = ["THRESHOLD", "durable_probability", "features"]

#: Below this probability a message is commentary whatever its markers say.
#: The midpoint: the model's prior is the tuning data's balance of labels.
THRESHOLD: Final = 0.5
#: Words counted from the opening of a message, where its framing is.
OPENING_WORDS: Final = 12
_WORD: Final = re.compile(r"[a-z][a-z'-]+")
#: Add-half smoothing: a feature unseen in one class is unlikely there, not impossible.
_SMOOTHING: Final = 0.5
_MAX_LOG_ODDS: Final = 30.0


def features(text: str) -> set[str]:
    """The opening words, every word pair, and the first three words (marked)."""
    words = _WORD.findall(text.lower())
    found = set(words[:OPENING_WORDS])
    found.update(f"B:{a}_{b}" for a, b in itertools.pairwise(words))
    found.update(f"S:{word}" for word in words[:3])
    return found


@cache
def _model() -> tuple[int, int, dict[str, tuple[int, int]]]:
    raw = json.loads(files("memspool.distill").joinpath("durable_model.json").read_text())
    table = {name: (int(pair[0]), int(pair[1])) for name, pair in raw["features"].items()}
    return int(raw["durable"]), int(raw["ephemeral"]), table


def durable_probability(text: str) -> float:
    """The model's probability that ``text`` is durable knowledge, 0 to 1."""
    durable, ephemeral, table = _model()
    log_odds = math.log(durable / ephemeral)
    for name in features(text):
        found = table.get(name)
        if found is None:
            continue
        with_durable = (found[0] + _SMOOTHING) / (durable + 1)
        with_ephemeral = (found[1] + _SMOOTHING) / (ephemeral + 1)
        log_odds += math.log(with_durable / with_ephemeral)
    log_odds = max(-_MAX_LOG_ODDS, min(_MAX_LOG_ODDS, log_odds))
    return 1.0 / (1.0 + math.exp(-log_odds))
