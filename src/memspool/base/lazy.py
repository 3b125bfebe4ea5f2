"""A package's names, loaded from their modules on first use (PEP 562).

A package that re-exports from its modules imports all of them the moment
any one is imported: ``memspool.drainer.lock`` would load the whole drainer,
``memspool.distill.keys`` the LLM client. Every command line start paid for
that. A package lists where each name lives instead::

    __getattr__ = exports(__name__, {"Drainer": "daemon", "run_once": "modes"})

and keeps its ``from ... import`` lines under ``TYPE_CHECKING`` for readers
and type checkers. A name is looked up once, then kept in the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["exports"]


def exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``homes`` from its module."""

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
