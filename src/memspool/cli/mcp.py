"""``memspool mcp``."""

from __future__ import annotations

import argparse

from memspool.cli._common import Subparsers, add_home, command

DOC = """Serve memspool's tools to an agent over MCP (stdio): capture, save, search, get, ...

Claude Code starts it by itself once registered (`memspool install --mcp`);
the tools are capture, capture_passive, save, search, get, context, forget
and stats.

Example:
    claude mcp add --scope user memspool -- memspool mcp
"""


def _mcp(args: argparse.Namespace) -> int:
    from memspool.mcp import main

    return main(args.home)


def register(sub: Subparsers) -> None:
    parser = command(sub, "mcp", DOC, _mcp)
    add_home(parser)
