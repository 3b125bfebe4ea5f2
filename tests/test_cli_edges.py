"""The command line's edges: limits, where --home goes, help, renamed commands, settings modes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, run_cli


@pytest.mark.parametrize("limit", ["0", "-3", "many"])
def test_a_limit_below_one_is_refused_in_one_sentence(limit: str) -> None:
    proc = run_cli("slices", "list", "--limit", limit, check=False)
    assert proc.returncode == 1 and proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and "at least 1" in lines[0] and "--help" in lines[0]


@pytest.mark.parametrize("chars", ["10", "199", "20001", "lots"])
def test_a_context_limit_outside_the_apis_range_is_refused_as_the_http_api_does(
        chars: str) -> None:
    proc = run_cli("context", "--project", "p", "--max-chars", chars, check=False)
    assert proc.returncode == 1 and proc.stdout == b""
    assert "from 200 to 20000" in proc.stderr.decode()  # GET /context's range


@pytest.mark.parametrize(("flag", "value", "said"), [
    ("--limit", "500", "from 1 to 100"), ("--limit", "0", "from 1 to 100"),
    ("--offset", "5000", "from 0 to 1000"), ("--offset", "-1", "from 0 to 1000")])
def test_a_search_page_outside_the_apis_range_is_refused_as_the_http_api_does(
        flag: str, value: str, said: str) -> None:
    proc = run_cli("search", "pool", flag, value, check=False)
    assert proc.returncode == 1 and proc.stdout == b"" and said in proc.stderr.decode()


#: What int() reads as a number that the HTTP API refuses: other scripts' digits,
#: underscores, a sign.
_NOT_ASCII_DIGITS = (lambda n: n.translate(str.maketrans("0123456789", "\u0660\u0661\u0662"
                                                             "\u0663\u0664\u0665\u0666"
                                                             "\u0667\u0668\u0669")),
                     lambda n: f"{n[0]}_{n[1:]}", lambda n: f"+{n}")


@pytest.mark.parametrize("spell", _NOT_ASCII_DIGITS, ids=("arabic-indic", "underscore", "sign"))
@pytest.mark.parametrize("args", [("search", "pool", "--limit"), ("search", "pool", "--offset"),
                                  ("context", "--project", "p", "--max-chars"),
                                  ("memories", "list", "--limit"), ("slices", "list", "--limit"),
                                  ("memories", "show"), ("memories", "forget"),
                                  ("slices", "show")])
def test_a_number_is_ascii_digits_as_over_http(args: tuple[str, ...],
                                               spell: Callable[[str], str]) -> None:
    """A number int() reads but the HTTP API refuses is refused by every option and
    id that takes one, in the one sentence a bad value gets."""
    value = spell("500" if args[-1] == "--max-chars" else "10")  # each in range
    proc = run_cli(*args, value, check=False)
    assert proc.returncode == 1 and proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and "must be a whole number" in lines[0], lines
    assert f"got {value!r}" in lines[0] and "--help" in lines[0]


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_search_is_an_error_not_an_empty_answer(query: str) -> None:
    run_cli("drainer", "--once")  # makes the home and its store
    proc = run_cli("search", query, check=False)
    assert proc.returncode == 1 and proc.stdout == b""
    assert "The query is empty" in proc.stderr.decode()
    as_json = run_cli("search", query, "--json", check=False)
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["ok"] is False


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_home_is_accepted_before_and_after_the_command(tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    run_cli("--home", str(other), "capture", "--project", "p",
            input=b"Pitfall: the cache key omits the locale, so pages mix languages.")
    before = json.loads(run_cli("--home", str(other), "status", "--json").stdout)
    after = json.loads(run_cli("status", "--json", "--home", str(other)).stdout)
    assert before["home"] == after["home"] == str(other)
    assert before["memories"] == after["memories"] == 1


def test_bare_memspool_prints_help_and_succeeds() -> None:
    proc = run_cli()
    assert proc.returncode == 0 and b"COMMAND" in proc.stdout and b"slices" in proc.stdout


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_the_old_captures_command_works_and_says_it_was_renamed() -> None:
    run_cli("drainer", "--once")  # makes the home and its store
    proc = run_cli("captures", "list", "--json")
    assert json.loads(proc.stdout) == []
    assert b"renamed `slices`" in proc.stderr
    assert b"captures" not in run_cli("--help").stdout


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_install_keeps_the_settings_file_mode_and_uninstall_removes_what_it_made(
        tmp_path: Path) -> None:
    existing = tmp_path / "existing.json"
    existing.write_text('{"theme": "dark"}\n')
    existing.chmod(0o644)
    run_cli("install", "--settings", str(existing))
    assert existing.stat().st_mode & 0o777 == 0o644
    run_cli("uninstall", "--settings", str(existing))
    assert json.loads(existing.read_text()) == {"theme": "dark"}

    made = tmp_path / "made" / "settings.json"
    run_cli("install", "--settings", str(made))
    assert made.stat().st_mode & 0o777 == 0o600
    run_cli("uninstall", "--settings", str(made))
    assert not made.exists()  # memspool made it and it would hold only {}
    again = run_cli("uninstall", "--settings", str(made)).stdout.decode()
    assert again == f"no memspool hook in {made} (the file does not exist): nothing to remove\n"


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_slice_listing_shows_whole_session_ids(home: Path, projects: Path) -> None:
    from conftest import SPOTTER, payload

    from memspool.spool import append
    session = "491e126e-1e71-469c-ade2-fcc8af567c74"
    transcript = projects / f"{session}.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    append(str(home / "spool"), payload("SessionEnd", session, transcript))
    run_cli("drainer", "--once")
    assert session.encode() in run_cli("slices", "list").stdout


@pytest.mark.slow  # runs four test files again in a subprocess
@pytest.mark.timeout(600)
def test_the_suite_leaves_a_sentinel_home_untouched(tmp_path: Path) -> None:
    """Run the tests that install hooks and fall back to defaults with HOME set to a
    sentinel; every file under it must be exactly as it was."""
    if os.environ.get("SENTINEL_HOME_RUN"):
        pytest.skip("already inside the sentinel run")
    sentinel = tmp_path / "sentinel-home"
    (sentinel / ".claude").mkdir(parents=True)
    (sentinel / ".claude" / "settings.json").write_text('{"hooks": {}, "model": "x"}\n')
    (sentinel / ".local" / "share").mkdir(parents=True)

    def snapshot() -> dict[str, tuple[int, bytes]]:
        return {str(p.relative_to(sentinel)): (p.stat().st_mtime_ns,
                                               p.read_bytes() if p.is_file() else b"")
                for p in sentinel.rglob("*")}

    before = snapshot()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEMSPOOL_", "XDG_", "CLAUDE_"))}
    env.update(HOME=str(sentinel), SENTINEL_HOME_RUN="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
         "tests/test_install.py", "tests/test_home.py", "tests/test_spool.py",
         "tests/test_cli_edges.py"],
        cwd=REPO, env=env, capture_output=True, timeout=540, check=False)
    assert proc.returncode == 0, proc.stdout.decode()[-3000:]
    assert snapshot() == before
    shutil.rmtree(sentinel)


def test_the_context_block_counts_what_it_leaves_out_in_good_english(home: Path) -> None:
    """The block ends between memories and says how many more there are: "1 more
    current memory ... finds it", "2 more current memories ... finds them"."""
    from memspool.service import Service

    with Service() as service:
        for n in range(3):
            service.save(f"Pool {n} setting", f"Worker pool {n} keeps {n + 4} connections "
                         f"open and recycles them after {n + 2} hours; {'x' * 180}.",
                         project="shop")
        endings = {}
        for budget in range(len(service.context("shop", max_chars=20_000).text), 200, -10):
            last = service.context("shop", max_chars=budget).text.rstrip().splitlines()[-1]
            endings.setdefault(last.split(" more ")[0], last)
    assert endings["1"].startswith("1 more current memory of") and \
        endings["1"].endswith("finds it.")
    assert endings["2"].startswith("2 more current memories of") and \
        endings["2"].endswith("finds them.")


def test_an_error_quoting_a_secret_says_it_redacted(home: Path, tmp_path: Path) -> None:
    # A token pasted into the wrong argument or field is quoted back by the refusal:
    # on the terminal (and in --json) it is redacted like anything stored.
    token = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    refused = run_cli("search", "x", "--limit", token, check=False)
    assert refused.returncode == 1 and b"[REDACTED:github]" in refused.stderr
    dump = tmp_path / "bad.jsonl"
    dump.write_text(json.dumps({"project": "p", "key": "k", "summary": "s", "body": "b",
                                "created_at": token}) + "\n")
    refused = run_cli("memories", "import", str(dump), "--json", check=False)
    assert refused.returncode == 1 and b"Line 1" in refused.stderr
    for said in (refused.stdout, refused.stderr):
        assert token[:12].encode() not in said and b"[REDACTED:github]" in said
