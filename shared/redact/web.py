"""Credentials in HTTP and URLs: ``Authorization`` headers (``Bearer``, ``Basic``, any
scheme), credentialed URLs and connection strings (only the password goes), Azure's
``AccountKey=``, URL signatures and query keys, and AWS's secret access key beside its name."""

from __future__ import annotations

import re

from shared.redact.catalogue import is_random
from shared.redact.keywords import (
    _FILE_NAME,
    _is_next_key,
    _is_placeholder,
    _is_plain,
    _keyed_without_verb,
)
from shared.redact.rule import Scan


def _judge_auth_header(m: re.Match[str], secret: str) -> str | None:
    if _is_plain(secret) or _is_placeholder(secret) or _is_next_key(m):
        return None  # "Authorization: Bearer YOUR_TOKEN", "authorization: required"
    scheme = (m.group("scheme") or "").lower()
    return "basic_auth" if scheme == "basic" else "bearer_token"


def _judge_bearer(m: re.Match[str], secret: str) -> str | None:
    if len(secret) < 16 or not is_random(secret) or _is_next_key(m):
        return None
    return "bearer_token"


def _judge_basic(m: re.Match[str], secret: str) -> str | None:
    # base64 comes in quads; "Basic English" is a Capitalized word, not base64 of user:pass.
    return "basic_auth" if len(secret) % 4 == 0 and is_random(secret) else None


_DB_SCHEMES = frozenset(
    "postgres postgresql mysql mariadb mongodb mongodb+srv redis rediss amqp amqps mssql "
    "sqlserver oracle cockroachdb clickhouse couchdb neo4j neo4j+s bolt cassandra".split()
)

_PORT_THEN_PATH = re.compile(r"\d*/")


def _judge_url(m: re.Match[str], secret: str) -> str | None:
    if _PORT_THEN_PATH.match(secret):
        return None  # https://registry.npmjs.org:443/@scope/pkg: a port and a path
    if m.group("bare") is not None and not _keyed_without_verb(secret):
        return None  # a user's name, not a token
    return "connection_string" if m.group("scheme").lower() in _DB_SCHEMES else "credential_url"


_AUTH_HEADER = re.compile(
    r"(?<![A-Za-z0-9-])(?i:(?:proxy-)?authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9-]*)[ \t]+)?(?P<secret>[A-Za-z0-9._~+/-]+=*)"
)

_BEARER = re.compile(r"(?<![A-Za-z0-9])(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]+=*)")

_BASIC = re.compile(
    r"(?<![A-Za-z0-9])Basic[ \t]+(?P<secret>[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])"
)

_AWS_SECRET = re.compile(
    # (blanks as a repeat, not a literal space: the gate would look at every space of every text)
    r"(?<![A-Za-z0-9])[\"']?(?i:aws(?:[_.-]|[ \t]+)?secret(?:[_.-]|[ \t]+)?"
    r"(?:access(?:[_.-]|[ \t]+)?)?key|secret(?:[_.-]|[ \t]+)?access(?:[_.-]|[ \t]+)?key)"
    # ``aws configure`` prompts with the value it has in brackets: "[None]", "[****ABCD]"
    r"[\"']?(?:[ \t]+\[[^\]\n]{0,40}\])?[ \t]*(?:=|:|=>)[ \t]*[\"']?"
    r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)

_AZURE_KEY = re.compile(
    r"(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"
)

_URL_SIGNATURE = re.compile(
    r"(?<=[?&])(?:sig|[Ss]ignature|X-Amz-Signature|X-Goog-Signature)"
    r"=(?P<secret>[A-Za-z0-9%+/=_-]{16,})"
)

# ``?key=<key>`` (Google's and many APIs' query key), ``&auth=<token>``: a name that is only
# sometimes secret, so the value must look like a key (as "api key <value>" with no verb).
_URL_KEY = re.compile(r"(?<=[?&])(?:key|auth)=(?P<secret>[A-Za-z0-9_~.%+-]{20,}=*)(?![^\s&#\"'])")

# RFC 3986 §3.2.1: userinfo is "user:password" before "@"; the user may be empty (redis). A
# token alone is also sent as the user (``https://<token>@github.com/org/repo.git``, as
# GitHub's and GitLab's docs show for HTTPS clones): a user of 20+ characters shaped like a
# key, never a name ("https://bob@bitbucket.org/...").
# Bounded so "a://b:a://b:..." without an "@" stays linear.
_CREDENTIAL_URL = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{1,30})://"
    r"(?:[^\s:@/?#]{0,256}:(?P<secret>[^\s@]{1,256})|(?P<bare>[A-Za-z0-9_.~+-]{20,256}))@"
)


def _aws_secret_starts(scan: Scan) -> list[int]:
    """Where ``aws...`` or ``secret...`` starts, or the quote before it."""
    found = scan.find("aws", "secret")
    return sorted({start for at in found for start in (at - 1, at) if start >= 0})


def _judge_url_key(m: re.Match[str], secret: str) -> str | None:
    if not _keyed_without_verb(secret) or _FILE_NAME.search(secret):
        return None  # ?key=uploads/2024/IMG_1234.jpg: an object's name
    return "api_key" if m.string[m.start() : m.start() + 3] == "key" else "token"
