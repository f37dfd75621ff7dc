"""Passwords on the common clients' command lines (``mysql -p<pw>``, ``sshpass -p``,
``redis-cli -a``, the mongo shells, ``sqlcmd -P``, ``docker login -p``, ``curl -u user:<pw>``)
and any flag whose name says credential (``--password <pw>``, ``--token <t>``). Other tools'
command lines are in shared/redact/commands.py."""

from __future__ import annotations

import re

from shared.redact.keywords import (
    _CODE_VALUE,
    _KEYWORDS,
    _is_next_key,
    _is_placeholder,
    _is_plain,
    _keyword_label,
)
from shared.redact.rule import Scan, find_all


def _judge_cli_flag(m: re.Match[str], secret: str) -> str | None:
    if _is_plain(secret) or _is_placeholder(secret) or _CODE_VALUE.fullmatch(secret):
        return None  # "pass the --token flag"
    return None if _is_next_key(m) else _keyword_label(m, secret)


# (a long flag may glue words before its keyword: ``--authtoken``, ``--dbpassword``,
# ``--clientsecret``; "pass", "pw" and "psk" must still start a word: ``--bypass``)
_CLI_FLAG = re.compile(
    r"(?<!\S)(?:--(?:[A-Za-z0-9]+-){0,4}[A-Za-z0-9]{0,16}?|-(?:[A-Za-z0-9]+-){0,4})"
    + _KEYWORDS
    + r"[ \t]+[\"'`]?(?P<secret>(?!-)[^\s\"'`]+)",
    re.I,
)


# mysql & co take ``-p<password>`` glued (a spaced ``-p`` prompts), sshpass ``-p <password>``,
# redis-cli ``-a <password>``, the mongo shells ``-p <password>``; curl ``-u user:<password>``
# (also ``--user``; the user may be empty, ``-u :<token>``), HTTPie/xh ``-a user:<password>``.
# The command must come first on the same line, before any pipe or separator, so "-p"
# elsewhere in prose is left alone.

_VALUE = (
    r"(?:(?P<q>[\"'])(?P<secret>(?:(?!(?P=q))[^\n\\]|\\.)+)(?P=q)"
    r"|(?P<bare>(?![-\"'`])[^\s\"'`]+))"
)

_COMMAND_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9_./-])(?P<cmd>mysql(?:dump|admin|import|sh)?|mariadb(?:-dump)?|sshpass"
    r"|redis-cli|mongo(?:sh|dump|restore)?|sqlcmd|(?:docker|podman|az)[ \t]+login)"
    r"(?![A-Za-z0-9_-])"
    r"[^\n|;&]{0,200}?(?<=[ \t])(?P<flag>-p|-a|-P)(?P<gap>[ \t]*)" + _VALUE
)

# The flag that takes the password (every other command: -p). ``docker login`` only: in
# ``docker run -p 8080:80`` the flag is a port.
_FLAG_OF = {"sshpass": "-p", "redis-cli": "-a", "sqlcmd": "-P"}

_CURL_USER = re.compile(
    r"(?<![A-Za-z0-9_./-])(?:curl|https?|xh)(?![A-Za-z0-9_:-])[^\n|;&]{0,300}?(?<=[ \t])"
    r"(?:-u|--user|-a|--auth)(?:[ \t]+|=)?(?P<q>[\"']?)[^\s:\"'@]*:"
    r"(?P<secret>[^\s\"'`]+)(?P=q)"
)


def _command_starts(scan: Scan) -> list[int]:
    """Where a command of _COMMAND_PASSWORD starts (the pattern is case-sensitive)."""
    names = ("mysql", "mariadb", "sshpass", "redis-cli", "mongo", "sqlcmd", "docker", "podman")
    return sorted({*find_all(scan.text, names), *find_all(scan.text, ("az ", "az\t"))})


def _curl_starts(scan: Scan) -> list[int]:
    return find_all(scan.text, ("curl", "http", "xh"))


def _judge_command_password(m: re.Match[str], secret: str) -> str | None:
    command = " ".join(m.group("cmd").lower().split())
    if m.group("flag") != _FLAG_OF.get(command, "-p") or _is_placeholder(secret):
        return None
    if not m.group("gap"):
        return "password"  # glued: "-proot" is always the password
    if command.startswith(("mysql", "mariadb")):
        return None  # a spaced -p prompts; what follows is the database
    # "sshpass -p is in the docs": a bare plain word after a spaced flag is prose.
    return None if m.group("bare") is not None and _is_plain(secret) else "password"


def _judge_password_value(m: re.Match[str], secret: str) -> str | None:
    return None if _is_placeholder(secret) else "password"


def _flag_starts(scan: Scan) -> list[int]:
    """Each ``-`` at the start of the text or after whitespace."""
    text = scan.text
    return [at for at in find_all(text, ("-",)) if not at or text[at - 1].isspace()]
