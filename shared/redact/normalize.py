"""The form the rules read a text in: no invisible characters, no odd space inside a key, NFKC
(Unicode's compatibility normal form, so a key typed in full-width characters is found), and
Cyrillic or Greek look-alike letters in a word of mixed scripts read as Latin."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["normal_form"]


# Invisible characters NFKC keeps (zero-width space, joiners, word joiner, BOM, soft hyphen):
# one inside a token ("ghp_aBc\u200bDeF...") would hide it from every rule.
_INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")


# Spaces other than ASCII's (no-break, the typographic widths, ideographic): NFKC makes each a
# space, so one typed inside a token ("ghp_aBcDeFgHiJ\u00a0kLmNo...") splits it in two. One
# between runs of token characters is dropped when the runs, joined, read as a key (16+
# characters mixing letter cases or digits); "10\u00a0km", "Jean\u00a0Dupont" and a
# French "mot\u00a0:" keep theirs.
_ODD_SPACE = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_SPLIT_RUN = re.compile("[\\w+/=.-]+(?:[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000][\\w+/=.-]+)+")
# Cyrillic and Greek letters drawn as Latin ones (the single-letter mappings of Unicode's
# confusables.txt, UTS #39): a word that mixes them with Latin letters ("раssword" with a
# Cyrillic р and а, "tоken" with a Cyrillic о) is spelled to slip past a filter, and its
# look-alikes are read as the letters they imitate. A word in one script ("пароль", "токен",
# "ΑΒΓ") is left as written.
_CONFUSABLE = str.maketrans(
    "аеорсухѕіјԁԛԝһүвкмнтАВЕКМНОРСТХУЅІЈαονικυχεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxsijdqwhyBkmHTABEKMHOPCTXYSIJaovikuxeABEZHIKMNOPTYX",
)
_MIXED = re.compile("[A-Za-z][\u0370-\u03ff\u0400-\u04ff]|[\u0370-\u03ff\u0400-\u04ff][A-Za-z]")
_LETTERS = re.compile(r"[^\W\d_]{2,}")


def _glue(run: re.Match[str]) -> str:
    from shared.redact.catalogue import is_random

    joined = _ODD_SPACE.sub("", run.group())
    key = unicodedata.normalize("NFKC", joined)
    return joined if len(key) >= 16 and is_random(key) else run.group()


def _unmix(word: re.Match[str]) -> str:
    text = word.group()
    return text.translate(_CONFUSABLE) if _MIXED.search(text) is not None else text


def normal_form(text: str) -> str:
    """The form rules see: no invisible characters, no odd space inside a key, NFKC, and
    look-alike letters in a word of mixed scripts read as Latin."""
    if text.isascii():
        return text
    if _INVISIBLE.search(text) is not None:
        text = _INVISIBLE.sub("", text)
    if _ODD_SPACE.search(text) is not None:
        text = _SPLIT_RUN.sub(_glue, text)
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    if _MIXED.search(text) is not None:
        text = _LETTERS.sub(_unmix, text)
    return text
