"""Every command has help with an example, and README documents it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from memspool.cli import build_parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    found = []

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                # Only the listed commands: a renamed one stays hidden from help and README.
                listed = {choice.dest for choice in action._choices_actions}
                for name, sub in action.choices.items():
                    if name in listed:
                        found.append((f"{prefix} {name}".strip(), sub))
                        walk(sub, f"{prefix} {name}")

    walk(build_parser(), "")
    return found


COMMANDS = _commands()


def test_the_command_list_is_not_empty() -> None:
    names = {name for name, _ in COMMANDS}
    assert {
        "install", "uninstall", "drainer", "status", "slices list", "slices show", "demo",
        "capture", "redact"
    } <= names


@pytest.mark.parametrize(("name", "parser"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_command_has_help_with_an_example(name: str, parser: argparse.ArgumentParser) -> None:
    assert "Example:" in parser.format_help(), f"`memspool {name} --help` shows no example"


@pytest.mark.parametrize("name", [n for n, _ in COMMANDS])
def test_command_is_in_readme(name: str) -> None:
    pattern = rf"memspool {re.escape(name)}(?![\w-])"
    assert re.search(pattern, README), f"README does not mention `memspool {name}`"


def test_the_cli_reference_is_generated_from_the_cli() -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, str(root / "scripts" / "cli_reference.py"), "--check"],
                          capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, "docs/cli.md is out of date: run python scripts/cli_reference.py"
