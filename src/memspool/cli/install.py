"""``memspool install`` and ``memspool uninstall``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memspool.cli._common import Subparsers, add_home, command, print_json
from memspool.config import load_config
from memspool.install import (
    default_settings_path,
    install_hooks,
    install_systemd_unit,
    register_mcp,
    uninstall_hooks,
)

INSTALL_DOC = """Add memspool's hooks to Claude Code: capture each turn, give memory back at start.

Capture runs at Stop, SubagentStop, PreCompact and SessionEnd; the context
block is printed at SessionStart; with --recall-on-prompt, matching memories
are injected at UserPromptSubmit (running install again keeps it;
--no-recall-on-prompt removes it). Whatever hook it removes, it says.
Merges into settings.json (default ~/.claude/settings.json, or under
CLAUDE_CONFIG_DIR; --scope project uses ./.claude/settings.json), keeps every
other hook and setting, backs the file up first, and refuses to touch a file
it cannot parse. Running it again changes nothing. The hook command carries
the home it was installed for.

Example:
    memspool install
    memspool install --settings ./.claude/settings.json --systemd
    memspool install --recall-on-prompt
"""

UNINSTALL_DOC = """Remove memspool's hooks (and nothing else) from a Claude Code settings.json.

Example:
    memspool uninstall --scope project
"""


def _settings(args: argparse.Namespace) -> Path:
    return Path(args.settings).expanduser() if args.settings else default_settings_path(args.scope)


def _install(args: argparse.Namespace) -> int:
    config = load_config(args.home)
    settings = _settings(args)
    # A user-level settings.json sits in the Claude config folder, whose
    # projects/ holds the transcripts; a project's .claude/ holds none.
    roots = [] if args.scope == "project" and not args.settings else [
        settings.absolute().parent / "projects"]  # beside the link, not its target
    result: dict[str, Any] = install_hooks(settings, config, transcript_roots=roots,
                                           recall_on_prompt=args.recall_on_prompt)
    if args.mcp:
        result["mcp"] = register_mcp(config)
    if args.systemd:
        result["systemd_units"] = [str(path) for path in install_systemd_unit(config)]
    if args.json:
        print_json(result)
    else:
        verb = "installed" if result["changed"] else "already installed"
        print(f"memspool hooks {verb} in {result['settings']} ({', '.join(result['events'])})")
        for event in result["removed"]:
            what = (" (recall on prompt; --recall-on-prompt adds it back)"
                    if event == "UserPromptSubmit" else "")
            print(f"removed: the memspool hook at {event}{what}")
        if result["backup"]:
            print(f"backup: {result['backup']}")
        for warning in result["warnings"]:
            print(f"warning: {warning}")
        print(f"home: {result['home']}")
        if args.mcp:
            mcp = result["mcp"]
            if mcp["registered"]:
                print(f"MCP server registered: {mcp['command']}")
            else:
                print(f"MCP server not registered ({mcp['reason']}); run:\n  {mcp['command']}")
        if args.systemd:
            print("systemd units: " + ", ".join(result["systemd_units"]) + "\n"
                  "  enable them: systemctl --user daemon-reload && "
                  "systemctl --user enable --now memspool-drainer memspool-maintain.timer")
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    result = uninstall_hooks(_settings(args))
    if args.json:
        print_json(result)
    elif not result["removed"]:
        there = "" if Path(result["settings"]).exists() else " (the file does not exist)"
        print(f"no memspool hook in {result['settings']}{there}: nothing to remove")
    else:
        print(f"removed {result['removed']} memspool hook(s) from {result['settings']}"
              + (" and the file, which memspool had created and is now empty"
                 if result["deleted"] else ""))
    return 0


def register(sub: Subparsers) -> None:
    for name, doc, handler in (("install", INSTALL_DOC, _install),
                               ("uninstall", UNINSTALL_DOC, _uninstall)):
        parser = command(sub, name, doc, handler)
        parser.add_argument("--settings", help="settings.json to edit")
        parser.add_argument("--scope", choices=("user", "project"), default="user",
                            help="which settings.json when --settings is not given (default: user)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        if name == "install":
            add_home(parser)
            parser.add_argument("--systemd", action="store_true",
                                help="also write the systemd user units (drainer, hourly "
                                     "maintenance)")
            parser.add_argument("--mcp", action="store_true",
                                help="also register the MCP server with Claude Code (claude mcp "
                                     "add --scope user), or print the command to do it")
            parser.add_argument("--recall-on-prompt", action=argparse.BooleanOptionalAction,
                                default=None,
                                help="add (or, with --no-recall-on-prompt, remove) the "
                                     "UserPromptSubmit hook that injects up to 3 memories "
                                     "matching each prompt; without either, an install keeps "
                                     "it as it is")
