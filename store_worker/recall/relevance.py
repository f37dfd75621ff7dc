"""A relevance score that means the same in every bank: what injection's threshold reads.

Recall's fused score orders one query's candidates well, but its size does not travel: BM25's
IDF grows with the bank, and the boosts and context lending scale it again, so a 0.3 from
``s / (s + RELEVANCE_HALF)`` is a strong match in one bank and noise in another. Injection has
to say "nothing here is relevant", so recall's top ``k`` (only those: the ranking itself is
untouched) are scored again here on a scale that holds across banks and queries:

    lexical  = (own + W_CONTEXT · context) / (1 + PRIOR / total)
    own      = the IDF-weighted share of the query's distinct content terms the memory holds
    context  = the share held only by the turn before or after it (a dialog turn's passage)
    semantic = clip((cosine - COS_LOW) / (COS_HIGH - COS_LOW), 0, 1), when a model is on
    relevance = max(lexical, semantic), clipped to [0, 1]

The weights are IDF against the bank's own background (``BankIndex.idf``): a term the bank
never saw weighs the most, so a prompt about things the bank does not hold ("reverse a linked
list in Python" in a bank about someone's holidays) covers little of itself whatever a few
common words match, and a speaker's name that opens half the bank's turns weighs little. A
date the query names counts as one more term (of the query's mean weight) that a memory
inside the window holds. ``user`` (read from first-person words) counts only when the bank
holds it.

``select`` is injection's cut over the candidates in recall's order: those at or above the
threshold, and of those only the ones whose recall score is within ``RELATIVE`` of the best
one's and before a drop of ``GAP`` in relevance (one memory far above the rest goes alone).
Both the calibration and the cut were chosen on the injection eval
(``tests/recall_quality/inject.py``, HISTORY.md §18).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from shared.contract.errors import InvalidArgumentError
from shared.contract.models import Why
from store_worker.recall.context import chains
from store_worker.recall.parsed import parse
from store_worker.recall.signals import DAY_MS, date_hits

if TYPE_CHECKING:
    from shared.text import DateWindow
    from store_worker.recall.scoring import Hit, RecallParams
    from store_worker.storage.bank import Bank

W_CONTEXT = 0.7
# Documents of a virtual background that holds none of the query's words, added to the bank's
# own for the weights: in a bank of five notes that all say "tea", "tea" still means something.
BACKGROUND = 100
# IDF mass added to every query's total: a short query matched on one common word of the bank
# ("why is the sky blue?" → a turn about blue paint) reads as less sure than a long one.
PRIOR = 2.0
COS_LOW = 0.5
COS_HIGH = 0.9
# The cut: a memory whose recall score is under RELATIVE of the best one's, or after a drop of
# GAP in relevance, stays out (HISTORY.md §18).
RELATIVE = 0.3
GAP = 0.3
DEFAULT_MIN_RELEVANCE = 0.3  # StoreSettings.min_relevance's default
ALWAYS_ON = "always-on"  # the tag that puts a memory in every turn, as a pin does

T = TypeVar("T")


@dataclass(frozen=True)
class Scored:
    relevance: float
    why: Why


def query_terms(
    bank: Bank, p: RecallParams, now_ms: int
) -> tuple[list[str], DateWindow | None, frozenset[str]]:
    """The distinct content terms recall matched on, the time the query names, and its words
    (for entity handles)."""
    q = parse(p.query, now_ms)  # recall's own parse of this query (parsed.py)
    terms = sorted(set(q.terms))
    if "user" in terms and bank.index.df.get("user", 0) == 0:
        terms.remove("user")  # first person, in a bank that never says "user"
    return terms, q.window, q.said


def _named(handle: str, said: frozenset[str]) -> bool:
    """Whether the query's words name an entity handle (``sofia-almeida``: every part)."""
    return handle in said or all(part in said for part in handle.split("-"))


def _cosines(bank: Bank, slots: Sequence[int], query_vector: Sequence[float]) -> list[float]:
    """The cosine of each slot's vector to the query (0 without one): the hits' only."""
    idx = bank.index
    vectors = idx.vectors
    q = np.asarray(query_vector, dtype=np.float32)
    if vectors is None or len(q) != vectors.shape[1]:
        return [0.0] * len(slots)
    have = idx.has_vector.data
    return [
        float(vectors[s] @ q) if 0 <= s < min(len(vectors), len(have)) and have[s] else 0.0
        for s in slots
    ]


def calibrate(
    bank: Bank,
    p: RecallParams,
    hits: Sequence[Hit],
    now_ms: int,
    query_vector: Sequence[float] | None = None,
) -> list[Scored]:
    """Each hit's calibrated relevance and what matched (see the module docstring)."""
    if not hits:
        return []
    idx = bank.index
    slots = [idx.slot_of.get(h.memory.id, -1) for h in hits]
    if not p.query.strip():
        return [Scored(0.0, _why(bank, p, now_ms, s, (), (), (), False, None)) for s in slots]
    terms, window, said = query_terms(bank, p, now_ms)
    n = idx.n_counted + BACKGROUND
    weight = {t: idf(n, idx.df.get(t, 0)) for t in terms}
    total = sum(weight.values())
    dated = window is not None
    date_w = total / len(terms) if dated and terms else (1.0 if dated else 0.0)
    total += date_w + PRIOR
    in_window = date_hits(bank, window, p.tuning) > 0 if window is not None else None
    ch = chains(bank)
    wanted = set(terms)
    cos: list[float] | None = None
    if query_vector is not None and p.mode != "lexical":
        cos = _cosines(bank, slots, query_vector)
    out = []
    for i, (hit, slot) in enumerate(zip(hits, slots, strict=True)):
        if slot < 0:
            out.append(Scored(0.0, Why()))
            continue
        own = wanted & set(idx._terms_of(slot))
        near: set[str] = set()
        if slot < len(ch.prev):
            for other in (int(ch.prev[slot]), int(ch.next[slot])):
                if other >= 0:
                    near |= wanted & set(idx._terms_of(other))
        near -= own
        date = bool(in_window is not None and in_window[slot])
        lexical = 0.0
        if total > 0:
            got = sum(weight[t] for t in own) + (date_w if date else 0.0)
            lexical = (got + W_CONTEXT * sum(weight[t] for t in near)) / total
        semantic = cos[i] if cos is not None else None
        score = lexical
        if semantic is not None:
            score = max(score, (semantic - COS_LOW) / (COS_HIGH - COS_LOW))
        ents = tuple(sorted(e for e in hit.memory.entities if _named(e, said)))
        why = _why(bank, p, now_ms, slot, own, near, ents, date, semantic)
        out.append(Scored(round(min(max(score, 0.0), 1.0), 4), why))
    return out


def idf(n: int, df: int) -> float:
    """BM25's IDF of a term ``df`` of ``n`` documents hold."""
    return math.log1p((n - df + 0.5) / (df + 0.5))


def _why(
    bank: Bank,
    p: RecallParams,
    now_ms: int,
    slot: int,
    own: Sequence[str] | set[str],
    near: Sequence[str] | set[str],
    entities: tuple[str, ...],
    date: bool,
    semantic: float | None,
) -> Why:
    idx = bank.index
    if slot < 0:
        return Why()
    stated = float(idx.col("stated_at")[slot])
    half_life = p.half_life_days * p.tuning.half_life_scale
    recency = max(0.5 ** (max(now_ms - stated, 0.0) / DAY_MS / half_life), p.tuning.decay_floor)
    return Why(
        terms=tuple(sorted(own)),
        context=tuple(sorted(near)),
        entities=entities,
        date=date,
        semantic=None if semantic is None else round(semantic, 4),
        recency=1.0 if date else round(recency, 4),
        pinned=bool(idx.col("pinned")[slot]),
    )


def select(
    candidates: Sequence[tuple[T, float, float]],
    threshold: float,
    *,
    relative: float = RELATIVE,
    gap: float = GAP,
) -> list[tuple[T, float, float]]:
    """Injection's cut over ``(item, relevance, recall score)`` in recall's order: those at or
    above ``threshold`` whose recall score is at least ``relative`` times the best one's,
    stopping at the first drop of ``gap`` or more in relevance (one memory far above the rest
    goes alone)."""
    kept = [c for c in candidates if c[1] >= threshold]
    if not kept:
        return []
    best = max(c[2] for c in kept)
    kept = [c for c in kept if c[2] >= relative * best]
    ordered = sorted((c[1] for c in kept), reverse=True)
    floor = ordered[-1]
    for hi, lo in itertools.pairwise(ordered):
        if hi - lo >= gap:
            floor = hi
            break
    return [c for c in kept if c[1] >= floor]


def taken(
    candidates: Sequence[tuple[T, float, float]], min_relevance: float
) -> list[tuple[T, float, float]]:
    """What injection takes: ``select`` at ``min_relevance``, or all of them at 0 (off)."""
    return select(candidates, min_relevance) if min_relevance > 0 else list(candidates)


def threshold(value: object) -> float | None:
    """A ``min_relevance`` argument: None (no filter) or a number from 0 to 1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidArgumentError("min_relevance must be a number from 0 to 1")
    return float(value)
