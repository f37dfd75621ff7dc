"""The gate's regex for anchors with a rare character (shared/redact/gate.py): one regex
whose alternatives are grouped by that character (the pivot), so a search skips ahead on the
set of pivots and checks the rest of each anchor around it with lookarounds; a crowded group
is sorted by the character beside its pivot."""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.redact.anchors import Anchor, pivot_rank

__all__ = ["Pivot", "pivot_gate"]


@dataclass(frozen=True)
class Pivot:
    anchor: Anchor
    offset: int  # where the rare character sits in the anchor
    rules: tuple[int, ...]


def _pivot_at(anchor: Anchor) -> int:
    text, icase = anchor
    rank = [pivot_rank(char, i, icase) for i, char in enumerate(text)]
    return rank.index(min(rank))


def _around(anchor: Anchor, at: int) -> str:
    """Lookarounds that check the rest of ``anchor`` once its character ``at`` is consumed."""
    text, icase = anchor
    wrap = "(?i:{})" if icase else "{}"
    behind = f"(?<={wrap.format(re.escape(text[: at + 1]))})" if at else ""
    ahead = f"(?={wrap.format(re.escape(text[at + 1 :]))})" if at + 1 < len(text) else ""
    return behind + ahead


def _pair(pivot: Pivot) -> str:
    """The pivot and the character beside it that ``_neighbour`` checks."""
    text, icase = pivot.anchor
    pair = text[pivot.offset - 1 : pivot.offset + 1] if pivot.offset else text[:2]
    return pair.lower() if icase else pair


def _neighbour(pivot: Pivot) -> str:
    """A check on one character beside the pivot, to sort a crowded bucket ("_" holds 90
    anchors) into small ones: the character before it, or after it for a leading pivot."""
    text, icase = pivot.anchor
    if pivot.offset:
        near = f"(?<={re.escape(text[pivot.offset - 1 : pivot.offset + 1])})"
    elif len(text) > 1:
        near = f"(?={re.escape(text[1])})"
    else:
        return ""
    return f"(?i:{near})" if icase else near


def _bucket(group: tuple[Pivot, ...]) -> str:
    checks = [_around(p.anchor, p.offset) for p in group]
    if "" in checks:
        return ""
    by_near: dict[str, list[str]] = {}
    for pivot, check in zip(group, checks, strict=True):
        by_near.setdefault(_neighbour(pivot), []).append(check)
    return "(?:" + "|".join(f"{near}(?:{'|'.join(c)})" for near, c in by_near.items()) + ")"


def _gate_regex(pivots: dict[str, tuple[Pivot, ...]]) -> re.Pattern[str]:
    # Each alternative starts with its pivot as a plain literal (never a letter under re.I:
    # pivot_rank never picks one), so the search skips ahead on the set of pivots.
    parts = [re.escape(char) + _bucket(group) for char, group in sorted(pivots.items())]
    return re.compile("|".join(parts) or "(?!)")


def pivot_gate(
    anchored: list[tuple[Anchor, tuple[int, ...]]],
) -> tuple[re.Pattern[str], dict[str, dict[str, tuple[Pivot, ...]]]]:
    """The gate's regex over ``anchored`` (each anchor with its rules), and each pivot
    character's anchors by the two characters around it (lowercase for a case-insensitive
    anchor; "" for a one-character anchor)."""
    pivots: dict[str, list[Pivot]] = {}
    for anchor, ids in anchored:
        at = _pivot_at(anchor)
        pivots.setdefault(anchor[0][at], []).append(Pivot(anchor, at, ids))
    frozen = {char: tuple(group) for char, group in pivots.items()}
    by_pair: dict[str, dict[str, list[Pivot]]] = {}
    for char, group in frozen.items():
        for pivot in group:
            pair = _pair(pivot) if len(pivot.anchor[0]) > 1 else ""
            by_pair.setdefault(char, {}).setdefault(pair, []).append(pivot)
    grouped = {c: {p: tuple(g) for p, g in pairs.items()} for c, pairs in by_pair.items()}
    return _gate_regex(frozen), grouped
