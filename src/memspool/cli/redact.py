"""Placeholder for the `memspool redact` command (registered once implemented)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Not implemented yet: registers nothing."""
