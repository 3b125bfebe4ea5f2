"""The closed sets of names a memory row holds: its type, its layer, what a save did."""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = ["ACTIONS", "LAYERS", "NOTE_TYPES", "Action", "Layer", "NoteType"]

#: What a memory is about: a cause, a warning, a choice, a convention, the
#: user's own rule or preference, a command or learning that worked;
#: ``passive`` is given only to learnings items.
NoteType = Literal["root-cause", "pitfall", "decision", "pattern", "preference", "takeaway",
                   "passive"]
NOTE_TYPES: Final[tuple[NoteType, ...]] = get_args(NoteType)

#: Where a memory stands: ``buffer`` (provisional) -> ``canonical``;
#: ``superseded`` and ``archived`` leave recall but keep their history.
Layer = Literal["buffer", "canonical", "superseded", "archived"]
LAYERS: Final[tuple[Layer, ...]] = get_args(Layer)

#: What one save did to a memory (``skipped`` is reported, never stored).
Action = Literal["created", "updated", "merged", "skipped"]
ACTIONS: Final[tuple[Action, ...]] = get_args(Action)
