"""Team memory sync against a real PostgreSQL server, with the issue's figures.

Starts a throwaway server from the installed binaries (tests/postgres.py),
then measures, each next to its target:

1. push: a machine with 10,000 new memories of a joined project pushes them
   (target under 10 s);
2. fresh pull: a new machine joins a project of 100,000 memories and pulls
   them all (target under 30 s);
3. nothing new: a sync when neither side changed, with a new connection
   (as ``memspool team sync`` makes) and with a pooled one (as the drainer
   keeps) (target under 50 ms);
4. a big server: a pull of 100 new changes when the server holds 10,000
   memories, and again at 1,000,000 memories over 200 projects (the ratio
   should stay near 1: the change log is indexed per project).

Usage::

    .venv-test/bin/python bench/team_sync.py [--push 10000] [--pull 100000] [--big 1000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from postgres import PostgresServer, find_binaries, running

from memspool.config import load_config
from memspool.distill.similarity import index_terms
from memspool.store import connect, transaction
from memspool.store import memories as rows
from memspool.team import ops
from memspool.team.sync import index_waiting, sync

PROJECT = "github.com/acme/api"
PASSWORD = "bench"  # noqa: S105 - a throwaway local server
WORDS = ("retry", "webhook", "refund", "pool", "timeout", "cache", "index", "deploy", "queue",
         "worker", "lock", "schema", "token", "proxy", "billing", "invoice", "cron", "replica")


def sentence(i: int) -> str:
    picked = [WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7, 11)]
    return (f"Pitfall {i}: the {picked[0]} {picked[1]} fails when the {picked[2]} "
            f"{picked[3]} is exhausted under load number {i}.")


def setup(server: PostgresServer) -> str:
    su = server.superuser()
    su.execute(f"CREATE ROLE bench_admin LOGIN CREATEROLE PASSWORD '{PASSWORD}'")
    su.execute("CREATE DATABASE bench OWNER bench_admin")
    for who in ("alice", "bob"):
        su.execute(f"CREATE ROLE bench_{who} LOGIN PASSWORD '{PASSWORD}'")
    su.close()
    ops.init(server.url("bench_admin", PASSWORD, "bench"))
    su = server.superuser()
    su.execute("GRANT memspool_member TO bench_alice, bench_bob")
    su.close()
    return server.url("bench_admin", PASSWORD, "bench")


def machine(root: Path, name: str) -> tuple[Any, Any]:
    home = root / name
    config = load_config(home, env={"MEMSPOOL_SEMANTIC": "off"})
    return config, connect(config)


def fill(conn: Any, count: int, project: str = PROJECT, start: int = 0) -> None:
    with transaction(conn):
        for i in range(start, start + count):
            text = sentence(i)
            memory_id = rows.insert(conn, project=project, key=f"fact-{i}", type="pitfall",
                                    summary=text, body=text, terms=index_terms(text),
                                    at=time.time())
            rows.add_provenance(conn, rows.Provenance(memory_id, "created", f"s{i % 50}",
                                                      "bench", None, "h", time.time()))


def timed(call: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def verdict(secs: float, target: float) -> str:
    return f"target < {target:g} s: {'met' if secs < target else 'MISSED'}"


def server_fill(admin: Any, projects: int, per_project: int, offset: int) -> None:
    """Memories straight into the server (as its owner), a project at a time."""
    for p in range(projects):
        project = f"github.com/bench/p{p}"
        admin.execute("INSERT INTO memspool.projects (id, name) VALUES (%s, %s)"
                      " ON CONFLICT DO NOTHING", (project, f"p{p}"))
        admin.execute(
            "INSERT INTO memspool.memories (gid, project_id, key, type, summary, body, status,"
            " created_at, changed_at, created_on, changed_on)"
            " SELECT gen_random_uuid(), %s, 'k' || i, 'pitfall', 'Fact ' || i,"
            " 'Fact ' || i || ' about the billing pipeline and its retry queue.', 'live',"
            " 0, 0, 'bench', 'bench' FROM generate_series(%s::int, %s::int) i",
            (project, offset + 1, offset + per_project))


def bench_push(root: Path, alice: str, count: int) -> tuple[Any, Any]:
    config, conn = machine(root, "a")
    ops.join_project(conn, alice, PROJECT, "api")
    fill(conn, count)
    secs, report = timed(lambda: sync(conn, config))
    print(f"\n1. push of {count:,} new memories ({report.push.saves:,} saves, "
          f"{report.push.batches} batches): {secs:.2f} s, "
          f"{count / secs:,.0f} memories/s ({verdict(secs, 10)})")
    return config, conn


def bench_pull(root: Path, admin_url: str, bob: str, pushed: int, total: int) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as owner:
        owner.execute("SELECT memspool.grant_member(%s, 'bench_bob', false)", (PROJECT,))
        # The rest straight into the server, as if teammates had pushed them.
        owner.execute(
            "INSERT INTO memspool.memories (gid, project_id, key, type, summary, body,"
            " status, created_at, changed_at, created_on, changed_on)"
            " SELECT gen_random_uuid(), %s, 'more-' || i, 'pitfall', 'Fact ' || i,"
            " 'Fact ' || i || ' about the billing pipeline and its retry queue.', 'live',"
            " 0, 0, 'bench', 'bench' FROM generate_series(1, %s) i",
            (PROJECT, max(0, total - pushed)))
    config, conn = machine(root, "b")
    ops.join_project(conn, bob, PROJECT, "api")
    secs, report = timed(lambda: sync(conn, config))
    count = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    print(f"2. fresh machine pulling {report.pull.changes:,} changes ({count:,} memories, "
          f"{report.pull.batches} batches): {secs:.2f} s, {count / secs:,.0f} memories/s "
          f"({verdict(secs, 30)})")
    secs, _ = timed(lambda: index_waiting(conn))
    print(f"   then the background indexes their terms for near-duplicate lookups: "
          f"{secs:.2f} s (the drainer and `maintain`, in slices; search works before)")
    conn.close()


def bench_idle(config: Any, conn: Any) -> None:
    sync(conn, config)  # take in what the others pushed, and index it, first
    index_waiting(conn)
    fresh = [timed(lambda: sync(conn, config))[0] for _ in range(21)]
    pools: dict[str, Any] = {}
    sync(conn, config, pools=pools)
    pooled = [timed(lambda: sync(conn, config, pools=pools))[0] for _ in range(21)]
    for pool in pools.values():
        pool.close()
    for label, series in (("new connection", fresh), ("pooled connection", pooled)):
        median = statistics.median(series)
        print(f"3. sync with nothing new, {label}: median {median * 1000:.1f} ms, "
              f"p95 {sorted(series)[19] * 1000:.1f} ms over {len(series)} runs "
              f"({verdict(median, 0.05)})")


def bench_big(root: Path, admin_url: str, alice: str, big: int) -> None:
    import psycopg

    print("4. a pull of 100 new changes, by the size of the server:")
    results = []
    project = "github.com/bench/p0"
    with psycopg.connect(admin_url, autocommit=True) as owner:
        owner.execute("TRUNCATE memspool.provenance, memspool.history, memspool.aliases,"
                      " memspool.memories, memspool.members, memspool.projects CASCADE")
        have = 0
        for size in (10_000, big):
            per = (size - have) // 200
            started = time.perf_counter()
            server_fill(owner, 200, per, offset=have // 200)
            have += per * 200
            owner.execute("ANALYZE")
            fill_secs = time.perf_counter() - started
            owner.execute("INSERT INTO memspool.members (project_id, role) VALUES (%s,"
                          " 'bench_alice') ON CONFLICT DO NOTHING", (project,))
            config, conn = machine(root, f"c{size}")
            conn.execute("INSERT INTO team_servers (url, role) VALUES (?, 'bench_alice')",
                         (alice,))
            last = owner.execute("SELECT max(seq) FROM memspool.memories").fetchone()[0]
            conn.execute("INSERT INTO team_projects (project, server, pulled_seq, joined_at)"
                         " VALUES (?, ?, ?, 0)", (project, alice, last))
            owner.execute(
                "INSERT INTO memspool.memories (gid, project_id, key, type, summary, body,"
                " status, created_at, changed_at, created_on, changed_on)"
                " SELECT gen_random_uuid(), %s, 'new-' || %s || '-' || i, 'pitfall',"
                " 'New fact ' || i, 'New fact ' || i || ' about the retry queue.', 'live',"
                " 0, 0, 'bench', 'bench' FROM generate_series(1, 100) i", (project, size))
            runs = []
            for _ in range(5):
                conn.execute("UPDATE team_projects SET pulled_seq = ?", (last,))
                conn.execute("DELETE FROM team_memories")
                conn.execute("DELETE FROM memories")
                secs, report = timed(lambda conn=conn, config=config: sync(conn, config))
                runs.append(secs)
            median = statistics.median(runs)
            results.append(median)
            print(f"   server at {have + 100 * len(results):,} memories over 200 projects "
                  f"(filled in {fill_secs:.0f} s): pull of {report.pull.changes} changes, "
                  f"median {median * 1000:.1f} ms of 5")
            conn.close()
    print(f"   ratio {big:,} / 10,000: {results[-1] / results[0]:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--push", type=int, default=10_000)
    parser.add_argument("--pull", type=int, default=100_000)
    parser.add_argument("--big", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    binaries = find_binaries()
    if binaries is None:
        raise SystemExit("no PostgreSQL server binaries found (install postgresql)")
    print("memspool team sync")
    print(f"  server:  {binaries} on 127.0.0.1, a throwaway cluster (fsync off, durable "
          f"commits); machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    with running(binaries) as server, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        admin_url = setup(server)
        alice = server.url("bench_alice", PASSWORD, "bench")
        bob = server.url("bench_bob", PASSWORD, "bench")
        config, conn = bench_push(root, alice, args.push)
        bench_pull(root, admin_url, bob, args.push, args.pull)
        bench_idle(config, conn)
        conn.close()
        bench_big(root, admin_url, alice, args.big)
    return 0


if __name__ == "__main__":
    sys.exit(main())
