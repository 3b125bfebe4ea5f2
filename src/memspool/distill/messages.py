"""A slice's text, read back as the messages of a conversation.

The drainer stores each kept record as one entry that starts with its label
(``[user]``, ``[assistant]``, ``[thinking]``, ``[tool Bash] ...``); entries
are joined by blank lines and an assistant entry may carry a tool line after
its text. Reading a slice back means finding those labels again: a line that
starts with a known label starts a message, any other line continues the
current one.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Final, Literal

__all__ = ["Message", "Role", "messages"]

Role = Literal["user", "assistant", "thinking", "tool", "summary", "other"]

#: The labels the drainer writes (drainer/keep.py), and the role each stands for.
_ROLES: Final[dict[str, Role]] = {
    "user": "user", "subagent user": "user",
    "assistant": "assistant", "subagent assistant": "assistant",
    "thinking": "thinking",
    "compact summary": "summary", "summary": "summary",
    "precompact instructions": "other", "compact boundary": "other",
    "tool error": "tool", "image": "other", "document": "other",
}
_LABEL: Final = re.compile(
    r"^\[(?P<label>subagent user|subagent assistant|user|assistant|thinking|compact summary"
    r"|summary|precompact instructions|compact boundary|tool error|image|document"
    r"|tool [^\]\n]{1,60})\](?: |$)"
)


@dataclasses.dataclass
class Message:
    role: Role
    text: str


def messages(text: str) -> list[Message]:
    """The messages of a slice, in order; text before any label is ``other``."""
    found: list[Message] = []
    lines: list[str] = []
    role: Role = "other"
    for line in text.split("\n"):
        match = _LABEL.match(line)
        if match is None:
            lines.append(line)
            continue
        _close(found, role, lines)
        label = match.group("label")
        role = "tool" if label.startswith("tool ") else _ROLES[label]
        lines = [line[match.end():]]
    _close(found, role, lines)
    return found


def _close(found: list[Message], role: Role, lines: list[str]) -> None:
    body = "\n".join(lines).strip()
    if body:
        found.append(Message(role, body))

