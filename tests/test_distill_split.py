"""The splitter: JSONL / markdown sections / paragraphs, chatter, learnings sections."""

from __future__ import annotations

import json
import re
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from memspool.distill.split import (
    CHATTER_CHARS,
    LEARNING_ITEM_CHARS,
    learnings_items,
    scrub,
    split_payload,
    split_pieces,
)


def words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text))


# JSONL --------------------------------------------------------------------------------------


def test_jsonl_takes_the_first_text_field_in_contract_order() -> None:
    lines = [
        {
            "message": "the message field is the last choice here",
            "content": "content wins over all others",
        },
        {"summary": "summary before message in the order", "message": "message loses to summary"},
        {"lesson": "lesson comes before summary, too", "summary": "summary loses to lesson"},
        {"insight": "insight comes before lesson in the order", "lesson": "lesson loses"},
        {"text": "text comes before insight in the order", "insight": "insight loses"},
    ]
    payload = "\n".join(json.dumps(line) for line in lines)
    assert split_payload(payload) == [
        "content wins over all others",
        "summary before message in the order",
        "lesson comes before summary, too",
        "insight comes before lesson in the order",
        "text comes before insight in the order",
    ]


def test_jsonl_without_a_text_field_keeps_the_compact_record() -> None:
    payload = (
        '{"kind": "decision",  "why": "one writer only"}\n\n'
        '{"content": ["not", "a string"], "n": 1}\n'
    )
    assert split_payload(payload) == [
        '{"kind":"decision","why":"one writer only"}',
        '{"content":["not","a string"],"n":1}',
    ]


def test_jsonl_empty_strings_fall_through_to_the_next_field() -> None:
    payload = json.dumps({"content": "   ", "text": "the text field is used instead"})
    assert split_payload(payload) == ["the text field is used instead"]


def test_one_line_that_is_not_an_object_means_not_jsonl() -> None:
    payload = '{"content": "looks like a record, but the next line is not"}\n[1, 2, 3]\n'
    assert split_payload(payload) == [payload.strip()]


def test_jsonl_chatter_is_dropped() -> None:
    payload = '{"content": "ok"}\n{"content": "a real note that is long enough"}\n'
    assert split_payload(payload) == ["a real note that is long enough"]


# markdown ------------------------------------------------------------------------------------


def test_markdown_gives_one_note_per_section_and_keeps_the_preamble() -> None:
    payload = (
        "Text before any heading is its own note.\n\n"
        "# Decision: SQLite over Postgres\nOne file, no server.\n\nWAL is enough for one writer.\n"
        "## Pitfall\nrequests has no default timeout.\n"
    )
    assert split_payload(payload) == [
        "Text before any heading is its own note.",
        "# Decision: SQLite over Postgres\nOne file, no server.\n\nWAL is enough for one writer.",
        "## Pitfall\nrequests has no default timeout.",
    ]


def test_a_hash_inside_a_code_fence_is_not_a_heading() -> None:
    payload = (
        "# Shell tip\n```sh\n# this is a comment, not a heading\nls -la\n```\nDone with the tip.\n"
    )
    assert split_payload(payload) == [payload.strip()]


def test_a_hash_without_a_space_is_not_a_heading() -> None:
    payload = "#123 is an issue number, not a heading\n\nsecond paragraph of plain text"
    assert split_payload(payload) == [
        "#123 is an issue number, not a heading",
        "second paragraph of plain text",
    ]


def test_a_section_that_is_only_a_short_heading_is_chatter() -> None:
    pieces = split_pieces("# Notes\n\n## A heading with enough body\nbody text here\n")
    assert [(p.kind, p.text) for p in pieces] == [
        ("chatter", "# Notes"),
        ("note", "## A heading with enough body\nbody text here"),
    ]


# paragraphs ---------------------------------------------------------------------------------


def test_paragraphs_split_on_blank_lines_and_drop_chatter() -> None:
    payload = (
        "First paragraph, line one\nline two of it.\n\n   \nok\n\n\nThe third paragraph here.\n"
    )
    assert split_payload(payload) == [
        "First paragraph, line one\nline two of it.",
        "The third paragraph here.",
    ]


def test_chatter_threshold_is_sixteen_characters() -> None:
    assert CHATTER_CHARS == 16
    assert split_payload("x" * 15) == []
    assert split_payload("x" * 16) == ["x" * 16]
    assert split_payload("   " + "y" * 15 + "   ") == []


# learnings ------------------------------------------------------------------------------------


def test_learnings_sections_give_one_note_per_item() -> None:
    payload = (
        "Some narrative output that is long enough.\n\n"
        "## Key Learnings:\n\n"
        "1. bcrypt cost=12 is the right balance for our server performance\n"
        "2) JWT refresh tokens need atomic rotation\n   to prevent race conditions\n"
        "3. too short\n"
        "- a bulleted item that is long enough too\n"
        "* and a starred item, also long enough\n"
        "\n## Next steps\nShip it after the review.\n"
    )
    assert split_payload(payload) == [
        "Some narrative output that is long enough.",
        "bcrypt cost=12 is the right balance for our server performance",
        "JWT refresh tokens need atomic rotation to prevent race conditions",
        "a bulleted item that is long enough too",
        "and a starred item, also long enough",
        "## Next steps\nShip it after the review.",
    ]


def test_learnings_headings_any_case_colon_optional() -> None:
    for heading in (
        "## Key Learnings:",
        "### Learnings",
        "## Aprendizajes Clave:",
        "## KEY LEARNINGS",
        "### learnings:",
        "## aprendizajes clave",
        "## **Key Learnings:**",
    ):
        payload = f"{heading}\n- El costo de bcrypt=12 es el balance correcto\n"
        assert learnings_items(payload) == ["El costo de bcrypt=12 es el balance correcto"], heading


def test_learnings_items_under_twenty_characters_are_dropped() -> None:
    assert LEARNING_ITEM_CHARS == 20
    payload = "### Learnings\n- " + "a" * 19 + "\n- " + "b" * 20 + "\n"
    assert learnings_items(payload) == ["b" * 20]


def test_learnings_items_ignore_other_sections_and_loose_text() -> None:
    payload = (
        "- a list item outside any learnings section\n\n"
        "## Key Learnings\nHere is what I learned this time:\n"
        "1. the first learning item is long enough\n\n"
        "A closing paragraph that is not an item.\n"
    )
    assert learnings_items(payload) == ["the first learning item is long enough"]
    # The normal splitter loses no text: the loose lines stay a note of their own.
    assert "Here is what I learned this time:" in "\n".join(split_payload(payload))
    assert "A closing paragraph that is not an item." in "\n".join(split_payload(payload))


def test_learnings_inside_jsonl_records_are_found() -> None:
    record = {
        "content": "Done.\n\n## Key Learnings:\n1. WAL mode lets readers run beside the writer\n"
    }
    assert learnings_items(json.dumps(record)) == ["WAL mode lets readers run beside the writer"]


def test_lone_surrogates_from_json_escapes_are_scrubbed() -> None:
    assert split_payload('{"content": "a lone \\ud800 surrogate in a long note"}') == [
        "a lone \ufffd surrogate in a long note"
    ]


def test_no_learnings_section_gives_no_items() -> None:
    assert learnings_items("Just some random text without any learning section.") == []


# properties -------------------------------------------------------------------------------------

_LINES = st.one_of(
    st.sampled_from(
        [
            "# Heading",
            "## Key Learnings:",
            "### learnings",
            "## Aprendizajes Clave",
            "```",
            "~~~",
            "",
            "   ",
            "- a bulleted learning item long enough",
            "1. a numbered item",
            "2) x",
            "plain words in a line",
            "#not-a-heading",
            "    indented continuation line",
            "* star",
            '{"content": "a json line"}',
            "{",
            "}",
        ]
    ),
    st.text(max_size=40),
)
_PAYLOADS = st.one_of(st.text(max_size=400), st.lists(_LINES, max_size=30).map("\n".join))


def _is_jsonl(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        return bool(lines) and all(isinstance(json.loads(line), dict) for line in lines)
    except ValueError:
        return False


@settings(max_examples=300, deadline=None)
@given(_PAYLOADS)
def test_splitter_never_crashes_and_loses_no_text_but_chatter(text: str) -> None:
    pieces = split_pieces(text)
    learnings_items(text)
    for piece in pieces:
        assert piece.text == piece.text.strip() and piece.text
        if piece.kind == "note":
            assert len(piece.text) >= CHATTER_CHARS
        elif piece.kind == "chatter":
            assert len(piece.text) < LEARNING_ITEM_CHARS
    if _is_jsonl(text):
        return  # JSONL keeps one field per record by contract; see the test below.
    kept: Counter[str] = Counter()
    for piece in pieces:
        kept += words(piece.text)
    assert kept == words(text)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=12))
def test_jsonl_loses_no_record_text_but_chatter(contents: list[str]) -> None:
    text = "\n".join(json.dumps({"content": content, "other": 1}) for content in contents)
    notes = split_payload(text)
    expected = [
        scrub(
            c.strip()
            if c.strip()
            else json.dumps({"content": c, "other": 1}, ensure_ascii=False, separators=(",", ":"))
        )
        for c in contents
    ]
    assert notes == [e for e in expected if len(e) >= CHATTER_CHARS]
