"""Correcting memory from a terminal: ``memspool memories edit``, ``pin`` and ``unpin``.

The same corrections as the web page's (docs/web.md, "Correcting memory"), for a
person who never opens it: a wrong type moves a memory under the right heading of
the context block, a refused edit changes nothing, a pin keeps a memory from decay.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli

from memspool.archivist import maintain
from memspool.distill.claim_model import model
from memspool.service import Service

FACT = "Deploys go through `make deploy`; never `kubectl apply` by hand in prod."


def _saved(text: str = FACT, project: str = "shop") -> int:
    report = json.loads(run_cli("capture", "--project", project, input=text.encode()).stdout)
    (note,) = report["notes"]
    return int(note["id"])


def _shown(memory: int) -> dict[str, object]:
    return json.loads(run_cli("memories", "show", str(memory), "--json").stdout)  # type: ignore[no-any-return]


def _block(home: Path, project: str = "shop") -> str:
    with Service(home) as service:
        return service.injected_context(project)


def test_a_type_corrected_moves_the_memory_under_its_heading_and_keeps_the_text(
        home: Path) -> None:
    memory = _saved()
    before = _shown(memory)
    assert before["type"] != "decision"
    assert "### Decisions" not in _block(home)
    done = run_cli("memories", "edit", str(memory), "--type", "decision")
    assert done.stdout.decode() == (f"edited #{memory} (decision): the type (was "
                                    f"{before['type']})\n  summary: {FACT}\n")
    after = _shown(memory)
    assert after["type"] == "decision"
    assert (after["summary"], after["body"]) == (before["summary"], before["body"])
    assert [entry["reason"] for entry in after["history"]] == ["edited"]  # type: ignore[index]
    # The block a new session gets is written again at once, under the new heading.
    block = _block(home)
    assert "### Decisions" in block and f"#{memory} " in block.split("### Decisions")[1]
    again = run_cli("memories", "edit", str(memory), "--type", "decision", "--json")
    assert json.loads(again.stdout) == {"ok": True, "id": memory, "changed": False}
    assert len(_shown(memory)["history"]) == 1  # type: ignore[arg-type]
    shown = run_cli("memories", "show", str(memory)).stdout.decode()
    assert f"(edited, type {before['type']}):\n{FACT}" in shown


def test_show_prints_a_summary_its_text_does_not_start_with(home: Path) -> None:
    memory = _saved()
    assert "summary:" not in run_cli("memories", "show", str(memory)).stdout.decode()
    done = run_cli("memories", "edit", str(memory), "--text",
                   "Use `make deploy`: it runs the migrations first.").stdout.decode()
    assert "the text" in done and "the summary is as it was" in done
    shown = run_cli("memories", "show", str(memory)).stdout.decode()
    assert f"summary: {FACT}\nUse `make deploy`: it runs the migrations first." in shown


def test_new_text_from_a_file_or_stdin_is_cleaned_and_redacted_like_any_save(
        home: Path, tmp_path: Path) -> None:
    memory = _saved()
    fix = tmp_path / "fix.md"
    fix.write_text("Deploys go through `make deploy` (it tags the image first).\n"
                   "The deploy token ghp_abcdefghijklmnopqrstuvwxyz0123456789 is in 1Password.\n",
                   encoding="utf-8")
    run_cli("memories", "edit", str(memory), "--text-file", str(fix))
    shown = _shown(memory)
    assert "tags the image first" in str(shown["body"]) and "ghp_" not in str(shown["body"])
    assert "[REDACTED" in str(shown["body"]) and shown["summary"] == FACT
    run_cli("memories", "edit", str(memory), "--text-file", "-",
            "--summary", "Deploys: `make deploy` \x1b]0;owned\x07only.",
            input=b"Use `make deploy`, which tags the image.\x1b[2J")
    shown = _shown(memory)
    assert shown["summary"] == "Deploys: `make deploy` only."
    assert "\x1b" not in str(shown["body"]) and "which tags the image" in str(shown["body"])
    assert [entry["reason"] for entry in shown["history"]] == ["edited", "edited"]  # type: ignore[index]


@pytest.mark.parametrize(("args", "stdin", "said"), [
    ((), None, "Nothing to change"),
    (("--summary", "x" * 301), None, "at most 300"),
    (("--summary", " "), None, "was empty"),
    (("--text-file", "-"), b"\xff\xfe not text", "stdin is not UTF-8"),
    (("--text-file", "/nonexistent/fix.md"), None, "Cannot read /nonexistent/fix.md"),
    (("--type", "guess"), None, "invalid choice"),
])
def test_a_refused_edit_says_why_and_changes_nothing(
        home: Path, args: tuple[str, ...], stdin: bytes | None, said: str) -> None:
    memory = _saved()
    before = _shown(memory)
    refused = run_cli("memories", "edit", str(memory), *args, input=stdin, check=False)
    assert refused.returncode != 0 and said in refused.stderr.decode()
    assert _shown(memory) == before


def test_an_edit_or_pin_of_no_memory_is_not_found_and_makes_no_home(
        memspool_env: Path) -> None:
    for command in (("edit", "7", "--type", "pitfall"), ("pin", "7"), ("unpin", "7")):
        answer = run_cli("memories", *command, check=False)
        assert answer.returncode != 0 and "no memspool home" in answer.stderr.decode()
        assert not memspool_env.exists()
    _saved()
    for command in (("edit", "7", "--type", "pitfall"), ("pin", "7"), ("unpin", "7")):
        answer = run_cli("memories", *command, "--json", check=False)
        assert answer.returncode != 0
        assert json.loads(answer.stdout)["error"].startswith("No memory with id 7")


@pytest.mark.slow  # several CLI processes and two maintenance passes
def test_a_pin_from_the_terminal_keeps_a_memory_from_decay(home: Path) -> None:
    kept = _saved()
    other = _saved("Pitfall: the payments sandbox resets every Sunday at midnight.")
    assert run_cli("memories", "pin", str(kept)).stdout.decode() == (
        f"pinned #{kept}: decay never archives it.\n")
    assert run_cli("memories", "pin", str(kept)).stdout.decode() == (
        f"#{kept} was pinned already\n")
    shown = run_cli("memories", "show", str(kept)).stdout.decode().splitlines()[0]
    assert ", pinned)" in shown and _shown(kept)["pinned"] is True
    far = time.time() + 10 * 365 * 86400
    with Service(home) as service:
        maintain(service.conn, service.config)  # schedules decay
        assert maintain(service.conn, service.config, now=far).archived == 1
    assert _shown(kept)["layer"] != "archived" and _shown(other)["layer"] == "archived"
    # Pinned when archived, a memory is back in recall: a person vouched for it.
    back = run_cli("memories", "pin", str(other)).stdout.decode()
    assert "back in recall, canonical" in back and _shown(other)["layer"] == "canonical"
    listed = run_cli("memories", "list").stdout.decode().splitlines()
    assert [f"#{line.split()[0]}" for line in listed if "  pinned  " in line] == (
        [f"#{other}", f"#{kept}"] if other > kept else [f"#{kept}", f"#{other}"])
    assert {row["id"]: row["pinned"] for row in json.loads(
        run_cli("memories", "list", "--json").stdout)} == {kept: True, other: True}
    unpinned = run_cli("memories", "unpin", str(kept), "--json").stdout
    assert json.loads(unpinned) == {"ok": True, "id": kept, "pinned": False, "changed": True}
    assert run_cli("memories", "unpin", str(kept)).stdout.decode() == f"#{kept} was not pinned\n"
    with Service(home) as service:
        assert maintain(service.conn, service.config, now=far * 2).archived == 1
    assert _shown(kept)["layer"] == "archived" and _shown(kept)["pinned"] is False


def test_a_trusted_import_keeps_pins_and_corrections_an_untrusted_one_cannot_claim_them(
        home: Path, tmp_path: Path) -> None:
    memory = _saved()
    other = _saved("Pitfall: the payments sandbox resets every Sunday at midnight.")
    run_cli("memories", "edit", str(memory), "--summary", "Deploys: `make deploy` only.")
    run_cli("memories", "pin", str(memory))
    exported = run_cli("memories", "export").stdout
    lines = {row["id"]: row for row in map(json.loads, exported.splitlines())}
    assert (lines[memory]["pinned"], lines[other]["pinned"]) == (True, False)
    assert isinstance(lines[memory]["edited_at"], float) and lines[other]["edited_at"] is None
    for trust in (True, False):
        moved = tmp_path / f"moved-{trust}"
        run_cli("--home", str(moved), "memories", "import", "-",
                *(["--trust"] if trust else []), input=exported)
        shown = {row["summary"]: row for row in (
            json.loads(run_cli("--home", str(moved), "memories", "show", str(row["id"]),
                               "--json").stdout)
            for row in json.loads(run_cli("--home", str(moved), "memories", "list",
                                          "--json").stdout))}
        moved_memory = shown["Deploys: `make deploy` only."]
        # Moving a store keeps what a person did there; a file from elsewhere is a
        # claim, and cannot say a person vouched for a memory.
        assert moved_memory["pinned"] is trust
        assert (moved_memory["edited_at"] == lines[memory]["edited_at"]) is trust
        assert all(row["pinned"] is False and row["edited_at"] is None
                   for summary, row in shown.items() if summary.startswith("Pitfall"))
    # A file exported before these fields existed says nothing of them: the store's
    # own pin and correction stay.
    older = b"".join(json.dumps({k: v for k, v in row.items()
                                 if k not in ("pinned", "edited_at")}).encode() + b"\n"
                     for row in lines.values())
    run_cli("memories", "import", "-", "--trust", input=older)
    assert _shown(memory)["pinned"] is True
    assert _shown(memory)["edited_at"] == lines[memory]["edited_at"]
    refused = run_cli("--home", str(tmp_path / "bad"), "memories", "import", "-", "--trust",
                      input=exported.replace(b'"pinned":true', b'"pinned":"yes"'), check=False)
    assert refused.returncode != 0 and "'pinned' must be true or false" in refused.stderr.decode()


def test_a_memory_a_person_vouches_for_joins_the_context_block(home: Path) -> None:
    """The block is the strict tier: an unsure claim of a session stays searchable
    only, until a person pins or corrects it; a pinned memory is listed first."""
    clear = _saved("Pitfall: the payments sandbox resets every Sunday at midnight.")
    unsure, other = _saved(), _saved("The export job writes to `s3://exports/daily/`.")
    with Service(home) as service:  # as a session's claim under the clear bar is kept
        service.conn.execute("UPDATE memories SET clarity = 0.1 WHERE id IN (?, ?)",
                             (unsure, other))
        service.conn.commit()
        service.maintain()
    block = _block(home)
    assert f"#{clear} " in block and f"#{unsure} " not in block and f"#{other} " not in block
    run_cli("memories", "pin", str(unsure))
    run_cli("memories", "edit", str(other), "--summary", "Exports land in `s3://exports/daily/`.")
    lines = [line for line in _block(home).splitlines() if line.startswith("- #")]
    assert lines[0].startswith(f"- #{unsure} ") and lines[0].endswith("(pinned, 1 session)")
    assert any(line.startswith(f"- #{other} Exports land in") for line in lines)
    run_cli("memories", "unpin", str(unsure))
    assert f"#{unsure} " not in _block(home)


def test_show_says_which_tier_a_memory_is_in_and_why(home: Path) -> None:
    """``memories show`` says whether the context block lists a memory, and why: the
    same rule the block is read by, for each way in and out of it; past the block's
    budget a memory of the strict tier is left to search, and says so."""
    texts = ["Pitfall: the payments sandbox resets every Sunday at midnight.",
             "The export job writes to `s3://exports/daily/`.",
             "Staging runs on `db-staging-2`; prod on `db-prod-1`.",
             "Decision: invoices are numbered per tenant, never globally.",
             "Convention: every migration ships with its down step.",
             "The nightly backup keeps 14 days of snapshots in `backups/pg/`."]
    clear, unsure, corroborated, established, replaced, edge = (_saved(t) for t in texts)
    with Service(home) as service:
        service.conn.execute("UPDATE memories SET clarity = 0.1 WHERE id NOT IN (?, ?)",
                             (clear, edge))
        bar = model().clear  # just under the bar, though it prints as the bar rounded
        service.conn.execute("UPDATE memories SET clarity = ? WHERE id = ?", (bar - 1e-4, edge))
        service.conn.execute("UPDATE memories SET layer = 'canonical' WHERE id = ?",
                             (established,))
        service.conn.execute("UPDATE memories SET layer = 'superseded', superseded_by = ? "
                             "WHERE id = ?", (clear, replaced))
        service.conn.commit()
        service.maintain()
    run_cli("capture", "--project", "shop", "--session", "a-later-session",
            input=texts[2].encode())  # a second session says it (after maintain's promotions)
    block = _block(home)
    why = {}
    for memory in (clear, unsure, corroborated, established, replaced, edge):
        shown = _shown(memory)
        assert (shown["tier"] == "strict") == (f"#{memory} " in block) \
            == shown["in_context_block"], shown
        why[memory] = (shown["tier"], shown["tier_why"])
    assert why[clear] == ("strict", "clearly stated (clarity 1.00, at or above the bar of "
                          f"{bar:.2f})")
    assert why[corroborated] == ("strict", "said in 2 sessions")
    assert why[established] == ("strict", "established")
    assert why[replaced] == ("out of recall", f"superseded by #{clear}")
    for memory, clarity in ((unsure, "0.10"), (edge, f"{bar - 0.01:.2f}")):
        assert why[memory][0] == "searchable"
        assert str(why[memory][1]).startswith(
            f"said in one session, not clearly (clarity {clarity} under the bar of {bar:.2f}): "
            "a second session saying it, a pin or an edit puts it in the context block; so "
            "does maintain, which makes it established from ")
    printed = run_cli("memories", "show", str(unsure)).stdout.decode().splitlines()
    assert printed[2].startswith("searchable only, not in the context block: said in one ")
    status = json.loads(run_cli("status", "--json").stdout)
    assert status["memories_in_context"] == sum(t == "strict" for t, _ in why.values()) == 3
    assert run_cli("status").stdout.decode().count(
        "in context blocks: 3 of the 5 current (the rest are found by search)\n") == 1
    run_cli("memories", "pin", str(unsure))
    assert _shown(unsure)["tier_why"] == "pinned by a person" and f"#{unsure} " in _block(home)

    # A block too small for all four: the last of them is left to search, and says so.
    run_cli("memories", "edit", str(edge), "--summary", "Backups: 14 days of snapshots.",
            env={"MEMSPOOL_CONTEXT_MAX_CHARS": "420"})
    block = _block(home)
    listed = [m for m in (unsure, edge, clear, corroborated, established) if f"#{m} " in block]
    assert 0 < len(listed) < 5, block
    left = next(m for m in (unsure, edge, clear, corroborated, established) if m not in listed)
    shown = _shown(left)
    assert shown["tier"] == "strict" and shown["in_context_block"] is False
    printed = run_cli("memories", "show", str(left)).stdout.decode().splitlines()
    assert printed[2].startswith("strict tier, past the context block's budget (search finds "
                                 "it): ")
    assert json.loads(run_cli("status", "--json").stdout)["memories_in_context"] == len(listed)


def _editor(tmp_path: Path, body: str) -> dict[str, str]:
    """An EDITOR that runs ``body`` (Python, with ``path`` the draft's Path and ``draft``
    its text) on the file it is given; drafts go to a TMPDIR of the test's own."""
    script = tmp_path / "editor.py"
    script.write_text("import pathlib, subprocess, sys\npath = pathlib.Path(sys.argv[1])\n"
                      f"draft = path.read_text()\n{body}\n", encoding="utf-8")
    drafts = tmp_path / "drafts"
    drafts.mkdir(exist_ok=True)
    return {"EDITOR": f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}",
            "VISUAL": "", "TMPDIR": str(drafts)}


def test_edit_with_no_option_opens_the_memory_in_the_editor(home: Path, tmp_path: Path) -> None:
    memory = _saved()
    env = _editor(tmp_path, "assert draft.splitlines()[5:7] == ['type: pitfall', "
                  f"{FACT!r}], draft\n"
                  "path.write_text(draft.replace('type: pitfall', 'type: decision')"
                  ".replace('by hand in prod.', 'by hand in prod; it runs migrations first.'))")
    done = run_cli("memories", "edit", str(memory), env=env).stdout.decode()
    assert done.startswith(f"edited #{memory} (decision): the type (was pitfall), the summary")
    shown = _shown(memory)
    assert shown["type"] == "decision" and str(shown["body"]).endswith("migrations first.")
    assert shown["edited_at"] is not None
    assert not list((tmp_path / "drafts").iterdir())  # the draft is gone once saved
    # Left empty, the draft cancels; left as it was, nothing changes.
    assert run_cli("memories", "edit", str(memory), env=_editor(
        tmp_path, "path.write_text('')")).stdout.decode() == (
        f"#{memory} unchanged: the draft was left empty\n")
    assert run_cli("memories", "edit", str(memory), "--json", env=_editor(
        tmp_path, "pass")).stdout.decode().replace(" ", "").replace("\n", "") == (
        f'{{"ok":true,"id":{memory},"changed":false}}')
    assert _shown(memory) == shown


@pytest.mark.parametrize(("body", "said"), [
    ("path.write_text('Deploys: make deploy only.\\n\\nUse make deploy.')",
     "first line must be the type"),
    ("path.write_text('type: decision\\n' + 'x' * 301 + '\\n\\nUse make deploy.')",
     "at most 300"),
    ("subprocess.run([sys.executable, '-m', 'memspool', 'memories', 'edit', '1', '--type',"
     " 'pattern'], check=True)\npath.write_text(draft.replace('in prod.', 'in production.'))",
     "changed while it was in the editor"),
])
def test_a_draft_refused_is_kept_and_the_memory_unchanged(
        home: Path, tmp_path: Path, body: str, said: str) -> None:
    memory = _saved()
    assert memory == 1
    env = _editor(tmp_path, body)
    refused = run_cli("memories", "edit", str(memory), env=env, check=False)
    error = refused.stderr.decode()
    assert refused.returncode != 0 and said in error and "The draft is kept in" in error
    (kept,) = (tmp_path / "drafts").iterdir()
    assert str(kept) in error and kept.stat().st_mode & 0o777 == 0o600
    assert "Use make deploy." in kept.read_text() or "in production." in kept.read_text()
    assert _shown(memory)["summary"] == FACT


def test_without_an_editor_edit_says_how_to_give_one(home: Path) -> None:
    memory = _saved()
    for env in ({"EDITOR": "", "VISUAL": ""}, {"EDITOR": "false", "VISUAL": ""},
                {"EDITOR": "", "VISUAL": "/nonexistent/editor --wait"}):
        refused = run_cli("memories", "edit", str(memory), env=env, check=False)
        assert refused.returncode != 0, env
        assert ("set EDITOR" in refused.stderr.decode()
                or "Nothing was changed" in refused.stderr.decode()
                or "nothing was changed" in refused.stderr.decode()), refused.stderr
    assert _shown(memory)["edited_at"] is None


def test_a_draft_saved_as_it_was_changes_nothing_whatever_its_spaces(
        home: Path, tmp_path: Path) -> None:
    memory = _saved()
    # A text whose lines end in spaces (a markdown line break) comes back as it went.
    run_cli("memories", "edit", str(memory), "--text", "Use `make deploy`:  \nit tags first.")
    before = _shown(memory)
    done = run_cli("memories", "edit", str(memory), "--json", env=_editor(
        tmp_path, "path.write_text(draft.replace('\\n', '\\r\\n') + '\\n\\n')"))
    assert json.loads(done.stdout)["changed"] is False and _shown(memory) == before
