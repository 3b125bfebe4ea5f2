"""The context block: a project's most useful memories, as compact markdown.

Rendered when a project's memory changes (the store's triggers mark it in
``context_dirty``; every writer calls :func:`render_dirty` after writing),
stored in ``context_blocks``, and read as one row by the SessionStart hook,
so its cost does not grow with the store. The block states facts, never
instructions: each line is a memory's summary with its id, grouped by type,
canonical and high-confidence memories first. It stays under a hard limit
(``context_max_chars``, 8,000 by default: Claude Code replaces hook output
over 10,000 characters with a short preview).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Final

from memspool.store import transaction

__all__ = ["render", "render_dirty", "stored"]

#: Type headings, in the order a new session most needs them.
SECTIONS: Final = (
    ("pitfall", "Pitfalls"), ("root-cause", "Root causes"), ("decision", "Decisions"),
    ("pattern", "Conventions and patterns"), ("takeaway", "Takeaways"),
    ("passive", "Learnings"),
)
#: A summary longer than this is cut in the block (the full text is one `show` away).
LINE_CHARS: Final = 220
#: Memories read per project, best first; more never fit in the limit.
READ_LIMIT: Final = 400


def render(conn: sqlite3.Connection, project: str, max_chars: int) -> tuple[str, int]:
    """The block for ``project`` and how many memories it lists ("" and 0 for none)."""
    rows = conn.execute(
        "SELECT id, type, layer, summary, sessions FROM memories"
        " WHERE project = ? AND layer IN ('buffer', 'canonical')"
        " ORDER BY layer = 'canonical' DESC, confidence DESC, importance DESC,"
        " updated_at DESC, id DESC LIMIT ?",
        (project, READ_LIMIT),
    ).fetchall()
    if not rows:
        return "", 0
    header = (f"## memspool: what is known about the project {project}\n"
              f"Memories from earlier sessions, most established first. "
              f"`memspool memories show ID` prints one in full.\n")
    budget = max_chars - len(header)
    chosen: dict[str, list[str]] = {}
    listed = 0
    for row in rows:
        summary = " ".join(str(row["summary"]).split())
        if len(summary) > LINE_CHARS:
            summary = summary[: LINE_CHARS - 1] + "…"
        standing = "established" if row["layer"] == "canonical" else "provisional"
        line = f"- #{row['id']} {summary} ({standing}, {row['sessions']} session(s))\n"
        heading = 0 if row["type"] in chosen else len(_title(row["type"])) + 6
        if len(line) + heading > budget:
            continue
        budget -= len(line) + heading
        chosen.setdefault(row["type"], []).append(line)
        listed += 1
    parts = [header]
    for kind, title in SECTIONS:
        if kind in chosen:
            parts.append(f"\n### {title}\n")
            parts.extend(chosen[kind])
    return "".join(parts), listed


def _title(kind: str) -> str:
    return dict(SECTIONS).get(kind, kind)


def render_dirty(conn: sqlite3.Connection, max_chars: int) -> list[str]:
    """Render and store the block of every project whose memory changed; returns them."""
    with transaction(conn):
        projects = [row[0] for row in conn.execute("SELECT project FROM context_dirty")]
        for project in projects:
            text, listed = render(conn, project, max_chars)
            if listed:
                conn.execute(
                    "INSERT INTO context_blocks (project, text, memories, rendered_at)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT (project) DO UPDATE SET"
                    " text = excluded.text, memories = excluded.memories,"
                    " rendered_at = excluded.rendered_at",
                    (project, text, listed, time.time()))
            else:
                conn.execute("DELETE FROM context_blocks WHERE project = ?", (project,))
        conn.execute("DELETE FROM context_dirty")
    return projects


def stored(conn: sqlite3.Connection, project: str) -> str | None:
    """The stored block of ``project`` (what the SessionStart hook prints), if any."""
    row = conn.execute("SELECT text FROM context_blocks WHERE project = ?",
                       (project,)).fetchone()
    return None if row is None else str(row[0])
