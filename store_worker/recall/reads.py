"""The read side: get, list (paged), tags and recall over the banks.

Nothing here writes. ``recall`` validates its parameters into ``recall.RecallParams`` and runs
the one scorer (``store_worker.recall.scoring``) with the query's vector when a model is configured;
``list`` pages newest first with an opaque cursor that stays stable while writes arrive.
"""

from __future__ import annotations

import base64
import bisect
import json
from collections import Counter
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from shared.contract import errors
from shared.contract.clock import Clock
from shared.contract.config import StoreSettings
from shared.contract.models import (
    ListResponse,
    Memory,
    MemoryResponse,
    RecallResponse,
    ScoredMemory,
    TagCount,
    TagsResponse,
)
from shared.contract.ops import List, Recall
from shared.text.tokens import TokenCounter
from store_worker.harness.sessions import Sessions
from store_worker.recall import relevance
from store_worker.recall import scoring as recall_mod
from store_worker.recall.synonyms import SynonymSource
from store_worker.recall.vectors import Vectors, as_read
from store_worker.storage import validate as v
from store_worker.storage.bank import Bank
from store_worker.storage.banks import Banks

list_ = list  # ``Reader.list`` shadows the builtin inside the class body


@dataclass(eq=False, repr=False)
class Reader:
    """get, list, tags and recall; caches one filtered listing per bank."""

    settings: StoreSettings
    _: KW_ONLY
    banks: Banks
    vectors: Vectors
    sessions: Sessions
    clock: Clock
    tokens: TokenCounter
    tuning: recall_mod.Tuning  # recall's weights: data, varied only by the eval
    synonyms: SynonymSource | None = None  # query words' neighbours (synonyms.py), None: none
    _list_cache: dict[str, tuple[object, Any, Any]] = field(init=False, default_factory=dict)

    def forget(self, bank: str | None = None) -> None:
        """Drop cached listings (of one bank, or all after a reopen)."""
        if bank is None:
            self._list_cache = {}
        else:
            self._list_cache.pop(bank, None)

    def get(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        target = self.banks.resolve(bank)
        mem = target.records.get(v.memory_id(id))
        if mem is None:
            raise errors.NotFoundError(f"no memory {v.quoted(id)} in bank {target.name!r}")
        return MemoryResponse(memory=mem, bank=target.name)

    def list(self, op: List) -> ListResponse:
        """Newest first; ``page_token`` is an opaque cursor, stable while writes arrive.
        ``type_filter``/``scope_filter`` keep any of several types/scopes."""
        size = v.page_size(op.page_size)
        mem_type = v.memory_type(op.type) if op.type is not None else None
        mem_scope = v.memory_scope(op.scope) if op.scope is not None else None
        if op.status not in (None, "canonical", "pending"):
            raise errors.InvalidArgumentError(f"unknown status {op.status!r}")
        after = _decode_token(op.page_token) if op.page_token else None
        target = self.banks.resolve(op.bank)
        tag_norm = v.labels([op.tag], "tags")[0] if op.tag else None
        types = frozenset(v.memory_types(op.type_filter))
        scopes = frozenset(v.memory_scopes(op.scope_filter))
        filters = (
            tag_norm,
            mem_type,
            mem_scope,
            op.status,
            bool(op.include_superseded),
            types,
            scopes,
        )
        rows, keys = self._listing(target, filters)
        total = len(rows)
        # keys ascend (oldest first): the page after a cursor is the slice just below it
        end = bisect.bisect_left(keys, after) if after is not None else len(keys)
        page = rows[max(end - size, 0) : end][::-1]
        token = _encode_token(page[-1]) if end > size else None
        return ListResponse(
            memories=tuple(page), next_page_token=token, total=total, bank=target.name
        )

    def _listing(
        self, bank: Bank, filters: tuple[object, ...]
    ) -> tuple[list_[Memory], list_[tuple[int, str]]]:
        """The records matching ``filters``, oldest first, with their sort keys.

        Cached until the bank changes, so paging through a large bank (the consolidator reads
        every page) costs one filter-and-sort, not one per page. Every write gives the index a
        new slot and a discarded draft shrinks ``records``, so (index object, slots, records)
        names the bank's state exactly."""
        state = (bank.index, bank.index.capacity, len(bank.records), filters)
        cached = self._list_cache.get(bank.name)
        if cached is not None and cached[0] == state:
            return cached[1], cached[2]
        tag, mem_type, mem_scope, status, include_superseded, types, scopes = filters
        rows = sorted(
            (
                m
                for m in bank.records.values()
                if (include_superseded or m.invalid_at is None)
                and (tag is None or tag in m.tags)
                and (mem_type is None or m.type == mem_type)
                and (mem_scope is None or m.scope == mem_scope)
                and (status is None or m.status == status)
                and (not types or m.type in types)  # type: ignore[operator]
                and (not scopes or m.scope in scopes)  # type: ignore[operator]
            ),
            key=lambda m: (m.created_at, m.id),
        )
        keys = [(m.created_at, m.id) for m in rows]
        self._list_cache[bank.name] = (state, rows, keys)
        return rows, keys

    def tags(self, *, bank: str | None = None) -> TagsResponse:
        target = self.banks.resolve(bank)
        counts = Counter(t for m in target.live() for t in m.tags)
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return TagsResponse(
            bank=target.name, tags=tuple(TagCount(tag=t, count=c) for t, c in ordered)
        )

    def recall(self, op: Recall, *, sessions: frozenset[str] | None = None) -> RecallResponse:
        """The ranked memories for a query (``scoring.py``); ``retrieval`` names what ran
        (``MemoryStore.recall`` says what ``hint``, ``model_target`` and ``as_of`` do).
        ``sessions``: the sessions whose session records it reads, in place of ``op``'s
        session's lineage (injection's, ``Injector._recall_block``)."""
        params = self._recall_params(op, sessions)
        target = self.banks.resolve(op.bank)
        counter = self._counter(op.model_target)
        now = self.clock.now_ms() if op.as_of is None else _instant(op.as_of)
        read = as_read(target, params) if params.query.strip() else params.query
        query_vector, retrieval = (
            self.vectors.query_vector(target, params, read)
            if params.query.strip()
            else (None, "lexical")
        )
        recount = None if counter is self.tokens else counter.count
        hits = recall_mod.run(target, params, now, query_vector, tokens=recount)
        # the calibrated relevance of the top k only (relevance.py); the ranking stays
        scored = relevance.calibrate(target, params, hits, now, query_vector)
        floor = relevance.threshold(op.min_relevance)
        return RecallResponse(
            memories=tuple(
                ScoredMemory(memory=h.memory, relevance_score=c.relevance, score=h.score, why=c.why)
                for h, c in zip(hits, scored, strict=True)
                if floor is None or c.relevance >= floor
            ),
            retrieval=retrieval,
            bank=target.name,
            read_as=None if read == params.query else read,  # a misspelt word read as another
        )

    def _recall_params(
        self, op: Recall, sessions: frozenset[str] | None = None
    ) -> recall_mod.RecallParams:
        query = op.query
        if not isinstance(query, str):
            raise errors.InvalidArgumentError("query must be a string")
        if op.mode not in ("hybrid", "lexical", "semantic"):
            raise errors.InvalidArgumentError(f"unknown recall mode {op.mode!r}")
        budget = op.token_budget
        if budget is not None and (not isinstance(budget, int) or budget < 0):
            raise errors.InvalidArgumentError("token_budget must be a non-negative integer")
        session = v.optional_str(op.session_id, "session_id")
        return recall_mod.RecallParams(
            query=query[: self.settings.max_text_chars],
            limit=v.limit(op.limit, self.settings.recall_limit),
            mode=op.mode,
            tag=v.labels([op.tag], "tags")[0] if op.tag else None,
            include_superseded=bool(op.include_superseded),
            include_pending=bool(op.include_pending),
            token_budget=budget,
            session_ids=frozenset(self.sessions.lineage(session)) if sessions is None else sessions,
            project=v.project_path(op.project) if op.project else None,
            type_filter=v.memory_types(op.type_filter),
            scope_filter=v.memory_scopes(op.scope_filter),
            half_life_days=self.settings.decay_half_life_days,
            hint=v.optional_str(op.hint, "hint") or "",
            tuning=self.tuning,
            synonyms=self.synonyms,
        )

    def _counter(self, model_target: str | None) -> TokenCounter:
        """The tokenizer of ``model_target`` (the memory.v1 provider protocol's CountTokens
        takes a precise model reference); the store's own when none or the same is named."""
        name = v.optional_str(model_target, "model_target")
        return self.tokens if name is None or name == self.tokens.model else TokenCounter(name)


def _encode_token(mem: Memory) -> str:
    raw = json.dumps([mem.created_at, mem.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_token(token: str) -> tuple[int, str]:
    return v.page_token(token)


def _instant(as_of: object) -> int:
    if isinstance(as_of, bool) or not isinstance(as_of, int) or as_of < 0:
        raise errors.InvalidArgumentError("as_of must be a time in epoch milliseconds (int >= 0)")
    return as_of
