"""A labelled corpus for the redactor: realistic lines with synthetic secrets, and hard negatives.

Every secret here is made up: drawn from a seeded RNG in the shape of its format (prefix,
alphabet, length, GitHub's CRC32 tail, a JWT's JSON header) so no real key is ever written
down, and no literal token sits in the repository for a secret scanner to flag.

A positive case lists its secrets: after redaction no 8-character window of any of them may
survive. A negative case lists none: it must come out byte-identical.

The cases come in two sets: the tuned ones (:data:`POSITIVES`, :data:`NEGATIVES`), which the
rules were written against, and the held-out ones (:data:`HELD_OUT`), written after the rules
were done and never used to change them.
"""

# Sample lines are kept whole, each as it would appear in a shell, a file or a log, even
# where that is longer than the line limit.
# ruff: noqa: E501

from __future__ import annotations

import base64
import binascii
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

ALNUM: Final = string.ascii_letters + string.digits
HEX: Final = "0123456789abcdef"
B64: Final = ALNUM + "+/"
B64URL: Final = ALNUM + "-_"
BASE32: Final = string.ascii_uppercase + "234567"


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    secrets: tuple[str, ...] = ()
    family: str | None = None

    @property
    def negative(self) -> bool:
        return not self.secrets


# ------------------------------------------------------------------ secret generators


def tok(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64(rng: random.Random, nbytes: int, *, urlsafe: bool = False) -> str:
    raw = bytes(rng.getrandbits(8) for _ in range(nbytes))
    return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()


def _base62(number: int, width: int) -> str:
    digits = string.digits + string.ascii_letters
    out = ""
    while number:
        number, rem = divmod(number, 62)
        out = digits[rem] + out
    return out.rjust(width, "0")


def github(rng: random.Random, prefix: str = "ghp_") -> str:
    # 30 random characters and a 6-character base62 CRC32 of them, as GitHub issues them.
    body = tok(rng, 30)
    return prefix + body + _base62(binascii.crc32(body.encode()), 6)


def github_pat(rng: random.Random) -> str:
    return "github_pat_" + tok(rng, 22) + "_" + tok(rng, 59)


def aws_key_id(rng: random.Random, prefix: str = "AKIA") -> str:
    return prefix + tok(rng, 16, BASE32)


def aws_secret(rng: random.Random) -> str:
    return tok(rng, 40, B64)


def aws_session(rng: random.Random) -> str:
    return "IQoJb3JpZ2luX2Vj" + tok(rng, 340, B64)


def google_api_key(rng: random.Random) -> str:
    return "AIza" + tok(rng, 35, B64URL)


def gcp_access_token(rng: random.Random) -> str:
    return "ya29.a0" + tok(rng, 150, B64URL)


def azure_client_secret(rng: random.Random) -> str:
    return tok(rng, 3) + rng.choice(string.digits) + "Q~" + tok(rng, 34, ALNUM + "_~.-")


def azure_storage_key(rng: random.Random) -> str:
    return _b64(rng, 64)


def azure_sas_sig(rng: random.Random) -> str:
    sig = _b64(rng, 32)
    return sig.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")


def gitlab(rng: random.Random, prefix: str = "glpat-") -> str:
    return prefix + tok(rng, 20, ALNUM + "_-")


def slack_bot(rng: random.Random) -> str:
    return f"xoxb-{tok(rng, 12, string.digits)}-{tok(rng, 13, string.digits)}-{tok(rng, 24)}"


def slack_webhook_path(rng: random.Random) -> str:
    upper = string.ascii_uppercase + string.digits
    return f"T{tok(rng, 10, upper)}/B{tok(rng, 10, upper)}/{tok(rng, 24)}"


def stripe(rng: random.Random, prefix: str = "sk_live_") -> str:
    return prefix + tok(rng, 99)


def openai_project(rng: random.Random, kind: str = "proj") -> str:
    return f"sk-{kind}-" + tok(rng, 74, B64URL) + "T3BlbkFJ" + tok(rng, 74, B64URL)


def openai_legacy(rng: random.Random) -> str:
    return "sk-" + tok(rng, 20) + "T3BlbkFJ" + tok(rng, 20)


def anthropic(rng: random.Random, kind: str = "api03") -> str:
    return f"sk-ant-{kind}-" + tok(rng, 93, B64URL) + "AA"


def huggingface(rng: random.Random) -> str:
    return "hf_" + tok(rng, 34)


def npm(rng: random.Random) -> str:
    return "npm_" + tok(rng, 36)


def pypi(rng: random.Random) -> str:
    return "pypi-AgEIcHlwaS5vcmc" + _b64(rng, 120, urlsafe=True).rstrip("=")


def twilio_sid(rng: random.Random) -> str:
    return "SK" + tok(rng, 32, HEX)


def twilio_account_sid(rng: random.Random) -> str:
    return "AC" + tok(rng, 32, HEX)


def uuid4(rng: random.Random) -> str:
    h = tok(rng, 32, HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def sendgrid(rng: random.Random) -> str:
    return "SG." + tok(rng, 22, B64URL) + "." + tok(rng, 43, B64URL)


def jwt(rng: random.Random) -> str:
    def part(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    header = part({"alg": "HS256", "typ": "JWT"})
    payload = part({"sub": tok(rng, 12), "iat": rng.randrange(1_700_000_000, 1_800_000_000)})
    return f"{header}.{payload}.{_b64(rng, 32, urlsafe=True).rstrip('=')}"


def password(rng: random.Random, n: int = 14) -> str:
    # Mixed classes, but none of the characters that end a bare value in code.
    return tok(rng, n - 2) + rng.choice("!@#%^*") + rng.choice(string.digits)


#: How DER bodies begin: an RSA private key (base64 ``MIIEpAIBAAKCAQEA``...) and a public
#: key (``MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A``...); certificates start much like the latter.
PRIVATE_DER: Final = b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00"
PUBLIC_DER: Final = bytes.fromhex("30820122300d06092a864886f70d01010105000382010f00")


def pem_lines(rng: random.Random, nbytes: int = 600, der: bytes = PRIVATE_DER) -> list[str]:
    # The DER header makes the body look right; the rest is noise of the right length.
    body = base64.b64encode(der + rng.randbytes(nbytes)).decode()
    return [body[i : i + 64] for i in range(0, len(body), 64)]


def pem(rng: random.Random, label: str = "RSA PRIVATE KEY") -> tuple[str, list[str]]:
    lines = pem_lines(rng)
    block = "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])
    return block, lines


#: One generator per strong family, for property tests that inject secrets anywhere.
STRONG_GENERATORS: Final = {
    "aws": aws_key_id,
    "google": google_api_key,
    "gcp": gcp_access_token,
    "azure": azure_client_secret,
    "github": github,
    "gitlab": gitlab,
    "slack": slack_bot,
    "stripe": stripe,
    "openai": openai_project,
    "anthropic": anthropic,
    "huggingface": huggingface,
    "npm": npm,
    "pypi": pypi,
    "twilio": twilio_sid,
    "sendgrid": sendgrid,
    "jwt": jwt,
}


# ----------------------------------------------------------------------------- cases

_R: Final = random.Random(20261129)  # seeded: the same corpus on every run


def _line(record: dict[str, object]) -> str:
    """A record as Claude Code writes it to a transcript: one compact JSON line."""
    return json.dumps(record, separators=(",", ":"))


def _user(text: str) -> str:
    return _line({"type": "user", "message": {"role": "user", "content": text},
                  "uuid": "5d0c1e4a-3b7f-4a8e-9c2d-1f6e8a9b0c3d"})


def _tool_use(command: str) -> str:
    return _line({"type": "assistant", "message": {"id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                  "role": "assistant", "content": [{"type": "tool_use",
                  "id": "toolu_01A09q90qw90lq917835lq9", "name": "Bash",
                  "input": {"command": command, "description": "Run it"}}]}})


def _tool_result(content: str) -> str:
    return _line({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result",
                  "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": content}]}})


def _thinking(text: str) -> str:
    return _line({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": text, "signature": "EqoBCkgIARABGAIiQL" + tok(_R, 300, B64)},
    ]}})


def _positives() -> list[Case]:
    r = _R
    c: list[Case] = []

    def add(name: str, text: str, *secrets: str, family: str | None = None) -> None:
        c.append(Case(name, text, tuple(secrets), family))

    # --- shells
    s = aws_key_id(r)
    add("shell-aws-key-id", f"export AWS_ACCESS_KEY_ID={s}", s, family="aws")
    s = aws_key_id(r, "ASIA")
    add("shell-aws-asia", f"$ aws sts get-caller-identity  # using {s}", s, family="aws")
    s = aws_secret(r)
    add("shell-aws-secret", f"export AWS_SECRET_ACCESS_KEY={s}", s, family="aws")
    s = aws_session(r)
    add("shell-aws-session", f"aws configure set aws_session_token {s}", s, family="aws")
    s = tok(r, 40)
    add("shell-curl-bearer", f'curl -sS -H "Authorization: Bearer {s}" https://api.example.com/v1/items',
        s, family="auth_header")
    s = gitlab(r)
    add("shell-git-clone-gitlab", f"git clone https://oauth2:{s}@gitlab.com/group/repo.git", s,
        family="gitlab")
    s = github(r, "ghs_")
    add("shell-git-remote-ghs",
        f"git remote set-url origin https://x-access-token:{s}@github.com/org/repo.git", s,
        family="github")
    s = password(r)
    add("shell-psql-url", f'psql "postgresql://app_user:{s}@db.internal:5432/app"', s,
        family="url_password")
    s = password(r)
    add("shell-docker-login-flag",
        f"docker login --username deploy --password {s} registry.example.com", s,
        family="generic")
    s = npm(r)
    add("shell-npm-config", f"npm config set //registry.npmjs.org/:_authToken {s}", s, family="npm")
    s = f"{tok(r, 8, HEX)}-{tok(r, 4, HEX)}-4{tok(r, 3, HEX)}-a{tok(r, 3, HEX)}-{tok(r, 12, HEX)}"
    add("shell-npmrc-uuid", f'echo "//registry.npmjs.org/:_authToken={s}" >> ~/.npmrc', s,
        family="npm")
    s = pypi(r)
    add("shell-twine", f"twine upload -u __token__ -p {s} dist/*", s, family="pypi")
    s = stripe(r)
    add("shell-heroku-stripe", f"heroku config:set STRIPE_SECRET_KEY={s} -a shop", s,
        family="stripe")
    s = github(r)
    add("shell-gh-auth", f"gh auth login --with-token <<< {s}", s, family="github")
    s = openai_project(r)
    add("shell-openai-env", f"export OPENAI_API_KEY={s}", s, family="openai")
    s = anthropic(r)
    add("shell-anthropic-env", f"export ANTHROPIC_API_KEY={s}", s, family="anthropic")
    s = huggingface(r)
    add("shell-hf-inline", f"HF_TOKEN={s} python train.py --push-to-hub", s, family="huggingface")
    s = slack_webhook_path(r)
    add("shell-slack-webhook", "curl -X POST -H 'Content-type: application/json' --data "
        f"'{{\"text\":\"deploy done\"}}' https://hooks.slack.com/services/{s}", s, family="slack")
    s = openai_legacy(r)
    add("shell-openai-legacy", f'curl https://api.openai.com/v1/models -H "Authorization: Bearer {s}"',
        s, family="openai")
    s = password(r)
    add("shell-kubectl-literal",
        f"kubectl create secret generic db --from-literal=password={s}", s, family="generic")
    s = azure_storage_key(r)
    add("shell-az-account-key", f"az storage blob list --account-name acct --account-key {s}", s,
        family="generic")
    s = azure_sas_sig(r)
    add("shell-azure-sas", 'curl "https://acct.blob.core.windows.net/c/report.csv?sv=2022-11-02'
        f'&ss=b&srt=o&sp=r&se=2026-12-01T00:00:00Z&spr=https&sig={s}"', s, family="azure")
    s = slack_bot(r)
    add("shell-slack-bot", f"export SLACK_BOT_TOKEN={s}", s, family="slack")
    s = sendgrid(r)
    add("shell-sendgrid", f"export SENDGRID_API_KEY={s}", s, family="sendgrid")
    s = tok(r, 32, HEX)
    add("shell-twilio-auth", f"export TWILIO_AUTH_TOKEN={s}", s, family="twilio")
    s = google_api_key(r)
    add("shell-google-key", f'curl "https://maps.googleapis.com/maps/api/geocode/json?key={s}&address=Paris"',
        s, family="google")
    s = gcp_access_token(r)
    add("shell-gcloud-token", f"$ gcloud auth print-access-token\n{s}", s, family="gcp")
    s = azure_client_secret(r)
    add("shell-azure-client-secret", f"export AZURE_CLIENT_SECRET={s}", s, family="azure")
    s = github_pat(r)
    add("shell-github-pat", f"export GH_TOKEN={s}", s, family="github")
    s = stripe(r, "whsec_")
    add("shell-stripe-listen", f"> Ready! Your webhook signing secret is {s} (^C to quit)", s,
        family="stripe")

    # --- .env files
    s = password(r)
    add("env-database-url", f"DATABASE_URL=postgres://app:{s}@localhost:5432/app", s,
        family="url_password")
    s = password(r)
    add("env-db-password", f"DB_PASSWORD={s}", s, family="generic")
    s = "django-insecure-" + tok(r, 40, ALNUM + "!@#%^*(-_=+")
    add("env-django-secret", f"SECRET_KEY='{s}'", s, family="generic")
    s = tok(r, 64, HEX)
    add("env-jwt-secret", f"JWT_SECRET={s}", s, family="generic")
    s = password(r)
    add("env-redis-url", f"REDIS_URL=redis://:{s}@cache:6379/0", s, family="url_password")
    s = password(r)
    add("env-smtp-pass", f"SMTP_PASS={s}", s, family="generic")
    s = _b64(r, 32)
    add("env-nextauth", f"NEXTAUTH_SECRET={s}", s, family="generic")
    s = "rootpass" + tok(r, 2, string.digits)
    add("env-mysql-root", f"MYSQL_ROOT_PASSWORD={s}", s, family="generic")
    s = "FwoGZXIvYXdzE" + tok(r, 300, B64)
    add("env-aws-session-legacy", f"AWS_SESSION_TOKEN={s}", s, family="aws")
    s = slack_webhook_path(r)
    add("env-slack-webhook", f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{s}", s,
        family="slack")
    s = _b64(r, 32)
    add("env-encryption-key", f"ENCRYPTION_KEY={s}", s, family="generic")
    s = _b64(r, 32)
    add("env-laravel-app-key", f"APP_KEY=base64:{s}", s, family="generic")
    s = tok(r, 40, HEX)
    add("env-oauth-client-secret", f"GITHUB_CLIENT_SECRET={s}", s, family="generic")
    s = openai_project(r, "svcacct")
    add("env-openai-svcacct", f'OPENAI_API_KEY="{s}"', s, family="openai")
    s = "s3cr3t-P@ss-" + tok(r, 4)
    add("env-single-quoted", f"POSTGRES_PASSWORD='{s}'", s, family="generic")
    s = github(r)
    add("npmrc-github-registry", f"//npm.pkg.github.com/:_authToken={s}", s)
    s = pypi(r)
    add("pypirc", f"[pypi]\nusername = __token__\npassword = {s}", s, family="pypi")
    s = anthropic(r, "admin01")
    add("env-anthropic-admin", f"ANTHROPIC_ADMIN_KEY={s}", s, family="anthropic")
    s = anthropic(r, "oat01")
    add("env-claude-oauth", f"CLAUDE_CODE_OAUTH_TOKEN={s}", s, family="anthropic")
    s = openai_project(r, "admin")
    add("env-openai-admin", f"OPENAI_ADMIN_KEY={s}", s, family="openai")
    s = gitlab(r, "glrt-")
    add("env-gitlab-runner", f"RUNNER_TOKEN={s}", s, family="gitlab")
    s = stripe(r, "rk_test_")
    add("env-stripe-restricted", f"STRIPE_RESTRICTED_KEY={s}", s, family="stripe")

    # --- code
    s = openai_project(r)
    add("py-openai-client", f'client = OpenAI(api_key="{s}")', s, family="openai")
    s = stripe(r, "sk_test_")
    add("py-stripe", f'stripe.api_key = "{s}"', s, family="stripe")
    s = github(r)
    add("js-octokit", f'const octokit = new Octokit({{ auth: "{s}" }});', s, family="github")
    s = tok(r, 32, HEX)
    add("py-api-key-const", f'API_KEY = "{s}"', s, family="generic")
    s = password(r)
    add("go-password", f'\tpassword := "{s}"', s, family="generic")
    s = base64.b64encode(password(r).encode()).decode()
    add("k8s-secret-data", f"data:\n  username: YWRtaW4=\n  password: {s}", s, family="generic")
    s = "s3cret" + tok(r, 8)
    add("compose-password", f"    environment:\n      POSTGRES_PASSWORD: {s}", s, family="generic")
    block, lines = pem(r, "PRIVATE KEY")
    add("gcp-service-account", json.dumps({"type": "service_account", "project_id": "demo-1234",
        "private_key_id": tok(r, 40, HEX), "private_key": block + "\n",
        "client_email": "svc@demo-1234.iam.gserviceaccount.com"}, indent=2), *lines,
        family="private_key")
    block, lines = pem(r)
    add("pem-rsa", f"$ cat deploy/id_rsa.pem\n{block}\n$ ls", *lines, family="private_key")
    block, lines = pem(r, "OPENSSH PRIVATE KEY")
    add("pem-openssh", block, *lines, family="private_key")
    lines = pem_lines(r)
    add("pem-encrypted", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
        "DEK-Info: AES-128-CBC,3F2A8E0B1C4D5E6F7A8B9C0D1E2F3A4B\n\n" + "\n".join(lines)
        + "\n-----END RSA PRIVATE KEY-----", *lines, family="private_key")
    block, lines = pem(r, "PGP PRIVATE KEY BLOCK")
    add("pem-pgp", block.replace("BLOCK-----\n", "BLOCK-----\nVersion: GnuPG v2\n\n", 1), *lines,
        family="private_key")
    block, lines = pem(r, "EC PRIVATE KEY")
    add("pem-ec-one-line", block.replace("\n", " "), *lines, family="private_key")
    lines = pem_lines(r)
    add("pem-truncated", "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines[:5])
        + "\n... (output truncated)", *lines[:5], family="private_key")
    s = "".join(r.choice(HEX) for _ in range(128))
    add("rails-secret-key-base", f'config.secret_key_base = "{s}"', s, family="generic")
    s = jwt(r)
    add("ts-supabase", f'const supabase = createClient(SUPABASE_URL, "{s}");', s, family="jwt")
    s = jwt(r)
    add("java-jwt", f'String token = "{s}";', s, family="jwt")
    s = azure_client_secret(r)
    add("tf-azure-secret", f'  client_secret = "{s}"', s, family="azure")
    s = "P@ssw0rd" + tok(r, 6)
    add("csharp-connstr", f'"Server=tcp:x.database.windows.net;Database=db;User ID=admin;Password={s};"',
        s, family="generic")
    s = azure_storage_key(r)
    add("azure-storage-connstr", "DefaultEndpointsProtocol=https;AccountName=acct;"
        f"AccountKey={s};EndpointSuffix=core.windows.net", s, family="azure")
    s = _b64(r, 32)
    add("azure-servicebus", "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName="
        f"RootManageSharedAccessKey;SharedAccessKey={s}", s, family="azure")
    s = tok(r, 32)
    add("py-x-api-key", f'requests.get(url, headers={{"X-Api-Key": "{s}"}})', s,
        family="auth_header")
    s = anthropic(r)
    add("py-anthropic-client", f'client = anthropic.Anthropic(api_key="{s}")', s,
        family="anthropic")
    app_id = "A" + tok(r, 10, string.ascii_uppercase + string.digits)
    s = f"xapp-1-{app_id}-{tok(r, 13, string.digits)}-{tok(r, 64, HEX)}"
    add("slack-app-token", f'app = App(token=os.environ["SLACK_BOT_TOKEN"], app_token="{s}")', s,
        family="slack")
    s = huggingface(r)
    add("py-hf-api", f'api = HfApi(token="{s}")', s, family="huggingface")
    s = tok(r, 48)
    add("py-annotated", f'API_TOKEN: str = "{s}"', s, family="generic")
    s = password(r)
    add("yaml-password", f"database:\n  user: app\n  password: {s}\n  host: db", s,
        family="generic")
    s = "hunter2" + tok(r, 3, string.digits)
    add("yaml-plain-password", f"smtp:\n  password: {s}", s, family="generic")
    s = tok(r, 40)
    add("json-client-secret", json.dumps({"client_id": "abc.apps.example.com", "client_secret": s}),
        s, family="generic")
    s = github(r, "gho_")
    add("ruby-hash-rocket", f'client = Octokit::Client.new(:access_token => "{s}")', s,
        family="github")
    s = password(r)
    add("cli-mysql-flag", f"mysqldump --user=root --password={s} shop > dump.sql", s,
        family="generic")

    # --- logs
    s = github(r)
    add("log-headers-dict", "2026-11-29T10:02:11Z DEBUG http: GET /user headers={'Authorization': "
        f"'token {s}'}}", s, family="github")
    s = password(r)
    add("log-proxy-url", f"DEBUG urllib3: Starting new HTTPS connection (1): https://svc:{s}@proxy.corp:8080",
        s, family="url_password")
    s = anthropic(r)
    add("log-x-api-key", f"WARN request failed: 401 Unauthorized x-api-key={s}", s,
        family="anthropic")
    s = azure_client_secret(r)
    add("log-azure-secret", f"INFO azure.identity: tenant=contoso client_secret={s}", s,
        family="azure")
    s = stripe(r)
    add("log-stripe-error", f"stripe.error.AuthenticationError: Invalid API Key provided: {s}", s,
        family="stripe")
    s = base64.b64encode(f"deploy:{password(r)}".encode()).decode()
    add("log-basic-auth", f"> Authorization: Basic {s}", s, family="auth_header")
    s = gcp_access_token(r)
    add("log-oauth-response", json.dumps({"access_token": s, "expires_in": 3599,
        "token_type": "Bearer"}), s, family="gcp")
    s1, s2 = tok(r, 40), tok(r, 40)
    add("log-token-pair", json.dumps({"access_token": s1, "refresh_token": s2}), s1, s2,
        family="generic")
    s = tok(r, 36)
    add("log-x-auth-token", f"> X-Auth-Token: {s}", s, family="auth_header")
    s = gitlab(r)
    add("log-gitlab-header", f'curl --header "PRIVATE-TOKEN: {s}" https://gitlab.example.com/api/v4/projects',
        s, family="gitlab")
    s = twilio_sid(r)
    add("log-twilio-sid", f"twilio: authenticating with API key {s}", s, family="twilio")
    s = jwt(r)
    add("log-cookie-jwt", f"set-cookie: session={s}; Path=/; HttpOnly", s, family="jwt")

    # --- transcript lines (JSONL as Claude Code writes it)
    s1, s2 = password(r), tok(r, 32, HEX)
    add("jsonl-user-env", _user(f"here is my .env:\nDB_PASSWORD={s1}\nAPI_KEY={s2}\nDEBUG=1"),
        s1, s2, family="generic")
    s = tok(r, 40)
    add("jsonl-tool-use-curl", _tool_use(f"curl -H 'Authorization: Bearer {s}' https://api.example.com/me"),
        s, family="auth_header")
    s1, s2 = github(r), aws_secret(r)
    add("jsonl-tool-result-env", _tool_result(f"GITHUB_TOKEN={s1}\nAWS_SECRET_ACCESS_KEY={s2}\n"),
        s1, s2)
    s = openai_project(r)
    add("jsonl-thinking", _thinking(f"The user pasted their key {s} - I should tell them to rotate it."),
        s, family="openai")
    block, lines = pem(r, "PRIVATE KEY")
    add("jsonl-write-pem", _line({"type": "assistant", "message": {"content": [{"type": "tool_use",
        "name": "Write", "input": {"file_path": "/srv/app/key.pem", "content": block + "\n"}}]}}),
        *lines, family="private_key")
    s = password(r)
    inner = json.dumps({"db": {"host": "db", "password": s}})
    add("jsonl-double-escaped", _tool_result(json.dumps(inner)), s, family="generic")
    block, lines = pem(r)
    add("jsonl-double-escaped-pem", _tool_result(json.dumps(json.dumps({"key": block}))), *lines,
        family="private_key")
    s = tok(r, 32, HEX)
    add("jsonl-edit-tool-result", _line({"type": "user", "toolUseResult": {"filePath": "settings.py",
        "oldString": "API_KEY = None", "newString": f'API_KEY = "{s}"'}}), s, family="generic")
    s = github(r)
    add("jsonl-progress", _line({"type": "progress", "data": {"type": "hook_progress",
        "command": f"GH_TOKEN={s} gh pr list"}}), s, family="github")
    s = slack_bot(r)
    add("jsonl-compact-summary", _line({"type": "user", "isCompactSummary": True, "message": {
        "content": f"Summary: configured the bot with {s} and deployed"}}), s, family="slack")
    s = jwt(r)
    add("jsonl-assistant-jwt", _line({"type": "assistant", "message": {"content": [{"type": "text",
        "text": f"Decoded token `{s}` carries sub and iat."}]}}), s, family="jwt")

    # --- credentials placed by a command's or a file's own syntax
    sid, s = twilio_account_sid(r), tok(r, 32, HEX)
    add("py-twilio-client", f'client = Client("{sid}", "{s}")', s, family="twilio")
    sid, s = twilio_account_sid(r), tok(r, 32, HEX)
    add("js-twilio-client", f"const client = require('twilio')('{sid}', '{s}');", s,
        family="twilio")
    sid, s = twilio_account_sid(r), tok(r, 32, HEX)
    add("shell-twilio-curl", f"curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages.json "
        f"-u {sid}:{s}", s, family="twilio")
    s = tok(r, 40)
    add("json-x-api-key-dict", json.dumps({"headers": {"X-API-Key": s, "Accept": "application/json"}}),
        s, family="auth_header")
    s = tok(r, 32, HEX)
    add("py-x-api-key-lower", f"resp = httpx.get(url, headers={{'x-api-key': '{s}'}})", s,
        family="auth_header")
    s = tok(r, 36, ALNUM + "-")
    add("py-x-api-key-upper", f'HEADERS = {{"X-API-KEY": "{s}", "User-Agent": "bot/1.0"}}', s,
        family="auth_header")
    s = password(r)
    add("shell-curl-user", f"curl -sS -u deploy:{s} https://ci.example.com/api/json", s,
        family="cli_password")
    s = password(r)
    add("shell-curl-user-long", f'curl --user "admin:{s}" -X POST https://registry.example.com/v2/',
        s, family="cli_password")
    s = "hunter" + tok(r, 4, string.digits)
    add("jsonl-curl-user", _tool_use(f"curl -fsS -u 'bob:{s}' https://example.com/status"), s,
        family="cli_password")
    s = "S3cret" + tok(r, 3, string.digits)
    add("shell-mysql-glued", f"mysql -u root -p{s} shop < schema.sql", s, family="cli_password")
    s = password(r, 10)
    add("shell-mysql-short-flags", f"docker exec -it db mysql -uroot -p'{s}' -e 'show databases'", s,
        family="cli_password")
    s = password(r)
    add("shell-mysqldump-glued", f"mysqldump -h db -u app -p{s} --single-transaction app > app.sql",
        s, family="cli_password")
    s = uuid4(r)
    add("netrc-one-line", f"machine example.com login bob password {s}", s, family="netrc")
    s = tok(r, 40, HEX)
    add("netrc-multi-line", f"$ cat ~/.netrc\nmachine api.heroku.com\n  login me@example.com\n"
        f"  password {s}\nmachine git.heroku.com\n  login me@example.com\n  password {s}", s,
        family="netrc")
    s = password(r)
    add("jsonl-netrc-echo", _tool_use(f'echo "machine ftp.example.org login deploy password {s}" >> ~/.netrc'),
        s, family="netrc")
    _more_vendors(add)
    return c


def _more_vendors(add: Callable[..., None]) -> None:
    """Vendors added on 2026-12-04, after an audit found their tokens stored (a stream of
    their own, so the cases above keep their secrets)."""
    r = random.Random(20261204)
    upper = string.ascii_uppercase + string.digits
    s = "dckr_pat_" + tok(r, 27, B64URL)
    add("docker-login-pat", f"echo {s} | docker login -u ci-bot --password-stdin", s,
        family="docker")
    s = "hvs." + tok(r, 91, B64URL)
    add("vault-login", _tool_use(f"vault login {s} && vault kv get secret/app"), s, family="vault")
    s = "dop_v1_" + tok(r, 64, HEX)
    add("doctl-auth", f"doctl auth init -t {s}", s, family="digitalocean")
    s = "shpat_" + tok(r, 32, HEX)
    add("shopify-header", f"curl -H 'X-Shopify-Access-Token: {s}' https://shop.myshopify.com/admin/api/2024-01/products.json",
        s, family="shopify")
    s = "GOCSPX-" + tok(r, 28, B64URL)
    add("google-oauth-client-secret", f'{{"web": {{"client_id": "1234-abc.apps.googleusercontent.com", "client_secret": "{s}"}}}}',
        s, family="google")
    s = "AGE-SECRET-KEY-1" + tok(r, 58, upper)
    add("age-identity", f"# created: 2026-12-04T10:00:00Z\n# public key: age1qqqq\n{s}", s,
        family="age")
    s = "ATATT3" + tok(r, 186, B64URL)
    add("atlassian-api-token", f"JIRA_API_TOKEN is {s}", s, family="atlassian")
    s = f"PMAK-{tok(r, 24, HEX)}-{tok(r, 34, HEX)}"
    add("postman-key", f"newman run coll.json --postman-api-key {s}", s, family="postman")
    s = "lin_api_" + tok(r, 40)
    add("linear-key", _thinking(f"The user pasted their Linear key {s}; do not echo it."), s,
        family="linear")
    s = "ntn_" + tok(r, 11, string.digits) + tok(r, 35)
    add("notion-integration", f"const notion = new Client({{ auth: '{s}' }})", s, family="notion")
    s = f"glsa_{tok(r, 32)}_{tok(r, 8, HEX)}"
    add("grafana-sa", f"grafana-cli --homepath /usr/share/grafana --config x admin token {s}", s,
        family="grafana")
    s = "NRAK-" + tok(r, 27, upper)
    add("newrelic-user-key", f"newrelic profile add --apiKey {s} --region US", s, family="newrelic")
    s = f"{tok(r, 14)}.atlasv1.{tok(r, 67, B64URL)}"
    add("terraform-cloud", f'credentials "app.terraform.io" {{\n  token = "{s}"\n}}', s,
        family="terraform")
    s = "HRKU-" + tok(r, 60, B64URL)
    add("heroku-hrku", f"heroku auth:token prints {s}", s, family="heroku")
    s = tok(r, 40, B64)
    add("aws-configure-set", f"aws configure set aws_secret_access_key {s}", s, family="aws")
    block, _ = pem(r)
    s = base64.b64encode(block.encode()).decode()
    add("kubeconfig-client-key-data", f"users:\n- name: admin\n  user:\n    client-key-data: {s}\n",
        s, family="private_key")
    _more_commands(add)


def _more_commands(add: Callable[..., None]) -> None:
    """Passwords on command lines and in SQL and config names, added on 2026-12-04 after an
    audit found them stored (a stream of their own)."""
    r = random.Random(202612042)
    cli = "cli_password"
    s = password(r)
    add("sshpass-p", _tool_use(f"sshpass -p '{s}' ssh -o StrictHostKeyChecking=no deploy@10.0.4.12 uptime"), s, family=cli)
    s = password(r, 12)
    add("sshpass-glued", f"sshpass -p{s} rsync -a dist/ web01:/srv/app", s, family=cli)
    s = tok(r, 24)
    add("redis-cli-a", f"redis-cli -h cache.internal -p 6379 -a {s} --no-auth-warning info memory", s, family=cli)
    s = password(r)
    add("docker-login-p", f"docker login registry.example.com -u ci -p {s}", s, family=cli)
    s = password(r)
    add("htpasswd-b", f"htpasswd -bc /etc/nginx/.htpasswd admin {s}", s, family=cli)
    s = password(r)
    add("htpasswd-nb", f"htpasswd -nbB admin {s} > users.txt", s, family=cli)
    s = password(r)
    add("smbclient-user", f"smbclient //files/share -U 'CORP\\svc_backup%{s}' -c ls", s, family=cli)
    s = password(r)
    add("sqlcmd-P", f'sqlcmd -S db,1433 -U sa -P "{s}" -Q "SELECT @@VERSION"', s, family=cli)
    s = password(r)
    add("az-login-sp", f"az login --service-principal -u 0f1e2d3c -p {s} --tenant contoso", s, family=cli)
    s = password(r)
    add("rabbitmqctl-add-user", f"rabbitmqctl add_user orders {s} && rabbitmqctl set_permissions orders '.*' '.*' '.*'", s, family=cli)
    s = password(r)
    add("mysqladmin-password", f"mysqladmin -u root password {s}", s, family=cli)
    s = password(r)
    add("nmcli-wifi", f"nmcli dev wifi connect Lab-5G password {s}", s, family=cli)
    s = password(r)
    add("keytool-storepass", f"keytool -importcert -alias ca -file ca.pem -keystore trust.jks -storepass {s} -noprompt", s, family=cli)
    s = "ghs" + tok(r, 30)
    add("gh-secret-set", f'gh secret set DEPLOY_KEY --repo org/app --body "{s}"', s, family=cli)
    s = password(r)
    add("mongosh-p", f'mongosh "mongodb://db0:27017/admin" -u root -p {s}', s, family=cli)
    s = password(r)
    add("openssl-passout", f"openssl pkcs12 -export -in cert.pem -inkey key.pem -passout pass:{s} -out bundle.p12", s, family=cli)
    s = password(r)
    add("openssl-k", f"openssl enc -aes-256-cbc -pbkdf2 -k {s} -in backup.tar -out backup.enc", s, family=cli)
    s = password(r)
    add("apksigner-ks-pass", f"apksigner sign --ks release.jks --ks-pass pass:{s} app-release.apk", s, family=cli)
    s = password(r)
    add("ldapsearch-w", f'ldapsearch -x -H ldap://dc1 -D "cn=svc,dc=corp" -w {s} -b "dc=corp"', s, family=cli)
    s = password(r, 12)
    add("sql-with-password", f"CREATE ROLE reporting WITH LOGIN PASSWORD '{s}';", s, family="sql_password")
    s = password(r, 12)
    add("sql-identified-by", f"ALTER USER 'app'@'%' IDENTIFIED WITH caching_sha2_password BY '{s}';", s,
        family="sql_password")
    s = password(r)
    add("yaml-smtp-pass", f"smtp:\n  host: mail.example.com\n  smtp_pass: {s}\n", s, family="generic")
    s = password(r)
    add("ansible-become-pass", f"[web]\nweb01 ansible_user=deploy ansible_become_pass={s}", s, family="generic")
    s = password(r)
    add("nodemailer-pass", f"auth: {{ user: 'noreply@example.com', pass: '{s}' }}", s, family="generic")
    s = password(r)
    add("camel-pass", f'const smtpPass = "{s}";', s, family="generic")
    s = password(r)
    add("ssh-passphrase", f"passphrase: {s}", s, family="generic")
    s = "pul-" + tok(r, 40, HEX)
    add("pulumi-token", f"export PULUMI_ACCESS_TOKEN={s}\npulumi login", s, family="pulumi")
    # Found by a review of those rules: JSON-escaped line breaks, continuations, flags apart,
    # quoted words with blanks, and a password in a URL or SQL inside the command.
    s = password(r)
    add("sshpass-after-escaped-newline", '{"command":"cd /srv\\nsshpass -p ' + s + ' ssh u@h"}', s, family=cli)
    s = password(r)
    add("docker-login-continued", f"docker login \\\n  -u ci \\\n  -p {s} registry.example.com", s, family=cli)
    s = password(r)
    add("docker-login-continued-json", '{"command":"docker login \\\\\\n  -u ci \\\\\\n  -p ' + s + ' r.io"}', s, family=cli)
    s, t = password(r), password(r)
    add("keytool-two-passwords", f"keytool -importkeystore -srckeystore a.p12 -srcstorepass {s} -destkeystore b.jks -deststorepass {t}", s, t, family=cli)
    s = password(r)
    add("htpasswd-flags-apart", f"htpasswd -B -C 12 -b .htpasswd admin {s}", s, family=cli)
    s = password(r)
    add("openssl-quoted-pass", f"openssl pkcs12 -export -passout 'pass:{s}' -out a.p12", s, family=cli)
    s = password(r)
    add("wpa-quoted-ssid", f'wpa_passphrase "Home WiFi" "{s}"', s, family=cli)
    s, t = password(r), tok(r, 12)
    add("mongosh-url-and-p", f'mongosh "mongodb://root:{t}@db:27017/admin" -u root -p {s}', s, t, family=cli)
    s, t = password(r, 12), password(r)
    add("sqlcmd-statement-and-P", f"sqlcmd -S db -U sa -Q \"CREATE LOGIN app WITH PASSWORD = '{s}'\" -P {t}", s, t)
    s = password(r, 12)
    add("sql-identified-double-quotes", f'CREATE USER bob IDENTIFIED BY "{s}";', s, family="sql_password")
    s = password(r, 12)
    add("sql-set-password", f"SET PASSWORD FOR 'app'@'%' = '{s}';", s, family="sql_password")
    s = password(r)
    add("pgpass-echo", f"echo 'db.internal:5432:orders:app:{s}' >> ~/.pgpass && chmod 600 ~/.pgpass", s, family="pgpass")
    s, t = password(r), password(r)
    add("pgpass-written", _tool_use(f"cat > ~/.pgpass <<EOF\nlocalhost:5432:*:postgres:{s}\nreplica:5432:orders:ro:{t}\nEOF"), s, t, family="pgpass")
    # Found by a second review: .pgpass shown with line numbers, comments, entries on one
    # line, escaped colons; pass names as a call's arguments, and a passphrase.
    s, t = password(r), password(r)
    add("pgpass-read-numbered", '{"type":"tool_result","content":"     1\\tlocalhost:5432:*:postgres:' + s
        + '\\n     2\\treplica:5432:orders:ro:' + t + '\\n"} (Read /home/dev/.pgpass)', s, t, family="pgpass")
    s, t = password(r), password(r)
    add("pgpass-comment-between", f"$ cat ~/.pgpass\ndb0:*:*:admin:{s}\n# the replica\n\ndb1:5432:*:admin:{t}\n", s, t, family="pgpass")
    s, t = password(r), password(r)
    add("pgpass-printf", f"printf 'h:5432:*:u:{s}\\nr:5432:o:ro:{t}\\n' > ~/.pgpass", s, t, family="pgpass")
    s = tok(r, 6) + "\\:" + tok(r, 8)
    add("pgpass-escaped-colon", f"echo 'db:5432:app:u:{s}' >> ~/.pgpass", s, family="pgpass")
    s = password(r)
    add("pass-name-call-argument", f'config.set("mail", "smtp_pass", "{s}")', s, family="generic")
    s = "My Secret Pass " + tok(r, 4, string.digits)
    add("pass-name-passphrase", f'ansible_become_pass: "{s}"', s, family="generic")
    s = "Tango." + tok(r, 8, string.ascii_letters)
    add("dotted-password", f"DB_PASSWORD={s}", s, family="generic")


def _negatives() -> list[Case]:
    r = random.Random(7)  # separate stream: positives can change without moving these
    n: list[Case] = []

    def add(name: str, text: str) -> None:
        n.append(Case(name, text))

    sha = tok(r, 40, HEX)
    add("git-sha", f"$ git log -1 --format=%H\n{sha}")
    add("git-commit-url", f"https://github.com/org/repo/commit/{sha}")
    add("uuid-session", '{"sessionId":"491e126e-1e71-469c-ade2-fcc8af567c74","uuid":"527398ad-ae38-4620-b5f6-ce4895a501a3"}')
    add("lockfile-integrity", f'"integrity": "sha512-{_b64(r, 64)}"')
    add("go-sum", f"golang.org/x/text v0.14.0 h1:{_b64(r, 32)}")
    add("go-test-verdicts", "=== RUN   TestHTTP2Upgrade\n--- PASS: TestHTTP2Upgrade (0.02s)\n"
        "    --- PASS: TestParse/empty_input (0.00s)\nPASS\nok  example.com/x 0.02s")
    add("vendor-prefixes-as-words", "the adapter's dapi layer, a pul-request, hvs.mean and NRAK-7 "
        "in the ticket, dp.st. as a section, shpat_ alone")
    add("docker-digest", f"FROM python:3.11-slim@sha256:{tok(r, 64, HEX)}")
    add("image-base64", _line({"type": "image", "source": {"type": "base64", "media_type": "image/png",
        "data": "iVBORw0KGgoAAAANSUhEUgAA" + _b64(r, 3000)}}))
    add("data-url", f'<img src="data:image/png;base64,iVBORw0KGgo{_b64(r, 600)}" alt="chart">')
    add("transcript-ids", '{"id":"toolu_01A09q90qw90lq917835lq9","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL"},"requestId":"req_011CUdNpTLDd2ZXtwqVbBPqx"}')
    add("thinking-signature", '{"type":"thinking","thinking":"Let me check the config.","signature":"'
        + "EqoBCkgIARABGAIiQL" + _b64(r, 400) + '"}')
    add("placeholder-your-api-key", "OPENAI_API_KEY=YOUR_API_KEY")
    add("placeholder-angle", "export GITHUB_TOKEN=<token>")
    add("placeholder-env-ref", "password: ${DB_PASSWORD}")
    add("placeholder-shell-var", 'curl -H "Authorization: Bearer $TOKEN" https://api.example.com')
    add("placeholder-gha-secret", "        token: ${{ secrets.GITHUB_TOKEN }}")
    add("placeholder-xxxx", "API_KEY=xxxxxxxxxxxxxxxxxxxxxxxx")
    add("placeholder-stars", 'password: "********"')
    add("placeholder-changeme", "DB_PASSWORD=changeme")
    add("already-redacted", "GITHUB_TOKEN=[REDACTED:github] and password: [REDACTED:generic]")
    add("placeholder-ghp-x", "GH_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
    add("placeholder-sk-dots", 'client = OpenAI(api_key="sk-...")')
    add("placeholder-dollar-var", "export AWS_SECRET_ACCESS_KEY=$AWS_SECRET")
    add("placeholder-template", "password: {{ .Values.db.password }}")
    add("aws-doc-example", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    body = "\n".join(pem_lines(r, 280, PUBLIC_DER))
    add("public-key", f"-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----")
    add("certificate", f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----")
    add("certificate-json", json.dumps({"certificate": f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"}))
    add("pgp-public", f"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n{body}\n-----END PGP PUBLIC KEY BLOCK-----")
    add("ssh-public", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{tok(r, 43, B64)} deploy@build-01")
    add("authorized-keys-env", f"DEPLOY_PUBLIC_KEY=ssh-rsa AAAAB3NzaC1yc2E{tok(r, 200, B64)}")
    add("stripe-publishable-env", f"STRIPE_PUBLISHABLE_KEY={'pk_live_' + tok(r, 99)}")
    add("stripe-publishable-js", f'const stripe = Stripe("pk_test_{tok(r, 99)}");')
    add("prose-rotate", "Rotate the API token and store the new password in the vault; never paste a secret key into chat.")
    add("prose-policy", "The password must be at least 12 characters long and the token expires after 1 hour.")
    add("prose-colon", "Password: at least 12 characters. Token: sent in the Authorization header.")
    add("prose-bearer", "Bearer tokens are sent in the Authorization header; Basic auth encodes user:pass.")
    add("prose-secret-key", "the secret key is stored in AWS Secrets Manager, not in the repo")
    add("usage-tokens", '"max_tokens": 4096, "usage": {"input_tokens": 1523, "cache_read_input_tokens": 20345, "output_tokens": 87}')
    add("total-tokens", '{"toolUseResult":{"agentId":"a1b2c3","totalTokens":48213,"totalDurationMs":91234}}')
    add("tokenizer", 'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")')
    add("getpass", 'password = getpass.getpass("Password: ")')
    add("signature-types", "def login(username: str, password: str) -> Token:")
    add("environ-lookup", 'token = os.environ["GITHUB_TOKEN"]')
    add("settings-attr", "api_key = settings.OPENAI_API_KEY")
    add("kwargs-pass-through", "client = Client(api_key=api_key, password=password, token=token)")
    add("required-check", 'if not password:\n    raise ValueError("password is required")')
    add("min-length", "PASSWORD_MIN_LENGTH=12\nTOKEN_TTL_SECONDS=3600")
    add("token-type", '{"token_type": "Bearer", "expires_in": 3600, "scope": "repo read:org"}')
    add("secret-name", "secret_name: my-app-prod-db-credentials")
    add("password-file", "PASSWORD_FILE=/run/secrets/db_password")
    add("token-url", "token_url: https://oauth2.googleapis.com/token")
    add("pydantic-field", "    password: SecretStr = Field(..., min_length=8)")
    add("pydantic-type", "    api_key: SecretStr")
    add("k8s-secret-ref", "valueFrom:\n  secretKeyRef:\n    name: db\n    key: password")
    add("config-index", 'client_secret = config["client_secret"]')
    add("curl-user-vars", 'curl -u "$USER:$PASS" https://api.example.com')
    add("markdown-table", "| Variable | Description |\n|---|---|\n| `API_KEY` | Your API key from the dashboard |")
    add("commit-message", 'git commit -m "Remove hardcoded password from config and rotate token"')
    add("cwd-pwd", '{"cwd":"/home/user/project"}\n$ pwd\n/home/user/project')
    add("email-and-ssh", "Contact ops@example.com; clone with git@github.com:org/repo.git or ssh://git@github.com:22/org/repo.git")
    add("elixir-attrs", '  @moduledoc """\n  Handles sessions.\n  """\n  @spec start(map()) :: :ok')
    add("dash-slugs", "task-runner desk-lamp risk-score sk-learn hook-script")
    add("hf-hub-call", 'hf_hub_download(repo_id="bert-base-uncased", filename="config.json")')
    add("npm-config-env", "npm_config_cache=/tmp/npm-cache npm_package_version=1.2.3")
    add("ya29-mention", "Access tokens start with ya29. and expire after an hour.")
    add("jwt-header-only", "the header eyJ0eXAiOiJKV1QiLCJraWQiOiJrMSJ9 names key k1")
    add("sql-begin", "BEGIN TRANSACTION;\nUPDATE users SET password_hash = crypt($1, gen_salt('bf')) WHERE id = $2;\nCOMMIT;")
    add("pem-header-mention", 'if line.strip() == "-----BEGIN PRIVATE KEY-----":\n    in_key = True')
    add("authorization-required", '{"authorization": "required", "scopes": ["read"]}')
    add("poetry-lock-hash", f'content-hash = "{tok(r, 64, HEX)}"')
    add("url-no-password", "https://user@example.com/path and https://example.com:8443/api")
    add("thinking-metadata", '{"thinkingMetadata":{"level":"high","disabled":false,"triggers":[]}}')
    add("password-prompt-flag", "mysql -u root -p --password-prompt")
    add("yaml-password-bool", "auth:\n  password: true\n  token: null")
    # Shapes found in real library code that an earlier rule set took for secrets.
    add("names-list", "__all__ = ['NullFormatter', 'RawTokenFormatter', 'TestcaseFormatter']")
    add("names-list-camel", "'TKToken', 'TKTokenAuthOperation', 'TKTokenPasswordAuthOperation', 'UITextInputPasswordRules',")
    add("type-annotation-acronym", "    def sign(self, private_key: SSHCertPrivateKeyTypes) -> SSHCertificate:")
    add("type-annotation-digits", "        private_key: PKCS7PrivateKeyTypes,\n        key: Ed25519PrivateKey | Ed448PrivateKey,")
    add("alias-assignment", "DHPrivateKeyWithSerialization = DHPrivateKey")
    add("oid-name-value", '    AttributeOID.CHALLENGE_PASSWORD: "challengePassword",')
    add("comparison", "while self.claim.token == self.token:\n    if value == '{' and token == Literal:")
    add("flag-prose", "credentials can be provided via the --username and --password options instead")
    add("fstring-url", 'dsn = f"postgres://{user}:{password}@{host}:5432/{db}"')
    # Around the command-line and .netrc passwords: the same flags and words without one.
    add("mysql-prompt", "mysql -u root -p\nEnter password: ")
    add("mysql-prompt-db", "mysql -h db -u app -p shop < dump.sql")
    add("mysql-port-flag", "mysql -h 127.0.0.1 -P 3306 -u root -p")
    add("port-flags", "psql -h db -p 5432 -U app\nssh -p 2222 deploy@host\nredis-cli -p 6379 ping")
    add("mysql-env-password", 'mysql -u root -p"$MYSQL_ROOT_PASSWORD" -e "select 1"')
    add("curl-user-only", "curl -u bob https://example.com/private  # prompts for the password")
    add("curl-user-empty", "curl -u admin: https://example.com/api/v1/charges")
    add("curl-user-agent", 'curl -A "Mozilla/5.0" --upload-file report.csv https://example.com/u')
    add("uuid-alone", "request 1b4e28ba-2fa1-11d2-883f-0016d3cca427 failed; retry id 6fa459ea-ee8a-3ca4-894e-db77e160355e")
    add("netrc-no-password", "machine example.com login bob\nmachine other.example.com login alice")
    add("machine-prose", "The machine learning login page has a password reset link.")
    add("ac-words", "ACME_CORP = 'ACTION'; ACK, ACCEPTED and AC_POWER are not secrets")
    add("twilio-sid-alone", f'TWILIO_ACCOUNT_SID="AC{tok(r, 32, HEX)}"')
    add("twilio-client-vars", "client = Client(account_sid, auth_token)")
    add("x-api-key-empty", '{"x-api-key": "", "X-API-Key": null}')
    add("x-api-key-variable", 'headers = {"X-API-Key": api_key, "x-api-key": os.environ["API_KEY"]}')
    add("x-api-key-prose", "The x-api-key header is required; send it as X-API-Key: <your key>.")
    # Around the command-line, SQL and config passwords of 2026-12-04: the same words without one.
    add("python-pass", "try:\n    run()\nexcept KeyError:\n    pass\nif ok: pass")
    add("tests-pass", "all 12 tests pass: see the CI run; the first pass: build, then test")
    add("pass-names", "bypass = True\ntest_pass = compute()\non_pass: handle_success\nfirstPass = run(x)\nisPass: true")
    add("pass-mode", "mode: 'pass'\npassphrase: null\nsmtp_pass: ${SMTP_PASS}")
    add("ssh-keygen-empty", 'ssh-keygen -t ed25519 -N "" -f deploy_key')
    add("openssl-no-pass", "openssl req -new -key k.pem -out c.csr -subj /CN=app")
    add("ldap-prompt", "ldapsearch -x -W -D cn=admin,dc=corp -b dc=corp")
    add("sshpass-env", "SSHPASS=$(cat /run/secrets/ssh) sshpass -e ssh deploy@web01")
    add("htpasswd-prompt", "htpasswd -c /etc/nginx/.htpasswd admin")
    add("redis-cli-port", "redis-cli -p 6380 -n 2 keys 'session:*'")
    add("sql-password-param", "ALTER USER app WITH PASSWORD %s  -- bound by the driver")
    add("gh-secret-file", "gh secret set DEPLOY_KEY < deploy_key.pem\ngh secret set TOKEN --body \"$TOKEN\"")
    add("docker-login-stdin", "docker login ghcr.io -u ci --password-stdin < token.txt")
    add("mysqladmin-status", "mysqladmin -u root -p status")
    add("pulumi-words", "pul-request handlers; pulumi up --stack dev; pul-" + "0" * 12)
    # Found in real packages' code when those rules were added (site-packages, /usr/share/doc).
    add("rest-field-type", "        :type passphrase: :py:data:`bytes`\n        :type password: :py:data:`bytes`")
    add("rest-field-param", ":param str smtp_pass: the password of the SMTP account")
    add("word-ending-in-pass", "    [   'crc-16-buypass',   'CRC16_BUYPASS',     0x18005,        NON_REVERSE,    0x0000],")
    add("port-mappings", "docker run -d --name mongodb -p 27017:27017 mongo:7\nRun docker login first, then docker run -p 8080:80 app")
    add("mongo-prompt", "mongo -u admin -p --authenticationDatabase admin")
    add("nmcli-get-field", "nmcli -s -g 802-11-wireless-security.psk connection show Lab-5G")
    add("compiler-passes", 'render_pass: "shadow-map"\ncompiler_pass = "inline-functions"\nllvm_pass: \'mem2reg\'\nfirstPass = "lexing"\n{"pass": "partial"}\npass: "pending"')
    add("pass-in-a-list", '"chatter": ["Opening the SSAO pass.", "courtyard is back to zero validation messages over 600 frames"]')
    add("pgpass-near-log-lines", "Checked ~/.pgpass permissions. Log: worker:8080:queue:jobs:started\n2024-01-03 12:30:45 pgpass: 12:30:45:123:done")
    add("pgpass-format", "psql reads ~/.pgpass, one hostname:port:database:username:password per line; PGPASSFILE names another")
    add("usage-lines", "mysqladmin -u root -p password [new-password]\nwpa_passphrase <ssid> [passphrase]\nALTER USER 'jeffrey'@'localhost' IDENTIFIED BY 'new_password';")
    add("sshpass-file-ssh-port", "sshpass -f ~/.pw ssh -p 2222 deploy@host")
    add("attribute-value", "        proxy_pass=url.password or None,\n        password=url.password or None,")
    add("bypass-constant", 'BYPASS = "bypass"')
    return n


def _held_out() -> list[Case]:
    """Cases written after the rules were done and never used to tune them: their score is
    an estimate of how the rules do on lines nobody tuned for."""
    r = random.Random(20261201)
    c: list[Case] = []

    def add(name: str, text: str, *secrets: str, family: str | None = None) -> None:
        c.append(Case(name, text, tuple(secrets), family))

    s = gitlab(r)
    add("ho-jsonl-gitlab-export", _tool_use(f"export GITLAB_TOKEN={s} && glab mr list"), s,
        family="gitlab")
    s = tok(r, 40)
    add("ho-js-fetch-x-api-key", f"await fetch(url, {{ headers: {{ 'X-API-Key': '{s}' }} }});", s,
        family="auth_header")
    s = password(r)
    add("ho-curl-user-delete", f"curl --user admin:{s} -X DELETE https://es.internal:9200/logs-2026.11",
        s, family="cli_password")
    s = password(r)
    add("ho-mysqladmin", f"mysqladmin -u root -p{s} shutdown", s, family="cli_password")
    s = password(r)
    add("ho-mysql-host-first", f'mysql --host=db -uapp -p{s} -e "SELECT 1"', s,
        family="cli_password")
    s = password(r)
    add("ho-netrc-default", f"default login anonymous password {s}", s, family="netrc")
    s = github(r)
    add("ho-netrc-in-json", _tool_result(f"machine github.com\nlogin bot\npassword {s}\n"), s,
        family="github")
    sid, s = twilio_account_sid(r), tok(r, 32, HEX)
    add("ho-php-twilio", f"$twilio = new Client('{sid}', '{s}');", s, family="twilio")
    s = gcp_access_token(r)
    add("ho-url-encoded-fragment", f"next=%2Fcb%23access_token%3D{s}%26token_type%3DBearer", s,
        family="gcp")
    s = google_api_key(r)
    add("ho-url-encoded-key", f"src=https%3A%2F%2Fmaps.googleapis.com%2Fmaps%2Fapi%2Fjs%3Fkey%3D{s}",
        s, family="google")
    s = password(r)
    add("ho-next-line-double", _tool_result(f'DB_PASS=\n    "{s}"\nDB_HOST=db'), s,
        family="generic")
    s = github(r)
    add("ho-glued-bearer", f"> Authorization: Bearer{s}", s, family="github")
    s = slack_bot(r)
    add("ho-url-encoded-json-slack", f"payload=%7B%22token%22%3A%22{s}%22%7D", s, family="slack")
    s = password(r)
    add("ho-yaml-next-line", f"smtp:\n  password:\n    '{s}'\n  port: 587", s, family="generic")
    s = stripe(r)
    add("ho-form-body-stripe", f"-d 'data=api_key%3D{s}%26mode%3Dlive'", s, family="stripe")
    s = "P@ss w0rd" + tok(r, 4)
    add("ho-mysql-quoted-space", f"mysql -h 127.0.0.1 -P 3307 -u root -p'{s}' shop", s,
        family="cli_password")
    s = password(r)
    add("ho-wget-user-password", f"wget --user=bob --password={s} https://files.example.com/a.tgz",
        s, family="generic")
    s = tok(r, 32, HEX)
    add("ho-env-continuation", f'API_KEY=\\\n  "{s}"', s, family="generic")
    s = anthropic(r)
    add("ho-glued-after-colon-word", f"key:value{s}", s, family="anthropic")
    s = password(r)
    add("ho-curl-proxy-user", f"curl -x http://proxy:3128 --proxy-user ops:{s} https://example.com",
        s, family="cli_password")

    def neg(name: str, text: str) -> None:
        c.append(Case(name, text))

    neg("ho-mysql-prompts", "mysql -p -h db shop\nmysqldump --no-data -p shop > schema.sql")
    neg("ho-curl-user-variable", 'curl -u "${CREDS}" https://api.example.com\ncurl -u "bob:$(cat /run/secrets/pw)" https://x')
    neg("ho-port-flags", "nc -l -p 4444\ndocker run -p 8080:80 nginx\nkubectl port-forward svc/db 5432:5432")
    neg("ho-machine-prose", "Each machine example.com login works, and the password field is empty.")
    neg("ho-password-reset-id", '{"passwordResetId": "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "status": "sent"}')
    neg("ho-openapi-header", '{"name": "X-API-Key", "in": "header", "required": true, "schema": {"type": "string"}}')
    neg("ho-twilio-sid-json", f'{{"account_sid": "AC{tok(r, 32, HEX)}", "region": "us1", "edge": "ashburn"}}')
    neg("ho-url-encoded-var", "url=%2Fapi%3Ftoken%3D%24%7BTOKEN%7D%26sig%3Dabc")
    neg("ho-url-encoded-image", "src=data%3Aimage%2Fpng%3Bbase64%2C" + _b64(r, 900).replace("+", "%2B").replace("/", "%2F"))
    neg("ho-next-line-call", "password =\n    get_password()\ntoken = (\n    load_token()\n)")
    neg("ho-json-next-line-null", '{"password":\n  null, "token":\n  true}')
    neg("ho-curl-user-no-colon", "curl --user bob -X GET https://example.com/private")
    neg("ho-login-path", "mysql_config_editor set --login-path=local --host=localhost --user=root --password")
    neg("ho-psql-conninfo", 'psql "host=db port=5432 user=app dbname=shop sslmode=require"')
    neg("ho-glued-words", "taskrunner_proj-name hf_transfer npm_lifecycle_event AWS_REGION=eu-west-1")
    neg("ho-percent-text", "coverage went from 85%25AIza to 90%, see %3Dfoo and 100%2Bsk-bar")
    return c


POSITIVES: Final = _positives()
NEGATIVES: Final = _negatives()
CASES: Final = POSITIVES + NEGATIVES
HELD_OUT: Final = _held_out()
HELD_OUT_POSITIVES: Final = [case for case in HELD_OUT if not case.negative]
HELD_OUT_NEGATIVES: Final = [case for case in HELD_OUT if case.negative]
#: Held-out cases the rules miss, and why; they were not tuned away, so they stay listed.
HELD_OUT_MISSES: Final = {
    "ho-mysql-quoted-space": "a quoted -p password is cut at its first blank",
    "ho-env-continuation": "a value after a backslash line continuation is not joined",
}
