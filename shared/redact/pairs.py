"""A user and a password written as a pair with no noun before it:
``bob:<pw>``, ``admin/<pw>``, ``deploy:<pw>@db.internal`` (a note, a combo list's line, a chat
message that pastes one), and a Wi-Fi network and its password (``wifi: HomeNet / <pw>``).

Nothing names the value a credential, so its shape must: three of lower case, upper case,
digits and symbols (``.``, ``_`` and ``-`` are no symbols: names, versions and tags hold
them), eight or more characters, not a version (``1.25.3-Alpine``) and, without a symbol,
not words run together (``Remember2Check``). And the pair must stand where a credential is
written: on a short line of its own, or on a line with a word that says login (ssh, db,
account, admin, wifi ...). The user is a name glued to its ``:`` or ``/``: no scheme
(``https:``, ``sha256:``, ``arn:``), no file (``src/Main2.java:120``), no path segment;
RFC 3986 §3.2.1's ``user:password@host`` is the shape, the host optional. A value built of
named parts, as model ids and image tags are (``local:all-MiniLM-L6-v2``,
``huggingface:Qwen2-VL-7B``), is a name, not a password.
A default account ("admin", "root") and its password also with blanks around the "/" and a
weaker password ("admin / hunter2 for the router"), where the line names a device or a login.
(The rules run after every other: a value a keyword or a command names keeps its label.)
"""

from __future__ import annotations

import re

from shared.redact.catalogue import looks_like_password
from shared.redact.keywords import _is_placeholder, _is_plain
from shared.redact.rule import RuleSpec, Scan, _match_line

__all__ = ["PAIRS", "PAIRS_TEXT_ANCHORS"]

_SECRET_CHARS = r"[^\s:/\"'`()\[\]{}<>,;|\\]"
_PAIR = re.compile(
    r"(?<![^\s\"'`(])(?P<user>[A-Za-z_][\w.-]{1,31})(?P<sep>[:/])"
    rf"(?P<secret>{_SECRET_CHARS}{{8,64}}?)"
    r"(?:@(?P<host>[A-Za-z0-9][\w-]*(?:\.[\w-]+)*))?"
    r"(?=[\s\"'`),;]|\.(?:\s|$)|$)"
)
# Names before a ":" that are no user: URI schemes, hash names, namespaces.
_NOT_A_USER = frozenset(
    "http https ftp ftps sftp ssh scp git file mailto data urn arn tel sip s3 gs wss ws jdbc"
    " redis rediss mongodb postgres postgresql mysql ldap ldaps smb nfs docker oci md5 sha1"
    " sha224 sha256 sha384 sha512 blake2b std re fw fwd cc bcc".split()
)
_FILE = re.compile(r"\.(?:[a-z]{1,4}|java|json|yaml|toml|html|swift|kt)$", re.I)
_VERSION = re.compile(r"v?\d+(?:\.\d+)+")
_WORD = re.compile(r"[A-Z]?[a-z]{3,}")
_LOGIN_WORDS = re.compile(
    r"(?<![A-Za-z])(?:ssh|sftp|ftp|rdp|vnc|vpn|smb|db|database|mysql|postgres|login|logon"
    r"|log[ -]in|sign[ -]in|creds?|credentials?|account|user(?:name)?|admin|root|pass(?:word)?"
    r"|pw|wifi|wi-fi|wlan)(?![A-Za-z])",
    re.I,
)
# A pair alone on its line, or nearly ("staging: ops:<pw>", "- bob:<pw>").
_SHORT_LINE = 48


def _classes(value: str) -> int:
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    symbol = any(not c.isalnum() and c not in "._-" for c in value)
    return lower + upper + digit + symbol


def _is_wordy(value: str) -> bool:
    """Words run together ("Remember2Check", "FileNotFound2"): half or more in words."""
    return sum(len(w) for w in _WORD.findall(value)) * 2 >= len(value)


# A name built of parts, as model ids and image tags are ("all-MiniLM-L6-v2", "Qwen2-VL-7B",
# "GPT-4o-Mini", "Release-2024.1"): two or more parts between "-", "." or "_", each a word
# (lower, Capitalized), an acronym, a word glued to an acronym ("MiniLM") with at most a short
# number after it ("Qwen2"), a number, or a short code of digits and a letter ("L6", "v2",
# "7B", "4o"); one part at least a word of three letters. A password mixes its classes inside
# a part ("Pa55w0rd-x", "qWeRtY-7") or has no word ("Zq8-Lm3-Kx9").
_NAME_PART = re.compile(
    r"(?P<word>(?:[A-Z]{2,}|[A-Z]?[a-z]{2,})+)\d{0,3}|\d+|[A-Za-z]?\d{1,4}[A-Za-z]?"
)
_NAME_SEPARATOR = re.compile(r"[-._]")


def _is_name(value: str) -> bool:
    """A model id's or a tag's name, not a password: see ``_NAME_PART``."""
    found = [_NAME_PART.fullmatch(part) for part in _NAME_SEPARATOR.split(value)]
    if len(found) < 2 or not all(found):
        return False
    return any(len(m.group("word") or "") >= 3 for m in found if m is not None)


def _is_strong(value: str) -> bool:
    if len(value) < 8 or _classes(value) < 3 or _VERSION.match(value):
        return False
    has_symbol = any(not c.isalnum() and c not in "._-" for c in value)
    return has_symbol or not (_is_wordy(value) or _is_name(value))


def _judge_pair(m: re.Match[str], secret: str) -> str | None:
    user = m.group("user")
    if user.lower() in _NOT_A_USER or _FILE.search(user) or not _is_strong(secret):
        return None
    if m.group("sep") == "/" and "." in user:
        return None  # a path: "v1.2/Release-Notes"
    line = _match_line(m, through_end=True)
    if len(line.strip()) > _SHORT_LINE and _LOGIN_WORDS.search(line) is None:
        return None
    return "password"


def _pair_starts(scan: Scan) -> list[int]:
    """Where a name starts that is glued to a ":" or "/" with 8+ non-blanks after it."""
    text, starts = scan.text, set()
    for char in ":/":
        at = text.find(char)
        while at >= 0:
            tail = text[at + 1 : at + 9]
            if len(tail) == 8 and not any(c.isspace() or c in ":/" for c in tail):
                head = at
                while head > 0 and (text[head - 1].isalnum() or text[head - 1] in "_.-"):
                    head -= 1
                if at - head >= 2 and (head == 0 or text[head - 1] in " \t\n\r\"'`("):
                    starts.add(head)
            at = text.find(char, at + 1)
    return sorted(starts)


# "wifi: HomeNet / <pw>", "WiFi - Guest-5G / <pw>": a network, a slash, its password ending
# the line.
_WIFI_PAIR = re.compile(
    r"(?<![\w-])(?i:wi-?fi|wlan)[ \t]*[:=-][ \t]*(?P<ssid>[^\s/][^\n/]{0,40}?)[ \t]+/[ \t]+"
    r"(?P<secret>[^\s\"'`]+)(?=[ \t]*(?:\r?\n|$))"
)


def _judge_wifi_pair(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or _is_plain(secret) or "/" in secret:
        return None
    return "password" if looks_like_password(secret) else None


def _wifi_starts(scan: Scan) -> list[int]:
    return sorted({*scan.find("wifi", "wi-fi", "wlan")})


# A default account and its password, also with blanks around the "/" and with a weaker
# password than a bare pair needs ("admin / hunter2 for the router", "log in as root /
# toor42x", "web UI: admin / P@ssw0rd123", "grafana is admin:Gr4fana!Prod"): the account's
# name says half of it, a word on the line that names a device or a login the other half (or
# the pair is alone on its line). The password: a letter and a digit or a symbol, no plain
# word, no version or image tag ("postgres:15-alpine", "ubuntu:22.04"), no path. A match
# starts at the separator; the judge reads the account before it. Only "admin" and "root": each
# name is one more word the gate looks for in every text (PAIRS_TEXT_ANCHORS).
_ACCOUNT_CHARS = r"[^\s\"'`/,;:()\[\]{}<>|\\"
_ACCOUNT_SEP = re.compile(
    r"(?:[ \t]+/[ \t]*|[ \t]*/[ \t]+|/|:)"
    rf"(?P<secret>{_ACCOUNT_CHARS}]{{0,127}}{_ACCOUNT_CHARS}!?.])(?=[\s\"'`),;.!?]|$)"
)
_DIGITS = re.compile(r"\d")
_ACCOUNT_BEFORE = re.compile(r"(?<![\w.@/-])(?i:admin(?:istrator)?|root)[ \t]*$")
_DEVICE_WORDS = re.compile(
    r"(?<![A-Za-z])(?i:router|nas|modem|switch|firewall|camera|printer|idrac|ilo|ipmi|bmc"
    r"|web[ -]?ui|portal|console|dashboard|panel|default|factory|server|vm|box|synology|unifi"
    r"|pfsense|proxmox|esxi|vcenter|grafana|jenkins|phpmyadmin|wordpress|ssh|sftp|ftp|rdp|vnc"
    r"|vpn|smb|db|database|mysql|login|logon|log[ -]?in|sign[ -]?in|creds?|credentials?"
    r"|account|pass(?:word)?|pw|wifi|wi-fi)(?![A-Za-z])"
)


def _account_starts(scan: Scan) -> list[int]:
    """Where "admin" or "root" ends, when a "/" or ":" follows it (blanks aside)."""
    text, starts = scan.text, []
    for at in scan.find("admin", "root"):
        end = at + (4 if scan.folded.startswith("root", at) else 5)
        end += 8 if scan.folded.startswith("istrator", end) else 0
        sep = end
        while sep < len(text) and text[sep] in " \t":
            sep += 1
        if text[sep : sep + 1] in ("/", ":") and sep < len(text):
            starts.append(end)
    return starts


def _judge_account(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or not looks_like_password(secret) or not _DIGITS.search(secret):
        return None  # "admin:read", "root / cause": a scope, a phrase
    if _VERSION.match(secret) or _is_name(secret) or secret.startswith(("-", "~", "$", "%")):
        return None  # "ubuntu:22.04", "postgres:15-alpine", "root:-rw"
    text = m.string
    line_start, line_end = text.rfind("\n", 0, m.start()) + 1, text.find("\n", m.end())
    left = text[line_start : m.start()]
    right = text[m.end() : line_end if line_end >= 0 else len(text)]
    account = _ACCOUNT_BEFORE.search(left)
    if account is None:
        return None
    short = len(left.strip()) + len(right.strip()) <= 24  # the pair alone, or nearly
    if not short and _DEVICE_WORDS.search(left[: account.start()] + " " + right) is None:
        return None
    return "password"


PAIRS: tuple[RuleSpec, ...] = (
    (_WIFI_PAIR, _judge_wifi_pair, _wifi_starts),
    (_PAIR, _judge_pair, _pair_starts),
    (_ACCOUNT_SEP, _judge_account, _account_starts),
)

# The account's names, one of which a text holds when _ACCOUNT_SEP redacts (the gate finds the
# rule by them, not by every ":" of every "Speaker: ..." line).
PAIRS_TEXT_ANCHORS: dict[re.Pattern[str], tuple[str, ...]] = {_ACCOUNT_SEP: ("admin", "root")}
