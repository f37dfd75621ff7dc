"""Labelled assignments: a key whose name says credential, a separator, then a value
(``DB_PASSWORD=...``, ``"token": "..."``, ``clientSecret:``, ``password = r'...'``,
``os.environ["DB_PASSWORD"] = "..."``), unless the value is code, a type, a placeholder or
prose; and the seek that finds where such a match can start."""

from __future__ import annotations

import re

from shared.redact.catalogue import is_random
from shared.redact.keywords import (
    _CODE_VALUE,
    _KEY,
    _LINE_LEAD,
    _NO_VALUE,
    _SEP,
    _WORDS_AFTER,
    _ends_in_separator,
    _is_next_key,
    _is_placeholder,
    _is_plain,
    _keyword_label,
    _line_lead,
)
from shared.redact.rule import MARKER, Scan

# What ``[A-Za-z0-9_.-]`` matches under re.I: ASCII and the four letters it folds to ASCII.
_KEY_CHARS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-\u0130\u0131\u017f\u212a"
)


def _is_code(m: re.Match[str], value: str) -> bool:
    """A call, a subscript, an attribute read, a null, ``f(api_key=api_key)`` or
    ``self.api_key = api_key``."""
    after = m.string[m.end() : m.end() + 1]
    if after == "(" or (after == "[" and not MARKER.match(m.string, m.end())):
        return True
    # ``self.token = token``, ``this.apiKey = apiKey``: the attribute set from its namesake
    key = m.group("key").strip("\"'-]").rsplit(".", 1)[-1].lstrip("_")
    if _NAMED_VARIABLE.fullmatch(value) is not None:
        return True  # ``f(page_token=token)``, ``password=DB_PASSWORD``: a variable
    return _CODE_VALUE.fullmatch(value) is not None or value.lower() == key.lower()


# A name that is only a credential's noun, or ends in one after "_": a variable or a constant.
_NAMED_VARIABLE = re.compile(
    r"(?:[A-Za-z0-9]+_)*(?i:token|secret|key|password|passwd|pwd|pw|pass|credentials?)"
)


# What a regex has and a password has not: a group's "(?", an escape class, a bracket
# expression, a counted repeat.
_REGEX_SYNTAX = re.compile(r"\(\?|\\[dswbDSWB]|\[\^?[A-Za-z0-9\\]|\{\d+,?\d*\}")

# A string literal's prefix: Python's r/b/f/u, C#'s @ and $, C++'s L and u8.
_LITERAL_PREFIX = re.compile(r"[rbfu]{1,2}|[@$]{1,2}|L|u8", re.I)


def _is_literal_prefix(m: re.Match[str], value: str) -> bool:
    """``password = r'...'`` once its literal is a marker: the "r" is no value of its own."""
    after = m.string[m.end() : m.end() + 1]
    return after in ("'", '"') and _LITERAL_PREFIX.fullmatch(value) is not None


def _is_user_before_marker(m: re.Match[str], value: str) -> bool:
    """``username/password: admin/[REDACTED:password]``: the user's name, its password gone."""
    return value[-1:] in ("/", ":") and MARKER.match(m.string, m.end()) is not None


def _is_loose_prose(m: re.Match[str], value: str) -> bool:
    """A plain word after a spaced separator mid-line: prose or a variable, not a value."""
    spaced = m.group("sep") != m.group("sep").strip()
    return spaced and _is_plain(value) and _LINE_LEAD.fullmatch(_line_lead(m)) is None


def _is_working_dir(m: re.Match[str], value: str) -> bool:
    return (m.group("k_password") or "").lower() == "pwd" and value[:1] in ("/", "~")


# Type names a ``key: Type`` annotation names (Python, TypeScript, pydantic, Go, Rust).
_TYPE_NAME = re.compile(
    r"(?:str|bytes|int|float|bool|dict|list|tuple|Any|None|object|SecretStr|SecretBytes"
    r"|Optional|Union|Literal|string|number|boolean|String|Option|Vec|u8|i32|i64)"
    r"(?:\[.*\]|\|.*)?"
)

_DEFAULT_AFTER = re.compile(r"[ \t]*=(?!=)")

_YAML_TAG = re.compile(r"!!?[A-Za-z][A-Za-z_.:/-]*|!")


def _is_declaration(m: re.Match[str], value: str) -> bool:
    """``api_key: str``, ``token: int = 0``, ``secret: !vault |``, ``token: `gh auth
    token` ``: a type, a YAML tag or a command, not a literal. (A "!" after "=" is no tag:
    ``DB_PASSWORD=!Vault7xQ2``; nor is one with a digit: YAML's and CloudFormation's tags are
    words, ``!vault``, ``!Ref``, ``!GetAtt``.)"""
    if value.startswith("!"):
        return _YAML_TAG.fullmatch(value) is not None
    sep = m.group("sep").strip()
    if m.group("q") == "`" or value.startswith("$("):
        return True
    if ":" in sep and "=" in sep:  # annotated: a bare default is a name or a number
        return not is_random(value)
    if sep != ":":
        return False
    rest = m.string[m.end() : m.end() + 8]
    return _TYPE_NAME.fullmatch(value) is not None or _DEFAULT_AFTER.match(rest) is not None


def _is_prose_after_label(m: re.Match[str], value: str) -> bool:
    """ "Secret: she is planning a party", "password: see the vault": a plain word that more
    words follow is a sentence; a lone word ("password: sunshine") is still a value."""
    return _is_plain(value) and _WORDS_AFTER.match(m.string, m.end()) is not None


def _judge_assignment(m: re.Match[str], secret: str) -> str | None:
    if m.group("ref") is not None or _is_placeholder(secret):
        return None
    if m.group("q") == "`" and (" " in secret or secret.startswith("$")):
        return None  # token: `gh auth token`: a command substitution
    if "r" in (m.group("pre") or "").lower() and _REGEX_SYNTAX.search(secret):
        return None  # _KEY = r"(?P<key>[A-Za-z0-9_.-]{0,64}?": a raw string that is a regex
    if m.group("bare") is not None and (
        secret.lower() in _NO_VALUE  # "pw: n/a"
        or _is_code(m, secret)
        or _is_literal_prefix(m, secret)
        or _is_user_before_marker(m, secret)
        or _is_loose_prose(m, secret)
        or _is_working_dir(m, secret)
        or _is_next_key(m, "bare")
        or _is_declaration(m, secret)
        or _is_prose_after_label(m, secret)
    ):
        return None
    return _keyword_label(m, secret)


_STOP = r"\s\"'`,;|<>()\[\]{}"


def _bare(stop: str, enders: str) -> str:
    # A bare value drops sentence punctuation ("password=hunter2.") unless a separator ends it
    # ("Password=Hunter2!;" in a connection string keeps its "!"): the possessive first branch
    # takes the whole run or nothing. Capped at 2 KiB (an AWS session token fits) so that
    # runs like "password=password=..." stay linear.
    # A closing "!" stays with the value: passwords end in one far more often than a
    # sentence stated as an assignment does, and redacting one "!" too many costs nothing.
    return rf"(?!=)(?:[^{stop}]{{1,2048}}+(?=[{enders}])|[^{stop}]{{0,2047}}[^{stop}.?:])"


_BARE_IN_QUERY = _bare(_STOP + "&", ";&")

_BARE = _bare(_STOP, ";")

_ASSIGNMENT = re.compile(
    # In a query string (the key follows ? or &) "&" ends the value; elsewhere it is part of
    # it ("DB_PASSWORD=Tr0ub&dor").
    r"(?<![A-Za-z0-9_.-])(?P<query>(?<=[?&]))?"
    + _KEY
    + _SEP
    + r"(?:(?P<ref>\$\{[^}\n]*\}|\{\{[^}\n]*\}\})"
    # A literal's prefix (Python's r/b/f, C#'s @ and $, C++'s L and u8) and triple quotes
    # belong to the quoting: ``password = r'...'`` assigns what is inside the quotes.
    # A literal wrapped in parentheses, maybe on the next line: ``password = (\n    "..."``.
    r"|(?:\((?:[ \t]*\r?\n)?[ \t]*)?(?P<pre>[rbfu]{1,2}|[@$]{1,2}|L|u8)?(?P<q>\"\"\"|'''|[\"'`])"
    r"(?P<secret>(?:(?!(?P=q))[^\\\n]|\\.)*)(?P=q)"
    rf"|(?P<bare>(?(query){_BARE_IN_QUERY}|{_BARE})))",
    re.I,
)


# The assignment pattern starts with an optional quote and up to 64 key characters before its
# keyword, so a search tries it at every word: most of its cost on a typical text. A match
# starts where a run of key characters starts (its lookbehind forbids a key character before
# it) or at the quote before one, and that run holds a keyword; so the starts are found from
# the keywords, walking back, and the pattern is only tried there.

# Every keyword of _KEYWORDS holds one of these (``private_key`` and the like hold ``key``;
# the walk back from it reaches the key's start all the same).
_ASSIGNMENT_WORDS = (
    "pass",
    "pw",
    "psk",
    "secret",
    "token",
    "key",
    "auth",
    "cred",
    "cookie",
    "sess",
    "salt",
    "pepper",
)


def _assignment_starts(scan: Scan) -> list[int]:
    text = scan.text
    found = scan.find(*_ASSIGNMENT_WORDS)
    starts: set[int] = set()
    for at in found:
        if not _ends_in_separator(text, at, keyword=True):
            continue  # the run that holds this keyword is no key, or has no value
        low = max(0, at - 64 - len("encryption_"))  # the prefix, then the keyword's head
        while at > low and text[at - 1] in _KEY_CHARS:
            at -= 1
        starts.add(at)
        if at and text[at - 1] in "\"'":
            starts.add(at - 1)
    return sorted(starts)
