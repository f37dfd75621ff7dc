"""What a context rule is, for the engine (shared/redact/engine.py) and the gate
(shared/redact/gate.py): a pattern, a judge that names a match's label or turns it down, and
optionally a seek that names where a match can start, reading the text through a ``Scan``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeAlias

from shared.redact.anchors import folded

__all__ = ["MARKER", "Judge", "RuleSpec", "Scan", "Seek", "find_all"]

# A judge looks at one match and names its label, or None to leave the match alone.
Judge: TypeAlias = Callable[[re.Match[str], str], str | None]

# Where a match may start, for a rule too slow to search for: every position where a match of
# the rule could begin, sorted (a superset is fine; a missing one is a bug).
Seek: TypeAlias = Callable[["Scan"], list[int]]

RuleSpec: TypeAlias = tuple[re.Pattern[str], Judge, Seek | None]

MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def _fixed(label: str, ok: Callable[[str], bool] | None = None) -> Judge:
    """Always ``label``, or ``label`` only when ``ok(secret)`` holds."""

    def judge(m: re.Match[str], secret: str) -> str | None:
        return label if ok is None or ok(secret) else None

    return judge


def _match_line(m: re.Match[str], *, through_end: bool = False) -> str:
    """The line the match starts on; with ``through_end``, up to the end of the line it ends on."""
    text = m.string
    end = text.find("\n", m.end() if through_end else m.start())
    return text[text.rfind("\n", 0, m.start()) + 1 : end if end >= 0 else len(text)]


# Keywords are found with ``str.find`` in the folded text (shared/redact/anchors.folded:
# lowercase, with the characters ``re.I`` matches to ASCII letters mapped to them): several
# times faster than a regex alternation. Folding keeps every character's position (each folds
# to one character; tests/shared/test_redact_context.py checks every code point).


def find_all(haystack: str, needles: tuple[str, ...]) -> list[int]:
    """Every position where one of ``needles`` starts in ``haystack``, sorted."""
    found = []
    for needle in needles:
        at = haystack.find(needle)
        while at >= 0:
            found.append(at)
            at = haystack.find(needle, at + 1)
    return sorted(found)


class Scan:
    """One text as the seeks see it: its folded form, and where each keyword occurs in it,
    found once however many rules ask."""

    __slots__ = ("_found", "folded", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = folded(text)
        self._found: dict[str, list[int]] = {}

    def find(self, *words: str) -> list[int]:
        """Every position where one of ``words`` (lowercase) occurs, case-insensitively as
        ``re.I`` sees it, sorted."""
        for word in words:
            if word not in self._found:
                self._found[word] = find_all(self.folded, (word,))
        if len(words) == 1:
            return self._found[words[0]]
        return sorted(at for word in words for at in self._found[word])
