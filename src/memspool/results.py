"""What :class:`memspool.service.Service` answers, and the bounds every front end shares.

The CLI, the MCP tools, the HTTP API and the web page call the same
operations; each answer is a frozen dataclass here, and ``as_dict()`` gives
the JSON every front end prints (their shapes are pinned by tests). The
bounds (how many search results a call returns, how long a context block
may be, how many memories one MCP ``get`` returns) are set here once:
a front end checks the type of what it is given, :class:`Bound` moves a
number into range, and the HTTP API's OpenAPI document reads the same
numbers.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Final

from memspool.base.answers import ok_fields
from memspool.recall.context import Tier
from memspool.recall.search import Hit
from memspool.store.memories import HistoryEntry, Memory, Provenance
from memspool.store.slices import SliceRow

if TYPE_CHECKING:
    # Names only: the maintenance reports load with the passes that make them.
    from memspool.archivist import DigestReport, MaintainReport

__all__ = [
    "COMPACT_QUERY_CHARS",
    "COMPACT_SUMMARY_CHARS",
    "CONTEXT_CHARS",
    "GET_IDS",
    "SEARCH_LIMIT",
    "SEARCH_OFFSET",
    "Bound",
    "BrowsePage",
    "ContextBlock",
    "Corrected",
    "Edited",
    "Forgotten",
    "Maintained",
    "MemoryPage",
    "MemoryRow",
    "MemoryView",
    "Overview",
    "PassiveCounts",
    "Pinned",
    "Reindexed",
    "Saved",
    "SearchHit",
    "SearchPage",
    "SlicePage",
    "Status",
    "Timeline",
]


@dataclasses.dataclass(frozen=True)
class Bound:
    """A whole number's range, and its value when none is given."""

    least: int
    most: int
    default: int

    def clamp(self, value: int | None) -> int:
        """``value`` moved into ``[least, most]``; ``default`` for ``None``."""
        return self.default if value is None else max(self.least, min(self.most, value))


#: Search results per call. 100 compact rows stay far below what an MCP
#: client accepts (25,000 tokens); more is paged with ``offset``. The web
#: page's limit was 100 already; the HTTP API took up to 1,000, the MCP
#: tool up to 50.
SEARCH_LIMIT: Final = Bound(least=1, most=100, default=10)
#: How deep paging goes: each page ranks every result before it again.
SEARCH_OFFSET: Final = Bound(least=0, most=1000, default=0)
#: A context block's length in characters. Below 200 not one memory fits;
#: above 20,000 a block is twice Claude Code's 10,000-character cut-off for
#: injected text. A call that gives no length gets ``context_max_chars``
#: from the configuration (whose own default ``default`` repeats).
CONTEXT_CHARS: Final = Bound(least=200, most=20_000, default=8000)
#: Memories one MCP ``get`` returns in full.
GET_IDS: Final = Bound(least=1, most=10, default=10)
#: A search row's summary in a compact listing (MCP) is cut here; ``get`` has all.
COMPACT_SUMMARY_CHARS: Final = 200
#: A compact page (MCP) says its query back cut here, marked with "…": the agent
#: sent it, and a query of megabytes (the HTTP API's body limit is 8 MiB, MCP has
#: none) must not come back whole in an answer meant to stay small.
COMPACT_QUERY_CHARS: Final = 200


@dataclasses.dataclass
class SearchHit(Hit):
    """One search result: the memory as :class:`~memspool.recall.search.Hit` ranks it,
    with its project's readable name."""

    project_name: str = ""

    @classmethod
    def of(cls, hit: Hit, project_name: str) -> SearchHit:
        fields = {f.name: getattr(hit, f.name) for f in dataclasses.fields(hit)}
        return cls(**fields, project_name=project_name)

    def compact(self) -> dict[str, Any]:
        """The row an agent scans: id, project, type, summary (cut), score."""
        return {"id": self.id, "project": self.project, "type": self.type,
                "summary": self.summary[:COMPACT_SUMMARY_CHARS], "score": self.score}


@dataclasses.dataclass(frozen=True)
class SearchPage:
    """One page of results for ``query``, best first; ``more``: another page follows.
    ``note``: why the page is empty when the project asked for is one the store has
    never seen (a typo, most often), with the projects it has."""

    query: str
    offset: int
    results: list[SearchHit]
    more: bool
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return self._with_note({"query": self.query, "offset": self.offset,
                                "results": [found.as_dict() for found in self.results],
                                "more": self.more})

    def compact(self) -> dict[str, Any]:
        """The page an agent reads: compact rows, the query cut at COMPACT_QUERY_CHARS."""
        query = self.query if len(self.query) <= COMPACT_QUERY_CHARS else \
            self.query[:COMPACT_QUERY_CHARS - 1] + "\u2026"
        return self._with_note({"query": query, "offset": self.offset,
                                "results": [found.compact() for found in self.results],
                                "more": self.more})

    def _with_note(self, page: dict[str, Any]) -> dict[str, Any]:
        if self.note is not None:
            page["note"] = self.note
        return page


@dataclasses.dataclass(frozen=True)
class SlicePage:
    """One stored slice and its redacted text (the memory browser's slice page)."""

    slice: SliceRow
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {**self.slice.as_dict(), "text": self.text}


@dataclasses.dataclass(frozen=True)
class ContextBlock:
    """A project's context block (``text`` is empty when it has no memory in recall).
    ``project`` is the project as the caller named it (its identity when none was named);
    ``note``, as a search page's, says when it is a project the store has never seen."""

    project: str
    text: str
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        block: dict[str, Any] = {"project": self.project, "text": self.text}
        if self.note is not None:
            block["note"] = self.note
        return block


@dataclasses.dataclass(frozen=True)
class Saved:
    """One explicit memory saved: its id and key, and whether it was ``created``,
    ``updated`` (a key that existed) or ``merged`` into a memory saying the same."""

    id: int | None
    key: str
    action: str

    def as_dict(self) -> dict[str, Any]:
        return ok_fields(self)


@dataclasses.dataclass(frozen=True)
class Forgotten:
    """A memory forgotten: its project and summary (for the caller's record),
    whether the WAL could be cleared at once, and, when its source slices were
    purged too, how many."""

    forgotten: int
    project: str
    summary: str
    wal_cleared: bool
    slices_scrubbed: int | None = None

    def as_dict(self) -> dict[str, Any]:
        found = ok_fields(self)
        if self.slices_scrubbed is None:
            del found["slices_scrubbed"]
        return found


@dataclasses.dataclass(frozen=True)
class PassiveCounts:
    """Learnings items saved (new or updated), skipped, and found in all."""

    saved: int
    skipped: int
    total: int

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class MemoryRow:
    """One memory in a listing, with its project's readable name, who shared it
    (``origin``, for a memory a teammate stated first) and whether it is pinned."""

    memory: Memory
    project_name: str
    origin: dict[str, str] | None
    pinned: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self.memory), "project_name": self.project_name,
                "origin": self.origin, "pinned": self.pinned}


@dataclasses.dataclass(frozen=True)
class MemoryView:
    """One memory with its project's readable name, who shared it (``origin``, for a
    memory a teammate stated first), its earlier texts, its provenance, whether a
    person pinned it (decay never archives it) and when one last corrected it."""

    memory: Memory
    project_name: str
    origin: dict[str, str] | None
    history: list[HistoryEntry]
    provenance: list[Provenance]
    pinned: bool = False
    #: When a person last corrected its text (``None``: never); the archivist then
    #: corroborates it without rewriting it.
    edited_at: float | None = None
    #: The tier of recall it is in (``strict``: the context block lists it while it has
    #: room; ``searchable``; ``out of recall``), why, and whether its project's stored
    #: block lists it (:func:`memspool.recall.context.tier`).
    tier: Tier | None = None

    def as_dict(self, *, history: bool = True) -> dict[str, Any]:
        """The memory's fields with the rest beside them; without ``history`` when
        the caller did not ask for the earlier texts."""
        found: dict[str, Any] = {
            **dataclasses.asdict(self.memory), "project_name": self.project_name,
            "origin": self.origin, "pinned": self.pinned, "edited_at": self.edited_at,
            "tier": self.tier.name if self.tier else None,
            "tier_why": self.tier.why if self.tier else None,
            "in_context_block": self.tier.listed if self.tier else None,
            "history": [dataclasses.asdict(entry) for entry in self.history],
            "provenance": [dataclasses.asdict(entry) for entry in self.provenance]}
        if not history:
            del found["history"]
        return found


@dataclasses.dataclass(frozen=True)
class Reindexed:
    """A reindex: memories queued for a vector of ``model``, how many were embedded,
    and the seconds it took (to the millisecond)."""

    queued: int
    embedded: int
    model: str
    secs: float

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Maintained:
    """One maintenance: the digest of the queue, the major pass, the team sync
    (``None`` when nothing is shared; its report, or ``{"ok": false, "error": ...}``
    when the server could not be reached) and the reindex (``None`` unless asked)."""

    digest: DigestReport
    maintain: MaintainReport
    team: dict[str, Any] | None = None
    reindex: Reindexed | None = None

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"ok": True, "digest": self.digest.as_dict(),
                                 "maintain": self.maintain.as_dict()}
        if self.team is not None:
            found["team"] = self.team
        if self.reindex is not None:
            found["reindex"] = self.reindex.as_dict()
        return found


@dataclasses.dataclass(frozen=True)
class BrowsePage:
    """One page of the memory browser: its memories (each a memory's fields and
    ``pinned``), its number (from 1), whether an older page follows, and every
    project for the filter, as (identity, readable name)."""

    memories: list[dict[str, Any]]
    page: int
    has_next: bool
    projects: list[tuple[str, str]]

    def as_dict(self) -> dict[str, Any]:
        """The page template's fields, by name."""
        return {"memories": self.memories, "page": self.page, "has_next": self.has_next,
                "projects": self.projects}


@dataclasses.dataclass(frozen=True)
class Status:
    """``memspool status``: the home, the spool's backlog, the drainer and hooks,
    the store's counts (``None`` when the store cannot be read; ``store`` says
    why), the memories by layer, the last maintenance pass (its report), semantic
    recall (on or off and why, with its vector counts) and the team (``None``
    when nothing is shared)."""

    home: str
    home_exists: bool
    pending_frames: int
    pending_bytes: int
    quarantined_files: int
    drainer_running: bool
    hooks_settings: str
    hooks_installed: list[str]
    store: str
    slices_queued: int | None
    slices_total: int | None
    sessions_tracked: int | None
    slices_held_back: int | None
    transcripts_missing: int | None
    memories: int | None
    last_drain: float | None
    last_error: str | None
    memories_by_layer: dict[str, int] | None
    last_maintain: dict[str, Any] | None
    #: Memories the stored context blocks list (of the strict tier, those within budget).
    memories_in_context: int | None
    semantic: dict[str, Any]
    team: dict[str, Any] | None
    hook_errors: int

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Overview:
    """The web page's overview: ``memspool status``'s facts, each project's memories
    counted by layer and type, and the sessions captured last."""

    status: Status
    projects: list[dict[str, Any]]
    sessions: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        """The overview template's fields, by name."""
        return {"status": self.status.as_dict(), "projects": self.projects,
                "sessions": self.sessions}


@dataclasses.dataclass(frozen=True)
class Timeline:
    """One page of a project's timeline: its sessions by day, newest first (each
    day a dict with its sessions and the memories their saves created or changed),
    and ``next_before``, the time the next page starts before (``None`` on the last)."""

    project: str
    days: list[dict[str, Any]]
    next_before: float | None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Edited:
    """A person's correction of memory ``id``; ``changed`` is false when the new
    text and type were the old ones."""

    id: int
    changed: bool

    def as_dict(self) -> dict[str, Any]:
        return ok_fields(self)


@dataclasses.dataclass(frozen=True)
class Corrected:
    """A person's correction of memory ``id``: ``changed`` whether its text or type
    changed, ``pinned`` whether it is pinned now."""

    id: int
    changed: bool
    pinned: bool

    def as_dict(self) -> dict[str, Any]:
        return ok_fields(self)


@dataclasses.dataclass(frozen=True)
class Pinned:
    """Memory ``id`` pinned (kept from decay) or, with ``pinned`` false, unpinned;
    ``changed`` is false when it already was."""

    id: int
    pinned: bool
    changed: bool = True

    def as_dict(self) -> dict[str, Any]:
        return ok_fields(self)


@dataclasses.dataclass(frozen=True)
class MemoryPage:
    """A memory as its web page shows it: pinned or not, when a person last corrected
    it, when it was last recalled, its earlier texts, its provenance, the memory that
    superseded it and those it superseded."""

    memory: Memory
    pinned: bool
    last_recalled: float | None
    history: list[HistoryEntry]
    provenance: list[Provenance]
    superseded_by_memory: Memory | None
    supersedes: list[Memory]
    #: When a person last corrected it (``None``: never).
    edited_at: float | None = None
    #: The tier of recall it is in, and why (as :class:`MemoryView`'s).
    tier: Tier | None = None

    def as_dict(self) -> dict[str, Any]:
        """The memory's fields with the rest beside them (the page template's names)."""
        return {
            **dataclasses.asdict(self.memory), "pinned": self.pinned,
            "edited_at": self.edited_at,
            "tier": self.tier.name if self.tier else None,
            "tier_why": self.tier.why if self.tier else None,
            "in_context_block": self.tier.listed if self.tier else None,
            "last_recalled": self.last_recalled,
            "history": [dataclasses.asdict(entry) for entry in self.history],
            "provenance": [dataclasses.asdict(entry) for entry in self.provenance],
            "superseded_by_memory": None if self.superseded_by_memory is None else
            dataclasses.asdict(self.superseded_by_memory),
            "supersedes": [dataclasses.asdict(m) for m in self.supersedes]}
