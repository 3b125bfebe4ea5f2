"""Redaction stays linear on pathological input: it finishes, and it is still right.

Each input is about 1 MB of one repeated unit, five times a drainer slice. A pass that
re-read the rest of the text at every trigger would take minutes here and blow the timeout;
no test reads a clock (the figures are in ``bench/redact_speed.py``).
"""

from __future__ import annotations

import pytest

from memspool.redact import redact

SIZE = 1_000_000


def _repeat(unit: str) -> str:
    return unit * (SIZE // len(unit))


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("unit", "head"),
    [
        # The first keyword takes everything after it as one value; the rest is that value.
        ("password=", "password="),
        ("&api_key=x", "&api_key="),
        ("API_KEY=", "API_KEY="),
        ("?secret=Zq8wLp2vN4xK&secret=", "?secret="),
    ],
)
def test_one_long_value_becomes_one_replacement(unit: str, head: str) -> None:
    out, counts = redact(_repeat(unit))
    assert out == head + "[REDACTED:generic]"
    assert counts == {"generic": 1}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "unit",
    [
        " ", "\t", "\n", "=", ":", "-", "_", ".", "\\", '"', "'", "=:", "&", "@", "%", "%3D",
        "token=", "secret=", "password ", "password: ", "token: token ", "Bearer ", "sk-", "eyJ",
        "AKIA", "://a:b", "curl -u ", "mysql -p ", "machine x login y ", "[REDACTED:github]",
    ],
)  # fmt: skip
@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_trigger_dense_or_blank_text_comes_back_unchanged(unit: str) -> None:
    text = _repeat(unit)
    assert redact(text) == (text, {})


@pytest.mark.timeout(60)
def test_a_secret_after_a_long_pathological_run_is_still_found() -> None:
    # The run's value ends at the line break: what follows is judged on its own.
    text = _repeat("password=") + "\nDB_PASSWORD=orchid42-long\n" + _repeat("token=")
    out, counts = redact(text)
    assert out.startswith("password=[REDACTED:generic]\nDB_PASSWORD=[REDACTED:generic]\n")
    assert counts == {"generic": 2}


@pytest.mark.timeout(60)
def test_vendor_tokens_inside_a_long_generic_value_keep_their_family() -> None:
    key = "ghp_" + "Zq8wLp2vN4xK" * 3
    text = "password=" + ("x" + key) * (SIZE // 41)
    out, counts = redact(text)
    assert out == "password=[REDACTED:github]"
    assert counts == {"github": 1}
