"""Recall over one bank (DESIGN §4): filters first, then the fused score, then the cut.

hybrid  = (bm25 + 0.6·entity_hits + 0.3·ln(1+corroboration) + 0.75·pinned)
          · max(0.5^(age_days / half_life), 0.35) + 2.2·cosine
lexical = plain BM25 over the query's content words (one raw arm, seeds/003 memory::recall)
semantic = plain cosine (the other raw arm)

A candidate must match something (a query term, an entity, or, with embeddings, a positive
cosine); the boosts order matches, they never invent one. ``relevance_score`` maps the fused
score monotonically into [0, 1) as ``s / (s + RELEVANCE_HALF)``: a score of RELEVANCE_HALF (a
solid single-term match) reads as 0.5. Ties break by id so results are deterministic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shared.errors import BudgetExceededError
from shared.models import Memory
from shared.text import FIRST_PERSON, entity_norm, query_tokens, words
from store_worker.bank import SCOPE_CODE, TYPE_CODE, Bank

W_ENTITY = 0.6
W_CORROBORATION = 0.3
W_PINNED = 0.75
W_COSINE = 2.2
DECAY_FLOOR = 0.35
RELEVANCE_HALF = 4.0
# Under budget pressure, project-type records decay this many times faster (seeds/002 SHOULD:
# "project-type records weighted toward recency under budget pressure").
PROJECT_PRESSURE_FACTOR = 4.0
DAY_MS = 86_400_000.0

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class RecallParams:
    query: str
    limit: int = 10
    mode: str = "hybrid"
    tag: str | None = None
    include_superseded: bool = False
    include_pending: bool = False
    token_budget: int | None = None
    session_ids: frozenset[str] = frozenset()
    project: str | None = None
    type_filter: tuple[str, ...] = ()
    scope_filter: tuple[str, ...] = ()
    half_life_days: float = 60.0


@dataclass(frozen=True)
class Hit:
    memory: Memory
    score: float

    @property
    def relevance(self) -> float:
        return relevance(self.score)


def relevance(score: float) -> float:
    s = max(score, 0.0)
    return s / (s + RELEVANCE_HALF)


def entity_candidates(query: str) -> set[str]:
    """Handles a query may name: words, and runs of two or three words joined by '-' or ''."""
    ws = words(query)
    out = {entity_norm(w) for w in ws}
    for n in (2, 3):
        for i in range(len(ws) - n + 1):
            run = ws[i : i + n]
            out.add("-".join(run))
            out.add("".join(run))
            out.add(" ".join(run))
    if any(w in FIRST_PERSON for w in ws):
        out.add("user")
    return out


def filter_mask(bank: Bank, p: RecallParams) -> npt.NDArray[np.bool_]:
    """Everything a caller may see for these parameters; applied before any cut."""
    idx = bank.index
    mask = idx.col("alive").astype(bool).copy()
    if not p.include_superseded:
        mask &= ~idx.col("retired").astype(bool)
    if not p.include_pending:
        mask &= ~idx.col("pending").astype(bool)
    if p.tag:
        mask &= idx.tag_mask(p.tag)
    if p.type_filter:
        mask &= np.isin(idx.col("type"), [TYPE_CODE[t] for t in p.type_filter])
    if p.scope_filter:
        mask &= np.isin(idx.col("scope"), [SCOPE_CODE[s] for s in p.scope_filter])
    return mask & _visible(bank, p)


def _visible(bank: Bank, p: RecallParams) -> npt.NDArray[np.bool_]:
    """Scope visibility (seeds/000 MemoryScope): global everywhere; project only for the
    same working directory; session only in that session and its descendants."""
    idx = bank.index
    scope = idx.col("scope")
    visible = scope == SCOPE_CODE["global"]
    project_id = idx.interned(p.project)
    if project_id is not None:
        visible |= (scope == SCOPE_CODE["project"]) & (idx.col("project") == project_id)
    session_codes = [c for c in (idx.interned(s) for s in p.session_ids) if c is not None]
    if session_codes:
        visible |= (scope == SCOPE_CODE["session"]) & np.isin(idx.col("session"), session_codes)
    return np.asarray(visible, dtype=bool)


def _decay(bank: Bank, now_ms: int, half_life_days: float) -> npt.NDArray[np.float64]:
    age_days = np.maximum(now_ms - bank.index.col("stated_at").astype(np.float64), 0.0) / DAY_MS
    return np.maximum(np.power(0.5, age_days / half_life_days), DECAY_FLOOR)


def score_bank(
    bank: Bank,
    p: RecallParams,
    now_ms: int,
    query_vector: Sequence[float] | None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Fused scores by slot and the candidate mask (filters applied)."""
    idx = bank.index
    mask = filter_mask(bank, p)
    if p.mode == "semantic":
        cos, have = idx.cosine(query_vector or [])
        return cos, mask & have & (cos > 0)
    bm25 = idx.bm25(query_tokens(p.query))
    if p.mode == "lexical":
        return bm25, mask & (bm25 > 0)
    ents = idx.entity_hits(entity_candidates(p.query))
    matched = (bm25 > 0) | (ents > 0)
    base = (
        bm25
        + W_ENTITY * ents
        + W_CORROBORATION * np.log1p(idx.col("corroboration").astype(np.float64))
        + W_PINNED * idx.col("pinned").astype(np.float64)
    )
    score = base * _decay(bank, now_ms, p.half_life_days)
    if query_vector is not None:
        cos, have = idx.cosine(query_vector)
        cos = np.maximum(cos, 0.0)
        score = score + W_COSINE * cos
        matched |= have & (cos > 0)
    return score, mask & matched


def top(
    bank: Bank, scores: npt.NDArray[np.float64], mask: npt.NDArray[np.bool_], k: int
) -> list[Hit]:
    """The k best candidates, score descending, ties by id."""
    slots = np.flatnonzero(mask)
    if not len(slots) or k <= 0:
        return []
    if len(slots) > 4 * k:
        part = np.argpartition(-scores[slots], 4 * k - 1)[: 4 * k]
        slots = slots[part]
    keys = bank.index.keys
    ranked = sorted(slots.tolist(), key=lambda s: (-float(scores[s]), keys[s]))[:k]
    return [Hit(bank.records[keys[s]], float(scores[s])) for s in ranked]


def apply_budget(hits: list[Hit], budget: int | None) -> list[Hit]:
    """Trim from the bottom to fit ``budget`` tokens; nothing fitting is budget_exceeded."""
    if budget is None or not hits:
        return hits
    kept: list[Hit] = []
    used = 0
    for hit in hits:
        cost = hit.memory.tokens
        if used + cost <= budget:
            kept.append(hit)
            used += cost
    if not kept:
        smallest = min(h.memory.tokens for h in hits)
        raise BudgetExceededError(
            f"token_budget {budget} cannot hold any candidate (smallest is {smallest} tokens)"
        )
    return kept


def pressure_rescore(bank: Bank, hits: list[Hit], p: RecallParams, now_ms: int) -> list[Hit]:
    """When the budget cannot hold every hit, weigh project-type records toward recency."""
    if p.token_budget is None or sum(h.memory.tokens for h in hits) <= p.token_budget:
        return hits
    steep = p.half_life_days / PROJECT_PRESSURE_FACTOR
    out = []
    for hit in hits:
        mem = hit.memory
        if mem.type != "project":
            out.append(hit)
            continue
        age = max(now_ms - mem.stated_at, 0) / DAY_MS
        out.append(Hit(mem, hit.score * max(math.pow(0.5, age / steep), DECAY_FLOOR)))
    return sorted(out, key=lambda h: (-h.score, h.memory.id))


def run(
    bank: Bank, p: RecallParams, now_ms: int, query_vector: Sequence[float] | None
) -> list[Hit]:
    scores, mask = score_bank(bank, p, now_ms, query_vector)
    # Over-fetch under a budget so trimming and re-weighing have room to work.
    fetch = p.limit * 4 if p.token_budget is not None else p.limit
    hits = top(bank, scores, mask, fetch)
    if p.mode == "hybrid":
        hits = pressure_rescore(bank, hits, p, now_ms)
    return apply_budget(hits, p.token_budget)[: p.limit]
