"""`memspool demo` as a new user runs it: no folder left behind, a hint that works."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli


@pytest.mark.slow  # the whole demo: drains, digests and maintains three sessions
def test_the_demo_leaves_no_temporary_folder_and_its_hint_runs(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # A shell where `memspool` is not on PATH, as after `python3 -m venv .venv && pip install .`.
    env = {"TMPDIR": str(scratch), "PATH": "/usr/bin:/bin"}
    proc = run_cli("demo", env=env)
    assert list(scratch.iterdir()) == []
    last = proc.stdout.decode().strip().splitlines()[-1]
    assert "removed" in last and f"{shlex.quote(sys.executable)} -m memspool demo --home" in last
    command = last.split("around: ", 1)[1].replace("DIR", str(tmp_path / "kept"))
    kept = subprocess.run(command, shell=True, capture_output=True, timeout=120,  # noqa: S602 - the hint is run as a user would paste it
                          env={**os.environ, **env}, check=False)
    assert kept.returncode == 0, kept.stderr.decode()
    hint = kept.stdout.decode().strip().splitlines()[-1]
    assert hint.startswith("  look around: MEMSPOOL_HOME=")
    listed = subprocess.run(hint.split("look around: ", 1)[1], shell=True,  # noqa: S602 - as pasted
                            capture_output=True, timeout=60, env={**os.environ, **env},
                            check=False)
    assert listed.returncode == 0 and listed.stdout, listed.stderr.decode()
    assert (tmp_path / "kept").is_dir()
    # The same folder again is refused, untouched: a second run would append to
    # the first one's transcripts and count their bytes twice.
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "kept").rglob("*"))
    again = subprocess.run(command, shell=True, capture_output=True, timeout=120,  # noqa: S602 - as pasted
                           env={**os.environ, **env}, check=False)
    assert again.returncode == 1 and "is not empty" in again.stderr.decode()
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "kept").rglob("*")) == before


def test_the_demo_refuses_the_users_own_home(home: Path, tmp_path: Path) -> None:
    """Kept there, the demo's config.toml would name only its own transcripts, and the
    user's sessions would no longer be captured: refused, even while the home is new,
    however its path is spelled."""
    link = tmp_path / "link-to-home"
    link.symlink_to(home)
    for given in (["--home", str(home)], ["--home", f"{home}/"], ["--home", str(link)],
                  ["--home", f"{home}/../{home.name}"]):
        refused = run_cli("demo", *given, check=False)
        assert refused.returncode == 1 and "is your memspool home" in refused.stderr.decode()
    assert not home.exists()


def test_the_slice_excerpt_ends_at_a_line_and_says_when_there_is_more() -> None:
    from memspool.demo import _excerpt

    text = "first line of the slice\n[tool WebSearch] a long result line\nthird"
    assert _excerpt(text, 40) == ["first line of the slice", "..."]
    assert _excerpt(text, 500) == text.splitlines()
    assert _excerpt("one very long line of words " * 10, 30) == [
        "one very long line of words ..."]
