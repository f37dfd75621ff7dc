"""Credentials in structured text: JSON escaped inside a JSON string (a secret manager's
``SecretString``), XML attributes and elements whose name says credential, and a YAML key whose
value is on the next, indented line."""

from __future__ import annotations

import re

from shared.redact.keywords import _KEYWORDS, _is_random_line, _judge_keyword_value
from shared.redact.rule import Scan

# A JSON document inside a JSON string, as ``aws secretsmanager get-secret-value`` prints its
# SecretString: {\"username\":\"admin\",\"password\":\"...\"}.
_ESCAPED_JSON = re.compile(
    r'\\"[A-Za-z0-9_.-]{0,64}?' + _KEYWORDS + r'\\"[ \t]*:[ \t]*\\"(?P<secret>[^"\\\n]{1,2048})\\"',
    re.I,
)

# <add key="ApiKey" value="..."/>, <property name="db.password" value="..."/>, <param
# name="apiToken" value="..."/> (.NET appSettings, Spring and Hibernate configs, Ant, log4j):
# the key attribute names a credential, the value attribute holds it; <entry
# key="password">...</entry> (Java's properties XML) and <setting name="ClientSecret"
# ...><value>...</value> (.NET user settings) hold it as the element's text.
_XML_ATTRIBUTE = re.compile(
    r"<[A-Za-z][A-Za-z0-9_.:-]{0,64}[ \t][^<>]{0,200}?(?<=[ \t])(?:key|name)[ \t]*=[ \t]*"
    r"(?P<kq>[\"'])[A-Za-z0-9_.:-]{0,64}?" + _KEYWORDS + r"(?P=kq)"
    r"(?:[^<>]{0,200}?(?<=[ \t])value[ \t]*=[ \t]*(?P<q>[\"'])(?P<secret>[^\"'<>\n]{1,2048})(?P=q)"
    r"|[^<>]{0,200}>\s{0,40}(?:<value>)?(?P<bare>[^<>\s][^<>\n]{0,2047})<)",
    re.I,
)

# The same attributes the other way round: <add value="..." key="DbPassword"/>, <property
# value="..." name="apiToken"/> (attribute order means nothing in XML, and tools write both).
_XML_ATTRIBUTE_REVERSED = re.compile(
    r"<[A-Za-z][A-Za-z0-9_.:-]{0,64}[ \t][^<>]{0,200}?(?<=[ \t])value[ \t]*=[ \t]*"
    r"(?P<q>[\"'])(?P<secret>[^\"'<>\n]{1,2048})(?P=q)"
    r"[^<>]{0,200}?(?<=[ \t])(?:key|name)[ \t]*=[ \t]*"
    r"(?P<kq>[\"'])[A-Za-z0-9_.:-]{0,64}?" + _KEYWORDS + r"(?P=kq)",
    re.I,
)

# <password>...</password>, <ApiKey>...</ApiKey> (XML configs, SOAP, .NET settings).
_XML_ELEMENT = re.compile(
    r"<(?P<tag>[A-Za-z0-9_.:-]{0,64}?" + _KEYWORDS + r")>(?P<secret>[^<>\n]{1,2048})</(?P=tag)>",
    re.I,
)


# A YAML key whose value is on the next, indented line: a block scalar (``password: |``) or a
# plain value wrapped by a formatter (``token:`` then ``  Zx9Qm...``).
_YAML_NEXT_LINE = re.compile(
    r"(?m:^)[ \t]*(?:- )?[\"']?[A-Za-z0-9_.-]{0,64}?" + _KEYWORDS + r"[\"']?:"
    r"[ \t]*(?:[|>][-+0-9]{0,2})?[ \t]*\r?\n[ \t]+[\"']?"
    # a "#" after a blank starts a comment; glued to the value it is part of it (YAML 1.2 §6.6)
    r"(?P<secret>[^\s\"'#](?:[^\n\"'#]|(?<![ \t])#){0,2047}?)"
    r"[\"']?[ \t]*(?=\r?\n|$)",
    re.I,
)


def _judge_next_line(m: re.Match[str], secret: str) -> str | None:
    """The value on the next line, unless that line is a key of its own (a nested mapping:
    ``password:`` then ``  file: /etc/pw``), a placeholder, code or a sentence."""
    if _KEY_LINE.match(secret) or (" " in secret.strip() and not _is_random_line(secret)):
        return None
    return _judge_keyword_value(m, secret.strip())


_KEY_LINE = re.compile(r"[A-Za-z0-9_.-]+:(?:\s|$)")


# Lines a YAML key with its value on the next line could start (a line ending in ":" or in a
# block indicator), and lines a table row could start ("|...", or a first CSV cell with no
# space in it): the two rules are tried only there, so prose costs them one scan.
_KEY_ALONE = re.compile(r"(?m)^(?=[^\n]{1,90}:[ \t]*(?:[|>][-+0-9]{0,2})?[ \t]*\r?\n[ \t])")


def _yaml_starts(scan: Scan) -> list[int]:
    return [m.start() for m in _KEY_ALONE.finditer(scan.text)]
