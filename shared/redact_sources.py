"""Secrets written in source code, beyond the assignments of shared/redact_context.py: a call
or a pair that names the credential in a string (``define('DB_PASSWORD', '...')``,
``os.Setenv("GITHUB_TOKEN", "...")``), a setter named for it (``setPassword("...")``), a call
that takes a user and then a password (``smtp.login(user, "...")``, ``BasicAuth("bob",
"...")``, ``mysqli_connect(host, user, "...")``), SQL that sets a password (``IDENTIFIED BY
'...'``, ``WITH PASSWORD '...'``), PowerShell's ``ConvertTo-SecureString '...'``, the Go MySQL
driver's ``user:<pw>@tcp(host)/db`` and a name and its value given as two fields (a
Kubernetes ``env`` entry, ``{"name": "DB_PASSWORD", "value": "..."}``, CloudFormation's
``ParameterKey=...,ParameterValue=...``).

Only a literal is a secret: a variable, a call, ``$VAR`` or ``${VAR}`` in its place stays, as
does a plain word ("login('bob', 'failed')"), a template's ``password`` and a value with a
space in it where the call reads one token. Where the forms come from: each library's own
signature (Python's ``smtplib.SMTP.login(user, password)``, requests' ``auth=(user, pass)``,
.NET's ``NetworkCredential(userName, password)``, PHP's ``mysqli_connect(host, user,
password)`` and ``PDO(dsn, user, password)``, JDBC's ``getConnection(url, user, password)``),
MySQL's and PostgreSQL's ``CREATE USER`` grammar, go-sql-driver/mysql's DSN format, and the
Kubernetes ``EnvVar`` and CloudFormation ``Parameter`` schemas.
"""

from __future__ import annotations

import re

from shared.redact_catalogue import is_random, looks_like_password
from shared.redact_context import (
    _KEYWORDS,
    RuleSpec,
    Scan,
    _is_placeholder,
    _is_plain,
    _judge_keyword_value,
    find_all,
)

__all__ = ["SOURCES"]

# What a call's quoted argument may hold: one line, no quote of its kind, no backslash.
_LITERAL = r"(?P<q>[\"'`])(?P<secret>[^\"'`\\\n]{1,2048})(?P=q)"
# Words a template writes where the password goes.
_TEMPLATE_WORDS = frozenset("password passwd pass pwd secret token changeme".split())


def _is_template(secret: str) -> bool:
    """A placeholder, a template's word, or a format's slot ("%s:%s@tcp(%s)")."""
    return _is_placeholder(secret) or secret.lower() in _TEMPLATE_WORDS or secret[:1] == "%"


def _judge_literal(m: re.Match[str], secret: str) -> str | None:
    """A literal in a call that takes a password: any one token that is no word or template."""
    if _is_template(secret) or _is_plain(secret) or any(c.isspace() for c in secret):
        return None
    return "password"


# --- a pair that names the credential in a string ----------------------------------------------
#
# ``define('DB_PASSWORD', '...')`` (WordPress' wp-config.php), ``os.Setenv("K", "...")``,
# ``localStorage.setItem("access_token", "...")``, ``props.put("mail.smtp.password", "...")``,
# ``req.Header.Set("X-Api-Key", "...")``: a quoted key naming a credential, a comma, a literal.
_NAMED_PAIR = re.compile(
    r"(?<=[(\[,])[ \t]*(?P<kq>[\"'])[A-Za-z0-9_.:-]{0,64}?" + _KEYWORDS + r"(?P=kq)"
    r"[ \t]*,[ \t]*" + _LITERAL + r"[ \t]*[),\]]",
    re.I,
)


def _judge_named_pair(m: re.Match[str], secret: str) -> str | None:
    """One token that is no flag: ``["get-auth-token", "--generate"]`` is a command's
    arguments, ``("passwd", "the pass is X")`` a sentence."""
    if secret.startswith("-") or any(c.isspace() for c in secret):
        return None
    return _judge_keyword_value(m, secret)


def _pair_starts(scan: Scan) -> list[int]:
    """Each "(", "[" or "," that a quote follows, blanks aside."""
    text = scan.text
    starts = []
    for at in find_all(text, ("(", "[", ",")):
        after = at + 1
        while text[after : after + 1] in (" ", "\t"):
            after += 1
        if text[after : after + 1] in ("'", '"'):
            starts.append(at + 1)
    return starts


# --- a setter named for the credential ----------------------------------------------------------
#
# ``user.setPassword("...")``, ``builder.password("...")``, ``.withPassword("...")``,
# ``client.set_api_key('...')``: a getter (``get_password("service")``, ``load_key("id_rsa")``)
# takes a name, and has no verb of these.
_SETTER = re.compile(
    r"(?<![A-Za-z0-9_])(?:(?:set|with|use|update|change|reset)_?[A-Za-z0-9]{0,24}?)?"
    + _KEYWORDS
    + r"[ \t]*\([ \t]*"
    + _LITERAL
    + r"[ \t]*\)",
    re.I,
)


def _setter_starts(scan: Scan) -> list[int]:
    """Where the word before a "(" that a quote follows starts."""
    text = scan.text
    starts = []
    for at in find_all(text, ("(",)):
        after = at + 1
        while text[after : after + 1] in (" ", "\t"):
            after += 1
        if text[after : after + 1] not in ("'", '"', "`"):
            continue
        head = at
        while head > 0 and (text[head - 1].isalnum() or text[head - 1] == "_"):
            head -= 1
        if head < at:
            starts.append(head)
    return sorted(set(starts))


def _judge_setter(m: re.Match[str], secret: str) -> str | None:
    if _judge_literal(m, secret) is None or _FILE_NAME.search(secret):
        return None  # setPrivateKey("key.pem"): a file's name
    return _judge_keyword_value(m, secret)


_FILE_NAME = re.compile(r"\.[A-Za-z][A-Za-z0-9]{1,4}$")


# --- a call that takes a user, then a password -------------------------------------------------
#
# The password is the second argument of a login or an auth object (``smtp.login(user,
# pw)``, ``BasicAuth(user, pw)``, ``NetworkCredential(user, pw)``, ``SetBasicAuth(user,
# pw)``, ``auth=(user, pw)``), and the third of a connection (``mysqli_connect(host, user,
# pw)``, ``new PDO(dsn, user, pw)``, ``getConnection(url, user, pw)``, ``pymysql.connect(host,
# user, pw)``).
_ARG = r"(?:\"[^\"\n]{0,256}\"|'[^'\n]{0,256}'|[^,()\"'\n]{1,128})"
_CREDENTIAL_CALL = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    r"[A-Za-z_]{0,30}(?i:auth(?:entication)?|login|credentials?)"
    r"[ \t]*\([ \t]*" + _ARG + r"[ \t]*,"
    r"|(?i:auth)[ \t]*=[ \t]*[(\[][ \t]*" + _ARG + r"[ \t]*,"
    r"|(?:[A-Za-z_]{0,30}(?i:connect(?:ion)?)|PDO)"
    r"[ \t]*\([ \t]*" + _ARG + r"[ \t]*,[ \t]*" + _ARG + r"[ \t]*,"
    r")[ \t]*" + _LITERAL + r"[ \t]*(?:[,)\]]|\.)"
)
_CALL_WORDS = ("auth", "login", "credential", "connect", "PDO")


def _call_starts(scan: Scan) -> list[int]:
    """Where the name that holds one of the call words starts, when a "(" or "=" follows it."""
    text, starts = scan.text, set()
    for at in scan.find(*(w.lower() for w in _CALL_WORDS)):
        end = at
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        while text[end : end + 1] in (" ", "\t"):
            end += 1
        if text[end : end + 1] not in ("(", "="):
            continue
        head = at
        while head > 0 and (text[head - 1].isalnum() or text[head - 1] == "_"):
            head -= 1
        starts.add(head)
    return sorted(starts)


# --- SQL -----------------------------------------------------------------------------------------
#
# MySQL's ``IDENTIFIED [WITH plugin] BY '...'``, Oracle's ``IDENTIFIED BY <pw>`` (unquoted),
# PostgreSQL's ``[ENCRYPTED] PASSWORD '...'`` after ``WITH`` or a role option.
_SQL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9_])(?i:(?P<by>identified(?:[ \t]+(?:with|using)[ \t]+[A-Za-z0-9_'\"]+)?"
    r"[ \t]+by(?:[ \t]+password)?)|(?:with|login|encrypted|unencrypted)[ \t]+password)"
    r"[ \t]+(?:(?P<q>['\"])(?P<secret>[^'\"\n]{1,256})(?P=q)|(?P<bare>[^\s;'\"`<>]{1,256}))"
)


def _judge_sql(m: re.Match[str], secret: str) -> str | None:
    if m.group("bare") is not None:
        # Only Oracle's IDENTIFIED BY takes a bare password, and prose says "identified by
        # a witness": a bare value must look like a password.
        if m.group("by") is None or not (looks_like_password(secret) or is_random(secret)):
            return None
    return None if _is_template(secret) else "password"


# --- PowerShell -----------------------------------------------------------------------------------

# (A backtick is PowerShell's escape character, not a quote.)
_SECURE_STRING = re.compile(
    r"(?i:ConvertTo-SecureString)(?:[ \t]+-String)?[ \t]+"
    r"(?P<q>[\"'])(?P<secret>[^\"'\n]{1,2048})(?P=q)"
)

# --- Go's MySQL DSN: user:password@tcp(host:port)/db ---------------------------------------------

_GO_DSN = re.compile(
    r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{1,64}:(?P<secret>[^\s@/:\"'`]{1,256})"
    r"@(?:tcp6?|udp|unix)\("
)

# --- a name and its value as two fields -----------------------------------------------------------
#
# Kubernetes' ``- name: DB_PASSWORD`` then ``value: ...`` on the next line; JSON's ``{"name":
# "DB_PASSWORD", "value": "..."}`` (and ``key``/``Name``/``Key``); CloudFormation's
# ``ParameterKey=DbPassword,ParameterValue=...``; HCL's ``name = "..."`` then ``value = "..."``.
# ``valueFrom:`` (a secretKeyRef) is no value.
_NAME_VALUE = re.compile(
    r"(?<![A-Za-z0-9_])[\"']?(?:name|key|parameterkey)[\"']?[ \t]*[:=][ \t]*"
    r"(?P<kq>[\"']?)[A-Za-z0-9_.:-]{0,64}?" + _KEYWORDS + r"(?P=kq)"
    r"[ \t]*(?:,[ \t]*|\r?\n[ \t]*(?:-[ \t]+)?)"
    r"[\"']?(?:parameter)?value[\"']?[ \t]*[:=][ \t]*"
    r"(?:(?P<q>[\"'])(?P<secret>[^\"'\n]{1,2048})(?P=q)|(?P<bare>[^\s,\"'`}\]]{1,2048}))",
    re.I,
)

SOURCES: tuple[RuleSpec, ...] = (
    (_SECURE_STRING, _judge_literal, None),
    (_SQL_PASSWORD, _judge_sql, None),
    (_GO_DSN, _judge_literal, None),
    (_NAME_VALUE, _judge_keyword_value, None),
    (_NAMED_PAIR, _judge_named_pair, _pair_starts),
    (_SETTER, _judge_setter, _setter_starts),
    (_CREDENTIAL_CALL, _judge_literal, _call_starts),
)
