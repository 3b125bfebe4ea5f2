"""Which project a session belongs to: its repository, named so clones agree.

A project is its repository: the git root above the session's folder (else
the folder itself, outside git). Its identity is

- the repository's remote URL, normalised (``github.com/acme/api``), where
  the repository has one: every clone of it, in any folder, shares it, and a
  scheme, a user name, a port, ``.git`` or a change of case makes no
  difference;
- else the git root's (or folder's) absolute path (``/home/me/clientA/api``):
  two repositories that only share a folder name never share it.

A readable name (the repository's or folder's last name, ``api``) is kept
beside the identity for output.

Standard library and ``os.path`` only, and no ``git`` process: the
SessionStart and recall hooks run under ``python -I -S`` and identify the
project exactly as the drainer and the CLI do, by reading ``.git/config``.
"""

from __future__ import annotations

import os
import stat

from memspool.base.controls import BIDI, LINE_SEPARATORS, TAGS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

__all__ = [
    "FALLBACK_PROJECT", "identify", "is_path_identity", "normalise_remote", "project_id",
    "project_name", "readable_name",
]

#: Walking up stops after this many parents; deeper trees are not real checkouts.
MAX_PARENTS: Final = 64
FALLBACK_PROJECT: Final = "unknown"
#: A ``.git`` file or ``config`` larger than this is not git's: it is not read.
MAX_GIT_FILE: Final = 256 * 1024
#: The remote that names the repository: ``origin`` where there is one, else
#: ``upstream``, else the first remote in the file.
PREFERRED_REMOTES: Final = ("origin", "upstream")
#: The bidi controls, line separators and tag characters, one by one (``_unsafe``).
_BIDI_OR_SEPARATOR: Final = frozenset(BIDI + LINE_SEPARATORS + TAGS)
#: URL schemes git speaks; none of them changes which repository a URL names.
_SCHEMES: Final = ("https://", "http://", "ssh://", "git+ssh://", "ssh+git://", "git://",
                   "ftp://", "ftps://")


def _unsafe(char: str) -> bool:
    """A character a folder's name or a remote may hold that must not reach a terminal
    or an agent's context as it is: a C0 or C1 control, DEL, a bidi control or a line
    separator (``memspool.base.controls``)."""
    code = ord(char)
    return code < 32 or 127 <= code < 160 or char in _BIDI_OR_SEPARATOR


def _shown(text: str) -> str:
    """``text`` (a path, a remote) with each unsafe character as U+FFFD: a project's
    identity and name are printed in headings and given to agents, and folder names
    come from hook payloads. Replaced, not removed, so two folders stay two projects."""
    if text.isprintable():
        return text
    return "".join("\ufffd" if _unsafe(c) else c for c in text)


def _checked(cwd: object) -> str | None:
    """``cwd`` as a usable absolute path, or ``None`` (it may come from a hook payload)."""
    if cwd is None:
        return None
    text = os.fspath(cwd) if isinstance(cwd, os.PathLike) else cwd
    if not isinstance(text, str) or not text or "\x00" in text or not os.path.isabs(text):
        return None
    return text


def _read_small(path: str) -> str | None:
    """A small regular file's text, else ``None``. Opened without blocking and read
    only when it is a regular file: a FIFO (or a device) planted at ``.git`` or
    ``.git/config`` in a session's folder or any folder above it would otherwise
    hold every hook, drainer and command that names that folder's project."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            data = handle.read(MAX_GIT_FILE + 1)
    except OSError:
        return None
    if len(data) > MAX_GIT_FILE:
        return None
    return data.decode("utf-8", "replace")


def _git_root(start: str) -> str | None:
    probe = os.path.realpath(start)
    for _ in range(MAX_PARENTS + 1):
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent
    return None


def _config_path(root: str) -> str | None:
    """The ``config`` file of the repository whose work tree is ``root``.

    ``.git`` is a folder, or a file saying ``gitdir: PATH`` (a linked work
    tree or a submodule). A linked work tree's git folder names the main
    repository's folder in ``commondir``; that is where ``config`` lives.
    """
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        git_dir = dot_git
    else:
        text = _read_small(dot_git)
        if text is None or not text.startswith("gitdir:"):
            return None
        git_dir = os.path.join(root, text[len("gitdir:"):].strip())
    common = _read_small(os.path.join(git_dir, "commondir"))
    if common is not None and common.strip():
        git_dir = os.path.join(git_dir, common.strip())
    return os.path.join(git_dir, "config")


def _unquote(value: str) -> str:
    """A git config value: comments cut, quotes removed, escapes undone."""
    out = []
    quoted = False
    i = 0
    while i < len(value):
        char = value[i]
        if char == '"':
            quoted = not quoted
        elif char == "\\" and i + 1 < len(value):
            i += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(value[i], value[i]))
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        i += 1
    return "".join(out).strip()


def remote_urls(config_text: str) -> dict[str, str]:
    """``{remote name: url}`` from the text of a git ``config`` file (the first url of each)."""
    remotes: dict[str, str] = {}
    section = None
    for raw in config_text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            header = line[1:line.find("]")] if "]" in line else ""
            kind, _, sub = header.partition(" ")
            sub = sub.strip()
            if kind.strip().lower() == "remote" and len(sub) >= 2 and sub[0] == sub[-1] == '"':
                section = sub[1:-1]
            elif kind.lower().startswith("remote."):
                section = header[len("remote."):]
            else:
                section = None
            continue
        if section is None or "=" not in line:
            continue
        name, _, value = line.partition("=")
        if name.strip().lower() == "url" and section not in remotes:
            url = _unquote(value)
            if url:
                remotes[section] = url
    return remotes


def _chosen_remote(remotes: dict[str, str]) -> str | None:
    for name in PREFERRED_REMOTES:
        if name in remotes:
            return remotes[name]
    return remotes[sorted(remotes)[0]] if remotes else None


def _local_remote(text: str, base: str | None) -> str | None:
    """``file:PATH`` for a remote that is a path on this machine, else ``None``."""
    if text.lower().startswith("file://"):
        local = text[len("file://"):]
    elif text.startswith(("/", "./", "../", "~")) or (
            ":" not in text.split("/", 1)[0] and "://" not in text):
        local = text
    else:
        return None
    if base is not None and not os.path.isabs(local) and not local.startswith("~"):
        local = os.path.join(base, local)
    path = os.path.normpath(os.path.expanduser(local)).rstrip("/")
    path = path.removesuffix(".git")
    return f"file:{path}" if path else ""


def _host_and_path(text: str) -> tuple[str, str]:
    lower = text.lower()
    for scheme in _SCHEMES:
        if lower.startswith(scheme):
            return text[len(scheme):].partition("/")[::2]
    if "://" in text:
        return text.split("://", 1)[1].partition("/")[::2]
    # scp-like syntax: [user@]host:path
    return text.partition(":")[::2]


def normalise_remote(url: str, base: str | None = None) -> str | None:
    """One identity for every way of writing the same repository's URL.

    ``https://User:tok@GitHub.com:443/Acme/API.git``, ``git@github.com:acme/api``
    and ``ssh://git@github.com/acme/api/`` all give ``github.com/acme/api``:
    scheme, user (and any password, never kept), port, ``.git``, trailing
    slashes and case go. A local path remote (``/srv/git/api.git``,
    ``file:///srv/git/api``, or relative to ``base``, the work tree) gives
    ``file:/srv/git/api``, case kept. ``None`` for what names no repository.
    """
    text = url.strip()
    if not text or any(ord(c) < 32 for c in text):
        return None
    local = _local_remote(text, base)
    if local is not None:
        return local or None
    host, path = _host_and_path(text)
    host = host.rpartition("@")[2]
    host = host[: host.find("]") + 1] if host.startswith("[") else host.partition(":")[0]
    path = path.split("?", 1)[0].split("#", 1)[0]
    parts = [p for p in path.split("/") if p and p != "."]
    if parts and parts[-1].lower().endswith(".git"):
        parts[-1] = parts[-1][:-4]
    parts = [p for p in parts if p]
    if not host or not parts:
        return None
    return "/".join([host, *parts]).lower()


def readable_name(identity: str) -> str:
    """A short name for output: the last part of the identity (``api``)."""
    name = identity.rstrip("/").rpartition("/")[2]
    if name.startswith("file:"):
        name = name[len("file:"):]
    return name or identity


def is_path_identity(identity: str) -> bool:
    """Is ``identity`` a folder's path (no remote), rather than a repository's URL?"""
    return identity.startswith("/")


def identify(cwd: object) -> tuple[str, str, str | None, str | None]:
    """``(identity, name, root, remote)`` of the project a folder belongs to.

    ``root`` is the git root (or the folder) when it exists, ``remote`` the
    normalised remote URL the identity comes from, or ``None``. ``cwd`` may
    come from a hook payload, so it is checked, not trusted: it must be an
    absolute path without NUL bytes; anything else gives ``unknown``. A
    folder that does not exist (any more) is identified by its path.
    """
    text = _checked(cwd)
    if text is None:
        return FALLBACK_PROJECT, FALLBACK_PROJECT, None, None
    root = None
    try:
        # A folder removed since (a build folder, a deleted work tree)
        # belongs to the repository its nearest existing parent is in.
        probe = os.path.normpath(text)
        for _ in range(MAX_PARENTS + 1):
            if os.path.isdir(probe) or os.path.dirname(probe) == probe:
                break
            probe = os.path.dirname(probe)
        found = _git_root(probe) if os.path.isdir(probe) else None
        if found is not None:
            config = _config_path(found)
            config_text = _read_small(config) if config is not None else None
            url = _chosen_remote(remote_urls(config_text)) if config_text else None
            remote = normalise_remote(url, found) if url else None
            if remote is not None:
                remote = _shown(remote)  # .git/config is a file of the repository's
                return remote, readable_name(remote), found, remote
            shown = _shown(found)
            return shown, os.path.basename(shown) or shown, found, None
        if os.path.isdir(text):
            root = os.path.realpath(text)
    except (OSError, ValueError):
        root = None
    path = root or os.path.normpath(text)
    if path == "/":
        return "/", "/", root, None
    path = _shown(path.rstrip(os.sep))
    return path, os.path.basename(path) or path, root, None


def project_id(cwd: object) -> str:
    """The identity of the project ``cwd`` belongs to (see :func:`identify`)."""
    return identify(cwd)[0]


#: The older name of :func:`project_id`, kept for callers written before
#: projects were repositories: it returns the identity too.
project_name = project_id
