"""Every part of memspool finds the same home: the hook (stdlib only) and the CLI."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from memspool.base import home as layout
from memspool.config import default_home, load_config


@pytest.mark.parametrize("xdg", [None, "", "relative/data", "/abs/data"])
def test_the_default_home_is_the_platform_data_folder(
        xdg: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MEMSPOOL_HOME")
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    expected = platformdirs.user_data_dir("memspool", appauthor=False)
    # platformdirs keeps a relative XDG_DATA_HOME; the XDG spec says to ignore it.
    if xdg == "relative/data":
        expected = str(tmp_path / "user" / ".local" / "share" / "memspool")
    assert layout.default_home() == expected
    assert default_home() == Path(expected)


def test_memspool_home_wins_and_is_made_absolute(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMSPOOL_HOME", "rel-home")
    assert layout.default_home() == str(tmp_path / "rel-home")
    assert load_config().home == tmp_path / "rel-home"


def test_the_config_paths_use_the_shared_names(tmp_path: Path) -> None:
    config = load_config(tmp_path, env={})
    assert config.spool_dir == tmp_path / layout.SPOOL_NAME
    assert config.lock_path == tmp_path / layout.LOCK_NAME
    assert config.hook_log_path == tmp_path / layout.ERROR_LOG
    assert config.db_path == tmp_path / layout.DB_NAME


def test_a_folder_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o700)
    layout.check_private_folder(str(shared))  # ours and private: fine
    layout.check_private_folder(str(tmp_path / "missing"))  # created later, 0700
    shared.chmod(0o777)
    with pytest.raises(layout.HomeError, match="writable by others"):
        layout.check_private_folder(str(shared))
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(layout.HomeError, match="not a folder"):
        layout.check_private_folder(str(afile))
