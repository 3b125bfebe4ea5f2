"""The drainer's process modes: ``--detached`` (spawned by a hook), ``--once``,
``--watch`` (a daemon woken by watchdog) and ``--resume`` (after a crash).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from memspool.config import Config, load_config
from memspool.drainer.daemon import (
    POLL_SECS,
    WATCH_TICK_SECS,
    Drainer,
    PassResult,
    acquire_lock,
    install_signal_handlers,
    log,
    setup_logging,
)
from memspool.errors import MemspoolError

__all__ = ["main", "run_detached", "run_once", "run_resume", "run_watch"]

#: A freshly spawned drainer waits this long for the lock: the hook that
#: spawned it holds the lock for a moment, and a drainer that is winding down
#: re-checks the spool itself.
DETACHED_LOCK_WAIT: Final = 5.0
#: ``--once``/``--resume`` wait this long for a running drainer to finish.
FOREGROUND_LOCK_WAIT: Final = 60.0


class DrainerBusy(MemspoolError, RuntimeError):
    """Another drainer holds the lock."""


def _drain_until_empty(drainer: Drainer) -> PassResult:
    total = PassResult()
    while not drainer.stopping:
        result = drainer.loop()
        total.add(result)
        if not drainer.spool.has_pending():
            break
    return total


def run_once(config: Config) -> PassResult:
    """Drain what is in the spool now, plus due retries, and return."""
    lock = acquire_lock(config, FOREGROUND_LOCK_WAIT)
    if lock is None:
        raise DrainerBusy(f"another drainer kept {config.lock_path} for "
                          f"{FOREGROUND_LOCK_WAIT:.0f} s; it is draining the spool already")
    drainer = Drainer(config)
    try:
        drainer.initialize()
        return _drain_until_empty(drainer)
    finally:
        drainer.shutdown()
        lock.release()


def run_resume(config: Config) -> tuple[list[str], PassResult]:
    """Recover after a crash, then drain.

    Recovery covers a stale lock, a half-written checkpoint and consumed segments.
    """
    notes: list[str] = []
    pid_file = config.home / "drainer.pid"
    lock = acquire_lock(config, FOREGROUND_LOCK_WAIT)
    if lock is None:
        raise DrainerBusy(f"a live drainer holds {config.lock_path}; nothing to resume")
    try:
        if pid_file.exists():
            notes.append("the lock was free: any earlier drainer is gone (flock locks die with it)")
        drainer = Drainer(config)
        drainer.initialize()
        try:
            notes.extend(drainer.spool.recover())
            for note in notes:
                log.info("resume: %s", note)
            return notes, _drain_until_empty(drainer)
        finally:
            drainer.shutdown()
    finally:
        lock.release()


def run_detached(config: Config) -> int:
    """Drain, linger ``idle_grace_secs`` for late lines and frames, hand off, exit."""
    os.chdir("/")
    lock = acquire_lock(config, DETACHED_LOCK_WAIT)
    if lock is None:
        return 0  # the holder re-checks the spool after it lets go
    drainer = Drainer(config)
    install_signal_handlers(drainer)
    try:
        drainer.initialize()
        while True:
            _linger(drainer)
            lock.release()
            # Handoff: a hook that appended while we held the lock did not
            # spawn anyone, so look again now that the lock is free.
            if drainer.stopping or not drainer.spool.has_pending():
                return 0
            relock = acquire_lock(config, 0)
            if relock is None:
                return 0  # whoever took it will drain (a hook spawning a drainer, or a drainer)
            lock = relock
    except Exception:
        log.exception("detached drainer failed; frames stay in the spool for the next one")
        return 1
    finally:
        drainer.shutdown()


def _linger(drainer: Drainer) -> None:
    grace = drainer.config.idle_grace_secs
    idle_since = time.monotonic()
    drainer.loop()
    while not drainer.stopping and time.monotonic() - idle_since < grace:
        time.sleep(POLL_SECS)
        busy = False
        if drainer.spool.has_pending():
            busy = drainer.loop().busy
        for target, event in drainer.grown_targets():
            busy = drainer.drain_target(target, event, False, time.time()).busy or busy
        if busy:
            idle_since = time.monotonic()


def run_watch(config: Config) -> int:
    """Stay up; drain whenever watchdog reports a change in the spool folder."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    lock = acquire_lock(config, 1e9)
    # A lock wait of 1e9 s never times out; the assert narrows the type for mypy.
    assert lock is not None  # noqa: S101 - cannot fail, see above
    drainer = Drainer(config)
    wake = threading.Event()
    install_signal_handlers(drainer, wake)
    drainer.initialize()
    for note in drainer.spool.recover():
        log.info("watch start: %s", note)

    class Waker(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            wake.set()

    observer = Observer()
    observer.schedule(Waker(), str(config.spool_dir), recursive=False)
    observer.start()
    log.info("watching %s", config.spool_dir)
    try:
        while not drainer.stopping:
            wake.clear()
            try:
                drainer.loop()
            except Exception:
                log.exception("drain pass failed; retrying at the next wake-up")
            wake.wait(WATCH_TICK_SECS)
            # A burst of hooks produces a burst of events: let it settle.
            time.sleep(POLL_SECS)
    finally:
        observer.stop()
        observer.join()
        drainer.shutdown()
        lock.release()
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true",
                      help="drain what is pending now, then exit (default)")
    mode.add_argument("--watch", action="store_true",
                      help="stay up and drain on every spool change")
    mode.add_argument("--resume", action="store_true", help="recover after a crash, then drain")
    mode.add_argument("--detached", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, default=None,
                        help="memspool home (default: MEMSPOOL_HOME)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    config = load_config(args.home)
    setup_logging(config)
    if args.detached:
        return run_detached(config)
    if args.watch:
        return run_watch(config)
    notes: list[str] = []
    if args.resume:
        notes, result = run_resume(config)
    else:
        result = run_once(config)
    summary = {"recovered": notes, **result.__dict__}
    if args.json:
        import orjson

        sys.stdout.write(orjson.dumps(summary).decode() + "\n")
    else:
        for note in notes:
            print(f"recovered: {note}")
        print(f"drained {result.frames} frame(s) into {result.captures} capture(s): "
              f"{result.raw_bytes} transcript bytes -> {result.text_chars} kept characters; "
              f"{result.quarantined} damaged region(s) quarantined")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memspool.drainer", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except MemspoolError as exc:
        print(f"memspool drainer: error: {exc}", file=sys.stderr)
        return 1
