"""The rules of the redactor: what a secret looks like, family by family.

A rule is found through its *triggers*: short literals that every match contains at a fixed
distance (``back``) from the match's start. The redactor scans the text once for all
triggers together and tries a rule only where one of its triggers sits, so a rule's pattern
is anchored (``Pattern.match``) and never scans the text by itself. Every repetition is
bounded, so the work per trigger is bounded and the whole pass stays linear.

Triggers are chosen for speed. The scan costs about one step per character whose value can
start a trigger, so a keyword is found by its rarest stretch (``ken`` for ``token``, ``word``
for ``password``), and a *guard* (a lookaround checked right after the literal) drops hits
such as ``tokens`` or ``cwd`` before any Python code runs.

The part of a match that is replaced is its secret group (see :func:`secret_span`), else the
whole match. No secret contains a quote or a lone backslash, so JSON around it stays valid.

Format rules recognise a secret by its shape (a vendor prefix, a PEM block, a JWT); context
rules by what surrounds it (an ``Authorization`` header, a URL, ``aws_secret_access_key``);
the ``generic`` rules by the name it is assigned to (``password``, ``API_KEY``), gated by
:func:`value_is_secret`.

What vendors know is in :mod:`memspool.redact.rules_vendor` (token families), passwords
placed by a command's or a file's own syntax in :mod:`memspool.redact.rules_commands`;
this module holds the pieces rules
are written with, the context rules that need no vendor (:data:`CONTEXT_RULES`: URLs,
headers) and the name-gated ones (:data:`GENERIC_RULES`).

To add a rule: write its pattern so that it matches starting ``back`` characters before its
trigger, keep every repetition bounded and every character class free of ``"`` and ``\\``,
add it to its table (order matters only among rules sharing a trigger: vendor rules are
tried first, then context, then generic), and add positive and negative lines to
``tests/redact_corpus.py``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "AFTER_MARKER",
    "ASSIGN_SIMPLE",
    "BARE_RUN",
    "CONTEXT",
    "CONTEXT_RULES",
    "ESCAPED",
    "FORMAT",
    "GENERIC",
    "GENERIC_MIN_LEN",
    "GENERIC_RULES",
    "MARKER_NAME_MAX",
    "QUOTE",
    "TOKEN_START",
    "TRAILING_NAME",
    "Rule",
    "Trigger",
    "after",
    "is_placeholder",
    "lits",
    "named_check",
    "rx",
    "secret_of",
    "secret_span",
    "separator",
    "shannon_bits",
    "token_check",
    "value_is_secret",
]  # fmt: skip

#: Priorities of a rule's findings (see :attr:`Rule.priority`).
FORMAT: Final = 2
CONTEXT: Final = 1
GENERIC: Final = 0

Check = Callable[[re.Match[str]], bool]
Locate = Callable[[str, int], int]
Extend = Callable[[re.Match[str]], int]
Claim = Callable[[re.Match[str]], int]
#: A literal, and a zero-width regex that must hold right after it (or ``""``).
Trigger = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Rule:
    """One way to recognise a secret of one family."""

    family: str
    triggers: tuple[Trigger, ...]
    pattern: re.Pattern[str]
    #: How far before its trigger a match starts (the same for all of the rule's triggers).
    back: int = 0
    #: Extra test on a match; a rule without one accepts every match of its pattern.
    check: Check | None = None
    #: Which finding names the family where findings overlap: :data:`FORMAT` (a vendor
    #: prefix, PEM, JWT) over :data:`CONTEXT` (a header, a URL, a known variable) over
    #: :data:`GENERIC`. Text a finding covers is searched again only by rules that outrank it.
    priority: int = FORMAT
    #: For a rule whose start is not a fixed distance from its trigger: returns it, or -1.
    locate: Locate | None = None
    #: For a rule whose secret may run past its pattern's bound: where it really ends.
    extend: Extend | None = None
    #: For a rule whose rejected match judged a bare value on its content: where that value
    #: starts, else -1. A name glued inside the value names part of it, judged already, so
    #: the engine may settle the value's run (:data:`BARE_RUN`) for rules of this priority.
    claim: Claim | None = None


# --------------------------------------------------------------------------- fragments

#: Escapes whose last character is a letter or digit, yet never part of a token: JSON's
#: ``\n``, ``\r``, ``\t`` and ``\u003d``, and URL encoding's ``%3D`` (``token%3Dghp_...``).
ESCAPED: Final = r"(?<=\\[nrt])|(?<=\\u[0-9A-Fa-f]{4})|(?<=%[0-9A-Fa-f]{2})"
#: The longest family name a redaction marker holds (``[REDACTED:url_password]``).
MARKER_NAME_MAX: Final = 32
#: The start of a token whose prefix a word may end in: not glued to a letter or digit,
#: unless that character ends an escape. Nor to the ``]`` that ends a redaction marker
#: (``[REDACTED:github]``): what a first pass left glued to a secret it replaced must look
#: the same to a second pass. A whole marker, not any ``]`` after a letter: a key after
#: ``...Za]`` or ``[key]`` is a token. One fixed-width look-behind per length of a family's
#: name (what :data:`re` allows), behind a cheap test for the ``]``.
AFTER_MARKER: Final = r"(?<=\])(?:" + "|".join(
    rf"(?<=\[REDACTED:[a-z_]{{{length}}}\])" for length in range(1, MARKER_NAME_MAX + 1)) + ")"
TOKEN_START: Final = rf"(?:(?<![A-Za-z0-9])(?!{AFTER_MARKER})|{ESCAPED})"
#: A quote as it sits in source code, in JSON (``\"``) or in JSON inside JSON (``\\\"``):
#: three levels of escaping take 7 backslashes.
QUOTE: Final = r"""(?:\\{0,7}["'`])"""
#: A line break as it sits in text or in JSON (escaped up to three times), and the
#: indentation after it.
_NEXT_LINE: Final = r"(?:\r?\n|(?:\\{1,7}r)?\\{1,7}n)(?:[ \t]|\\{1,7}t){0,16}"
#: What separates a key from its value in .env, YAML, JSON, shells and most languages,
#: including Python/TypeScript annotations (``api_key: str = "..."``). ``kq`` is the quote
#: that closes a quoted key: after one, a bare value is JSON structure (a number, ``null``)
#: or a variable in code, never a secret to replace.
#: A quoted value may also sit on the next line (``DB_PASSWORD=\\n  'pw'``, as YAML or a
#: wrapped line has it); a bare word there may be anything, so it is not taken.
_ASSIGN: Final = (
    "(?P<kq>" + QUOTE + r")?\]?(?P<s1>[ \t]{0,8})"
    r"(?::[ \t]{0,4}[A-Za-z_][A-Za-z0-9_\[\]., |]{0,40}?[ \t]{0,4}(?==))?"
    r"(?P<op>:=|=>|==?|:|,)(?P<s2>[ \t]{0,8})(?:(?P<nl>" + _NEXT_LINE + ")(?=" + QUOTE + "))?"
)


def separator(ops: str, *, before: str = "") -> str:
    """A key-value separator for format rules: a quoted key takes only a quoted value."""
    core = before + r"[ \t]{0,8}(?:" + ops + r")[ \t]{0,8}"
    return "(?:" + QUOTE + core + QUOTE + "|" + core + QUOTE + "?)"


ASSIGN_SIMPLE: Final = separator(":=|=>|=|:")
#: A value: quoted (any characters but its quote, a backslash or a line break) or bare (up
#: to a blank, quote, backslash, or a character that ends a value in code). The closing
#: quote is not required, so a value cut off by the end of a slice still counts; but a
#: single- or back-quoted value holds a double quote only when its own quote closes it
#: later on the line: else that double quote ends the JSON string the value is in
#: (``["password='hunter22"]``), and the value would run on through the document. A value
#: longer than the bound is extended after it is accepted (see ``_VALUE_TAILS``): the
#: bound only caps the work done on the many values that are rejected.
_VALUE_CHARS: Final = {
    "v1": r"[^\"\\\r\n]",
    "v2": r"(?:[^'\"\\\r\n]|\"(?=[^'\r\n]{0,256}'))",
    "v3": r"(?:[^`\"\\\r\n]|\"(?=[^`\r\n]{0,256}`))",
    "v4": r"[^\s\"'`\\,;<>(){}\[\]|]",
}
#: A quoted value cannot begin with a blank or ``:,}]``: those follow a *closing* quote.
_QUOTED_START: Final = r"(?![\s:,}\]])"
#: Nor can a single- or back-quoted one begin with a double quote: that closes a JSON
#: key the quote is part of (``{"password='": null}``), and the value would run on
#: through the document's structure.
_OTHER_QUOTED_START: Final = r"(?![\s:,}\]\"])"
_VALUE: Final = (
    rf"(?:\\{{0,7}}\"{_QUOTED_START}(?P<v1>{_VALUE_CHARS['v1']}{{1,256}})"
    rf"|'{_OTHER_QUOTED_START}(?P<v2>{_VALUE_CHARS['v2']}{{1,256}})"
    rf"|`{_OTHER_QUOTED_START}(?P<v3>{_VALUE_CHARS['v3']}{{1,256}})"
    rf"|(?P<v4>{_VALUE_CHARS['v4']}{{1,256}}))"
)
_VALUE_TAILS: Final = {name: re.compile(chars + "*") for name, chars in _VALUE_CHARS.items()}
#: The text a bare value judged once settles (see :attr:`Rule.claim`): its run of value
#: characters, up to a separator of URL parameters where a new name may begin, ...
BARE_RUN: Final = re.compile(r"[^\s\"'`\\,;<>(){}\[\]|&?#]*")
#: ... but for a name and operator that end the run: their value lies after it, past a blank
#: (``token: password: hunter2``). A name (keyword, rest, annotation) is at most this long.
TRAILING_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{0,120}[=:]{1,2}$")
#: The groups that may hold a match's secret, in order: ``secret``, or one of the value's
#: four forms (double-, single-, back-quoted, bare).
_SECRET_GROUPS: Final = ("secret", "v1", "v2", "v3", "v4")

# ------------------------------------------------------------------------ value checks

#: Bits per character below which a format-matched token is a placeholder
#: (``AKIAXXXXXXXXXXXXXXXX`` has 0.7; a random 16-character base32 tail about 3.7).
STRONG_MIN_BITS: Final = 2.5
#: Bits per character a name-gated value needs unless it is a password: random hex of 16+
#: characters has about 3.5-4, English words and slugs about 2.5-3.2.
GENERIC_MIN_BITS: Final = 3.0
#: Shortest name-gated value taken as a secret; shorter ones are flags, ids and words.
GENERIC_MIN_LEN: Final = 8
#: Shortest password taken as one: ``hunter2`` and PIN-like values, not ``on`` or ``1``.
PASSWORD_MIN_LEN: Final = 6
#: A quoted password with more words than this is a sentence, not a passphrase.
PASSPHRASE_MAX_WORDS: Final = 5

#: Text that stands in for a secret. Each alternative is long or unusual enough that a
#: random token of a few hundred characters practically never contains it.
_PLACEHOLDER: Final = re.compile(
    r"\[REDACTED|REDACTED|redacted|\$\{|\$\(|\{\{|\{%|<[^>]*>|[xX]{5,}|\*{3,}|•{3,}|\.\.\.|…"
    r"|EXAMPLE|[Ee]xample|[Yy]our[_-]|YOUR[_-]|[Yy]our[A-Z]|CHANGEME|[Cc]hange_?[Mm]e"
    r"|[Pp]laceholder|PLACEHOLDER|[Rr]eplace_?[Mm]e|REPLACE_?ME|[Dd]ummy|DUMMY|_here\b|_HERE\b"
)
#: Values that refer to a secret held elsewhere: shell and template variables, f-string
#: and ``str.format`` fields, ``%VAR%``, ``%(name)s``, ``process.env.X``.
_VARIABLE: Final = re.compile(
    r"\$[A-Za-z_{(]|\{[A-Za-z_]|%[A-Za-z_]+%|%\(|process\.env\b|os\.environ\b|ENV\["
)
#: Bare words that follow ``password:`` or ``token =`` in code, schemas and prose without
#: being the secret: types, literals, and what people write about a password.
_NOT_SECRET_WORDS: Final = frozenset(
    [
        "true", "false", "null", "none", "nil", "undefined", "yes", "no", "on", "off", "ok",
        "okay", "empty", "blank", "str", "string", "bytes", "int", "integer", "bool",
        "boolean", "number", "float", "any", "object", "optional", "required", "secret",
        "secrets", "password", "passwords", "passwd", "pass", "pwd", "token", "tokens",
        "key", "keys", "value", "text", "char", "varchar", "field", "input", "prompt", "type",
        "hash", "plain", "plaintext", "secure", "strong", "weak", "auto", "random", "env",
        "environment", "config", "see", "below", "above", "here", "there", "this", "that",
        "the", "your", "my", "our", "their", "changed", "updated", "reset", "invalid",
        "incorrect", "wrong", "missing", "hidden", "protected", "masked", "set", "unset",
        "stored", "saved", "provided", "generated", "encrypted", "hashed", "expired",
        "needed", "default", "sample", "test", "redacted", "placeholder", "example", "dummy",
        "omitted", "removed", "elided", "truncated",
    ]
)  # fmt: skip
#: Parts of a name that say its value is about a secret, not the secret itself
#: (``PASSWORD_MIN_LENGTH``, ``token_type``, ``secretName``).
_NOT_SECRET_NAME_PARTS: Final = frozenset(
    [
        "len", "length", "min", "max", "file", "path", "dir", "url", "uri", "endpoint",
        "count", "type", "name", "id", "ids", "ttl", "timeout", "policy", "enabled", "enable",
        "required", "prompt", "field", "label", "hint", "header", "env", "var", "limit",
        "format", "size", "expiry", "expires", "expiration", "age", "reset", "rotation",
        "regex", "pattern", "strength", "algorithm", "alg", "mode", "version", "level",
        "strategy", "provider", "manager", "store", "service", "helper", "ref", "arn", "kind",
        "class", "schema", "param", "params", "placeholder", "validator", "validation",
        "host", "port", "user", "username", "email", "usage", "budget", "window", "index",
        "lifetime", "location", "source", "dest", "target", "ui", "form", "message", "msg",
        "error",
    ]
)  # fmt: skip
_NAME_PARTS: Final = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_BLANK: Final = re.compile(r"\s")
_DIGIT: Final = re.compile(r"[0-9]")
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A word that makes a digit-free name a name: ``newPassword``, ``accessToken``.
#: The words of a name that make it a secret's (``smtp_pass``, ``SECRET_KEY``, ``apiToken``).
_SECRET_WORDS: Final = frozenset({"password", "passwd", "pwd", "pass", "passphrase", "secret",
                                  "token", "key", "credential", "credentials"})
_LOWER_START: Final = frozenset("abcdefghijklmnopqrstuvwxyz_$")
_NAMES_A_SECRET: Final = re.compile(
    r"(?i)pass(?:word|wd|phrase)?(?![a-z])|secret|token|key|credential")
_DOTTED: Final = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)+")
_PATHLIKE: Final = re.compile(r"(?:~|\.{1,2})?/[\w.@+-]*(?:/[\w.@+-]*)*|[A-Za-z]:\\")
#: Public material where a secret might sit: Stripe publishable keys, SSH public keys.
_PUBLIC: Final = re.compile(
    r"pk_(?:live|test)_|ssh-(?:rsa|ed25519|dss)\b|ecdsa-sha2-|AAAA[BC]3NzaC1"
)


def shannon_bits(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    if not value:
        return 0.0
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


#: Placeholders are short (``your-api-key-here``, ``sk-xxxxxxxx``): looking for one in the
#: first 64 characters finds it, and keeps the check cheap on long values rejected again
#: and again in trigger-dense text.
PLACEHOLDER_SPAN: Final = 64


def is_placeholder(value: str) -> bool:
    """True when ``value`` stands in for a secret (``YOUR_API_KEY``, ``${TOKEN}``, ``xxxx``)."""
    head = value[:PLACEHOLDER_SPAN]
    if _PLACEHOLDER.search(head) or _VARIABLE.match(head):
        return True
    return len(set(head)) <= 2


def secret_span(match: re.Match[str]) -> tuple[int, int]:
    """Where the secret of ``match`` lies: its first secret group that took part, else all."""
    names = match.re.groupindex
    for name in _SECRET_GROUPS:
        if name in names and match.start(name) >= 0:
            return match.span(name)
    return match.span()


def secret_of(match: re.Match[str]) -> str:
    """The text of :func:`secret_span`."""
    start, end = secret_span(match)
    return match.string[start:end]


#: Lower case, upper case, digits, and symbols other than ``-_.`` (which join the words of
#: names and slugs). Regexes, so the test runs in C even on a 512-character value.
_CHAR_CLASSES: Final = tuple(
    re.compile(c) for c in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9_.\-\s]")
)


def _char_classes(value: str) -> int:
    return sum(1 for pattern in _CHAR_CLASSES if pattern.search(value))


def _looks_random(value: str) -> bool:
    return (
        len(value) >= GENERIC_MIN_LEN
        and _char_classes(value) >= 2
        and shannon_bits(value) >= GENERIC_MIN_BITS
        and not is_placeholder(value)
    )


def _refers_to_secret(value: str) -> bool:
    """A value that names, points to or stands in for a secret, rather than being one."""
    return (
        is_placeholder(value)
        or _PUBLIC.match(value) is not None
        or value.lower() in _NOT_SECRET_WORDS
        or "://" in value
        or _PATHLIKE.fullmatch(value) is not None
    )


def _is_a_name(value: str, *, code: bool) -> bool:
    """A name in code or prose where a value might be: ``get_token``, ``self.token``,
    ``PKCS7PrivateKeyTypes`` in code; ``"newPassword"`` anywhere."""
    name = value.rstrip(".:") if code else value  # ``if token == Literal:``
    if not _IDENTIFIER.fullmatch(name):
        if _DOTTED.fullmatch(name) is None:
            return False
        # An object's attribute that names a secret is a name anywhere
        # (``password=url.password``, ``cfg.smtp_pass``); ``Tango.Whiskey`` is no object's.
        parts = re.split(r"\.|->|::", name)
        return code or (parts[0][:1] in _LOWER_START and any(
            part.lower() in _SECRET_WORDS for part in _NAME_PARTS.findall(parts[-1])))
    digitless = not _DIGIT.search(name)
    return (code and digitless) or ((code or digitless) and bool(_NAMES_A_SECRET.search(name)))


def value_is_secret(value: str, *, password: bool, env_style: bool, code: bool) -> bool:
    """Decide whether a value assigned to a secret-sounding name is itself a secret.

    ``password``: the name is a password (people choose those: no entropy is required).
    ``env_style``: ``NAME=value`` with an upper-case name, as in .env files and shells.
    ``code``: the value is bare and sits where code puts a variable or a type, or prose a
    word (``password = pw``, ``private_key: SSHKeyType``, ``the --token option``).
    """
    value = value.strip()
    if not value or _is_a_name(value, code=code) or _refers_to_secret(value):
        return False
    if value[-1] in "=:" and _is_a_name(value[:-1], code=True):
        # ``token: API_KEY= ...``: the next assignment's name, not a value. (Whether
        # it was caught used to depend on what else overlapped, so a second pass
        # could redact what the first left: not idempotent.)
        return False
    if _BLANK.search(value):
        # Only a password may hold blanks (a passphrase); a sentence is not one.
        words = len(value.split())
        return password and words <= PASSPHRASE_MAX_WORDS and value[-1] not in ".!?:"
    if not (password or env_style):
        return _looks_random(value)
    return len(value) >= PASSWORD_MIN_LEN and (password or not value.isdigit())


def _name_is_about_secret(rest: str) -> bool:
    return not any(p.lower() in _NOT_SECRET_NAME_PARTS for p in _NAME_PARTS.findall(rest))


#: How far back a ``--flag value`` check looks for the dashes before a keyword.
_FLAG_LOOKBACK: Final = 48
_FLAG_BEFORE: Final = re.compile(r"(?:^|[\s\"'=])--?[A-Za-z0-9-]*$")
_CODE_OPS: Final = frozenset({"=", "==", ":=", "=>"})


#: A value on the next line ends on that line, and is not a key (``password:\\n  "x": 1``).
_CLOSED_ON_ITS_LINE: Final = re.compile(r"""\\{0,7}["'`](?![ \t]{0,8}:)""")


#: A variable's name as code writes it: lower-case words joined by ``_``, digits
#: only at its end (``user_pw2``), or dotted (``self.token``).
_VARIABLE_NAME: Final = re.compile(r"[a-z_][a-z_]*(?:\.[a-z_][a-z_]*)*\d*")


def _placed_as_assignment(match: re.Match[str]) -> bool:
    """The name, separator and value sit as an assignment does, not as code or prose."""
    text, op = match.string, match.group("op")
    bare = match.group("v4") is not None
    if match.group("nl") and (op == "," or not _CLOSED_ON_ITS_LINE.match(text, match.end())):
        return False
    if op is None:
        # A blank separates a value from its name only after a command-line flag.
        at = match.start()
        if not _FLAG_BEFORE.search(text, max(0, at - _FLAG_LOOKBACK), at):
            return False
    elif bare and (op == "," or match.group("kq")):
        # ``f(password, token)``, ``{"password": 12345678}``, ``env["TOKEN"] = t``.
        return False
    if bare:
        # A call, an index, a generic type, or a keyword argument.
        after = text[match.end() : match.end() + 1]
        if after in (",", ")") and op == "=":
            # A keyword argument names a variable (``connect(password=pw, ...)``); a
            # value with a digit in that place is written out, as in
            # ``DB_PASSWORD=s3cr3tP4ss, user=bob``: the value's own checks decide. A
            # variable's name may end in digits (``password=user_pw2``).
            value = secret_of(match)
            return _DIGIT.search(value) is not None and not _VARIABLE_NAME.fullmatch(value)
        return after not in ("(", "[", "<", ".")
    return True


#: A test runner's verdict line: ``--- PASS: TestParse/empty (0.00s)`` (Go), a test's
#: name between the word and its time. A variable named ``PASS`` is not written so.
_TEST_NAME: Final = re.compile(r"(?:Test|test|Benchmark|Example|Fuzz)[A-Za-z0-9_/.-]*")
_VERDICT_BEFORE: Final = re.compile(r"(?:^|\n|\\n)[ \t]*---[ \t]+$")
_VERDICT_AFTER: Final = re.compile(r"[ \t]+\([0-9.]+m?s\)")


def _is_verdict(match: re.Match[str]) -> bool:
    """``--- PASS: TestName (0.02s)``: a test runner's line, not a password."""
    text, start = match.string, match.start()
    return (not match.group("rest") and _TEST_NAME.fullmatch(secret_of(match)) is not None
            and _VERDICT_BEFORE.search(text, max(0, start - 16), start) is not None
            and _VERDICT_AFTER.match(text, match.end()) is not None)


#: A docstring's field (reST, Sphinx): ``:param password: ...``, ``:type passphrase: bytes``,
#: ``:param str smtp_pass: ...``. What follows describes the name; it is not its value.
_DOC_FIELD: Final = re.compile(
    r":(?:type|param|parameter|arg|argument|key|keyword|kwarg|ivar|cvar|var|vartype)"
    r"[ \t]{1,4}(?:[\w.\[\]]{1,40}[ \t]{1,4})?[\w.]{0,40}$")
_DOC_FIELD_LOOKBACK: Final = 100


def _generic_check(*, password: bool) -> Check:
    def check(match: re.Match[str]) -> bool:
        if not _name_is_about_secret(match.group("rest")) or not _placed_as_assignment(match):
            return False
        at = match.start()
        if _DOC_FIELD.search(match.string, max(0, at - _DOC_FIELD_LOOKBACK), at):
            return False
        op = match.group("op")
        if match.group("kw") == "PASS" and op == ":" and _is_verdict(match):
            return False
        if op == ",":
            # ``setenv("API_KEY", "...")``, but far more often a list of names
            # (``['Token', 'TokenFormatter']``): only a random value with a digit counts.
            value = secret_of(match)
            return _DIGIT.search(value) is not None and _looks_random(value)
        bare = match.group("v4") is not None
        spaced = bool(match.group("s1") or match.group("s2") or match.group("nl"))
        return value_is_secret(
            secret_of(match),
            password=password,
            env_style=op == "=" and not spaced and match.group("kw").isupper(),
            code=bare and (op in (None, ":") or (op in _CODE_OPS and spaced)),
        )

    return check


def _claim_bare_value(match: re.Match[str]) -> int:
    # Only a value rejected for its shape (too short, too uniform: ``token=token=...``): one
    # rejected as a stand-in (``xxxx``, ``${X}``) or for its name may hold a real secret
    # further on, glued to a name of its own.
    value = match.group("v4")
    if value is None or match.group("op") in (None, ",") or match.group("kq"):
        return -1
    if is_placeholder(value) or _looks_random(value):
        return -1
    return match.start("v4")


def token_check(match: re.Match[str]) -> bool:
    """A format-matched token that is not a placeholder (``AKIAXXXXXXXXXXXXXXXX``)."""
    secret = secret_of(match)
    return not is_placeholder(secret) and shannon_bits(secret) >= STRONG_MIN_BITS


def _random_check(match: re.Match[str]) -> bool:
    return _looks_random(secret_of(match))


def _header_check(match: re.Match[str]) -> bool:
    # After a scheme (``Bearer``) any token-shaped value is the credential; without one it
    # must look random, so ``Authorization: header`` in prose stays.
    return token_check(match) if match.group("scheme") else _random_check(match)


def named_check(match: re.Match[str]) -> bool:
    """A secret the syntax around it names as one: only a stand-in is left alone."""
    password = secret_of(match)
    return not is_placeholder(password) and password.lower() not in _NOT_SECRET_WORDS


# ------------------------------------------------------------------------ rule builders


def rx(pattern: str) -> re.Pattern[str]:
    """A rule's pattern, compiled."""
    return re.compile(pattern)


def lits(*literals: str) -> tuple[Trigger, ...]:
    """Triggers that are plain literals."""
    return tuple((literal, "") for literal in literals)


def after(literal: str, *contexts: str) -> Trigger:
    """``literal`` as a trigger only where it ends one of ``contexts`` (fixed-width regexes)."""
    return literal, "(?:" + "|".join(f"(?<={c})" for c in contexts) + ")"


def _spellings(word: str) -> tuple[str, ...]:
    # How names are written: as given (snake, kebab, camel), Capitalised, UPPER for env vars.
    return tuple(dict.fromkeys((word, word[:1].upper() + word[1:], word.upper())))


def _keyword(
    words: Iterable[str], trigger: str, *, spell: bool = True
) -> tuple[list[str], set[Trigger]]:
    """Regex alternatives for ``words`` anchored at ``trigger`` inside each, and the triggers.

    The part of a word before its trigger becomes a lookbehind, so a match starts at the
    trigger. A word must end where it ends: ``tokens``, ``tokenizer`` and ``SECRETS`` are
    not ``token`` or ``SECRET``; a camel-case or ``_`` continuation is (``secretKey``).
    """
    looks_by_tail: dict[str, list[str]] = {}
    guards: dict[str, list[str]] = {}
    for word in words:
        at = word.lower().index(trigger.lower())
        for spelled in _spellings(word) if spell else (word,):
            head, tail = spelled[:at], spelled[at:]
            end = "(?![A-Z])" if spelled.isupper() else "(?![a-z])"
            look = f"(?<={re.escape(head)})" if head else ""
            looks_by_tail.setdefault(re.escape(tail) + end, []).append(look)
            literal = spelled[at : at + len(trigger)]
            # The scan's guard: the word up to here, and its end if the trigger ends it.
            guard = f"(?<={re.escape(head + literal)})" + (end if tail == literal else "")
            guards.setdefault(literal, []).append(guard)
    alternatives = [
        tail if "" in looks else "(?:" + "|".join(dict.fromkeys(looks)) + ")" + tail
        for tail, looks in looks_by_tail.items()
    ]
    triggers = {(lit, "(?:" + "|".join(dict.fromkeys(g)) + ")") for lit, g in guards.items()}
    return alternatives, triggers


def _extend_value(match: re.Match[str]) -> int:
    for name, tail in _VALUE_TAILS.items():
        end = match.end(name)
        if end >= 0:
            tail_match = tail.match(match.string, end)
            return tail_match.end() if tail_match else end
    return match.end()


def _generic(*groups: tuple[list[str], set[Trigger]], password: bool) -> Rule:
    # A password needs no particular shape: a rejected one was rejected for what it is.
    alternatives = [a for group, _ in groups for a in group]
    triggers = tuple(sorted({t for _, group in groups for t in group}))
    flag = r"(?P<flag>[ \t]{1,4})(?=[^\s=:-])"
    pattern = (
        "(?P<kw>" + "|".join(alternatives) + r")(?P<rest>[A-Za-z0-9_.-]{0,40})"
        "(?:" + _ASSIGN + "|" + flag + ")" + _VALUE
    )
    check = _generic_check(password=password)
    return Rule("generic", triggers, rx(pattern), check=check, priority=GENERIC,
                extend=_extend_value, claim=None if password else _claim_bare_value)


def _key_words() -> list[str]:
    # A bare ``key`` is everywhere (dicts, YAML, ``primary_key``); these name secret keys.
    stems = ("api", "access", "private", "account", "signing", "encryption", "master",
             "auth", "app", "storage", "license", "subscription")  # fmt: skip
    words = [f"{stem}{sep}key" for stem in stems for sep in ("_", "-", "")]
    return words + [f"{stem}Key" for stem in stems]


#: ``://`` + a user and a password of at most 256 characters each, then the ``@``.
_URL_LOOKBACK: Final = 3 + 256 + 1 + 256


def _url_start(text: str, at: int) -> int:
    return text.rfind("://", max(0, at - _URL_LOOKBACK), at)


_SCHEMES: Final = "Bearer|bearer|BEARER|Basic|basic|BASIC|Token|token|TOKEN|Bot|ApiKey|SSWS|OAuth"
_HEADER_VALUE: Final = separator(":") + r"(?P<secret>[A-Za-z0-9._~+/=-]{8,1024})"
#: URLs and headers.
CONTEXT_RULES: Final[tuple[Rule, ...]] = (
    Rule("url_password", (("@", r"(?<=[^\s\"'`<>/@\\]@)"),),  # only the password
         rx(r"://[^\s:/?#@\"'`\\<>]{0,256}:(?P<secret>[^\s/\"'`\\<>]{1,256})@"),
         check=named_check, locate=_url_start, priority=CONTEXT),
    Rule("auth_header", (after("zation", "[Aa]uthorization"), after("ZATION", "AUTHORIZATION")),
         rx(r"(?:Authorization|authorization|AUTHORIZATION)" + separator(":|=")
            + r"(?:(?P<scheme>" + _SCHEMES + r")[ ]{1,4})?"
            r"(?P<secret>[A-Za-z0-9._~+/:=-]{8,4096})"),
         back=7, check=_header_check, priority=CONTEXT),
    Rule("auth_header", lits("Bearer", "BEARER"),
         rx(r"(?:Bearer|BEARER)[ ]{1,4}(?P<secret>[A-Za-z0-9._~+/-]{16,4096}=*)"),
         check=_random_check, priority=CONTEXT),
    Rule("auth_header", (after("Key", "[Aa]pi-Key", "API-Key", "[Ss]ubscription-Key"),
                         after("key", "[Aa]pi-key", "API-key", "[Ss]ubscription-key"),
                         after("KEY", "API-KEY", "SUBSCRIPTION-KEY")),
         rx(r"(?:(?<=[Aa]pi-)|(?<=API-)|(?<=[Ss]ubscription-)|(?<=SUBSCRIPTION-))"
            r"(?:Key|key|KEY)" + _HEADER_VALUE),
         check=token_check, priority=CONTEXT),
    Rule("auth_header", (after("ken", "-[Tt]oken"), after("KEN", "-TOKEN")),  # X-Auth-Token
         rx(r"(?<=-)(?:Token|token|TOKEN)" + _HEADER_VALUE), back=2, check=token_check,
         priority=CONTEXT),
)  # fmt: skip

def _mixed_only(rule: Rule, *, quoted: bool = False) -> Rule:
    """``rule``, for a name that may hold a password or a word: a compiler's or a
    renderer's pass (``llvm_pass: 'mem2reg'``, ``render_pass: "shadow-map"``). The value
    must be 8 characters or more and mix two of lower case, upper case and digits; with
    ``quoted`` (the word ``pass`` itself), also be one word, quoted and assigned (``pass:
    'x'``: a bare value after it, or the next string of a list, is as likely prose)."""
    check = rule.check

    def mixed(match: re.Match[str]) -> bool:
        if quoted and (match.group("v4") is not None or match.group("op") is None):
            return False
        value = secret_of(match)
        if quoted and (match.group("op") == "," or _BLANK.search(value)):
            # The word ``pass`` in a list of strings ("the SSAO pass.", "courtyard is
            # back ..."): prose. A ``_pass`` name may take a passphrase, or be the
            # argument before its value (``config.set("mail", "smtp_pass", "...")``).
            return False
        classes = sum(1 for chars in _MIXED_CLASSES if chars.search(value))
        return (len(value) >= GENERIC_MIN_LEN and classes >= 2
                and check is not None and check(match))

    return dataclasses.replace(rule, check=mixed, claim=None)


_MIXED_CLASSES: Final = (re.compile("[a-z]"), re.compile("[A-Z]"), _DIGIT)


#: A name that ends in ``Pass`` after a lower-case letter (``smtpPass``).
_CAMEL_PASS: Final = (["(?<=[a-z])Pass(?![a-z])"], {("Pass", "(?<=[a-z]Pass)(?![a-z])")})

#: The name-gated rules: a value is a secret because of the name it is assigned to.
GENERIC_RULES: Final[tuple[Rule, ...]] = (
    _generic(
        _keyword(["password"], "word"),
        _keyword(["passwd", "pwd"], "wd"),
        _keyword(["PASS", "PASSPHRASE"], "PASS", spell=False),
        # ``passphrase`` lower case, found only where ``phrase`` follows its ``pass``.
        (_keyword(["passphrase"], "pass")[0], {("pass", "(?<=pass)(?=phrase)"),
                                               ("Pass", "(?<=Pass)(?=phrase)")}),
        _keyword(["_passphrase"], "_pass", spell=False),  # ssh_passphrase
        (["(?<=[a-z])Passphrase(?![a-z])"], {("Pass", "(?<=[a-z]Pass)(?=phrase)")}),
        password=True,
    ),
    # A name ending in ``_pass`` or ``Pass`` (``smtp_pass``, ``ansible_become_pass``,
    # ``smtpPass``), and ``pass`` itself with a quoted value (nodemailer's ``auth``, YAML),
    # only the word (``buypass`` is not it): each may name a compiler's pass too.
    _mixed_only(_generic(_keyword(["_pass"], "_pass", spell=False), _CAMEL_PASS,
                         password=True)),
    _mixed_only(_generic((["(?<![A-Za-z0-9_])pass(?![a-z])"],
                          {("pass", "(?<=(?<![A-Za-z0-9_])pass)(?![a-z])")}), password=True),
                quoted=True),
    _generic(_keyword(["secret"], "cret"), password=False),
    _generic(_keyword(["token"], "ken"), password=False),
    _generic(_keyword(_key_words(), "key"), password=False),
)
