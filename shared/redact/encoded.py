"""Secrets that are base64 of something with no shape of its own, where the context says they are
secret: the values of a Kubernetes Secret (``kind: Secret``, every key under ``data:`` or
``stringData:``, whatever its name, in YAML or JSON, one manifest or a ``kubectl get -o yaml``
list), a value said to be a credential's base64 ("the creds are base64 <v>", "the token,
base64-encoded, is <v>"), and an ``auth`` value that decodes to ``user:password`` (Docker's
``config.json`` written as YAML, ``auth: <b64>``, or with a short password the catalogue's
``docker_config_auth`` turns down).

Where the forms come from: the Kubernetes Secret API (``data`` holds base64 strings,
``stringData`` plain ones, both maps of any key), ``kubectl get secret -o yaml|json``, and
Docker's ``config.json`` (``auths.<registry>.auth`` is base64 of ``user:password``). A
``ConfigMap``'s ``data:``, a Secret's ``metadata:`` and a Helm template's ``{{ ... }}`` stay.
"""

from __future__ import annotations

import base64
import binascii
import re
from functools import lru_cache

from shared.redact.keywords import _is_placeholder, _is_plain
from shared.redact.rule import RuleSpec, Scan

__all__ = ["ENCODED", "ENCODED_TEXT_ANCHORS"]

# --- a Kubernetes Secret's data ---------------------------------------------------------------
#
# A value line of ``data:``/``stringData:``: ``  key: value`` (plain or quoted), or ``  key: |``
# and the lines indented past the key (a block scalar: a whole file as the value). Which lines
# sit under a Secret's data is worked out once per text (_secret_lines); the judge turns down
# every other line.
_DATA_VALUE = re.compile(
    r"(?m:^)[ \t]+[\"']?[A-Za-z0-9_.-]{1,253}[\"']?[ \t]*:[ \t]*"
    r"(?:(?P<q>[\"'])(?P<secret>[^\"'\n]{1,65536})(?P=q)|(?P<bare>[^\s\"'|>#][^\n]{0,65535}?))"
    r"[ \t]*\r?(?=\n|$)"
)
_DATA_BLOCK = re.compile(
    r"(?m:^)(?P<ind>[ \t]+)[\"']?[A-Za-z0-9_.-]{1,253}[\"']?[ \t]*:"
    r"[ \t]*[|>][-+0-9]{0,2}[ \t]*\r?\n"
    r"(?P=ind)[ \t]+(?P<secret>[^\n]*[^\s](?:\r?\n(?P=ind)[ \t]+[^\n]*[^\s])*)"
)
# A JSON Secret's ``"data": {"key": "value", ...}``: each pair inside it.
_DATA_PAIR = re.compile(r"\"[^\"\n]{1,253}\"[ \t]*:[ \t]*\"(?P<secret>[^\"\n]{1,65536})\"")

_KIND_SECRET = re.compile(r"(?m)^[ \t]*(?:-[ \t]+)?kind:[ \t]*[\"']?Secret[\"']?[ \t]*\r?$")
_DATA_KEY = re.compile(r"(?m)^(?P<ind>[ \t]*(?:-[ \t]+)?)(?:data|stringData):[ \t]*\r?$")
_JSON_KIND = re.compile(r"\"kind\"[ \t]*:[ \t]*\"Secret\"")
_JSON_DATA = re.compile(r"\"(?:data|stringData)\"[ \t]*:[ \t]*\{(?P<body>[^{}]{0,65536})\}")


def _indent(line: str) -> int:
    """Where a line's key starts (a list item's "- " counts as indentation)."""
    stripped = line.lstrip(" \t")
    if stripped.startswith("- "):
        return len(line) - len(stripped[2:].lstrip(" \t"))
    return len(line) - len(stripped)


def _yaml_lines(text: str) -> set[int]:
    """The starts of the lines under a ``data:``/``stringData:`` key whose mapping also has
    ``kind: Secret`` at the same indentation."""
    lines, at = [], 0
    for line in text.split("\n"):
        lines.append((at, line))
        at += len(line) + 1
    found: set[int] = set()
    for i, (_, line) in enumerate(lines):
        m = _DATA_KEY.fullmatch(line.rstrip("\r"))
        if m is None:
            continue
        depth = len(m.group("ind"))
        if not _is_secret_mapping(lines, i, depth):
            continue
        for start, child in lines[i + 1 :]:
            if child.strip() and _indent(child) <= depth:
                break
            found.add(start)
    return found


def _is_secret_mapping(lines: list[tuple[int, str]], i: int, depth: int) -> bool:
    """Whether the mapping line ``i`` belongs to (its siblings at ``depth``, up to a line less
    indented or a document's ``---``) holds ``kind: Secret``."""
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(lines):
            line = lines[j][1]
            if line.startswith("---"):
                break
            if line.strip() and not line.lstrip().startswith("#"):
                indent = _indent(line)
                if indent < depth:
                    break
                if indent == depth and _KIND_SECRET.fullmatch(line.rstrip("\r")):
                    return True
                if step < 0 and indent == depth and line.lstrip().startswith("- "):
                    break  # the list item's first line: its siblings end here
            j += step
    return False


def _json_spans(text: str) -> list[tuple[int, int]]:
    """The spans of a JSON Secret's ``data``/``stringData`` objects: those whose enclosing
    object says ``"kind": "Secret"``."""
    spans = []
    for m in _JSON_DATA.finditer(text):
        low, high = _enclosing(text, m.start())
        if _JSON_KIND.search(text, low, high) is not None:
            spans.append(m.span("body"))
    return spans


def _enclosing(text: str, at: int) -> tuple[int, int]:
    """The object around ``at``: the nearest unclosed "{" before it to its "}" (braces in
    strings are not told apart: a Secret's manifest has none outside its values)."""
    depth, low = 0, 0
    for j in range(at - 1, -1, -1):
        if text[j] == "}":
            depth += 1
        elif text[j] == "{":
            if depth == 0:
                low = j
                break
            depth -= 1
    depth, high = 0, len(text)
    for j in range(at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            if depth == 0:
                high = j + 1
                break
            depth -= 1
    return low, high


@lru_cache(maxsize=8)
def _secret_lines(text: str) -> tuple[frozenset[int], tuple[tuple[int, int], ...]]:
    yaml = _yaml_lines(text) if _KIND_SECRET.search(text) else set()
    spans = tuple(_json_spans(text)) if _JSON_KIND.search(text) else ()
    return frozenset(yaml), spans


def _mentions_secret(scan: Scan) -> bool:
    return "Secret" in scan.text and ("data" in scan.text or "stringData" in scan.text)


def _yaml_starts(scan: Scan) -> list[int]:
    if not _mentions_secret(scan):
        return []
    return sorted(_secret_lines(scan.text)[0])


def _json_starts(scan: Scan) -> list[int]:
    if not _mentions_secret(scan):
        return []
    text, starts = scan.text, []
    for low, high in _secret_lines(text)[1]:
        at = text.find('"', low, high)
        while at >= 0:
            starts.append(at)
            at = text.find('"', at + 1, high)
    return starts


def _judge_data_value(m: re.Match[str], secret: str) -> str | None:
    """A value under a Secret's data: anything but a placeholder (``{{ .Values.pw }}``,
    ``<base64>``, ``${PW}``), an empty string or a comment."""
    if m.start() not in _secret_lines(m.string)[0]:
        return None
    return None if _is_placeholder(secret.strip()) or len(secret.strip()) < 3 else "secret"


def _judge_data_pair(m: re.Match[str], secret: str) -> str | None:
    if not any(low <= m.start() < high for low, high in _secret_lines(m.string)[1]):
        return None
    return None if _is_placeholder(secret.strip()) or len(secret.strip()) < 3 else "secret"


# --- a value said to be a credential's base64 ------------------------------------------------
#
# "the creds are base64 <v>", "the token, base64-encoded, is <v>", "db password in b64: <v>":
# "base64" (or "b64") after a credential's noun on the same line, then the value. The value
# must be base64 (its alphabet, a whole number of quads once padded) and no word.
_SAID_ENCODED = re.compile(
    r"(?<![A-Za-z0-9])(?i:base64|b64)(?:[ \t-]?(?i:encoded))?[,)\]]?"
    r"(?:[ \t]+(?i:string|value|form|version))?"
    r"(?:[ \t]*[:=]|[ \t]+(?i:is|are|was|reads)[ \t]*:?)?[ \t]*[\"'`]?"
    r"(?P<secret>[A-Za-z0-9+/][A-Za-z0-9+/_-]{7,4095}={0,2})(?![A-Za-z0-9+/=_-])"
)
# The same said after the value: "the secret's value is <v> (base64)".
_SAID_ENCODED_AFTER = re.compile(
    r"(?<![A-Za-z0-9+/=_-])(?P<secret>[A-Za-z0-9+/][A-Za-z0-9+/_-]{7,4095}={0,2})"
    r"[ \t]*[(\[][ \t]*(?i:base64|b64)(?:[ \t-]?(?i:encoded))?[ \t]*[)\]]"
)
# ``echo -n 'user:<pw>' | base64``: a Basic credential being made.
_ECHO_TO_BASE64 = re.compile(
    r"(?<![A-Za-z0-9_-])echo[ \t]+(?:-[neE]{1,3}[ \t]+)?(?P<q>[\"']?)[\w.@+-]{1,128}:"
    r"(?P<secret>[^\s\"':|]{1,256})(?P=q)[ \t]*\|[ \t]*(?:base64|openssl[ \t]+base64)\b"
)
_CREDENTIAL_NOUN = re.compile(
    r"(?i)(?<![a-z])(?:pass(?:word|phrase|wd)?|pwd|creds?|credentials?|secrets?|tokens?"
    r"|(?:api[ _-]?)?keys?|auth|login)(?![a-z])"
)


def _is_base64(value: str) -> bool:
    body = value.rstrip("=")
    if len(value) % 4 and len(value) != len(body):
        return False  # padded, but not to a quad
    return len(body) % 4 != 1  # no base64 leaves one character over


def _judge_said_encoded(m: re.Match[str], secret: str) -> str | None:
    text = m.string
    line_start = text.rfind("\n", 0, m.start()) + 1
    before = text[max(line_start, m.start() - 80) : m.start()]
    if _CREDENTIAL_NOUN.search(before) is None:
        return None
    if _is_plain(secret) or not _is_base64(secret) or secret.isdigit():
        return None  # "the password is base64 encoded", "base64 of 12345678"
    return "secret"


def _judge_echo(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or secret.startswith("$") or _is_plain(secret):
        return None  # "echo -n user:password | base64": a tutorial's
    return "password"


# --- an ``auth`` value that decodes to user:password -----------------------------------------
#
# Docker's config.json ``"auth": "<base64 of user:password>"`` (also as YAML, ``auth: <v>``)
# and npm's ``_auth``: what it decodes to says what it is.
_ENCODED_AUTH = re.compile(
    r"(?<![A-Za-z0-9])[\"']?_?(?i:auth)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?P<secret>[A-Za-z0-9+/]{4,1024}={0,2})(?![A-Za-z0-9+/=])"
)
_USER_PASSWORD = re.compile(r"[\w.@+-]{1,128}:[^\s:]{1,256}")


def _judge_encoded_auth(m: re.Match[str], secret: str) -> str | None:
    if len(secret) % 4:
        return None
    try:
        decoded = base64.b64decode(secret, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return "basic_auth" if _USER_PASSWORD.fullmatch(decoded) else None


# The Secret rules read the text around their match (``kind: Secret``): the gate also needs
# the word in the text (context.TEXT_ANCHORS), so a text with a ":" and no "secret"
# runs none of them.
ENCODED_TEXT_ANCHORS: dict[re.Pattern[str], tuple[str, ...]] = {
    _DATA_BLOCK: ("secret",),
    _DATA_VALUE: ("secret",),
    _DATA_PAIR: ("secret",),
}

ENCODED: tuple[RuleSpec, ...] = (
    (_DATA_BLOCK, _judge_data_value, _yaml_starts),
    (_DATA_VALUE, _judge_data_value, _yaml_starts),
    (_DATA_PAIR, _judge_data_pair, _json_starts),
    (_SAID_ENCODED, _judge_said_encoded, None),
    (_SAID_ENCODED_AFTER, _judge_said_encoded, None),
    (_ECHO_TO_BASE64, _judge_echo, None),
    (_ENCODED_AUTH, _judge_encoded_auth, None),
)
