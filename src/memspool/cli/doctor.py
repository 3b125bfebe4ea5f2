"""``memspool doctor``."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Final

from memspool.cli._common import Subparsers, add_home, add_json, command, print_json

DOC = """Check the install and say what is wrong, each problem with the command that fixes it.

Looks at the hooks in settings.json, the home's permissions, the spool, the
drainer and its backlog, the store's integrity, the logs, the systemd units
and the MCP registration. Reads only; changes nothing. Something optional
that is not set up is a note, not a problem. Exits 1 when there is a problem.

Example:
    memspool doctor
    memspool doctor --json
"""

#: Plain ASCII tags: a terminal in a non-UTF-8 locale must print them too.
TAGS: Final = {"ok": "[ok]     ", "note": "[note]   ", "problem": "[problem]"}


def _doctor(args: argparse.Namespace) -> int:
    from memspool.doctor import diagnose_home

    findings = diagnose_home(args.home)
    problems = sum(f.level == "problem" for f in findings)
    if args.json:
        print_json({"ok": not problems, "findings": [dataclasses.asdict(f) for f in findings]})
        return 1 if problems else 0
    for finding in findings:
        print(f"{TAGS[finding.level]} {finding.check}: {finding.message}")
        if finding.fix:
            print(f"{'':10}-> {finding.fix}")
    notes = sum(f.level == "note" for f in findings)
    print(f"\n{problems} problem(s), {notes} note(s): "
          + ("fix the problems above." if problems else "memspool looks healthy."))
    return 1 if problems else 0


def register(sub: Subparsers) -> None:
    parser = command(sub, "doctor", DOC, _doctor)
    add_home(parser)
    add_json(parser, "the findings")
