"""Projects: each one's identity (its repository) and the readable name kept beside it.

Memories, slices, cursors and context blocks are filed under a project's
identity (``memspool.base.project``): the normalised remote URL of its repository
(``github.com/acme/api``), else the path of its git root or folder. The
``projects`` table keeps, for each identity, a readable name (``api``), where
its work tree was last seen and its remote. Output shows the name; where a
name is shared by several projects, ``--project`` asks for the identity.

``migrate_to_identities`` moves a store written when projects were named
by their folder's basename onto identities (docs/architecture.md#projects).
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import orjson

from memspool.base.controls import CONTROLS
from memspool.base.errors import PayloadError
from memspool.base.project import identify, readable_name
from memspool.config import Config
from memspool.untrusted import shown

__all__ = [
    "ProjectRow", "known_as", "migrate_to_identities", "names", "remember", "resolve",
    "unprintable",
]

#: A transcript's first records are read for its ``cwd``, up to these limits.
PEEK_LINES: Final = 64
PEEK_LINE_BYTES: Final = 1024 * 1024
#: Keys are at most this long (``memspool.distill.keys``).
KEY_CHARS: Final = 64

ProjectRow = tuple[str, str, str | None, str | None]

#: The control characters (Unicode's Cc: C0, DEL, C1), none of which a project's name
#: holds: a name from a folder has each as U+FFFD (base.project), one a person gives
#: is refused with them (:func:`unprintable`).
_CONTROL: Final = re.compile(f"[{CONTROLS}]")


def remember(conn: sqlite3.Connection, identity: str, name: str | None = None,  # noqa: PLR0913 - a project row's columns
             root: str | None = None, remote: str | None = None, *,
             at: float | None = None) -> None:
    """Record (or refresh) a project: its readable name, where it was seen, its remote."""
    conn.execute(
        "INSERT INTO projects (id, name, root, remote, seen_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET name = excluded.name,"
        " root = coalesce(excluded.root, root), remote = coalesce(excluded.remote, remote),"
        " seen_at = excluded.seen_at",
        (identity, name or readable_name(identity), root, remote,
         time.time() if at is None else at))


def remember_folder(conn: sqlite3.Connection, cwd: object) -> str:
    """Identify the project of ``cwd``, record it, and return its identity."""
    identity, name, root, remote = identify(cwd)
    remember(conn, identity, name, root, remote)
    return identity


def names(conn: sqlite3.Connection, identities: list[str] | set[str]) -> dict[str, str]:
    """``{identity: readable name}`` for the identities given (the identity's last part
    where the project is not recorded)."""
    wanted = sorted(set(identities))
    found = {identity: readable_name(identity) for identity in wanted}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        marks = ", ".join("?" * len(chunk))
        for row in conn.execute(
                f"SELECT id, name FROM projects WHERE id IN ({marks})", chunk):  # noqa: S608
            found[row[0]] = row[1]
    return found


def known_as(conn: sqlite3.Connection, text: str) -> list[str]:
    """The projects this store knows as ``text``: the one whose identity it is (a
    project recorded, or one with memories), else those with it as readable name."""
    known = conn.execute("SELECT 1 FROM projects WHERE id = ?", (text,)).fetchone()
    if known is not None or conn.execute(
            "SELECT 1 FROM memories WHERE project = ? LIMIT 1", (text,)).fetchone():
        return [text]
    return [str(row[0]) for row in conn.execute(
        "SELECT id FROM projects WHERE name = ? ORDER BY id", (text,))]


def unprintable(text: str) -> str | None:
    """Why ``text``, a project named from outside (``--project``, ``project=``, an
    import's line), is no project's name: it holds a control character (said as an
    escape, ``\\x1b``); ``None`` when it holds none. (The path of a folder that
    exists is no name: :func:`resolve` identifies the folder.)

    Refused at every door, not cleaned: a name cleaned one way when memory is filed
    and another when it is looked for (ESC b removed as an escape sequence, a tab
    made a blank) names a project no one typed, and the same value given again
    finds nothing."""
    found = _CONTROL.search(text)
    if found is None:
        return None
    return (f"the project name {shown(text)} holds a control character "
            f"({found.group()!r}), which no project's name holds")


def resolve(conn: sqlite3.Connection, text: str, cwd: Path | None = None, *,
            new_name: Callable[[str], str] = str) -> str:
    """The identity ``--project TEXT`` means.

    When the project of ``cwd`` (the current folder) is named ``TEXT``, that
    project: `--project api` in a clone of ``github.com/acme/api`` is that
    repository, even before it has a memory and even where a project known
    only as ``api`` exists too. Else an identity the store knows, as is; else
    a readable name that one project has; else an existing folder's path,
    identified.
    A name several projects share is refused with their identities, and so is a
    name or identity holding a control character (:func:`unprintable`). Anything
    else is a new project named ``new_name(TEXT)`` (the caller's cleaning of a
    name from outside; a folder's identity is cleaned by ``identify``).
    """
    refused = unprintable(text)
    text = text.strip()
    # A folder's path may hold one (a folder can be named so): the folder is
    # identified as a hook identifies it, each control shown as U+FFFD.
    if refused is not None and not _names_a_folder(text):
        raise PayloadError(f"{refused[0].upper()}{refused[1:]}: give the name without it.")
    if not text:
        raise PayloadError("The project is empty; give a project's name or identity.")
    if cwd is not None and "/" not in text and os.sep not in text:
        # Inside a repository its own name means it, even where a project known
        # only by that name exists too (`capture --project api` made one once):
        # an agent in a clone of acme/api passes "api" for the repository.
        here, name = identify(str(cwd))[:2]
        if name == text:
            return here
    named = known_as(conn, text)
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        listed = ", ".join(named)
        raise PayloadError(
            f"The name {text!r} belongs to {len(named)} projects ({listed}); pass the one "
            f"you mean by its identity, for example --project {named[0]}.")
    if _names_a_folder(text):
        return identify(str(Path(text).expanduser().absolute()))[0]
    return new_name(text) or text


def _names_a_folder(text: str) -> bool:
    """Whether ``--project TEXT`` is the path of a folder that exists."""
    return os.sep in text and Path(text).expanduser().is_dir()


def _transcript_cwd(path: str, roots: tuple[Path, ...]) -> str | None:
    """The first ``cwd`` recorded in a transcript under the roots, else ``None``."""
    try:
        resolved = Path(path).resolve()
        if not any(resolved.is_relative_to(root.resolve()) for root in roots):
            return None
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except (OSError, RuntimeError, ValueError):
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        for _ in range(PEEK_LINES):
            line = handle.readline(PEEK_LINE_BYTES)
            if not line.endswith(b"\n"):
                return None
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            value = record.get("cwd") if isinstance(record, dict) else None
            if isinstance(value, str) and value:
                return value
    return None


def _identities_of_transcripts(conn: sqlite3.Connection, roots: tuple[Path, ...],
                               ) -> tuple[dict[str, ProjectRow], dict[str, set[str]]]:
    """``{transcript path: project}`` for every transcript whose cwd can be read, and
    ``{old name: identities}`` those transcripts map each old name to."""
    old_names: dict[str, str] = {}
    for path, project in conn.execute(
            "SELECT path, project FROM cursors UNION "
            "SELECT DISTINCT transcript_path, project FROM slices"):
        old_names.setdefault(str(path), str(project))
    by_cwd: dict[str, ProjectRow] = {}
    by_path: dict[str, ProjectRow] = {}
    per_name: dict[str, set[str]] = {}
    for path, old in old_names.items():
        cwd = _transcript_cwd(path, roots)
        if cwd is None:
            continue
        if cwd not in by_cwd:
            by_cwd[cwd] = identify(cwd)
        found = by_cwd[cwd]
        # A folder gone since (no root) is still identified by its path, but
        # only when its last name agrees with the name the store used.
        if found[2] is None and Path(found[0]).name != old:
            continue
        by_path[path] = found
        per_name.setdefault(old, set()).add(found[0])
    return by_path, per_name


def _joined(memories: list[Any], moves: list[tuple[int, str, str]]) -> set[str]:
    """The identities that take the memories of two projects or more (two clones'
    folders): they may now hold one fact twice, so their moved memories count as
    changed and the next major pass compares them and merges what says the same."""
    olds = {int(memory_id): str(old) for memory_id, old, _ in memories}
    moved = {memory_id: target for memory_id, target, _ in moves}
    sources: dict[str, set[str]] = {}
    for memory_id, old in olds.items():
        sources.setdefault(moved.get(memory_id, old), set()).add(old)
    return {target for target, names in sources.items() if len(names) > 1}


def migrate_to_identities(conn: sqlite3.Connection, config: Config) -> None:
    """Move every row filed under a folder's basename to its project's identity.

    Runs once, inside the migration's transaction. A transcript's project is
    the identity of the ``cwd`` it recorded (read again from the transcript,
    under the transcript roots); its cursor and slices move there. A memory
    goes where the slices it was made from went (the most frequent, should
    they differ); a memory with no such slice (captured, saved, imported)
    goes to the one identity its old name maps to. An old name that maps to
    none, or to several, stays as it was: ``memspool projects`` lists it,
    and ``--project`` still finds it. Forget tombstones follow their name to
    every identity it maps to.
    """
    by_path, per_name = _identities_of_transcripts(conn, config.transcript_roots)
    rows = {identity: (identity, name, root, remote)
            for identity, name, root, remote in by_path.values()}
    for path, (identity, _, _, _) in by_path.items():
        conn.execute("UPDATE cursors SET project = ? WHERE path = ?", (identity, path))
        conn.execute("UPDATE slices SET project = ? WHERE transcript_path = ?", (identity, path))
    single = {name: next(iter(ids)) for name, ids in per_name.items() if len(ids) == 1}
    moves: list[tuple[int, str, str]] = []
    memories = conn.execute("SELECT id, project, key FROM memories").fetchall()
    for memory_id, old, key in memories:
        sources = Counter(row[0] for row in conn.execute(
            "SELECT s.project FROM provenance p JOIN slices s ON s.id = p.slice_id"
            " WHERE p.memory_id = ?", (memory_id,)) if row[0] in rows)
        target = sources.most_common(1)[0][0] if sources else single.get(old)
        if target is not None and target != old:
            moves.append((memory_id, target, key))
    joined = _joined(memories, moves)
    now = time.time()
    for memory_id, target, key in moves:
        taken = conn.execute("SELECT 1 FROM memories WHERE project = ? AND key = ?",
                             (target, key)).fetchone()
        # Two old projects (two clones' folders) now are one: the second
        # memory under a key keeps a key of its own; the major pass merges
        # them if they say the same.
        suffix = f"-m{memory_id}"
        new_key = key if taken is None else key[: KEY_CHARS - len(suffix)] + suffix
        conn.execute("UPDATE memories SET project = ?, key = ?, updated_at = CASE WHEN ?"
                     " THEN max(updated_at, ?) ELSE updated_at END WHERE id = ?",
                     (target, new_key, target in joined, now, memory_id))
    if moves:
        conn.execute("UPDATE memory_terms SET project = (SELECT m.project FROM memories m"
                     " WHERE m.id = memory_terms.memory_id)")
        conn.execute("DELETE FROM term_counts")
        conn.execute("INSERT INTO term_counts (project, term, memories)"
                     " SELECT project, term, count(*) FROM memory_terms GROUP BY project, term")
        conn.execute("UPDATE memory_vectors SET project = (SELECT m.project FROM memories m"
                     " WHERE m.id = memory_vectors.memory_id)")
    for name, identities in per_name.items():
        for identity in identities:
            conn.execute("INSERT OR IGNORE INTO forgotten (project, key, text_hash, at)"
                         " SELECT ?, key, text_hash, at FROM forgotten WHERE project = ?",
                         (identity, name))
    for name, identity in single.items():
        conn.execute("UPDATE OR IGNORE context_blocks SET project = ? WHERE project = ?",
                     (identity, name))
    conn.execute("INSERT OR IGNORE INTO context_dirty (project)"
                 " SELECT DISTINCT project FROM memories")
    for identity, name, root, remote in rows.values():
        remember(conn, identity, name, root, remote, at=now)
    for (old,) in conn.execute("SELECT DISTINCT project FROM memories").fetchall():
        conn.execute("INSERT OR IGNORE INTO projects (id, name, root, remote, seen_at)"
                     " VALUES (?, ?, NULL, NULL, ?)", (old, readable_name(old), now))
