"""The drainer, one pass at a time: slicing, the size floor, resyncs, subagents, bad input."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from conftest import CCVIEWER, SPOTTER, SPOTTER_AGENT, payload

from memspool.drainer import Drainer
from memspool.spool import append
from memspool.store.slices import slice_text

SESSION = "11111111-2222-3333-4444-555555555555"


def fire(d: Drainer, event: str, transcript: Path, session: str = SESSION, **extra: object) -> None:
    append(str(d.config.spool_dir), payload(event, session, transcript, **extra))


def texts(d: Drainer) -> list[str]:
    ids = [r[0] for r in d.conn.execute("SELECT id FROM slices ORDER BY id")]
    return [slice_text(d.conn, i) for i in ids]


def rows(d: Drainer) -> list[dict[str, object]]:
    return [dict(r) for r in d.conn.execute("SELECT * FROM slices ORDER BY id")]


def line(kind: str, text: str, uuid: str, **extra: object) -> bytes:
    if kind == "user":
        record = {"type": "user", "uuid": uuid, "message": {"role": "user", "content": text}}
    else:
        record = {"type": "assistant", "uuid": uuid,
                  "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}
    record.update(extra)
    return json.dumps(record).encode() + b"\n"


def test_real_transcript_keeps_reasoning_drops_tool_output(
    drainer: Drainer, projects: Path
) -> None:
    transcript = projects / "p" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    transcript.write_bytes(SPOTTER.read_bytes())
    fire(drainer, "Stop", transcript)
    result = drainer.loop()
    assert result.frames == 1 and result.slices == 1
    text = "\n".join(texts(drainer))
    # kept: prompts, thinking, assistant text, one line per tool call
    assert "[user] <command-message>handgemacht:create-beads" in text
    assert "[thinking] Let me research the fastest way to set up Credo" in text
    assert "[assistant] I'll research the setup options" in text
    assert "[tool WebFetch] https://github.com/bradleygolden/claude-marketplac" in text
    assert "[tool Bash]" in text
    # dropped: tool result bodies, toolUseResult, progress, snapshots, signatures
    records = [json.loads(x) for x in SPOTTER.read_bytes().splitlines()]
    for r in records:
        for block in (r.get("message") or {}).get("content") or []:
            if (isinstance(block, dict) and block.get("type") == "tool_result"
                    and not block.get("is_error")):
                content = block["content"]
                body = content if isinstance(content, str) else json.dumps(content)
                if len(body) > 200:
                    assert body[50:150] not in text
            if isinstance(block, dict) and block.get("signature"):
                assert block["signature"][:40] not in text
    assert "hook_progress" not in text and "trackedFileBackups" not in text
    row = rows(drainer)[0]
    assert row["byte_start"] == 0 and row["byte_end"] == SPOTTER.stat().st_size
    assert row["records_kept"] == 30 and row["records_dropped"] == 66
    assert row["text_chars"] < 0.1 * row["raw_bytes"]


def test_old_format_inline_sidechain_and_summary(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(CCVIEWER.read_bytes())
    fire(drainer, "Stop", transcript)
    drainer.loop()
    text = "\n".join(texts(drainer))
    assert text.startswith("[summary] ")
    assert "[subagent assistant]" in text and "[tool TodoWrite]" in text
    assert sum(r["text_chars"] for r in rows(drainer)) < 0.1 * CCVIEWER.stat().st_size


def test_half_written_line_waits_for_its_newline(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    first = line("user", "Explain why the cursor must only move past complete lines " * 10, "u1")
    half = line("assistant", "Because a half written JSON line cannot be parsed yet " * 10, "a1")
    transcript.write_bytes(first + half[:40])
    fire(drainer, "Stop", transcript)
    drainer.loop()
    assert len(texts(drainer)) == 1
    assert rows(drainer)[0]["byte_end"] == len(first)
    with transcript.open("ab") as handle:
        handle.write(half[40:])
    fire(drainer, "PreCompact", transcript)
    drainer.loop()
    second = texts(drainer)[1]
    assert second.startswith("[assistant] Because a half written")
    assert rows(drainer)[1]["byte_start"] == len(first)


def test_size_floor_holds_back_then_precompact_forces(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(line("user", "short question about the lock", "u1"))
    fire(drainer, "Stop", transcript)
    drainer.loop()
    assert texts(drainer) == []  # below 400 characters: held back
    cursor = drainer.conn.execute("SELECT offset, held_since FROM cursors").fetchone()
    assert cursor["offset"] == 0 and cursor["held_since"] is not None
    with transcript.open("ab") as handle:
        handle.write(line("assistant", "short answer", "a1"))
    fire(drainer, "PreCompact", transcript, trigger="manual",
         custom_instructions="Keep the lock decision")
    drainer.loop()
    [text] = texts(drainer)
    assert text == ("[precompact instructions] Keep the lock decision\n\n"
                    "[user] short question about the lock\n\n[assistant] short answer")
    assert drainer.conn.execute("SELECT held_since FROM cursors").fetchone()[0] is None
    # the same PreCompact frame replayed adds nothing
    drainer.loop()
    assert len(texts(drainer)) == 1


def test_held_back_slice_ships_after_hold_max(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(line("user", "a small tail that nobody forces out", "u1"))
    fire(drainer, "Stop", transcript)
    drainer.loop(now=1000.0)
    assert texts(drainer) == []
    drainer.loop(now=1000.0 + drainer.config.hold_max_secs + 1)
    assert texts(drainer) == ["[user] a small tail that nobody forces out"]
    assert rows(drainer)[0]["event"] == "held-expired"


@pytest.mark.settings(max_slice_chars=1000)
def test_oversized_slice_becomes_several_captures_nothing_truncated(
        drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    big = "B" * 2500  # one record longer than a capture
    body = b"".join(line("user", f"question {i} " + "q" * 300, f"u{i}") for i in range(6))
    transcript.write_bytes(
        body + line("assistant", big, "big") + line("user", "tail " * 100, "t")
    )
    fire(drainer, "Stop", transcript)
    drainer.loop()
    parts = texts(drainer)
    assert len(parts) >= 5 and all(len(p) <= 1000 for p in parts)
    joined = "".join(parts)
    assert joined.count("B") == 2500
    for i in range(6):
        assert f"question {i} " in joined
    spans = [(r["byte_start"], r["byte_end"]) for r in rows(drainer)]
    assert spans[0][0] == 0 and spans[-1][1] == transcript.stat().st_size
    assert all(a[1] <= b[0] or a == b for a, b in itertools.pairwise(spans))


def test_compaction_boundary_and_replayed_records(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    before = [
        line("user", "Why does the drainer hold a file lock while it runs at all?", "u1"),
        line("assistant", "So that exactly one drainer advances the cursors at a time.", "a1"),
    ]
    summary = ("This session is being continued. "
               "Summary: the drainer lock guarantees one writer.")
    compaction = [
        json.dumps({"type": "system", "subtype": "compact_boundary", "uuid": "cb1",
                    "compactMetadata": {"trigger": "auto", "preTokens": 150000}}).encode() + b"\n",
        json.dumps({"type": "user", "uuid": "cs1", "isCompactSummary": True,
                    "message": {"role": "user", "content": summary}}).encode() + b"\n",
    ]
    replay = [before[1]]  # compaction can replay a record under its original uuid
    after = [line("user", "Now add a watch mode that wakes on spool changes, please.", "u2")]
    transcript.write_bytes(b"".join(before))
    fire(drainer, "PreCompact", transcript)
    drainer.loop()
    with transcript.open("ab") as handle:
        handle.write(b"".join(compaction + replay + after))
    fire(drainer, "PreCompact", transcript)
    drainer.loop()
    first, second = texts(drainer)
    assert "exactly one drainer" in first
    assert second.startswith(
        "[compact boundary]\n\n[compact summary] This session is being continued."
    )
    assert "exactly one drainer" not in second
    assert second.endswith("[user] Now add a watch mode that wakes on spool changes, please.")
    assert rows(drainer)[1]["records_replayed"] == 1


def test_shrunk_transcript_resyncs_without_duplicates(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    a = line("user", "first question about resyncing cursors " * 5, "u1")
    b = line("assistant", "first answer about resyncing cursors " * 5, "a1")
    transcript.write_bytes(a + b)
    fire(drainer, "PreCompact", transcript)
    drainer.loop()
    c = line("user", "a new question after the file was rewritten", "u2")
    transcript.write_bytes(b + c)  # shorter than before, same inode
    assert transcript.stat().st_size < len(a + b)
    fire(drainer, "PreCompact", transcript)
    drainer.loop()
    assert texts(drainer)[1] == "[user] a new question after the file was rewritten"
    log = drainer.config.log_path.read_text()
    assert "shrank" in log


def test_a_transcript_rewritten_in_place_past_the_cursor_loses_no_record(
        drainer: Drainer, projects: Path) -> None:
    """Emptied and written again on the same inode, and longer than the cursor: the
    byte before the cursor is no line's end, so the file is read again from its start
    (records already captured skipped), not from the middle of a line."""
    transcript = projects / f"{SESSION}.jsonl"
    a = line("user", "question before the rewrite " * 5, "u1")
    transcript.write_bytes(a)
    fire(drainer, "PreCompact", transcript)
    drainer.loop()
    fresh = [line("user", f"rewritten question number {n} " * 4, f"r{n}") for n in range(4)]
    assert (b"".join(fresh) + a)[len(a) - 1:len(a)] != b"\n"  # the cursor lands mid-line
    inode = transcript.stat().st_ino
    with transcript.open("r+b") as handle:  # in place: truncated, then written again
        handle.truncate(0)
        handle.write(b"".join(fresh) + a)
    assert transcript.stat().st_ino == inode and transcript.stat().st_size > len(a)
    fire(drainer, "PreCompact", transcript)
    drainer.loop()
    second = texts(drainer)[1]
    assert all(second.count(f"rewritten question number {n}") == 4 for n in range(4))
    assert "question before the rewrite" not in second  # captured once, not twice
    assert rows(drainer)[1]["records_replayed"] == 1
    assert rows(drainer)[1]["records_dropped"] == 0  # no line cut in half
    assert "was rewritten" in drainer.config.log_path.read_text()


def test_replaced_transcript_resyncs_without_duplicates(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    a = line("user", "question before the resume " * 20, "u1")
    transcript.write_bytes(a)
    fire(drainer, "Stop", transcript)
    drainer.loop()
    replacement = projects / "new.jsonl"
    replacement.write_bytes(a + a + line("user", "asked after the resume " * 20, "u2"))
    os.replace(replacement, transcript)  # new inode, longer than the cursor
    fire(drainer, "Stop", transcript)
    drainer.loop()
    assert len(texts(drainer)) == 2
    assert texts(drainer)[1].count("asked after the resume") == 20
    assert "question before" not in texts(drainer)[1]
    assert "replaced" in drainer.config.log_path.read_text()


def test_resumed_session_replays_are_not_captured_twice(drainer: Drainer, projects: Path) -> None:
    old = projects / "old.jsonl"
    old.write_bytes(line("user", "original question in the first session " * 15, "u1"))
    fire(drainer, "Stop", old, session="aaaa")
    drainer.loop()
    new = projects / "new-session.jsonl"
    new.write_bytes(old.read_bytes() + line("user", "follow-up in the resumed session " * 15, "u9"))
    fire(drainer, "Stop", new, session="bbbb")
    drainer.loop()
    second = texts(drainer)[1]
    assert "original question" not in second and "follow-up" in second


def test_missing_transcript_is_retried_not_fatal(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    fire(drainer, "Stop", transcript)
    result = drainer.loop()
    assert result.frames == 1 and result.slices == 0
    assert drainer.conn.execute("SELECT missing_since FROM cursors").fetchone()[0] is not None
    assert "does not exist yet" in drainer.config.log_path.read_text()
    transcript.write_bytes(line("user", "the transcript appeared later on " * 20, "u1"))
    drainer.loop()  # no new frame: the retry finds it
    assert len(texts(drainer)) == 1
    assert rows(drainer)[0]["event"] == "retry"
    assert drainer.conn.execute("SELECT missing_since FROM cursors").fetchone()[0] is None


def test_subagent_transcripts_get_their_own_cursors(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    folder = projects / SESSION / "subagents"
    folder.mkdir(parents=True)
    agent = folder / "agent-aac57f5.jsonl"
    agent.write_bytes(SPOTTER_AGENT.read_bytes())
    fire(drainer, "SubagentStop", transcript, agent_id="aac57f5", agent_transcript_path=str(agent))
    drainer.loop()
    by_agent = {r["agent_id"]: r for r in rows(drainer)}
    assert set(by_agent) == {None, "aac57f5"}
    assert by_agent["aac57f5"]["byte_end"] == SPOTTER_AGENT.stat().st_size
    agent_text = slice_text(drainer.conn, by_agent["aac57f5"]["id"])  # type: ignore[arg-type]
    assert agent_text.startswith("[user] ")
    assert drainer.conn.execute("SELECT count(*) FROM cursors").fetchone()[0] == 2
    # more subagent output later is captured from the subagent's own cursor
    with agent.open("ab") as handle:
        handle.write(line("assistant", "subagent follow-up finding " * 20, "sub-new"))
    fire(drainer, "Stop", transcript)
    drainer.loop()
    assert texts(drainer)[-1].startswith("[assistant] subagent follow-up finding")


def test_bad_payloads_and_lines_are_skipped_and_counted(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    weird = [
        b'{"type": "brand-new-record-type", "uuid": "n1", "data": 1}\n',
        b"this is not json at all\n",
        b'{"type": "user", "uuid": "u1", "message": {"content": "caf\xe9 in latin-1 and a question '
        + b"q" * 400 + b'"}}\n',
        b"[1, 2, 3]\n",
    ]
    transcript.write_bytes(b"".join(weird))
    spool = str(drainer.config.spool_dir)
    append(spool, b"not json")
    append(spool, b'{"session_id": "../../etc", "transcript_path": "/etc/passwd"}')
    append(spool, payload("Stop", SESSION, Path("/etc/passwd.jsonl")))
    append(spool, payload("Stop", SESSION, Path("relative/path.jsonl")))
    fire(drainer, "Stop", transcript)
    result = drainer.loop()
    assert result.frames == 5 and result.slices == 1
    row = rows(drainer)[0]
    assert row["records_unknown"] == 2 and row["records_dropped"] == 1
    assert "caf\ufffd in latin-1" in texts(drainer)[0]
    log = drainer.config.log_path.read_text()
    assert "not JSON" in log and "no usable session_id" in log
    assert "outside the transcript roots" in log
    assert "absolute .jsonl" in log


@pytest.mark.settings(max_line_bytes=4096)
def test_line_past_max_line_bytes_is_skipped_unread(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    huge = line("user", "H" * 50_000, "huge")
    after = line("user", "the line after the huge one survives " * 15, "u2")
    transcript.write_bytes(huge + after)
    fire(drainer, "Stop", transcript)
    drainer.loop()
    [text] = texts(drainer)
    assert "H" * 100 not in text and "survives" in text
    size = len(huge)
    assert text.startswith(f"[skipped a transcript line of {size} bytes at offset 0: "
                           f"longer than max_line_bytes (4096)]")
    assert rows(drainer)[0]["byte_end"] == len(huge + after)


def test_store_and_home_are_private(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    fire(drainer, "Stop", transcript)
    drainer.loop()
    home = drainer.config.home
    assert home.stat().st_mode & 0o777 == 0o700
    for path in home.rglob("*"):
        expected = 0o700 if path.is_dir() else 0o600
        assert path.stat().st_mode & 0o777 == expected, path


def test_secrets_are_redacted_before_storage(drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    transcript.write_bytes(line("user", f"my token is {key} please use it " * 20, "u1"))
    fire(drainer, "PreCompact", transcript)
    drainer.loop()
    [text] = texts(drainer)
    assert key not in text and "[REDACTED:github]" in text
    raw = drainer.conn.execute("SELECT body FROM slices").fetchone()[0]
    assert key.encode() not in raw


def test_a_secret_wrapped_in_terminal_colour_codes_is_redacted(
        drainer: Drainer, projects: Path) -> None:
    # Pasted from a terminal: bold on and off around the value. The codes go, as at
    # every other door, and the assignment is read as written.
    password = "Zqumpm08hsE"  # noqa: S105 - made up, the secret to redact
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(
        line("user", f"staging still fails, my env has export DB_PASSWORD=\x1b[1m{password}"
             "\x1b[0m and nothing else", "u1")
        + json.dumps({"type": "assistant", "uuid": "a1", "message": {
            "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01",
                "name": "Bash", "input": {"command": f"PGPASSWORD=\x1b[31m{password}\x1b[0m"
                                          " psql -h db"}}]}}).encode() + b"\n")
    fire(drainer, "PreCompact", transcript)
    drainer.loop()
    [text] = texts(drainer)
    assert password not in text and "\x1b" not in text
    assert text.count("[REDACTED:") == 2
    raw = drainer.conn.execute("SELECT body FROM slices").fetchone()[0]
    assert password.encode() not in raw


def test_secrets_in_tool_input_output_prompt_and_thinking_never_stored(
        drainer: Drainer, projects: Path) -> None:
    """Every place a secret sits in a transcript; tool lines are clipped only after redaction."""
    aws = "AKIA" + "QWERTYUIOPASDFGH"
    github = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8"
    anthropic = "sk-ant-api03-" + "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh7jKl0nOp3rSt6vWx9zAb2dEf5hIj8l"
    stripe = "sk_live_" + "51HxQmLkPfB8zVtY3nRcWdJe"
    pem = ("-----BEGIN RSA PRIVATE KEY-----\n"
           + "MIIEowIBAAKCAQEAx5kq9Vb3Lm8Np2Qr7St4Uv1Wx6Yz0Ab3Cd8Ef5Gh\n" * 6
           + "-----END RSA PRIVATE KEY-----")
    secrets = [aws, github, anthropic, stripe, "MIIEowIBAAKCAQEAx5kq9Vb3"]
    records = [
        {"type": "user", "uuid": "p1", "message": {"role": "user", "content":
            f"Deploy with AWS key {aws} and here is my key file:\n{pem}\nthanks"}},
        {"type": "assistant", "uuid": "t1", "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": f"The user pasted {github}; I must not echo it.",
             "signature": "c2lnbmF0dXJl" * 10}]}},
        {"type": "assistant", "uuid": "a1", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_01", "name": "Bash",
             # the secret straddles the 200-character clip of the tool line
             "input": {"command": "x" * 180
                       + f" echo {github} && curl -H 'x-api-key: {anthropic}'"}}]}},
        {"type": "user", "uuid": "r1", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "is_error": True,
             "content": f"Error: invalid key STRIPE_KEY={stripe} for account"}]},
         "toolUseResult": {"stdout": f"STRIPE_KEY={stripe}"}},
        {"type": "user", "uuid": "r2", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_02",
             "content": f"AWS_ACCESS_KEY_ID={aws}\nGITHUB_TOKEN={github}"}]}},
    ]
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    fire(drainer, "PreCompact", transcript, custom_instructions=f"remember the token {github}")
    drainer.loop()
    [text] = texts(drainer)
    assert "[tool Bash]" in text and "[tool error] Error: invalid key" in text
    assert "[REDACTED:" in text
    for secret in secrets:
        for start in range(len(secret) - 8):
            assert secret[start:start + 8] not in text, f"part of {secret[:12]}... survived"


def test_fifo_or_folder_in_place_of_a_transcript_does_not_hang(
    drainer: Drainer, projects: Path
) -> None:
    fifo = projects / "fifo.jsonl"
    os.mkfifo(fifo)
    folder = projects / "folder.jsonl"
    folder.mkdir()
    good = projects / f"{SESSION}.jsonl"
    good.write_bytes(line("user", "the good transcript after two bad ones " * 15, "u1"))
    fire(drainer, "Stop", fifo, session="fifo")
    fire(drainer, "Stop", folder, session="folder")
    fire(drainer, "Stop", good)
    result = drainer.loop()
    assert result.frames == 3 and result.slices == 1
    log = drainer.config.log_path.read_text()
    assert "fifo.jsonl is not a regular file" in log
    assert "folder.jsonl" in log


@pytest.mark.settings(max_slice_chars=1000)
def test_a_secret_across_a_capture_split_is_still_redacted(
        drainer: Drainer, projects: Path) -> None:
    """One record longer than a capture is split; redaction runs before the split."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = "x" * 985 + " " + token + " " + "y" * 1500  # the token spans the cut at 1000
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(line("user", text, "u1"))
    fire(drainer, "Stop", transcript)
    drainer.loop()
    parts = texts(drainer)
    assert len(parts) >= 2
    joined = "".join(parts)
    assert "[REDACTED:github]" in joined
    for start in range(len(token) - 8):
        assert all(token[start:start + 8] not in p for p in parts)
    assert sum(r["redactions"] for r in rows(drainer)) == 1  # type: ignore[misc]


def test_a_symlink_loop_in_a_payload_does_not_block_later_frames(drainer: Drainer,
                                                                 projects: Path) -> None:
    loop = projects / "loop.jsonl"
    loop.symlink_to(loop)
    good = projects / f"{SESSION}.jsonl"
    good.write_bytes(line("user", "a good transcript after a poisoned frame " * 12, "u1"))
    folder = projects / "looped" / "subagents"
    folder.mkdir(parents=True)
    (folder / "agent-x.jsonl").symlink_to(folder / "agent-x.jsonl")
    looped = projects / "looped.jsonl"
    looped.write_bytes(line("user", "the main transcript beside a looping subagent " * 12, "m1"))
    fire(drainer, "Stop", loop, session="poison")
    fire(drainer, "Stop", looped, session="looped")
    fire(drainer, "Stop", good)
    result = drainer.loop()
    assert result.frames == 3 and result.slices == 2
    assert not drainer.spool.has_pending()
    assert "cannot be resolved" in drainer.config.log_path.read_text()


def test_long_precompact_instructions_are_kept_whole(drainer: Drainer, projects: Path) -> None:
    instructions = "Keep every decision. " * 5000 + "END-OF-INSTRUCTIONS"
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(line("user", "a prompt before compaction", "u1"))
    fire(drainer, "PreCompact", transcript, custom_instructions=instructions)
    drainer.loop()
    joined = "".join(texts(drainer))
    assert joined.count("Keep every decision.") == 5000 and "END-OF-INSTRUCTIONS" in joined


def test_precompact_instructions_survive_a_missing_transcript(drainer: Drainer,
                                                              projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    fire(drainer, "PreCompact", transcript, custom_instructions="Remember the lock decision")
    drainer.loop()
    assert texts(drainer) == ["[precompact instructions] Remember the lock decision"]
    transcript.write_bytes(line("user", "the transcript arrives afterwards " * 15, "u1"))
    drainer.loop()  # the retry captures the transcript; the instructions are not repeated
    assert len(texts(drainer)) == 2 and "precompact" not in texts(drainer)[1]


def test_lines_written_after_a_forcing_hook_are_not_held_back(drainer: Drainer,
                                                               projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(line("user", "the last real question of the session " * 12, "u1"))
    fire(drainer, "SessionEnd", transcript)
    drainer.loop()
    with transcript.open("ab") as handle:
        handle.write(line("assistant", "a short late answer", "a1"))  # below the floor
    result = drainer.drain_grown()
    assert result.slices == 1
    assert texts(drainer)[-1] == "[assistant] a short late answer"


def test_records_of_unforeseen_shapes_are_skipped_not_fatal(drainer: Drainer,
                                                            projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(
        b'{"type": ["user"], "uuid": "x1"}\n'
        b'{"type": {"nested": 1}, "uuid": "x2"}\n'
        b'{"type": "user", "uuid": ["not", "a", "string"], "message": {"content": "odd uuid '
        + b"u" * 30 + b'"}}\n'
        + line("user", "a healthy prompt after odd records " * 15, "u1"))
    fire(drainer, "Stop", transcript)
    result = drainer.loop()
    assert result.slices == 1 and not drainer.spool.has_pending()
    assert "a healthy prompt" in texts(drainer)[0]


def test_an_escaped_lone_surrogate_does_not_lose_the_record(drainer: Drainer,
                                                            projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(b'{"type": "user", "uuid": "u1", "message": {"content": '
                           b'"DECISION-KEEP-ME: an emoji cut in half \\ud83d ' + b"z" * 400
                           + b'"}}\n')
    fire(drainer, "SessionEnd", transcript)
    drainer.loop()
    assert "DECISION-KEEP-ME" in texts(drainer)[0]


def test_late_lines_are_forced_only_just_after_the_forcing_hook(drainer: Drainer,
                                                                projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(line("user", "the question before compaction " * 15, "u1"))
    fire(drainer, "PreCompact", transcript)
    drainer.loop(now=1000.0)
    with transcript.open("ab") as handle:
        handle.write(line("assistant", "a late short answer", "a1"))
    assert drainer.drain_grown(now=1005.0).slices == 1  # the end of the compacted turn
    with transcript.open("ab") as handle:
        handle.write(line("user", "a new short turn", "u2"))
    assert drainer.drain_grown(now=1100.0).slices == 0  # an ordinary turn: held back
    assert len(texts(drainer)) == 2


def test_a_crash_between_captures_and_cursor_stores_neither(
        drainer: Drainer, projects: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Insert and cursor move are one transaction: a failure in between undoes both."""
    import memspool.drainer.ship as ship_module

    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    real = ship_module.upsert_cursor
    calls: list[int] = []

    def crash(*args: object, **kwargs: object) -> None:
        calls.append(1)
        if len(calls) == 1:  # the shipment's cursor move fails; the retry marker may land
            raise RuntimeError("crash after the capture insert")
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ship_module, "upsert_cursor", crash)
    fire(drainer, "Stop", transcript)
    drainer.loop()
    # The failed shipment was rolled back with its cursor move; the transcript
    # was marked for a retry, which the same pass ran: one capture, not two.
    assert "crash after the capture insert" in drainer.config.log_path.read_text()
    assert len(texts(drainer)) == 1
    fire(drainer, "Stop", transcript)
    drainer.loop()
    assert len(texts(drainer)) == 1


def test_secrets_in_tool_lines_are_counted(drainer: Drainer, projects: Path) -> None:
    token = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8"
    record = {"type": "assistant", "uuid": "a1", "message": {"content": [
        {"type": "tool_use", "name": "Bash", "input": {"command": f"echo {token}"}},
        {"type": "text", "text": f"I used {token} " + "t" * 400}]}}
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(json.dumps(record).encode() + b"\n")
    fire(drainer, "Stop", transcript)
    drainer.loop()
    assert texts(drainer)[0].count("[REDACTED:github]") == 2
    assert rows(drainer)[0]["redactions"] == 2
