"""A drainer is known by the flock on its pid file, never by words in a command line."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import wait_for

from memspool.config import Config
from memspool.drainer.lock import acquire_lock, drainer_pid, drainer_running


def _sleeper(*argv: str) -> subprocess.Popen[bytes]:
    """A live process that is not a drainer, with ``argv`` in its command line."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *argv],
                            start_new_session=True)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_live_process_named_memspool_holding_the_pid_is_not_a_drainer(
    config: Config, processes: list[subprocess.Popen[bytes]]
) -> None:
    impostor = _sleeper("memspool", "drainer", "--watch", "/home/me/memspool/.venv")
    processes.append(impostor)
    if Path("/proc/self").exists():  # what the name check of old was fooled by
        wait_for(lambda: b"memspool" in Path(f"/proc/{impostor.pid}/cmdline").read_bytes())
    config.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    # What a drainer that died leaves behind, naming a pid that lives on.
    config.pid_path.write_text(f"{impostor.pid}\n")
    assert drainer_pid(config) is None
    assert not drainer_running(config)


def test_the_drainer_lock_held_by_something_else_is_not_a_drainer(
    config: Config, processes: list[subprocess.Popen[bytes]]
) -> None:
    """A process that takes the lock file itself, not as a drainer, writes no pid file."""
    config.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import filelock, sys, time
            lock = filelock.FileLock({str(config.lock_path)!r}); lock.acquire()
            print("held", flush=True); time.sleep(120)
        """), "memspool"], stdout=subprocess.PIPE, start_new_session=True)
    processes.append(holder)
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    config.pid_path.write_text(f"{holder.pid}\n")
    assert acquire_lock(config, 0) is None  # the lock is taken
    assert drainer_pid(config) is None


def test_a_lock_let_go_or_lost_with_its_process_names_nobody(
    config: Config, processes: list[subprocess.Popen[bytes]]
) -> None:
    lock = acquire_lock(config, 1)
    assert lock is not None
    assert drainer_pid(config) == os.getpid()
    lock.release()
    lock.release()  # a second release is a no-op
    assert drainer_pid(config) is None and not config.pid_path.exists()
    # A drainer killed while it holds the lock: its pid file stays, its flock does not.
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import time
            from pathlib import Path
            from memspool.config import load_config
            from memspool.drainer.lock import acquire_lock
            lock = acquire_lock(load_config(Path({str(config.home)!r}), env={{}}), 10)
            print("held", flush=True); time.sleep(120)
        """)], stdout=subprocess.PIPE, start_new_session=True)
    processes.append(holder)
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    assert drainer_pid(config) == holder.pid
    os.killpg(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    assert config.pid_path.exists()
    assert drainer_pid(config) is None
    again = acquire_lock(config, 1)
    assert again is not None and again.crashed_pid == holder.pid
    again.release()


def _watch_daemon(config: Config) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "memspool", "drainer", "--watch",
                             "--home", str(config.home)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


_PROBE = textwrap.dedent("""
    import sys
    def no_procfs(event, args):
        if event == "open" and str(args[0]).startswith("/proc"):
            raise PermissionError(f"procfs opened: {args[0]}")
    sys.addaudithook(no_procfs)
    from pathlib import Path
    from memspool.config import load_config
    from memspool.drainer.lock import drainer_pid
    print(drainer_pid(load_config(Path(sys.argv[1]), env={})))
""")


def test_a_real_drainer_is_recognised_with_and_without_procfs(
    config: Config, processes: list[subprocess.Popen[bytes]]
) -> None:
    daemon = _watch_daemon(config)
    processes.append(daemon)
    wait_for(lambda: drainer_pid(config) == daemon.pid)
    # The probe reads nothing under /proc: an audit hook refuses any open there.
    probe = subprocess.run([sys.executable, "-c", _PROBE, str(config.home)],
                           capture_output=True, timeout=60, check=True)
    assert probe.stdout.decode().strip() == str(daemon.pid), probe.stderr.decode()
    os.killpg(daemon.pid, signal.SIGTERM)
    daemon.wait(timeout=30)
    assert drainer_pid(config) is None


def test_recognised_where_proc_is_an_empty_folder(
    config: Config, processes: list[subprocess.Popen[bytes]]
) -> None:
    """A mount namespace whose /proc is an empty tmpfs: a machine without procfs."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not installed")
    argv = [unshare, "--mount", *([] if os.geteuid() == 0 else ["--map-root-user"]),
            "sh", "-c", 'mount -t tmpfs none /proc && test ! -e /proc/self && exec "$@"',
            "sh", sys.executable, "-c", _PROBE, str(config.home)]
    if subprocess.run([*argv[:argv.index("sh")], "true"], capture_output=True,
                      check=False).returncode != 0:
        pytest.skip("this machine does not allow a private mount namespace")
    daemon = _watch_daemon(config)
    processes.append(daemon)
    wait_for(lambda: drainer_pid(config) == daemon.pid)
    probe = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    assert probe.returncode == 0, probe.stderr.decode()
    assert probe.stdout.decode().strip() == str(daemon.pid)
