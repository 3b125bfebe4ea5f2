"""The tree shows the stages in order: no import runs back up, and the exported names are pinned."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from conftest import REPO

import memspool
import memspool.base.errors

#: Each room's rank: a module may import its own room and lower ranks only.
#: The front ends call the service, the service calls the rooms, the rooms
#: use the store; the base (stdlib only) and the spool (with the hooks) sit
#: at the bottom.
RANKS = {
    # Errors, home layout, project identity, search terms: what every room shares.
    "memspool.base": 0,
    "memspool.spool": 1,
    "memspool.hooks": 1.5,
    # The package itself only re-exports the exception tree.
    "memspool": 2.1, "memspool.config": 2.2, "memspool.untrusted": 2.2,
    "memspool.store": 3, "memspool.redact": 3,
    # The drainer's ingest stage (spool frames -> slices): below every room
    # that makes memory from slices (see INGEST).
    "drainer ingest": 3.5,
    "memspool.distill": 4, "memspool.install": 4,
    "memspool.archivist": 4.5,
    "memspool.recall": 4.6,
    # Team memory reads and writes the store, redacts, and renders context
    # blocks after a pull; the drainer and the service sync through it.
    "memspool.team": 4.65,
    # The drainer's process modes (memspool.drainer, .modes, .upkeep,
    # .backfill) hand the ingest stage the archivist's digest, the context
    # blocks, embedding and team sync to run while the spool is empty.
    "memspool.drainer": 4.7,
    # What the service answers, and the bounds every front end shares.
    "memspool.results": 4.9,
    "memspool.service": 5, "memspool.demo": 5.5, "memspool.doctor": 5,
    "memspool.mcp": 6, "memspool.http": 6,
    "memspool.cli": 6.5, "memspool.__main__": 7,
}
#: The drainer's modules that form its ingest stage: they rank below the
#: archivist, recall and team, which the process modes inject (Upkeep).
INGEST = {f"memspool.drainer.{name}": "drainer ingest"
          for name in ("daemon", "keep", "lock", "payload", "ship", "transcript")}
#: Rooms that must not import each other even where the ranks would allow it:
#: the distiller is text in, notes out; the archivist writes memory.
FORBIDDEN = {
    "memspool.distill": ("memspool.store", "memspool.archivist"),
}
#: Source folder -> the package it installs as.
FOLDERS = {
    "spool": "memspool.spool", "hooks": "memspool.hooks", "drainer": "memspool.drainer",
    "src/memspool": "memspool",
}


def _room(module: str) -> str:
    if module in INGEST:
        return INGEST[module]
    parts = module.split(".")
    for size in range(len(parts), 0, -1):
        name = ".".join(parts[:size])
        if name in RANKS:
            return name
    raise AssertionError(f"{module} belongs to no room; add it to RANKS")


def _modules() -> list[tuple[str, Path]]:
    found = []
    for folder, package in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO / folder).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            found.append((".".join([package, *parts]), path))
    return found


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                names.add(f"{base}.{node.module}" if node.module else base)
            elif node.module:
                names.add(node.module)
    return {name for name in names if name == "memspool" or name.startswith("memspool.")}


MODULES = _modules()


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_no_import_runs_back_up(module: str, path: Path) -> None:
    own = _room(module)
    for imported in _imports(path, module):
        target = _room(imported)
        assert target == own or RANKS[target] < RANKS[own], (
            f"{module} ({own}, rank {RANKS[own]}) imports {imported} "
            f"({target}, rank {RANKS[target]})")


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_no_forbidden_import(module: str, path: Path) -> None:
    forbidden = FORBIDDEN.get(_room(module), ())
    for imported in _imports(path, module):
        assert not any(imported == f or imported.startswith(f + ".") for f in forbidden), (
            f"{module} imports {imported}")


def test_the_drainer_ingest_stage_is_pinned() -> None:
    # A new drainer module must say which stage it belongs to.
    found = {m for m, _ in MODULES if m.startswith("memspool.drainer.")}
    assert found == set(INGEST) | {"memspool.drainer.__main__", "memspool.drainer.modes",
                                   "memspool.drainer.upkeep", "memspool.drainer.backfill"}


def test_the_hook_script_imports_only_the_stdlib_and_the_spool() -> None:
    path = REPO / "hooks" / "capture.py"
    imported = _imports(path, "memspool.hooks.capture")
    assert imported <= {"memspool.spool", "memspool.base.home", "memspool.spool.writer"}


def test_the_exported_names_are_pinned() -> None:
    assert memspool.__all__ == [
        "ConfigError",
        "DrainerBusy",
        "HomeError",
        "LlmError",
        "MemspoolError",
        "NotFound",
        "PayloadError",
        "SettingsError",
        "SliceNotFound",
        "SpoolCorrupt",
        "StoreError",
        "TeamError",
        "TranscriptError",
        "__version__",
    ]
    assert memspool.__all__ == sorted(memspool.__all__)
    for name in memspool.__all__:
        assert hasattr(memspool, name)


def _exception_classes() -> list[type[BaseException]]:
    classes = []
    for module, path in MODULES:
        if module.startswith("memspool.hooks"):
            continue  # the hook script is not imported as a module
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    (isinstance(b, ast.Name) and b.id.endswith(("Error", "Exception")))
                    or (isinstance(b, ast.Name) and b.id in {"MemspoolError", "OSError"})
                    for b in node.bases):
                classes.append((module, node.name))
    found = []
    for module, name in classes:
        imported = __import__(module, fromlist=[name])
        found.append(getattr(imported, name))
    return found


def test_every_memspool_exception_is_in_the_tree_and_exported() -> None:
    classes = _exception_classes()
    assert classes, "no exception classes found"
    for cls in classes:
        assert inspect.isclass(cls) and issubclass(cls, memspool.MemspoolError), cls
        exported = {getattr(memspool, n) for n in memspool.__all__ if n != "__version__"}
        assert cls in exported, f"{cls.__module__}.{cls.__name__} is not exported"
