"""What vendors know: token families.

Each family's tokens start with a prefix (``ghp_``, ``AKIA``, ``sk-ant-``) or sit under a name
only that vendor uses (``AccountKey=``, ``_authToken=``). Passwords a tool places by its own
syntax (``curl -u user:password``) are in :mod:`memspool.redact.rules_commands`. How a rule is
written, and the pieces it is written with, are described in :mod:`memspool.redact.rules`.

Where a token may start: a prefix that no word or identifier ends in (``ghp_``, ``glpat-``,
``xoxb-``, ``sk-ant-``, ``eyJ`` with a JWT's two dots) marks the start by itself, so the token
is found even glued to the text before it (``tokenghp_...``, ``%3Dghp_...``). A short or
word-like prefix (``AKIA``, ``SG.``, ``sk_test_``, ``hf_``) is found only at
:data:`~memspool.redact.rules.TOKEN_START`: not glued to a letter or digit, unless that
character ends an escape (``%3D``, ``\\u003d``, ``\\n``); ``risk_test_suite`` and
``log.MSG.format`` stay.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

from memspool.redact.rules import (
    AFTER_MARKER,
    ASSIGN_SIMPLE,
    CONTEXT,
    ESCAPED,
    GENERIC_MIN_LEN,
    QUOTE,
    TOKEN_START,
    Rule,
    after,
    is_placeholder,
    lits,
    rx,
    secret_of,
    separator,
    token_check,
)

__all__ = ["VENDOR_RULES"]


def _npm_auth_check(match: re.Match[str]) -> bool:
    secret = secret_of(match)
    return len(secret) >= GENERIC_MIN_LEN and not is_placeholder(secret)


#: Whitespace as it sits in a PEM block: real, or escaped one to three times.
_PEM_SEP: Final = r"(?:\\{1,7}[nrt]|[ \t\r\n])"
_PEM_LABEL: Final = (
    r"-----{edge}[ ](?:[A-Z0-9]{{1,12}}[ ]){{0,3}}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----"
)
#: ``Proc-Type: 4,ENCRYPTED`` and ``DEK-Info: ...`` in encrypted PEM, ``Version:`` in PGP.
_PEM_HEADER_LINE: Final = r"[A-Za-z][A-Za-z-]{0,31}:[ ][^\"\\\r\n]{0,128}"
#: A PEM body holds a run of base64 this long; a mention of the header alone (``if line ==
#: "-----BEGIN PRIVATE KEY-----"``) has none.
_PEM_BASE64_RUN: Final = re.compile(r"[A-Za-z0-9+/]{16}")


def _pem_check(match: re.Match[str]) -> bool:
    return _PEM_BASE64_RUN.search(match.group()) is not None


def _pem(*, truncated: bool) -> Rule:
    # With its END line, a body line is any base64. Without one (a cut slice, ``head
    # key.pem``) only long lines count, so that the prose after the block stays.
    line = r"[A-Za-z0-9+/=]{16,4096}" if truncated else r"[A-Za-z0-9+/=]{1,4096}"
    body = f"(?:{_PEM_SEP}{{1,8}}(?:{line}|{_PEM_HEADER_LINE})){{1,1024}}"
    pattern = _PEM_LABEL.format(edge="BEGIN") + body
    if not truncated:
        pattern += _PEM_SEP + "{0,8}" + _PEM_LABEL.format(edge="END")
    trigger = after("BEGIN", "-----BEGIN")
    return Rule("private_key", (trigger,), rx(pattern), back=5, check=_pem_check)


#: A PEM block in base64, as a kubeconfig's ``client-key-data``, a Kubernetes secret's
#: ``tls.key`` or a CI variable holds it: "-----BEGIN " encoded; on one line, or
#: wrapped as ``base64`` wraps it (76 a line, the breaks real or escaped in JSON; a
#: wrapped line of 16 or more, so a short word on the line after the key stays).
_PEM_BASE64: Final = (r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,16384}"
                      r"(?:(?:\r?\n|\\{1,7}n)[A-Za-z0-9+/]{16,16384}){0,512}={0,2}")
_PEM_BASE64_BREAK: Final = re.compile(r"\r?\n|\\{1,7}n")


def _pem_base64_check(match: re.Match[str]) -> bool:
    # A private key, alone or in a bundle after its certificate; a certificate alone
    # (``client-certificate-data``) is public.
    joined = _PEM_BASE64_BREAK.sub("", match.group())
    try:
        said = base64.b64decode(joined[: len(joined) // 4 * 4], validate=True)
    except (ValueError, binascii.Error):
        return False
    return b"PRIVATE KEY-----" in said


#: The names under which AWS secret access keys are written.
_AWS_CREDENTIAL_NAME: Final = (
    r"(?:(?<=[Aa][Ww][Ss][_-])(?:secret|SECRET)[_-]?(?:key|KEY)"
    r"|(?:secret|Secret|SECRET)[ _-]?(?:access|Access|ACCESS)[ _-]?(?:key|Key|KEY))"
)
_GITLAB_PREFIXES: Final = ("glpat", "gloas", "gldt", "glrt", "glrtr", "glcbt", "glptt", "glft",
                           "glimt", "glagent", "glsoat", "glffct")  # fmt: skip
_SK: Final = after("k-", "sk-")
#: How every token of this module begins: the distinct prefixes (see the module's
#: docstring), the short ones, and an Azure client secret's ``xxx0Q~``.
_TOKEN_PREFIX: Final = (
    r"(?:gh[pousr]_|github_pat_|(?:" + "|".join(_GITLAB_PREFIXES) + r")-|GR1348941|xox[abposre]"
    r"|whsec_|sk-ant-|pypi-AgE|ya29\.|eyJ|IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz|FQoGZXIvYXdz"
    r"|AKIA|ASIA|ABIA|ACCA|AIza|[sr]k_(?:live|test)_|sk-|hf_|npm_|SG\.|xapp-"
    r"|SK[0-9a-fA-F]{32}|AC[0-9a-f]{32}|[A-Za-z0-9_~.]{3}[0-9]Q~)"
)


def _end(chars: str) -> str:
    """The end of a token whose body is made of ``chars``: the next character is not one of
    them, or another token may begin there. A token glued to the next one then ends at the
    same place whether or not that one is found, and so once it is replaced."""
    return rf"(?:(?![{chars}])|(?={_TOKEN_PREFIX}))"


#: An Azure AD client secret: its start is not glued to a character its body may hold.
_AZURE_START: Final = rf"(?:(?<![A-Za-z0-9_~.-])(?!{AFTER_MARKER})|{ESCAPED})"
#: Its end: a character its body may not hold, or the full stop of a sentence (a period
#: before a blank, a quote, a bracket, an escape or the end), which its body may hold.
_AZURE_END: Final = rf"(?:{_end('A-Za-z0-9_~.-')}|(?=\.(?:[\s\"'`)\]\\]|\Z)))"
#: A Twilio account SID and the auth token written right after it, as ``Client(sid, token)``
#: takes them or as ``curl -u sid:token`` sends them.
_TWILIO_PAIR: Final = (
    TOKEN_START + r"AC[0-9a-f]{32}(?:" + QUOTE + r"?[ \t]{0,4},[ \t]{0,8}" + QUOTE + r"?|:)"
    r"(?P<secret>[0-9a-f]{32})" + _end("0-9A-Za-z")
)

#: Every vendor and tool rule, in the order tried at a shared trigger: specific first.
VENDOR_RULES: Final[tuple[Rule, ...]] = (
    _pem(truncated=False),
    _pem(truncated=True),
    Rule("private_key", lits("LS0tLS1CRUdJTi"), rx(_PEM_BASE64 + _end("A-Za-z0-9+/=")),
         check=_pem_base64_check),
    Rule("aws", lits("AKIA", "ASIA", "ABIA", "ACCA"),
         rx(TOKEN_START + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _end("A-Za-z0-9")),
         check=token_check),
    Rule("aws", (("cret", r"(?<=[Ss]ecret)(?=[ _-]?(?:[Kk]ey|KEY|[Aa]ccess|ACCESS))"),
                 ("CRET", r"(?<=SECRET)(?=[ _-]?(?:KEY|ACCESS|Key|Access))")),
         # ``AWS Secret Access Key [None]:`` is aws configure asking; ``aws configure set
         # aws_secret_access_key KEY`` gives the key after a blank.
         rx(_AWS_CREDENTIAL_NAME
            + "(?:" + separator(":=|=>|=|:", before=r"(?:[ \t]{0,4}\[[^\]\r\n]{0,24}\])?")
            + r"|[ \t]{1,8})(?P<secret>[A-Za-z0-9/+]{40})" + _end("A-Za-z0-9/+=")),
         back=2, check=token_check, priority=CONTEXT),
    Rule("aws", lits("IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdz", "FQoGZXIvYXdz"),  # session tokens
         rx(r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz|FQoGZXIvYXdz)[A-Za-z0-9/+]{60,8192}={0,2}"),
         check=token_check),
    Rule("google", lits("AIza"), rx(TOKEN_START + r"AIza[0-9A-Za-z_-]{35}" + _end("0-9A-Za-z_-")),
         check=token_check),
    Rule("gcp", (after("9.", r"ya29\."),),
         rx(r"ya29\.[0-9A-Za-z_-]{20,2048}(?:\.[0-9A-Za-z_-]{1,512}){0,4}"),
         back=3, check=token_check),
    Rule("azure", lits("Q~"),  # Azure AD client secrets: 3 characters, a digit, Q~, 31-34
         rx(_AZURE_START + r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}" + _AZURE_END),
         back=4, check=token_check),
    Rule("azure", lits("AccountKey", "SharedAccessKey"),
         rx(r"(?:AccountKey|SharedAccessKey)" + ASSIGN_SIMPLE
            + r"(?P<secret>[A-Za-z0-9+/]{20,128}={0,2})"),
         check=token_check, priority=CONTEXT),
    Rule("azure", (after("g=", "sig="),),  # SAS signature; ``&`` may sit as \u0026 or %26
         rx(rf"(?:(?<![A-Za-z0-9_])(?!{AFTER_MARKER})|{ESCAPED})sig=(?P<secret>[A-Za-z0-9%+/]{{16,256}}={{0,2}})"),
         back=2, check=token_check, priority=CONTEXT),
    Rule("github", lits("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
         rx(r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{40,251})"),
         check=token_check),
    Rule("gitlab", lits(*(p + "-" for p in _GITLAB_PREFIXES), "GR1348941"),
         rx(r"(?:(?:" + "|".join(_GITLAB_PREFIXES) + r")-[A-Za-z0-9_-]{20,255}"
            r"(?:\.[A-Za-z0-9_-]{1,64}){0,3}|GR1348941[A-Za-z0-9_-]{20,64})"),
         check=token_check),
    Rule("slack", lits("xox"),
         rx(r"xox[abposre](?:\.xox[abposr])?-[0-9A-Za-z-]{10,512}"), check=token_check),
    Rule("slack", lits("xapp-"),  # ``xapp-1-...``: a word may end in ``xapp``
         rx(TOKEN_START + r"xapp-[0-9]-[0-9A-Za-z-]{10,512}"), check=token_check),
    Rule("slack", lits("ks.slack.com/"),  # webhook URLs: the path is the secret
         rx(r"hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"(?P<secret>[A-Za-z0-9_/-]{16,256})"),
         back=3, check=token_check),
    Rule("stripe", lits("k_live_", "k_test_"),  # sk_ and rk_; pk_ is public
         rx(TOKEN_START + r"[sr]k_(?:live|test)_[0-9A-Za-z]{10,247}"), back=1,
         check=token_check),
    Rule("stripe", lits("whsec_"), rx(r"whsec_[A-Za-z0-9+/=]{24,128}"), check=token_check),
    Rule("anthropic", (_SK,),
         rx(r"sk-ant-[a-z]{2,10}[0-9]{2}-[A-Za-z0-9_-]{20,1024}"), back=1, check=token_check),
    Rule("openai", (_SK,),  # project, service-account, admin and legacy keys
         rx(TOKEN_START + r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,1024}"
            r"|[A-Za-z0-9]{32,256}" + _end("A-Za-z0-9_-") + ")"),
         back=1, check=token_check),
    Rule("huggingface", (after("_", "hf_"),),
         rx(TOKEN_START + r"hf_[A-Za-z0-9]{30,64}" + _end("A-Za-z0-9_")), back=2,
         check=token_check),
    Rule("npm", (after("_", "npm_"),),
         rx(TOKEN_START + r"npm_[A-Za-z0-9]{36}" + _end("A-Za-z0-9")), back=3, check=token_check),
    Rule("npm", (after("ken", "_authToken"),),  # .npmrc; legacy tokens are UUIDs
         rx(r"_authToken[ \t]{0,4}=[ \t]{0,4}" + QUOTE + r"?(?P<secret>[^\s\"'`\\]{1,512})"),
         back=7, check=_npm_auth_check, priority=CONTEXT),
    Rule("pypi", (after("AgE", "pypi-AgE"),),  # macaroons: base64 of a header naming pypi
         rx(r"pypi-AgE[A-Za-z0-9_-]{50,4096}"), back=5, check=token_check),
    Rule("twilio", (("SK", "(?=[0-9a-fA-F]{32})"),),  # API key SIDs
         rx(TOKEN_START + r"SK[0-9a-fA-F]{32}" + _end("0-9A-Za-z")), check=token_check),
    Rule("twilio", (("AC", "(?=[0-9a-f]{32})"),), rx(_TWILIO_PAIR), check=token_check),
    Rule("twilio", (after("wilio", "[Tt]wilio"), after("WILIO", "TWILIO")),
         rx(r"(?:[Tt]wilio|TWILIO)[A-Za-z_]{0,24}?(?:[Tt]oken|TOKEN|[Ss]ecret|SECRET)"
            + ASSIGN_SIMPLE + r"(?P<secret>[0-9A-Za-z]{32})" + _end("0-9A-Za-z")),
         back=1, check=token_check, priority=CONTEXT),
    Rule("sendgrid", lits("SG."),
         rx(TOKEN_START + r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"), check=token_check),
    # More vendors whose tokens carry a prefix of their own: the prefix names the vendor,
    # the body has the length and alphabet the vendor documents. Each is found by a
    # stretch of its prefix that starts with a character other rules already stop at
    # (``_``, ``G``, ``A``, ``P``, ``g``) or a rare one (``v``, ``N``, ``H``): a trigger
    # that starts with a common letter would make the scan stop all over the text.
    Rule("docker", (after("_pat_", "dckr_pat_"), after("_oat_", "dckr_oat_")),
         rx(r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,64}" + _end("A-Za-z0-9_-")),
         back=4, check=token_check),
    # HashiCorp Vault service, batch and recovery tokens.
    Rule("vault", (after("vs.", r"hvs\."), after("vb.", r"hvb\."), after("vr.", r"hvr\.")),
         rx(TOKEN_START + r"hv[sbr]\.[A-Za-z0-9_-]{24,512}" + _end("A-Za-z0-9_-")),
         back=1, check=token_check),
    Rule("digitalocean", (after("_v1_", "do[opr]_v1_"),),
         rx(r"do[opr]_v1_[a-f0-9]{64}" + _end("A-Za-z0-9")), back=3, check=token_check),
    Rule("shopify", (after("_", "shp(?:at|ss|ca|pa)_"),),
         rx(r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _end("A-Za-z0-9")), back=5,
         check=token_check),
    Rule("google", lits("GOCSPX-"),  # OAuth client secrets
         rx(r"GOCSPX-[A-Za-z0-9_-]{28}" + _end("A-Za-z0-9_-")), check=token_check),
    Rule("age", lits("AGE-SECRET-KEY-1"), rx(r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
         check=token_check),
    Rule("atlassian", lits("ATATT3"),
         rx(TOKEN_START + r"ATATT3[A-Za-z0-9_=-]{100,300}" + _end("A-Za-z0-9_=-")),
         check=token_check),
    Rule("postman", lits("PMAK-"), rx(TOKEN_START + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
         check=token_check),
    Rule("linear", (after("_api_", "lin_api_"),),
         rx(TOKEN_START + r"lin_api_[A-Za-z0-9]{40}" + _end("A-Za-z0-9")), back=3,
         check=token_check),
    Rule("notion", (after("_", "ntn_"),),
         rx(TOKEN_START + r"ntn_[0-9]{11}[A-Za-z0-9]{35}" + _end("A-Za-z0-9")), back=3,
         check=token_check),
    Rule("grafana", lits("glsa_", "glc_"),  # service-account and Cloud access tokens
         rx(TOKEN_START + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
            r"|glc_[A-Za-z0-9+/]{32,400}={0,2})" + _end("A-Za-z0-9+/=")),
         check=token_check),
    Rule("newrelic", lits("NRAK-"), rx(TOKEN_START + r"NRAK-[A-Z0-9]{27}" + _end("A-Za-z0-9")),
         check=token_check),
    Rule("terraform", (after("v1.", r"\.atlasv1\."),),  # Terraform Cloud / HCP Terraform
         rx(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}" + _end("A-Za-z0-9_=-")),
         back=20, check=token_check),
    Rule("heroku", lits("HRKU-"),
         rx(TOKEN_START + r"HRKU-[A-Za-z0-9_-]{20,128}" + _end("A-Za-z0-9_-")),
         check=token_check),
    Rule("pulumi", lits("pul-"), rx(TOKEN_START + r"pul-[a-f0-9]{40}" + _end("a-f0-9")),
         check=token_check),
    Rule("jwt", (after("J", "eyJ"),),  # header and payload are base64url JSON objects
         rx(r"eyJ[A-Za-z0-9_-]{8,1024}+\.e[wy][A-Za-z0-9_-]{8,16384}+\.[A-Za-z0-9_-]{16,2048}"),
         back=2, check=token_check),
)  # fmt: skip
