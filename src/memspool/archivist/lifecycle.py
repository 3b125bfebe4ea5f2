"""The documented rules of a memory's life: confidence, promotion, decay.

Confidence follows the number of distinct sessions that saved the same
fact: ``1 - 0.5 ** sessions`` (0.5 for one session, 0.75 for two, 0.875 for
three, ...), so each corroborating session halves the remaining doubt. A
memory that was superseded keeps the confidence it had.

A ``buffer`` memory becomes ``canonical`` when two or more sessions
corroborate it, or when ``promote_after_days`` pass after its last change
without a contradiction (a contradiction supersedes one side, which leaves
recall).

Importance decays with the time since the memory was last recalled (or,
never recalled, last changed): ``importance * 0.5 ** (days / half_life)``.
Rather than rewriting every row on every pass, the pass stores the moment
the decayed importance will cross ``archive_floor``; the memory is archived
when that moment has come. A recall resets the clock.
"""

from __future__ import annotations

import math
from typing import Final

from memspool.config import Config
from memspool.store.memories import Memory

__all__ = ["CANONICAL_SESSIONS", "archive_at", "confidence", "importance_now", "promote_at"]

#: Distinct sessions that make a memory canonical at once.
CANONICAL_SESSIONS: Final = 2
_DAY: Final = 86400.0


def confidence(sessions: int) -> float:
    """``1 - 0.5 ** sessions``: each corroborating session halves the doubt."""
    return round(1.0 - 0.5 ** max(1, sessions), 6)


def _touched(memory: Memory) -> float:
    return max(memory.updated_at, memory.recalled_at or 0.0)


def importance_now(memory: Memory, config: Config, now: float) -> float:
    """The decayed importance at ``now``."""
    days = max(0.0, now - _touched(memory)) / _DAY
    return float(memory.importance * 0.5 ** (days / config.importance_half_life_days))


def archive_at(memory: Memory, config: Config) -> float:
    """When the decayed importance crosses ``archive_floor`` (epoch seconds)."""
    if memory.importance <= config.archive_floor:
        return _touched(memory)
    halvings = math.log2(memory.importance / config.archive_floor)
    return _touched(memory) + halvings * config.importance_half_life_days * _DAY


def promote_at(memory: Memory, config: Config) -> float:
    """When a provisional memory that stayed unchallenged becomes canonical."""
    return memory.updated_at + config.promote_after_days * _DAY
