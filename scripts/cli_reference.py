"""Write docs/cli.md, the command-line reference, from the CLI's own help.

    python scripts/cli_reference.py          (rewrite docs/cli.md)
    python scripts/cli_reference.py --check  (exit 1 if docs/cli.md is out of date)

tests/test_docs.py runs the check, so the reference cannot drift from the CLI.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "cli.md"


def listed(parser: argparse.ArgumentParser, prefix: str = "") -> list[tuple[str, str]]:
    """(command, help text) for every listed command, depth first, in the CLI's order."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            names = {choice.dest for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if name in names:
                    command = f"{prefix} {name}".strip()
                    found.append((command, sub.format_help()))
                    found.extend(listed(sub, command))
    return found


def render() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps help to the terminal: fix it
    from memspool.cli import build_parser

    parser = build_parser()
    parts = ["# Command-line reference\n\n",
             "Generated from the CLI's own help by `python scripts/cli_reference.py`; "
             "a test fails when it is out of date.\n\n",
             "```\n", parser.format_help(), "```\n"]
    for command, text in listed(parser):
        parts += [f"\n## memspool {command}\n\n```\n", text, "```\n"]
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    text = render()
    if check:
        return 0 if OUT.read_text(encoding="utf-8") == text else 1
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
