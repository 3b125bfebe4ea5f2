"""``memspool drainer``."""

from __future__ import annotations

from memspool.cli._common import Subparsers, command

DOC = """Drain the spool into slices (one drainer at a time).

--once (default) drains what is pending and exits; --watch stays up and
drains on every spool change (what the systemd unit runs); --resume recovers
after a crash (stale lock, half-written checkpoint, torn frames) and drains.
Hooks start a detached drainer on their own; this command is for daemons,
cron and recovery.

Example:
    memspool drainer --resume
"""


def register(sub: Subparsers) -> None:
    from memspool.drainer.modes import add_arguments, run

    parser = command(sub, "drainer", DOC, run)
    add_arguments(parser)
