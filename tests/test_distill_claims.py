"""A message cut into claims: sentences, list items with their introduction, code with the
sentence it illustrates; and the notes the claim model makes of them."""

from __future__ import annotations

import base64
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memspool.distill.blobs import BLOB, BLOB_CHARS, without_blobs
from memspool.distill.claim_features import asks, features, tokens
from memspool.distill.claim_model import (
    best_type,
    judge,
    judge_message,
    keeps,
    model,
    type_features,
)
from memspool.distill.claims import claims, sentences
from memspool.distill.keys import SUMMARY_CHARS, subject_key, whole_summary
from memspool.distill.transcript import notes_of, transcript_notes

#: A drainer slice holds up to this many characters, and one run can fill it.
SLICE_CHARS = 200_000
#: Runs of each alphabet a transcript holds in one piece: a digest, base64 (with "+"
#: and "/"), base64url, a number, snake and kebab words, dotted names, a path, a URL.
RUN_KINDS = ("hex", "base64", "base64url", "digits", "snake", "kebab", "dotted", "path",
             "url")


def _run(kind: str, size: int) -> str:
    """``size`` characters of ``kind``, the last a digit: a stop or a backtick at its end
    would be the text's, and stay beside the blob."""
    rng = random.Random(kind)
    pieces = {
        "hex": lambda: rng.randbytes(size).hex(),
        "base64": lambda: base64.b64encode(rng.randbytes(size)).decode(),
        "base64url": lambda: base64.urlsafe_b64encode(rng.randbytes(size)).decode(),
        "digits": lambda: "1" * size,
        "snake": lambda: "a_" * size,
        "kebab": lambda: "a-" * size,
        "dotted": lambda: "a." * size,
        "path": lambda: "a/" * size,
        "url": lambda: "https://example.com/" + "a-b/" * size,
    }
    return pieces[kind]()[:size - 1] + "0"


def test_sentences_end_at_stops_not_inside_code_names_or_abbreviations() -> None:
    text = ("Found it. The pool in `db.session.get()` drops idle connections, e.g. after a "
            "deploy. Set `pool_pre_ping=True` in config.py! does 3.11 matter? no.")
    assert sentences(text) == [
        "Found it.",
        "The pool in `db.session.get()` drops idle connections, e.g. after a deploy.",
        "Set `pool_pre_ping=True` in config.py!",
        "does 3.11 matter?",
        "no.",
    ]


def test_a_stop_inside_brackets_closed_later_ends_no_sentence() -> None:
    text = ("3 reminders went out (Riverside watering, St. Bride's open day), and a second "
            "call sent 0. The build (see the log. all of it) is green. A deploy got "
            "cancelled (not by me. I swear.")
    assert sentences(text) == [
        "3 reminders went out (Riverside watering, St. Bride's open day), and a second "
        "call sent 0.",
        "The build (see the log. all of it) is green.",
        "A deploy got cancelled (not by me.",  # never closed: it holds nothing back
        "I swear.",
    ]


def test_a_list_gives_one_claim_per_item_with_its_introduction() -> None:
    found = claims("The endpoint conventions in this repo:\n\n"
                   "1. One blueprint per resource.\n"
                   "2. Errors go through `abort()`,\n   never a bare 500.\n"
                   "3. SQLAlchemy Core, not the ORM.\n\nWant me to open a PR?")
    assert [(c.kind, c.text) for c in found] == [
        ("sentence", "The endpoint conventions in this repo:"),
        ("item", "One blueprint per resource."),
        ("item", "Errors go through `abort()`, never a bare 500."),
        ("item", "SQLAlchemy Core, not the ORM."),
        ("sentence", "Want me to open a PR?"),
    ]
    # The introduction is judged like any claim, but only ever as its items' context.
    assert [c.introduces for c in found] == [True, False, False, False, False]
    assert {c.intro for c in found[1:4]} == {"The endpoint conventions in this repo:"}
    assert found[4].previous == "SQLAlchemy Core, not the ORM."


def _cut(text: str) -> list[tuple[str, str]]:
    """Each claim of ``text`` as its kind and its words."""
    return [(c.kind, c.text) for c in claims(text)]


def test_a_question_closing_a_list_item_is_a_claim_of_its_own() -> None:
    # The item states a setting's new value and then asks: read whole, the item was a
    # question, and its value was lost.
    text = ("Both changed.\n\n"
            "- `POOL_SIZE = 4` now, in `config/db.ts`. Old pools keep 5. Should I migrate "
            "those too? Or leave them?\n"
            "- Is `Order#refundable?` still used?\n"
            "- `retries` is 3. It was 5 before?")
    assert _cut(text) == [
        ("sentence", "Both changed."),
        ("item", "`POOL_SIZE = 4` now, in `config/db.ts`. Old pools keep 5."),
        ("sentence", "Should I migrate those too?"),
        ("sentence", "Or leave them?"),
        ("item", "Is `Order#refundable?` still used?"),
        ("item", "`retries` is 3."),
        ("sentence", "It was 5 before?"),
    ]
    found = claims(text)
    assert not asks(found[1]) and asks(found[2]) and asks(found[4])
    # Code after the question shows the item, not the question.
    assert _cut("- The pool is now `POOL_SIZE = 4`, like this. Apply it to the worker "
                "too?\n```ts\nexport const POOL_SIZE = 4;\n```") == [
        ("item", "The pool is now `POOL_SIZE = 4`, like this.\n```ts\nexport const "
                 "POOL_SIZE = 4;\n```"),
        ("sentence", "Apply it to the worker too?"),
    ]
    # The statement keeps its own spacing, inside code too.
    assert _cut("- Run `make  lint` first. Should I push?")[0] == (
        "item", "Run `make  lint` first.")


def test_a_line_back_at_the_margin_after_a_list_is_a_paragraph_of_its_own() -> None:
    # A person's next thought after their list, and the agent's question after its
    # own: neither is part of the last item. An item's wrapped line is indented.
    assert _cut("two fires today\n"
                "1. deploys drop requests\n"
                "2. the OOM kills are back,\n"
                "   2 this week\n"
                "and fyi no println anywhere, logging goes through tools.logging\n") == [
        ("sentence", "two fires today"),
        ("item", "deploys drop requests"),
        ("item", "the OOM kills are back, 2 this week"),
        ("sentence", "and fyi no println anywhere, logging goes through tools.logging"),
    ]
    assert _cut("- `--jobs` defaults to 4\nWant me to tag `v0.6.0`?") == [
        ("item", "`--jobs` defaults to 4"), ("sentence", "Want me to tag `v0.6.0`?")]
    # A line indented with no-break spaces (pasted from a web page) is indented.
    assert _cut("- `--jobs` defaults to 4\n\u00a0\u00a0on every runner") == [
        ("item", "`--jobs` defaults to 4 on every runner")]
    # With more items after it, the line goes on with the item above it.
    steps = claims("Steps:\n- set `--max-surge 1` in `deploy/api.yaml`\nbecause the pool "
                   "is full\n- added `--atomic`")
    assert [(c.kind, c.text, c.intro) for c in steps] == [
        ("sentence", "Steps:", ""),
        ("item", "set `--max-surge 1` in `deploy/api.yaml` because the pool is full", "Steps:"),
        ("item", "added `--atomic`", "Steps:"),
    ]


def test_code_belongs_to_the_sentence_before_and_quotes_are_no_claims() -> None:
    found = claims("Set it in `src/server.ts`:\n```ts\nserver.keepAliveTimeout = 65_000;\n```\n"
                   "> a pasted draft that says nothing of ours\n\n## Why\nThe ALB keeps idle "
                   "connections for 60 s.")
    assert found[0].text.startswith("Set it in `src/server.ts`:\n```ts")
    assert "keepAliveTimeout" in found[0].text
    assert all("draft" not in c.text for c in found)
    assert found[-1].heading == "Why"


def test_each_claim_knows_the_block_of_the_message_it_is_in() -> None:
    found = claims("The pool is 20 per machine. It was 10.\n\nSet it in `db.py`:\n```py\n"
                   "pool = 20\n```\n\nThe rules:\n- one blueprint per resource\n- no ORM\n\n"
                   "Done.")
    blocks = {c.text.split("\n")[0]: c.block for c in found}
    assert blocks["The pool is 20 per machine."] == blocks["It was 10."]
    # The code block after a sentence is that sentence's: it stays in its block.
    assert blocks["Set it in `db.py`:"] > blocks["It was 10."]
    assert blocks["one blueprint per resource"] == blocks["no ORM"] > blocks["The rules:"]
    assert blocks["Done."] > blocks["no ORM"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab .:!?`-*#>|\n1)"), max_size=200))
def test_the_splitter_never_fails_and_never_invents_text(text: str) -> None:
    words = set(re.findall(r"\w+", text))
    for claim in claims(text):
        assert claim.text.strip()
        assert set(re.findall(r"\w+", claim.text)) <= words


@pytest.mark.parametrize("kind", RUN_KINDS)
def test_a_run_too_long_for_a_name_is_read_as_one_blob(kind: str) -> None:
    blob = _run(kind, 20_000)
    assert tokens(f"dump: {blob} and more") == ["dump", BLOB, "and", "more"]
    (claim,) = claims(f"The dump: {blob}")
    assert claim.text == f"The dump: {BLOB}"
    assert f"w:{BLOB}" in features(claim, "assistant")


def test_paths_and_urls_up_to_the_blob_bound_are_read_as_written() -> None:
    path = "/srv/" + "a/" * ((BLOB_CHARS - 5) // 2)
    url = "https://example.com/" + "x" * (BLOB_CHARS - 20)
    assert len(url) == BLOB_CHARS and len(path) <= BLOB_CHARS
    for name in (path, url):
        text = f"see {name} first"
        assert without_blobs(text) == text
        assert tokens(text) == ["see", "<path>", "first"]
    assert tokens(f"see {url}x first") == ["see", BLOB, "first"]


def test_a_blob_keeps_the_marks_around_it() -> None:
    blob = _run("hex", 1_000)
    # A sentence still ends after it, and a code span that holds it still closes, so
    # the backticks after it pair as they did.
    assert [c.text for c in claims(f"The dump: {blob}. Then more.")] == \
        [f"The dump: {BLOB}.", "Then more."]
    assert tokens(f"run `curl -s https://example.com/{blob}` then `ls` once") == \
        ["run", "<code>", "then", "<code>", "once"]
    assert without_blobs("`" * 1_000) == f"```{BLOB}```"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab1./_-`(.)"), max_size=2 * BLOB_CHARS),
                max_size=4))
def test_reading_blobs_bounds_every_run_and_changes_nothing_else(runs: list[str]) -> None:
    text = " ".join(runs)
    read = without_blobs(text)
    assert without_blobs(read) == read
    assert all(len(run) <= BLOB_CHARS for run in read.split())
    if all(len(run) <= BLOB_CHARS for run in runs):
        assert read == text


@pytest.mark.timeout(60)  # a guard: such a slice once took half an hour or more
@pytest.mark.parametrize("kind", RUN_KINDS)
def test_a_slice_filled_by_one_run_still_gives_its_facts_and_no_note_holds_the_run(
        kind: str) -> None:
    blob = _run(kind, SLICE_CHARS)
    text = ("[user] the first request after a deploy fails\n\n"
            "[assistant] One gotcha: PgBouncer drops idle server connections after a "
            "deploy, so set `pool_pre_ping=True` on the engine or the first request gets "
            f"a dead connection. The failing request's trace: {blob}")
    for notes in (transcript_notes(text, conditional=True), notes_of(text)[0]):
        assert any("pool_pre_ping" in note.summary for note in notes)
        for note in notes:
            assert all(len(run) <= BLOB_CHARS for run in f"{note.summary} {note.body}".split())


def test_a_summary_is_whole_or_cut_at_a_sentence_end() -> None:
    short = "Run gunicorn with `--workers 4`."
    assert whole_summary(short) == short
    long = ("The checkout timeouts come from stale pooled connections after a deploy. " * 4
            + "Set `pool_pre_ping=True` on the engine so each checkout tests its connection.")
    cut = whole_summary(long)
    assert len(cut) <= SUMMARY_CHARS and cut.endswith("deploy. ...")
    assert whole_summary("x" * 400).endswith(" ...") or len(whole_summary("x" * 400)) <= 300


def test_a_subject_key_leaves_values_out() -> None:
    old = subject_key("Run gunicorn with `--workers 2 --threads 4` in production.")
    new = subject_key("Run gunicorn with `--workers 4 --threads 4` in production.")
    assert old == new == "gunicorn-workers-threads-production"
    assert subject_key("Root cause: the staging API listens on port 8080.") == \
        subject_key("Root cause: the staging API listens on port 9090.")


def test_chatter_around_a_fact_stays_out_of_the_note() -> None:
    text = ("[user] the first request after a deploy fails\n\n"
            "[assistant] Found it. All 48 tests pass now. One gotcha: PgBouncer drops idle "
            "server connections after a deploy, so set `pool_pre_ping=True` on the engine or "
            "the first request gets a dead connection. I'll put this in the README.")
    notes = transcript_notes(text)
    assert notes, "the gotcha is lost"
    for note in notes:
        for chatter in ("Found it", "All 48 tests", "I'll put this"):
            assert chatter not in note.body and chatter not in note.summary
    assert any("pool_pre_ping" in note.summary for note in notes)


def test_a_plan_and_a_question_leave_no_note() -> None:
    text = ("[assistant] Here's my plan: first I'll reproduce it locally with the sample "
            "data, then I'll check the query plan, and then I'll decide on an index.\n\n"
            "[assistant] Should I use `date-fns` here, or stick with `Intl.DateTimeFormat`?")
    assert transcript_notes(text) == []


def test_a_restated_rule_reads_as_the_rule_not_as_a_reply() -> None:
    notes = transcript_notes(
        "[assistant] Per your rule, it uses named exports only: `export function "
        "ListingCard` plus `export type ListingCardProps`, re-exported from the "
        "`packages/ui` barrel.")
    assert [n.summary[:32] for n in notes] == ["It uses named exports only: `exp"]
    assert not any("your rule" in n.body.lower() for n in notes)
    assert [n.restates for n in notes] == ["rule"]


def test_a_note_says_when_it_points_back_at_something_said_before() -> None:
    applied = transcript_notes(
        "[assistant] Since you don't want migrations run by hand against production, the "
        "new index ships in `migrations/0042_orders_idx.sql` and `make release-migrate` "
        "applies it during the release.")
    reminded = transcript_notes(
        "[user] remember the importer used to choke on CRLF line endings because "
        "`csv.reader` was opened without newline=''. check the new parser handles it")
    plain = transcript_notes(
        "[assistant] The importer opens files with `newline=''` now, because `csv.reader` "
        "choked on CRLF line endings without it; that is the rule for every CSV reader here.")
    assert [n.restates for n in applied] == ["rule"]
    assert [n.restates for n in reminded] == ["reminder"]
    assert [n.restates for n in plain] == [None]


def test_a_persons_reminder_that_is_a_reminder_and_its_framing_no_part_of_the_rule() -> None:
    (note,) = transcript_notes(
        "[user] ok ship it. and reminder that scripts/seed.py stays plain argparse, keep the "
        "click stuff out of it if you touch it")
    assert note.restates == "reminder"
    assert note.summary.startswith("scripts/seed.py stays plain argparse")
    assert "reminder" not in note.body.lower()
    # "reminder" as what the prompt is about frames nothing.
    (hyphened,) = transcript_notes(
        "[user] reminder-emails always go out from `noreply@` through the `notify` queue, "
        "never straight from the request")
    assert hyphened.restates == "person" and hyphened.body.startswith("reminder-emails")
    (about,) = transcript_notes(
        "[user] from now on reminder emails always go out from `noreply@` through the "
        "`notify` queue, never straight from the request")
    assert about.restates == "person" and about.body.startswith("from now on reminder emails")


def test_the_fix_just_under_the_bar_stays_with_its_cause_and_chatter_does_not() -> None:
    notes = transcript_notes(
        "[assistant] Found it. The checkout timeouts come from stale pooled connections: "
        "PgBouncer drops idle server connections after a deploy, and SQLAlchemy hands the "
        "dead ones out. Set `pool_pre_ping=True` on the engine so each checkout tests its "
        "connection first.\n\nI changed `webshop/db.py` and all 48 tests pass now.")
    (note,) = notes
    assert "pool_pre_ping=True" in note.summary  # the fix, not only the symptom
    assert "Found it" not in note.body and "tests pass" not in note.body



@pytest.mark.parametrize("between", [" ", "\n\n"])
def test_a_cause_and_its_fix_that_share_no_word_are_one_note(between: str) -> None:
    # No term in common and no word pointing back: the join model reads the second
    # sentence as going on with the first, in one paragraph or the next.
    notes = transcript_notes(
        "[assistant] Found it. Every request to `/export` builds the whole CSV in memory "
        "before the first byte goes out, which is why big accounts hit the 512 MB limit."
        f"{between}Streaming the rows through `StreamingResponse` with a generator keeps "
        "each process under 200 MB. All tests pass.")
    (note,) = notes
    assert "`/export`" in note.body and "`StreamingResponse`" in note.body
    assert "Found it" not in note.body and "tests pass" not in note.body


_IMPORT_CAUSE = ("The report job writes each row with its own `INSERT`, so a 40,000-row "
                 "import makes 40,000 round trips to the database.")
_IMPORT_WHY = "That is why it takes nine minutes on staging and times out in prod."
_IMPORT_FIX = ("The fix is to collect the rows and send them with `executemany` in batches "
               "of 1,000, which brings the import under 20 seconds.")
_WORKER_CAUSE = ("The worker dies at startup because `celery` reads `CELERY_BROKER_URL` "
                 "before `.env` is loaded.")
_WORKER_FIX = ("The way out is to load the settings in `celery_app.py` with `load_dotenv()` "
               "before the app is created.")
_RATES_CAUSE = ("The nightly import dies because `fetch_rates()` opens a new HTTPS session "
                "per currency, and after 200 of them the provider's gateway answers 429.")
_RATES_GOTCHA = ("`responses` mocks in this repo never return 429 unless you pass "
                 "`status=429` explicitly, so every retry test has to set it or it passes "
                 "without exercising the backoff.")


@pytest.mark.parametrize(("said", "bodies"), [
    # The middle sentence is under the keep bar (0.33 against 0.7): it no longer ends
    # the fact, and it points back ("That is why"), so it is part of it.
    (f"Found it. {_IMPORT_CAUSE} {_IMPORT_WHY} {_IMPORT_FIX} Running the tests now.",
     [f"{_IMPORT_CAUSE}\n{_IMPORT_WHY}\n{_IMPORT_FIX}"]),
    # A sentence between them that does not point back may be chatter: the fact goes
    # on past it, without it.
    (f"{_WORKER_CAUSE} Worse than before. {_WORKER_FIX} All green.",
     [f"{_WORKER_CAUSE}\n{_WORKER_FIX}"]),
    # A label that names a type on a line of its own ("Gotcha:", 0.29) opens a fact of
    # its own, as before.
    (f"{_RATES_CAUSE}\nGotcha:\n{_RATES_GOTCHA}", [_RATES_CAUSE, _RATES_GOTCHA]),
], ids=["points-back", "chatter-between", "type-label"])
def test_sentences_the_model_doubts_between_a_cause_and_its_fix_do_not_part_them(
        said: str, bodies: list[str]) -> None:
    notes = transcript_notes(f"[assistant] {said}")
    assert [n.body for n in notes] == bodies


@pytest.mark.parametrize(("cause", "lead_in", "fix"), [
    ("The nightly import dies because `fetch_rates()` opens a new HTTPS session per "
     "currency, and after 200 of them the provider's gateway starts answering 429 and the "
     "retry loop gives up.", "\n\nFix:\n",
     "one `requests.Session` for the whole run, with `HTTPAdapter(max_retries=Retry("
     "backoff_factor=2))` mounted on it, so the import reuses the connection and backs off "
     "on 429."),
    ("The thumbnails come out rotated because Pillow ignores the EXIF orientation tag when "
     "it resizes, so portrait photos from phones are stored sideways.",
     "\n\nThe way around it: ",
     "call `ImageOps.exif_transpose(img)` before `thumbnail()`, which applies the tag and "
     "drops it."),
])
def test_a_cause_and_the_fix_a_lead_in_introduces_are_one_note(cause: str, lead_in: str,
                                                              fix: str) -> None:
    # "Fix:" says nothing alone and is not kept: the fact goes on across it, and the
    # fix is read with it, not as a sentence that starts in lower case.
    notes = transcript_notes(f"[assistant] Found it. {cause}{lead_in}{fix} Running it again.")
    (note,) = notes
    label = lead_in.strip()
    assert note.body == f"{cause}\n{label} {fix}"
    assert "Found it" not in note.body and "again" not in note.body


@pytest.mark.parametrize(("gap", "kept"), [
    (_IMPORT_WHY, [_IMPORT_WHY]),  # points back: part of the fact
    ("Worse than before.", []),  # may be chatter: the fact goes on past it, without it
], ids=["points-back", "chatter"])
@pytest.mark.parametrize("lead_in", ["The fix:", "Fix on our side:"])
def test_a_fix_its_lead_in_opens_a_paragraph_with_joins_the_cause_across_a_doubted_sentence(
        gap: str, kept: list[str], lead_in: str) -> None:
    # The cause's paragraph ends on a sentence the model doubts; the next opens with a
    # lead-in to the fix: the lead-in reads on from the cause, as it does right after it.
    fix = ("collect the rows and send them with `executemany` in batches of 1,000, which "
           "brings the import under 20 seconds.")
    (note,) = transcript_notes(f"[assistant] Found it. {_IMPORT_CAUSE} {gap}\n\n{lead_in} "
                               f"{fix} Running the tests now.")
    assert note.body == "\n".join([_IMPORT_CAUSE, *kept, f"{lead_in} {fix}"])
    # A label that names a type there opens a fact of its own, as it does anywhere.
    notes = transcript_notes(f"[assistant] {_IMPORT_CAUSE} {gap}\n\nGotcha: {_RATES_GOTCHA}")
    assert [n.body.startswith(_IMPORT_CAUSE) for n in notes] == [True, False]
    assert "`responses` mocks" in notes[1].body


def test_two_lead_ins_in_a_row_are_both_read_with_the_fix() -> None:
    cause = ("The thumbnails come out rotated because Pillow ignores the EXIF orientation "
             "tag when it resizes, so portrait photos from phones are stored sideways.")
    fix = ("call `ImageOps.exif_transpose(img)` before `thumbnail()`, which applies the tag "
           "and drops it.")
    (note,) = transcript_notes(
        f"[assistant] Found it. {cause}\n\nThe fix:\nThe tag has to be applied before "
        f"resizing:\n{fix} Re-running the backfill.")
    assert note.body == f"{cause}\nThe fix: The tag has to be applied before resizing: {fix}"


def test_a_label_that_names_a_type_opens_a_fact_of_its_own() -> None:
    # "Gotcha:" says a new fact starts, unlike "Fix:": the two stay two notes.
    notes = transcript_notes(
        "[assistant] The nightly import dies because `fetch_rates()` opens a new HTTPS "
        "session per currency, and after 200 of them the gateway answers 429.\n\n"
        "Gotcha: the protobuf stubs in `gen/` are regenerated by `make gen`, never edited "
        "by hand.")
    assert [n.body.startswith("The nightly import dies") for n in notes] == [True, False]
    assert "make gen" in notes[1].body and "make gen" not in notes[0].body


def test_a_lead_in_to_a_list_leaves_each_item_a_note_of_its_own() -> None:
    notes = transcript_notes(
        "[assistant] The nightly import dies because `fetch_rates()` opens a new HTTPS "
        "session per currency, and the provider's gateway answers 429 after 200 of them."
        "\n\nThe fix has two parts:\n"
        "- one `requests.Session` for the whole run, so the connection is reused\n"
        "- `Retry(backoff_factor=2)` on its adapter, so a 429 waits instead of failing\n")
    assert notes[0].body.startswith("The nightly import dies")
    assert not any("requests.Session" in n.body and "backoff_factor" in n.body for n in notes)


def test_a_question_is_never_a_note_whoever_asks_it() -> None:
    # The words of a labelled session's prompt, which the model learnt as a rule's:
    # without the rule for questions the first sentence is kept as a preference.
    notes = transcript_notes(
        "[user] I cleared load_raw for that run in airflow but the rows are still "
        "missing? btw never edit the raw tables by hand.\n\n"
        "[assistant] So the sweeper deletes anything in `tmp/uploads` older than an "
        "hour, even files a slow client is still writing?")
    assert [n.summary for n in notes] == ["Never edit the raw tables by hand."]
    assert "?" not in notes[0].body


def test_a_question_mark_inside_code_does_not_make_a_question() -> None:
    # A change under the keep bar, kept only where it gives a memory its new value:
    # `refundable?` is a method's name, not a question.
    notes, _ = notes_of("[assistant] Done, pushed. The refund window in "
                        "`Order#refundable?` went from 14 to 30 days.")
    assert [(n.summary, n.only_if) for n in notes] == [
        ("The refund window in `Order#refundable?` went from 14 to 30 days.", "replaces")]
    asked, _ = notes_of("[assistant] Did the refund window in `Order#refundable?` go "
                        "from 14 to 30 days?")
    assert asked == []
    ending, _ = notes_of("[assistant] Done, pushed. The refund window went from 14 to 30 "
                         "days in `Order#refundable?`")
    assert [n.only_if for n in ending] == ["replaces"]


def test_a_setting_moved_in_code_says_a_change() -> None:
    # Written as code on both sides, the move is still a move: a note that may give
    # the setting's memory its new value, not one that can only restate it (the
    # same claim is offered as a restatement of a person's rule after it, should it
    # replace nothing).
    notes, _ = notes_of("[assistant] Applied. The api task's memory goes from "
                        "`memory = 512` to `memory = 1536` in `ecs.tf`.")
    assert notes[0].only_if == "replaces"
    assert [n.only_if for n in notes if n.only_if != "restates"] == ["replaces"]


def test_a_persons_and_starts_a_new_fact_unless_it_shares_its_subject() -> None:
    # "and ..." joins a new fact to the prompt: two notes, the rule one of its own,
    # its joining word left out.
    notes = transcript_notes(
        "[user] heron's limit is 8 concurrent requests per token, they'll block the "
        "token if we go above. and keep the public api sync — i dont want async leaking "
        "into `wrenfold.Client`, half our users call it from notebooks and cron scripts")
    assert [n.summary[:28] for n in notes] == ["Heron's limit is 8 concurren",
                                               "Keep the public api sync — i"]
    # Said of the same thing, it goes on with the fact before it.
    (note,) = transcript_notes(
        "[user] the nightly export runs on the reporting replica, never on the primary. "
        "and the export has to finish before 06:00, the finance sync reads it then")
    assert "finish before 06:00" in note.body


def test_a_claims_type_is_the_same_with_its_messages_scores_summed_once() -> None:
    # judge() adds each claim's features to the message's type scores, summed once by
    # judge_message(), instead of scoring the claim's and the message's features
    # together for every claim (which took time in the square of a long message's
    # length); the type is the one the whole list of features gives.
    used = model()
    said = ("Found it. The CMD is in shell form, so PID 1 is `/bin/sh -c` and the stop "
            "signal never reaches the server. I switched it to the exec form. Never edit "
            "the chart by hand on prod, argo reverts it. Tests pass now. The pool is "
            "`max_conns=16` per pod, set in `values-prod.yaml`.")
    for role in ("assistant", "user"):
        found = claims(said)
        message = judge_message(said, found, role, used)
        assert len(message.type_scores) == len(used.types)
        for claim in found:
            whole = best_type(type_features(claim, features(claim, role), message),
                              used.types, used.type_weights)
            assert judge(claim, role, message, used).type == whole


def test_a_persons_rule_is_clearly_stated_and_their_aside_is_not() -> None:
    # A person's prompt mixes an aside or a report with a request and a rule. The
    # shared claim model keeps the aside and the rule (the searchable tier); the
    # person's rule model reads which states a rule of theirs, at their own bar, and
    # a note's clarity is on the agent's scale.
    used = model()
    assert used.on_agents_scale(used.clear_user, "user") == pytest.approx(used.clear)
    assert used.on_agents_scale(0.7, "assistant") == 0.7
    assert used.on_agents_scale(1.0, "user") <= 1.0
    aside = "our intern spilled a whole latte on the staging box keyboard, so that was my morning."
    rule = ("always squash-merge feature branches, the history on main has to stay one "
            "commit per PR.")
    prompt = f"{aside} can you look at the flaky checkout test? {rule}"
    found = claims(prompt)
    said = judge_message(prompt, found, "user")
    verdicts = [judge(c, "user", said) for c in found]
    assert [v.keep for v in verdicts] == [True, False, True]  # the shared model's
    assert [v.clarity >= used.clear_user for v in verdicts] == [False, False, True]
    notes = transcript_notes(f"[user] {prompt}")
    assert [n.body for n in notes] == [aside, rule]
    # Only the rule is for the context block; the aside stays searchable.
    assert [n.clarity >= used.clear for n in notes] == [False, True]
    for note, verdict in zip(notes, (verdicts[0], verdicts[2]), strict=True):
        assert note.clarity == round(used.on_agents_scale(verdict.clarity, "user"), 4)
    # The agent's clarity is still its two probabilities multiplied.
    reply = "Squash merges keep one commit per PR on main, so `git bisect` lands on a PR."
    found = claims(reply)
    said = judge_message(reply, found, "assistant")
    judged = judge(found[0], "assistant", said)
    assert judged.stated is None and judged.clarity == judged.probability * judged.message


def test_a_persons_aside_the_rule_model_rules_out_is_not_kept() -> None:
    # A prompt of the tuning sessions: the shared claim model keeps the aside, the
    # person's rule model all but rules it out (under the floor, set so that at most
    # 1% of the person's kept rules fall under it), so it is not kept; the report and
    # the rule are.
    used = model()
    aside = "coffee machine on 3 died again so im running on fumes, bear with me lol."
    rule = ("oh and when you add a spec for it, request specs only, we're phasing out "
            "controller specs and i dont want new ones")
    prompt = (f"morning! {aside} so: the newsletter stats page is doing seq scans on "
              f"deliveries, we need an index on (newsletter_id, status). {rule}")
    found = claims(prompt)
    said = judge_message(prompt, found, "user")
    (claim,) = [c for c in found if c.text == aside]
    verdict = judge(claim, "user", said)
    assert keeps(used, "user", said.probability, verdict.probability)  # the shared rule's
    assert verdict.stated is not None and verdict.stated < used.user_floor
    assert not verdict.keep
    notes = transcript_notes(f"[user] {prompt}")
    assert notes and not any("coffee" in n.body for n in notes)
    assert any("request specs only" in n.body for n in notes)


def test_a_persons_rule_inside_a_request_is_kept_on_their_rule_models_word() -> None:
    # The message model reads a prompt that asks for work as a request (it is one),
    # and its score sinks the rule said inside it far under the shared keep bar. The
    # person's rule model reads the rule as clearly theirs, at `user_keep` or over:
    # kept, and a note of its own; the request beside it is not.
    used = model()
    request = "can you rerun the failing job?"
    rule = "no ORM in the reporting code pls, raw SQL only"
    prompt = f"{request} {rule}"
    found = claims(prompt)
    said = judge_message(prompt, found, "user")
    verdicts = [judge(c, "user", said) for c in found]
    assert not keeps(used, "user", said.probability, verdicts[1].probability)  # the shared rule's
    assert verdicts[1].stated is not None and verdicts[1].stated >= used.user_keep
    assert [v.keep for v in verdicts] == [False, True]
    assert [n.body for n in transcript_notes(f"[user] {prompt}")] == [rule]


def test_a_fix_just_under_the_bar_joins_the_fact_whose_first_sentence_it_names() -> None:
    # The fix names what the cause's first sentence named (`CMD`), not what the
    # sentence right before it did (Fly, `kill_timeout`, 502): it goes on with the
    # fact all the same, and the cause and its fix are one memory.
    said = (
        "There it is. The `CMD` in the Dockerfile is in shell form, so PID 1 in the "
        "container is `/bin/sh -c` and our binary is its child. sh doesn't pass the stop "
        "signal on, so the graceful shutdown in `main.rs` never runs (no \"shutdown signal "
        "received\" line, exit code 137). On Fly that means the machine sits out "
        "`kill_timeout`, gets SIGKILLed with requests still open, and the proxy answers "
        "those with 502. With the exec form, `CMD [\"/app/otterwick\", \"serve\"]`, the "
        "binary is PID 1 and gets the signal itself.\n\n"
        "In fly.toml I also set `kill_signal = \"SIGTERM\"` and `kill_timeout = 30`. The "
        "member CSV export is our slowest request at up to ~20 s, and 30 lets it finish "
        "while the machine drains; at 5 it would have been cut off even with the signal "
        "arriving.")
    notes = transcript_notes(f"[assistant] {said}")
    cause = notes[0]
    assert cause.body.startswith("The `CMD` in the Dockerfile is in shell form")
    assert cause.body.endswith("the binary is PID 1 and gets the signal itself.")
    assert "There it is" not in cause.body
    assert not any("exec form" in n.body for n in notes[1:])
