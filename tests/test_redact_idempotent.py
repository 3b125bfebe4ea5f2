"""A second pass changes nothing: a redaction marker is never part of a secret."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from redact_corpus import HEX, STRONG_GENERATORS, password, tok

from memspool.redact import FAMILIES, redact, replacement

PROPERTY = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    "text",
    [
        "https://[REDACTED:github]@github.com",
        "https://[REDACTED:github]:[REDACTED:url_password]@github.com/org/repo.git",
        "postgres://app:[REDACTED:url_password]@db:5432/app",
        "password=[REDACTED:generic]&token=[REDACTED:generic]",
        "curl -u [REDACTED:generic]:[REDACTED:generic] https://x",
        "Authorization: Bearer [REDACTED:auth_header]",
    ],
)
def test_markers_are_never_a_value(text: str) -> None:
    assert redact(text) == (text, {})


@pytest.mark.parametrize("before", ["Za]", "env[key]", "keys[i]", "x_]"])
def test_a_key_after_a_bracket_that_ends_no_marker_is_redacted(before: str) -> None:
    key = STRONG_GENERATORS["aws"](random.Random(0))
    assert redact(before + key) == (before + replacement("aws"), {"aws": 1})
    # After a whole marker it is what a first pass left glued to the secret it replaced.
    assert redact(replacement("azure") + key) == (replacement("azure") + key, {})


@pytest.mark.parametrize("family", FAMILIES)
def test_a_marker_in_a_url_user_stays_whole(family: str) -> None:
    text = f"git clone https://{replacement(family)}@github.com/org/repo.git"
    assert redact(text) == (text, {})


def _secret(make: str, seed: int) -> str:
    rng = random.Random(seed)
    if make == "password":
        return password(rng)
    if make == "hex32":
        return tok(rng, 32, HEX)
    return STRONG_GENERATORS[make](rng)


secrets_st = st.builds(_secret, st.sampled_from([*sorted(STRONG_GENERATORS), "password", "hex32"]),
                       st.integers(0, 2**32))
#: Names, separators, URL pieces and markers: what sits around secrets, and what a first
#: pass leaves behind.
pieces_st = st.sampled_from([
    " ", "\n", "\n  ", "\t", '"', "'", "\\", "\\n", '\\"', "=", ": ", ",", "&", "?", "%3D", "%22",
    "\\u003d", "://", "https://", "user:", ":", "@", "@github.com", "@db:5432/app", "password=",
    "DB_PASSWORD=", "token: ", "token=", "secret=", "api_key=", "&api_key=", "secret ",
    "--password ", "aaaaaaaa", "xxxxx", "${X}",
    "Authorization: Bearer ", "X-API-Key: ", '{"X-API-Key": ', "curl -u ", "mysql -u root -p",
    "machine example.com login bob password ", "Client(\"AC" + "0a1b2c3d" * 4 + '", ', "AC",
    *(replacement(family) for family in FAMILIES), "[REDACTED:", "]",
])  # fmt: skip
#: A URL with a secret where a user or a password goes, as a first pass may leave it.
urls_st = st.builds(
    "{}://{}{}{}@{}".format,
    st.sampled_from(["https", "postgres", "redis"]),
    st.sampled_from(["", "user:", "x-access-token:", ":"]),
    secrets_st,
    st.sampled_from(["", ":", ":pw"]),
    st.sampled_from(["github.com/org/repo.git", "db:5432/app", "[::1]"]),
)
texts_st = st.lists(st.one_of(pieces_st, secrets_st, urls_st, st.text(max_size=8)),
                    max_size=14).map("".join)


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
@PROPERTY
@given(texts_st)
@example("https://" + STRONG_GENERATORS["github"](random.Random(1)) + "@github.com")
@example(STRONG_GENERATORS["azure"](random.Random(0)) + "]"
         + STRONG_GENERATORS["aws"](random.Random(0)))
def test_redacting_twice_is_redacting_once(text: str) -> None:
    once, _ = redact(text)
    assert redact(once) == (once, {})
