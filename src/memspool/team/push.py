"""Pushing the outbox: local changes become the server's, resolved by one set of rules.

A batch is read from the outbox (grouped by memory), redacted again, and
written to the server in one transaction that holds the project's lock, so
two machines' batches of one project never interleave. Every write is
idempotent: a batch the server committed but this machine never heard back
about (a kill, a lost connection) is sent again and changes nothing.

The rules, for a change based on revision ``base`` of a memory:

- **new memory, key free**: it is created (revision 1).
- **new memory, key held by a live memory** (two people learned the same
  subject before either synced): the same fact corroborates the one already
  there (this memory's id becomes an alias of it, its saves count as sessions
  of it); another value supersedes the other, or is superseded by it:
  the newer one, by when it was said, stays live.
- **known memory, revision still ``base``**: the change is applied (revision
  + 1), the text it replaces kept in the server's history.
- **known memory changed since ``base``** (a concurrent edit): the newer
  change wins by the same rule, and the losing text is kept in history, never
  silently dropped; equal content is no conflict (a retried push).
- **forget** turns the memory into a tombstone: no key, summary, body or
  history is left, only who forgot it and when. A forget wins over any edit.
- **merge** (two memories of one machine folded into one) marks the absorbed
  memory ``merged`` into the survivor; the receivers fold it too.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from memspool.base.errors import TeamError
from memspool.distill.keys import note_key, text_hash
from memspool.redact import redact
from memspool.store import memories as memory_rows
from memspool.team.local import RemoteMemory, apply_memory, local_id, quiet, resolve_links

if TYPE_CHECKING:
    import psycopg

__all__ = ["Item", "Outcome", "PushReport", "push_project"]

#: Outbox rows read per batch (one server transaction each).
BATCH_ROWS: Final = 2000
_SERVER_COLUMNS: Final = ("gid::text, key, type, summary, body, status, superseded_by::text,"
                          " revision, created_at, changed_at, created_by::text, created_on,"
                          " changed_by::text, changed_on")


@dataclasses.dataclass
class Item:
    """One memory's changes, as they go to the server."""

    gid: str
    op: str  # upsert | forget | merge
    base: int
    first_seq: int
    key: str = ""
    type: str = ""
    summary: str = ""
    body: str = ""
    status: str = "live"
    superseded_by: str | None = None
    created_at: float = 0.0
    changed_at: float = 0.0
    target: str | None = None

    def content(self) -> tuple[str, str, str, str, str, str | None]:
        return (self.key, self.type, self.summary, self.body, self.status, self.superseded_by)


@dataclasses.dataclass(frozen=True)
class Save:
    gid: str
    ref: str
    session: str
    source: str
    action: str
    at: float


@dataclasses.dataclass
class Outcome:
    gid: str
    final: str
    state: RemoteMemory | None
    conflict: bool = False


@dataclasses.dataclass
class PushReport:
    pushed: int = 0
    saves: int = 0
    conflicts: int = 0
    corroborated: int = 0
    batches: int = 0

    def add(self, other: PushReport) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


def _clean(text: str) -> str:
    """Redacted again at push, whatever the source of the text."""
    return redact(text)[0]


def _clean_key(key: str) -> str:
    cleaned = _clean(key)
    return key if cleaned == key else note_key(cleaned)


def read_batch(conn: sqlite3.Connection, project: str, machine: str, limit: int = BATCH_ROWS,
               ) -> tuple[list[Item], list[Save], int]:
    """The next outbox batch of ``project``: items by memory, their saves, and the last
    outbox seq read (0 when the outbox is empty)."""
    outbox = conn.execute(
        "SELECT seq, gid, kind, ref, target FROM team_outbox WHERE project = ?"
        " ORDER BY seq LIMIT ?", (project, limit)).fetchall()
    if not outbox:
        return [], [], 0
    last = int(outbox[-1]["seq"])
    first: dict[str, int] = {}
    targets: dict[str, str | None] = {}
    refs: list[int] = []
    for row in outbox:
        first.setdefault(row["gid"], int(row["seq"]))
        if row["kind"] == "merge":
            targets[row["gid"]] = row["target"]
        elif row["kind"] == "provenance" and row["ref"] is not None:
            refs.append(int(row["ref"]))
    saves: list[Save] = []
    for start in range(0, len(refs), 500):
        chunk = refs[start:start + 500]
        marks = ", ".join("?" * len(chunk))
        for p in conn.execute(
                f"SELECT p.id, t.gid, p.session, p.source, p.action, p.at FROM provenance p"  # noqa: S608
                f" JOIN team_memories t ON t.memory_id = p.memory_id WHERE p.id IN ({marks})"
                f" AND p.source NOT LIKE 'team:%'", chunk):
            saves.append(Save(p[1], f"{machine}:{p[0]}", _clean(p[2]), _clean(p[3]), p[4],
                              p[5]))
            first.setdefault(p[1], last + 1)
    items = [item for gid in sorted(first, key=first.__getitem__)
             if (item := _item(conn, gid, first[gid], targets.get(gid))) is not None]
    return items, saves, last


def _item(conn: sqlite3.Connection, gid: str, first_seq: int,
          target: str | None) -> Item | None:
    mapped = conn.execute("SELECT memory_id, revision, state FROM team_memories WHERE gid = ?",
                          (gid,)).fetchone()
    if mapped is None:
        return None
    base = int(mapped["revision"])
    if mapped["state"] == "forgotten":
        return Item(gid, "forget", base, first_seq, changed_at=time.time())
    if mapped["state"] == "merged":
        return Item(gid, "merge", base, first_seq, target=target, changed_at=time.time())
    memory = memory_rows.get(conn, int(mapped["memory_id"])) if mapped["memory_id"] else None
    if memory is None:
        return None
    superseded_by = None
    if memory.layer == "superseded" and memory.superseded_by is not None:
        found = conn.execute("SELECT gid FROM team_memories WHERE memory_id = ?",
                             (memory.superseded_by,)).fetchone()
        superseded_by = None if found is None else str(found[0])
    return Item(gid, "upsert", base, first_seq, key=_clean_key(memory.key), type=memory.type,
                summary=_clean(memory.summary), body=_clean(memory.body),
                status="superseded" if memory.layer == "superseded" else "live",
                superseded_by=superseded_by, created_at=memory.created_at,
                changed_at=memory.updated_at)


@dataclasses.dataclass
class _Row:
    """A server memory while a batch is being decided: its state (replaced, never
    changed in place) and what the batch did to it."""

    state: RemoteMemory
    new: bool = False
    dirty: bool = False
    touched: bool = False


class _Batch:
    """Decides one batch against the server's rows and collects the writes."""

    def __init__(self, pg: psycopg.Connection[Any], project: str, machine: str,
                 role: str) -> None:
        self.pg, self.project, self.machine, self.role = pg, project, machine, role
        self.rows: dict[str, _Row] = {}
        self.live: dict[str, _Row] = {}
        #: Superseded memories by key: an old copy of one is that memory, not a new one.
        self.superseded: dict[str, list[_Row]] = {}
        self.aliases: dict[str, str] = {}
        self.new_aliases: list[tuple[str, str]] = []
        self.history: list[tuple[str, int, str, str, str, str, float]] = []
        self.erase: list[str] = []
        self.report = PushReport()

    def load(self, items: list[Item]) -> None:
        gids = sorted({i.gid for i in items} | {i.target for i in items if i.target}
                      | {i.superseded_by for i in items if i.superseded_by})
        self.aliases = {r[0]: r[1] for r in self.pg.execute(
            "SELECT gid::text, target::text FROM memspool.aliases WHERE gid = ANY(%s::uuid[])",
            (gids,))}
        wanted = sorted({self.aliases.get(g, g) for g in gids})
        for r in self.pg.execute(f"SELECT {_SERVER_COLUMNS} FROM memspool.memories"  # noqa: S608
                                 " WHERE gid = ANY(%s::uuid[])", (wanted,)):
            self._keep(_Row(RemoteMemory(*r)))
        keys = sorted({i.key for i in items if i.op == "upsert"})
        for r in self.pg.execute(f"SELECT {_SERVER_COLUMNS} FROM memspool.memories"  # noqa: S608
                                 " WHERE project_id = %s AND status IN ('live', 'superseded')"
                                 " AND key = ANY(%s) ORDER BY changed_at",
                                 (self.project, keys)):
            if r[0] not in self.rows:
                self._keep(_Row(RemoteMemory(*r)))

    def _keep(self, row: _Row) -> None:
        self.rows[row.state.gid] = row
        if row.state.status == "live":
            self.live[row.state.key] = row
        elif row.state.status == "superseded":
            self.superseded.setdefault(row.state.key, []).append(row)

    def resolve(self, gid: str | None) -> str | None:
        return None if gid is None else self.aliases.get(gid, gid)

    def _change(self, row: _Row, *, at: float, reason: str | None, **fields: Any) -> None:
        """Give ``row`` new fields (its old text to history first when ``reason``)."""
        if reason is not None and not row.new:
            old = row.state
            self.history.append((old.gid, old.revision, reason, old.type, old.summary, old.body,
                                 at))
        if self.live.get(row.state.key) is row:
            del self.live[row.state.key]
        revision = row.state.revision + (0 if row.new else 1)
        row.state = dataclasses.replace(row.state, **fields, revision=revision, changed_at=at,
                                        changed_by=self.role, changed_on=self.machine)
        row.dirty = row.touched = True
        if row.state.status == "live":
            self.live[row.state.key] = row

    def decide(self, item: Item) -> Outcome:
        if item.op == "forget":
            return self._forget(item)
        if item.op == "merge":
            return self._merge(item)
        return self._upsert(item)

    def _forget(self, item: Item) -> Outcome:
        gid = self.resolve(item.gid) or item.gid
        row = self.rows.get(gid)
        if row is not None and row.state.status != "forgotten":
            self.erase.append(gid)
            self._change(row, at=item.changed_at, reason=None, key=f"forgotten-{gid}",
                         summary="", body="", status="forgotten", superseded_by=None)
        return Outcome(item.gid, gid, None if row is None else row.state)

    def _merge(self, item: Item) -> Outcome:
        gid = self.resolve(item.gid) or item.gid
        row = self.rows.get(gid)
        target = self.resolve(item.target)
        if row is None or row.state.status in ("forgotten", "merged"):
            return Outcome(item.gid, gid, None if row is None else row.state)
        self._change(row, at=item.changed_at, reason=f"merged into {target}", status="merged",
                     superseded_by=target if target in self.rows else None)
        return Outcome(item.gid, gid, row.state)

    def _same_fact(self, row: _Row, item: Item) -> bool:
        return (text_hash(row.state.body) == text_hash(item.body)
                or text_hash(row.state.summary) == text_hash(item.summary))

    def _settle_key(self, row: _Row, item: Item) -> None:
        """``row`` is to be live under ``item.key``: the newer of it and the live
        memory holding that key stays live, the other is superseded by it."""
        holder = self.live.get(item.key)
        if holder is None or holder is row:
            return
        if item.changed_at >= holder.state.changed_at:
            self._change(holder, at=item.changed_at, reason=f"superseded by {row.state.gid}",
                         status="superseded", superseded_by=row.state.gid)
        else:
            item.status, item.superseded_by = "superseded", holder.state.gid

    def _upsert(self, item: Item) -> Outcome:
        gid = self.resolve(item.gid) or item.gid
        item.superseded_by = self.resolve(item.superseded_by)
        if item.superseded_by is not None and item.superseded_by not in self.rows:
            item.superseded_by = None
        row = self.rows.get(gid)
        if row is not None and gid != item.gid and item.base == 0:
            # Pushed before and found to be someone's memory: a retry.
            return Outcome(item.gid, gid, row.state)
        if row is None:
            holder = self.live.get(item.key) if item.status == "live" else None
            if holder is None or not self._same_fact(holder, item):
                # A copy of a fact the team has since replaced is that old memory: it
                # takes its state (superseded) instead of making the old value live.
                holder = next((old for old in self.superseded.get(item.key, ())
                               if self._same_fact(old, item)), None)
            if holder is not None:
                self.aliases[item.gid] = holder.state.gid
                self.new_aliases.append((item.gid, holder.state.gid))
                self.report.corroborated += 1
                return Outcome(item.gid, holder.state.gid, holder.state)
            row = _Row(RemoteMemory(gid, item.key, item.type, item.summary, item.body,
                                    item.status, item.superseded_by, 1, item.created_at,
                                    item.changed_at, self.role, self.machine, self.role,
                                    self.machine), new=True, dirty=True, touched=True)
            if row.state.status == "live":
                self._settle_key(row, item)
                row.state = dataclasses.replace(row.state, status=item.status,
                                                superseded_by=item.superseded_by)
            self._keep(row)
            return Outcome(item.gid, gid, row.state)
        if row.state.status == "forgotten" or row.state.content() == item.content():
            return Outcome(item.gid, gid, row.state)
        conflict = row.state.revision != item.base and not row.touched
        if conflict:
            self.report.conflicts += 1
            if row.state.changed_at > item.changed_at:
                # The server's change is newer: it stays; this one is kept in history.
                self.history.append((gid, row.state.revision, f"conflict: lost to a newer "
                                     f"change by {row.state.changed_by} on "
                                     f"{row.state.changed_on}", item.type,
                                     item.summary, item.body, item.changed_at))
                return Outcome(item.gid, gid, row.state, conflict=True)
        if item.status == "live":
            self._settle_key(row, item)
        text = (row.state.type, row.state.summary, row.state.body)
        text_changed = text != (item.type, item.summary, item.body)
        reason = ("conflict: replaced by a newer change" if conflict else "updated") \
            if text_changed else None
        self._change(row, at=item.changed_at, reason=reason, key=item.key, type=item.type,
                     summary=item.summary, body=item.body, status=item.status,
                     superseded_by=item.superseded_by)
        return Outcome(item.gid, gid, row.state, conflict=conflict)

    def write(self, saves: list[Save]) -> None:
        pg = self.pg
        made = [r.state for r in self.rows.values() if r.new and r.dirty]
        # Rows leaving a key first, then the live ones, then new rows: the live
        # key of a project stays unique at every statement.
        changed = sorted((r for r in self.rows.values() if not r.new and r.dirty),
                         key=lambda r: r.state.status == "live")
        with pg.cursor() as cur:
            if changed:
                cur.executemany(
                    "UPDATE memspool.memories SET key = %s, type = %s, summary = %s, body = %s,"
                    " status = %s, superseded_by = %s, revision = %s, changed_at = %s,"
                    " changed_on = %s WHERE gid = %s",
                    [(m.key, m.type, m.summary, m.body, m.status, m.superseded_by, m.revision,
                      m.changed_at, m.changed_on, m.gid) for m in (r.state for r in changed)])
            if made:
                # One statement for the batch's new memories (one round trip).
                cur.execute(
                    "INSERT INTO memspool.memories (gid, project_id, key, type, summary, body,"
                    " status, superseded_by, revision, created_at, changed_at, created_on,"
                    " changed_on) SELECT g, %s, k, t, s, b, st, sb, 1, ca, cha, %s, %s"
                    " FROM unnest(%s::uuid[], %s::text[], %s::text[], %s::text[], %s::text[],"
                    " %s::text[], %s::uuid[], %s::float8[], %s::float8[])"
                    " AS u(g, k, t, s, b, st, sb, ca, cha) ON CONFLICT (gid) DO NOTHING",
                    (self.project, self.machine, self.machine, [m.gid for m in made],
                     [m.key for m in made], [m.type for m in made], [m.summary for m in made],
                     [m.body for m in made], [m.status for m in made],
                     [m.superseded_by for m in made], [m.created_at for m in made],
                     [m.changed_at for m in made]))
            if self.new_aliases:
                cur.executemany(
                    "INSERT INTO memspool.aliases (gid, project_id, target) VALUES (%s, %s, %s)"
                    " ON CONFLICT (gid) DO NOTHING",
                    [(a, self.project, t) for a, t in self.new_aliases])
            if self.erase:
                cur.execute("DELETE FROM memspool.history WHERE gid = ANY(%s::uuid[])",
                            (self.erase,))
            kept = [h for h in self.history if h[0] not in self.erase]
            if kept:
                cur.executemany(
                    "INSERT INTO memspool.history (gid, project_id, revision, reason, type,"
                    " summary, body, by_machine, at)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(g, self.project, rev, why, t, s, b, self.machine, at)
                     for g, rev, why, t, s, b, at in kept])
            live = [s for s in saves if (self.resolve(s.gid) or s.gid) in self.rows
                    and self.rows[self.resolve(s.gid) or s.gid].state.status != "forgotten"]
            if live:
                cur.execute(
                    "INSERT INTO memspool.provenance (gid, project_id, ref, machine, session,"
                    " source, action, at) SELECT g, %s, r, %s, s, src, a, at"
                    " FROM unnest(%s::uuid[], %s::text[], %s::text[], %s::text[], %s::text[],"
                    " %s::float8[]) AS u(g, r, s, src, a, at) ON CONFLICT (ref) DO NOTHING",
                    (self.project, self.machine, [self.resolve(s.gid) for s in live],
                     [s.ref for s in live], [s.session for s in live],
                     [s.source for s in live], [s.action for s in live],
                     [s.at for s in live]))
        self.report.saves += len(live)


def _ordered(items: list[Item]) -> list[Item]:
    """Items a batch refers to (a survivor, a newer memory) before the items that refer."""
    by_gid = {i.gid: i for i in items}
    done: set[str] = set()
    out: list[Item] = []

    def visit(item: Item, depth: int = 0) -> None:
        if item.gid in done:
            return
        done.add(item.gid)
        for ref in (item.target, item.superseded_by):
            if ref is not None and ref in by_gid and depth < 50:
                visit(by_gid[ref], depth + 1)
        out.append(item)

    for item in items:
        visit(item)
    return out


def push_batch(pg: psycopg.Connection[Any], project: str, machine: str, role: str, *,  # noqa: PLR0913 - who pushes, and what
               items: list[Item], saves: list[Save]) -> tuple[list[Outcome], PushReport]:
    """Decide and write one batch in one server transaction."""
    with pg.transaction():
        pg.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (project,))
        member = pg.execute("SELECT %s = ANY (memspool.my_projects())", (project,)).fetchone()
        if not member or not member[0]:
            raise TeamError(
                f"This role ({role}) is not a member of the project {project} on the team "
                f"server. Ask an admin of it to run `memspool team grant {role} --project "
                f"{project}`, or `memspool team leave --project {project}`.")
        batch = _Batch(pg, project, machine, role)
        batch.load(items)
        saved = {s.gid for s in saves}
        for gid in saved - {i.gid for i in items}:
            if batch.resolve(gid) not in batch.rows:
                raise TeamError(f"A save of memory {gid} waits for the memory itself; "
                                f"run `memspool team sync` again.", retry=True)
        outcomes = [batch.decide(item) for item in _ordered(items)]
        batch.write(saves)
    batch.report.pushed = len(items)
    batch.report.batches = 1
    return outcomes, batch.report


def settle(conn: sqlite3.Connection, project: str, outcomes: Iterable[Outcome],
           last_seq: int, *, now: float) -> None:
    """After the server committed a batch: drop it from the outbox, remember each memory's
    revision, and take the server's state where the rules kept another one."""
    with quiet(conn):
        for outcome in outcomes:
            newer_here = conn.execute("SELECT 1 FROM team_outbox WHERE gid = ? AND seq > ?",
                                      (outcome.gid, last_seq)).fetchone() is not None
            if outcome.final != outcome.gid:
                _adopt(conn, outcome.gid, outcome.final, now=now)
            if outcome.state is None:
                continue
            if newer_here:
                conn.execute("UPDATE team_memories SET revision = ? WHERE gid = ?",
                             (outcome.state.revision, outcome.final))
                continue
            apply_memory(conn, project, outcome.state, now=now, force=True)
        conn.execute("DELETE FROM team_outbox WHERE project = ? AND seq <= ?",
                     (project, last_seq))
        resolve_links(conn, project)


def _adopt(conn: sqlite3.Connection, gid: str, final: str, *, now: float) -> None:
    """This machine's memory ``gid`` is someone's ``final``: it takes that id (folding
    into the local copy of ``final`` where there is one already)."""
    mine = local_id(conn, gid)
    theirs = local_id(conn, final)
    if mine is not None and theirs is not None and mine != theirs:
        survivor, other = memory_rows.get(conn, theirs), memory_rows.get(conn, mine)
        if survivor is not None and other is not None:
            memory_rows.absorb(conn, survivor, other, at=now, reason="merged")
        conn.execute("DELETE FROM team_memories WHERE gid = ?", (gid,))
        return
    conn.execute("DELETE FROM team_memories WHERE gid = ? AND memory_id IS NULL", (final,))
    conn.execute("UPDATE team_memories SET gid = ? WHERE gid = ?", (final, gid))
    conn.execute("UPDATE team_outbox SET gid = ? WHERE gid = ?", (final, gid))


def push_project(conn: sqlite3.Connection, pg: psycopg.Connection[Any], project: str,  # noqa: PLR0913 - who pushes, and where
                 machine: str, role: str, *, batch: int = BATCH_ROWS) -> PushReport:
    """Push the whole outbox of ``project``, batch after batch."""
    report = PushReport()
    while True:
        items, saves, last = read_batch(conn, project, machine, batch)
        if not last:
            return report
        outcomes, done = push_batch(pg, project, machine, role, items=items, saves=saves)
        settle(conn, project, outcomes, last, now=time.time())
        report.add(done)
