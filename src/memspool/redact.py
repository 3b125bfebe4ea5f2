"""Secret redaction: every slice and every captured payload passes through here.

Minimal first version (private key blocks and well-known token prefixes);
the full rule set replaces it behind the same function.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["redact"]

_RULES: Final = (
    ("private_key", re.compile(
        r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----.*?-----END[A-Z ]{0,40}PRIVATE KEY-----", re.S)),
    ("github", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})")),
    ("aws", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    ("anthropic", re.compile(r"\bsk-ant-[a-z]+\d\d-[A-Za-z0-9_-]{20,}")),
    ("openai", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
)


def redact(text: str) -> tuple[str, dict[str, int]]:
    """Return ``text`` with secrets replaced by ``[REDACTED:<family>]`` and counts per family."""
    counts: dict[str, int] = {}
    for family, pattern in _RULES:
        text, n = pattern.subn(f"[REDACTED:{family}]", text)
        if n:
            counts[family] = counts.get(family, 0) + n
    return text, counts
