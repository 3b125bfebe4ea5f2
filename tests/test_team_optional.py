"""Team memory is an extra: without psycopg everything else works, and team commands say
what to install."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

HIDDEN = ("psycopg", "psycopg_pool")


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_the_core_install_needs_no_psycopg() -> None:
    run_cli("capture", "--project", "github.com/acme/api", hide=HIDDEN,
            input=b"Pitfall: the refund webhook double-inserts rows when Stripe retries.")
    status = json.loads(run_cli("status", "--json", hide=HIDDEN).stdout)
    assert status["memories"] == 1 and status["team"] is None
    run_cli("maintain", "--json", hide=HIDDEN)
    run_cli("drainer", "--once", hide=HIDDEN)


def test_team_commands_say_to_install_the_extra() -> None:
    proc = run_cli("team", "join", "postgresql://a@127.0.0.1/x", "--project",
                   "github.com/acme/api", hide=HIDDEN, check=False)
    assert proc.returncode == 1
    assert "-m pip install '.[team]'" in proc.stderr.decode()  # as the README installs it
