"""Secrets whose context is on another line, or in a form no assignment reads:

    * a value alone on the line after the words that announce it ("here is the password for
      the staging box" then ``<pw>``, a bare ``Password`` label then ``<pw>``);
    * the output of a command that prints a credential, on the line after the command
      (``$ cat config/master.key`` then its 32 hex, ``... | base64 -d`` then the password,
      ``gh auth token``, ``aws ecr get-login-password``, ``openssl rand -hex 32``,
      ``terraform output -raw db_password``);
    * an ODBC connection string's braced value (``PWD={<pw>};``, the quoting ODBC gives a
      value with ``;`` or ``}`` in it: "[MS-ODBCSTR] 2.1.2 ODBC Connection String Format");
    * a key named only ``key`` (``"Key": "<value>"`` in an appsettings.json ``Jwt`` section,
      ``key=<value>``), when the value is 20+ characters mixing digits and both cases;
    * the second line of a two-line credentials file, a user then a password, under
      its name (``cat /etc/openvpn/auth.txt``, "# creds.txt:"), as OpenVPN's
      ``auth-user-pass`` reads it.

Each value is judged by its shape: a plain word, a path, a flag, a placeholder, a number or a
sentence on the next line stays ("Password requirements" then "-----", "cat notes.txt" then
"hello").
"""

from __future__ import annotations

import re

from shared.redact.catalogue import is_random, is_strong, looks_like_password
from shared.redact.keywords import _is_placeholder, _is_plain
from shared.redact.rule import RuleSpec, Scan

__all__ = ["LINES"]

# The value line: one run of non-blanks, maybe in backticks, nothing else on the line.
_NEXT_VALUE = r"\r?\n[ \t]*`?(?P<bare>[^\s`\"']{6,4096}?)`?[ \t]*\r?(?=\n|$)"

# What a value on its own line is not: a path, a flag, a variable, a URL, a file name, a
# heading rule, a prompt, a key and its value of their own.
_NOT_A_VALUE = re.compile(
    r"[./~$<\[({#@|>*=-].*|.*(?:://|[:;,)]$)|[\w-]+\.[a-z]{1,5}|\d+(?:[.,]\d+)*%?"
    # a "key=value" or "key:value" of its own, another rule's to read ("=" pads base64 only
    # at its end)
    r"|.*[:=](?!=*$).*"
    # code: a call or a bracket ("_starts(", "f(x)")
    r"|.*[()\[\]{}].*",
    re.S,
)


def _value_ok(value: str, *, password: bool) -> bool:
    if _is_placeholder(value) or _is_plain(value) or _NOT_A_VALUE.fullmatch(value):
        return False
    if password:
        return looks_like_password(value) or (len(value) >= 16 and is_random(value))
    return len(value) >= 16 and (is_strong(value) or (is_random(value) and len(value) >= 24))


# --- a value on the line after its announcement --------------------------------------------

# The nouns, in the folded text: a password's (also in other languages) and a key's or a
# token's. "key" alone must stand as a word.
_PW_NOUNS = (
    r"pass(?:word|phrase|wd|code)?|pwd?|passwort|kennwort|mot de passe|contrase(?:ñ|n)a|senha"
    r"|wachtwoord|parola|пароль|密码|密碼|パスワード|비밀번호"
)
_KEY_NOUNS = r"tokens?|api[ _-]?keys?|keys?|secrets?|credentials?|creds"

# A match starts at the noun (the seek below finds it with the words other rules look for
# too, cached once per text) and the judge reads the whole line; starting at the line's
# start would try every prefix of it against every noun.
_ANNOUNCE = re.compile(
    r"(?<![A-Za-z0-9])(?i:(?P<pw>" + _PW_NOUNS + r")|" + _KEY_NOUNS + r")(?![A-Za-z0-9])"
    r"[^\n]{0,80}?" + _NEXT_VALUE
)
# The words the nouns hold, for the seek (lowercase: Scan.find looks in the folded text).
_NOUN_WORDS = ("pass", "pw", "token", "key", "secret", "cred", "mot de passe")
_FOREIGN_WORDS = (
    "kennwort",
    "contrase",
    "senha",
    "wachtwoord",
    "parola",
    "пароль",
    "密码",
    "密碼",
    "パスワード",
    "비밀번호",
)
# A line of code is no announcement: ``def check(password):``, ``if token:``, ``key = ...``,
# ``_TOOL_PASSWORD,`` in a tuple.
_CODE_LINE = re.compile(
    r"[^\n]*(?:[=;{}]|[)\],(\[\\][ \t]*:?[ \t]*$|^[ \t]*(?:def|if|elif|for|while|with|class"
    r"|return|else)\b)"
)
# Lines that name what is no secret: a PEM armor line, a public key, a certificate, a hash,
# a password manager or policy.
_NAMES_NO_SECRET = re.compile(
    r"-----|(?i:public|publishable|certificate|fingerprint|checksum|digest|hash|sha-?\d|commit"
    r"|\bids?\b|\bnames?\b|manager|polic|requirement|rules?\b|strength|reset|expir|length"
    r"|field|prompt|file)"
)


def _one_token_next(text: str, line_end: int) -> bool:
    """Whether the line after ``line_end`` (a newline's index) holds one run of non-blanks."""
    after = text.find("\n", line_end + 1)
    return len(text[line_end + 1 : after if after >= 0 else len(text)].split()) == 1


def _before_a_one_word_line(scan: Scan, words: tuple[str, ...], reach: int) -> list[int]:
    """Where one of ``words`` occurs within ``reach`` of its line's end, and the next line
    is one run of non-blanks."""
    text = scan.text
    if "\n" not in text:
        return []  # no next line
    found = []
    for at in scan.find(*words):
        end = text.find("\n", at, at + reach)
        if end >= 0 and _one_token_next(text, end):
            found.append(at)
    return found


def _announce_starts(scan: Scan) -> list[int]:
    words = _NOUN_WORDS if scan.text.isascii() else (*_NOUN_WORDS, *_FOREIGN_WORDS)
    return _before_a_one_word_line(scan, words, 100)


def _line_of(m: re.Match[str]) -> str:
    text = m.string
    return text[text.rfind("\n", 0, m.start()) + 1 : text.find("\n", m.start())]


def _judge_announce(m: re.Match[str], secret: str) -> str | None:
    line = _line_of(m)
    if len(line) > 180 or _CODE_LINE.match(line) or _NAMES_NO_SECRET.search(line):
        return None
    if any(d in line and d in secret for d in ",;"):
        return None  # "user,password" then "alice,-": a CSV's header and row (redact_files')
    password = m.group("pw") is not None
    if not _value_ok(secret, password=password):
        return None
    return "password" if password else "secret"


# --- a command's output ------------------------------------------------------------------------

# Commands that print a credential: what the line after them holds is it. (``cat`` of a file
# named for one; a decode of base64 as ``kubectl get secret`` gives it; the CLIs' own "print
# my token" verbs.) A match starts at the command's word, which the seek finds.
_PRINTS = (
    r"(?<![A-Za-z0-9_-])(?:cat[ \t]+[^\n|;&]*(?i:master\.key|vault-token|token|secret|passw"
    r"|credential|\.key\b)"
    r"|(?:(?<=\|)|(?<=\|[ \t]))base64[ \t]+(?:-d|--decode|-D)\b"
    r"|gh[ \t]+auth[ \t]+token|heroku[ \t]+auth:token|get-login-password"
    r"|get-access-token|print-(?:access|identity)-token|get-secret-value"
    r"|vault[ \t]+(?:kv[ \t]+get|read)[ \t]+-field|openssl[ \t]+rand\b|secrets\.token_"
    r"|find-generic-password[^\n]*[ \t]-w\b|secrets[ \t]+get[^\n]*--plain"
    r"|terraform[ \t]+output[ \t]+-raw\b)"
    # (no literal may end in a blank: the gate would look at every space of every text)
)
_OUTPUT = re.compile(_PRINTS + r"[^\n]*" + _NEXT_VALUE)
# Each command's first word, for the seek.
_COMMAND_WORDS = (
    "cat",
    "base64",
    "gh",
    "heroku",
    "get-login-password",
    "get-access-token",
    "print-",
    "get-secret-value",
    "vault",
    "openssl",
    "secrets",
    "find-generic-password",
    "terraform",
)


def _output_starts(scan: Scan) -> list[int]:
    return _before_a_one_word_line(scan, _COMMAND_WORDS, 400)


def _judge_output(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or _NOT_A_VALUE.fullmatch(secret):
        return None
    if looks_like_password(secret) or (len(secret) >= 16 and is_random(secret)):
        return "secret"
    return None


# --- ODBC's braced value, a key named "key" ----------------------------------------------------

_ODBC_BRACED = re.compile(
    r"(?<![A-Za-z0-9_])(?i:pwd|password)[ \t]*=[ \t]*\{(?P<secret>(?:[^}\n]|\}\})+)\}"
    r"(?=[ \t]*(?:;|[\"']|$))"
)
# A format field or an f-string's expression (``PWD={password};``, ``{cfg.db.pw}``, ``{0}``).
_FIELD = re.compile(r"[A-Za-z_][\w.]*(?:\[[^\]]*\])*(?:![rsa])?(?::[^}]*)?|\d*")


def _judge_odbc(m: re.Match[str], secret: str) -> str | None:
    return None if _FIELD.fullmatch(secret) or _is_placeholder(secret) else "password"


_BARE_KEY = re.compile(
    # (not in a query string, shared/redact/web.py's; not a file's name: no "." after)
    # (the separator glued to the name: "key=", "key:", '"Key":' are the gate's anchors, where
    # "key" alone is in "monkey" and "the key to it")
    r"(?<![A-Za-z0-9_.?&-])[\"']?(?i:key(?:=|:|\":|':))[ \t]*[\"']?"
    r"(?P<secret>[A-Za-z0-9+/_-]{20,}={0,2})(?![A-Za-z0-9+/_=.-])"
)


def _bare_key_starts(scan: Scan) -> list[int]:
    text = scan.text
    return sorted(
        {
            at - 1 if at and text[at - 1] in "\"'" else at
            for at in scan.find("key=", "key:", 'key":', "key':")
        }
    )


def _judge_bare_key(m: re.Match[str], secret: str) -> str | None:
    # digits and both cases: not a word, not a sha in one hex case (a cache key's)
    return "api_key" if is_strong(secret) and not _ONE_CASE_HEX.fullmatch(secret) else None


_ONE_CASE_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")


# --- a credentials file of two lines ---------------------------------------------------------

# OpenVPN's ``auth-user-pass`` file (and other tools' files of the same shape: a user on the
# first line, the password on the second), printed by ``cat`` or quoted under its name
# ("# creds.txt:"): the second line is the password. The file's name says credentials (auth,
# cred, pass, login); the two lines are one word each and nothing follows them but a blank
# line, a prompt or the end.
_TWO_LINES = re.compile(
    r"(?P<file>[^\s|;&`\"']*(?i:auth|credentials?|creds|pass|login)[^\s|;&`\"':]*)[ \t]*:?[ \t]*"
    r"\r?\n[ \t]*(?P<user>[\w.@+-]{1,64})[ \t]*\r?\n[ \t]*`?(?P<bare>[^\s`\"']{6,256}?)`?"
    r"[ \t]*\r?(?=\n|$)"
)
_FILE_HEAD = re.compile(r"[ \t]*(?:[$#>][ \t]*)?(?:(?:sudo[ \t]+)?cat[ \t]+|#[ \t]*|//[ \t]*)?$")
_AFTER_TWO = re.compile(r"\r?\n[ \t]*(?:\r?\n|[$#>%]|```|$)|$")


def _two_lines_starts(scan: Scan) -> list[int]:
    text = scan.text
    if text.count("\n") < 2:
        return []
    starts = set()
    for at in scan.find("auth", "credential", "creds", "pass", "login"):
        end = text.find("\n", at, at + 120)
        if end < 0 or not _one_token_next(text, end):
            continue
        second = text.find("\n", end + 1)
        if second >= 0 and _one_token_next(text, second):
            head = at
            while head > 0 and not text[head - 1].isspace() and text[head - 1] not in "|;&`\"'":
                head -= 1
            starts.add(head)
    return sorted(starts)


def _judge_two_lines(m: re.Match[str], secret: str) -> str | None:
    text, name = m.string, m.group("file")
    if not any(c in name for c in "./") or _NAMES_NO_SECRET.search(name.replace("-pass", "")):
        return None  # a file's name ("auth.txt", "/etc/openvpn/creds"), not a word
    if not _FILE_HEAD.fullmatch(text, text.rfind("\n", 0, m.start()) + 1, m.start()):
        return None
    if _AFTER_TWO.match(text, m.end()) is None:
        return None  # a longer file: its second line is no password
    return "password" if _value_ok(secret, password=True) else None


LINES: tuple[RuleSpec, ...] = (
    (_OUTPUT, _judge_output, _output_starts),
    (_ANNOUNCE, _judge_announce, _announce_starts),
    (_ODBC_BRACED, _judge_odbc, None),
    (_BARE_KEY, _judge_bare_key, _bare_key_starts),
    (_TWO_LINES, _judge_two_lines, _two_lines_starts),
)
