"""Summary lines and keys: stable slugs of the first line."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memspool.distill.keys import (
    KEY_CHARS,
    SUMMARY_CHARS,
    normalized_text,
    note_key,
    summary_line,
    text_hash,
    title,
    whole_summary,
)

SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def test_summary_line_is_the_first_non_empty_line_without_markup() -> None:
    assert summary_line("\n\n## **Decision:** use `zstd`\nbody") == "Decision: use `zstd`"
    assert summary_line("1. first item text\n2. second") == "first item text"
    assert summary_line("- bullet   with   spaces") == "bullet with spaces"
    assert summary_line("> quoted line\nmore") == "quoted line"


def test_a_summary_line_is_whole_or_cut_at_a_clause_end() -> None:
    assert SUMMARY_CHARS == 300
    short = "Pin `pnpm@9` in `packageManager`, or CI and laptops resolve different lockfiles."
    assert summary_line(f"## {short}\nmore") == short
    line = "the pool drains, " * 30
    cut = summary_line(line)
    assert len(cut) <= SUMMARY_CHARS and cut.endswith("drains ...")


def test_keys_are_slugs_of_the_summary() -> None:
    assert note_key("Hello, World!") == "hello-world"
    assert note_key("bcrypt cost=12 is the right balance") == "bcrypt-cost-12-is-the-right-balance"
    assert note_key("Café in São Paulo") == "cafe-in-sao-paulo"
    assert note_key("  --Leading and trailing--  ") == "leading-and-trailing"


def test_keys_are_at_most_64_characters_and_long_summaries_stay_apart() -> None:
    assert KEY_CHARS == 64
    a = "The flaky upload test fails because two workers share one temp directory in CI"
    b = "The flaky upload test fails because two workers share one temp directory locally"
    assert len(note_key(a)) <= 64 and SLUG.match(note_key(a))
    assert note_key(a) != note_key(b)
    assert note_key(a) == note_key(a + "")  # stable


def test_a_summary_without_alphanumerics_gets_a_hash_key() -> None:
    key = note_key("!!! ??? ***")
    assert re.fullmatch(r"note-[0-9a-f]{12}", key)
    assert note_key("!!! ??? ***") == key
    assert note_key("日本語のメモ") != note_key("中文笔记")
    assert note_key("日本語のメモ").startswith("note-")


@given(st.text(max_size=300))
def test_every_key_is_a_valid_slug(summary: str) -> None:
    key = note_key(summary)
    assert len(key) <= KEY_CHARS
    assert SLUG.match(key)


def test_normalized_text_and_hash_ignore_case_and_spacing() -> None:
    assert normalized_text("  Same\tTEXT\n here ") == "same text here"
    assert text_hash("Same TEXT here") == text_hash("same   text\nhere")
    assert text_hash("same text here") != text_hash("same text there")


def test_title_is_the_first_characters_on_one_line() -> None:
    item = "bcrypt cost=12 is the right balance for our server performance"
    assert title(item, 50) == "bcrypt cost=12 is the right balance for our server"


@pytest.mark.parametrize(("text", "summary"), [
    # A type's label as heading says no fact: the summary is the text under it.
    ("## Root cause\nThe refund webhook inserted rows twice when Stripe retried.",
     "The refund webhook inserted rows twice when Stripe retried."),
    ("# Notes\nStaging resets every Sunday at 02:00 UTC.",
     "Staging resets every Sunday at 02:00 UTC."),
    ("### Gotchas:\n- `pnpm install` rewrites the lockfile on CI.",
     "`pnpm install` rewrites the lockfile on CI."),
    # A heading that names a subject, or says something, is the summary.
    ("# Deploy freeze\nNo deploys on Fridays after 15:00.", "Deploy freeze"),
    ("## Decision: SQLite over Postgres\nOne file, no server.",
     "Decision: SQLite over Postgres"),
    # A label alone is all there is.
    ("## Root cause", "Root cause"),
])
def test_a_heading_that_only_labels_a_type_is_not_the_summary(text: str, summary: str) -> None:
    assert summary_line(text) == summary


def test_code_a_sentence_introduces_shows_its_first_lines_and_says_it_is_cut() -> None:
    long_yaml = ("new prod values:\n```yaml\nconsumer:\n  replicaCount: 12\n  goMemLimit: 690MiB\n"
                 "  resources:\n    limits:\n      cpu: \"1\"\n      memory: 768Mi\n"
                 "  annotations:\n    owner: platform-team-on-call-rotation\n```")
    summary = whole_summary(long_yaml)
    assert summary.startswith("new prod values: `consumer: replicaCount: 12; goMemLimit: 690MiB")
    assert summary.endswith(" ...`") and "platform-team" not in summary
    # Code after a whole sentence adds nothing the sentence did not say: left out.
    said = whole_summary("The worker flushes once per batch.\n```python\n"
                         + "\n".join(f"out.write(line_{n})" for n in range(20)) + "\n```")
    assert said == "The worker flushes once per batch."


def test_a_note_without_one_claim_is_the_rest_summarised_and_keyed_anew() -> None:
    from memspool.distill.note import Note

    note = Note(type="preference", summary="The sync worker ...", key_text="sync-worker",
                restates="reminder", claim_lines=(1, 1),
                body="the sync worker runs every 3 hours now instead of every 6.\n"
                     "versions go in libs.versions.toml, never in the module build files.")
    rest = note.without_claim(1)
    assert rest.body == "the sync worker runs every 3 hours now instead of every 6."
    assert rest.summary == "The sync worker runs every 3 hours now instead of every 6."
    # Keyed by its own subject, not by the claim taken out or the old key; a person's
    # still, but what reminded may have been the claim taken out.
    assert rest.key.startswith("sync-worker") and "versions" not in rest.key
    assert rest.type == "preference" and rest.restates == "person"
    assert rest.claims() == [rest.body]
    # A claim with its code block is one claim of several lines; the context stays.
    code = "```go\nerr := store.WithTx(ctx, db, expire)\n```"
    led = Note(type="takeaway", summary="The sweeper ...", context_lines=1,
               claim_lines=(4, 1), restates="rule",
               body=f"The sweeper was rewritten:\nIt runs in one transaction:\n{code}\n"
                    "Expired rows are deleted.")
    assert led.claims() == [f"It runs in one transaction:\n{code}", "Expired rows are deleted."]
    rest = led.without_claim(1)
    assert rest.body == f"The sweeper was rewritten:\nIt runs in one transaction:\n{code}"
    assert rest.claim_lines == (4,) and rest.restates is None
    # A text that no longer has the lines its claims took (redaction joined two) is one
    # fact, never taken apart; so is a note that never said where its claims are.
    assert Note(type="takeaway", summary="s", body="one line", claim_lines=(1, 1)).claims() == []
    assert Note(type="takeaway", summary="s", body="a\nb").claims() == []
