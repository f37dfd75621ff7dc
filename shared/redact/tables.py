"""Credentials in tables: a row whose first cell names one (Markdown or CSV), and the
column of a pipe table whose header names one (``| user | password |``), the other columns
kept. (Delimited files' columns are in shared/redact/files.py, which judges them alike.)"""

from __future__ import annotations

import re
from functools import lru_cache

from shared.redact.catalogue import is_random, looks_like_password
from shared.redact.keywords import (
    _KEYWORDS,
    _NO_VALUE,
    _is_placeholder,
    _is_plain,
    _is_random_line,
    _judge_keyword_value,
)
from shared.redact.rule import Scan

# A table row whose first cell names a credential: Markdown (``| DB_PASSWORD | x |``) and CSV
# (``api_key,x``), as a coding assistant lists environment variables.
_TABLE_ROW = re.compile(
    # (the first cell may name it in words: "| API Token | <v> |")
    r"(?m:^)(?:\|[ \t]*`?[A-Za-z0-9_.-]{0,64}?(?:(?<=[A-Za-z0-9])[ \t])?"
    + _KEYWORDS
    + r"`?[ \t]*\|[ \t]*`?"
    r"(?P<secret>[^|`\n]*[^|`\s])`?[ \t]*\|"
    r"|[A-Za-z0-9_.-]{0,64}?(?P<c_key>(?:password|passwd|secret|token|api[_.-]?key|[_.-]key))"
    r",[ \t]*(?P<bare>[^,\s][^,\n]{0,2047}?)[ \t]*(?=\r?\n|$))",
    re.I,
)


# A column of a pipe table whose header names a credential (``| user | password |``, a
# separator line, then one row per account): each cell below that header, not the others. A
# cell match starts at the "|" before it, or at the line's start for a first cell written
# without one (then it ends at the "|" after it). Which cells sit under such a header is
# worked out once per text (_credential_cells) and the judge turns down every other cell.
# The header is outside the match, so the gate also needs one of its nouns in the text
# (TEXT_ANCHORS): a text with a "|" and none of them runs no table rule.
_TABLE_CELL = re.compile(
    r"\|[ \t]*(?P<secret>[^|\s](?:[^|\n]*[^|\s])?)"
    r"|(?m:^)[ \t]*(?P<bare>[^|\s](?:[^|\n]*[^|\s])?)[ \t]*\|"
)

# A header cell that names a credential, read as words (``DB_PASSWORD``, ``apiKey`` and
# ``**Client Secret**`` as "db password", "api key", "client secret"): up to three words
# before the noun ("initial admin password", "GitHub token"), none after it, so "password
# policy", "token count" and "max tokens" name no credential.
_CREDENTIAL_HEADER = re.compile(
    r"(?:[a-z0-9]+ ){0,3}(?:(?P<password>password|passwd|pwd|pass ?phrase)"
    r"|(?P<private_key>private key)|(?P<api_key>api ?key|access key)"
    r"|(?P<secret>secret(?: key)?)|(?P<token>token)"
    # short nouns and other languages' (as ASCII: the header is read in ASCII words): a
    # value under them must look like one ("| suite | pass |" counts tests)
    r"|(?P<pw>pass|pw|creds|credentials?|passwort|kennwort|wachtwoord|senha|contrase a"
    r"|mot de passe|parola|salasana|passord|adgangskode|haslo|heslo|geslo|lozinka))"
)

_TABLE_SEPARATOR = re.compile(r"[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)*[ \t]*:?-+:?[ \t]*\|?[ \t]*\r?")

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

_HEADER_JUNK = re.compile(r"\([^)]*\)|[^A-Za-z0-9]+")

# One of these (case-insensitive) is in every header _CREDENTIAL_HEADER reads as a credential.
_HEADER_WORDS = (
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "pw",
    "creds",
    "credential",
    "kennwort",
    "wachtwoord",
    "senha",
    "contrase",
    "parola",
    "salasana",
    "adgangskode",
    "haslo",
    "heslo",
    "geslo",
    "lozinka",
)


def _cells(line: str) -> list[tuple[int, str]]:
    """The cells of a table line: (offset of the match start in the line, the cell's text).
    A cell's match starts at the "|" before it, or at 0 for a first cell with none."""
    pipes = [i for i, ch in enumerate(line) if ch == "|"]
    lead = line[: pipes[0]].strip() == "" if pipes else False
    bounds = pipes if lead else [0, *pipes]
    cells = []
    for k, start in enumerate(bounds):
        end = bounds[k + 1] if k + 1 < len(bounds) else len(line)
        cells.append((start, line[start + (1 if lead or k else 0) : end]))
    if cells and not cells[-1][1].strip() and len(cells) > 1:
        cells.pop()  # the trailing "|"
    return cells


def _header_label(cell: str) -> str | None:
    words = _HEADER_JUNK.sub(" ", _CAMEL.sub(" ", cell)).lower().split()
    found = _CREDENTIAL_HEADER.fullmatch(" ".join(words))
    if found is None:
        return None
    return next(name for name, value in found.groupdict().items() if value is not None)


@lru_cache(maxsize=8)
def _credential_cells(text: str) -> dict[int, str]:
    """Where each cell under a credential header starts in ``text`` (see _TABLE_CELL), and
    the label its header gives. A table is a header line, a separator line (``|---|---|``)
    and the rows that follow it, each with a "|"; without a separator line, the header and
    every row must have the same number of cells."""
    lines, at = [], 0
    for line in text.split("\n"):
        lines.append((at, line))
        at += len(line) + 1
    found: dict[int, str] = {}
    i = 0
    while i < len(lines) - 1:
        header = lines[i][1]
        cells = _cells(header) if "|" in header else []
        labels = {k: label for k, (_, cell) in enumerate(cells) if (label := _header_label(cell))}
        if not labels or len(cells) < 2:
            i += 1
            continue
        j = i + 1
        ruled = "-" in lines[j][1] and _TABLE_SEPARATOR.fullmatch(lines[j][1]) is not None
        j += ruled
        if not ruled:  # a short or foreign noun heads only a Markdown table: "(f'echo {PW} |"
            labels = {k: label for k, label in labels.items() if label != "pw"}
            if not labels:
                i += 1
                continue
        while j < len(lines) and "|" in lines[j][1]:
            row_at, row = lines[j]
            row_cells = _cells(row)
            if not ruled and len(row_cells) != len(cells):
                break
            for k, label in labels.items():
                if k < len(row_cells):
                    found[row_at + row_cells[k][0]] = label
            j += 1
        i = max(j, i + 1)
    return found


_CELL_END = re.compile(r"[ \t]*(?:\||\r?\n|$)")


def _judge_table_cell(m: re.Match[str], secret: str) -> str | None:
    label = _credential_cells(m.string).get(m.start())
    if label is None:
        return None
    end = m.end("secret") if m.group("secret") is not None else m.end("bare")
    if _CELL_END.match(m.string, end) is None:
        return None  # cut short by a marker: what is left of the cell is another rule's
    return _cell_label(label, secret.strip("`*").strip())


def _cell_label(label: str, value: str) -> str | None:
    """The label of a value in a column whose header gave ``label``, or None: a note, a dash,
    a count or a plain word where a key must look like one (also the delimited tables of
    shared/redact/files.py)."""
    if _is_placeholder(value) or value.lower() in _NO_VALUE:
        return None
    if " " in value and not _is_random_line(value):
        return None  # "at least 12 characters", "same as staging": a note, not a value
    if label == "password":
        return label  # any one word under "password" is one, "sunshine" too
    if _is_plain(value) or value.isdigit() or len(value) < 6:
        return None  # "| hello | 15339 |" under "token": a tokenizer's id, not a credential
    if label == "pw":  # a short or foreign noun: a value shaped like a password or a key
        return "password" if looks_like_password(value) or is_random(value) else None
    return label if is_random(value) or looks_like_password(value) else None


_ROW_START = re.compile(r"(?m)^(?:\||[A-Za-z0-9_.-]{1,80},)")


def _row_starts(scan: Scan) -> list[int]:
    return [m.start() for m in _ROW_START.finditer(scan.text)]


def _judge_table_row(m: re.Match[str], secret: str) -> str | None:
    if m.group("c_key") is not None:  # CSV: the label from the column name
        if _is_placeholder(secret) or _is_plain(secret) or " " in secret:
            return None
        key = m.group("c_key").lower()
        return "password" if key.startswith("pass") else "api_key" if "key" in key else key
    if " " in secret.strip() and not _is_random_line(secret):
        return None  # "| Token | see the vault |": a note, not a value
    return _judge_keyword_value(m, secret)
