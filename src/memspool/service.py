"""The operations every front end calls: the CLI, the MCP server, the HTTP API and web page.

One :class:`Service` per home. It opens the store on first use and keeps the
connection (a warm server reuses it; a CLI command closes it on exit), so
every front end gives the same answer for the same call. It also owns what
the front ends used to set each on their own: the default project (the
current folder's) and session, the bounds of a search page and a context
block, and paging (:mod:`memspool.results`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from memspool import archivist
from memspool.archivist.major import last_report
from memspool.archivist.recalls import note_recalled, recalled
from memspool.archivist.transfer import ImportReport, export_lines, import_lines
from memspool.base import lexical
from memspool.base.errors import (
    ConfigError,
    HomeError,
    NotFound,
    PayloadError,
    SliceNotFound,
    StoreError,
    TeamError,
)
from memspool.base.kinds import NOTE_TYPES
from memspool.base.project import identify
from memspool.config import Config, load_config
from memspool.distill.keys import SUMMARY_CHARS, TEXT_CHARS, note_key, whole_summary
from memspool.distill.llm import LlmOptions
from memspool.distill.note import Note
from memspool.distill.payload import note_cap
from memspool.distill.similarity import Profiles, index_terms
from memspool.drainer.lock import drainer_running
from memspool.install import default_settings_path, installed_events
from memspool.recall import render, render_dirty, search
from memspool.recall.context import listed_count, stored, tier
from memspool.recall.embed import SemanticState, semantic_state
from memspool.recall.vectors import VectorIndex, bump_epoch, remove_sets
from memspool.redact import kept
from memspool.results import (
    CONTEXT_CHARS,
    SEARCH_LIMIT,
    SEARCH_OFFSET,
    BrowsePage,
    ContextBlock,
    Corrected,
    Edited,
    Forgotten,
    Maintained,
    MemoryPage,
    MemoryRow,
    MemoryView,
    Overview,
    PassiveCounts,
    Pinned,
    Reindexed,
    Saved,
    SearchHit,
    SearchPage,
    SlicePage,
    Status,
    Timeline,
)
from memspool.spool import Spool
from memspool.spool.segments import QUARANTINE_DIR
from memspool.store import (
    browse,
    connect,
    connect_readonly,
    damaged,
    diagnose,
    erase,
    get_state,
    require_home,
    transaction,
)
from memspool.store import memories as memory_rows
from memspool.store import projects as project_rows
from memspool.store import vectors as vector_rows
from memspool.store.slices import SliceRow, list_slices, slice_text
from memspool.store.slices import scrub as scrub_slices
from memspool.team.local import origins

if TYPE_CHECKING:
    from memspool.archivist import CaptureOptions, CaptureReport, DigestReport
    from memspool.team.ops import Granted, Initialised, Joined, Left, Member, Revoked
    from memspool.team.sync import SyncReport

__all__ = ["Service"]

#: The numbers `memspool status` reads from the store.
STORE_COUNTS: Final = {
    "slices_queued": "SELECT count(*) FROM slices WHERE digested_at IS NULL",
    "slices_total": "SELECT count(*) FROM slices",
    "sessions_tracked": "SELECT count(DISTINCT session_id) FROM cursors",
    "slices_held_back": "SELECT count(*) FROM cursors WHERE held_since IS NOT NULL",
    "transcripts_missing": "SELECT count(*) FROM cursors WHERE missing_since IS NOT NULL",
    "memories": "SELECT count(*) FROM memories",
}


#: Seconds a write (capture, save, import, ...) spends embedding what waits.
EMBED_BUDGET_SECS: Final = 2.0
#: Saves one page of a project's timeline reads: a few weeks of busy work.
TIMELINE_SAVES: Final = 500


def _named(name: str | None) -> str | None:
    """A name given from outside (a project, a session, a source), as memory keeps it:
    printable, on one line, redacted."""
    if name is None:
        return None
    return kept(name, one_line=True) or None


def _new_project(name: str) -> str:
    """A new project's name from outside, as memory keeps it (printable, on one line,
    redacted; ``resolve`` keeps the name as given if nothing is left); a folder's path
    is not one: it is identified, as the hooks identify it."""
    return kept(name, one_line=True)


def _memory_text(summary: str, body: str, names: tuple[str, str], *,
                 held: int = 0) -> tuple[str, str]:
    """A person's summary and text as memory keeps them (printable, the summary on one
    line, redacted); a :class:`PayloadError` naming ``names`` of those left empty,
    also when nothing but control characters and escape sequences was given, or of
    one longer than TEXT_CHARS (and than ``held``, the text a memory holds already:
    an edit of a long memory that capture made may keep its length)."""
    cleaned = (kept(summary, one_line=True).strip(), kept(body).strip())
    empty = [name for name, value in zip(names, cleaned, strict=True) if not value]
    if empty:
        raise PayloadError(f"A memory needs a {names[0]} and a {names[1]}; the "
                           f"{' and the '.join(empty)} {'was' if len(empty) == 1 else 'were'}"
                           f" empty.")
    for name, value in zip(names, cleaned, strict=True):
        if len(value) > max(TEXT_CHARS, held):
            raise PayloadError(_too_long(name, len(value)))
    return cleaned


def _edited_text(found: memory_rows.Memory, summary: str, body: str) -> tuple[str, str]:
    """The summary and text an edit of ``found`` leaves it: each given as ``found`` holds
    it stays as it is; a new one is cleaned as a save's is (:func:`_memory_text`), and a
    new summary longer than SUMMARY_CHARS is refused."""
    cleaned_summary, cleaned_body = _memory_text(summary, body, ("summary", "text"),
                                                 held=len(found.body))
    if summary != found.summary and len(cleaned_summary) > SUMMARY_CHARS:
        raise PayloadError(_summary_too_long(len(cleaned_summary)))
    return (found.summary if summary == found.summary else cleaned_summary,
            found.body if body == found.body else cleaned_body)


def _summary_too_long(chars: int) -> str:
    """Why a new summary of ``chars`` characters is refused (an edit's, from any front
    end)."""
    return (f"The summary is {chars:,} characters; a summary holds at most "
            f"{SUMMARY_CHARS:,} (it is the one line the context block shows). Shorten it: "
            f"the memory's text holds the rest. Nothing was saved.")


def _too_long(name: str, chars: int) -> str:
    """Why a memory's text of ``chars`` characters is refused."""
    return (f"The {name} is {chars:,} characters; a memory holds at most {TEXT_CHARS:,}. "
            f"Save the part worth remembering, or capture the whole text (`memspool "
            f"capture`), which distills it into memories. Nothing was saved.")


class Service:
    """memspool's operations on one home."""

    def __init__(self, home: Path | None = None, *, env: Mapping[str, str] | None = None,
                 readonly: bool = False, existing: bool = False) -> None:
        """``readonly``: this service only reads, so it creates nothing (a mistyped
        home is reported, not made) and works on a home it cannot write.
        ``existing``: it writes, but only to memory that exists (forget, maintain),
        so it too reports a missing home instead of making one."""
        self.config: Config = load_config(home, env)
        self.readonly = readonly
        self.existing = existing
        self._conn: sqlite3.Connection | None = None
        #: Near-duplicate profiles of this store's texts, bounded (see Profiles).
        self.profiles = Profiles()
        self._semantic: SemanticState | None = None
        self._index: VectorIndex | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            if self.readonly:
                found = connect_readonly(self.config)
                if found is None:
                    raise NotFound(f"There is no store in {self.config.home} yet: nothing has "
                                   f"been captured there. `memspool status` says more.")
                self._conn = found
            else:
                if self.existing:
                    require_home(self.config)
                self._conn = connect(self.config)
        return self._conn

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, with any SQLite failure turned into a store error that says
        what is wrong (damaged, full, read-only) and what to do."""
        try:
            yield self.conn
        except sqlite3.Error as exc:
            raise diagnose(self.config.db_path, exc) from exc

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Service:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- projects -------------------------------------------------------------

    def project(self, given: str | None = None) -> str:
        """The identity of the project ``given`` names (a known identity, a readable name
        only one project has, or a folder), or of the current folder's project; a name
        several projects share is a :class:`~memspool.base.errors.PayloadError` listing them."""
        if given is not None and given.strip():
            with self._reading() as conn:
                return project_rows.resolve(conn, given, _folder(), new_name=_new_project)
        here = _folder()
        if here is None:
            raise PayloadError("The folder this runs in is gone (deleted or moved), so it "
                               "names no project; name one (--project, or project=...).")
        return identify(here)[0]

    def _filter(self, given: str | None) -> str | None:
        return None if given is None or not given.strip() else self.project(given)

    def _writing_to(self, given: str | None) -> str:
        """The project a write goes to, recorded with its readable name."""
        identity = self.project(given)
        with self._reading() as conn:  # a read-only or full store: said as such
            if conn.execute("SELECT 1 FROM projects WHERE id = ?",
                            (identity,)).fetchone() is None:
                folder = _folder()
                here = identify(folder) if folder is not None else None
                with transaction(conn):
                    if here is not None and here[0] == identity:
                        project_rows.remember(conn, *here)
                    else:
                        project_rows.remember(conn, identity)
        return identity

    def unknown_project(self, given: str | None,
                        show: Callable[[str], str] = str) -> str | None:
        """When ``given`` (a ``--project``) names a project this store has never seen
        (no memory, no slice, never recorded; a typo, most often), the sentence that
        says so and names the projects it has, each name written by ``show`` (a
        terminal's escaping); else ``None``."""
        if given is None or not given.strip():
            return None
        identity = self.project(given)
        with self._reading() as conn:
            seen = browse.project_names(conn)
            if identity in seen or conn.execute("SELECT 1 FROM projects WHERE id = ?",
                                                (identity,)).fetchone() is not None:
                return None
            others = sorted(set(project_rows.names(conn, set(seen)).values()))
        listed = ", ".join(show(name) for name in others) or "none yet"
        return f"no project is known as {show(given)!r}; projects with memory here: {listed}"

    def project_names(self, identities: Iterable[str]) -> dict[str, str]:
        """``{identity: readable name}``."""
        with self._reading() as conn:
            return project_rows.names(conn, set(identities))

    # -- memory ---------------------------------------------------------------

    def capture(self, text: str, *, project: str | None = None, session: str | None = None,
                source: str | None = None, options: CaptureOptions | None = None,
                ) -> CaptureReport:
        """The capture verb: distil ``text`` into notes and reconcile them with memory.
        ``options``: dry run, note cap, passive, LLM (the similarity cache is the
        Service's own)."""
        options = dataclasses.replace(options or archivist.CaptureOptions(),
                                      profiles=self.profiles)
        note_cap(options.max_entities)  # refused before the project is recorded
        origin = archivist.manual_origin(self._writing_to(project), _named(session),
                                         _named(source))
        report = archivist.capture(text, config=self.config, conn=self.conn, origin=origin,
                                   options=options)
        self._render()
        return report

    def capture_passive(self, content: str, *, session: str | None = None,
                        project: str | None = None,
                        source: str | None = None) -> PassiveCounts:
        """Only the learnings sections of ``content``, one passive memory per item."""
        report = self.capture(content, project=project, session=session, source=source,
                              options=archivist.CaptureOptions(passive=True))
        return PassiveCounts(**report.passive_counts())

    def save(  # noqa: PLR0913 - a memory's fields, keyword-only
        self, title: str, content: str, *, type: str = "takeaway",
        key: str | None = None, project: str | None = None,
        session: str | None = None, source: str | None = None) -> Saved:
        """One explicit memory. With a topic ``key`` it upserts: the memory under that key
        takes this text (the old text kept in history), unless a person corrected it,
        when it is corroborated; without one the capture verb's reconciliation applies
        (update, merge or new)."""
        summary, body = _memory_text(title, content, ("title", "content"))
        summary = whole_summary(summary, SUMMARY_CHARS)
        if type not in NOTE_TYPES:
            raise PayloadError(f"type must be one of {', '.join(NOTE_TYPES)}, got {type!r}.")
        project = self._writing_to(project)
        kind = next(t for t in NOTE_TYPES if t == type)
        # A key is text from outside too: redacted before it becomes a slug (a key is
        # shown everywhere, and kept, hashed, in a forget tombstone).
        key = kept(key, one_line=True) if key else None
        conn = self.conn
        if key:
            slug = note_key(key)
            with transaction(conn):
                found = memory_rows.get_by_key(conn, project, slug)
                stands = found is not None and memory_rows.edited(conn, found.id)
                if found is not None and stands:
                    # A person corrected it: saved again, it is corroborated, not
                    # rewritten (docs/archivist.md, "A person's correction stands").
                    memory_rows.corroborate(conn, found, at=time.time())
                elif found is not None:
                    memory_rows.replace_text(conn, found, type=kind, summary=summary, body=body,
                                             terms=index_terms(body, profiles=self.profiles),
                                             at=time.time(), reason="saved")
            if found is not None:
                self._render()
                return Saved(id=found.id, key=slug, action="merged" if stands else "updated")
        note = Note(type=kind, summary=summary, body=body, key_text=key or "")
        report = archivist.CaptureReport(dry_run=False)
        origin = archivist.manual_origin(project, _named(session), _named(source) or "save")
        archivist.save_notes([note], config=self.config, conn=conn, origin=origin,
                             report=report, profiles=self.profiles)
        self._render()
        outcome = report.notes[0]
        return Saved(id=outcome.id, key=outcome.key, action=outcome.action)

    def _render(self, *, forgot: bool = False, embed_all: bool = False) -> None:
        """After a write: re-render the context block of every project whose memory
        changed and, with semantic recall on, embed what waits for a vector (for at
        most ``EMBED_BUDGET_SECS``, or all of it with ``embed_all``; the drainer and
        ``maintain`` do the rest).

        The write is committed by now: nothing semantic recall meets (a model
        that cannot load, vector files that cannot be written, a store too full
        for the vectors) fails it; the memories wait, and ``memspool status``
        and ``memspool doctor`` say why. ``forgot``: a memory was forgotten, so
        every vector file goes at once, model or not.
        """
        render_dirty(self.conn, self.config.context_max_chars)
        if forgot:
            remove_sets(self.config.home)
        try:
            index = self.vectors()
            if index is not None:
                index.embed(self.conn, budget_secs=None if embed_all else EMBED_BUDGET_SECS)
                index.refresh(self.conn, force=forgot)
        except Exception:  # noqa: BLE001, S110 - the write stands; the memories wait
            pass

    @property
    def semantic(self) -> SemanticState:
        """Whether semantic recall is on here (the model loads on first use)."""
        if self._semantic is None:
            self._semantic = semantic_state(self.config)
        return self._semantic

    def vectors(self) -> VectorIndex | None:
        """The vector index when semantic recall is on, else ``None``."""
        if self._index is None and self.semantic.encoder is not None:
            self._index = VectorIndex(self.config.home, self.semantic.encoder)
        return self._index

    def search(self, query: str, *, project: str | None = None,  # noqa: PLR0913 - the filters
               type: str | None = None, limit: int | None = None, offset: int = 0,
               include_all: bool = False) -> SearchPage:
        """One page of the memories that answer ``query``, best first (never slices):
        ``limit`` results (``SEARCH_LIMIT``) after the first ``offset``."""
        limit, offset = SEARCH_LIMIT.clamp(limit), SEARCH_OFFSET.clamp(offset)
        index = self.vectors()
        identity = self._filter(project)
        with self._reading() as conn:
            hits = search(conn, query, project=identity, type=type, limit=offset + limit + 1,
                          include_all=include_all, vectors=index)
            page = hits[offset:offset + limit]
            named = project_rows.names(conn, {hit.project for hit in page})
        note_recalled(self.config.home, [hit.id for hit in page])
        return SearchPage(query=query, offset=offset,
                          results=[SearchHit.of(hit, named[hit.project]) for hit in page],
                          more=len(hits) > offset + limit,
                          note=None if page else self.unknown_project(project))

    def context(self, project: str | None = None, *,
                max_chars: int | None = None) -> ContextBlock:
        """The context block of ``project`` (by default the current folder's; its text
        is "" when it has no memory in recall), at most ``max_chars`` characters
        (``CONTEXT_CHARS``; by default ``context_max_chars``)."""
        identity = self.project(project)
        limit = (self.config.context_max_chars if max_chars is None
                 else CONTEXT_CHARS.clamp(max_chars))
        with self._reading() as conn:
            text, _ = render(conn, identity, limit)
            # As asked, or (the current folder's) by its readable name, not its path.
            named = project if project is not None and project.strip() else \
                project_rows.names(conn, {identity})[identity]
        return ContextBlock(project=named, text=text,
                            note=None if text else self.unknown_project(project))

    def get(self, memory_id: int) -> MemoryView:
        """One memory with its history and provenance; :class:`~memspool.base.errors.NotFound`
        if there is none with that id."""
        with self._reading() as conn:
            found = _existing(conn, memory_id)
            note_recalled(self.config.home, [memory_id])
            pinned, edited_at = memory_rows.marks(conn, memory_id)
            return MemoryView(
                memory=found,
                project_name=project_rows.names(conn, {found.project})[found.project],
                origin=origins(conn, [found.id]).get(found.id),
                history=memory_rows.history(conn, memory_id),
                provenance=memory_rows.provenance(conn, memory_id),
                pinned=pinned, edited_at=edited_at,
                tier=tier(conn, found, pinned=pinned, edited=edited_at is not None))

    def memories(self, *, project: str | None = None, type: str | None = None,
                 layer: str | None = None, limit: int = 100,
                 origin: str | None = None) -> list[MemoryRow]:
        """Memories matching the filters, most recently changed first. ``origin``:
        ``mine`` (learned here, or by this team role elsewhere) or ``team`` (shared by
        teammates)."""
        project = self._filter(project)
        with self._reading() as conn:
            if origin is None:
                found = memory_rows.list_filtered(conn, project=project, type=type,
                                                  layer=layer, limit=limit)
            else:
                from memspool.team.local import by_origin

                found = by_origin(conn, mine=origin == "mine", project=project, type=type,
                                  layer=layer, limit=limit)
            named = project_rows.names(conn, {m.project for m in found})
            shared = origins(conn, [m.id for m in found])
            pins = browse.pinned_ids(conn)
        return [MemoryRow(memory=m, project_name=named[m.project], origin=shared.get(m.id),
                          pinned=m.id in pins) for m in found]

    def forget(self, memory_id: int, *, purge_source: bool = False) -> Forgotten:
        """Delete a memory for good; digesting a transcript again, or importing an
        export made before, does not bring it back (a person capturing the same text
        does).

        Its text leaves every table and index, and the file: the search index is
        merged, deleted pages are zeroed, the WAL is checkpointed and truncated
        (``wal_cleared`` says whether a reader let it be). ``purge_source``: its
        text (whole and line by line, history included) is also replaced by
        ``[FORGOTTEN]`` in the slices it was saved from.
        """
        conn = self.conn
        with transaction(conn):
            found = _existing(conn, memory_id)
            texts = [found.summary, found.body, *(
                text for entry in memory_rows.history(conn, memory_id)
                for text in (entry.summary, entry.body))]
            slice_ids = memory_rows.forget(conn, found, at=time.time())
            scrubbed = scrub_slices(conn, slice_ids, texts) if purge_source else 0
            bump_epoch(conn)  # no vector set written before this is read after it
            erase.merge_search_index(conn)
        # The vector files go at once: a forgotten memory's vector must not linger.
        lexical.forget(memory_id)  # its text leaves this process's cache too
        self._render(forgot=True)
        cleared = erase.clear_wal(conn)
        return Forgotten(forgotten=memory_id, project=found.project, summary=found.summary,
                         wal_cleared=cleared, slices_scrubbed=scrubbed if purge_source else None)

    def digest(self, *, budget_secs: float | None = None,
               llm: LlmOptions | None = None) -> DigestReport:
        """The minor pass: queued slices become memory."""
        report = archivist.digest(self.conn, self.config, budget_secs=budget_secs, llm=llm,
                                  profiles=self.profiles)
        self._render()
        return report

    def maintain(self, *, llm: LlmOptions | None = None,
                 reindex: bool = False) -> Maintained:
        """Digest the whole queue, then run the major pass over what changed.

        ``reindex``: also give every memory without a vector from the current
        model one (memories written before the semantic extra was installed,
        or before the model changed).
        """
        # Reindexing first: the memories waiting are counted in its report.
        reindexed = self.reindex() if reindex else None
        digested = self.digest(llm=llm)
        report = archivist.maintain(self.conn, self.config, profiles=self.profiles)
        team = self._maintain_team()
        self._render(embed_all=True)  # everything still waiting for a vector
        return Maintained(digest=digested, maintain=report, team=team, reindex=reindexed)

    def reindex(self) -> Reindexed:
        """Embed every memory that has no vector from the current model."""
        index = self.vectors()
        if index is None:
            raise ConfigError(f"Semantic recall is off: {self.semantic.reason}.")
        started = time.monotonic()
        with transaction(self.conn):
            vector_rows.enqueue_stale(self.conn, index.encoder.hash)
            queued = vector_rows.pending_count(self.conn)
        embedded = index.embed(self.conn)
        index.refresh(self.conn, force=True)
        return Reindexed(queued=queued, embedded=embedded, model=index.encoder.hash,
                         secs=round(time.monotonic() - started, 3))

    def export(self, project: str | None = None) -> Iterator[bytes]:
        """Every memory (of ``project``) as one JSON line."""
        project = self._filter(project)
        with self._reading() as conn:
            yield from export_lines(conn, project)

    def import_lines(self, lines: Iterable[bytes], *,
                     progress: Callable[[int], None] | None = None,
                     trust: bool = False) -> ImportReport:
        """Import exported memories (idempotent), redacted; as provisional memory unless
        ``trust`` keeps the file's layer, confidence and provenance."""
        report = import_lines(self.conn, lines, config=self.config, progress=progress,
                              profiles=self.profiles, trust=trust)
        self._render()
        return report

    # -- team memory ------------------------------------------------------------

    def team_init(self, url: str) -> Initialised:
        """Create or migrate team memory's schema on the PostgreSQL server at ``url``."""
        from memspool.team import ops

        return ops.init(url)

    def team_join(self, url: str, project: str | None = None) -> tuple[Joined, SyncReport]:
        """Share ``project`` (by default the current folder's) through ``url``, then sync."""
        from memspool.team import ops

        identity = self._writing_to(project)
        name = project_rows.names(self.conn, {identity})[identity]
        joined = ops.join_project(self.conn, url, identity, name)
        return joined, self.team_sync(identity)

    def team_leave(self, project: str | None = None, *, revoke: bool = False) -> Left:
        from memspool.team import ops

        return ops.leave_project(self.conn, self.project(project), revoke_self=revoke)

    def team_sync(self, project: str | None = None) -> SyncReport:
        """Push the outbox, then pull what teammates changed (every shared project, or one)."""
        from memspool.team.sync import sync

        report = sync(self.conn, self.config,
                      project=None if project is None else self.project(project))
        self._render()
        return report

    def team_members(self, project: str | None = None, *,
                     url: str | None = None) -> list[Member]:
        from memspool.team import ops

        return ops.members(self.conn, self.project(project), url)

    def team_grant(self, role: str, project: str | None = None, *, admin: bool = False,
                   url: str | None = None) -> Granted:
        from memspool.team import ops

        return ops.grant(self.conn, self.project(project), role, admin=admin, url=url)

    def team_revoke(self, role: str, project: str | None = None, *,
                    url: str | None = None) -> Revoked:
        from memspool.team import ops

        return ops.revoke(self.conn, self.project(project), role, url=url)

    def _maintain_team(self) -> dict[str, Any] | None:
        """The timer's sync of shared projects: a server that cannot be reached is
        reported, never a failure of the maintenance itself."""
        if self.conn.execute("SELECT 1 FROM team_projects LIMIT 1").fetchone() is None:
            return None
        from memspool.team.sync import index_waiting

        try:
            return self.team_sync().as_dict()
        except TeamError as exc:
            return {"ok": False, "error": str(exc)}
        finally:
            index_waiting(self.conn)

    def _team_status(self) -> dict[str, Any] | None:
        if not self.config.db_path.exists():
            return None
        try:
            with self._reading() as conn:
                if conn.execute("SELECT 1 FROM team_projects LIMIT 1").fetchone() is None:
                    return None
                from memspool.team import ops

                return ops.status(conn)
        except (StoreError, sqlite3.Error):
            return None

    # -- the queue --------------------------------------------------------------

    def slices(self, *, session: str | None = None, limit: int = 50,
               queued_only: bool = False) -> list[SliceRow]:
        """Slices, newest first."""
        with self._reading() as conn:
            return list_slices(conn, session=session, limit=limit, queued_only=queued_only)

    def slice_text(self, slice_id: int) -> str:
        """The stored, redacted text of one slice."""
        with self._reading() as conn:
            return slice_text(conn, slice_id)

    # -- status -----------------------------------------------------------------

    def status(self) -> Status:
        """Spool backlog, drainer, hooks, queue, memories, last drain and error.

        Works on a damaged store (``store`` says what is wrong; the counts
        are then ``None``) and on a home that does not exist yet.
        """
        config = self.config
        if config.home.exists() and not config.home.is_dir():
            raise HomeError(f"{config.home} is not a folder. Move that file aside, or point "
                            f"MEMSPOOL_HOME (or --home) at a folder.", str(config.home))
        status: dict[str, Any] = {"home": str(config.home), "home_exists": config.home.is_dir()}
        frames, pending_bytes = (Spool(config.spool_dir).pending()
                                 if config.spool_dir.is_dir() else (0, 0))
        quarantine = config.spool_dir / QUARANTINE_DIR
        status.update({
            "pending_frames": frames,
            "pending_bytes": pending_bytes,
            "quarantined_files": len(list(quarantine.iterdir())) if quarantine.is_dir() else 0,
            "drainer_running": drainer_running(config),
        })
        settings = default_settings_path("user")
        status["hooks_settings"] = str(settings)
        status["hooks_installed"] = installed_events(settings, config.home)
        status.update(self._store_status())
        status.update(self._memory_status())
        status["semantic"] = self._semantic_status()
        status["team"] = self._team_status()
        hook_log = config.hook_log_path
        status["hook_errors"] = 0
        if hook_log.is_file():
            with hook_log.open("rb") as lines:
                status["hook_errors"] = sum(1 for _ in lines)
        return Status(**status)

    def _memory_status(self) -> dict[str, Any]:
        if not self.config.db_path.exists():
            return {"memories_by_layer": {}, "last_maintain": None, "memories_in_context": 0}
        try:
            with self._reading() as conn:
                return {"memories_by_layer": memory_rows.count_by_layer(conn),
                        "last_maintain": last_report(conn),
                        "memories_in_context": listed_count(conn)}
        except StoreError:
            return {"memories_by_layer": None, "last_maintain": None,
                    "memories_in_context": None}

    def _semantic_status(self) -> dict[str, Any]:
        """On or off and why; with it on, how many memories have a vector of the
        current model and how many wait for one."""
        try:
            state = self.semantic
        except ConfigError as exc:
            return {"on": False, "reason": str(exc), "model": self.config.semantic_model,
                    "model_hash": None}
        found: dict[str, Any] = state.as_dict()
        if state.encoder is None or not self.config.db_path.exists():
            return found
        try:
            with self._reading() as conn:
                by_model = vector_rows.count_by_model(conn)
                found["vectors"] = by_model.pop(state.encoder.hash, 0)
                found["vectors_other_models"] = sum(by_model.values())
                found["waiting"] = vector_rows.pending_count(conn)
        except StoreError:
            pass
        return found

    def _store_status(self) -> dict[str, Any]:
        counts: dict[str, Any] = dict.fromkeys(STORE_COUNTS)
        counts.update(last_drain=None, last_error=None)
        if not self.config.db_path.exists():
            return {"store": "none yet", **dict.fromkeys(STORE_COUNTS, 0),
                    "last_drain": None, "last_error": None}
        try:
            with self._reading() as conn:
                for name, sql in STORE_COUNTS.items():
                    counts[name] = int(conn.execute(sql).fetchone()[0])
                last = get_state(conn, "last_drain")
                counts["last_drain"] = float(last) if last else None
                counts["last_error"] = get_state(conn, "last_error")
        except StoreError as exc:
            return {"store": f"unusable: {exc}", **counts}
        # The counts read a few pages; SQLite's own check reads them all, as doctor does.
        broken = damaged(self.config.db_path)
        if broken is not None:
            return {"store": f"damaged: SQLite's quick_check says {broken}. `memspool doctor` "
                             f"gives the fix (move the store aside, keeping the copy, then "
                             f"`memspool drainer --resume`).", **counts}
        return {"store": "ok", **counts}

    # -- the web page -------------------------------------------------------------
    # What `memspool serve`'s pages (memspool.http.web) call beyond the methods
    # above, which keep their behaviour. Viewing a memory here is not a recall:
    # only searches, `memories show` and the recall hooks move its decay clock.

    def overview(self, *, sessions: int = 10) -> Overview:
        """`memspool status`'s facts, each project's memories counted by layer and
        type, and the sessions captured last."""
        status = self.status()
        projects: list[dict[str, Any]] = []
        recent: list[dict[str, Any]] = []
        if status.store == "ok":
            with self._reading() as conn:
                projects = [dataclasses.asdict(c) for c in browse.project_counts(conn)]
                recent = browse.recent_sessions(conn, sessions)
        return Overview(status=status, projects=projects, sessions=recent)

    def browse(  # noqa: PLR0913 - the page's filters, keyword-only
        self, *, project: str | None = None, type: str | None = None,
        layer: str | None = None, text: str | None = None, page: int = 1,
        per_page: int = 50) -> BrowsePage:
        """One page of memories passing the filters, newest change first; ``text``
        keeps those holding every word of it."""
        project = self._filter(project)
        with self._reading() as conn:
            found = browse.memory_page(conn, project=project, type=type, layer=layer,
                                       text=text, offset=(page - 1) * per_page,
                                       limit=per_page + 1)
        return BrowsePage(memories=found[:per_page], page=page,
                          has_next=len(found) > per_page, projects=self.project_choices())

    def project_choices(self) -> list[tuple[str, str]]:
        """Every project with memories or slices: (identity, readable name), by name."""
        with self._reading() as conn:
            identities = browse.project_names(conn)
            named = project_rows.names(conn, identities)
        return sorted(((i, named[i]) for i in identities), key=lambda pair: (pair[1], pair[0]))

    def memory_page(self, memory_id: int) -> MemoryPage:
        """A memory with its history, provenance, pin, when it was last recalled
        (noted recalls not yet applied by `maintain` included), the memory that
        superseded it and those it superseded."""
        with self._reading() as conn:
            found = _existing(conn, memory_id)
            successor = (memory_rows.get(conn, found.superseded_by)
                         if found.superseded_by is not None else None)
            noted = recalled(self.config.home).get(memory_id)
            pinned, edited_at = memory_rows.marks(conn, memory_id)
            return MemoryPage(
                memory=found, pinned=pinned, edited_at=edited_at,
                last_recalled=max(filter(None, (found.recalled_at, noted)), default=None),
                history=memory_rows.history(conn, memory_id),
                provenance=memory_rows.provenance(conn, memory_id),
                superseded_by_memory=successor,
                supersedes=browse.successors_of(conn, memory_id),
                tier=tier(conn, found, pinned=pinned, edited=edited_at is not None))

    def edit(self, memory_id: int, *, summary: str, body: str, type: str) -> Edited:
        """A person's correction: new text or type, the old kept in history with the
        reason ``edited``. Redacted like any save; nothing changes when nothing differs.

        A summary or text given exactly as the memory holds it is kept exactly so (a
        form sends back every field, and a change of the type alone must not rewrite
        the text). A new summary over SUMMARY_CHARS is refused, never cut."""
        done = self.correct(memory_id, summary=summary, body=body, type=type)
        return Edited(id=done.id, changed=done.changed)

    def pin(self, memory_id: int, on: bool = True) -> Pinned:
        """Pin a memory so decay never archives it (an archived one returns to recall,
        canonical), or unpin it."""
        done, was = self._correct(memory_id, pinned=on)
        return Pinned(id=done.id, pinned=done.pinned, changed=was != on)

    def correct(self, memory_id: int, *, summary: str | None = None, body: str | None = None,
                type: str | None = None, pinned: bool | None = None) -> Corrected:
        """A person's correction of the fields given, in one transaction: a field left
        out (``None``) keeps what the memory holds. The text and type as :meth:`edit`
        saves them, the pin as :meth:`pin` sets it; a refusal changes nothing."""
        return self._correct(memory_id, summary=summary, body=body, type=type,
                             pinned=pinned)[0]

    def _correct(self, memory_id: int, *, summary: str | None = None, body: str | None = None,
                 type: str | None = None, pinned: bool | None = None,
                 ) -> tuple[Corrected, bool]:
        """:meth:`correct`, and whether the memory was pinned before."""
        if summary is None and body is None and type is None and pinned is None:
            raise PayloadError("Nothing to change: give a summary, a body, a type or "
                               "pinned.")
        if type is not None and type not in NOTE_TYPES:
            raise PayloadError(f"type must be one of {', '.join(NOTE_TYPES)}, got {type!r}.")
        conn = self.conn
        with transaction(conn):
            found = _existing(conn, memory_id)
            kind = next(t for t in NOTE_TYPES if t == (type or found.type))
            new_summary, new_body = (found.summary, found.body) if (
                summary is None and body is None) else _edited_text(
                found, found.summary if summary is None else summary,
                found.body if body is None else body)
            changed = (kind, new_summary, new_body) != (found.type, found.summary, found.body)
            if changed:
                memory_rows.replace_text(conn, found, type=kind, summary=new_summary,
                                         body=new_body,
                                         terms=index_terms(new_body, profiles=self.profiles),
                                         at=time.time(), reason="edited")
            was_pinned = memory_rows.marks(conn, memory_id)[0]
            if pinned is not None:
                browse.set_pinned(conn, found, pinned)
        if changed or pinned is not None:
            self._render()
        return Corrected(id=memory_id, changed=changed,
                         pinned=was_pinned if pinned is None else pinned), was_pinned

    def injected_context(self, project: str) -> str:
        """The context block stored for ``project``: exactly what the SessionStart
        hook gives a new session ("" when it gives none)."""
        project = self.project(project)
        with self._reading() as conn:
            return stored(conn, project) or ""

    def slice_page(self, slice_id: int) -> SlicePage:
        """One slice's columns and its stored, redacted text."""
        with self._reading() as conn:
            row = browse.slice_row(conn, slice_id)
            if row is None:
                raise SliceNotFound(slice_id)
            return SlicePage(slice=row, text=slice_text(conn, slice_id))

    def timeline(self, project: str, *, before: float | None = None,
                 limit: int = TIMELINE_SAVES) -> Timeline:
        """``project``'s sessions by day, newest first, each with the memories its saves
        created or changed; at most ``limit`` saves, then ``next_before`` pages on."""
        before = time.time() + 1 if before is None else before
        project = self.project(project)
        with self._reading() as conn:
            saves = browse.timeline_rows(conn, project, before, limit)
            full = len(saves) == limit
            since = saves[-1]["at"] if full else 0.0
            captured = browse.slice_sessions(conn, project, since, before)
        return Timeline(project=project, days=_by_day(saves, captured),
                        next_before=since if full else None)


def _existing(conn: sqlite3.Connection, memory_id: int) -> memory_rows.Memory:
    """The memory ``memory_id`` names; every operation says the same when there is none."""
    found = memory_rows.get(conn, memory_id)
    if found is None:
        raise NotFound(f"No memory with id {memory_id}: it was forgotten, merged into "
                       f"another, or never existed (ids are never reused). `memspool "
                       f"memories list` shows the ids.")
    return found


def _by_day(saves: list[dict[str, Any]],
            captured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Saves (newest first) and captured sessions grouped into days (local time),
    each day's sessions newest first, each session's memories once, with every
    action its saves took on them."""
    sessions: dict[str, dict[str, Any]] = {}
    for found in captured:
        sessions[found["session"]] = {**found, "memories": {}}
    for save in saves:
        entry = sessions.setdefault(save["session"], {
            "session": save["session"], "slices": 0, "first_at": save["at"],
            "last_at": save["at"], "memories": {}})
        entry["first_at"] = min(entry["first_at"], save["at"])
        entry["last_at"] = max(entry["last_at"], save["at"])
        memory = entry["memories"].setdefault(save["id"], {
            "id": save["id"], "type": save["type"], "layer": save["layer"],
            "summary": save["summary"], "actions": []})
        if save["action"] not in memory["actions"]:
            memory["actions"].append(save["action"])
    days: dict[str, list[dict[str, Any]]] = {}
    for entry in sorted(sessions.values(), key=lambda e: -e["last_at"]):
        day = time.strftime("%Y-%m-%d", time.localtime(entry["last_at"]))
        days.setdefault(day, []).append({**entry, "memories": list(entry["memories"].values())})
    return [{"day": day, "sessions": found} for day, found in days.items()]


def _folder() -> Path | None:
    """The current folder, or ``None`` when it is gone (a removed worktree: a
    long-lived MCP server may outlive the folder it was started in)."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        return None
