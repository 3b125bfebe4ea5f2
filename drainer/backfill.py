"""Backfill: capture the Claude Code history that exists already.

Transcripts written before memspool was installed never had a hook fire for
them. Backfill finds them under the transcript roots and drains each one
through the drainer's own ``drain_target``, holding the drainer lock, so the
same cursors and seen record ids decide what is new: running it twice, or
after the hooks already captured a session, stores nothing twice. Then the
minor pass digests the whole queue into memory and the context blocks are
rendered. Frames hooks append meanwhile are drained on the way out.

When a drainer that stays up (``memspool drainer --watch``, the systemd
unit) holds the lock, backfill hands the transcripts to it instead: one
frame per session in the spool, as a hook would append, with the event
``backfill`` (which forces the session's last turn out); it waits while the
drainer takes them, then digests the queue itself. A holder that takes
nothing for a few seconds is not draining (a stuck process, or something
else holding the lock): backfill drains the frames itself if the lock is
free by then, else stops with a message that says where the frames are.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final

from memspool.archivist import digest
from memspool.base.errors import DrainerBusy, MemspoolError, TranscriptError
from memspool.base.project import identify
from memspool.config import Config
from memspool.distill.similarity import Profiles

# The drainer's own rules (agent ids, session ids, the hand-off): a backfilled
# file is filed, and the lock let go, exactly as a drainer does.
from memspool.drainer.daemon import Drainer, agent_id_of, log
from memspool.drainer.lock import DrainerLock, acquire_lock, drainer_pid, drainer_running
from memspool.drainer.modes import FOREGROUND_LOCK_WAIT, drain_until_empty, hand_off
from memspool.drainer.payload import ID_SHAPE, check_transcript_path
from memspool.drainer.ship import Target
from memspool.drainer.upkeep import Upkeep
from memspool.recall import render_dirty
from memspool.redact import redact
from memspool.spool import Spool, append
from memspool.store import connect, set_state, transaction
from memspool.store.projects import remember
from memspool.untrusted import parse_json

__all__ = ["EVENT", "BackfillReport", "Progress", "Skipped", "backfill"]

#: The event backfilled slices are filed under (``memspool slices list`` shows it).
EVENT: Final = "backfill"
#: Where a transcript's recorded ``cwd`` is looked for: its first lines. Early
#: records are short; a long line (a pasted file) ends the search rather than
#: being read into memory.
PEEK_LINES: Final = 50
PEEK_LINE_BYTES: Final = 1024 * 1024
#: Slices digested between two progress updates.
DIGEST_BATCH: Final = 50
#: A drainer still holding the lock after this long stays up: backfill hands it the work.
HANDOVER_AFTER_SECS: Final = 5.0
#: A drainer that takes nothing for this long (no frame off the spool, no new
#: slice) is not draining: backfill stops waiting on it. A drainer reading a
#: long transcript ships a slice every few hundred kilobytes, well within it.
HANDOVER_STALL_SECS: Final = 5.0
#: How often backfill looks at the spool and the queue while it waits.
HANDOVER_POLL_SECS: Final = 0.1

#: ``progress(phase, total)`` is called when a phase ("files", then "slices")
#: starts and returns a function that is told how many more are done.
Progress = Callable[[str, int], Callable[[int], None]]


@dataclasses.dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclasses.dataclass
class BackfillReport:
    """What one backfill did."""

    files: int = 0
    slices: int = 0
    raw_bytes: int = 0
    memories_created: int = 0
    #: Files left out by ``since_days``.
    older: int = 0
    skipped: list[Skipped] = dataclasses.field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"ok": True, "files": self.files, "slices": self.slices,
                "raw_bytes": self.raw_bytes, "memories_created": self.memories_created,
                "older": self.older,
                "skipped": [dataclasses.asdict(s) for s in self.skipped]}


def backfill(  # noqa: PLR0913 - the CLI's flags, keyword-only
    config: Config,
    paths: Iterable[Path] = (),
    since_days: float | None = None,
    *,
    lock_wait: float = FOREGROUND_LOCK_WAIT,
    now: float | None = None,
    progress: Progress | None = None,
) -> BackfillReport:
    """Capture existing transcripts (``paths``, else every one under the roots), then digest.

    A named path outside the transcript roots raises :class:`TranscriptError`
    before anything is read. A file that cannot be used is skipped and
    reported; the others are still captured.
    """
    now = time.time() if now is None else now
    report = BackfillReport()
    files = _select(_find(config, list(paths), report), since_days, now, report)
    # A detached drainer lets go within seconds of its last work; one that
    # keeps the lock longer is a drainer that stays up (the watch daemon): it
    # takes the transcripts as it takes hooks' frames.
    first_wait = min(lock_wait, HANDOVER_AFTER_SECS)
    lock = acquire_lock(config, first_wait)
    if lock is None and drainer_running(config):
        return _hand_to_running_drainer(config, files, report, progress)
    if lock is None and lock_wait > first_wait:
        lock = acquire_lock(config, lock_wait - first_wait)
    if lock is None:
        raise DrainerBusy(
            f"Another process kept {config.lock_path} for {lock_wait:g} s, and no drainer "
            f"runs that could take the transcripts. Try again; `memspool doctor` looks at "
            f"the lock.")
    drainer = Drainer(config, Upkeep())
    try:
        drainer.initialize()
        if lock.crashed_pid is not None:
            # As any drainer does on finding its predecessor died holding the lock.
            for note in drainer.spool.recover():
                log.info("recovery: %s", note)
        advance = progress("files", len(files)) if progress else None
        for path in files:
            _drain_file(drainer, path, now, report)
            if advance:
                advance(1)
        if report.files:
            # Transcripts were read into slices here, as a drain pass reads them:
            # `memspool status` says when, not "never".
            with transaction(drainer.conn):
                set_state(drainer.conn, "last_drain", f"{time.time():.3f}")
        _digest_all(drainer.conn, config, report, progress)
        render_dirty(drainer.conn, config.context_max_chars)
        log.info("backfill: %d file(s), %d slice(s), %d new memories, %d skipped",
                 report.files, report.slices, report.memories_created, len(report.skipped))
        # Let go as every drainer does: a hook that appended while we held the
        # lock started no drainer, so its frames are drained here.
        hand_off(config, lock, drainer, drain_until_empty)
    except BaseException:
        lock.release()  # a no-op if the hand-off already let go
        raise
    finally:
        drainer.shutdown()
    return report


def _hand_to_running_drainer(config: Config, files: list[Path], report: BackfillReport,
                             progress: Progress | None) -> BackfillReport:
    """Append one frame per session (event ``backfill``, forcing its last turn out) for
    the running drainer, wait until it has taken them, then digest the queue here
    (the minor pass marks each slice digested once, whoever runs it)."""
    conn = connect(config)
    try:
        before = int(conn.execute("SELECT coalesce(max(id), 0) FROM slices").fetchone()[0])
        frames: dict[Path, dict[str, str]] = {}
        advance = progress("files", len(files)) if progress else None
        for path in files:
            reason = _frame_for(conn, config.transcript_roots, path, frames)
            if reason:
                report.skipped.append(Skipped(str(path), reason))
            else:
                report.files += 1
            if advance:
                advance(1)
        for frame in frames.values():
            append(str(config.spool_dir), json.dumps(frame).encode())
        if not _wait_for_drainer(conn, config, len(frames), progress):
            # The holder takes nothing: drain the frames here once it lets go.
            lock = acquire_lock(config, 0)
            if lock is None:
                raise DrainerBusy(
                    f"The process holding {config.lock_path} (pid "
                    f"{drainer_pid(config) or 'unknown'}) took none of the {len(frames)} "
                    f"backfill frame(s) in {HANDOVER_STALL_SECS:g} s, so it is not draining. "
                    f"The frames stay in the spool, safe: once that process lets go, "
                    f"`memspool drainer --once` drains them and `memspool maintain` digests "
                    f"them. `memspool doctor` looks at the lock.")
            _drain_spool_here(config, lock)
        row = conn.execute("SELECT count(*), coalesce(sum(byte_end - byte_start), 0)"
                           " FROM slices WHERE id > ?", (before,)).fetchone()
        report.slices, report.raw_bytes = int(row[0]), int(row[1])
        _digest_all(conn, config, report, progress)
        # The running drainer digests too, when idle: count what the new slices made.
        report.memories_created = int(conn.execute(
            "SELECT count(DISTINCT memory_id) FROM provenance WHERE slice_id > ?"
            " AND action = 'created'", (before,)).fetchone()[0])
        render_dirty(conn, config.context_max_chars)
        log.info("backfill through the running drainer: %d file(s), %d slice(s), %d new "
                 "memories, %d skipped", report.files, report.slices, report.memories_created,
                 len(report.skipped))
    finally:
        conn.close()
    return report


def _wait_for_drainer(conn: sqlite3.Connection, config: Config, frames: int,
                      progress: Progress | None) -> bool:
    """Wait while the lock holder takes the spool's frames; ``True`` once it has taken
    them all, ``False`` when it lets go of the lock or takes nothing (no frame off the
    spool, no new slice) for HANDOVER_STALL_SECS."""
    spool = Spool(config.spool_dir)
    advance = progress("hand-over", frames) if progress else None
    left = spool.pending()[0]
    last_sign: tuple[int, int] | None = None
    last_move = time.monotonic()
    while spool.has_pending():
        pending = spool.pending()
        sign = (pending[1], _newest_slice(conn))
        if sign != last_sign:
            last_sign, last_move = sign, time.monotonic()
            if advance and pending[0] < left:
                advance(left - pending[0])
            left = min(left, pending[0])
        if not drainer_running(config) or time.monotonic() - last_move > HANDOVER_STALL_SECS:
            return False
        time.sleep(HANDOVER_POLL_SECS)
    if advance and left:
        advance(left)
    return True


def _newest_slice(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM slices").fetchone()[0])


def _drain_spool_here(config: Config, lock: DrainerLock) -> None:
    """Drain the spool (the backfill frames with it) as any drainer would, then let go."""
    drainer = Drainer(config, Upkeep())
    try:
        drainer.initialize()
        if lock.crashed_pid is not None:
            for note in drainer.spool.recover():
                log.info("recovery: %s", note)
        drain_until_empty(drainer)
        hand_off(config, lock, drainer, drain_until_empty)
    finally:
        lock.release()  # a no-op if the hand-off already let go
        drainer.shutdown()


def _frame_for(conn: sqlite3.Connection, roots: tuple[Path, ...], path: Path,
               frames: dict[Path, dict[str, str]]) -> str:
    """Add the frame that makes a drainer read ``path`` (its session's main transcript;
    the drainer reads the session's subagents with it); a reason when there is none."""
    target = _target(conn, roots, path) if path.exists() else "it no longer exists"
    if isinstance(target, str):
        return target
    main = path if target.agent_id is None else \
        path.parent.parent.parent / f"{target.session_id}.jsonl"
    if not main.is_file():
        return ("its session's main transcript is gone, so a running drainer cannot file it; "
                "stop that drainer, run the backfill, then start it again")
    # The drainer names the project from the frame's cwd, as from a hook's: the
    # recorded cwd, else a path whose last part is the name backfill chose.
    cwd = _recorded(main, "cwd", roots) or (
        target.project if target.project.startswith("/") else f"/{target.project}")
    frames.setdefault(main, {"session_id": target.session_id, "transcript_path": str(main),
                             "cwd": cwd, "hook_event_name": EVENT})
    return ""


def _find(config: Config, paths: list[Path], report: BackfillReport) -> dict[Path, float]:
    """The transcripts to read (resolved path -> mtime). Named paths are checked first,
    all of them, so a refused one stops the run before anything is read."""
    roots = config.transcript_roots
    folders: list[Path] = []
    named: list[Path] = []
    for raw in paths:
        path = raw.expanduser().absolute()
        if path.is_dir():
            folders.append(_check_folder(path, roots))
        elif path.exists():
            named.append(check_transcript_path(str(path), roots))
        else:
            raise TranscriptError(f"{path} does not exist; name a transcript (.jsonl) or a "
                                  f"folder of them under the transcript roots.", str(path))
    if not paths:
        # A root that does not exist (no Claude Code config there) is no error.
        folders = [root for root in roots if root.is_dir()]
    found: dict[Path, float] = {}
    candidates = [*named, *(f for folder in folders for f in _walk(folder, report))]
    for candidate in candidates:
        try:
            resolved = check_transcript_path(str(candidate), roots)
            found.setdefault(resolved, resolved.stat().st_mtime)
        except OSError as exc:  # TranscriptError too: its message says what to do
            reason = str(exc) if isinstance(exc, TranscriptError) else exc.strerror
            report.skipped.append(Skipped(str(candidate), reason or str(exc)))
    return found


def _check_folder(folder: Path, roots: tuple[Path, ...]) -> Path:
    resolved = folder.resolve()
    if any(resolved.is_relative_to(root.resolve()) for root in roots):
        return resolved
    allowed = ", ".join(str(r) for r in roots) or "(none)"
    raise TranscriptError(
        f"{folder} is outside the transcript roots ({allowed}); add it to transcript_roots "
        f"in config.toml if it holds Claude Code transcripts", str(folder))


def _walk(folder: Path, report: BackfillReport) -> Iterator[Path]:
    def failed(exc: OSError) -> None:
        report.skipped.append(Skipped(str(exc.filename), f"cannot list it: {exc.strerror}"))

    # followlinks=False: a symlinked folder could loop or lead out of the roots.
    for top, dirs, names in os.walk(folder, onerror=failed):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".jsonl"):
                yield Path(top, name)


def _select(found: dict[Path, float], since_days: float | None, now: float,
            report: BackfillReport) -> list[Path]:
    """Oldest first, as hooks would have seen them: a resumed session's file replays
    the earlier session's records, which belong to the session that wrote them first."""
    cutoff = None if since_days is None else now - since_days * 86400
    chosen = [(mtime, path) for path, mtime in found.items() if cutoff is None or mtime >= cutoff]
    report.older = len(found) - len(chosen)
    return [path for _, path in sorted(chosen)]


def _drain_file(drainer: Drainer, path: Path, now: float, report: BackfillReport) -> None:
    try:
        target = (_target(drainer.conn, drainer.config.transcript_roots, path)
                  if path.exists() else "it no longer exists")
        if isinstance(target, str):  # cleaned up by Claude Code, or not a transcript
            report.skipped.append(Skipped(str(path), target))
            return
        # forced: a short last turn is shipped, not held back for a hook that
        # will never come for an old session.
        result = drainer.drain_target(target, EVENT, True, now)
    except sqlite3.Error:
        raise  # the store failed: stop, as a drain pass does
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the rest
        reason = redact(str(exc))[0]
        log.warning("backfill: skipped %s: %s", path, reason)
        report.skipped.append(Skipped(str(path), reason))
        return
    report.files += 1
    report.slices += result.slices
    report.raw_bytes += result.raw_bytes


def _target(conn: sqlite3.Connection, roots: tuple[Path, ...], path: Path) -> Target | str:
    """Whose transcript ``path`` is, filed as a hook would file it; a string says why not."""
    known = conn.execute(
        "SELECT session_id, agent_id, project FROM cursors WHERE path = ?", (str(path),)
    ).fetchone()
    if known is not None:  # a hook (or an earlier backfill) filed it: keep that
        return Target(path, known["session_id"], known["agent_id"], known["project"])
    if path.parent.name == "subagents":  # <dir>/<session>/subagents/agent-<id>.jsonl
        session = path.parent.parent.name
        main = path.parent.parent.parent / f"{session}.jsonl"
        # The session's main transcript names the project, as the hook's cwd would.
        project = _project(conn, roots, main if main.is_file() else path, path.parents[2].name)
        agent: str | None = agent_id_of(path)
    elif path.stem.startswith("agent-"):  # older versions: beside the main transcript
        session = _recorded(path, "sessionId", roots) or path.stem
        project = _project(conn, roots, path, path.parent.name)
        agent = agent_id_of(path)
    else:
        session, agent = path.stem, None
        project = _project(conn, roots, path, path.parent.name)
    if not ID_SHAPE.fullmatch(session):
        return f"{session!r} is not a Claude Code session id, so this is not a transcript"
    return Target(path, session, agent, project)


def _project(conn: sqlite3.Connection, roots: tuple[Path, ...], transcript: Path,
             folder: str) -> str:
    known = conn.execute("SELECT project FROM cursors WHERE path = ?",
                         (str(transcript),)).fetchone()
    if known is not None:  # the hook named it from its payload's cwd
        return str(known["project"])
    cwd = _recorded(transcript, "cwd", roots)
    if not cwd:
        # Claude Code names a transcript's folder after the session's folder
        # with "/" as "-": where that path exists, it is the project.
        decoded = folder.replace("-", "/")
        cwd = decoded if decoded.startswith("/") and Path(decoded).is_dir() else None
    if not cwd:
        return folder
    identity, name, root, remote = identify(cwd)
    with transaction(conn):
        remember(conn, identity, name, root, remote)
    return identity


def _recorded(path: Path, field: str, roots: tuple[Path, ...]) -> str | None:
    """The first string ``field`` among the transcript's first records, else ``None``."""
    try:
        # Checked against the roots at every open, as the drainer does (invariant 7).
        resolved = check_transcript_path(str(path), roots)
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except (OSError, TranscriptError):
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        for _ in range(PEEK_LINES):
            line = handle.readline(PEEK_LINE_BYTES)
            if not line.endswith(b"\n"):
                return None  # the end, a half-written line, or a line too long to peek at
            try:
                record = parse_json(line)
            except ValueError:
                continue
            value = record.get(field) if isinstance(record, dict) else None
            if isinstance(value, str) and value:
                return value
    return None


def _digest_all(conn: sqlite3.Connection, config: Config, report: BackfillReport,
                progress: Progress | None) -> None:
    """The minor pass over the whole queue (no time budget), in batches for the progress bar."""
    queued = conn.execute(
        "SELECT count(*) FROM slices WHERE digested_at IS NULL").fetchone()[0]
    advance = progress("slices", queued) if progress else None
    profiles = Profiles()
    try:
        while True:
            done = digest(conn, config, max_slices=DIGEST_BATCH, profiles=profiles)
            report.memories_created += done.created
            if advance:
                advance(done.slices)
            if not done.stopped_early:
                return
    except sqlite3.Error:
        raise
    except Exception as exc:
        log.exception("backfill: digesting the queue failed")
        # The slices are committed: say so, and how they get digested.
        raise MemspoolError(
            f"Backfill stored {report.slices} slice(s) from {report.files} file(s), but "
            f"digesting the queue failed ({redact(str(exc))[0]}). The slices stay queued; "
            f"`memspool maintain` digests them (see {config.log_path}).") from exc
