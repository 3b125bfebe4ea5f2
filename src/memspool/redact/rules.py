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

To add a rule: write its pattern so that it matches starting ``back`` characters before its
trigger, keep every repetition bounded and every character class free of ``"`` and ``\\``,
add it to :data:`RULES` (order matters only among rules sharing a trigger), and add positive
and negative lines to ``tests/redact_corpus.py``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

__all__ = ["CONTEXT", "FORMAT", "GENERIC", "RULES", "Rule", "Trigger", "is_placeholder",
           "secret_span", "shannon_bits", "value_is_secret"]  # fmt: skip

#: Priorities of a rule's findings (see :attr:`Rule.priority`).
FORMAT: Final = 2
CONTEXT: Final = 1
GENERIC: Final = 0

Check = Callable[[re.Match[str]], bool]
Locate = Callable[[str, int], int]
Extend = Callable[[re.Match[str]], int]
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
    #: :data:`GENERIC`. Text a FORMAT match covers is not searched again.
    priority: int = FORMAT
    #: For a rule whose start is not a fixed distance from its trigger: returns it, or -1.
    locate: Locate | None = None
    #: For a rule whose secret may run past its pattern's bound: where it really ends.
    extend: Extend | None = None


# --------------------------------------------------------------------------- fragments

#: The start of a token: not glued to a letter or digit, except that inside a JSON string a
#: token often follows an escape such as ``\n`` whose last character is a letter.
_LB: Final = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))"
#: A quote as it sits in source code, in JSON (``\"``) or in JSON inside JSON (``\\\"``):
#: three levels of escaping take 7 backslashes.
_QUOTE: Final = r"""(?:\\{0,7}["'`])"""
#: What separates a key from its value in .env, YAML, JSON, shells and most languages,
#: including Python/TypeScript annotations (``api_key: str = "..."``). ``kq`` is the quote
#: that closes a quoted key: after one, a bare value is JSON structure (a number, ``null``)
#: or a variable in code, never a secret to replace.
_ASSIGN: Final = (
    "(?P<kq>" + _QUOTE + r")?\]?(?P<s1>[ \t]{0,8})"
    r"(?::[ \t]{0,4}[A-Za-z_][A-Za-z0-9_\[\]., |]{0,40}?[ \t]{0,4}(?==))?"
    r"(?P<op>:=|=>|==?|:|,)(?P<s2>[ \t]{0,8})"
)


def _separator(ops: str, *, before: str = "") -> str:
    """A key-value separator for format rules: a quoted key takes only a quoted value."""
    core = before + r"[ \t]{0,8}(?:" + ops + r")[ \t]{0,8}"
    return "(?:" + _QUOTE + core + _QUOTE + "|" + core + _QUOTE + "?)"


_ASSIGN_SIMPLE: Final = _separator(":=|=>|=|:")
#: A value: quoted (any characters but its quote, a backslash or a line break) or bare (up
#: to a blank, quote, backslash, or a character that ends a value in code). The closing
#: quote is not required, so a value cut off by the end of a slice still counts. A value
#: longer than the bound is extended after it is accepted (see ``_VALUE_TAILS``): the
#: bound only caps the work done on the many values that are rejected.
_VALUE_CHARS: Final = {
    "v1": r"[^\"\\\r\n]",
    "v2": r"[^'\\\r\n]",
    "v3": r"[^`\\\r\n]",
    "v4": r"[^\s\"'`\\,;<>(){}\[\]|]",
}
#: A quoted value cannot begin with a blank or ``:,}]``: those follow a *closing* quote.
_QUOTED_START: Final = r"(?![\s:,}\]])"
_VALUE: Final = (
    rf"(?:\\{{0,7}}\"{_QUOTED_START}(?P<v1>{_VALUE_CHARS['v1']}{{1,256}})"
    rf"|'{_QUOTED_START}(?P<v2>{_VALUE_CHARS['v2']}{{1,256}})"
    rf"|`{_QUOTED_START}(?P<v3>{_VALUE_CHARS['v3']}{{1,256}})"
    rf"|(?P<v4>{_VALUE_CHARS['v4']}{{1,256}}))"
)
_VALUE_TAILS: Final = {name: re.compile(chars + "*") for name, chars in _VALUE_CHARS.items()}
#: The groups that may hold a match's secret, in order: ``secret``, or one of the value's
#: four forms (double-, single-, back-quoted, bare).
_SECRET_GROUPS: Final = ("secret", "v1", "v2", "v3", "v4")
#: Whitespace as it sits in a PEM block: real, or escaped one to three times.
_PEM_SEP: Final = r"(?:\\{1,7}[nrt]|[ \t\r\n])"
_PEM_LABEL: Final = (
    r"-----{edge}[ ](?:[A-Z0-9]{{1,12}}[ ]){{0,3}}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----"
)
#: ``Proc-Type: 4,ENCRYPTED`` and ``DEK-Info: ...`` in encrypted PEM, ``Version:`` in PGP.
_PEM_HEADER_LINE: Final = r"[A-Za-z][A-Za-z-]{0,31}:[ ][^\"\\\r\n]{0,128}"

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
_NAMES_A_SECRET: Final = re.compile(r"(?i)pass(?:word|wd)|secret|token|key|credential")
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


def _secret(match: re.Match[str]) -> str:
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
        return code and _DOTTED.fullmatch(name) is not None
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
    if not value or _refers_to_secret(value) or _is_a_name(value, code=code):
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


def _generic_check(*, password: bool) -> Check:
    def check(match: re.Match[str]) -> bool:
        if not _name_is_about_secret(match.group("rest")):
            return False
        text, op = match.string, match.group("op")
        bare = match.group("v4") is not None
        if op is None:
            # A blank separates a value from its name only after a command-line flag.
            at = match.start()
            if not _FLAG_BEFORE.search(text, max(0, at - _FLAG_LOOKBACK), at):
                return False
        elif bare and (op == "," or match.group("kq")):
            # ``f(password, token)``, ``{"password": 12345678}``, ``env["TOKEN"] = t``.
            return False
        elif op == ",":
            # ``setenv("API_KEY", "...")``, but far more often a list of names
            # (``['Token', 'TokenFormatter']``): only a random value with a digit counts.
            value = _secret(match)
            return _DIGIT.search(value) is not None and _looks_random(value)
        spaced = bool(match.group("s1") or match.group("s2"))
        if bare:
            after = text[match.end() : match.end() + 1]
            if after in ("(", "[", "<", ".") or (after in (",", ")") and op == "="):
                return False  # a call, an index, a generic type, or a keyword argument
        return value_is_secret(
            _secret(match),
            password=password,
            env_style=op == "=" and not spaced and match.group("kw").isupper(),
            code=bare and (op in (None, ":") or (op in _CODE_OPS and spaced)),
        )

    return check


def _token_check(match: re.Match[str]) -> bool:
    secret = _secret(match)
    return not is_placeholder(secret) and shannon_bits(secret) >= STRONG_MIN_BITS


def _random_check(match: re.Match[str]) -> bool:
    return _looks_random(_secret(match))


def _header_check(match: re.Match[str]) -> bool:
    # After a scheme (``Bearer``) any token-shaped value is the credential; without one it
    # must look random, so ``Authorization: header`` in prose stays.
    return _token_check(match) if match.group("scheme") else _random_check(match)


def _npm_auth_check(match: re.Match[str]) -> bool:
    secret = _secret(match)
    return len(secret) >= GENERIC_MIN_LEN and not is_placeholder(secret)


def _url_check(match: re.Match[str]) -> bool:
    password = _secret(match)
    return not is_placeholder(password) and password.lower() not in _NOT_SECRET_WORDS


#: A PEM body holds a run of base64 this long; a mention of the header alone (``if line ==
#: "-----BEGIN PRIVATE KEY-----"``) has none.
_PEM_BASE64_RUN: Final = re.compile(r"[A-Za-z0-9+/]{16}")


def _pem_check(match: re.Match[str]) -> bool:
    return _PEM_BASE64_RUN.search(match.group()) is not None


# ------------------------------------------------------------------------ rule builders


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _lits(*literals: str) -> tuple[Trigger, ...]:
    return tuple((literal, "") for literal in literals)


def _after(literal: str, *contexts: str) -> Trigger:
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
    alternatives = [a for group, _ in groups for a in group]
    triggers = tuple(sorted({t for _, group in groups for t in group}))
    flag = r"(?P<flag>[ \t]{1,4})(?=[^\s=:-])"
    pattern = (
        "(?P<kw>" + "|".join(alternatives) + r")(?P<rest>[A-Za-z0-9_.-]{0,40})"
        "(?:" + _ASSIGN + "|" + flag + ")" + _VALUE
    )
    check = _generic_check(password=password)
    return Rule("generic", triggers, _rx(pattern), check=check, priority=GENERIC,
                extend=_extend_value)


def _key_words() -> list[str]:
    # A bare ``key`` is everywhere (dicts, YAML, ``primary_key``); these name secret keys.
    stems = ("api", "access", "private", "account", "signing", "encryption", "master",
             "auth", "app", "storage", "license", "subscription")  # fmt: skip
    words = [f"{stem}{sep}key" for stem in stems for sep in ("_", "-", "")]
    return words + [f"{stem}Key" for stem in stems]


def _pem(*, truncated: bool) -> Rule:
    # With its END line, a body line is any base64. Without one (a cut slice, ``head
    # key.pem``) only long lines count, so that the prose after the block stays.
    line = r"[A-Za-z0-9+/=]{16,4096}" if truncated else r"[A-Za-z0-9+/=]{1,4096}"
    body = f"(?:{_PEM_SEP}{{1,8}}(?:{line}|{_PEM_HEADER_LINE})){{1,1024}}"
    pattern = _PEM_LABEL.format(edge="BEGIN") + body
    if not truncated:
        pattern += _PEM_SEP + "{0,8}" + _PEM_LABEL.format(edge="END")
    trigger = _after("BEGIN", "-----BEGIN")
    return Rule("private_key", (trigger,), _rx(pattern), back=5, check=_pem_check)


#: ``://`` + a user and a password of at most 256 characters each, then the ``@``.
_URL_LOOKBACK: Final = 3 + 256 + 1 + 256


def _url_start(text: str, at: int) -> int:
    return text.rfind("://", max(0, at - _URL_LOOKBACK), at)


#: The names under which AWS secret access keys are written.
_AWS_CREDENTIAL_NAME: Final = (
    r"(?:(?<=[Aa][Ww][Ss][_-])(?:secret|SECRET)[_-]?(?:key|KEY)"
    r"|(?:secret|Secret|SECRET)[ _-]?(?:access|Access|ACCESS)[ _-]?(?:key|Key|KEY))"
)
_SCHEMES: Final = "Bearer|bearer|BEARER|Basic|basic|BASIC|Token|token|TOKEN|Bot|ApiKey|SSWS|OAuth"
_HEADER_VALUE: Final = _separator(":") + r"(?P<secret>[A-Za-z0-9._~+/=-]{8,1024})"
_GITLAB_PREFIXES: Final = ("glpat", "gloas", "gldt", "glrt", "glrtr", "glcbt", "glptt", "glft",
                           "glimt", "glagent", "glsoat", "glffct")  # fmt: skip
_SK: Final = _after("k-", "sk-")

#: Every rule, in the order tried at a shared trigger: specific before generic.
RULES: Final[tuple[Rule, ...]] = (
    _pem(truncated=False),
    _pem(truncated=True),
    Rule("aws", _lits("AKIA", "ASIA", "ABIA", "ACCA"),
         _rx(_LB + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
         check=_token_check),
    Rule("aws", (_after("cret", "[Ss]ecret"), _after("CRET", "SECRET")),
         _rx(_AWS_CREDENTIAL_NAME  # ``AWS Secret Access Key [None]:`` is aws configure
             + _separator(":=|=>|=|:", before=r"(?:[ \t]{0,4}\[[^\]\r\n]{0,24}\])?")
             + r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
         back=2, check=_token_check, priority=CONTEXT),
    Rule("aws", _lits("IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdz", "FQoGZXIvYXdz"),  # session tokens
         _rx(_LB + r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz|FQoGZXIvYXdz)[A-Za-z0-9/+]{60,8192}={0,2}"),
         check=_token_check),
    Rule("google", _lits("AIza"), _rx(_LB + r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
         check=_token_check),
    Rule("gcp", (_after("9.", r"ya29\."),),
         _rx(_LB + r"ya29\.[0-9A-Za-z_-]{20,2048}(?:\.[0-9A-Za-z_-]{1,512}){0,4}"),
         back=3, check=_token_check),
    Rule("azure", _lits("Q~"),  # Azure AD client secrets: 3 characters, a digit, Q~, 31-34
         _rx(r"(?:(?<![A-Za-z0-9_~.-])|(?<=\\[nrt]))[A-Za-z0-9_~.]{3}[0-9]Q~"
             r"[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
         back=4, check=_token_check),
    Rule("azure", _lits("AccountKey", "SharedAccessKey"),
         _rx(r"(?:AccountKey|SharedAccessKey)" + _ASSIGN_SIMPLE
             + r"(?P<secret>[A-Za-z0-9+/]{20,128}={0,2})"),
         check=_token_check, priority=CONTEXT),
    Rule("azure", (_after("g=", "sig="),),  # SAS signature; ``&`` may sit as \u0026 in JSON
         _rx(r"(?:(?<![A-Za-z0-9_])|(?<=\\u0026))sig=(?P<secret>[A-Za-z0-9%+/]{16,256}={0,2})"),
         back=2, check=_token_check, priority=CONTEXT),
    Rule("github", _lits("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
         _rx(_LB + r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{40,251})"),
         check=_token_check),
    Rule("gitlab", _lits(*(p + "-" for p in _GITLAB_PREFIXES), "GR1348941"),
         _rx(_LB + r"(?:(?:" + "|".join(_GITLAB_PREFIXES) + r")-[A-Za-z0-9_-]{20,255}"
             r"(?:\.[A-Za-z0-9_-]{1,64}){0,3}|GR1348941[A-Za-z0-9_-]{20,64})"),
         check=_token_check),
    Rule("slack", _lits("xox", "xapp-"),
         _rx(_LB + r"(?:xox[abposre](?:\.xox[abposr])?-[0-9A-Za-z-]{10,512}"
             r"|xapp-[0-9]-[0-9A-Za-z-]{10,512})"),
         check=_token_check),
    Rule("slack", _lits("ks.slack.com/"),  # webhook URLs: the path is the secret
         _rx(r"hooks\.slack\.com/(?:services|workflows|triggers)/"
             r"(?P<secret>[A-Za-z0-9_/-]{16,256})"),
         back=3, check=_token_check),
    Rule("stripe", _lits("k_live_", "k_test_"),  # sk_ and rk_; pk_ is public
         _rx(_LB + r"[sr]k_(?:live|test)_[0-9A-Za-z]{10,247}"), back=1, check=_token_check),
    Rule("stripe", _lits("whsec_"), _rx(_LB + r"whsec_[A-Za-z0-9+/=]{24,128}"),
         check=_token_check),
    Rule("anthropic", (_SK,),
         _rx(_LB + r"sk-ant-[a-z]{2,10}[0-9]{2}-[A-Za-z0-9_-]{20,1024}"),
         back=1, check=_token_check),
    Rule("openai", (_SK,),  # project, service-account, admin and legacy keys
         _rx(_LB + r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,1024}"
             r"|[A-Za-z0-9]{32,256}(?![A-Za-z0-9_-]))"),
         back=1, check=_token_check),
    Rule("huggingface", (_after("_", "hf_"),),
         _rx(_LB + r"hf_[A-Za-z0-9]{30,64}(?![A-Za-z0-9_])"), back=2, check=_token_check),
    Rule("npm", (_after("_", "npm_"),),
         _rx(_LB + r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), back=3, check=_token_check),
    Rule("npm", (_after("ken", "_authToken"),),  # .npmrc; legacy tokens are UUIDs
         _rx(r"_authToken[ \t]{0,4}=[ \t]{0,4}" + _QUOTE + r"?(?P<secret>[^\s\"'`\\]{1,512})"),
         back=7, check=_npm_auth_check, priority=CONTEXT),
    Rule("pypi", (_after("AgE", "pypi-AgE"),),  # macaroons: base64 of a header naming pypi
         _rx(_LB + r"pypi-AgE[A-Za-z0-9_-]{50,4096}"), back=5, check=_token_check),
    Rule("twilio", (("SK", "(?=[0-9a-fA-F]{32})"),),  # API key SIDs
         _rx(_LB + r"SK[0-9a-fA-F]{32}(?![0-9A-Za-z])"), check=_token_check),
    Rule("twilio", (_after("wilio", "[Tt]wilio"), _after("WILIO", "TWILIO")),
         _rx(r"(?:[Tt]wilio|TWILIO)[A-Za-z_]{0,24}?(?:[Tt]oken|TOKEN|[Ss]ecret|SECRET)"
             + _ASSIGN_SIMPLE + r"(?P<secret>[0-9A-Za-z]{32})(?![0-9A-Za-z])"),
         back=1, check=_token_check, priority=CONTEXT),
    Rule("sendgrid", _lits("SG."),
         _rx(_LB + r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"), check=_token_check),
    Rule("jwt", (_after("J", "eyJ"),),  # header and payload are base64url JSON objects
         _rx(_LB + r"eyJ[A-Za-z0-9_-]{8,1024}\.e[wy][A-Za-z0-9_-]{8,16384}"
             r"\.[A-Za-z0-9_-]{16,2048}"),
         back=2, check=_token_check),
    Rule("url_password", (("@", r"(?<=[^\s\"'`<>/@\\]@)"),),  # only the password
         _rx(r"://[^\s:/?#@\"'`\\<>]{0,256}:(?P<secret>[^\s/\"'`\\<>]{1,256})@"),
         check=_url_check, locate=_url_start, priority=CONTEXT),
    Rule("auth_header", (_after("zation", "[Aa]uthorization"), _after("ZATION", "AUTHORIZATION")),
         _rx(r"(?:Authorization|authorization|AUTHORIZATION)" + _separator(":|=")
             + r"(?:(?P<scheme>" + _SCHEMES + r")[ ]{1,4})?"
             r"(?P<secret>[A-Za-z0-9._~+/:=-]{8,4096})"),
         back=7, check=_header_check, priority=CONTEXT),
    Rule("auth_header", _lits("Bearer", "BEARER"),
         _rx(r"(?:Bearer|BEARER)[ ]{1,4}(?P<secret>[A-Za-z0-9._~+/-]{16,4096}=*)"),
         check=_random_check, priority=CONTEXT),
    Rule("auth_header", (_after("Key", "[Aa]pi-Key", "[Ss]ubscription-Key"),
                         _after("key", "[Aa]pi-key", "[Ss]ubscription-key"),
                         _after("KEY", "API-KEY", "SUBSCRIPTION-KEY")),
         _rx(r"(?:(?<=[Aa]pi-)(?:Key|key)|(?<=API-)KEY|(?<=[Ss]ubscription-)(?:Key|key)"
             r"|(?<=SUBSCRIPTION-)KEY)" + _HEADER_VALUE),
         check=_token_check, priority=CONTEXT),
    Rule("auth_header", (_after("ken", "-[Tt]oken"), _after("KEN", "-TOKEN")),  # X-Auth-Token
         _rx(r"(?<=-)(?:Token|token|TOKEN)" + _HEADER_VALUE), back=2, check=_token_check,
         priority=CONTEXT),
    _generic(
        _keyword(["password"], "word"),
        _keyword(["passwd", "pwd"], "wd"),
        _keyword(["PASS", "PASSPHRASE"], "PASS", spell=False),
        password=True,
    ),
    _generic(_keyword(["secret"], "cret"), password=False),
    _generic(_keyword(["token"], "ken"), password=False),
    _generic(_keyword(_key_words(), "key"), password=False),
)  # fmt: skip
