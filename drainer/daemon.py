"""The drainer: spool frames in, slices out. One instance at a time.

Shaped as ``initialize()``, ``loop(now)``, ``shutdown()`` so tests can drive a
pass directly; ``run_detached``, ``run_watch``, ``run_once`` and
``run_resume`` are the process modes around it. Signal handlers only set a
flag.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import signal
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import BinaryIO, Final, Protocol

import zstandard

from memspool.base.errors import TranscriptError
from memspool.base.project import identify
from memspool.config import Config, ensure_private_dir, private_umask
from memspool.drainer.payload import Request, check_transcript_path, parse_payload
from memspool.drainer.ship import Cursor, Target, hold, load_cursor, mark_missing, ship
from memspool.drainer.transcript import slice_transcript
from memspool.redact import redact
from memspool.spool import Position, Spool
from memspool.store import connect, set_state
from memspool.store.projects import remember

__all__ = ["Drainer", "PassResult", "agent_id_of", "install_signal_handlers", "setup_logging"]

#: Frames handled per pass; the rest wait for the next pass (bounded work).
MAX_FRAMES_PER_PASS: Final = 2000
#: How often a detached drainer looks for new frames and grown transcripts
#: while it lingers.
POLL_SECS: Final = 0.2
#: A log file this big is rotated; three old ones are kept.
LOG_MAX_BYTES: Final = 1024 * 1024
#: Transcripts a drainer keeps watching for late lines; a session rarely has
#: more than a few subagents, and a watch daemon sees sessions come and go.
MAX_TOUCHED: Final = 256
#: Lines written this soon after a PreCompact or SessionEnd hook belong to
#: that turn and ship without waiting for the size floor. Claude Code writes
#: its transcript a moment after the hook fires; ten seconds covers the lag.
LATE_FORCE_SECS: Final = 10.0

log = logging.getLogger("memspool.drainer")


class IdleWork(Protocol):
    """Work for a drainer whose spool is empty, handed in by the process mode.

    The ingest stage (this module) turns frames into slices and imports
    nothing from the rooms after it; the process modes hand it
    ``memspool.drainer.upkeep.Upkeep`` (the archivist's digest, context
    blocks, semantic embedding, team sync).
    """

    def __call__(self, drainer: Drainer, /) -> int:
        """Do the work within the configured budget; the slices digested."""

    def close(self) -> None:
        """Let go of what the work kept open (the drainer's ``shutdown`` calls it)."""


@dataclass
class PassResult:
    frames: int = 0
    slices: int = 0
    quarantined: int = 0
    raw_bytes: int = 0
    text_chars: int = 0
    stored_bytes: int = 0
    #: Queued slices digested into memory while the spool was idle.
    digested: int = 0

    def add(self, other: PassResult) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def busy(self) -> bool:
        return bool(self.frames or self.slices or self.quarantined)


@dataclass(frozen=True)
class Touched:
    """A transcript this drainer read, as it was left."""

    target: Target
    #: The last hook event that named it.
    event: str
    #: When a forcing hook (PreCompact, SessionEnd) last came, else ``None``.
    forced_since: float | None
    #: Its size when last read: a different size means new lines.
    size: int


def setup_logging(config: Config) -> None:
    """Log to ``HOME/drainer.log`` (rotated, 0600 through the umask)."""
    ensure_private_dir(config.home)
    for old in [h for h in log.handlers if getattr(h, "_memspool", False)]:
        if Path(old.baseFilename) == config.log_path:  # type: ignore[attr-defined]
            return
        log.removeHandler(old)
        old.close()
    handler = logging.handlers.RotatingFileHandler(
        config.log_path, maxBytes=LOG_MAX_BYTES, backupCount=3, encoding="utf-8"
    )
    handler._memspool = True  # type: ignore[attr-defined]
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def agent_id_of(path: Path) -> str:
    stem = path.stem
    return stem[len("agent-") :] if stem.startswith("agent-") else stem


class Drainer:
    """One drainer: holds the store connection, the spool and the compressor."""

    def __init__(self, config: Config, idle_work: IdleWork | None = None) -> None:
        self.config = config
        #: What to do while the spool is empty (:meth:`idle`); none: only drain.
        self.idle_work = idle_work
        self.stopping = False
        self.spool = Spool(config.spool_dir, log=self._spool_log)
        self._conn: sqlite3.Connection | None = None
        self._compressor = zstandard.ZstdCompressor(level=config.zstd_level)
        #: Transcripts drained by this process, so a lingering drainer (or the
        #: watch daemon) picks up lines Claude Code writes after the hook.
        self.touched: dict[Path, Touched] = {}
        #: Projects this drainer has recorded, and the work tree it saw each in.
        self._projects: dict[str, str | None] = {}

    # -- life cycle ---------------------------------------------------------

    def initialize(self) -> None:
        private_umask()
        setup_logging(self.config)
        self.spool.ensure()
        self._conn = connect(self.config)

    def shutdown(self) -> None:
        if self.idle_work is not None:
            self.idle_work.close()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("Drainer.initialize() was not called")
        return self._conn

    def stop(self, signum: int = 0, frame: FrameType | None = None) -> None:
        self.stopping = True

    def _spool_log(self, message: str) -> None:
        log.warning(message)

    def _error(self, message: str) -> None:
        # A message may quote a payload or a path: redact it like any capture.
        message = redact(message)[0]
        log.error(message)
        if self._conn is not None:
            set_state(self._conn, "last_error", f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}")

    # -- one pass -----------------------------------------------------------

    def loop(self, now: float | None = None) -> PassResult:
        """Seal the active segment, drain every frame past the checkpoint, run due retries."""
        now = time.time() if now is None else now
        result = PassResult()
        quarantined_before = self.spool.quarantined
        self.spool.seal()
        while True:
            requests, last, frames = self._read_batch()
            result.frames += frames
            for request in requests.values():
                result.add(self._drain_request(request, now))
            if last is None:
                break
            self.spool.commit(last)
            if frames < MAX_FRAMES_PER_PASS:
                break
        result.add(self._drain_due(now))
        self.spool.prune_quarantine(now)
        result.quarantined = self.spool.quarantined - quarantined_before
        set_state(self.conn, "last_drain", f"{now:.3f}")
        return result

    def _read_batch(self) -> tuple[dict[tuple[str, Path], Request], Position | None, int]:
        requests: dict[tuple[str, Path], Request] = {}
        last: Position | None = None
        frames = 0
        for position, frame in self.spool.read():
            last = position
            if frame is None:
                continue
            frames += 1
            try:
                request = parse_payload(frame.payload, frame.time_ns, self.config.transcript_roots)
            except Exception as exc:  # noqa: BLE001 - one bad frame must not stop the rest
                self._error(
                    f"skipped spool frame before {position.segment}@{position.offset}: {exc}"
                )
            else:
                for reason in request.rejected:
                    self._error(f"session {request.session_id}: refused part of a frame: {reason}")
                key = (request.session_id, request.transcript)
                if key in requests:
                    requests[key].merge(request)
                else:
                    requests[key] = request
            if frames >= MAX_FRAMES_PER_PASS:
                break
        return requests, last, frames

    def _project(self, cwd: object) -> str:
        """The identity of the project ``cwd`` belongs to, recorded with its name the
        first time this drainer sees it (or when its work tree moved)."""
        identity, name, root, remote = identify(cwd)
        if self._projects.get(identity) != root:
            known = self.conn.execute("SELECT root FROM projects WHERE id = ?",
                                      (identity,)).fetchone()
            if known is None or (root is not None and known[0] != root):
                remember(self.conn, identity, name, root, remote)
            self._projects[identity] = root
        return identity

    def _targets(self, request: Request) -> Iterator[Target]:
        project = self._project(request.cwd)
        yield Target(request.transcript, request.session_id, None, project)
        agents = set(request.agent_transcripts)
        folder = request.transcript.with_suffix("") / "subagents"
        try:
            found = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
        except (OSError, RuntimeError) as exc:  # e.g. a symlink loop under subagents/
            self._error(f"session {request.session_id}: cannot list {folder}: {exc}")
            found = []
        for path in found:
            try:
                agents.add(check_transcript_path(str(path), self.config.transcript_roots))
            except TranscriptError as exc:
                self._error(str(exc))
        for path in sorted(agents):
            yield Target(path, request.session_id, agent_id_of(path), project)

    def _drain_request(self, request: Request, now: float) -> PassResult:
        result = PassResult()
        for target in self._targets(request):
            preamble = request.instructions if target.agent_id is None else None
            result.add(self._drain_safely(target, request.event, request.forced, now,
                                          preamble=preamble))
        return result

    def _drain_safely(self, target: Target, event: str, forced: bool, now: float, *,  # noqa: PLR0913 - drain_target's arguments, passed through
                      preamble: list[tuple[str, str]] | None = None,
                      forced_since: float | None = None) -> PassResult:
        """:meth:`drain_target`, with one transcript's failure kept to itself.

        Anything but a store error is logged and the transcript marked for a
        retry (its frame is consumed, so nothing else would bring it back); a
        store error aborts the pass before the spool checkpoint moves.
        """
        try:
            return self.drain_target(target, event, forced, now, preamble,
                                     forced_since=forced_since)
        except sqlite3.Error:
            raise
        except Exception as exc:  # noqa: BLE001 - see the docstring
            self._error(f"session {target.session_id}: {target.path}: {exc}")
            mark_missing(self.conn, target, load_cursor(self.conn, target.path),
                         event=event, now=now)
            return PassResult()

    def _ship_preamble_alone(self, target: Target, preamble: list[tuple[str, str]] | None,
                             event: str, now: float) -> int:
        """Store PreCompact instructions whose transcript cannot be read (yet)."""
        if not preamble:
            return 0
        for shipment in slice_transcript(
            io.BytesIO(), 0, is_seen=self._is_seen, max_chars=self.config.max_slice_chars,
            max_line=self.config.max_line_bytes, preamble=preamble,
        ):
            if shipment.parts:
                ids, _ = ship(self.conn, target, shipment, event=event, file_id=None, now=now,
                              compressor=self._compressor)
                return len(ids)
        return 0

    def drain_target(  # noqa: PLR0913 - what a frame asks for
        self,
        target: Target,
        event: str,
        forced: bool,
        now: float,
        preamble: list[tuple[str, str]] | None = None,
        *,
        forced_since: float | None = None,
    ) -> PassResult:
        """Slice what is new in one transcript since its cursor.

        ``forced_since`` is when the forcing hook (PreCompact, SessionEnd)
        came, for lines drained after it (see :meth:`drain_grown`).
        """
        cursor = load_cursor(self.conn, target.path)
        try:
            handle, st = self._open_transcript(target)
        except FileNotFoundError:
            if cursor is None or cursor.missing_since is None:
                log.warning("session %s: transcript %s does not exist yet; will retry",
                            target.session_id, target.path)
            result = PassResult()
            result.slices += self._ship_preamble_alone(target, preamble, event, now)
            mark_missing(self.conn, target, cursor, event=event, now=now)
            return result
        except TranscriptError:
            # Keep the instructions, then report the transcript as unusable.
            self._ship_preamble_alone(target, preamble, event, now)
            raise
        with handle:
            offset = self._resync(target, cursor, st, handle)
            if forced and forced_since is None:
                forced_since = now
            self._touch(target, event, forced_since if forced else None, st.st_size)
            return self._ship_new_lines(target, handle, st, cursor, offset, event=event,
                                        forced=forced, now=now, preamble=preamble)

    def _open_transcript(self, target: Target) -> tuple[BinaryIO, os.stat_result]:
        """Open ``target.path`` only if it still resolves under the transcript roots.

        The path was checked when its frame was parsed, but a retry, a grown
        file or a replaced inode opens it again later: a symlink planted in
        between must not lead outside the roots. So the check runs again at
        every open, the file is opened by its resolved path without following
        a final symlink, and the opened file must be the one the check saw.
        """
        resolved = check_transcript_path(str(target.path), self.config.transcript_roots)
        # O_NONBLOCK: a FIFO planted where a transcript should be must not
        # hang the drainer in open(); the regular-file check below rejects it.
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            fd = os.open(resolved, flags)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise TranscriptError(f"cannot open {resolved}: {exc.strerror or exc}",
                                  str(resolved)) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise TranscriptError(f"{resolved} is not a regular file", str(resolved))
            try:
                seen = resolved.stat()
            except FileNotFoundError:
                seen = None
            if seen is None or (seen.st_dev, seen.st_ino) != (st.st_dev, st.st_ino):
                raise TranscriptError(
                    f"{resolved} was replaced while it was being opened; will retry",
                    str(resolved))
            handle = os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)  # every path that does not hand the fd on closes it
            raise
        return handle, st

    def _resync(self, target: Target, cursor: Cursor | None, st: os.stat_result,
                handle: BinaryIO) -> int:
        """Where reading starts: the cursor, or 0 for a replaced, shrunken or rewritten
        file (records already captured are then skipped by their uuid)."""
        offset = cursor.offset if cursor else 0
        if cursor is not None and cursor.ino is not None and (
                (cursor.dev, cursor.ino) != (st.st_dev, st.st_ino)):
            log.warning("session %s: %s was replaced; re-reading it, skipping records "
                        "already captured", target.session_id, target.path)
            return 0
        if offset > st.st_size:
            log.warning("session %s: %s shrank from %d to %d bytes; re-reading it, "
                        "skipping records already captured",
                        target.session_id, target.path, offset, st.st_size)
            return 0
        # A cursor always follows a line's newline. A file emptied and written
        # again in place (the same inode) past the cursor has other bytes there:
        # reading on from the cursor would lose its first records.
        if offset and os.pread(handle.fileno(), 1, offset - 1) != b"\n":
            log.warning("session %s: %s was rewritten (no line ends at byte %d); re-reading "
                        "it, skipping records already captured", target.session_id,
                        target.path, offset)
            return 0
        return offset

    def _ship_new_lines(  # noqa: PLR0913 - one open transcript's state, kept by its caller
        self, target: Target, handle: BinaryIO, st: os.stat_result, cursor: Cursor | None,
        offset: int, *, event: str, forced: bool, now: float,
        preamble: list[tuple[str, str]] | None,
    ) -> PassResult:
        """Cut the lines past ``offset`` into slices: hold a short tail, ship the rest."""
        result = PassResult()
        # The stored cursor already says exactly where this file stands.
        settled = (
            cursor is not None and cursor.offset == offset and cursor.missing_since is None
            and (cursor.dev, cursor.ino) == (st.st_dev, st.st_ino)
        )
        if settled and offset == st.st_size and not preamble:
            return result
        for shipment in slice_transcript(
            handle, offset,
            is_seen=self._is_seen,
            max_chars=self.config.max_slice_chars,
            max_line=self.config.max_line_bytes,
            preamble=preamble,
            mark_sidechain=target.agent_id is None,
        ):
            if shipment.oversized or shipment.malformed:
                log.warning("session %s: %s: skipped %d oversized and %d malformed lines "
                            "in bytes %d-%d", target.session_id, target.path,
                            shipment.oversized, shipment.malformed,
                            shipment.start, shipment.end)
            chars = shipment.chars
            if shipment.tail and 0 < chars < self.config.size_floor_chars and not forced:
                hold(self.conn, target, offset=shipment.start, dev=st.st_dev, ino=st.st_ino,
                     event=event, now=now, held_since=cursor.held_since if cursor else None)
                continue
            if settled and not shipment.parts and shipment.end == offset:
                continue  # nothing new, nothing to record
            ids, stored = ship(self.conn, target, shipment, event=event,
                               file_id=(st.st_dev, st.st_ino), now=now,
                               compressor=self._compressor)
            result.slices += len(ids)
            result.raw_bytes += shipment.end - shipment.start
            result.text_chars += chars
            result.stored_bytes += stored
        return result

    def idle(self) -> int:
        """Run the work for an empty spool that the process mode handed this drainer
        (:class:`IdleWork`: digest queued slices, embed, sync); the slices digested.
        Draining comes first: that work stops as soon as a hook appends a frame."""
        if self.idle_work is None:
            return 0
        return self.idle_work(self)

    def _is_seen(self, key: str) -> bool:
        return self.conn.execute(
            "SELECT 1 FROM seen_records WHERE uuid = ?", (key,)
        ).fetchone() is not None

    def _drain_due(self, now: float) -> PassResult:
        """Ship slices held back too long; retry transcripts that were missing."""
        result = PassResult()
        rows = self.conn.execute(
            """
            SELECT path, session_id, agent_id, project, held_since, missing_since FROM cursors
            WHERE (held_since IS NOT NULL AND held_since <= ?)
               OR (missing_since IS NOT NULL AND missing_since >= ?)
            """,
            (now - self.config.hold_max_secs, now - self.config.missing_retry_secs),
        ).fetchall()
        for row in rows:
            target = Target(Path(row["path"]), row["session_id"], row["agent_id"], row["project"])
            expired = row["held_since"] is not None
            if row["missing_since"] is not None and not target.path.exists():
                continue
            result.add(self._drain_safely(target, "held-expired" if expired else "retry",
                                          expired, now))
        return result

    def drain_grown(self, now: float | None = None) -> PassResult:
        """Drain the transcripts that grew after this process last read them."""
        now = time.time() if now is None else now
        result = PassResult()
        for seen in self.grown_targets():
            # Lines that follow a PreCompact or SessionEnd closely are the end
            # of that turn: forced out too. Later growth is an ordinary turn.
            since = seen.forced_since
            forced = since is not None and now - since <= LATE_FORCE_SECS
            result.add(self._drain_safely(seen.target, seen.event, forced, now,
                                          forced_since=since if forced else None))
        return result

    def _touch(self, target: Target, event: str, forced_since: float | None, size: int) -> None:
        # Most recent last; the oldest are forgotten past the limit, so a
        # long-running watch daemon does not grow with every session it saw.
        self.touched.pop(target.path, None)
        self.touched[target.path] = Touched(target, event, forced_since, size)
        while len(self.touched) > MAX_TOUCHED:
            del self.touched[next(iter(self.touched))]

    def grown_targets(self) -> list[Touched]:
        """Transcripts this process drained that have grown since."""
        grown = []
        for path, seen in list(self.touched.items()):
            try:
                if path.stat().st_size != seen.size:
                    grown.append(seen)
            except OSError:
                continue
        return grown


def install_signal_handlers(drainer: Drainer, wake: threading.Event | None = None) -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        drainer.stop()
        if wake is not None:
            wake.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
