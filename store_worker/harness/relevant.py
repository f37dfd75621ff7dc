"""What of a recall a turn's block takes, and what the ambient floor adds.

``chosen``: the recalled memories at or above ``min_relevance`` (the calibrated score of
``store_worker/recall/relevance.py``), cut again where one stands far above the rest
(``relevance.select``); 0 switches both off. None qualifying means no recalled memory: a
prompt about something the bank does not hold gets no block from recall.

``ambient``: the floor brings only what a person put in every turn: pinned memories and those
tagged ``always-on`` (``relevance.ALWAYS_ON``), strongest first (corroboration, then the newest
statement). A memory said often is not thereby always relevant: corroboration alone never
puts a memory in an unrelated turn. Chosen on the index's columns, so only the records returned
are read (a hook's process decodes a handful of a lazily booted bank's records).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from shared.contract.models import InjectedMemory, ScoredMemory, Why
from store_worker.recall import relevance
from store_worker.recall.scoring import visible

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from store_worker.storage.bank import Bank


def chosen(found: Sequence[ScoredMemory], min_relevance: float) -> list[InjectedMemory]:
    """The recalled memories a turn takes, in recall's order (``relevance.select``); a
    ``min_relevance`` of 0 takes them all (no threshold, no cut: recall's top k)."""
    kept = relevance.taken([(h, h.relevance_score, h.score) for h in found], min_relevance)
    return [
        InjectedMemory(memory=h.memory, score=h.score, relevance_score=r, why=h.why)
        for h, r, _ in kept
    ]


def ambient(
    bank: Bank, session_ids: frozenset[str], project: str | None, want: int
) -> Iterator[InjectedMemory]:
    """Up to ``want`` + 64 (room for the caller's dedup) pinned or always-on visible memories,
    strongest first, each read only when the caller gets that far."""
    if want <= 0:
        return
    idx = bank.index
    mask = idx.col("alive").astype(bool) & idx.col("counted").astype(bool)
    marked = idx.col("pinned").astype(bool) | idx.tag_mask(relevance.ALWAYS_ON)
    slots = np.flatnonzero(mask & marked & visible(bank, session_ids=session_ids, project=project))
    if not len(slots):
        return
    pinned = idx.col("pinned")[slots].astype(np.float64) > 0
    corroboration = idx.col("corroboration")[slots].astype(np.float64)
    stated = idx.col("stated_at")[slots].astype(np.float64)
    keep = want + 64
    order = np.lexsort((-stated, -corroboration, ~pinned))  # the last key sorts first
    if len(order) > keep:  # the first ``keep`` and every slot tied with the last of them
        last = order[keep - 1]
        tied = (
            (pinned == pinned[last])
            & (corroboration == corroboration[last])
            & (stated == stated[last])
        )
        picked = np.zeros(len(order), dtype=bool)
        picked[order[:keep]] = True
        order = np.flatnonzero(picked | tied)
    keys = idx.keys
    rows = sorted(
        (not pinned[i], -float(corroboration[i]), -float(stated[i]), keys[slots[i]])
        for i in order.tolist()
    )[:keep]
    for row in rows:
        mem = bank.records[row[3]]
        why = Why(pinned=mem.pinned, ambient=True)
        yield InjectedMemory(memory=mem, score=0.0, relevance_score=0.0, why=why)


def summary(memories: Sequence[InjectedMemory]) -> str:
    """An ``injected`` event's reason: each memory's id, calibrated relevance and what matched
    (ids and stemmed query terms only, never a memory's text)."""
    ambient = sum(1 for m in memories if m.why is not None and m.why.ambient)
    parts = []
    for m in memories:
        w = m.why
        if w is not None and w.ambient:
            parts.append(f"{m.memory.id} ambient ({'pinned' if w.pinned else relevance.ALWAYS_ON})")
            continue
        matched = [*w.terms, *(f"~{t}" for t in w.context)] if w is not None else []
        extra = [f"semantic {w.semantic:.2f}"] if w is not None and w.semantic is not None else []
        if w is not None and w.date:
            extra.append("date")
        shown = ", ".join([*matched, *extra]) or "-"
        parts.append(f"{m.memory.id} {m.relevance_score:.2f} ({shown})")
    head = f"{len(memories) - ambient} recalled, {ambient} ambient: "
    return head + "; ".join(parts)
