"""Passwords a command or a file places by its own syntax, with no name that says so.

``curl -u user:password``, ``mysql -pPASSWORD``, ``sshpass -p PASSWORD``, ``redis-cli -a
PASSWORD``, ``htpasswd -b FILE USER PASSWORD``, ``smbclient -U user%PASSWORD``, SQL's ``WITH
PASSWORD '...'`` and ``IDENTIFIED BY '...'``, the ``password`` of a ``.netrc`` entry: the
value is a secret because of where it stands (families ``cli_password``, ``sql_password``,
``netrc``, ``pgpass``). Each rule is found from a stretch of its command's name that starts at a
character the trigger scan already stops at (``ql`` of ``mysql``, ``cli`` of ``redis-cli``),
so most rules here cost the scan no new stops (:mod:`memspool.redact.rules` says why that
matters). ``p`` is the one stop these rules add (``sshpass``, ``openssl``, ``ldapsearch``,
``pass:``, and the generic rules' ``passphrase``): about 7% of the redactor's speed, for
the commands that most often carry a password in a coding session. How a rule is written
is described in :mod:`memspool.redact.rules`.
"""

from __future__ import annotations

import re
from typing import Final

from memspool.redact.rules import (
    CONTEXT,
    QUOTE,
    Rule,
    Trigger,
    after,
    lits,
    named_check,
    rx,
    secret_of,
)

__all__ = ["COMMAND_RULES"]

#: Blanks between two words of one command, a line continuation among them (a backslash
#: ending the line, as written or escaped in a transcript's JSON: ``\\\n``).
_BLANKS: Final = r"(?:[ \t]|\\\r?\n|\\\\\\n){1,8}"
#: The words of one shell command before the flag looked for: no line break (real or
#: escaped, but for a continuation) and no command separator. Each word is followed by
#: blanks, so the words split one way only and a failed search reads each character once.
_SAME_COMMAND: Final = _BLANKS + r"(?:(?:[^\s;|&`\\]|\\(?![nr\\])){1,256}" + _BLANKS + "){0,24}?"
#: A command's name where the shell would read it: not inside a word (``pycurl``), but
#: after a line break or tab escaped in a transcript's JSON (``cd /srv\nsshpass ...``).
_COMMAND: Final = r"(?:(?<![\w.-])|(?<=\\[nt]))"
_ARGUMENT: Final = r"[^\s\"'`\\]{1,256}"
#: An argument that is not the password (a user name, a file), nor a flag: a word, or a
#: quoted string that may hold blanks (``"Home WiFi"``, as written or escaped: ``\\"Home WiFi\\"``).
_WORD: Final = (r"(?:\"[^\"\\\n]{1,256}\"|'[^'\\\n]{1,256}'"
                r"|\\{1,3}\"(?:(?!\\{1,3}\")[^\n]){1,256}\\{1,3}\"|(?!-)[^\s\"'`\\]{1,256})")
#: The password itself, perhaps quoted. Not a redirection (``> out.txt``), a flag (``-p
#: --authenticationDatabase``: ``-p`` alone prompts) or a usage line's ``[password]``.
_SECRET: Final = QUOTE + r"?(?![<>|;&\[-])(?P<secret>" + _ARGUMENT + ")"
#: htpasswd's flags, ``b`` among them (and ``n``, when ``{n}`` is ``(?=``, or not, when it is
#: ``(?!``), each flag apart or run together (``-bc``, ``-B -b``), a cost (``-C 12``) too.
_HTPASSWD_FLAG: Final = r"[ \t]{{1,8}}-[A-Za-z]{{1,8}}(?:[ \t]{{1,8}}[0-9]{{1,3}})?"
_HTPASSWD_FLAGS: Final = (
    r"(?=(?:" + _HTPASSWD_FLAG + r"){{0,3}}[ \t]{{1,8}}-[A-Za-z]{{0,7}}b)"
    r"{n}(?:" + _HTPASSWD_FLAG + r"){{0,3}}[ \t]{{1,8}}-[A-Za-z]{{0,7}}n)"
    r"(?:" + _HTPASSWD_FLAG + r"){{1,4}}")
#: A .netrc entry: ``machine <host>`` or ``default``, up to three other tokens, then the
#: password, on one line or several; all of it before the password within this many
#: characters.
_NETRC_LOOKBACK: Final = 512
_NETRC_SEP: Final = r"(?:[ \t\r\n]|\\{1,7}[nrt]){1,16}"
_NETRC_WORD: Final = r"[^\s\"'`\\]{1,128}"
_NETRC: Final = (
    rf"(?:machine[ \t]{{1,8}}(?P<host>{_NETRC_WORD})|default)"
    rf"(?:{_NETRC_SEP}(?:login|account|port)[ \t]{{1,8}}{_NETRC_WORD}){{0,3}}"
    rf"{_NETRC_SEP}password[ \t]{{1,8}}(?P<secret>{_ARGUMENT})"
)


#: A .pgpass entry, ``host:port:database:user:password`` (``*`` for any of the first four;
#: ``\\:`` is a colon inside a field, written once more escaped in a transcript's JSON).
_PGPASS_CHAR: Final = r"(?:\\{1,2}[:\\]|[^\s:\"'`\\])"
_PGPASS_FIELD: Final = rf"(?:{_PGPASS_CHAR}{{1,253}}|\*)"

def _pgpass_entry_pattern(password: str) -> str:
    """An entry, its password in the group named ``password``."""
    return (rf"(?<!\\){_PGPASS_FIELD}:(?:[0-9]{{1,5}}|\*):{_PGPASS_FIELD}:{_PGPASS_FIELD}"
            rf":(?P<{password}>{_PGPASS_CHAR}{{1,256}})")


_PGPASS_ENTRY: Final = re.compile(_pgpass_entry_pattern("secret"))
#: How far from the file's name an entry is looked for: before it on its line (``echo
#: '...' >> ~/.pgpass``, ``printf 'a\\nb' > ~/.pgpass``) or after it (the file written,
#: or printed, right after its path).
_PGPASS_REACH: Final = 320
#: An entry starts a line of the file: at a line break (as written or escaped), a quote
#: (``echo '...'``, ``"content":"...``), or a line number (``cat -n``, a Read tool's output).
_PGPASS_LINE_START: Final = re.compile(r"(?:\n|\\n|[\"'`]|[0-9](?:\t|\\t|\u2192))[ \t]*\Z")
#: What may follow an entry in the file: a line break, a line number, then an entry, a
#: comment or nothing; at most this many lines.
_PGPASS_LINE: Final = re.compile(
    r"(?:\r?\n|(?:\\r)?\\n)(?:[ \t]*[0-9]{1,6}(?:\t|\\t|\u2192))?[ \t]*"
    r"(?:(?P<entry>" + _pgpass_entry_pattern("more") + r")"
    r"|#[^\r\n\\]{0,512}|(?=\r?\n|(?:\\r)?\\n))")
_PGPASS_LINES: Final = 256


def _starts_pgpass_line(text: str, at: int) -> bool:
    return at == 0 or _PGPASS_LINE_START.search(text, max(0, at - 12), at) is not None


def _pgpass_entry(text: str, at: int) -> int:
    """Where the .pgpass entry nearest the file's name at ``at`` starts, or -1: the
    first one that starts a line before it on its line, else the first after it."""
    line_start = max(text.rfind("\n", max(0, at - _PGPASS_REACH), at) + 1, at - _PGPASS_REACH, 0)
    for found in _PGPASS_ENTRY.finditer(text, line_start, at):
        if _starts_pgpass_line(text, found.start()):
            return found.start()
    for found in _PGPASS_ENTRY.finditer(text, at, at + _PGPASS_REACH):
        if _starts_pgpass_line(text, found.start()):
            return found.start()
    return -1


def _pgpass_rest(match: re.Match[str]) -> int:
    """The end of the last password of the entries that follow, line after line (line
    numbers, comments and blank lines between them): a file of several is one span,
    from the first password to the last (the hosts and users between go with them)."""
    end = position = match.end("secret")
    for _ in range(_PGPASS_LINES):
        line = _PGPASS_LINE.match(match.string, position)
        if line is None or line.end() == position:
            break
        position = line.end()
        if line.group("entry") is not None:
            end = line.end("more")
    return end


def _netrc_start(text: str, at: int) -> int:
    if text[at + 4 : at + 5] not in (" ", "\t"):
        return -1  # ``password=``: a generic rule's hit, not the .netrc form
    lo = max(0, at - _NETRC_LOOKBACK)
    return max(text.rfind("machine", lo, at), text.rfind("default", lo, at))


#: Where a .netrc entry starts: the beginning of a line, or of a quoted string (``echo``).
_LINE_START: Final = re.compile(r"(?:^|[\r\n\"'`]|\\[nrt])[ \t]{0,16}$")


def _netrc_check(match: re.Match[str]) -> bool:
    # ``machine`` in prose ("the machine learning login page") names no host and does not
    # start a line.
    host, at = match.group("host"), match.start()
    entry = host is None or "." in host or _LINE_START.search(match.string, max(0, at - 24), at)
    return bool(entry) and named_check(match)


#: The flag before an argument written ``pass:PASSWORD`` (openssl's ``-passin``, ``-passout``,
#: ``-pass``; apksigner's ``--ks-pass``, ``--key-pass``).
_PASS_FLAG: Final = re.compile(
    r"(?<![\w-])--?(?:ks-|key-)?pass(?:in|out)?[ \t]{1,8}(?:\\{0,7}[\"'])?$")


def _pass_argument_check(match: re.Match[str]) -> bool:
    at = match.start()
    return (_PASS_FLAG.search(match.string, max(0, at - 24), at) is not None
            and named_check(match))


#: A port, or a port mapping (``-p 8080:80``, ``-p 27017``): for most tools ``-p`` is one.
_PORT: Final = re.compile(r"[0-9]{1,5}(?::[0-9]{1,5}){0,2}(?:/(?:tcp|udp))?")
#: A name that stands for a password in a usage line or an example (``new_password``).
_NAMED_STAND_IN: Final = re.compile(r"(?i)[a-z_-]*(?:pass|secret|token|pwd)[a-z_-]*")


def _command_check(match: re.Match[str]) -> bool:
    """A value a command's syntax names as a password: not a stand-in, a port, or a name
    written in its place (``IDENTIFIED BY 'new_password'``)."""
    value = secret_of(match)
    return (named_check(match) and _PORT.fullmatch(value) is None
            and _NAMED_STAND_IN.fullmatch(value) is None)


#: A field named, not set: ``nmcli -g 802-11-wireless-security.psk connection show X``.
_NMCLI_GET: Final = re.compile(r"(?:-g|--get-values|-f|--fields)[ \t]{1,8}[\w.,-]{0,64}$")


def _nmcli_check(match: re.Match[str]) -> bool:
    at = match.start("key")
    return (_NMCLI_GET.search(match.string, max(0, at - 80), at + 1) is None
            and _command_check(match))


def _java_flag_start(text: str, at: int) -> int:
    # The trigger is the ``pass`` of ``-storepass``, ``-srckeypass``, ...: the flag's dash.
    return text.rfind("-", max(0, at - len("-deststore")), at)


def _command(name: str, literal: str) -> Trigger:
    """``literal``, the end of ``name``, as a trigger only where the shell reads ``name``."""
    return literal, rf"(?<={_COMMAND}{re.escape(name)})"


#: Every command-line and file rule, in the order tried at a shared trigger.
COMMAND_RULES: Final[tuple[Rule, ...]] = (
    Rule("cli_password", (("curl", r"(?=[ \t])"),),  # -u user:password; -u user prompts
         rx(_COMMAND + r"curl" + _SAME_COMMAND
            + r"(?:-[uU][ \t]{0,4}|--(?:proxy-)?user(?:[ \t]{1,4}|=))"
            + QUOTE + r"?[^\s:\"'`\\]{1,256}:(?P<secret>" + _ARGUMENT + ")"),
         check=_command_check, priority=CONTEXT),
    Rule("cli_password", (after("ql", "mysql"),),  # -pPASSWORD; -p alone, or -p NAME, prompts
         rx(_COMMAND + r"mysql[a-z]{0,8}" + _SAME_COMMAND
            + r"-p" + QUOTE + r"?(?P<secret>" + _ARGUMENT + ")"),
         back=3, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (after("ql", "mysql"),),  # mysqladmin ... password NEW
         rx(_COMMAND + r"mysqladmin" + _SAME_COMMAND + r"password[ \t]{1,8}" + _SECRET),
         back=3, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (_command("redis-cli", "cli"),),  # -a PASSWORD, --pass PASSWORD
         rx(_COMMAND + r"redis-cli" + _SAME_COMMAND + r"(?:-a|--pass)[ \t]{1,8}" + _SECRET),
         back=6, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (_command("nmcli", "cli"),),  # ... wifi connect SSID password PSK
         rx(_COMMAND + r"nmcli" + _SAME_COMMAND
            + r"(?P<key>password|wifi-sec\.psk|802-11-wireless-security\.psk)[ \t]{1,8}"
            + _SECRET),
         back=2, check=_nmcli_check, priority=CONTEXT),
    Rule("cli_password", (_command("smbclient", "client"),),  # -U [DOMAIN\]user%password
         rx(_COMMAND + r"smbclient" + _SAME_COMMAND + r"(?:-U[ \t]{0,4}|--user(?:=|[ \t]{1,4}))"
            + QUOTE + r"?[^\s%\"'`]{1,256}%(?P<secret>" + _ARGUMENT + ")"),
         back=3, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (_command("sqlcmd", "qlcmd"),),  # SQL Server: -P PASSWORD
         rx(_COMMAND + r"sqlcmd" + _SAME_COMMAND + r"-P[ \t]{0,4}" + _SECRET),
         back=1, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (_command("docker", "cker"),),  # docker login -p PASSWORD
         rx(_COMMAND + r"docker[ \t]{1,8}login" + _SAME_COMMAND + r"-p[ \t]{1,8}" + _SECRET),
         back=2, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (("z", rf"(?<={_COMMAND}az)(?=[ \t]{{1,8}}login)"),),  # az login -p
         rx(r"az[ \t]{1,8}login" + _SAME_COMMAND + r"-p[ \t]{1,8}" + _SECRET),
         back=1, check=_command_check, priority=CONTEXT),
    # htpasswd -b[c] FILE USER PASSWORD, or -nb USER PASSWORD (no file).
    Rule("cli_password", (_command("htpasswd", "wd"),),
         rx(_COMMAND + r"htpasswd" + _HTPASSWD_FLAGS.format(n="(?=")
            + r"[ \t]{1,8}" + _WORD + r"[ \t]{1,8}" + _SECRET),
         back=6, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (_command("htpasswd", "wd"),),
         rx(_COMMAND + r"htpasswd" + _HTPASSWD_FLAGS.format(n="(?!")
            + r"[ \t]{1,8}" + _WORD + r"[ \t]{1,8}" + _WORD + r"[ \t]{1,8}" + _SECRET),
         back=6, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (_command("rabbitmqctl", "qctl"),),  # add_user NAME PASSWORD
         rx(_COMMAND + r"rabbitmqctl" + _SAME_COMMAND + r"(?:add_user|change_password)"
            r"[ \t]{1,8}" + _WORD + r"[ \t]{1,8}" + _SECRET),
         back=7, check=_command_check, priority=CONTEXT),
    # keytool's and jarsigner's -storepass, -keypass, -srcstorepass, ...: each flag its own.
    Rule("cli_password", tuple(("pass", rf"(?<=[ \t]-{flag})(?=[ \t])") for flag in (
         "storepass", "keypass", "srcstorepass", "deststorepass", "srckeypass", "destkeypass")),
         rx(r"-(?:src|dest)?(?:store|key)pass[ \t]{1,8}" + _SECRET),
         locate=_java_flag_start, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (("gh", rf"(?<={_COMMAND}gh)(?=[ \t]{{1,8}}secret[ \t])"),),
         rx(r"gh[ \t]{1,8}secret[ \t]{1,8}set" + _SAME_COMMAND
            + r"(?:--body(?:=|[ \t]{1,4})|-b[ \t]{0,4})" + _SECRET),
         check=_command_check, priority=CONTEXT),
    Rule("cli_password", (_command("mongo", "go"),),  # mongo, mongosh, mongodump ... -p X
         rx(_COMMAND + r"mongo(?:sh|dump|restore|import|export|stat|top|files)?"
            + _SAME_COMMAND + r"-p[ \t]{1,8}" + _SECRET),
         back=3, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (_command("wpa_passphrase", "_passphrase"),),  # SSID PASSPHRASE
         rx(r"wpa_passphrase[ \t]{1,8}" + _WORD + r"[ \t]{1,8}" + _SECRET),
         back=3, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (_command("sshpass", "pass"),),  # sshpass -p PASSWORD, -pPASSWORD
         rx(_COMMAND + r"sshpass(?:[ \t]{1,8}-v){0,3}[ \t]{1,8}-p[ \t]{0,8}" + _SECRET),
         back=3, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (("pass", r"(?=:)"),),  # openssl -passin pass:X, apksigner --ks-pass
         rx(r"pass:(?P<secret>" + _ARGUMENT + ")"),
         check=_pass_argument_check, priority=CONTEXT),
    Rule("cli_password", (_command("openssl", "penssl"),),  # openssl enc ... -k PASSWORD
         rx(_COMMAND + r"openssl" + _SAME_COMMAND + r"-k[ \t]{1,8}" + _SECRET),
         back=1, check=_command_check, priority=CONTEXT),
    Rule("cli_password", (("p", rf"(?<={_COMMAND}ldap)(?=[a-z]{{3,10}}[ \t])"),),  # -w PW
         rx(r"ldap[a-z]{3,10}" + _SAME_COMMAND + r"-w[ \t]{1,8}" + _SECRET),
         back=3, check=_command_check, priority=CONTEXT),
    # SQL: CREATE/ALTER USER or ROLE ... PASSWORD '...', and MySQL's IDENTIFIED BY '...'.
    Rule("sql_password", tuple((word[-4:], rf"(?<={word})(?=[ \t]{{1,4}}')")
                               for word in ("password", "PASSWORD", "Password")),
         rx(r"(?:password|PASSWORD|Password)[ \t]{1,4}'(?P<secret>[^'\s\\]{1,256})'"),
         back=4, check=_command_check, priority=CONTEXT),
    Rule("sql_password", (after("WORD", "SET PASSWORD"), after("word", "set password")),
         rx(r"(?:SET|set)[ ](?:PASSWORD|password)(?:[ \t]{1,4}(?:FOR|for)[ \t]{1,4}[^\s=]{1,128})?"
            r"[ \t]{0,4}=[ \t]{0,4}(?:(?:PASSWORD|password)\()?'(?P<secret>[^'\s\\]{1,256})'"),
         back=8, check=_command_check, priority=CONTEXT),
    Rule("sql_password", lits("IDENTIFIED"),
         rx(r"IDENTIFIED[ \t]{1,4}(?:WITH[ \t]{1,4}[a-z0-9_]{1,32}[ \t]{1,4})?BY[ \t]{1,4}"
            r"(?P<q>'|\\{0,7}\")(?P<secret>[^'\"\s\\]{1,256})(?P=q)"),
         check=_command_check, priority=CONTEXT),
    # A .pgpass entry, found from the file's name (its ``gpass``), before or after it.
    Rule("pgpass", (("gpass", r"(?<=pgpass)"),), _PGPASS_ENTRY, locate=_pgpass_entry,
         extend=_pgpass_rest, check=_command_check, priority=CONTEXT),
    # Found from its ``password`` (the generic rule's trigger literal, so the scan stops at
    # no new place), back to the ``machine`` or ``default`` that opens the entry.
    Rule("netrc", (("word", r"(?<=password)(?=[ \t])"),), rx(_NETRC), check=_netrc_check,
         locate=_netrc_start, priority=CONTEXT),
)  # fmt: skip
