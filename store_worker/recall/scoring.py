"""Recall over one bank: filters first, then the fused score, then the cut.

hybrid  = lex + 2·best·cosine, best = the query's highest lex (RELEVANCE_HALF if none; ``fuse``)
          lex = match · (1 + 0.1·ln(1+corroboration) + 0.25·pinned) · decay
          match = bm25 + 0.6·entity_hits + W_DATE·date_hit   (a superseded record's match also
          credits its live successor; entity hits are weighted by the handle's rarity),
          decay = max(0.5^(age_days / half_life), 0.7), or 1 when the query names a date
          (the floor started at 0.35; the eval moved it, tests/recall_quality/HISTORY.md;
          ``DECAY_FLOOR`` stays 0.35 for the budget-pressure re-weighing)
          dialog turns ("Name: ..." saved with a session) then grow with the share of the
          query they and their neighbours cover, lend each other part of their
          lexical score and a question naming a speaker prefers their turns (context.py), before
          the cosine is fused, and the other turns of the best results' sessions rise a little
          after it; question-frame words leave the query first (query.py)
lexical = plain BM25 over the query's content words (one raw arm of memory.v1's recall)
semantic = plain cosine (the other raw arm)

A candidate must match something (a query term, an entity, a date, or, with embeddings, a
positive cosine); the boosts order matches, they never invent one. ``relevance_score`` maps the
fused score monotonically into [0, 1) as ``s / (s + RELEVANCE_HALF)``: a score of
RELEVANCE_HALF (a solid single-term match) reads as 0.5. Ties break by id so results are
deterministic.

Time. A query naming a date ("last May", "in March 2025", "this month"; parsed by
``shared.text.query_dates`` against the store's clock) matches records that happened inside
that window (their ``occurred_at``; without one, when they were stated, plus a short
grace: events are often told a few days later) or whose text names a month inside it, and
switches recency decay off: the caller asked about the past. Supersede
chains: a query worded like an old statement ("which phone", when only the retired "The
user's phone is a Pixel 7" says "phone") reaches the statement that replaced it, and with
``include_superseded`` a retired record is always ranked just below its live successor, never
above it. Every step is a numpy pass over index columns or postings; the only Python loops
run over a bounded number of retired candidates (``SUCCESSOR_FANOUT``).

Boosts scale the match instead of adding to it (the first design added 0.3·ln(1+c) + 0.75·pinned):
BM25's IDF grows with the bank, so a fixed additive pin outweighed a real match in a small
bank ("what day do I publish?" ranked a pinned note on tabs first in a two-memory bank) while
meaning almost nothing in a large one. The eval is unchanged by the switch (HISTORY.md).

An empty query ranks every visible record by standing strength: a match of ``AMBIENT`` each,
plus BM25 over the words of ``hint`` (memory.v1 Recall's ``files_touched``), through the same
boosts and decay (``standing``). One scorer: the protocol's context recall is this one.

The weights are measured on the recall-quality eval (``tests/recall_quality``, HISTORY.md) and
travel in ``RecallParams.tuning`` (``Tuning``), never in a module global.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shared.contract.errors import BudgetExceededError
from shared.contract.models import Memory
from shared.text import query_tokens
from store_worker.recall.context import (
    W_WHEN,
    context_coverage,
    named_speakers,
    prefer_timed,
    session_focus,
    with_neighbours,
)
from store_worker.recall.parsed import parse
from store_worker.recall.signals import (
    DAY_MS,
    date_hits,
    entity_scores,
    guard,
    inherit,
    synonym_scores,
)
from store_worker.recall.spelling import spelling_scores
from store_worker.recall.synonyms import SynonymSource
from store_worker.storage.bank import SCOPE_CODE, TYPE_CODE, Bank

W_ENTITY = 0.6
W_DATE = 2.0
DECAY_FLOOR = 0.35
RELEVANCE_HALF = 4.0
# An empty query's match of every visible record: its standing strength is then its boosts
# and decay alone (about 1 over RELEVANCE_HALF + 1 in ``relevance_score``).
AMBIENT = 1.0
# Under budget pressure, project-type records decay this many times faster (the memory.v1
# provider protocol: project-type records SHOULD weigh toward recency under budget pressure).
PROJECT_PRESSURE_FACTOR = 4.0
# Records the semantic arm alone brings into a hybrid recall (``cosine_pool``); never fewer
# than 4× the limit.
SEMANTIC_POOL = 256


@dataclass(frozen=True)
class Tuning:
    """The scorer's measured weights, passed explicitly: ``MemoryStore(recall_tuning=...)``
    puts them in every ``RecallParams``; the eval varies them (``python -m
    tests.recall_quality.run --set name=value``). Defaults are what production runs. The
    variants that lost (additive boosts, sum and RRF fusion, date words cut from the query,
    decay kept on dated queries, dates / inheritance / the guard / entity rarity switched off)
    are recorded in tests/recall_quality/HISTORY.md and no longer exist."""

    w_entity: float = W_ENTITY
    w_partial: float = 0.5  # a query word matching one part of a multi-word handle
    decay_floor: float = 0.7  # first 0.35; the eval says milder (HISTORY.md)
    half_life_scale: float = 1.0
    w_date: float = W_DATE
    date_grace_days: float = 14.0
    w_grace: float = 1.0  # date credit of a record stated in the grace days after a window
    w_inherit: float = 1.0
    # boosts scale the match: match · (1 + w·signal) (HISTORY.md §6)
    w_corroboration_scale: float = 0.1
    w_pinned_scale: float = 0.25
    w_cosine_norm: float = 2.0  # the cosine's weight against the best lexical match (``fuse``)
    w_coverage: float = 2.0  # a dialog turn and its neighbours covering the query (§14)
    w_synonym: float = 0.5  # a query word's neighbour in the model's word table (synonyms.py)
    w_spelling: float = 1.0  # a query word the bank lacks, read as the word it misspells
    w_session: float = 0.2  # turns of the best results' sessions (context.session_focus)
    w_when: float = W_WHEN  # a "when" question's memories that name a time (context.py)


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
    hint: str = ""  # an empty query's lift: words of the files a turn touched (memory.v1)
    tuning: Tuning = Tuning()
    synonyms: SynonymSource | None = None  # synonyms.py; None: no expansion


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


def visible(
    bank: Bank, *, session_ids: frozenset[str], project: str | None
) -> npt.NDArray[np.bool_]:
    """Per slot: whether a caller in these sessions and this project may see it (scope)."""
    return _visible(bank, RecallParams(query="", session_ids=session_ids, project=project))


def _visible(bank: Bank, p: RecallParams) -> npt.NDArray[np.bool_]:
    """Scope visibility (the memory.v1 provider protocol's MemoryScope): global everywhere;
    project only for the same working directory; session only in that session and its
    descendants."""
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


def _decay(
    bank: Bank, now_ms: int, p: RecallParams, slots: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]:
    """Recency factor of the given slots (computed for candidates only, not the bank)."""
    t = p.tuning
    stated = bank.index.col("stated_at")[slots].astype(np.float64)
    age_days = np.maximum(now_ms - stated, 0.0) / DAY_MS
    half_life = p.half_life_days * t.half_life_scale
    return np.maximum(np.power(0.5, age_days / half_life), t.decay_floor)


def fuse(
    score: npt.NDArray[np.float64],
    cos: npt.NDArray[np.float64],
    slots: npt.NDArray[np.intp],
    t: Tuning,
) -> npt.NDArray[np.float64]:
    """The lexical score (boosts and decay applied) fused with the cosine arm:
    ``lexical + w·best·cosine`` where ``best`` is the query's best
    lexical score (``RELEVANCE_HALF`` when nothing matched lexically, so that a cosine of 0.5
    alone reads as a solid match in ``relevance_score``): the same ranking as lexical scaled to
    [0, 1] by the best plus ``w·cosine`` (a convex-combination fusion over normalised scores,
    Bruch et al., "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023), while the
    score keeps its lexical size for ``relevance_score``. BM25's scale grows with the bank
    (IDF), so a fixed cosine weight (``sum``, the first design's ``+ 2.2·cosine``) means a different
    mix at every bank size; measured in tests/recall_quality/HISTORY.md §7 (reciprocal rank
    fusion lost too, §3).
    """
    out = score.copy()
    best = float(score[slots].max()) if len(slots) else 0.0
    out[slots] += t.w_cosine_norm * (best if best > 0 else RELEVANCE_HALF) * cos[slots]
    return out


def cosine_pool(
    cos: npt.NDArray[np.float64], where: npt.NDArray[np.bool_], k: int
) -> npt.NDArray[np.bool_]:
    """The slots of ``where`` among the ``k`` highest cosines (ties at the edge kept).

    Exact for the fused ranking: a record the lexical arm did not match scores
    ``w·best·cosine``, monotone in its cosine, so none outside the pool can outrank the pool's
    top ``k``; and it spares the boosts, decay and cut of every other slot of a large bank
    (with a real model nearly every cosine is positive). Not used with ``include_superseded``:
    the guard lifts a retired record's live successor to the retired one's score, so a
    successor outside the pool could be missed."""
    slots = np.flatnonzero(where)
    if len(slots) <= k:
        return where
    vals = cos[slots]
    kth = np.partition(vals, len(vals) - k)[len(vals) - k]
    out = np.zeros_like(where)
    out[slots[vals >= kth]] = True
    return out


def score_bank(
    bank: Bank,
    p: RecallParams,
    now_ms: int,
    query_vector: Sequence[float] | None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Fused scores by slot and the candidate mask (filters applied)."""
    idx = bank.index
    t = p.tuning
    mask = filter_mask(bank, p)
    if not p.query.strip():
        return standing(bank, p, now_ms, mask)
    if p.mode == "semantic":
        sims, have = idx.cosine(query_vector or [])
        return sims, mask & have & (sims > 0)
    if p.mode == "lexical":
        bm25 = idx.bm25(query_tokens(p.query))
        if p.include_superseded:
            return guard(bank, bm25, mask & (bm25 > 0), mask)
        return bm25, mask & (bm25 > 0)
    parsed = parse(p.query, now_ms)  # parsed.py: shared with relevance.calibrate
    window, text = parsed.window, parsed.text  # query.py: "what kind of", "how many times" ...
    terms = list(parsed.terms)
    match = idx.bm25(terms)
    match += t.w_entity * entity_scores(bank, text, t)
    if p.synonyms is not None and t.w_synonym > 0:
        match += t.w_synonym * synonym_scores(bank, text, terms, p.synonyms)
    if p.synonyms is not None and t.w_spelling > 0:  # its word table is the dictionary
        match += t.w_spelling * spelling_scores(bank, text, p.synonyms)  # spelling.py
    # words, not dates: a successor was not stated when its predecessor was
    match = inherit(bank, match, t)
    if window is not None:
        match += t.w_date * date_hits(bank, window, t)
    matched = match > 0
    cos: npt.NDArray[np.float64] | None = None
    if query_vector is not None:
        cos, have = idx.cosine(query_vector)
        cos = np.maximum(cos, 0.0)
        semantic = mask & have & (cos > 0)
        if not p.include_superseded:  # the guard ranks successors: no pool
            semantic = cosine_pool(cos, semantic, max(SEMANTIC_POOL, 4 * p.limit))
        matched |= semantic
    # The fused score is computed for candidates only: boosts and decay never make a match.
    slots = np.flatnonzero(mask & matched)
    score = _strength(bank, p, now_ms, match, slots, decay=window is None)
    score = context_coverage(bank, score, mask & matched, terms, weight=t.w_coverage)
    score, cand = with_neighbours(bank, score, mask & matched, mask)  # context.py
    score = named_speakers(bank, score, cand, text)
    score = prefer_timed(bank, score, cand, p.query, weight=t.w_when)
    if cos is not None:
        score = fuse(score, cos, np.flatnonzero(cand), t)
    score = session_focus(bank, score, cand, weight=t.w_session)
    if p.include_superseded:
        return guard(bank, score, cand, mask)
    return score, cand


def _strength(
    bank: Bank,
    p: RecallParams,
    now_ms: int,
    match: npt.NDArray[np.float64],
    slots: npt.NDArray[np.intp],
    *,
    decay: bool = True,
) -> npt.NDArray[np.float64]:
    """``match`` with the boosts and recency decay applied, at ``slots`` (0 elsewhere)."""
    t = p.tuning
    idx = bank.index
    corroboration = np.log1p(idx.col("corroboration")[slots].astype(np.float64))
    pinned = idx.col("pinned")[slots].astype(np.float64)
    fused = match[slots] * (
        1.0 + t.w_corroboration_scale * corroboration + t.w_pinned_scale * pinned
    )
    if decay:
        fused *= _decay(bank, now_ms, p, slots)
    score = np.zeros(len(match), dtype=np.float64)
    score[slots] = fused
    return score


def standing(
    bank: Bank, p: RecallParams, now_ms: int, mask: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """An empty query: every visible record, ranked by standing strength with the same
    boosts and decay as a match (a match of ``AMBIENT`` each), lifted by BM25 over ``hint``."""
    match = np.full(len(bank.index.keys), AMBIENT, dtype=np.float64)
    if p.hint.strip():
        match += bank.index.bm25(query_tokens(p.hint))
    return _strength(bank, p, now_ms, match, np.flatnonzero(mask)), mask


def top(
    bank: Bank, scores: npt.NDArray[np.float64], mask: npt.NDArray[np.bool_], k: int
) -> list[Hit]:
    """The k best candidates, score descending, ties by id."""
    slots = np.flatnonzero(mask)
    if not len(slots) or k <= 0:
        return []
    if len(slots) > k:
        # Keep every slot scoring at least the k-th best: argpartition alone would pick an
        # arbitrary few of a tie at the boundary, and ties must break by id (deterministic results).
        cand = scores[slots]
        kth = np.partition(cand, len(cand) - k)[len(cand) - k]
        slots = slots[cand >= kth]
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


def _recounted(mem: Memory, tokens: Callable[[str], int]) -> Memory:
    count = tokens(mem.text)
    return mem if count == mem.tokens else mem.model_copy(update={"tokens": count})


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
    bank: Bank,
    p: RecallParams,
    now_ms: int,
    query_vector: Sequence[float] | None,
    *,
    tokens: Callable[[str], int] | None = None,
) -> list[Hit]:
    """Score, cut, re-weigh and fit the budget; ``tokens`` recounts each hit's ``tokens`` for
    another model before the budget (a response-only copy: the stored count stays)."""
    scores, mask = score_bank(bank, p, now_ms, query_vector)
    # Over-fetch under a budget so trimming and re-weighing have room to work.
    fetch = p.limit * 4 if p.token_budget is not None else p.limit
    hits = top(bank, scores, mask, fetch)
    if tokens is not None:
        hits = [Hit(_recounted(h.memory, tokens), h.score) for h in hits]
    if p.mode == "hybrid":
        hits = pressure_rescore(bank, hits, p, now_ms)
    return apply_budget(hits, p.token_budget)[: p.limit]
