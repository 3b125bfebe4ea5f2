"""What an fsync of each frame would cost the capture hook, next to a bare interpreter start.

The hook (``hooks/capture.py``) appends a frame with one ``write`` and exits;
the kernel writes it to disk later. So a frame survives a process crash at
once, but an OS crash or a power loss in the next few seconds can lose it
(docs/durability.md). This bench measures what closing that window would
cost on the hook path: the hook's budget is 1.2x a bare interpreter start.

Run by run, interleaved so machine noise hits every command alike, with a
Stop payload on stdin and output on pipes, the drainer lock held (as while a
drainer runs, so no drainer is spawned):

1. ``bare``: ``<python> -I -S -c pass``;
2. ``hook``: the installed hook command itself (``hooks/capture.py --home``);
3. ``append``: the hook's own steps (resolve the spool package beside the
   hook, check the folders, append one frame) in a script of this bench,
   with nothing after the write: the control, which should match ``hook``;
4. ``fdatasync`` / ``fsync``: the same script, syncing the frame's file
   before closing it, as ``spool.writer.append`` would if it synced.

Then, in this process, the sync calls alone: ``append()`` followed by
``os.fdatasync`` / ``os.fsync`` on the segment, many times, so the cost of a
sync on this disk is seen without any interpreter start around it.

The spool lives under ``--dir`` (default: the system's temporary folder).
Point it at the disk that holds the real home; a tmpfs syncs for free.

Usage::

    .venv/bin/python bench/spool_fsync.py [--runs 200] [--dir PATH]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from hook_latency import Series, drainer_lock_held, run_once, stop_payload

from memspool.hooks import HOOK_SCRIPT
from memspool.install import hook_command
from memspool.spool.writer import ACTIVE_NAME, append

#: Runs per command unless --runs says otherwise.
DEFAULT_RUNS: Final = 200
#: Untimed rounds first, so page cache and .pyc files are warm for every command.
WARMUP_ROUNDS: Final = 10
#: The hook's budget: 1.2x a bare interpreter start (issue 20).
BUDGET_RATIO: Final = 1.2
#: In-process sync calls timed per variant.
SYNC_CALLS: Final = 200

#: The hook's steps with an optional sync before close. ``argv[1]`` is the
#: package's folder (holding base/ and spool/), ``argv[2]`` the home, ``argv[3]`` one of
#: none, fdatasync, fsync. Written to a file so it runs under ``-I -S``
#: exactly as the hook does.
VARIANT: Final = '''
from __future__ import annotations
import fcntl, os, sys
root, home, sync = sys.argv[1], sys.argv[2], sys.argv[3]
package = type(sys)("memspool")
package.__path__ = [root]
sys.modules["memspool"] = package
import memspool.base.home as layout
from memspool.spool.frame import encode
layout.check_private_folder(home)
spool_dir = os.path.join(home, layout.SPOOL_NAME)
layout.check_private_folder(spool_dir)
frame = encode(sys.stdin.buffer.read())
path = os.path.join(spool_dir, "active.seg")
flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
fd = os.open(path, flags, 0o600)
try:
    fcntl.flock(fd, fcntl.LOCK_SH)
    os.write(fd, frame)
    if sync == "fdatasync":
        os.fdatasync(fd)
    elif sync == "fsync":
        os.fsync(fd)
finally:
    os.close(fd)
os._exit(0)
'''


def sync_calls(spool_dir: Path, payload: bytes, how: str) -> list[float]:
    """Seconds per ``append()`` + sync, in this process."""
    times: list[float] = []
    path = spool_dir / ACTIVE_NAME
    for _ in range(SYNC_CALLS):
        start = time.perf_counter()
        append(str(spool_dir), payload)
        if how != "none":
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                os.fdatasync(fd) if how == "fdatasync" else os.fsync(fd)
            finally:
                os.close(fd)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--dir", type=Path, default=None,
                        help="make the bench home under this folder (the disk that matters)")
    args = parser.parse_args()
    python = sys.executable
    root = Path(HOOK_SCRIPT).resolve().parents[1]
    if (root / "src" / "memspool").is_dir():  # a checkout: the package's own folder
        root = root / "src" / "memspool"
    with tempfile.TemporaryDirectory(prefix="memspool-fsync-", dir=args.dir) as tmp:
        home = Path(tmp) / "home"
        spool_dir = home / "spool"
        spool_dir.mkdir(parents=True, mode=0o700)
        home.chmod(0o700)
        script = Path(tmp) / "variant.py"
        script.write_text(VARIANT)
        payload = stop_payload("bench-fsync", home / "none.jsonl", str(home))
        env = dict(os.environ)
        series = [
            Series("bare", [python, "-I", "-S", "-c", "pass"]),
            Series("hook", ["sh", "-c", hook_command(home, python)]),
            *(Series(label, [python, "-I", "-S", str(script), str(root), str(home), how])
              for label, how in (("append", "none"), ("fdatasync", "fdatasync"),
                                 ("fsync", "fsync"))),
        ]
        with drainer_lock_held(home):
            for _ in range(WARMUP_ROUNDS):
                for item in series:
                    run_once(item.argv, payload, env)
            for _ in range(args.runs):
                for item in series:
                    item.times.append(run_once(item.argv, payload, env))
            in_process = {how: sync_calls(spool_dir, payload, how)
                          for how in ("none", "fdatasync", "fsync")}
        fs = subprocess.run(["df", "-T", str(home)], capture_output=True, text=True,  # noqa: S607 - df from PATH, only to name the file system
                            check=False).stdout.splitlines()[-1:]
    bare = series[0].median()
    print(f"# {platform.platform()}, Python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, {args.runs} runs each, interleaved")
    print(f"# spool on: {fs[0] if fs else '?'}")
    print(f"{'command':<10} {'median ms':>10} {'p95 ms':>8} {'x bare':>7}  budget {BUDGET_RATIO}x")
    for item in series:
        ratio = item.median() / bare
        verdict = "" if item.label == "bare" else ("within" if ratio <= BUDGET_RATIO else "OVER")
        print(f"{item.label:<10} {item.median() * 1e3:>10.2f} {item.p95() * 1e3:>8.2f} "
              f"{ratio:>7.2f}  {verdict}")
    print("in process: append() then sync, per call")
    base = statistics.median(in_process["none"])
    for how, times in in_process.items():
        ordered = sorted(times)
        p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
        print(f"{how:<10} {statistics.median(times) * 1e3:>10.3f} {p95 * 1e3:>8.3f}  "
              f"+{(statistics.median(times) - base) * 1e3:.3f} ms over the bare append, "
              f"{(statistics.median(times) - base) / bare:.2f}x a bare start")
    return 0


if __name__ == "__main__":
    sys.exit(main())
