"""Where a secret sits: glued to an escape or a word, or on the line after its name."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import pytest
from redact_corpus import STRONG_GENERATORS

from memspool.redact import redact

FAMILIES = sorted(STRONG_GENERATORS)


def _secret(family: str) -> str:
    return STRONG_GENERATORS[family](random.Random(family))


#: Escapes that end in a letter or digit, yet are never part of a token: URL encoding of
#: ``=``, ``"`` and ``:``, and JSON's ``\\u`` escape.
GLUES: dict[str, Callable[[str], str]] = {
    "url-equals": lambda s: f"https://example.com/cb?state=1&token%3D{s}&next=2",
    "url-json": lambda s: f"q=%7B%22key%22%3A%22{s}%22%7D",
    "url-lowercase": lambda s: f"body=token%3d{s}%26x%3d1",
    "json-unicode": lambda s: f'{{"cmd": "export KEY\\u003d{s}"}}',
}


@pytest.mark.parametrize("glue", sorted(GLUES))
@pytest.mark.parametrize("family", FAMILIES)
def test_a_token_after_an_escape_is_found(family: str, glue: str) -> None:
    secret = _secret(family)
    out, counts = redact(GLUES[glue](secret))
    assert secret not in out
    assert family in counts, counts


#: Families whose token starts with a prefix no word ends in: nothing before it can be part
#: of the token, so it is found even glued to the word before it.
DISTINCT_PREFIX = ["anthropic", "github", "gitlab", "gcp", "jwt", "pypi", "slack"]


@pytest.mark.parametrize("family", DISTINCT_PREFIX)
def test_a_token_with_a_distinct_prefix_is_found_glued_to_a_word(family: str) -> None:
    secret = _secret(family)
    out, counts = redact(f"the value was token{secret} (clipped)")
    assert secret not in out
    assert counts == {family: 1}


@pytest.mark.parametrize(
    "text",
    [
        "task-proj-management-dashboard-v2 and risk_test_validation_suite_runner",
        "log.MSG.format_exception_details.with_traceback_information_here",
        "SOUTHEASTASIAREGIONSERVERS01 and NORTHASIA0123456789ABCDEFGH",
        "maxapp-2-dashboard-settings-page is the build target",
        "%20sk-learn %2Fhf_hub %3Dnpm_config %22SG.intro%22",
        "width: 100%; margin: 0 5%2AIza",
    ],
)
def test_words_that_contain_a_short_prefix_are_left_alone(text: str) -> None:
    assert redact(text) == (text, {})


# ----------------------------------------------------------------- value on the next line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=\n  'hunter2-long-pass'", "DB_PASSWORD=\n  '[REDACTED:generic]'"),
        ('password:\n    "orchid42!"\n', 'password:\n    "[REDACTED:generic]"\n'),
        ("API_KEY =\r\n\t'9f86d081884c7d659a2feaa0c55ad015'",
         "API_KEY =\r\n\t'[REDACTED:generic]'"),
        ('{"password":\n  "Zq8#wLp2!vN4"}', '{"password":\n  "[REDACTED:generic]"}'),
    ],
)
def test_a_quoted_value_on_the_next_line_is_found(text: str, expected: str) -> None:
    assert redact(text) == (expected, {"generic": 1})


def test_a_quoted_value_on_the_next_line_is_found_inside_json() -> None:
    line = json.dumps({"type": "tool_result", "content": "DB_PASSWORD=\n  'hunter2-long-pass'"})
    out, counts = redact(line)
    assert json.loads(out)["content"] == "DB_PASSWORD=\n  '[REDACTED:generic]'"
    assert counts == {"generic": 1}


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=\nDEBUG=1",  # an empty value, then the next assignment
        "PASSWORD=\n  hunter2-long-pass",  # a bare word on the next line may be anything
        'password:\n  "min_length": 8',  # YAML: the next line is a key of its own
        "password:\n  - 'orchid42!'",  # a list item, not a scalar value
        "token=\n\n  '9f86d081884c7d659a2feaa0c55ad015'",  # a blank line ends the assignment
        "names = ['token',\n  'TokenFormatter']",
    ],
)
def test_what_follows_a_bare_line_break_is_not_taken_as_the_value(text: str) -> None:
    assert redact(text) == (text, {})
