"""A password, passphrase, PIN or key said in an English sentence: "my password is X", "the
wifi password X", "seed phrase: ...", "door code: 7391#", "the key is <key-shaped value>", each
judged by the value's shape so that prose survives. Other languages' nouns are in
shared/redact/languages.py, other phrasings in shared/redact/said.py."""

from __future__ import annotations

import re

from shared.redact.catalogue import entropy_bits, is_random, looks_like_password
from shared.redact.keywords import (
    _FILE_NAME,
    _is_placeholder,
    _is_plain,
    _keyed_without_verb,
    _line_lead,
)
from shared.redact.rule import Scan

_SAID_PASSWORD = re.compile(
    # "my password is X", "the password for the router is X", "wifi password X"; a quoted
    # value is taken whole, spaces and all ("is 'purple monkey dishwasher'").
    # "password's X"; "I changed my password to X" (a "to" counts only after set/change/reset).
    # Also the short nouns ("pw", "pwd", "passwd", "the pass is X"), an arrow or a dash for
    # "is" ("password -> X", "Password - X"), and a colon after a qualifier ("password
    # (prod): X", "the password for bob@example.com: X", "pw for the nas = X") where an
    # assignment sees no key; "vnc password set to X".
    r"(?<![A-Za-z0-9_])(?P<noun>(?i:pass(?:word|phrase|code|wd)?|pwd?))"
    r"(?:[ \t]*(?:\([^()\n]{1,40}\)|\[[^\[\]\n]{1,40}\])[ \t]*(?P<colon>:)[ \t]*"
    # (once said, the value may start the next line: "my password is" then a line break)
    # (the English noun in a Romance sentence too: "la password del wifi è X")
    r"|[ \t]+(?i:for|to|of|on|at|del|della|dello|di|du|des|de|da|do)[ \t]+[^\n\"'`]{1,40}?"
    r"(?:[ \t]+(?P<verb>(?i:is|was|è|é|est|es|era))[ \t]*:?|[ \t]*(?P<colon2>[:=]))"
    r"(?:[ \t]+|[ \t]*\r?\n[ \t]*)"
    r"|(?:[ \t]+|(?=['\u2019]s[ \t]))"
    r"(?:(?P<verb2>(?i:(?:(?:is|was|has[ \t]+been|got)[ \t]+)?"
    r"(?:re)?(?:set|changed|updated|rotated)[ \t]+to|is|was|to|in|en|para|è|hai|['\u2019]s)"
    r"|->|=>|\u2192|[-\u2013\u2014])[ \t]*:?"
    r"(?:[ \t]+|[ \t]*\r?\n[ \t]*))?)"
    r"(?:(?P<q>[\"'`])(?P<secret>[^\n\"'`]{1,200})(?P=q)"
    r"|(?P<bare>[^\s\"'`]*[^\s\"'`.,;:?)]))"
)

# A PIN or a lock's code, said or labelled: "my PIN is 4821", "door code: 7391#", "PIN=2468".
_PIN_NOUN = (
    # (no literal with a space in it: the gate would look at every space of every text)
    r"(?:pin(?:(?:[ \t]+|-)(?:code|number))?|(?:door|gate|alarm|garage|safe|lock|keypad)[ \t]+code)"
)

_PIN = re.compile(
    r"(?<![^\W\d_])(?i:" + _PIN_NOUN + r"(?:[ \t]*[:=]|[ \t]+(?:is|was)(?![\w])))"
    r"[ \t]*:?[ \t]*(?P<secret>\d{4,8}#?)(?![\w#])"
)

# "pin" and "code" are in "shopping", "opinion" and every text about code: the rule is tried
# only where the noun is followed by a separator or "is"/"was" (on the folded text).
_PIN_AT = re.compile(_PIN_NOUN + r"(?:[ \t]*[:=]|[ \t]+(?:is|was)(?![\w]))")


def _pin_starts(scan: Scan) -> list[int]:
    text, low = scan.text, scan.folded
    starts = [at for at in scan.find("pin") if _PIN_AT.match(low, at)]
    for at in scan.find("code"):
        head = at - 1
        while head > 0 and text[head - 1].isalpha():
            head -= 1
        if head < at - 1 and _PIN_AT.match(low, head):
            starts.append(head)
    return sorted(starts)


# The same in the Romance languages only: their "in", "en", "para" say the new value after an
# English noun ("ho cambiato la password in X"), where English "changed the password in
# 1Password" says where it is kept.
_CAMBIO = re.compile(r"(?i:cambi|mud|modific|alter|redefin|chang(?:é|er|ez))")


# A passphrase or a wallet's seed phrase is several words: after "passphrase:" or "seed
# phrase is", the rest of the sentence goes, not only its first word.
_PASSPHRASE = re.compile(
    # (no literal with a space in it: the gate would look at every space of every text)
    r"(?<![A-Za-z0-9_])(?i:pass[_-]?phrase|(?:seed|recovery)[ \t_-]{1,3}phrase|mnemonic)"
    r"(?:[ \t]+(?i:for|to|of|on)[ \t]+[^\n:=\"'`]{1,40}?)?"
    r"[ \t]*(?:[ \t](?i:is|was)[ \t]*:?|:|=)[ \t]*[\"'`]?"
    r"(?P<secret>[^\n.;,\"'`]{0,300}[^\s.;,:?\"'`])"
)


# A credential noun, "is"/"was", then one run of 16+ key characters with a digit, a letter and
# 3+ bits of entropy per character: "the key is 9fQ2...", not "the key point is", "the token
# is 2000" or "the secret is patience". The catalogue's keyword entries name the vendor when
# they know it; this catches the rest.

_SAID_KEY = re.compile(
    # also labelled ("API key: ...", "**Encryption key:** ...") and glued to a name by "_"
    # ("client_secret 8fJk..."); the value's shape decides, as after "is"
    r"(?<![A-Za-z0-9])(?i:(?P<k_api_key>(?:api[ _-]?)?key)|(?P<k_token>token)"
    r"|(?P<k_secret>secret))s?(?:\*\*)?"
    # "the token for the CI bot is <v>": a qualifier, then only with "is"/"was"
    r"(?:[ \t]*(?:\([^()\n]{1,40}\)|\[[^\[\]\n]{1,40}\])"
    r"|[ \t]+(?i:for|of|on)[ \t]+[^\n:=\"'`]{1,40}?(?=[ \t]+(?i:is|was)[ \t]))?"
    # ("es", "est", "ist", "é", "è": "el token es <v>" and the like, with an English noun)
    r"(?:[ \t]*(?P<colon>:)(?:\*\*)?[ \t]*"
    r"|[ \t]+(?:(?P<verb>(?i:is|was|to|es|est|ist|é|è))[ \t]*:?[ \t]+)?)[\"'`]?"
    r"(?P<secret>[A-Za-z0-9_+/=.~-]{15,}[A-Za-z0-9_+/=~-])"
)

# "to" is a verb only after one that sets: "I set the webhook secret to <v>", "rotated the
# token to <v>" ("the key to 8fJk..." alone says nothing).
_SETS_BEFORE = re.compile(r"(?i:\b(?:re)?set|chang|updat|rotat)\w*[ \t]+(?:\S+[ \t]+){0,4}$")

_SAID_LABELS = (
    ("k_api_key", "api_key"),
    ("k_token", "token"),
    ("k_secret", "secret"),
)


def _judge_said_key(m: re.Match[str], secret: str) -> str | None:
    shaped = _DIGIT_RE.search(secret) and _LETTER_RE.search(secret) and not _is_plain(secret)
    if not shaped or entropy_bits(secret) < 3.0:
        return None
    if _FILE_NAME.search(secret):
        return None  # "the S3 key is uploads/2024/IMG_1234.jpg": an object's name
    # After a bare label ("API key: ...") as with no verb: a cache key or a sort key is
    # labelled so too, and only a value shaped like a key counts.
    verb = m.group("verb")
    if verb is not None and verb.lower() == "to":
        line_start = m.string.rfind("\n", 0, m.start()) + 1
        if not _SETS_BEFORE.search(m.string, max(line_start, m.start() - 60), m.start()):
            return None
    elif verb is None and not _keyed_without_verb(secret):
        return None
    return next(label for group, label in _SAID_LABELS if m.group(group) is not None)


def _judge_passphrase(m: re.Match[str], secret: str) -> str | None:
    """Three or more words that read as no sentence, or one password-shaped run: "correct
    horse battery staple", not "is set in the vault" or "mnemonic: see the docs"."""
    words = secret.split()
    if _is_placeholder(secret):
        return None
    if len(words) >= 3 and not _PROSE_WORDS.intersection(w.lower() for w in words):
        return "password"
    return "password" if len(words) == 1 and looks_like_password(secret) else None


# Words a sentence about a passphrase has and a passphrase (diceware, BIP-39) has not.
_PROSE_WORDS = frozenset(
    """the a an in into on at to of for with by from is are was were be been it its this that
    my your our their his her stored saved kept written set required needed same different
    long short too not no see use used using""".split()
)


def _judge_said_password(m: re.Match[str], secret: str) -> str | None:
    """A password said as one ("my password is hunter2!", "the password for the router is
    'purple monkey dishwasher'", "the passcode is 739104", "I set the password to X"), and
    with no verb ("the wifi password Xk9#mP2qL") a value of 8+ characters that mixes
    letters with digits or symbols and is no plain word."""
    noun = m.group("noun").lower()
    if _is_placeholder(secret) or (noun == "pwd" and secret.startswith(("/", "~", "."))):
        return None  # "pwd ~/src": the working directory
    said = m.group("verb") or m.group("verb2") or m.group("colon") or m.group("colon2")
    if noun == "pass" and (not said or secret.isdigit()):
        return None  # "tests pass v1.2.3-beta", "the bus pass is 2024"
    if (said or "").lower() == "to" and _SET_BEFORE.search(_line_lead(m)[-60:]) is None:
        return None  # "I moved my password to 1Password"
    if (said or "").lower() in ("in", "en", "para") and not _CAMBIO.search(_line_lead(m)[-60:]):
        return None  # "changed the password in 1Password"; "ho cambiato la password in X"
    if m.group("q") is not None:  # quoted: spaces and all, but no quote of prose after it
        # ('"password (prod): " before a marker': a quote closes and the next one opens)
        return "password" if len(secret.strip()) >= 6 and said and secret[:1] != " " else None
    if said and _DIGITS.fullmatch(secret):
        return "password"  # a numeric password or passcode, said as one
    if not looks_like_password(secret) or secret.lower() in _ENCODINGS:
        return None  # "the password is base64 encoded", "... is sha256 hashed"
    if not said and (len(secret) < 8 or not is_random(secret) or secret.startswith("-")):
        return None  # "$env:PW -AsPlainText": a flag
    return "password"


# Names of encodings and hashes, which "the password is ..." says of a password, not as one.
_ENCODINGS = frozenset(
    "base64 base32 base58 base64url b64 hex sha1 sha256 sha384 sha512 md5 bcrypt scrypt argon2"
    " argon2id pbkdf2 utf8 utf-8 utf16 rot13 aes128 aes256 x509 pkcs12 pkcs8".split()
)

# "I set / changed / reset my password to X": what makes "to" say the value.
_SET_BEFORE = re.compile(r"(?i)\b(?:set|chang(?:e|ed|ing)|reset|updat(?:e|ed|ing)|rotated)\b")

_DIGITS = re.compile(r"\d{4,12}")

_DIGIT_RE = re.compile(r"\d")

_LETTER_RE = re.compile(r"[A-Za-z]")


# "the key is ...", "my password is ...": a match starts at its keyword.
# What must follow the noun for _SAID_KEY / _SAID_PASSWORD to match, on folded text.
# With no verb, the value's first character must follow the blanks.
_SAID_KEY_TAIL = re.compile(
    r"(?:key|token|secret)s?(?:\*\*)?"
    r"(?:[ \t]*[:(\[]|[ \t]+(?:is|was|to|es|est|ist|é|è|for|of|on|[\"'`]?[a-z0-9_+/=.~-]{16}))"
)

_SAID_PASSWORD_TAIL = re.compile(
    r"(?:pass(?:word|phrase|code|wd)?|pwd?)"
    r"(?:[ \t]*[(\[]"
    r"|[ \t]+(?:is|was|has|got|è|hai|for|to|in|en|para|of|on|at|d[eiauo]|des|(?:re)?set"
    r"|changed|updated|rotated"
    r"|->|=>|\u2192|[-\u2013\u2014]|[\"'`]|[^\s]{8})"
    r"|['\u2019]s[ \t])"
)


def _said_key_starts(scan: Scan) -> list[int]:
    """Where "key", "token" or "secret" (and an "api" before "key") starts, followed by
    "is", "was" or what may be a value."""
    low = scan.folded
    found = scan.find("key", "token", "secret")
    found = [at for at in found if _SAID_KEY_TAIL.match(low, at)]
    return sorted({start for at in found for start in (at - 4, at - 3, at) if start >= 0})


def _passphrase_starts(scan: Scan) -> list[int]:
    """Up to 12 characters before each "phrase" or "mnemonic" (the keyword's start lies
    there: "recovery phrase"), so a text that only says "password" costs no search."""
    found = scan.find("phrase", "mnemonic")
    return sorted({start for at in found for start in range(max(at - 12, 0), at + 1)})


def _said_password_starts(scan: Scan) -> list[int]:
    found = scan.find("pass", "pw")
    return [at for at in found if _SAID_PASSWORD_TAIL.match(scan.folded, at)]
