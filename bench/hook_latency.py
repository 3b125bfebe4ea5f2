"""Wall time of the installed memspool hook next to a bare interpreter start.

Runs the exact command ``memspool install`` writes into settings.json
(``<python> -I -S <repo>/hooks/capture.py --home <home> # memspool-hook``)
the way Claude Code runs it: ``sh -c <command>`` with a Stop payload on stdin
and stdout/stderr on pipes. Next to it, run by run, ``sh -c '<python> -I -S -c
pass'`` on the same interpreter, so machine noise hits both. The ratio of the
two medians is the figure to watch (target: <= 1.5).

Two variants:

1. append only: the bench holds ``HOME/drainer.lock`` (flock, as a running
   drainer would), so the hook appends its frame, finds the lock taken and
   exits. This is the hook's cost on every turn while a drainer is alive.
2. spawn: the lock is free, so every hook also spawns a fully detached
   drainer (``posix_spawn``, new session). The spawn counts in the hook's
   time; the drainer's own run does not, except where it competes for a CPU
   while the hook is still finishing. The bench waits for each drainer to
   exit (idle grace 0) before the next run, so drainers never pile up.

3. project identity: the SessionStart hook (``hooks/context.py``), which
   identifies the session's project from its folder by reading
   ``.git/config`` itself (no ``git`` process), in a linked work tree of a
   repository with a remote (the longest way: ``.git`` file, ``commondir``,
   then the config) and in a folder outside git, next to a bare start; and
   ``identify()`` in process, per call.

Usage::

    .venv/bin/python bench/hook_latency.py [--runs 200] [--spawn-runs N] [--no-spawn] [--importtime]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import json
import math
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from memspool.base.project import identify
from memspool.config import load_config
from memspool.hooks import CONTEXT_SCRIPT, HOOK_SCRIPT
from memspool.install import hook_command
from memspool.spool import Spool
from memspool.store import connect

#: Runs per variant unless --runs says otherwise.
DEFAULT_RUNS: Final = 200
#: Untimed rounds first, so page cache and .pyc files are warm for every command.
WARMUP_ROUNDS: Final = 10
#: How long a spawned drainer may take to start, drain and exit before it is killed.
DRAINER_DEADLINE_SECS: Final = 30.0
TARGET_RATIO: Final = 1.5
#: Single -X importtime runs swing by milliseconds on a shared machine.
IMPORTTIME_RUNS: Final = 21
#: The transcript the Stop payload names (a spawned drainer reads it once).
FIXTURE: Final = (
    Path(__file__).resolve().parents[1] / "tests/fixtures/transcripts/spotter-subagent.jsonl"
)
#: prctl option: orphaned descendants (the detached drainers) are re-parented to
#: this process, so it can reap them instead of leaving zombies under a PID 1
#: that may not reap.
PR_SET_CHILD_SUBREAPER: Final = 36


@dataclass
class Series:
    """Wall times of one command, in seconds."""

    label: str
    argv: list[str]
    times: list[float] = field(default_factory=list)

    def median(self) -> float:
        return statistics.median(self.times)

    def p95(self) -> float:
        ordered = sorted(self.times)
        return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]  # nearest rank

    def mean(self) -> float:
        return statistics.fmean(self.times)

    def minimum(self) -> float:
        return min(self.times)


def stop_payload(session_id: str, transcript: Path, cwd: str) -> bytes:
    """A Stop payload shaped like the ones Claude Code 2.1.x sends."""
    return json.dumps(
        {
            "session_id": session_id,
            "transcript_path": str(transcript),
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "Stop",
            "stop_hook_active": False,
        }
    ).encode()


def run_once(argv: list[str], payload: bytes, env: dict[str, str]) -> float:
    """Seconds from spawn to exit, with the payload on stdin and output on pipes."""
    start = time.perf_counter()
    done = subprocess.run(argv, input=payload, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or done.stdout or done.stderr:
        raise SystemExit(
            f"{shlex.join(argv)} exited {done.returncode} with output "
            f"{done.stdout[:200]!r} {done.stderr[:200]!r}; the hook must exit 0 silently"
        )
    return elapsed


@contextlib.contextmanager
def drainer_lock_held(home: Path) -> Iterator[None]:
    """Hold the drainer lock the way a running drainer does (flock on drainer.lock)."""
    fd = os.open(home / "drainer.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux); ``False`` where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def process_gone(pid: int) -> bool:
    """Has ``pid`` exited (reaped here if it is our child, or a zombie someone else owns)?"""
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        waited = 0  # not ours to reap (no subreaper); look at /proc instead
    else:
        if waited == pid:
            return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}


def _lock_free(home: Path) -> bool:
    """Nobody holds the drainer lock (no hook is running while the bench asks)."""
    try:
        fd = os.open(home / "drainer.lock", os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def wait_for_drainer(home: Path, deadline_secs: float = DRAINER_DEADLINE_SECS) -> tuple[int, bool]:
    """Wait until the drainer the hook spawned has drained the spool and exited.

    A drainer keeps HOME/drainer.pid only while it holds the lock, so the wait
    is on the spool being empty and the lock being free; as subreaper the
    bench also reaps the exited drainer. Returns ``(pid, killed)`` (``pid`` is
    0 where it could not be reaped); ``killed`` when it overran the deadline.
    """
    spool = Spool(home / "spool")
    deadline = time.monotonic() + deadline_secs
    pid = 0
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            while (waited := os.waitpid(-1, os.WNOHANG)[0]) != 0:
                pid = waited
        if not spool.has_pending() and _lock_free(home):
            return pid, False
        time.sleep(0.005)
    kill_drainer(home)
    return pid, True


def kill_drainer(home: Path) -> None:
    """SIGTERM (then SIGKILL) whatever drainer HOME/drainer.pid names, if it still runs."""
    with contextlib.suppress(FileNotFoundError, ValueError):
        pid = int((home / "drainer.pid").read_text().strip())
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not process_gone(pid):
                time.sleep(0.01)
            if process_gone(pid):
                return


def interleave(
    series: list[Series],
    runs: int,
    payload: bytes,
    env: dict[str, str],
    after: dict[str, Callable[[], None]] | None = None,
) -> None:
    """Run each series once per round, in turn (A, B, A, B, ...); warm up first."""
    after = after or {}
    for round_number in range(WARMUP_ROUNDS + runs):
        for one in series:
            elapsed = run_once(one.argv, payload, env)
            if one.label in after:
                after[one.label]()
            if round_number >= WARMUP_ROUNDS:
                one.times.append(elapsed)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f}"


def print_table(title: str, rows: list[Series], ratios: list[tuple[str, Series, Series]],
                *, target: bool = True) -> None:
    """The table; ``target``: judge each ratio against the capture hook's target."""
    width = max(len(r.label) for r in rows) + 2
    print(f"\n{title}")
    print(
        f"  {'command':<{width}} {'median ms':>9} {'p95 ms':>9} {'mean ms':>9} {'min ms':>9}   runs"
    )
    for row in rows:
        print(
            f"  {row.label:<{width}} {ms(row.median()):>9} {ms(row.p95()):>9} "
            f"{ms(row.mean()):>9} {ms(row.minimum()):>9}   {len(row.times)}"
        )
    for name, a, b in ratios:
        ratio = a.median() / b.median()
        verdict = "met" if ratio <= TARGET_RATIO else f"MISSED by {ratio - TARGET_RATIO:.2f}"
        judged = f" (target <= {TARGET_RATIO}: {verdict})" if target else ""
        print(
            f"  ratio {name}: median {ratio:.2f}, p95 {a.p95() / b.p95():.2f}, "
            f"extra {1000 * (a.median() - b.median()):.2f} ms at the median{judged}"
        )


def _imports(argv: list[str], payload: bytes, env: dict[str, str]) -> dict[str, tuple[int, int]]:
    """``{module: (cumulative us, self us)}`` from one ``-X importtime`` run."""
    done = subprocess.run(argv, input=payload, capture_output=True, env=env, check=False)
    rows: dict[str, tuple[int, int]] = {}
    for line in done.stderr.decode().splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = (p.strip() for p in line[len("import time:") :].split("|"))
        rows[name] = (int(cumulative), int(own))
    return rows


def importtime(python: str, home: Path, payload: bytes, env: dict[str, str]) -> None:
    """The modules the hook imports beyond a bare interpreter start (medians of several runs)."""
    profiled = [python, "-X", "importtime", "-I", "-S"]
    startup = set(_imports([*profiled, "-c", "pass"], payload, env))
    runs = [
        _imports([*profiled, str(HOOK_SCRIPT), "--home", str(home)], payload, env)
        for _ in range(IMPORTTIME_RUNS)
    ]
    extra = [name for name in runs[0] if name not in startup]
    rows = sorted(
        (
            int(statistics.median(r[name][0] for r in runs if name in r)),
            int(statistics.median(r[name][1] for r in runs if name in r)),
            name,
        )
        for name in extra
    )[::-1]
    print(
        f"\nhook imports beyond `-c pass` (-X importtime, medians of {IMPORTTIME_RUNS} runs; the "
        f"flag itself slows\nimports): {len(extra)} of {len(runs[0])} modules, "
        f"{sum(r[1] for r in rows) / 1000:.2f} ms self time"
    )
    print(f"  {'cumulative us':>13} {'self us':>8}  module")
    for cumulative_us, self_us, name in rows[:25]:
        print(f"  {cumulative_us:>13} {self_us:>8}  {name}")


@dataclass
class Bench:
    """The temporary home and transcript, and the environment the hooks run in."""

    python: str
    home: Path
    payload: bytes
    env: dict[str, str]

    @property
    def command(self) -> str:
        return str(hook_command(self.home, self.python))


def setup(root: Path, python: str) -> Bench:
    home = root / "home"
    home.mkdir(mode=0o700)
    projects = root / "projects" / "-work-demo"
    projects.mkdir(parents=True)
    session = "0b4c2f3e-7a59-4d0e-9d7e-5f1f3c2a9b11"
    transcript = projects / f"{session}.jsonl"
    transcript.write_bytes(FIXTURE.read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSPOOL_", "PYTHON"))}
    # A spawned drainer may only read transcripts below these folders.
    env["MEMSPOOL_TRANSCRIPT_ROOTS"] = str(root / "projects")
    # A spawned drainer drains and exits at once instead of lingering 3 s.
    env["MEMSPOOL_IDLE_GRACE_SECS"] = "0"
    return Bench(python, home, stop_payload(session, transcript, "/work/demo"), env)


def append_only(bench: Bench, runs: int) -> Series:
    """Variant 1: the lock is held, so the hook appends and spawns nothing."""
    python, quoted = bench.python, shlex.quote(bench.python)
    hook_sh = Series("A  sh -c <installed hook command>", ["sh", "-c", bench.command])
    bare_sh = Series("B  sh -c '<python> -I -S -c pass'", ["sh", "-c", f"{quoted} -I -S -c pass"])
    hook = Series(
        "C  <python> -I -S hooks/capture.py --home H",
        [python, "-I", "-S", str(HOOK_SCRIPT), "--home", str(bench.home)],
    )
    bare = Series("D  <python> -I -S -c pass", [python, "-I", "-S", "-c", "pass"])
    with drainer_lock_held(bench.home):
        interleave([hook_sh, bare_sh, hook, bare], runs, bench.payload, bench.env)
    print_table(
        "variant 1: append only (this bench holds HOME/drainer.lock, as a live drainer "
        "would, so the hook\n           appends one frame and spawns nothing)",
        [hook_sh, bare_sh, hook, bare],
        [("A/B", hook_sh, bare_sh), ("C/D", hook, bare)],
    )
    size = (bench.home / "spool" / "active.seg").stat().st_size
    print(
        f"  spool after variant 1: {size} bytes in active.seg, "
        f"{size // (24 + len(bench.payload))} frames (one per hook run)"
    )
    return hook_sh


def spawning(bench: Bench, runs: int, append_only_hook: Series) -> None:
    """Variant 2: the lock is free, so every hook spawns a detached drainer."""
    reaper = become_subreaper()
    spawn = Series("E  sh -c <installed hook command>, spawns drainer", ["sh", "-c", bench.command])
    bare = Series(
        "B  sh -c '<python> -I -S -c pass'",
        ["sh", "-c", f"{shlex.quote(bench.python)} -I -S -c pass"],
    )
    killed: list[int] = []

    def reap() -> None:
        pid, was_killed = wait_for_drainer(bench.home)
        if was_killed:
            killed.append(pid)
        (bench.home / "drainer.pid").unlink(missing_ok=True)

    (bench.home / "drainer.pid").unlink(missing_ok=True)
    try:
        interleave([spawn, bare], runs, bench.payload, bench.env, after={spawn.label: reap})
    finally:
        kill_drainer(bench.home)
    print_table(
        "variant 2: lock free (each hook spawns a detached drainer; the bench waits, "
        "untimed, for it to\n           drain and exit before the next run)",
        [spawn, bare],
        [("E/B", spawn, bare)],
    )
    print(
        f"  drainers spawned and waited for: {WARMUP_ROUNDS + runs}; killed at the deadline: "
        f"{len(killed)}; reaped as subreaper: {reaper}"
    )
    extra = 1000 * (spawn.median() - append_only_hook.median())
    print(f"  spawn cost (E - A, medians of two separate series): {extra:.2f} ms")


def _git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,  # noqa: S607 - git from PATH
                   env=env)


def identity(bench: Bench, root: Path, runs: int) -> None:
    """Variant 3: the SessionStart hook identifies the project from .git/config."""
    main = root / "repos" / "api"
    main.mkdir(parents=True)
    _git("init", "-q", cwd=main)
    _git("remote", "add", "origin", "git@github.com:acme/api.git", cwd=main)
    (main / "README").write_text("x")
    _git("add", "README", cwd=main)
    _git("commit", "-qm", "x", cwd=main)
    linked = root / "repos" / "api-feature"
    _git("worktree", "add", "-q", str(linked), cwd=main)
    deep = linked / "src" / "a" / "b"
    deep.mkdir(parents=True)
    plain = root / "plain" / "notes"
    plain.mkdir(parents=True)
    conn = connect(load_config(bench.home, env={}))
    block = "## memspool: what is known about the project api\n- #1 a fact\n"
    for folder in (deep, plain):
        conn.execute("INSERT INTO context_blocks (project, text, memories, rendered_at)"
                     " VALUES (?, ?, 1, 0)", (identify(folder)[0], block))
    conn.close()
    argv = [bench.python, "-I", "-S", str(CONTEXT_SCRIPT), "--home", str(bench.home)]
    series = [
        (Series("F  context hook, linked work tree of a repo with a remote", argv),
         json.dumps({"session_id": "s", "cwd": str(deep)}).encode()),
        (Series("G  context hook, a folder outside git", argv),
         json.dumps({"session_id": "s", "cwd": str(plain)}).encode()),
        (Series("D  <python> -I -S -c pass", [bench.python, "-I", "-S", "-c", "pass"]), b""),
    ]
    for round_number in range(WARMUP_ROUNDS + runs):
        for one, data in series:
            start = time.perf_counter()
            done = subprocess.run(one.argv, input=data, capture_output=True, env=bench.env,
                                  check=False)
            elapsed = time.perf_counter() - start
            if done.returncode != 0 or (data and b"a fact" not in done.stdout):
                raise SystemExit(f"{one.label} did not print the block: {done!r}")
            if round_number >= WARMUP_ROUNDS:
                one.times.append(elapsed)
    hook_f, hook_g, bare = (one for one, _ in series)
    print_table("variant 3: project identity (the SessionStart hook reads .git/config itself;\n"
                "           the capture hook's target does not apply: this hook opens SQLite)",
                [hook_f, hook_g, bare],
                [("F/D", hook_f, bare), ("G/D", hook_g, bare), ("F/G", hook_f, hook_g)],
                target=False)
    for label, folder in (("linked work tree, remote", deep), ("outside git", plain)):
        calls = 2000
        started = time.perf_counter()
        for _ in range(calls):
            identify(str(folder))
        each = (time.perf_counter() - started) / calls
        print(f"  identify() in process, {label}: {each * 1e6:.1f} us per call "
              f"-> {identify(str(folder))[0]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="timed runs per command")
    parser.add_argument("--spawn-runs", type=int, help="runs when spawning (default: --runs)")
    parser.add_argument("--no-spawn", action="store_true", help="skip the spawn variant")
    parser.add_argument("--no-identity", action="store_true",
                        help="skip the project identity variant")
    parser.add_argument("--importtime", action="store_true", help="list the hook's imports too")
    args = parser.parse_args(argv)

    python = sys.executable  # the venv's interpreter, exactly what `memspool install` writes
    if "pyenv/shims" in python:
        raise SystemExit(f"{python} is a pyenv shim; run this with the venv's python")
    with tempfile.TemporaryDirectory(prefix="memspool-bench-") as tmp:
        bench = setup(Path(tmp), python)
        print("memspool hook latency")
        print(f"  python:   {python} (Python {platform.python_version()}, {platform.machine()})")
        print(f"  machine:  {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
        print(f"  command:  {bench.command}")
        print(
            f"  payload:  {len(bench.payload)} bytes of Stop JSON on stdin; stdout and stderr "
            "on pipes; each run must exit 0 silently"
        )
        print(
            f"  method:   time.perf_counter around subprocess.run; {WARMUP_ROUNDS} untimed "
            "warm-up rounds, then the commands\n            interleaved run by run"
        )
        hook = append_only(bench, args.runs)
        if not args.no_spawn:
            spawning(bench, args.runs if args.spawn_runs is None else args.spawn_runs, hook)
        if not args.no_identity:
            identity(bench, Path(tmp), args.runs)
        print(f"\n  load average at end: {os.getloadavg()[0]:.2f}")
        if args.importtime:
            with drainer_lock_held(bench.home):
                importtime(python, bench.home, bench.payload, bench.env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
