"""Credentials said in prose beyond "my password is X" (shared/redact_context.py): a user and a
password after a noun that says credentials ("credentials bob:<pw>", "login is admin / <pw>",
"username/password: admin/<pw>"), an e-mail address and its password as combo lists and notes
write them (``bob@example.com:<pw>``, ``bob@example.com / <pw>``), and an API key or a token
named in another language ("clé API : <key>", "API-Schlüssel: <key>", "APIキー: <key>",
"токен: <key>", "访问令牌: <key>").

Each value is judged by its shape: a password after a user is a word with a digit or a symbol
and no "/" (a path, a URL), "login is at /auth/login" is a route; a key in another language is
judged as an English one is (16+ characters mixing digits and letters, or 20+ of three
classes with no verb). The nouns are the words password managers' and cloud consoles'
localised UIs use; a noun in ASCII is one more word the gate looks for in every text, so only
the common ones are here.
"""

from __future__ import annotations

import re

from shared.redact_catalogue import looks_like_password
from shared.redact_context import (
    RuleSpec,
    Scan,
    _is_placeholder,
    _is_plain,
    _judge_said_key,
)

__all__ = ["SAID"]

# A user and a password after a noun that says credentials: "credentials bob:<pw>", "login is
# admin / <pw>", "creds for staging: deploy/<pw>", "username/password: admin/<pw>"; also with
# only a blank between them ("creds are admin <pw>").
_CREDENTIAL_PAIR = re.compile(
    r"(?<![A-Za-z0-9_])(?i:credentials?|creds|login"
    r"|(?:user(?:name)?|login)[ \t]*/[ \t]*pass(?:word)?)"
    r"(?:[ \t]+(?i:for|to|of|on)[ \t]+[^\n:=\"'`]{1,30}?)?"
    r"(?:[ \t]*[:=][ \t]*|[ \t]+(?i:is|are|was)[ \t]*:?[ \t]+|[ \t]+)"
    # (a word that cannot be the user is passed over here, not by the judge: "login for the
    # router is admin / <pw>" must read on past "for the")
    r"(?!(?i:a|an|at|in|on|the|is|to|for|via|with|from|by|of|and|or)[ \t])"
    r"(?P<user>[^\s:/\"'`]{1,64})(?:[ \t]*[:/][ \t]*|(?P<space>[ \t]+)"
    # (after a blank only a value with a digit and a symbol, as the judge wants: the regex
    # must not settle on "router is" and stop looking)
    r"(?=[^\s\"'`]*[0-9])(?=[^\s\"'`]*[^A-Za-z0-9\s\"'`]))"
    r"(?P<secret>[^\s\"'`]*[^\s\"'`.,;:?)])"
)
# Words that stand where the user would ("login is at /auth/login").
_NOT_A_USER = frozenset("a an at in on the is to for via with from by of and or".split())


def _judge_credential_pair(m: re.Match[str], secret: str) -> str | None:
    if m.group("user").lower() in _NOT_A_USER or _is_placeholder(secret) or "/" in secret:
        return None  # a path or a URL, not a password
    if m.group("space") is not None and not _spaced_pair(m.group("user"), secret):
        return None  # "username/password: see 1Password", "login is 2FA-only now"
    return "password" if looks_like_password(secret) and not _is_plain(secret) else None


def _spaced_pair(user: str, secret: str) -> bool:
    """With only a blank between them, the user is a name (not "see", "use", "ask") and the
    password has a digit and a symbol: "creds are admin Tr0ub4dor*68", not "see 1Password"."""
    if not _is_plain(user) or user.lower() in _NOT_A_USER_SPACED or "@" in secret:
        return False
    return _SYMBOL.search(secret) is not None and _DIGIT.search(secret) is not None


_NOT_A_USER_SPACED = frozenset("see use ask check try get set open reset change".split())
_SYMBOL = re.compile(r"[^A-Za-z0-9]")
_DIGIT = re.compile(r"[0-9]")


def _credential_pair_starts(scan: Scan) -> list[int]:
    """Where "cred" or "login" starts, and "user" before a "/pass"."""
    starts = set(scan.find("cred", "login"))
    for at in scan.find("pass"):
        slash = scan.folded.rfind("/", max(at - 3, 0), at)
        if slash >= 0:
            user = scan.folded.rfind("user", max(slash - 14, 0), slash)
            login = scan.folded.rfind("login", max(slash - 7, 0), slash)
            starts.update(x for x in (user, login) if x >= 0)
    return sorted(starts)


# An e-mail address, then ":" or " / ", then its password: a combo list's line, a note.
_EMAIL_PAIR = re.compile(
    r"(?<![\w.+-])(?P<user>[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+)"
    r"(?::|[ \t]+/[ \t]+)(?P<secret>[^\s\"'`]*[^\s\"'`.,;:?)])"
)


def _judge_email_pair(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or "/" in secret or _ADDRESS.search(secret) or _is_plain(secret):
        return None  # "bob@example.com / ana@example.com", "... / see the vault"
    return "password" if looks_like_password(secret) else None


_ADDRESS = re.compile(r"@[\w-]+\.[\w.-]")


def _email_pair_starts(scan: Scan) -> list[int]:
    """Where the address before each "@" starts, when ":" or " / " follows its domain."""
    text, starts = scan.text, []
    for at in scan.find("@"):
        end = at + 1
        while end < len(text) and (text[end].isalnum() or text[end] in "._-"):
            end += 1
        if text[end : end + 1] != ":" and text[end : end + 3].strip(" \t") != "/":
            continue
        head = at
        while head > 0 and (text[head - 1].isalnum() or text[head - 1] in "._+-"):
            head -= 1
        if head < at:
            starts.append(head)
    return starts


# An API key or a token named in another language: a noun for "key" next to "API" (German
# Schlüssel, Japanese キー, Chinese 密钥, Russian ключ; French "clé API", Spanish "clave de
# API"), or a word for "token" or "secret key" on its own (токен, 令牌, トークン, 토큰, French
# jeton, 秘密鍵, 私钥); then a separator or the language's "is", then a value judged as "the
# key is <value>" is. A noun in a script without spaces may follow another word ("访问令牌").
# (Every noun here is the gate's anchor, and none may be one character long or plain ASCII:
# the gate would otherwise find the rule by its separators, or look for one more word in
# every text. "jeton" is the one exception, a word the probe of round 8 found French users
# paste a token after; ~0.1 µs a text.)
_FOREIGN_KEY = re.compile(
    r"(?<![A-Za-z\u00c0-\u024f\u0400-\u04ff])"
    r"(?i:(?P<k_api_key>(?:api[ \t_-]*)?(?:schlüssel|キー|密钥|密鑰|ключ)(?:[ \t]+api)?"
    r"|clé[ \t]+(?:d['\u2019])?api|clave[ \t]+de[ \t]+api)"
    r"|(?P<k_token>токен|令牌|トークン|토큰|jeton)|(?P<k_secret>秘密鍵|私钥|私鑰))"
    r"(?:는|은|は|이|가)?"
    r"(?:[ \t]*(?P<colon>[:=：])[ \t]*"
    r"|[ \t]*(?:是|为|為|は)[ \t]*"
    r"|[ \t]+(?P<verb>(?i:est|ist|lautet|es|är|er|is|é|è))[ \t]*:?[ \t]+)"
    r"[\"'`«“„]?(?P<secret>[A-Za-z0-9_+/=.~-]{15,}[A-Za-z0-9_+/=~-])"
)


# The password said before its noun: "<pw> is my password", "<pw> was the wifi password",
# "use <pw> as the password" ("try <pw> as ..."). The value must read as a password (a letter
# and a digit or a symbol, no "/" or "@": no path, URL or address) and as no word. (The verbs
# are said in lookaheads: the gate finds the rule by its noun, not by "is" in every text.)
_BEFORE_NOUN = re.compile(
    r"(?:(?<!\S)(?i:use|try)[ \t]+(?P<q>[\"'`]?)(?P<secret>[^\s\"'`]{6,64})(?P=q)"
    r"[ \t]+(?=(?i:as)[ \t])[A-Za-z]{2}"
    # and in parentheses after it: "it's <pw> (the wifi password)"
    r"|(?P<bare>[^\s\"'`(]{6,64})(?:[\"'`]?[ \t]+(?=(?i:is|was)[ \t])[A-Za-z]{2,3}[ \t]|[ \t]+\())"
    r"[ \t]*(?:(?i:my|the|our|your|his|her|their|a)[ \t]+)?(?:[A-Za-z-]{1,20}[ \t]+){0,2}?"
    r"(?i:pass(?:word|phrase|code)|pw)(?![A-Za-z])"
    # the noun ends the clause: "... is the password policy version" names no password
    r"(?=[ \t]*(?:$|[\r\n.,;:!?)\]\"'`]|(?i:for|on|at|of|to|in|here|now|too|and|but|so)\b))"
)
_VERSION = re.compile(r"v?\d+(?:\.\d+)+[\w.+-]*", re.I)


def _judge_before_noun(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or _is_plain(secret) or "/" in secret or "@" in secret:
        return None
    if _VERSION.fullmatch(secret):
        return None  # "v1.2.3 is the password release"
    return "password" if looks_like_password(secret) else None


def _before_noun_starts(scan: Scan) -> list[int]:
    """Each word's start up to 80 characters before a "pass" or "pw" on its line."""
    text, starts = scan.text, set()
    for at in scan.find("pass", "pw"):
        low = max(text.rfind("\n", 0, at) + 1, at - 80)
        for word in _WORD.finditer(text, low, at):
            starts.add(word.start())
    return sorted(starts)


_WORD = re.compile(r"(?<!\S)\S")


# "u: admin p: <pw>", "user: bob, pw: <pw>": short labels for a user and a password, on one
# line (a "p:" alone is too common to read without the user's label before it).
_USER_THEN_PW = re.compile(
    r"(?<![A-Za-z0-9])(?i:u|user|login)[ \t]*:[ \t]*[^\s]{1,64}[ \t,;|/]+"
    r"(?i:p|pw|pwd|pass)[ \t]*:[ \t]*(?P<q>[\"'`]?)(?P<secret>[^\s\"'`]{4,128})(?P=q)"
)


def _user_then_pw_starts(scan: Scan) -> list[int]:
    if not scan.find("p:", "pw:", "pwd:", "pass:"):
        return []  # no password's label
    return scan.find("u:", "user:", "login:")


SAID: tuple[RuleSpec, ...] = (
    (_CREDENTIAL_PAIR, _judge_credential_pair, _credential_pair_starts),
    (_EMAIL_PAIR, _judge_email_pair, _email_pair_starts),
    (_FOREIGN_KEY, _judge_said_key, None),
    (_BEFORE_NOUN, _judge_before_noun, _before_noun_starts),
    (_USER_THEN_PW, _judge_before_noun, _user_then_pw_starts),
)
