"""A scoped principal's recall (``shared.client.scoped``): the page the admin's recall would
answer if the records the principal may not see were not in the bank.

The store ranks what its scope rule shows (``Memory.seen_from`` with the call's project and
session lineage); a principal sees less (another principal's session in the lineage stays
hidden). Dropping the hidden hits from a page cut at ``limit`` would leave it short, and a
hidden hit would take room in ``token_budget``. So the page is filled:

1. the recall as asked (the store checks every argument). When every hit is seen and no
   hidden one can have shortened the page (no budget and no relevance floor, or a full page),
   that is the answer; so it is when no hidden hit ranks among those the store fits the page
   from (found in step 2);
2. else the store's ranking alone (the call without ``token_budget`` and ``min_relevance``:
   its order does not depend on them) is read with a limit that doubles until it holds the
   visible hits the page needs (``limit``; under a budget 4 × ``limit``, the room the store
   itself trims from), the store has no more, or the store's cap on a limit (``CAP``) is
   reached: bounded, and a page past the cap may come back short;
3. over the visible hits only, in the store's order: the budget as the store fits it (top
   down, a hit that does not fit is passed over, none fitting is ``budget_exceeded``), the
   limit, then ``min_relevance``.

A page refilled under a budget keeps recall's order: the store's re-weighing of project
records toward recency under budget pressure (it needs the store's clock and half-life) is
applied only to a page served as the store answered it.
No field of the answer is taken from a hidden record: the hits are visible ones, ``read_as``
is kept only when the records it sees hold its words, and a budget refusal names a visible
hit's size.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from shared.contract import errors, ops
from shared.contract.api import StoreAPI
from shared.contract.models import Memory, RecallResponse, ScoredMemory

CAP = 500
"""The largest ``limit`` the store takes for a recall (it refuses more)."""

BUDGET_ROOM = 4
"""Under a budget the store ranks this many times ``limit`` before it fits the budget."""

Seen = Callable[[Memory, str], bool]


def recall(store: StoreAPI, op: ops.Recall, seen: Seen) -> RecallResponse:
    """``op`` answered over the hits ``seen`` keeps (module docstring)."""
    try:
        first: RecallResponse | None = store.call(op)
    except errors.BudgetExceededError:
        first = None  # hidden hits may be all that was ranked: the visible ones decide
    plain = ops.Recall(**{**op.args(), "token_budget": None, "min_relevance": None})
    if first is None:
        _floor(op.min_relevance)  # the store refused before it read the floor
    elif _as_it_stands(op, first, seen):
        return _answer(op, first, list(first.memories))

    def read(limit: int | None) -> RecallResponse:
        return store.call(ops.Recall(**{**plain.args(), "limit": limit}))

    ranked = first if first is not None and plain == op else None
    if op.limit is None:
        # the store's default limit: what a plain call gives (fewer only when the store has
        # no more, and then any limit from there on reads the same)
        ranked = ranked if ranked is not None else read(None)
        limit = len(ranked.memories)
    else:
        limit = op.limit
    need = min(limit * BUDGET_ROOM if op.token_budget is not None else limit, CAP)
    asked = limit
    if ranked is None or need > limit:
        asked, ranked = need, read(need)
    while True:
        visible = [h for h in ranked.memories if seen(h.memory, ranked.bank)]
        if len(visible) >= need or len(ranked.memories) < asked or asked >= CAP:
            break
        asked = min(asked * 2, CAP)
        ranked = read(asked)
    if first is not None and all(seen(h.memory, ranked.bank) for h in ranked.memories[:need]):
        # no hidden hit ranks where the store fits the page: its answer is the page, as it
        # stands (its re-weighing under budget pressure included)
        return _answer(op, first, list(first.memories))
    hits = visible[:need]
    if op.token_budget is not None:
        hits = _fit(hits, op.token_budget)
    hits = hits[:limit]
    floor = _floor(op.min_relevance)
    if floor is not None:
        hits = [h for h in hits if h.relevance_score >= floor]
    return _answer(op, ranked, hits)


def _as_it_stands(op: ops.Recall, found: RecallResponse, seen: Seen) -> bool:
    """Whether ``found`` is the page already: every hit seen, and either nothing cut it
    short but the limit (a hidden hit would show) or it is full."""
    if not all(seen(h.memory, found.bank) for h in found.memories):
        return False
    if op.token_budget is None and op.min_relevance is None:
        return True
    return op.limit is not None and len(found.memories) == op.limit


def _fit(hits: list[ScoredMemory], budget: int) -> list[ScoredMemory]:
    """The hits ``budget`` tokens hold, top down, as the store fits them."""
    kept: list[ScoredMemory] = []
    used = 0
    for hit in hits:
        if used + hit.memory.tokens <= budget:
            kept.append(hit)
            used += hit.memory.tokens
    if hits and not kept:
        smallest = min(h.memory.tokens for h in hits)
        raise errors.BudgetExceededError(
            f"token_budget {budget} cannot hold any candidate (smallest is {smallest} tokens)"
        )
    return kept


def _floor(value: object) -> float | None:
    """A ``min_relevance`` as the store reads it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise errors.InvalidArgumentError("min_relevance must be a number from 0 to 1")
    return float(value)


def _answer(op: ops.Recall, found: RecallResponse, hits: list[ScoredMemory]) -> RecallResponse:
    read_as = read_as_seen(op.query, found.read_as, [h.memory for h in hits])
    return found.model_copy(update={"memories": tuple(hits), "read_as": read_as})


_WORD = re.compile(r"\w+")


def read_as_seen(query: str, read_as: str | None, seen: list[Any]) -> str | None:
    """Recall's spelling fix (``read_as``), kept only when each word it put in the query is
    in a record the principal sees: a word only hidden records hold is not read out of them."""
    if read_as is None:
        return None
    asked = {w.lower() for w in _WORD.findall(query)}
    put = {w.lower() for w in _WORD.findall(read_as)} - asked
    held = {
        w.lower()
        for m in seen
        for w in _WORD.findall(" ".join((m.title or "", m.text, *m.tags, *m.entities)))
    }
    return read_as if put <= held else None
