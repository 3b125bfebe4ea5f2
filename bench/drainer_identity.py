"""Is a drainer running? The cost of each way to tell, measured side by side.

    python bench/drainer_identity.py [--rounds 20000]

A real drainer (``memspool drainer --watch``) holds the lock in a child
process; each way of telling is asked ``--rounds`` times, interleaved in
rounds of 100 so machine noise falls on all alike. Printed: microseconds per
call (median of the rounds) and the ratio to the shipped check.

- ``flock probe`` (shipped): open the pid file, take a shared flock without
  waiting, read the pid (the drainer holds an exclusive flock on it).
- ``cmdline word`` (before): read the pid file, then /proc/<pid>/cmdline and
  look for "memspool" in it: fooled by any process whose command line holds
  the word, and Linux only.
- ``pid + start time``: read the pid file, then /proc/<pid>/stat's start time
  and compare it with one the drainer would have written: exact, but Linux
  only (macOS needs sysctl through ctypes or a `ps` process).
- ``kill 0``: read the pid file, then ask whether the pid exists: any process
  with that pid counts.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memspool.config import load_config
from memspool.drainer.lock import drainer_pid

ROUND: int = 100


def _cmdline(pid_path: Path) -> int | None:
    pid = int(pid_path.read_text(encoding="ascii"))
    return pid if b"memspool" in Path(f"/proc/{pid}/cmdline").read_bytes() else None


def _start_time(pid_path: Path, expected: bytes) -> int | None:
    pid = int(pid_path.read_text(encoding="ascii"))
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    fields = stat[stat.rindex(b")") + 2:].split()
    return pid if fields[19] == expected else None


def _kill0(pid_path: Path) -> int | None:
    pid = int(pid_path.read_text(encoding="ascii"))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return pid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memspool-bench-") as folder:
        home = Path(folder) / "home"
        config = load_config(home, env={})
        daemon = subprocess.Popen([sys.executable, "-m", "memspool", "drainer", "--watch",
                                   "--home", str(home)], start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while drainer_pid(config) != daemon.pid:
                if time.monotonic() > deadline:
                    sys.exit("the drainer did not start within 30 s")
                time.sleep(0.05)
            stat = Path(f"/proc/{daemon.pid}/stat").read_bytes()
            started = stat[stat.rindex(b")") + 2:].split()[19]
            pid_path = config.pid_path
            ways: dict[str, Callable[[], int | None]] = {
                "flock probe (shipped)": lambda: drainer_pid(config),
                "cmdline word (before)": lambda: _cmdline(pid_path),
                "pid + start time": lambda: _start_time(pid_path, started),
                "kill 0": lambda: _kill0(pid_path),
            }
            for name, way in ways.items():
                assert way() == daemon.pid, name
            timings: dict[str, list[float]] = {name: [] for name in ways}
            for _ in range(max(1, args.rounds // ROUND)):
                for name, way in ways.items():
                    start = time.perf_counter_ns()
                    for _ in range(ROUND):
                        way()
                    timings[name].append((time.perf_counter_ns() - start) / ROUND / 1000)
        finally:
            os.killpg(daemon.pid, signal.SIGTERM)
            daemon.wait(timeout=30)
    shipped = statistics.median(timings["flock probe (shipped)"])
    print(f"{'check':<24}{'us/call':>10}{'ratio':>8}")
    for name, values in timings.items():
        median = statistics.median(values)
        print(f"{name:<24}{median:>10.2f}{median / shipped:>8.2f}")


if __name__ == "__main__":
    main()
