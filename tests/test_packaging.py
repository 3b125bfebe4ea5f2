"""A regular (non-editable) install ships every module and the sample data the demo needs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

#: Slow, left out of the inner loop (`-m "not slow"`): builds and installs a wheel.
pytestmark = pytest.mark.slow

#: Source folder -> where its files land inside the installed package.
ROOMS = {
    "src/memspool": "memspool",
    "spool": "memspool/spool",
    "hooks": "memspool/hooks",
    "drainer": "memspool/drainer",
    "systemd": "memspool/systemd",
    "tests/fixtures/transcripts": "memspool/samples",
}


@pytest.mark.timeout(300)
def test_regular_install_ships_every_module_and_the_samples(tmp_path: Path) -> None:
    source = tmp_path / "src-copy"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".venv*", ".git", "__pycache__", "*.egg-info", "build", ".pytest_cache", ".hypothesis"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--target", str(target), str(source)],
                   check=True, capture_output=True, timeout=240)
    missing = []
    for room, installed in ROOMS.items():
        for path in (REPO / room).rglob("*"):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            # .html, .css, .js: the memory browser's templates and assets.
            shipped = path.suffix in {".py", ".jsonl", ".service", ".html", ".css", ".js"} or (
                path.name == "README.md" and "fixtures" in room)
            if shipped and not (target / installed / path.relative_to(REPO / room)).is_file():
                missing.append(str(path.relative_to(REPO)))
    assert not missing, f"not in a regular install: {missing}"
    probe = (
        "import memspool, memspool.cli, memspool.drainer, memspool.spool.segments, "
        "memspool.distill; from importlib.resources import files; "
        "assert memspool.__file__.startswith(sys.argv[1]), memspool.__file__; "
        "memspool.cli.build_parser(); "
        "assert files('memspool.samples').joinpath('spotter-subagent.jsonl').is_file(); "
        "assert files('memspool.http.web').joinpath('templates/base.html').is_file(); "
        "assert files('memspool.http.web').joinpath('static/app.css').is_file()"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    subprocess.run([sys.executable, "-c", "import sys; " + probe, str(target)], check=True,
                   env=env, timeout=60, cwd=tmp_path)
