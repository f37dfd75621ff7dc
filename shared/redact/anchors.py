"""Anchors: a cheap proof that a redaction rule cannot match.

Each rule's *anchor sets* are sets of literal strings read off its own compiled pattern such
that every match contains a string of each set. ``shared.redact`` skips a rule when some set
has no string in the text. Derived from the patterns, never hand-written, so an edited pattern
cannot outrun its anchors.
"""

from __future__ import annotations

import importlib
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = [
    "FOLD",
    "Anchor",
    "Probe",
    "Strings",
    "anchors",
    "folded",
    "implies",
    "is_word",
    "minimal",
    "occurs",
    "pivot_rank",
]

# --- anchors: a cheap proof that a rule cannot match -------------------------------------------
#
# Most text holds no secret, and running every rule over it was most of the cost of a save.
# Each rule's *anchor sets* are sets of literal strings read off its own compiled pattern
# (one set per required part: "password" ... then ":" or "=") such that every match contains
# a string of each set; an anchor remembers whether its letters match case-insensitively. A
# rule is skipped when some set has no string in the text, and when no rule is left the text
# comes back untouched. Derived from the patterns, never hand-written, so an edited pattern
# cannot outrun its anchors; a pattern with none derivable gets None and always runs.
# tests/shared/test_redact.py checks the derivation against the corpus and compares
# ``redact`` with running every rule.

# An anchor: (string, ignore case); a case-insensitive one is stored lowercase.
Anchor: TypeAlias = tuple[str, bool]
Strings: TypeAlias = frozenset[Anchor]
# (exact, anchors): ``exact`` is every string a node can match, when few; ``anchors`` a set
# one of which every match contains; None where nothing can be said.
_Facts: TypeAlias = tuple[Strings | None, Strings | None]

_ANCHOR_CAP = 64  # most strings one set may hold before it gives up on being exact
_EMPTY: Strings = frozenset({("", False)})
_UNKNOWN: _Facts = (None, None)
_ZERO_WIDTH = frozenset({"AT", "ASSERT", "ASSERT_NOT"})
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
# Under re.I, Python's engine also matches these non-ASCII characters to ASCII letters
# (dotted and dotless i, long s, Kelvin sign): fold them before looking for a lowercase
# anchor. tests/shared/test_redact.py proves the list complete over every code point.
FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _join(a: Anchor, b: Anchor) -> Anchor:
    if not a[0] or not b[0]:
        return b if not a[0] else a
    if a[1] == b[1]:
        return a[0] + b[0], a[1]
    return (a[0] + b[0]).lower(), True  # mixed: case-insensitive matching is the superset


def _product(left: Strings | None, right: Strings | None) -> Strings | None:
    if left is None or right is None or len(left) * len(right) > _ANCHOR_CAP:
        return None
    return frozenset(_join(a, b) for a in left for b in right)


def _usable(strings: Strings | None) -> Strings | None:
    """An anchor set that proves something: no empty alternative."""
    return strings if strings and all(s for s, _ in strings) else None


def _better(a: Strings | None, b: Strings | None) -> Strings | None:
    """The more selective anchor set: longest shortest member, then fewest members."""
    if a is None or b is None:
        return a if b is None else b
    key_a = (min(len(s) for s, _ in a), -len(a))
    key_b = (min(len(s) for s, _ in b), -len(b))
    return a if key_a >= key_b else b


def _seq_facts(items: Any, icase: bool, every: list[Strings] | None = None) -> _Facts:
    """A sequence: runs of exact nodes concatenate; the best run or inner anchor set wins.
    Each of them is required, so ``every`` collects them all when given."""
    found: list[Strings | None] = []
    run: Strings | None = _EMPTY
    whole: Strings | None = _EMPTY
    for op, av in items:
        exact, anchors = _node_facts(str(op), av, icase)
        whole = _product(whole, exact)
        joined = _product(run, exact)
        if joined is not None:
            run = joined
            continue
        found += (_usable(run), _usable(exact) or anchors)
        run = exact if exact is not None else _EMPTY
    found.append(_usable(run))
    usable = [f for f in found if f is not None]
    if every is not None:
        every += usable
    best: Strings | None = None
    for candidate in usable:
        best = _better(best, candidate)
    return whole, best


def _branch_facts(alternatives: list[Any], icase: bool) -> _Facts:
    facts = [_seq_facts(alt, icase) for alt in alternatives]
    exact: Strings | None = frozenset()
    anchors: Strings | None = frozenset()
    for alt_exact, alt_anchors in facts:
        exact = None if exact is None or alt_exact is None else exact | alt_exact
        alt = _usable(alt_exact) or alt_anchors
        anchors = None if anchors is None or alt is None else anchors | alt
    return (exact if exact is not None and len(exact) <= _ANCHOR_CAP else None), anchors


def _class_facts(members: list[Any], icase: bool) -> _Facts:
    if any(str(op) != "LITERAL" for op, _ in members):
        return _UNKNOWN  # ranges, categories, negation: too many characters to list
    return frozenset(_literal(code, icase) for _, code in members), None


def _literal(code: int, icase: bool) -> Anchor:
    char = chr(code)
    return (char.lower(), True) if icase and char.lower() != char.upper() else (char, False)


def _repeat_facts(low: int, high: int, body: Any, icase: bool) -> _Facts:
    exact, anchors = _seq_facts(body, icase)
    anchors = (_usable(exact) or anchors) if low else None
    if exact is None or high > 3:
        return None, anchors
    counts = [_EMPTY]  # "={1,3}", "x?": spell every count out
    for _ in range(high):
        step = _product(counts[-1], exact)
        if step is None:
            return None, anchors
        counts.append(step)
    return frozenset().union(*counts[low:]), anchors


def _node_facts(op: str, av: Any, icase: bool) -> _Facts:
    if op == "LITERAL":
        return frozenset({_literal(av, icase)}), None
    if op in _ZERO_WIDTH:
        return _EMPTY, None  # consumes nothing, so adds nothing to a match
    if op == "IN":
        return _class_facts(av, icase)
    if op == "SUBPATTERN":
        _, add, remove, body = av
        return _seq_facts(body, bool((icase or add & re.I) and not remove & re.I))
    if op == "ATOMIC_GROUP":
        return _seq_facts(av, icase)
    if op == "BRANCH":
        return _branch_facts(av[1], icase)
    if op == "GROUPREF_EXISTS":
        return _branch_facts([av[1], av[2] or []], icase)
    if op in _REPEATS:
        return _repeat_facts(av[0], av[1], av[2], icase)
    return _UNKNOWN  # ANY, NOT_LITERAL, CATEGORY, GROUPREF, ...


def implies(a: Anchor, b: Anchor) -> bool:
    """Whenever ``a`` occurs, so does ``b``."""
    return b[0] in a[0].lower() if b[1] else not a[1] and b[0] in a[0]


def minimal(anchors: Strings) -> Strings:
    """Without anchors that imply another: the set answers the same with fewer tests."""
    return frozenset(a for a in anchors if not any(b != a and implies(a, b) for b in anchors))


def anchors(pattern: re.Pattern[str]) -> tuple[Strings, ...] | None:
    """Anchor sets of ``pattern``: every match holds one string of each set, the most
    selective set comes first; None when no set can be found."""
    every: list[Strings] = []
    try:
        parser: Any = importlib.import_module("re._parser")  # CPython 3.11+
        tree = parser.parse(pattern.pattern, pattern.flags)
        exact, best = _seq_facts(tree, bool(pattern.flags & re.I), every)
    except Exception:  # another engine or parser: no shortcut, the rule always runs
        return None
    best = _usable(exact) or best
    if best is None:
        return None
    rest = [minimal(s) for s in every if s != best]
    return (minimal(best), *dict.fromkeys(rest))


def folded(text: str) -> str:
    return text.lower() if text.isascii() else text.translate(FOLD).lower()


def occurs(anchor: Anchor, text: str, folded: str) -> bool:
    return anchor[0] in (folded if anchor[1] else text)


def _pivoted(anchor: Anchor) -> str:
    """``anchor`` as a regex that starts at its rarest character (a symbol, a digit, an inner
    capital), so a search skips ahead on that one character and checks the rest around it."""
    text, icase = anchor
    rank = [pivot_rank(char, i, icase) for i, char in enumerate(text)]
    at = rank.index(min(rank))
    flags = "(?i:{})" if icase else "{}"
    behind = f"(?<={flags.format(re.escape(text[: at + 1]))})" if at else ""
    ahead = f"(?={flags.format(re.escape(text[at + 1 :]))})" if at + 1 < len(text) else ""
    head = re.escape(text[at])
    return (flags.format(head) if icase and text[at].isalpha() else head) + behind + ahead


def pivot_rank(char: str, at: int, icase: bool) -> int:
    if char.isalpha() and icase:
        return 9  # stands for two characters: no single-character skip
    if not char.isalnum():
        return {".": 4, " ": 5}.get(char, 0)
    if char.isdigit():
        return 1
    return (2 if at else 3) if char.isupper() else 6


def is_word(anchor: Anchor) -> bool:
    """Letters only, none of them a capital to pivot on: found with ``in``. Non-ASCII ones
    too: a case-insensitive "пароль" or "şifre" pivoted on its first letter would be looked
    for in lowercase only, and miss "Пароль"; ``in`` on the folded text finds every case.
    And letters without case ("密码", "パスワード", with their marks: "पासवर्ड"): as pivots
    they would put non-ASCII characters into the gate's regex, whose search then skips ahead
    more slowly on every text; ``in`` returns at once on a text with no character that wide."""
    text, icase = anchor
    lettered = text[:1].isalpha() and all(c.isalpha() or _is_mark(c) for c in text)
    return lettered and (icase or text.islower() or text.lower() == text.upper())


def _is_mark(char: str) -> bool:
    """A vowel sign or a tone mark (Devanagari's "ा", Thai's "่"): part of a word, though no
    letter to ``str.isalpha``; "पासवर्ड" and "รหัสผ่าน" are words to find with ``in``."""
    return unicodedata.category(char) in ("Mn", "Mc")


@dataclass(frozen=True)
class Probe:
    """Whether a text holds one of a set of anchors: a regex for case-sensitive ones with a
    rare character to pivot on, ``in`` tests for the rest (a case-insensitive regex cannot
    skip ahead, while ``in`` on the folded text is one fast scan) and for sets too small to
    need a regex."""

    pattern: re.Pattern[str] | None
    plain: tuple[Anchor, ...]

    @classmethod
    def build(cls, anchors: Strings) -> Probe:
        pivoted = sorted(a for a in anchors if not is_word(a) and not a[1])
        if len(pivoted) <= 3:
            return cls(None, tuple(sorted(anchors)))
        pattern = re.compile("|".join(map(_pivoted, pivoted)))
        return cls(pattern, tuple(sorted(a for a in anchors if a not in pivoted)))

    def hit(self, text: str, folded: str) -> bool:
        if self.pattern is not None and self.pattern.search(text) is not None:
            return True
        return any(occurs(anchor, text, folded) for anchor in self.plain)
