"""Passwords given on a command line to tools beyond the database shells and curl of
shared/redact_context.py: the archivers (``zip -P``, ``7z -p``), ``openssl -k``, the LDAP
clients (``-w``), the SMB clients (``-U user%<pw>``), ``htpasswd -b``, Oracle's connect
strings (``sqlplus user/<pw>@db``), Windows' ``net use``/``net user`` and ``setx NAME value``.
(A tool's name is a word the gate looks for in every text, ~0.1 µs each: the common tools
only; ``rpcclient``, ``expdp`` and the like are left out.)

Each tool's manual names the argument that is the password (zip(1) ``-P``, 7-Zip's ``-p``
switch, openssl-enc(1) ``-k``, ldapsearch(1) ``-w``, smbclient(1) ``-U user%password``,
htpasswd(1) ``-b``, SQL*Plus ``username/password@connect_identifier``, ``NET USE`` and ``NET
USER`` help, ``SETX`` help). The tool's name must come first, before any pipe or separator on
the same line, and the flag is the tool's own, so the flag elsewhere is left alone; a plain
word after a spaced flag is prose ("use zip -P to set a password"), as for ``sshpass -p``; a
template's ``password`` or ``<password>`` is no value.
"""

from __future__ import annotations

import re

from shared.redact_context import (
    _KEYWORDS,
    _VALUE,
    RuleSpec,
    Scan,
    Seek,
    _fixed,
    _is_placeholder,
    _is_plain,
    _keyword_label,
    find_all,
)

__all__ = ["COMMANDS"]

# Words a command's template writes where the password goes ("sqlplus user/password@db").
_TEMPLATE_WORDS = frozenset(
    "password passwd pass pwd pw secret mypassword yourpassword newpassword".split()
)
# What may stand before a command's name: not part of a longer name or a path.
_HEAD = r"(?<![A-Za-z0-9_./-])"
# The rest of the line up to the flag: no pipe or separator between the tool and its flag.
_ARGS = r"(?:\.exe)?(?![A-Za-z0-9_-])[^\n|;&]{0,200}?(?<=[ \t])"


def _is_template(secret: str) -> bool:
    return _is_placeholder(secret) or secret.lower() in _TEMPLATE_WORDS


def _spaced(m: re.Match[str]) -> bool:
    """Whether blanks stand between the flag and the value."""
    at = m.start("q") if m.group("q") is not None else m.start("bare")
    return m.string[at - 1] in " \t"


# zip -P <pw> (spaced or glued); 7z/rar -p<pw> (glued only: a bare -p prompts); openssl -k
# <pw>; ldapsearch & co -w <pw>. The conditional groups tie each tool to its own flag, so
# ``ldapsearch -p 389 -w <pw>`` reads past the port.
_TOOL_FLAG = re.compile(
    _HEAD + r"(?:(?P<zip>zip)|(?P<glued>7z[arz]?|7zz|rar|unrar)|(?P<ossl>openssl)"
    r"|(?P<ldap>ldap(?:search|add|modify|delete|whoami|passwd|compare|modrdn|exop)))"
    + _ARGS
    + r"(?(zip)-P[ \t]*|(?(glued)-p|(?(ossl)-k[ \t]+|-w[ \t]*)))"
    + _VALUE
)


def _judge_tool_flag(m: re.Match[str], secret: str) -> str | None:
    if _is_template(secret):
        return None
    if _spaced(m) and m.group("bare") is not None and _is_plain(secret):
        return None  # "use zip -P to set a password"
    return "password"


# smbclient //host/share -U user%<pw> (also --user=user%<pw>).
_SMB_USER = re.compile(
    _HEAD
    + r"smbclient"
    + _ARGS
    + r"(?:-U|--user(?:name)?=?)[ \t]*(?P<q>[\"']?)[^\s%\"']+%(?P<secret>[^\s\"']+)(?P=q)"
)

# htpasswd -b[c] <file> <user> <pw>; htpasswd -nb <user> <pw>: the password is the argument
# after the file and the user (only the user with -n).
_HTPASSWD = re.compile(
    _HEAD + r"htpasswd(?:\.exe)?(?P<flags>(?:[ \t]+-[A-Za-z]+)+)"
    r"[ \t]+(?P<args>(?:(?![-\"'])[^\s\"']+[ \t]+){1,2})" + _VALUE
)


def _judge_htpasswd(m: re.Match[str], secret: str) -> str | None:
    flags = m.group("flags")
    if "b" not in flags or _is_template(secret):
        return None
    return "password" if len(m.group("args").split()) == (1 if "n" in flags else 2) else None


# sqlplus scott/<pw>@orcl (Oracle's "username/password@connect_identifier"; "sqlplus /nolog"
# and "/ as sysdba" have no user).
_ORACLE_LOGIN = re.compile(
    _HEAD + r"sqlplus" + _ARGS + r"(?:userid=)?[\"']?[A-Za-z][A-Za-z0-9_$#.]{0,63}/"
    r"(?P<secret>[^\s@/\"']{1,256})(?=[@\"' \t\n]|$)"
)


def _judge_oracle_login(m: re.Match[str], secret: str) -> str | None:
    return None if _is_template(secret) else "password"


# NET USE [X:] \\host\share <pw> [/user:name], NET USE ... /user:name <pw>;
# NET USER <name> <pw> [/add]: "*" prompts, "/..." is a switch. One rule, so that the gate
# looks for "net" alone.
_NET = re.compile(
    _HEAD + r"(?i:net)[ \t]+(?i:use)"
    r"(?:(?P<user>(?i:r))[ \t]+(?:\"[^\"\n]+\"|[^\s/\"]+)"
    r"|[ \t]+(?:[A-Za-z]:[ \t]+|\*[ \t]+)?\\\\[^\s\\]+\\[^\s]*(?:[ \t]+/(?i:user|u):[^\s]+)?)"
    r"[ \t]+(?P<q>[\"']?)(?P<secret>(?![/*])[^\s\"']+)(?P=q)(?P<switch>[ \t]+/)?"
)


def _judge_net_password(m: re.Match[str], secret: str) -> str | None:
    if _is_template(secret):
        return None
    if m.group("user") is not None and m.group("switch") is None and _is_plain(secret):
        return None  # "the net user count grew": prose
    return "password"


# SETX [/M] DB_PASSWORD <value>: Windows' persistent environment variable, named as an
# assignment's key is.
_SETX = re.compile(
    _HEAD + r"setx(?:\.exe)?(?:[ \t]+/m)?[ \t]+"
    r"(?P<key>[\"']?[A-Za-z0-9_.-]{0,64}?" + _KEYWORDS + r"[\"']?)[ \t]+" + _VALUE,
    re.I,
)


def _judge_setx(m: re.Match[str], secret: str) -> str | None:
    return None if _is_template(secret) else _keyword_label(m, secret)


def _starts(*names: str, folded: bool = False) -> Seek:
    """Where one of the commands' names starts (in the folded text for a case-blind one)."""

    def seek(scan: Scan) -> list[int]:
        return find_all(scan.folded if folded else scan.text, names)

    return seek


COMMANDS: tuple[RuleSpec, ...] = (
    (_TOOL_FLAG, _judge_tool_flag, _starts("zip", "7z", "rar", "unrar", "openssl", "ldap")),
    (_SMB_USER, _fixed("password"), _starts("smbclient")),
    (_HTPASSWD, _judge_htpasswd, _starts("htpasswd")),
    (_ORACLE_LOGIN, _judge_oracle_login, _starts("sqlplus")),
    (_NET, _judge_net_password, _starts("net", folded=True)),
    (_SETX, _judge_setx, _starts("setx", folded=True)),
)
