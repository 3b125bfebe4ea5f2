"""The spool: frame format, torn and corrupt frames, sealing, concurrent appends."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import wait_for
from hypothesis import given, settings
from hypothesis import strategies as st

from memspool.hooks import HOOK_SCRIPT
from memspool.spool import HEADER_SIZE, Position, Spool, append, encode
from memspool.spool.frame import MAX_PAYLOAD, SpoolCorrupt, decode


def _frames(spool: Spool) -> list[bytes | None]:
    return [None if f is None else f.payload for _, f in spool.read()]


@given(st.binary(max_size=4096), st.integers(min_value=0, max_value=2**63 - 1))
def test_frame_round_trip(payload: bytes, stamp: int) -> None:
    frame = encode(payload, time_ns=stamp)
    decoded = decode(frame[:HEADER_SIZE], frame[HEADER_SIZE:], 0)
    assert decoded.payload == payload
    assert decoded.time_ns == stamp


@settings(max_examples=60, deadline=None)
@given(
    payloads=st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=12),
    damage=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)),
                    max_size=4),
    cut=st.integers(min_value=0, max_value=40),
)
def test_damaged_segments_never_misparse(
    tmp_path_factory: pytest.TempPathFactory, payloads: list[bytes],
    damage: list[tuple[int, int]], cut: int,
) -> None:
    """Whatever bytes are flipped or cut, every frame read back is one that was written."""
    folder = tmp_path_factory.mktemp("spool")
    data = bytearray(b"".join(encode(p) for p in payloads))
    for position, value in damage:
        data[position % len(data)] = value
    del data[len(data) - min(cut, len(data) - 1):]
    (folder / "seg-00000000000000000001.seg").write_bytes(bytes(data))
    spool = Spool(folder)
    read = [p for p in _frames(spool) if p is not None]
    assert all(p in payloads for p in read)
    if not damage and cut == 0:
        assert read == payloads


def test_append_then_seal_and_read(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    for i in range(5):
        append(str(spool.directory), f'{{"n": {i}}}'.encode())
    assert spool.has_pending()
    assert spool.pending() == (5, 5 * (HEADER_SIZE + 8))
    name = spool.seal()
    assert name is not None and not (spool.directory / "active.seg").exists()
    items = list(spool.read())
    assert [f.payload for _, f in items if f] == [f'{{"n": {i}}}'.encode() for i in range(5)]
    spool.commit(items[-1][0])
    assert not spool.has_pending()
    assert spool.sealed_segments() == []  # consumed segments are deleted
    assert list(spool.read()) == []


def test_torn_frame_is_quarantined_and_logged(tmp_path: Path) -> None:
    lines: list[str] = []
    spool = Spool(tmp_path, log=lines.append)
    good = [encode(b'{"a": 1}'), encode(b'{"b": 2}')]
    torn = encode(b'{"c": 3, "long": "' + b"x" * 100 + b'"}')[:-40]
    (tmp_path / "seg-00000000000000000001.seg").write_bytes(b"".join(good) + torn)
    assert _frames(spool) == [b'{"a": 1}', b'{"b": 2}', None]
    assert len(lines) == 1 and "quarantined" in lines[0] and "torn" in lines[0]
    bad = list((tmp_path / "quarantine").iterdir())
    assert len(bad) == 1 and bad[0].read_bytes() == torn
    assert oct(bad[0].stat().st_mode & 0o777) == "0o600"


def test_corrupt_frame_in_the_middle_later_frames_still_read(tmp_path: Path) -> None:
    lines: list[str] = []
    spool = Spool(tmp_path, log=lines.append)
    frames = [encode(f'{{"n": {i}}}'.encode()) for i in range(3)]
    middle = bytearray(frames[1])
    middle[HEADER_SIZE + 2] ^= 0x55  # one payload byte flipped: the CRC catches it
    (tmp_path / "seg-00000000000000000001.seg").write_bytes(frames[0] + bytes(middle) + frames[2])
    assert _frames(spool) == [b'{"n": 0}', None, b'{"n": 2}']
    assert "checksum" in lines[0]


def test_damaged_length_does_not_swallow_the_next_frame(tmp_path: Path) -> None:
    spool = Spool(tmp_path, log=lambda _: None)
    frames = [encode(b"first"), encode(b"second"), encode(b"third")]
    first = bytearray(frames[0])
    first[8:12] = (2 ** 20).to_bytes(4, "little")  # claims a megabyte
    (tmp_path / "seg-00000000000000000001.seg").write_bytes(bytes(first) + frames[1] + frames[2])
    assert _frames(spool) == [None, b"second", b"third"]


def test_checkpoint_survives_and_damaged_checkpoint_replays(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    (tmp_path / "seg-00000000000000000001.seg").write_bytes(encode(b"one") + encode(b"two"))
    first = next(iter(spool.read()))[0]
    spool.commit(first)
    assert [f.payload for _, f in Spool(tmp_path).read() if f] == [b"two"]
    (tmp_path / "checkpoint").write_text("garbage")
    lines: list[str] = []
    assert [f.payload for _, f in Spool(tmp_path, log=lines.append).read() if f] == [b"one", b"two"]
    assert "damaged" in lines[0]


def test_recover_removes_half_written_checkpoint_and_consumed_segments(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    (tmp_path / "seg-00000000000000000001.seg").write_bytes(encode(b"old"))
    (tmp_path / "seg-00000000000000000002.seg").write_bytes(encode(b"new"))
    (tmp_path / "checkpoint").write_text(f"v1 seg-00000000000000000001.seg {HEADER_SIZE + 3}\n")
    (tmp_path / "checkpoint.tmp").write_text("v1 half")
    notes = spool.recover()
    assert any("half-written" in n for n in notes)
    assert spool.sealed_segments() == ["seg-00000000000000000002.seg"]
    assert [f.payload for _, f in spool.read() if f] == [b"new"]


def test_writer_that_opened_before_the_seal_is_waited_for(tmp_path: Path) -> None:
    """A frame written through a descriptor opened before the rename is still read."""
    spool = Spool(tmp_path)
    append(str(tmp_path), b"before")
    fd = os.open(tmp_path / "active.seg", os.O_WRONLY | os.O_APPEND)
    fcntl.flock(fd, fcntl.LOCK_SH)  # a hook mid-append holds the shared lock
    name = spool.seal()
    assert name
    os.write(fd, encode(b"late"))
    reader = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from memspool.spool import Spool; from pathlib import Path; "
         "print([f.payload.decode() for _, f in Spool(Path(sys.argv[1])).read() if f])",
         str(tmp_path)],
        stdout=subprocess.PIPE, text=True)
    with pytest.raises(subprocess.TimeoutExpired):
        reader.wait(timeout=0.5)  # blocked on the writer's lock
    os.close(fd)
    out, _ = reader.communicate(timeout=30)
    assert out.strip() == "['before', 'late']"


def test_append_after_seal_goes_to_a_new_active_segment(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    append(str(tmp_path), b"one")
    spool.seal()
    append(str(tmp_path), b"two")
    assert spool.active_size() > 0
    spool.seal()
    assert [f.payload for _, f in spool.read() if f] == [b"one", b"two"]


def test_fifty_hooks_at_once_every_frame_intact(home: Path) -> None:
    home.mkdir(mode=0o700, parents=True)
    # Hold the drainer lock so the hooks only append (and spawn nobody).
    lock_fd = os.open(home / "drainer.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)
    try:
        payloads = [f'{{"session_id": "s{i}", "pad": "{"x" * (i * 97)}"}}'.encode()
                    for i in range(50)]
        procs = [
            subprocess.Popen([sys.executable, "-I", "-S", str(HOOK_SCRIPT), "--home", str(home)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in payloads
        ]
        for proc, data in zip(procs, payloads, strict=True):
            proc.stdin.write(data)  # type: ignore[union-attr]
        for proc in procs:
            proc.stdin.close()  # type: ignore[union-attr]
        for proc in procs:
            assert proc.wait(timeout=60) == 0
            assert proc.stdout.read() == b"" and proc.stderr.read() == b""  # type: ignore[union-attr]
            proc.stdout.close()  # type: ignore[union-attr]
            proc.stderr.close()  # type: ignore[union-attr]
        spool = Spool(home / "spool")
        spool.seal()
        read = [f.payload for _, f in spool.read() if f]
        assert sorted(read) == sorted(payloads)
        assert not (home / "spool" / "quarantine").exists()
    finally:
        os.close(lock_fd)


def test_hook_imports_nothing_heavy(home: Path) -> None:
    home.mkdir(mode=0o700, parents=True)
    lock_fd = os.open(home / "drainer.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-X", "importtime", str(HOOK_SCRIPT), "--home", str(home)],
            input=b'{"session_id": "x"}', capture_output=True, timeout=30, check=False)
    finally:
        os.close(lock_fd)
    assert proc.returncode == 0 and proc.stdout == b""
    imported = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "memspool.spool" in imported
    heavy_modules = (
        "sqlite3", "orjson", "zstandard", "watchdog", "json", "subprocess", "memspool.drainer",
    )
    for heavy in heavy_modules:
        assert heavy not in imported, heavy
    # Cheap on their own but each a start-up cost the hook path avoids: its
    # annotations are never evaluated and its imports hide behind TYPE_CHECKING.
    for slow in ("typing", "types", "pathlib", "re", "importlib"):
        assert slow not in imported, slow


def test_hook_exits_zero_and_logs_when_spool_unwritable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "spool").write_text("a file where the spool folder should be")
    proc = subprocess.run([sys.executable, "-I", "-S", str(HOOK_SCRIPT), "--home", str(home)],
                          input=b"{}", capture_output=True, timeout=30, check=False)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    log = (home / "hook-errors.log").read_text()
    assert "hook failed" in log and "spool" in log


def test_an_endless_payload_is_refused_at_the_limit_not_read_to_its_end(
        tmp_path: Path) -> None:
    """stdin that never ends (/dev/zero): the hook reads one byte past the spool's
    limit, logs the refusal and exits 0, instead of filling memory until killed."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with open("/dev/zero", "rb") as endless:
        proc = subprocess.run([sys.executable, "-I", "-S", str(HOOK_SCRIPT), "--home",
                               str(home)], stdin=endless, capture_output=True, timeout=60,
                              check=False)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    log = (home / "hook-errors.log").read_text()
    assert f"payload of {MAX_PAYLOAD + 1} bytes exceeds the spool's {MAX_PAYLOAD}" in log
    assert not any((home / "spool").glob("*"))  # nothing half-written


def test_position_orders_by_segment_then_offset() -> None:
    assert Position("seg-1", 10) < Position("seg-2", 0)
    with pytest.raises(SpoolCorrupt):
        decode(b"\x00" * HEADER_SIZE, b"", 0)


def test_hook_without_a_home_uses_the_home_the_cli_uses(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """No --home and no MEMSPOOL_HOME: the platform data folder, as `memspool` resolves it."""
    from memspool.config import default_home

    monkeypatch.delenv("MEMSPOOL_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    proc = subprocess.run([sys.executable, "-I", "-S", str(HOOK_SCRIPT)], input=b"{}",
                          capture_output=True, timeout=30, check=False)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    expected = default_home()
    assert expected == tmp_path / "data" / "memspool"
    # The frame landed there: the drainer the hook woke read it (and skipped
    # it, as a payload without a session).
    log = expected / "drainer.log"
    wait_for(lambda: log.exists() and "no usable session_id" in log.read_text())


def test_hook_with_an_unsafe_home_logs_to_a_private_per_user_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    fallback = Path(f"/tmp/memspool-hook-errors-{os.getuid()}.log")
    before = fallback.read_bytes() if fallback.exists() else None
    shared = tmp_path / "shared-home"
    shared.mkdir()
    shared.chmod(0o777)
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", str(HOOK_SCRIPT), "--home",
                               str(shared)], input=b"{}", capture_output=True, timeout=30,
                              check=False)
        assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
        assert b"is writable by others" in fallback.read_bytes().splitlines()[-1]
        assert fallback.stat().st_mode & 0o777 == 0o600
        assert list(shared.iterdir()) == []  # nothing written into a folder others control
    finally:
        if before is None:
            fallback.unlink(missing_ok=True)
        else:
            fallback.write_bytes(before)


def test_a_clock_stepped_back_does_not_strand_a_segment(tmp_path: Path) -> None:
    """A new segment's name sorts after the checkpoint even if the wall clock went back."""
    spool = Spool(tmp_path)
    future = "seg-09999999999999999999.seg"
    (tmp_path / future).write_bytes(encode(b"old"))
    spool.commit(Position(future, HEADER_SIZE + 3))  # consumed and deleted
    assert spool.sealed_segments() == []
    append(str(tmp_path), b"new")
    name = spool.seal()
    assert name is not None and name > future
    assert spool.has_pending()
    assert [f.payload for _, f in spool.read() if f] == [b"new"]


def test_a_hook_delayed_between_open_and_lock_still_lands_its_frame(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook opens active.seg, is descheduled, and a seal + read + commit happens
    before it takes its lock: it must notice and write to the new active segment."""
    import threading
    import types

    from memspool.spool import writer

    opened, sealed = threading.Event(), threading.Event()

    def slow_flock(fd: int, operation: int) -> None:
        if operation == fcntl.LOCK_SH and not sealed.is_set():
            opened.set()
            sealed.wait(10)
        fcntl.flock(fd, operation)

    spool = Spool(tmp_path)
    append(str(tmp_path), b"first")
    monkeypatch.setattr(writer, "fcntl", types.SimpleNamespace(flock=slow_flock,
                                                                LOCK_SH=fcntl.LOCK_SH))
    hook = threading.Thread(target=writer.append, args=(str(tmp_path), b"late"))
    hook.start()
    assert opened.wait(10)
    spool.seal()
    items = list(spool.read())
    spool.commit(items[-1][0])  # the sealed segment is read and deleted
    # Meanwhile another hook makes a new active.seg (written directly here: the
    # patched lock would hold this append up too).
    fd = os.open(tmp_path / "active.seg", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, encode(b"other"))
    os.close(fd)
    sealed.set()
    hook.join(10)
    spool.seal()
    assert [f.payload for _, f in items if f] == [b"first"]
    assert sorted(f.payload for _, f in spool.read() if f) == [b"late", b"other"]


def test_appends_racing_seal_read_and_commit_all_arrive_once(tmp_path: Path) -> None:
    """Hook processes append while a drainer seals, reads and commits in a loop."""
    spool = Spool(tmp_path)
    writer = (
        "import sys; from memspool.spool.writer import append\n"
        "for i in range(int(sys.argv[3])): append(sys.argv[1], f'{sys.argv[2]}-{i}'.encode())"
    )
    procs = [subprocess.Popen([sys.executable, "-c", writer, str(tmp_path), f"w{n}", "300"])
             for n in range(4)]
    seen: list[bytes] = []
    while any(p.poll() is None for p in procs) or spool.has_pending():
        spool.seal()
        last = None
        for position, frame in spool.read():
            last = position
            if frame is not None:
                seen.append(frame.payload)
        if last is not None:
            spool.commit(last)
    assert all(p.wait(timeout=60) == 0 for p in procs)
    expected = sorted(f"w{n}-{i}".encode() for n in range(4) for i in range(300))
    assert sorted(seen) == expected


def test_quarantined_regions_are_pruned_after_thirty_days(tmp_path: Path) -> None:
    from memspool.spool.segments import QUARANTINE_KEEP_SECS

    spool = Spool(tmp_path, log=lambda _: None)
    (tmp_path / "seg-00000000000000000001.seg").write_bytes(b"\x00garbage")
    list(spool.read())
    [bad] = list((tmp_path / "quarantine").iterdir())
    now = bad.stat().st_mtime
    assert spool.prune_quarantine(now + QUARANTINE_KEEP_SECS - 60) == 0
    assert spool.prune_quarantine(now + QUARANTINE_KEEP_SECS + 60) == 1
    assert list((tmp_path / "quarantine").iterdir()) == []
