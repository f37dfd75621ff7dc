"""Secrets in the lines of configuration files and of tools' sessions, where no ``=`` or ``:``
marks the value: a ``~/.pgpass`` line (``host:port:db:user:<pw>``), a directive line that
names a credential and then gives it (redis.conf's ``requirepass <pw>``, slapd's ``rootpw``,
keepalived's ``auth_pass``, a router's ``username admin password 0 <pw>``, ``key-string``),
Redis' ``AUTH [user] <pw>``, the values of a ``Cookie:`` or ``Set-Cookie:`` header that are
shaped like a session id, and Wi-Fi: the ``WIFI:T:WPA;S:<ssid>;P:<pw>;;`` string a QR code
holds, and "the wifi key is <pw>". Also Redis Sentinel's ``sentinel auth-pass <master>
<pw>``, ``CONFIG SET requirepass <pw>`` after ``redis-cli -h host``, an ACL user's ``><pw>``,
pgbouncer's ``userlist.txt`` (``"user" "md5..."``), SNMP communities, a cookies.txt line,
OpenVPN's inline ``<auth-user-pass>``, and the column of a CSV, TSV or ";"-separated table
whose header names a credential.

Where the forms come from: PostgreSQL's "The Password File" (34.16), redis.conf's and
slapd.conf(5)'s directives, Cisco IOS' ``username``/``enable``/``key-string`` commands, RFC 6265
(cookies), and the ZXing "Wi-Fi network config" barcode format. Each value is judged by its
shape: a plain word after a directive ("requirepass foobared"), a cookie that is no session id
("theme=dark") and a sentence ("the wifi key is on the router") stay.
"""

from __future__ import annotations

import re
from functools import lru_cache

from shared.redact.assignments import _ASSIGNMENT_WORDS
from shared.redact.catalogue import entropy_bits, is_random, is_strong, looks_like_password
from shared.redact.keywords import _KEYWORDS, _is_placeholder, _is_plain, _keyword_label, _line_lead
from shared.redact.rule import RuleSpec, Scan, Seek, _match_line, find_all
from shared.redact.tables import _HEADER_WORDS, _cell_label, _header_label

__all__ = ["FILES", "FILES_TEXT_ANCHORS"]

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
    if _FILE_NAME.fullmatch(secret):
        return None  # OpenVPN's "auth-user-pass creds.txt": the file that holds it
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
# A file's name (a word, a dot, an extension of letters), not a password: "creds.txt".
_FILE_NAME = re.compile(r"[A-Za-z_][\w-]*\.[a-z]{2,5}")

# A label alone on its line, with its colon, and the value alone on the next, as a password
# manager's or a web form's fields are copied ("Password:" then the password; Python's
# ``pass`` then ``finally:`` is code): what YAML's indented next line is
# to shared/redact/markup.py, without the indent.
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


# --- Redis: Sentinel, CONFIG SET, ACL users ------------------------------------------------------
#
# sentinel.conf's ``sentinel auth-pass <master> <pw>`` and the command ``SENTINEL SET <master>
# auth-pass <pw>``, ``CONFIG SET requirepass|masterauth <pw>`` anywhere on a line (after
# ``redis-cli -h host``), and an ACL user's password (``user worker on >pw ~jobs:* +@list`` in
# users.acl, ``ACL SETUSER alice on >pw``). A match starts at the keyword (or at ">"), the
# judge reads the line before it: what names the directive is there.
_REDIS_PASSWORD = re.compile(
    r"(?<![\w-])(?i:(?P<auth_pass>auth-pass)(?:[ \t]+(?P<master>[^\s\"']{1,64}))?"
    r"|requirepass|masterauth)"
    r"[ \t]+(?:(?P<q>[\"'])(?P<secret>[^\"'\n]{1,512})(?P=q)|(?P<bare>[^\s\"']{1,512}))"
    r"[ \t]*\r?(?=\n|$)"
)
_SENTINEL_BEFORE = re.compile(r"(?i:sentinel)[ \t]+(?:(?i:set)[ \t]+[^\s]{1,64}[ \t]+)?$")
_CONFIG_SET_BEFORE = re.compile(r"(?i:config[ \t]+set)[ \t]+$|(?:^|[ \t])--$")


def _redis_password_starts(scan: Scan) -> list[int]:
    return scan.find("auth-pass", "requirepass", "masterauth")


def _judge_redis_password(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret):
        return None
    before = _line_lead(m)
    if m.group("auth_pass") is not None:
        sentinel = _SENTINEL_BEFORE.search(before)
        if sentinel is None or (m.group("master") is None) == (
            "set" not in sentinel.group().lower()
        ):
            return (
                None  # "sentinel auth-pass <master> <pw>", "SENTINEL SET <master> auth-pass <pw>"
            )
        return "password"
    # (a directive alone on its line is _DIRECTIVE's, judged by its shape)
    return "password" if _CONFIG_SET_BEFORE.search(before) else None


# (a match starts at the ">" and the judge reads the line before it: the gate finds the rule
# by ">", not by "user" in every sentence)
_REDIS_ACL = re.compile(r"(?<=[ \t])>(?P<secret>[^\s]{1,512})")
_ACL_USER = re.compile(
    r"[ \t]*(?:[A-Za-z0-9_.:-]{1,40}>[ \t]*)?(?i:acl[ \t]+setuser|user)[ \t]+[^\s>]{1,64}"
    r"(?:[ \t]+[^\s>]{1,128}){0,16}[ \t]+$"
)
# An ACL's rules: "on"/"off", a key pattern, a category or command, a channel, "nopass".
_ACL_RULE = re.compile(
    r"[ \t](?:on|off|allkeys|allcommands|allchannels|resetpass|resetkeys|nopass|[~%&+-]\S*)(?=\s|$)"
)


def _redis_acl_starts(scan: Scan) -> list[int]:
    """Each " >" on a line that "user" or "setuser" is in."""
    text = scan.text
    users = scan.find("user")
    if not users:
        return []
    lines = {text.rfind("\n", 0, at) + 1 for at in users}
    return [at + 1 for at in find_all(text, (" >", "\t>")) if text.rfind("\n", 0, at) + 1 in lines]


def _judge_redis_acl(m: re.Match[str], secret: str) -> str | None:
    text = m.string
    line = text.rfind("\n", 0, m.start()) + 1
    if _is_placeholder(secret) or _ACL_USER.fullmatch(text, line, m.start()) is None:
        return None
    return "password" if _ACL_RULE.search(_match_line(m)) is not None else None


# --- pgbouncer's auth_file (userlist.txt) ---------------------------------------------------------
#
# ``"user" "password"``, one a line, the password in clear, as ``md5<32 hex>`` (usable as it
# is: md5 authentication takes the hash) or a SCRAM verifier (the catalogue's). In a text that
# names the file any value goes; elsewhere one shaped like a password or an md5 hash.
_USERLIST = re.compile(
    r"(?m:^)[ \t]*\"(?P<user>[^\"\s]{1,64})\"[ \t]+\"(?P<secret>(?:[^\"\n]|\"\"){1,1024})\""
    r"[ \t]*\r?(?=\n|$)"
)
_MD5_HASH = re.compile(r"md5[0-9a-f]{32}")


def _userlist_starts(scan: Scan) -> list[int]:
    text = scan.text
    return sorted({text.rfind("\n", 0, at) + 1 for at in find_all(text, ('" "',))})


def _judge_userlist(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret):
        return None
    if _MD5_HASH.fullmatch(secret):
        return "password"
    if _names_userlist(m.string):
        return "password"
    if " " in secret or not looks_like_password(secret) or _is_plain(secret):
        return None  # Valve's VDF has the same lines: ``"LaunchOptions" "-novid -high"``
    return "password"


@lru_cache(maxsize=8)
def _names_userlist(text: str) -> bool:
    """Whether ``text`` names pgbouncer's auth file (read once per text, not per line)."""
    low = text.lower()
    return "userlist" in low or "pgbouncer" in low or "auth_file" in low


# --- SNMP communities -----------------------------------------------------------------------------
#
# Cisco's ``snmp-server community <string> RO|RW`` and net-snmp's ``rocommunity <string>``: the
# community is SNMP v1/v2c's password. "public" and other plain words stay (the defaults).
_SNMP_COMMUNITY = re.compile(
    r"(?<![\w-])(?:(?i:snmp-server)[ \t]+(?i:community)|(?i:r[ow]community6?))[ \t]+"
    r"(?:(?P<q>[\"'])(?P<secret>[^\"'\n]{1,128})(?P=q)|(?P<bare>[^\s\"']{1,128}))"
)


def _judge_snmp(m: re.Match[str], secret: str) -> str | None:
    return None if _is_placeholder(secret) or _is_plain(secret) else "password"


# --- a cookies.txt line, OpenVPN's inline auth-user-pass ------------------------------------------
#
# The Netscape cookie file curl and browsers' exporters write: domain, include-subdomains,
# path, secure, expiry, name, value, tab-separated; the value is judged as a Cookie header's.
_COOKIE_FILE_LINE = re.compile(
    r"(?m:^)(?:#HttpOnly_)?[A-Za-z0-9_.-]{1,253}\t(?:TRUE|FALSE)\t[^\t\n]{0,1024}\t(?:TRUE|FALSE)"
    r"\t-?\d{1,20}\t[^\t\n]{1,256}\t(?P<secret>[^\t\r\n]{16,4096})"
)
# OpenVPN 2.6 reads the user and the password inline:
# ``<auth-user-pass>`` / user / password / ``</auth-user-pass>``.
_OVPN_AUTH = re.compile(
    r"<auth-user-pass>[ \t]*\r?\n[ \t]*[^\s]{1,256}[ \t]*\r?\n[ \t]*(?P<secret>[^\n]*[^\s])"
    r"[ \t]*\r?\n[ \t]*</auth-user-pass>"
)


def _judge_ovpn_auth(m: re.Match[str], secret: str) -> str | None:
    return None if _is_placeholder(secret) else "password"


# --- a delimited table whose header names a credential -------------------------------------------
#
# What the pipe tables of shared/redact/tables.py are to Markdown, for a CSV, TSV or
# ";"-separated export (a spreadsheet of accounts, ``psql``'s ``\copy``, a password manager's
# export): a header line whose cells name columns, one of them a credential (``password``,
# ``api_token``, ``"Secret"``), and the rows below it with as many cells; each cell of that
# column is judged as a pipe table's is. A match starts at the delimiter (or the newline)
# before its cell; which cells those are is worked out once per text. The header is outside
# the match, so the gate needs one of its nouns in the text (FILES_TEXT_ANCHORS).
_DELIMITERS = ("\t", ",", ";")
# A header's cell: a column's name (no call, no bracket: a line of code split at its commas
# is no header), the line starting at its first column.
_HEADER_CELL = re.compile(r"[ \t]*\"?[A-Za-z][A-Za-z0-9 _.-]{0,40}\"?[ \t]*\r?")


def _split(line: str, delimiter: str) -> list[tuple[int, int]] | None:
    """Each cell's (start, end) in ``line``, a quoted cell with its quotes; None when a
    quote is not closed where a cell ends."""
    cells, at = [], 0
    while True:
        if line.startswith('"', at):
            close = at + 1
            while True:
                close = line.find('"', close)
                if close < 0:
                    return None
                if not line.startswith('""', close):
                    break
                close += 2
            end = close + 1
            if end < len(line) and line[end] != delimiter and line[end:].strip():
                return None
        else:
            end = line.find(delimiter, at)
            end = len(line) if end < 0 else end
        cells.append((at, end))
        if end >= len(line):
            return cells
        at = end + 1


@lru_cache(maxsize=8)
def _delimited_cells(text: str) -> dict[int, tuple[str, str, int]]:
    """Where each cell under a credential header starts, less one (its delimiter or the
    newline before it): (the delimiter, the header's label, where the cell ends)."""
    found: dict[int, tuple[str, str, int]] = {}
    lines, at = [], 0
    for line in text.split("\n"):
        lines.append((at, line))
        at += len(line) + 1
    i = 0
    while i < len(lines) - 1:
        header = lines[i][1]
        counts = [(header.count(d), d) for d in _DELIMITERS]
        count, delimiter = max(counts)
        cells = _split(header, delimiter) if count and header[:1] not in " \t" else None
        if not cells or not all(_HEADER_CELL.fullmatch(header[a:b]) for a, b in cells):
            i += 1
            continue
        labels = {
            k: label
            for k, (a, b) in enumerate(cells)
            if (label := _header_label(header[a:b].strip(' \t\r"')))
        }
        j = i + 1
        while labels and j < len(lines):
            row_at, row = lines[j]
            row_cells = _split(row.rstrip("\r"), delimiter)
            if row_cells is None or len(row_cells) != len(cells):
                break
            for k, label in labels.items():
                start, end = row_cells[k]
                found[row_at + start - 1] = (delimiter, label, row_at + end)
            j += 1
        i = max(j, i + 1)
    return found


def _delimited(delimiter: str) -> re.Pattern[str]:
    """A cell after ``delimiter`` or a newline: quoted (``""`` inside), or bare to the next."""
    lead, bare = {"\t": (r"[\t\n]", r"[^\t\r\n]"), ",": (r"[\n,]", r"[^,\r\n]")}.get(
        delimiter, (r"[\n;]", r"[^;\r\n]")
    )
    return re.compile(
        lead + rf"(?:\"(?P<secret>(?:[^\"\n]|\"\"){{1,1024}})\"|(?P<bare>{bare}{{1,1024}}))"
    )


def _delimited_starts(delimiter: str) -> Seek:
    def starts(scan: Scan) -> list[int]:
        text = scan.text
        if "\n" not in text or text.count(delimiter) < 2:
            return []
        return sorted(at for at, cell in _delimited_cells(text).items() if cell[0] == delimiter)

    return starts


def _judge_delimited(m: re.Match[str], secret: str) -> str | None:
    cell = _delimited_cells(m.string).get(m.start())
    if cell is None or m.end() != cell[2]:
        return None
    return _cell_label(cell[1], secret.strip())


_TSV_CELL, _CSV_CELL, _SSV_CELL = map(_delimited, _DELIMITERS)


FILES: tuple[RuleSpec, ...] = (
    (_PGPASS, _judge_pgpass, _pgpass_starts),
    (_REDIS_AUTH, _judge_redis_auth, None),
    (_DIRECTIVE, _judge_directive, _directive_starts),
    (_LABEL_LINE, _judge_directive, _label_line_starts),
    (_COOKIE_PAIR, _judge_cookie, _cookie_starts),
    (_WIFI_QR, _judge_wifi_qr, None),
    (_WIFI_KEY, _judge_wifi_key, None),
    (_REDIS_PASSWORD, _judge_redis_password, _redis_password_starts),
    (_REDIS_ACL, _judge_redis_acl, _redis_acl_starts),
    (_USERLIST, _judge_userlist, _userlist_starts),
    (_SNMP_COMMUNITY, _judge_snmp, None),
    (_COOKIE_FILE_LINE, _judge_cookie, None),
    (_OVPN_AUTH, _judge_ovpn_auth, None),
    (_TSV_CELL, _judge_delimited, _delimited_starts("\t")),
    (_CSV_CELL, _judge_delimited, _delimited_starts(",")),
    (_SSV_CELL, _judge_delimited, _delimited_starts(";")),
)

# The delimited tables' header nouns: one is in every text a cell of theirs is redacted in.
FILES_TEXT_ANCHORS: dict[re.Pattern[str], tuple[str, ...]] = {
    pattern: _HEADER_WORDS for pattern in (_TSV_CELL, _CSV_CELL, _SSV_CELL)
}
