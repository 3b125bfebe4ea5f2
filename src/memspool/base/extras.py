"""How to add an optional extra (``semantic``, ``team``) to this install.

The hint names the command that works here: this interpreter's pip, run in
the clone memspool was installed from (pip records the folder, PEP 610), as
the README does it (``pip install '.[semantic]'``); without a recorded folder,
the same command "in your memspool clone".
"""

from __future__ import annotations

import importlib.metadata
import json
import shlex
import sys
import urllib.parse
from pathlib import Path

__all__ = ["install_hint"]


def _installed_from() -> str | None:
    """The folder memspool was installed from, if it was one."""
    try:
        record = importlib.metadata.distribution("memspool").read_text("direct_url.json")
        url = json.loads(record or "{}").get("url", "")
    except (importlib.metadata.PackageNotFoundError, ValueError, AttributeError):
        return None
    if not isinstance(url, str) or not url.startswith("file://"):
        return None
    folder = Path(urllib.parse.unquote(urllib.parse.urlparse(url).path))
    return str(folder) if (folder / "pyproject.toml").is_file() else None


def install_hint(extra: str) -> str:
    """The command that adds ``extra`` to this install."""
    pip = f"{shlex.quote(sys.executable)} -m pip install '.[{extra}]'"
    folder = _installed_from()
    return f"cd {shlex.quote(folder)} && {pip}" if folder else f"{pip} in your memspool clone"
