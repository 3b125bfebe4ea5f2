"""The drainer's process modes: ``--detached`` (spawned by a hook), ``--once``,
``--watch`` (a daemon woken by watchdog) and ``--resume`` (after a crash).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from memspool.base.errors import DrainerBusy, MemspoolError
from memspool.base.home import DRAINER_ARGS
from memspool.config import Config, load_config, private_umask
from memspool.drainer.daemon import (
    POLL_SECS,
    Drainer,
    PassResult,
    install_signal_handlers,
    log,
    setup_logging,
)
from memspool.drainer.lock import DrainerLock, acquire_lock
from memspool.drainer.upkeep import Upkeep
from memspool.spool import ACTIVE_NAME

__all__ = [
    "drain_until_empty", "hand_off", "main", "run_detached", "run_once", "run_resume", "run_watch",
]

#: A freshly spawned drainer waits this long for the lock: the hook that
#: spawned it holds the lock for a moment, and a drainer that is winding down
#: re-checks the spool itself.
DETACHED_LOCK_WAIT: Final = 5.0
#: How often the watch daemon looks at the transcripts it drained for lines
#: written after their hook (a stat call each).
WATCH_POLL_SECS: Final = 1.0
#: The watch daemon exits (non-zero) after this many passes in a row fail:
#: something is wrong that a fresh process may not have (a leaked resource,
#: a replaced folder), and a supervisor restarts it.
MAX_FAILED_PASSES: Final = 5
#: ``--once``/``--resume`` wait this long for a running drainer to finish.
FOREGROUND_LOCK_WAIT: Final = 60.0


def drain_until_empty(drainer: Drainer) -> PassResult:
    total = PassResult()
    while not drainer.stopping:
        result = drainer.loop()
        total.add(result)
        if not drainer.spool.has_pending():
            break
    total.digested += drainer.idle()
    return total


def hand_off(config: Config, lock: DrainerLock, drainer: Drainer,
              work: Callable[[Drainer], object]) -> None:
    """Let go of the lock without stranding a frame.

    A hook that appended while we held the lock saw it taken and spawned no
    drainer, so look at the spool again once the lock is free: if frames
    are waiting and the lock can be had, take it and ``work`` again; if
    someone else took it, they drain (a hook that found it free spawns a
    drainer, a drainer re-checks like this). A drainer told to stop leaves
    them to a new detached drainer.
    """
    while True:
        lock.release()
        if not drainer.spool.has_pending():
            return
        if drainer.stopping:
            spawn_detached(config)  # a stopping drainer passes the frames on
            return
        relock = acquire_lock(config, 0)
        if relock is None:
            return
        lock = relock
        work(drainer)


def spawn_detached(config: Config) -> None:
    """Start a detached drainer for ``config.home``, as a hook would."""
    subprocess.Popen(
        [sys.executable, *DRAINER_ARGS, "--home", str(config.home)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )


def _start(config: Config, lock: DrainerLock, *, recover: bool) -> tuple[Drainer, list[str]]:
    """A ready drainer; tidies the spool first after a crash (or when asked to)."""
    drainer = Drainer(config, Upkeep())
    drainer.initialize()
    notes: list[str] = []
    if lock.crashed_pid is not None:
        notes.append(f"drainer {lock.crashed_pid} had died holding the lock "
                     f"(its flock ended with it)")
    if recover or notes:
        notes.extend(drainer.spool.recover())
    for note in notes:
        log.info("recovery: %s", note)
    return drainer, notes


def run_once(config: Config, *, recover: bool = False) -> tuple[list[str], PassResult]:
    """Drain what is in the spool now, plus due retries, and return.

    A drainer that died holding the lock is noticed and the spool tidied
    first; ``recover`` (``--resume``) tidies it in any case.
    """
    lock = acquire_lock(config, FOREGROUND_LOCK_WAIT)
    if lock is None:
        raise DrainerBusy(f"another drainer kept {config.lock_path} for "
                          f"{FOREGROUND_LOCK_WAIT:.0f} s; it is draining the spool already")
    try:
        drainer, notes = _start(config, lock, recover=recover)
    except BaseException:
        lock.release()
        raise
    try:
        total = drain_until_empty(drainer)
        hand_off(config, lock, drainer, lambda d: total.add(drain_until_empty(d)))
        return notes, total
    except BaseException:
        lock.release()  # a no-op if the hand-off already let go
        raise
    finally:
        drainer.shutdown()


def run_resume(config: Config) -> tuple[list[str], PassResult]:
    """Recover after a crash (dead lock holder, half-written checkpoint, consumed
    segments, torn frames), then drain."""
    return run_once(config, recover=True)


def run_detached(config: Config) -> int:
    """Drain, linger ``idle_grace_secs`` for late lines and frames, hand off, exit."""
    os.chdir("/")
    lock = acquire_lock(config, DETACHED_LOCK_WAIT)
    if lock is None:
        return 0  # the holder re-checks the spool after it lets go
    drainer: Drainer | None = None
    try:
        drainer, _ = _start(config, lock, recover=False)
        install_signal_handlers(drainer)
        _linger(drainer)
        hand_off(config, lock, drainer, _linger)
        return 0
    except Exception:
        log.exception("detached drainer failed; frames stay in the spool for the next one")
        return 1
    finally:
        if drainer is not None:
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
        busy = drainer.drain_grown().busy or busy
        if busy or drainer.idle():
            idle_since = time.monotonic()


def run_watch(config: Config) -> int:
    """Stay up; drain whenever watchdog reports a change in the spool folder."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    lock = acquire_lock(config, 1e9)
    # A lock wait of 1e9 s never times out; the assert narrows the type for mypy.
    assert lock is not None  # noqa: S101 - cannot fail, see above
    try:
        # A daemon (re)started by systemd after a crash tidies the spool first.
        drainer, _ = _start(config, lock, recover=True)
    except BaseException:
        lock.release()
        raise
    wake = threading.Event()
    install_signal_handlers(drainer, wake)

    class Waker(FileSystemEventHandler):
        # Only a hook's append (or a new active segment) is news. The pass's
        # own reads and renames (checkpoint, sealing) must not wake it again.
        def on_created(self, event: FileSystemEvent) -> None:
            self._check(event)

        def on_modified(self, event: FileSystemEvent) -> None:
            self._check(event)

        def _check(self, event: FileSystemEvent) -> None:
            if Path(os.fsdecode(event.src_path)).name == ACTIVE_NAME:
                wake.set()

    observer = Observer()
    observer.schedule(Waker(), str(config.spool_dir), recursive=False)
    observer.start()
    log.info("watching %s", config.spool_dir)
    try:
        code = _watch_loop(drainer, wake)
    finally:
        observer.stop()
        observer.join()
        try:
            hand_off(config, lock, drainer, drain_until_empty)
        finally:
            drainer.shutdown()
    return code


def _watch_loop(drainer: Drainer, wake: threading.Event) -> int:
    """Pass after pass until told to stop; 1 when too many passes in a row failed."""
    last_pass = float("-inf")
    failures = 0
    while not drainer.stopping:
        woken = wake.wait(WATCH_POLL_SECS)
        if drainer.stopping:
            break
        try:
            if woken or time.monotonic() - last_pass >= drainer.config.watch_tick_secs:
                # A burst of hooks produces a burst of events: let it settle.
                time.sleep(POLL_SECS)
                wake.clear()
                last_pass = time.monotonic()
                drainer.loop()
            # Lines Claude Code writes after its hook fired.
            drainer.drain_grown()
            drainer.idle()
        except Exception:
            failures += 1
            log.exception("drain pass failed (%d in a row); retrying at the next wake-up",
                          failures)
            if failures >= MAX_FAILED_PASSES:
                # Holding the lock while every pass fails would keep any other
                # drainer out for good: exit non-zero and let the supervisor
                # (systemd restarts on failure) start afresh.
                log.error("giving up after %d failed passes in a row", failures)
                return 1
        else:
            failures = 0
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true",
                      help="drain what is pending now, then exit (default)")
    mode.add_argument("--watch", action="store_true",
                      help="stay up and drain on every spool change")
    mode.add_argument("--resume", action="store_true", help="recover after a crash, then drain")
    mode.add_argument("--detached", action="store_true", help=argparse.SUPPRESS)
    # SUPPRESS: `memspool --home H drainer` sets it before the command name.
    parser.add_argument("--home", type=Path, default=argparse.SUPPRESS,
                        help="memspool home (default: MEMSPOOL_HOME, else the user data folder)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    # Everything a drainer creates (log, pid file, store) is the user's alone.
    private_umask()
    config = load_config(getattr(args, "home", None))
    setup_logging(config)
    if args.detached:
        return run_detached(config)
    if args.watch:
        return run_watch(config)
    notes, result = run_resume(config) if args.resume else run_once(config)
    summary = {"recovered": notes, **result.__dict__}
    if args.json:
        import orjson

        sys.stdout.write(orjson.dumps(summary).decode() + "\n")
    else:
        for note in notes:
            print(f"recovered: {note}")
        print(f"drained {result.frames} frame(s) into {result.slices} slice(s): "
              f"{result.raw_bytes} transcript bytes -> {result.text_chars} kept characters; "
              f"{result.quarantined} damaged region(s) quarantined; "
              f"{result.digested} slice(s) digested into memory")
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
