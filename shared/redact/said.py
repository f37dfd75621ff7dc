"""Credentials said in prose beyond "my password is X" (shared/redact/prose.py): a user and a
password after a noun that says credentials ("credentials bob:<pw>", "login is admin / <pw>",
"username/password: admin/<pw>"), an e-mail address and its password as combo lists and notes
write them (``bob@example.com:<pw>``, ``bob@example.com / <pw>``), and an API key or a token
named in another language ("clé API : <key>", "API-Schlüssel: <key>", "APIキー: <key>",
"токен: <key>", "访问令牌: <key>"; Italian "chiave API", Portuguese "chave da API", Dutch
"API-sleutel" ...); a password said with logging in and no noun for it ("use <pw> to
log in", "log into the NAS with admin and <pw>") and a session cookie said in prose ("my
session cookie is <v>").

Each value is judged by its shape: a password after a user is a word with a digit or a symbol
and no "/" (a path, a URL), "login is at /auth/login" is a route; a key in another language is
judged as an English one is (16+ characters mixing digits and letters, or 20+ of three
classes with no verb). The nouns are the words password managers' and cloud consoles'
localised UIs use; a noun in ASCII is one more word the gate looks for in every text, so only
the common ones are here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from shared.redact.catalogue import entropy_bits, is_random, is_strong, looks_like_password
from shared.redact.keywords import _is_placeholder, _is_plain
from shared.redact.prose import _judge_said_key
from shared.redact.rule import RuleSpec, Scan

__all__ = ["SAID", "SAID_EXACT_ANCHORS", "SAID_TEXT_ANCHORS"]

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
    # (bounded: a run of "a@b.c:" with no blank must not be read from each "@" to its end)
    r"(?::|[ \t]+/[ \t]+)(?P<secret>[^\s\"'`]{0,255}[^\s\"'`.,;:?)])(?![^\s\"'`.,;:?)])"
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
# every text. "jeton" is the one exception, the word French users were found to paste a token
# after; ~0.1 µs a text.)
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


def _line_before(scan: Scan, at: int, word: re.Pattern[str], haystack: str) -> Iterator[int]:
    """Where ``word`` matches in ``haystack`` (the text or its folded form) up to 80 characters
    before ``at`` on its line."""
    low = max(scan.text.rfind("\n", 0, at) + 1, at - 80)
    return (found.start() for found in word.finditer(haystack, low, at))


def _before_noun_starts(scan: Scan) -> list[int]:
    """Each word's start up to 80 characters before a "pass" or "pw" on its line."""
    starts: set[int] = set()
    for at in scan.find("pass", "pw"):
        starts.update(_line_before(scan, at, _WORD, scan.text))
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


# A password said with logging in, with no noun for it: "use <pw> to log in", "log in with
# <pw>", "logged into the NAS with admin and <pw>", "sign in using bob / <pw>", "ssh into it
# with <pw> as root". What names the value is the verb, so the value must be a password's
# shape: a letter, a digit and a symbol or both cases, 8+, no word run together
# ("1Password", "GitHub", "Ctrl+C"), no version, path or address; after a user and "and" or
# "/", a letter and a digit will do ("admin and hunter2"). (The gate finds the rule by "log",
# "sign" and "ssh", ~0.1 µs a text; "login" was one of its words before.)
_LOGIN_VERB = (
    r"(?i:log(?:ged|ging)?[ \t]*(?:in(?:to)?|on(?:to)?)|login|sign(?:ed|ing)?[ \t]*(?:in(?:to)?|on)"
    r"|ssh(?:ed|'d)?[ \t]+in(?:to)?)(?![A-Za-z])"
)
_LOGIN_WITH = re.compile(
    r"(?<![A-Za-z])(?:(?i:use|try|enter|type)[ \t]+(?P<q>[\"'`]?)(?P<secret>[^\s\"'`]{6,64})(?P=q)"
    r"[ \t]+(?i:to)[ \t]+"
    + _LOGIN_VERB
    + r"|"
    + _LOGIN_VERB
    # up to four words before "with" or "using" ("into the NAS", "to the router as root")
    + r"(?:[ \t]+(?!(?i:with|using)[ \t])[^\s]{1,30}){0,4}?[ \t]+(?i:with|using|use)[ \t]+"
    r"(?:(?P<user>[^\s\"'`]{1,64})[ \t]+(?:(?i:and)|/)[ \t]+)?"
    r"(?P<q2>[\"'`]?)(?P<bare>[^\s\"'`]*[^\s\"'`.,;:?!)])(?P=q2))"
)
_ADDRESS_OR_PATH = re.compile(r"@[\w-]+\.[\w.-]|/|\\|^[-~$%<{]")


def _judge_login_with(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or _ADDRESS_OR_PATH.search(secret) or _VERSION.fullmatch(secret):
        return None
    if m.group("user") is not None:  # "admin and <pw>": the pair says what each is
        user_ok = _is_plain(m.group("user")) and m.group("user").lower() not in _NOT_A_USER
        if user_ok and looks_like_password(secret) and _DIGIT.search(secret):
            return None if _is_plain(secret) else "password"
    return "password" if _is_strong_password(secret) else None


def _is_strong_password(value: str) -> bool:
    """8+ with a letter, a digit and a symbol or both cases, and not words run together
    ("1Password", "Office365")."""
    if len(value) < 8 or not _DIGIT.search(value) or not _LETTER.search(value):
        return False
    if _PW_SYMBOL.search(value):
        return True  # (".", "_" and "-" are none: names and versions hold them)
    mixed = value.lower() != value and value.upper() != value
    return mixed and sum(len(w) for w in _RUN_WORD.findall(value)) * 2 < len(value)


_LETTER = re.compile(r"[A-Za-z]")
_PW_SYMBOL = re.compile(r"[^A-Za-z0-9._-]")
_RUN_WORD = re.compile(r"[A-Z]?[a-z]{3,}")


def _login_with_starts(scan: Scan) -> list[int]:
    """Each "log", "sign" or "ssh" that starts a word, and each "use", "try", "enter" or
    "type" up to 80 characters before one on its line."""
    text, starts = scan.text, set()
    for at in scan.find("log", "sign", "ssh"):
        if at and text[at - 1].isalpha():
            continue  # "blog", "design"
        starts.add(at)
        starts.update(_line_before(scan, at, _USE, scan.folded))
    return sorted(starts)


_USE = re.compile(r"(?<![a-z])(?:use|try|enter|type)[ \t]")


# An API key named in a Romance or another language whose noun for "key" is plain ASCII
# (Italian "chiave API", Portuguese "chave da API", Romanian "cheia API", Catalan "clau de
# l'API", Polish "klucz API", Dutch "API-sleutel", Turkish "API anahtarı"), then a separator
# or the language's "is" ("è", "é", "este", "és", "jest", "is"), then a value judged as "the
# key is <value>" is. The gate finds the rule by "api" (SAID_EXACT_ANCHORS), not by each noun
# (seven more words looked for in every text), then tries it only where a noun is too (no
# seek: a rule that seeks is tried on every text the gate names).
_ROMANCE_KEY = re.compile(
    r"(?<![A-Za-z])(?P<k_api_key>(?i:(?:chiave|chave|cheia|clau|klucz|token)[ \t]+"
    r"(?:(?:dell?['\u2019]?|della|da|de|do|d['\u2019]|de[ \t]+l['\u2019])[ \t]*)?api"
    r"|api[ \t-]?(?:sleutel|anahtar(?:ı|i))))"
    # the vendor after it: "chave de API do Stripe", "chiave API di OpenAI"
    r"(?:[ \t]+(?i:do|da|di|de|del|della|dla|van|von)[ \t]+[A-Za-z][\w.-]{1,30})?"
    r"(?:[ \t]*(?P<colon>[:=])[ \t]*"
    r"|[ \t]+(?P<verb>(?i:è|e|é|este|és|es|is))[ \t]*:?[ \t]+"
    # (Polish "to" and "jest": judged as with no verb, 20+ in a key's mix)
    r"|[ \t]+(?i:to|jest)[ \t]+)"
    r"[\"'`«“„]?(?P<secret>[A-Za-z0-9_+/=.~-]{15,}[A-Za-z0-9_+/=~-])"
)
# A session cookie said in prose: "my session cookie is <v>", "the cookie: <v>", "connect.sid
# cookie value is <v>". The value is judged as a Cookie header's (16+, digits and letters in
# a key's mix); a "name=value" is the Cookie header rule's (``Cookie: _ga=GA1.2...``).
_SAID_COOKIE = re.compile(
    r"(?i:cookie)s?(?:[ \t]+(?i:value|string|id))?"
    r"(?:[ \t]*[:=][ \t]*|[ \t]+(?i:is|was)[ \t]*:?[ \t]+)"
    r"[\"'`]?(?P<secret>[^\s\"'`;,=]{16,4096})(?![^\s\"'`;,])"
)


def _judge_said_cookie(m: re.Match[str], secret: str) -> str | None:
    value = secret.rstrip(".")
    if _is_placeholder(value) or "/" in value or "(" in value:
        return None
    shaped = is_strong(value) or (len(value) >= 24 and is_random(value))
    return "credential" if shaped and entropy_bits(value) >= 3.0 else None


def _said_cookie_starts(scan: Scan) -> list[int]:
    return scan.find("cookie")


SAID: tuple[RuleSpec, ...] = (
    (_CREDENTIAL_PAIR, _judge_credential_pair, _credential_pair_starts),
    (_EMAIL_PAIR, _judge_email_pair, _email_pair_starts),
    (_FOREIGN_KEY, _judge_said_key, None),
    (_BEFORE_NOUN, _judge_before_noun, _before_noun_starts),
    (_USER_THEN_PW, _judge_before_noun, _user_then_pw_starts),
    (_LOGIN_WITH, _judge_login_with, _login_with_starts),
    (_ROMANCE_KEY, _judge_said_key, None),
    (_SAID_COOKIE, _judge_said_cookie, _said_cookie_starts),
)

# The words, as written, one of which a text holds when a rule of these redacts (the gate
# finds the rule by them, before its pattern's own anchors): "log"/"sign"/"ssh" for a login
# said in prose (the pattern's own first words are "use" and "with"), "api" for a Romance
# noun's key. In any case they would be roots standing for other rules too: "log" for every
# rule of "login", "api" for every assignment rule of "apikey" (each then handed every text
# with "blog" or "API" in it).
SAID_TEXT_ANCHORS: dict[re.Pattern[str], tuple[str, ...]] = {}
SAID_EXACT_ANCHORS: dict[re.Pattern[str], tuple[str, ...]] = {
    # ("og" for "log" and "Log" would be found in every "dog"; a capital is one more letter
    # the gate's search stops at, "Log" and "Sign" start a sentence's instructions)
    _LOGIN_WITH: ("log", "Log", "sign", "Sign", "ssh", "SSH"),
    _ROMANCE_KEY: ("api", "API"),
}
