"""A labelled set of disguised secrets, and of ordinary text wearing the same disguises.

Each positive hides a synthetic secret (drawn from the corpus generators, seeded)
the way an attack run on memspool did: a zero-width space or soft hyphen inside it,
fullwidth or mathematical letters, an HTML entity or a ``\\u005f`` escape for one
character, an AWS key id in lower case. Each negative carries the same features
in text that holds no secret (CJK punctuation, HTML, emoji sequences, escapes in
code) and must come out byte-identical.

The cases were all written before the normalised view was tuned; every third
positive and every third negative (by position in :data:`CASES`) is held out
(:data:`HELD_OUT`) and never used to change the view or the rules. tests/test_redact_normalised.py scores both.
"""

# ruff: noqa: E501, RUF001 - sample lines are kept whole; fullwidth letters are the point

from __future__ import annotations

import random
import unicodedata
from typing import Final

from redact_corpus import (
    Case,
    anthropic,
    aws_key_id,
    github,
    gitlab,
    google_api_key,
    huggingface,
    openai_project,
    password,
    slack_bot,
    stripe,
)

_R: Final = random.Random(20261202)  # seeded: the same set on every run

ZWSP, ZWJ, ZWNJ, WJ, SHY, BOM, RLO, PDF = (
    "\u200b", "\u200d", "\u200c", "\u2060", "\u00ad", "\ufeff", "\u202e", "\u202c")


def _fullwidth(text: str) -> str:
    """ASCII letters, digits and ``_`` as their fullwidth forms (NFKC gives them back)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _bold(text: str) -> str:
    """Letters as mathematical bold letters (NFKC gives them back)."""
    out = []
    for c in text:
        if "a" <= c <= "z":
            out.append(chr(0x1D41A + ord(c) - ord("a")))
        elif "A" <= c <= "Z":
            out.append(chr(0x1D400 + ord(c) - ord("A")))
        else:
            out.append(c)
    return "".join(out)


def _inside(secret: str, mark: str, at: int = 6) -> str:
    return secret[:at] + mark + secret[at:]


def _cases() -> list[Case]:
    r = _R
    gh = [github(r) for _ in range(8)]
    aws = [aws_key_id(r) for _ in range(5)]
    sk = [stripe(r) for _ in range(2)]
    return [
        Case("zwsp-in-github", f"export GITHUB_TOKEN={_inside(gh[0], ZWSP)}", (gh[0],), "github"),
        Case("neg-cjk-fullwidth", "価格は１，０００円です（税込）。詳細は ＦＡＱ をご覧ください。"),
        Case("shy-in-github", f"use {_inside(gh[1], SHY, 12)} for the bot", (gh[1],), "github"),
        Case("fullwidth-prefix", f"token: {_fullwidth(gh[2][:4])}{gh[2][4:]}", (gh[2],), "github"),
        Case("neg-html-entities", "<p>Tom &amp; Jerry &lt;3 &mdash; see &quot;docs&quot;</p>"),
        Case("entity-underscore", f"key ghp&#95;{gh[3][4:]} in the page", (gh[3],), "github"),
        Case("lower-aws", f"aws_access_key_id = {aws[0].lower()}", (aws[0].lower(),), "aws"),
        Case("neg-python-escape", 'print("caf\\u00e9 cr\\u00e8me")  # prints café crème'),
        Case("escape-underscore", f'{{"note": "ghp\\\\u005f{gh[4][4:]}"}}', (gh[4][4:],), "github"),
        Case("fullwidth-whole", f"the key is {_fullwidth(gh[5])}", (gh[5],), "github"),
        Case("neg-emoji-zwj", f"our team 👨{ZWJ}👩{ZWJ}👧 ships on Friday ❤️ 🏳️{ZWJ}🌈"),
        Case("wj-in-aws", f"id {_inside(aws[1], WJ, 8)} was rotated", (aws[1],), "aws"),
        Case("bom-in-openai", f"OPENAI={_inside(op := openai_project(r), BOM, 10)}", (op,), "openai"),
        Case("neg-soft-hyphen-prose", f"Donau{SHY}dampf{SHY}schiff{SHY}fahrts{SHY}gesell{SHY}schaft is one word."),
        Case("hex-entity-anthropic", (f"sk&#x2d;ant{(an := anthropic(r))[6:]}"), (an,), "anthropic"),
        Case("bold-letters", f"slack {_bold((sl := slack_bot(r))[:4])}{sl[4:]}", (sl,), "slack"),
        Case("neg-rtl-marks", "مرحبا\u200f بالعالم \u200e(version 2.1)"),
        Case("lower-aws-json", f'{{"AccessKeyId": "{aws[2].lower()}"}}', (aws[2].lower(),), "aws"),
        Case("zwnj-in-stripe", f"STRIPE_KEY={_inside(sk[0], ZWNJ, 9)}", (sk[0],), "stripe"),
        Case("neg-entity-code", "def &#95;&#95;init&#95;&#95;(self): pass"),
        Case("named-entity-lowbar", f"ghp&lowbar;{gh[6][4:]}", (gh[6],), "github"),
        Case("entity-equals-password", f"DB_PASSWORD&#61;{(pw := password(r))}", (pw,), "generic"),
        Case("neg-snake-escape", 'name = "snake\\u005fcase\\u005fname"'),
        Case("bidi-in-google", f"maps {_inside(gk := google_api_key(r), RLO + PDF, 8)}", (gk,), "google"),
        Case("fullwidth-aws", f"key {_fullwidth(aws[3])}", (aws[3],), "aws"),
        Case("neg-fullwidth-name", "set ＡＰＩ＿ＫＥＹ in the settings page, then restart"),
        Case("double-escape-hf", f'"text": "hf\\\\u005f{(hf := huggingface(r))[3:]}"', (hf[3:],), "huggingface"),
        Case("zwsp-twice-gitlab", f"{_inside(_inside(gl := gitlab(r), ZWSP, 3), ZWSP, 12)}", (gl,), "gitlab"),
        Case("neg-aws-like-word", "the accaPayableSystem and asiaPacificSummit2024 teams"),
        Case("lower-aws-zwsp", f"{_inside(aws[4].lower(), ZWSP, 10)} leaked", (aws[4].lower(),), "aws"),
        Case("entity-dash-slack", f"xoxb&#45;{(sl2 := slack_bot(r))[5:]}", (sl2,), "slack"),
        Case("neg-nbsp-prose", "Prices\u00a0start at 10\u00a0€; the\u2009thin spaces stay."),
        Case("escaped-zwsp-json", f'{{"t": "{gh[7][:4]}\\u200b{gh[7][4:]}"}}', (gh[7],), "github"),
        Case("tag-chars-in-stripe", f"{_inside(sk[1], chr(0xE0020), 10)}", (sk[1],), "stripe"),
        Case("neg-placeholder-entity", "TOKEN&#61;${TOKEN} and PASSWORD&#61;changeme"),
        Case("neg-math-prose", "Let 𝐱 be a vector in ℝⁿ and ｆ(𝐱) its image."),
    ]


CASES: Final = _cases()
_POSITIVES: Final = [case for case in CASES if not case.negative]
_NEGATIVES: Final = [case for case in CASES if case.negative]
#: Every third positive and every third negative is held out, so both halves
#: hold both kinds.
TUNED: Final = [c for part in (_POSITIVES, _NEGATIVES) for i, c in enumerate(part) if i % 3 != 2]
HELD_OUT: Final = [c for part in (_POSITIVES, _NEGATIVES) for i, c in enumerate(part)
                   if i % 3 == 2]


def read_as(text: str) -> str:
    """``text`` as a reader sees it, roughly: NFKC, invisible characters gone. A test
    reads redacted output through this too, so a secret cannot survive in disguise."""
    normal = unicodedata.normalize("NFKC", text)
    return "".join(c for c in normal if unicodedata.category(c) != "Cf")
