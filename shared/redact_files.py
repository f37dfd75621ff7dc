"""Secrets in the lines of configuration files and of tools' sessions, where no ``=`` or ``:``
marks the value: a ``~/.pgpass`` line (``host:port:db:user:<pw>``), a directive line that
names a credential and then gives it (redis.conf's ``requirepass <pw>``, slapd's ``rootpw``,
keepalived's ``auth_pass``, a router's ``username admin password 0 <pw>``, ``key-string``),
Redis' ``AUTH [user] <pw>``, the values of a ``Cookie:`` or ``Set-Cookie:`` header that are
shaped like a session id, and Wi-Fi: the ``WIFI:T:WPA;S:<ssid>;P:<pw>;;`` string a QR code
holds, and "the wifi key is <pw>".

Where the forms come from: PostgreSQL's "The Password File" (34.16), redis.conf's and
slapd.conf(5)'s directives, Cisco IOS' ``username``/``enable``/``key-string`` commands, RFC 6265
(cookies), and the ZXing "Wi-Fi network config" barcode format. Each value is judged by its
shape: a plain word after a directive ("requirepass foobared"), a cookie that is no session id
("theme=dark") and a sentence ("the wifi key is on the router") stay.
"""

from __future__ import annotations

import re

from shared.redact_catalogue import entropy_bits, is_random, is_strong, looks_like_password
from shared.redact_context import (
    _ASSIGNMENT_WORDS,
    _KEYWORDS,
    RuleSpec,
    Scan,
    _is_placeholder,
    _is_plain,
    _keyword_label,
    find_all,
)

__all__ = ["FILES"]

# A line's value: quoted, or one run of non-blanks, and nothing after it on the line.
_LINE_VALUE = (
    r"(?:(?P<q>[\"'])(?P<secret>[^\"'\n]{1,1024})(?P=q)|(?P<bare>[^\s\"']{1,1024}))"
    r"[ \t]*\r?(?=\n|$)"
)

_LINE_END = re.compile(r"[ \t]*\r?(?:\n|$)")


def _ends_its_line(m: re.Match[str]) -> bool:
    """Whether the match ends its line in the whole text: a search between markers sees the
    end of the stretch it searches as the text's end ("password (prod): " before a marker)."""
    return _LINE_END.match(m.string, m.end()) is not None


# --- ~/.pgpass: hostname:port:database:username:password ------------------------------------------
#
# The port is digits or "*"; ":" and "\" in a field are escaped with "\", though a password
# typed by hand may hold a bare ":" (the password is the rest of the line). A line with a
# blank in a field, or an IPv6 or MAC address, is no such line.
_PGPASS = re.compile(
    r"(?m:^)[ \t]*(?P<host>[A-Za-z0-9_.*-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])"
    r":(?:\d{2,5}|\*)"
    r":(?:\\.|[^\s:\\]){1,128}:(?:\\.|[^\s:\\]){1,128}:(?P<secret>(?:\\.|[^\s\\]){1,256})"
    r"[ \t]*\r?(?=\n|$)"
)


_HOST = re.compile(r"[A-Za-z.*\[]")
_HEX_GROUPS = re.compile(r"[ \t]*[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){4,7}[ \t]*\r?")


def _pgpass_starts(scan: Scan) -> list[int]:
    """Each line start, when the text has the four colons a .pgpass line needs."""
    text = scan.text
    if text.count(":") < 4:
        return []
    return [0, *(at + 1 for at in find_all(text, ("\n",)))]


def _judge_pgpass(m: re.Match[str], secret: str) -> str | None:
    """Any password in a text that names the file; elsewhere one shaped like a password
    ("localhost:8080:api:v1:health" is a route)."""
    if _is_placeholder(secret) or not _ends_its_line(m) or not _HOST.search(m.group("host")):
        return None  # a host is "*", or has a letter or a dot: "10:30:45:..." is a time
    if _HEX_GROUPS.fullmatch(m.group()):
        return None  # fe80:0:0:0:202:b3ff:fe1e:8329, an address
    if "pgpass" in m.string.lower():
        return "password"
    return "password" if not _is_plain(secret) and len(secret) >= 6 else None


# --- directive lines ------------------------------------------------------------------------------
#
# ``requirepass <pw>``, ``masterauth <pw>``, ``bindpw <pw>``, ``DB_PASSWORD <pw>``: the line
# is the directive and its value. A router's line may name the user first (``username admin
# privilege 15 password 0 <pw>``, ``enable secret <pw>``) and an encryption type (0 or 7)
# before the value; redis-cli's prompt (``127.0.0.1:6379>``) or ``CONFIG SET`` may lead.
_DIRECTIVE = re.compile(
    r"(?m:^)[ \t]*(?:[A-Za-z0-9_.:-]{1,40}>[ \t]*)?(?i:config[ \t]+set[ \t]+)?"
    r"(?:(?i:username|user)[ \t]+[^\s]{1,64}(?:[ \t]+(?i:privilege)[ \t]+\d{1,2})?[ \t]+"
    r"|(?i:enable)[ \t]+)?"
    r"(?P<key>[A-Za-z0-9_.-]{0,64}?(?:" + _KEYWORDS + r"|(?P<k_string>(?i:key-string))))"
    r"[ \t]+(?:[07][ \t]+)?" + _LINE_VALUE,
    re.I,
)


def _judge_directive(m: re.Match[str], secret: str) -> str | None:
    """A value shaped like a password or a key (a plain word or a short number is a
    heading's or a sentence's: "password policy", "Token 2024")."""
    if _is_placeholder(secret) or _is_plain(secret) or secret.startswith(("/", "~", "./")):
        return None  # "pwd ~/src/app2": a path
    if "(" in secret or secret.endswith(":"):
        return None  # a call, or the next label
    if secret.startswith(("<", ">", "|", "&")):
        return None  # a redirection: "chpasswd <<-END", "passwd < new.txt"
    if not _ends_its_line(m):
        return None
    if m.group("k_credential") is not None and any(c in secret for c in ":/"):
        return None  # "credentials bob:<pw>": a user and a password, the password goes alone
    if len(secret) < 6 or not (looks_like_password(secret) or is_random(secret)):
        return None
    if m.group("k_password") is None and (len(secret) < 12 or not is_random(secret)):
        return None  # "Token gpt-4o": a key, a secret or a token is longer and random
    if m.groupdict().get("k_string") is not None:
        return "secret"
    return _keyword_label(m, secret)


def _directive_starts(scan: Scan) -> list[int]:
    """The start of each line where a credential keyword ends a word near the line's start
    (up to five words before it: a prompt, "username admin privilege 15") and one or two
    words follow it to the line's end (an encryption type, the value)."""
    text, starts = scan.text, set()
    for at in scan.find(*_DIRECTIVE_WORDS):
        line = text.rfind("\n", 0, at) + 1
        if at - line > 120 or line in starts or len(text[line:at].split()) > 5:
            continue  # (each look is bounded: a long line costs no scan per keyword)
        word_end = at
        while word_end < len(text) and text[word_end] not in " \t\n":
            word_end += 1
        end = text.find("\n", word_end, word_end + 1100)
        end = len(text) if end < 0 and len(text) - word_end <= 1100 else end
        if end >= 0 and 1 <= len(text[word_end:end].split()) <= 2:
            starts.add(line)
    return sorted(starts)


# Every keyword of a directive holds one of these (the assignments' words), as "key-string"
# does.
_DIRECTIVE_WORDS = _ASSIGNMENT_WORDS

# A label alone on its line, with its colon, and the value alone on the next, as a password
# manager's or a web form's fields are copied ("Password:" then the password; Python's
# ``pass`` then ``finally:`` is code): what YAML's indented next line is
# to shared/redact_context.py, without the indent.
_LABEL_LINE = re.compile(
    r"(?m:^)[ \t]*(?:[#>*-]+[ \t]*)?(?:\*\*)?(?P<key>[A-Za-z0-9_.-]{0,30}?" + _KEYWORDS + r")"
    r"(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*\r?\n[ \t]*(?P<bare>[^\s\"'`]{6,256})[ \t]*\r?(?=\n|$)",
    re.I,
)


def _label_line_starts(scan: Scan) -> list[int]:
    """The start of each line that a keyword's word ends ("*", ":" and blanks aside), when
    the next line is one word."""
    text, starts = scan.text, set()
    for at in scan.find(*_DIRECTIVE_WORDS):
        end = text.find("\n", at, at + 40)
        if end < 0 or any(c in " \t" for c in text[at:end].rstrip("*: \t\r")):
            continue
        after = text.find("\n", end + 1, end + 300)
        if len(text[end + 1 : after if after >= 0 else end + 300].split()) == 1:
            starts.add(text.rfind("\n", 0, at) + 1)
    return sorted(starts)


# Redis' AUTH command, at a line's start or after redis-cli's prompt: ``AUTH <pw>``, ``AUTH
# <user> <pw>``.
_REDIS_AUTH = re.compile(
    r"(?m:^)[ \t]*(?:[A-Za-z0-9_.:-]{1,40}>[ \t]*)?AUTH[ \t]+(?:[^\s\"']{1,64}[ \t]+)?"
    + _LINE_VALUE
)


def _judge_redis_auth(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or _is_plain(secret) or not _ends_its_line(m):
        return None
    return "password"


# --- Cookie headers -------------------------------------------------------------------------------
#
# Each ``name=value`` of a line that a ``Cookie:`` or ``Set-Cookie:`` header starts, whatever
# the cookie's name (``JSESSIONID``, ``PHPSESSID``, ``connect.sid``, ``.ASPXAUTH``, an app's
# own), when the value is shaped like a session id: 16+ characters mixing digits and letters
# (base62, hex in either case, lowercase base32). Attributes (``Path=/``, ``Max-Age=3600``)
# and preferences (``theme=dark``, ``lang=en-US``) are no such value.
_COOKIE_PAIR = re.compile(
    r"(?<=[\s;:'\"])[A-Za-z0-9_.!#$%&*+^|~-]{1,64}=(?P<secret>[^;\s\"',]{16,4096})"
)
_COOKIE_HEADER = re.compile(r"(?i:(?:set-)?cookie)[\"']?[ \t]*:")
_HEX_OR_BASE32 = re.compile(r"[0-9A-F]{24,}|[0-9a-f]{24,}|[0-9a-z]{20,}")


def _cookie_starts(scan: Scan) -> list[int]:
    """Each position after a blank, ";", ":" or quote on a line that a cookie header starts
    (from the header on; each line read once, however many headers it holds)."""
    text, starts, done = scan.text, [], set()
    for at in scan.find("cookie"):
        head = at - 4 if scan.folded[max(at - 4, 0) : at] == "set-" else at
        line = text.rfind("\n", 0, at) + 1
        if line in done or not _COOKIE_HEADER.match(text, head):
            continue
        done.add(line)
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        starts += [i + 1 for i in range(at, end) if text[i] in " \t;:'\""]
    return sorted(set(starts))


def _judge_cookie(m: re.Match[str], secret: str) -> str | None:
    # (the seek starts the rule only on a header's line)
    shaped = is_strong(secret) or (
        _HEX_OR_BASE32.fullmatch(secret) is not None and is_random(secret)
    )
    return "credential" if shaped and entropy_bits(secret) >= 3.0 else None


# --- Wi-Fi ----------------------------------------------------------------------------------------
#
# ZXing's Wi-Fi barcode: ``WIFI:T:WPA;S:<ssid>;P:<password>;H:false;;`` (fields in any order,
# ";", ",", ":" and "\" escaped with "\").
_WIFI_QR = re.compile(
    r"WIFI:(?:[A-Z]{1,3}:(?:\\.|[^;\\\n]){0,256};){0,8}?P:(?P<secret>(?:\\.|[^;\\\n]){1,256});"
)
# "the wifi key is <pw>", "WLAN key: <pw>", "network key <pw>": a key said for a network, which
# is a password (8-63 characters for WPA), not an API key's 16+.
_WIFI_KEY = re.compile(
    r"(?<![A-Za-z0-9])(?i:wi-?fi|wlan|wpa[23]?|network|router)[ \t_-]?(?i:key|psk)"
    r"(?:[ \t]*(?P<sep>[:=])[ \t]*|[ \t]+(?:(?P<verb>(?i:is|was))[ \t]*:?[ \t]+)?)"
    r"(?:(?P<q>[\"'`])(?P<secret>[^\n\"'`]{1,63})(?P=q)|(?P<bare>[^\s\"'`]*[^\s\"'`.,;:?)]))"
)


def _judge_wifi_qr(m: re.Match[str], secret: str) -> str | None:
    return None if _is_placeholder(secret) else "password"  # "P:<password>;" in a doc


def _judge_wifi_key(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or not looks_like_password(secret) or "(" in secret:
        return None  # "WIFI_KEY = re.compile(": code
    said = m.group("sep") or m.group("verb")
    if not said and (len(secret) < 8 or not is_random(secret)):
        return None
    return "password"


FILES: tuple[RuleSpec, ...] = (
    (_PGPASS, _judge_pgpass, _pgpass_starts),
    (_REDIS_AUTH, _judge_redis_auth, None),
    (_DIRECTIVE, _judge_directive, _directive_starts),
    (_LABEL_LINE, _judge_directive, _label_line_starts),
    (_COOKIE_PAIR, _judge_cookie, _cookie_starts),
    (_WIFI_QR, _judge_wifi_qr, None),
    (_WIFI_KEY, _judge_wifi_key, None),
)
