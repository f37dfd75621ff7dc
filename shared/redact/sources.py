"""Secrets written in source code, beyond the assignments of shared/redact/assignments.py: a call
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

from shared.redact.catalogue import is_random, looks_like_password
from shared.redact.keywords import (
    _KEYWORDS,
    _is_placeholder,
    _is_plain,
    _judge_keyword_value,
    _keyword_label,
)
from shared.redact.rule import RuleSpec, Scan, find_all

__all__ = ["SOURCES"]

# What a call's quoted argument may hold: one line, no quote of its kind, no backslash.
_LITERAL = r"(?P<q>[\"'`])(?P<secret>[^\"'`\\\n]{1,2048})(?P=q)"
# Words a template writes where the password goes.
_TEMPLATE_WORDS = frozenset("password passwd pass pwd secret token changeme".split())


# A format's slot: printf's "%s", "%d", "%v", Python's "%(name)s".
_FORMAT_SLOT = re.compile(r"%(?:\(\w{1,40}\))?[-+ #0]*\d*(?:\.\d+)?[sdifqvxXr]")


def _is_template(secret: str) -> bool:
    """A placeholder, a template's word, or a format with slots ("%s:%s@tcp(%s)"; a password
    with a "%" in it is still one)."""
    if _is_placeholder(secret) or secret.lower() in _TEMPLATE_WORDS:
        return True
    if _FORMAT_SLOT.search(secret) is None:
        return False
    # the rest of a format is punctuation and words ("%s:%s@tcp(%s)/%s"); a password with
    # a "%" in it ("8XHR5oc%qzeL") has digits beside it
    return not any(c.isdigit() for c in _FORMAT_SLOT.sub("", secret))


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


def _judge_credential_call(m: re.Match[str], secret: str) -> str | None:
    """As ``_judge_literal``, for a call whose password is not where the password of most
    such calls is (see _POSITIONAL_CALL): Go's ``smtp.PlainAuth("", user, pw, host)`` holds
    the user where ``login(user, pw)`` holds the password."""
    if _OWNED_BY_POSITION.match(m.string, m.start()) is not None:
        return None
    return _judge_literal(m, secret)


# --- a call whose password is its n-th argument --------------------------------------------------
#
# Each library's own signature says where the password is: Go's ``smtp.PlainAuth(identity,
# username, password, host)``; Ruby's ``Net::SMTP.start(address, port, helo, user, secret,
# authtype)``, ``smtp.start(helo, user, secret, :login)`` and ``Net::FTP.new|open(host, user,
# passwd)``; Python's ``ftplib.FTP(host, user, passwd)``, ``poplib``'s ``pass_(pswd)``,
# ``keyring.set_password(service, username, password)``, ``urllib``'s
# ``add_password(realm, uri, user, passwd)``, python-ldap's ``simple_bind_s(who, cred)``,
# ``cx_Oracle.connect(user, password, dsn)`` and paramiko's ``connect(hostname, port,
# username, password)`` (a port in second place: also JavaMail's ``Transport.connect(host,
# port, user, password)``); PHP's ``ftp_login(ftp, username, password)``,
# ``ssh2_auth_password(session, username, password)``, ``ldap_bind(ldap, dn, password)`` and
# ``new mysqli(hostname, username, password)``; Node's ``new Sequelize(database, username,
# password)``; Spring's ``UsernamePasswordAuthenticationToken(principal, credentials)``;
# MailKit's ``Authenticate(userName, password)``; Rust's ``Credentials::new(username,
# password)``. The arguments before it may be literals, names or calls without arguments.
_POS_ARG = r"(?:\"[^\"\n]{0,256}\"|'[^'\n]{0,256}'|[^,()\"'\n]{1,128})(?:\.[A-Za-z_]\w{0,30}\(\))*"
_SKIP = r"[ \t]*" + _POS_ARG + r"[ \t]*,"
_POSITIONS = (
    (r"(?<=\.)pass_", 0),
    (
        r"(?:UsernamePasswordAuthenticationToken|[Aa]uthenticate|Credentials::new"
        r"|(?<=\.)(?:simple_)?bind_s|(?:cx_Oracle|oracledb)\.connect)",
        1,
    ),
    (
        r"(?:PlainAuth|ftp_login|ssh2_auth_password|ldap_bind|(?<=\.)set_password"
        r"|FTP|FTP_TLS|mysqli|Sequelize|Net::FTP\.(?:new|open))",
        2,
    ),
    (r"(?<=\.)add_password", 3),
    (r"Net::SMTP\.start", 4),
)
_POSITIONAL_CALL = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    + "|".join(rf"{name}[ \t]*\([ \t]*{_SKIP * index}" for name, index in _POSITIONS)
    # a port before the user: ``connect(host, 22, user, pw)``
    + r"|[A-Za-z_]{0,30}(?i:connect)[ \t]*\("
    + _SKIP
    + r"[ \t]*\d{2,5}[ \t]*,"
    + _SKIP * 1
    # Ruby's ``smtp.start(helo, user, secret, :login)``
    + r"|[A-Za-z_]\w{0,30}\.start[ \t]*\("
    + _SKIP * 2
    + r")[ \t]*"
    + _LITERAL
    + r"(?:\.[A-Za-z_]\w{0,30}\(\))*[ \t]*(?:[,)\]]|\.)"
)
# The calls above as _CREDENTIAL_CALL sees them, at its match's start: theirs, not its.
_OWNED_BY_POSITION = re.compile(
    r"(?:[A-Za-z_]{0,30}(?:PlainAuth|ftp_login|ssh2_auth_password|ldap_bind)"
    r"|(?:cx_Oracle|oracledb)\.connect"
    r"|[A-Za-z_]{0,30}(?i:connect)[ \t]*\(" + _SKIP + r"[ \t]*\d{2,5}[ \t]*,)"
)
_RUBY_AUTH_TYPE = re.compile(r"[ \t]*,[ \t]*:(?:plain|login|cram_md5)\b")


def _judge_positional(m: re.Match[str], secret: str) -> str | None:
    head = m.group()[: m.group().find("(")]
    if head.rstrip().endswith(".start") and "::" not in head:
        # smtp.start(helo, user, secret, :login): only with the auth type after the secret
        if _RUBY_AUTH_TYPE.match(m.string, m.end("q") + len(secret) + 1) is None:
            return None
    return _judge_literal(m, secret)


_POSITION_WORDS = ("pass_", "auth", "bind", "credentials", "connect", "ftp", "login", "password")
_POSITION_WORDS_EXACT = ("mysqli", "Sequelize", ".start")


def _positional_starts(scan: Scan) -> list[int]:
    """Where the name before a "(" starts, when it holds one of the calls' words."""
    text, starts = scan.text, set()
    found = [*scan.find(*_POSITION_WORDS), *find_all(text, _POSITION_WORDS_EXACT)]
    for at in found:
        end = at
        while end < len(text) and (text[end].isalnum() or text[end] in "_:."):
            end += 1
        if text[end : end + 1] not in ("(", " ", "\t"):
            continue
        head = at
        while head > 0 and (text[head - 1].isalnum() or text[head - 1] in "_:."):
            head -= 1
            if not text[head].isalnum() or head == 0 or not text[head - 1].isalnum():
                starts.add(head)
        starts.update((head, at))
    return sorted(starts)


# --- SQL -----------------------------------------------------------------------------------------
#
# MySQL's ``IDENTIFIED [WITH plugin] BY '...'``, Oracle's ``IDENTIFIED BY <pw>`` (unquoted),
# PostgreSQL's ``[ENCRYPTED] PASSWORD '...'`` after ``WITH``, a role option or the role's name.
_SQL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9_])(?i:(?P<by>identified(?:[ \t]+(?:with|using)[ \t]+[A-Za-z0-9_'\"]+)?"
    r"[ \t]+by(?:[ \t]+password)?)|(?:with|login|encrypted|unencrypted)[ \t]+password"
    # PostgreSQL's ``ALTER USER name PASSWORD '...'`` (WITH is optional)
    r"|(?:user|role)[ \t]+[A-Za-z0-9_\"'@%.-]{1,64}[ \t]+password)"
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

# --- Terraform: a variable named for a credential, and its default ---------------------------
#
# ``variable "db_password" { type = string  sensitive = true  default = "..." }`` (HCL's
# variable block, one line or many): the default is the literal. A block that goes on into
# nested braces (a validation block before the default) is not read.
_HCL_DEFAULT = re.compile(
    r"(?<![A-Za-z0-9_])variable[ \t]+\"[A-Za-z0-9_.-]{0,64}?" + _KEYWORDS + r"\"[ \t]*\{"
    r"[^{}]{0,600}?(?<![A-Za-z0-9_])default[ \t]*=[ \t]*\"(?P<secret>[^\"\n]{1,2048})\"",
    re.I,
)


def _judge_quoted_value(m: re.Match[str], secret: str) -> str | None:
    """A quoted literal under a credential's name: any value but a placeholder (as
    ``password = "sunflower"`` is one), the name's label."""
    if _is_placeholder(secret) or not secret.strip():
        return None
    return _keyword_label(m, secret)


# --- JSON whose quotes are escaped as HTML entities or \u escapes -------------------------------
#
# ``{&quot;password&quot;:&quot;...&quot;}`` (JSON in an HTML attribute, a Django template's
# output, an XML-escaped config), with ``&#34;``/``&#x22;`` or ``\u0022`` for the quote
# (``&apos;``/``&#39;`` for a single one): a key naming a credential, a colon, the value.
_ENTITY_QUOTE = r"(?:&quot;|&#0*34;|&#[xX]0*22;|&apos;|&#0*39;|&#[xX]0*27;|\\u0022|\\u0027)"
_ENTITY_JSON = re.compile(
    _ENTITY_QUOTE
    + r"[A-Za-z0-9_.-]{0,64}?"
    + _KEYWORDS
    + _ENTITY_QUOTE
    + r"[ \t]*:[ \t]*"
    + _ENTITY_QUOTE
    + r"(?P<secret>(?:(?!"
    + _ENTITY_QUOTE
    + r")[^\"'<>\n\\]){1,2048})"
    + _ENTITY_QUOTE,
    re.I,
)

SOURCES: tuple[RuleSpec, ...] = (
    (_SECURE_STRING, _judge_literal, None),
    (_HCL_DEFAULT, _judge_quoted_value, None),
    (_ENTITY_JSON, _judge_quoted_value, None),
    (_SQL_PASSWORD, _judge_sql, None),
    (_GO_DSN, _judge_literal, None),
    (_NAME_VALUE, _judge_keyword_value, None),
    (_NAMED_PAIR, _judge_named_pair, _pair_starts),
    (_SETTER, _judge_setter, _setter_starts),
    (_POSITIONAL_CALL, _judge_positional, _positional_starts),
    (_CREDENTIAL_CALL, _judge_credential_call, _call_starts),
)
