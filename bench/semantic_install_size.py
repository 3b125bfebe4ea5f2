"""What the semantic extra adds to an install: disk, packages, and the model's size.

    python bench/semantic_install_size.py

Makes two fresh virtual environments in a temporary folder, installs this
checkout into one with `pip install .` and into the other with
`pip install '.[semantic]'`, and prints the size of each environment's
site-packages, the packages the extra adds, and the size of the shipped
model. Needs the package index (or a pip cache); takes a minute or two.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "src" / "memspool" / "recall" / "model"


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _install(venv: Path, spec: str) -> tuple[int, set[str]]:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", spec], check=True, cwd=ROOT)
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"],
                            capture_output=True, text=True, check=True).stdout
    site = next((venv / "lib").glob("python3*/site-packages"))
    return _size(site), {line.split("==")[0].lower() for line in listed.split()}


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="memspool-size-") as folder:
        plain, plain_pkgs = _install(Path(folder) / "plain", ".")
        semantic, semantic_pkgs = _install(Path(folder) / "semantic", ".[semantic]")
    mb = 1024 * 1024
    print(f"site-packages, pip install .              {plain / mb:8.1f} MB")
    print(f"site-packages, pip install '.[semantic]'  {semantic / mb:8.1f} MB")
    print(f"the extra adds                            {(semantic - plain) / mb:8.1f} MB")
    print(f"packages it adds: {', '.join(sorted(semantic_pkgs - plain_pkgs))}")
    print(f"shipped model (in both installs)          {_size(MODEL) / mb:8.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
