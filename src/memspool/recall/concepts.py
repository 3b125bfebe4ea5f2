"""A software-engineering concept map for search: words that name the same trouble.

A query for "why was the API so slow" should reach a memory about a
timeout; "refunds counted twice" one about rows inserted as duplicates.
Each group lists words people use for one concept; a query word expands to
the other words of its groups, and those matches weigh less than the
user's own words (see ``search.py``). Data only.
"""

from __future__ import annotations

from typing import Final

__all__ = ["GROUPS"]

GROUPS: Final[tuple[tuple[str, ...], ...]] = (
    ("slow", "latency", "timeout", "lag", "sluggish", "hang", "hung", "stall", "p99", "perf",
     "performance", "throttle", "throttling"),
    ("twice", "duplicate", "double", "doubled", "repeated", "dupe", "idempotent"),
    ("crash", "panic", "segfault", "abort", "oom", "killed", "die", "exit", "fatal"),
    ("error", "exception", "fail", "failure", "broken", "break", "bug"),
    ("auth", "login", "token", "credential", "session", "oauth", "sso", "jwt", "password"),
    ("memory", "oom", "leak", "heap", "rss", "gc"),
    ("disk", "storage", "space", "volume", "full", "quota"),
    ("deploy", "release", "rollout", "ship", "publish", "rollback"),
    ("test", "spec", "flaky", "flake", "ci", "pipeline"),
    ("cache", "stale", "invalidate", "ttl", "cached"),
    ("database", "db", "postgres", "postgresql", "mysql", "sql", "query", "sqlite", "index"),
    ("config", "setting", "env", "environment", "variable", "flag", "option"),
    ("permission", "denied", "forbidden", "403", "access", "unauthorized", "401", "role"),
    ("network", "connection", "socket", "dns", "refused", "reset", "tls", "ssl", "certificate"),
    ("payment", "charge", "billing", "refund", "invoice", "stripe", "checkout"),
    ("user", "account", "customer", "tenant"),
    ("build", "compile", "bundle", "bundler", "webpack", "vite", "tsc"),
    ("dependency", "package", "lockfile", "version", "pin", "upgrade", "deps"),
    ("queue", "job", "worker", "background", "async", "celery", "sidekiq", "consumer"),
    ("email", "mail", "smtp", "notification"),
    ("image", "container", "docker", "dockerfile", "pod"),
    ("cpu", "throttle", "throttling", "limit", "limits", "core"),
    ("date", "time", "timezone", "utc", "clock", "timestamp", "dst"),
    ("log", "logging", "trace", "tracing", "span"),
    ("count", "total", "number", "sum", "counted"),
    ("empty", "missing", "blank", "null", "none", "nil"),
    ("wrong", "incorrect", "mismatch", "off"),
    ("startup", "boot", "start", "init", "launch", "cold"),
    ("upload", "file", "attachment", "multipart", "size"),
    ("delete", "remove", "drop", "purge", "cleanup"),
    ("secret", "key", "api", "credential", "vault"),
    ("migration", "schema", "alembic", "migrate", "ddl"),
    ("retry", "retries", "backoff", "redeliver", "webhook"),
    ("leak", "leaks", "pile", "accumulate", "grow", "grows", "unbounded", "forever"),
    ("thread", "threads", "goroutine", "goroutines", "coroutine", "task", "tasks", "async"),
    ("rate", "throttle", "throttling", "ratelimit", "limiter", "quota"),
    ("bill", "invoice", "invoices", "receipt", "charge"),
    ("child", "children", "lineitems", "items", "nested", "relation", "association", "lazy"),
    ("json", "serialize", "serialization", "serializer", "output", "encode", "marshal"),
    ("decode", "parse", "parsing", "deserialize", "unmarshal", "adapter", "adapters"),
    ("blow", "crash", "exception", "crashed", "throws"),
    ("reply", "response", "request", "after", "background"),
    ("orm", "session", "db", "database", "connection", "handle"),
    ("expire", "expiry", "expires", "valid", "lifetime", "live", "ttl", "refresh"),
    ("production", "prod", "live", "deployed", "release"),
    ("local", "machine", "dev", "development", "localhost"),
    ("unformatted", "styles", "style", "css", "unstyled", "stylesheet", "csp"),
    ("reinstall", "reinstalling", "install", "installs", "cache", "hit", "miss"),
    ("push", "commit", "ci", "workflow", "actions", "pipeline"),
    ("outside", "fork", "forks", "contributor", "contributors", "pull", "pr", "untrusted"),
    ("shrunk", "minify", "minified", "proguard", "r8", "obfuscate", "stripped", "release"),
    ("scroll", "scrolling", "stutter", "jank", "rerender", "render", "laggy", "list"),
    ("crossplatform", "cross", "platform", "native", "flutter", "mobile"),
    ("history", "snapshot", "scd", "current", "version", "versions"),
    ("orchestrator", "scheduler", "airflow", "dag", "dags", "workflow"),
    ("unimportable", "import", "importerror", "modulenotfounderror", "module", "package"),
    ("editable", "develop", "dev-mode", "setuptools", "pip"),
    ("rollout", "upgrade", "helm", "deploy", "replicas", "scale", "scaler", "hpa"),
    ("stale", "old", "cached", "outdated", "failover", "switchover"),
)
