"""A proposed rule as the shape table reads it: its disguises taken off.

``shapes.py`` matches English words and ASCII addresses, so a rule is folded first: NFKC
(full-width and compatibility forms), invisible format characters dropped (zero-width spaces,
soft hyphens, bidi marks), look-alike and accented letters transliterated (``anyascii``: a
Cyrillic "о" reads "o"), letters spelled out one by one joined ("p a s s w o r d"), and a
defanged or spoken address put back ("hxxp", "x[.]example", "bob at x dot com"). What the fold
cannot make readable (letters outside ASCII, an encoded payload) is ``unreadable``: the table
cannot clear it, so it waits for a person.
"""

from __future__ import annotations

import re
import unicodedata

from anyascii import anyascii

TLDS = (
    "com|net|org|info|biz|io|ai|co|app|dev|xyz|top|site|online|club|shop|link|click|live|ly|gg|"
    "tk|ml|cf|ga|pw|ru|cn|de|fr|uk|eu|nl|cc|tv|ws|su|ir|example|test|local|onion|zip|mov|sh|"
    "cloud|store|tech|space|website|email|ngrok|pages|workers"
)
"""Top-level domains an address in a rule is taken to end in (the common ones, those abused
most, and the reserved ones): ``x.example`` is an address, ``setup.py`` or ``Dr. Smith`` not."""

_SPACED = re.compile(r"(?<!\S)(?:\S )+\S(?!\S)")
_HXXP = re.compile(r"\bh[x*]{2}p(s?)\b", re.I)
_DOMAIN_AHEAD = rf"(?=(?:[\w-]+\.)*(?:{TLDS})\b)"
_DOT = re.compile(
    rf"\s*[\[({{]\s*(?:\.|dot)\s*[\])}}]\s*|\s+(?:dot|point|punkt|punto)\s+{_DOMAIN_AHEAD}", re.I
)
_AT = re.compile(r"\s*[\[({]\s*(?:@|at)\s*[\])}]\s*", re.I)
_SPOKEN_AT = re.compile(rf"(?<=\w)\s+at\s+(?=[\w-]+(?:\.[\w-]+)*\.(?:{TLDS})\b)", re.I)
_SLASH = re.compile(r"(?<=\w)\s+slash\s+(?=\w)", re.I)
MAX_LABELS = 4
_ENCODED = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")


def readable(text: str) -> str:
    """``text`` with its disguises taken off (see the module docstring)."""
    shown = "".join(
        ch for ch in unicodedata.normalize("NFKC", text) if unicodedata.category(ch) != "Cf"
    )
    folded = anyascii(shown)
    folded = _SPACED.sub(_unspace, folded)
    folded = _HXXP.sub(r"http\1", folded)
    for _ in range(MAX_LABELS):  # x dot y dot com: each pass joins the rightmost label left
        joined = _DOT.sub(".", folded)
        if joined == folded:
            break
        folded = joined
    folded = _AT.sub("@", folded)
    folded = _SPOKEN_AT.sub("@", folded)
    return _SLASH.sub("/", folded)


def _unspace(found: re.Match[str]) -> str:
    """Four or more single characters, spaced: one word ("p a s s w o r d")."""
    run = found.group(0)
    return run.replace(" ", "") if len(run) >= 7 else run


def unreadable(text: str) -> bool:
    """Whether ``text`` holds what the table cannot read: a letter outside ASCII (another
    language or script, or a look-alike), or an encoded payload (a long run mixing upper and
    lower case and digits, or ending in base64's padding)."""
    shown = unicodedata.normalize("NFKC", text)
    if any(ch.isalpha() and not ch.isascii() for ch in shown):
        return True
    for run in _ENCODED.findall(shown):
        if run.endswith("=") or (
            any(c.isupper() for c in run)
            and any(c.islower() for c in run)
            and any(c.isdigit() for c in run)
        ):
            return True
    return False
