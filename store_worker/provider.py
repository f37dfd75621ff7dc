"""The memory provider protocol's view of the store (seeds/000-002, DESIGN §8).

What the gRPC gateway calls, one store call per RPC:

- ``recall_context``: Recall at context-assembly time. The seed's RecallRequest carries no
  query: records are ranked by their standing strength (corroboration, pin, recency), boosted
  by words of ``files_touched`` and an optional explicit query; filters and scope visibility
  apply before the cut; ``tokens`` and the budget use ``model_target``'s tokenizer
  (seeds/000: "lets a provider pass a precise model reference into CountTokens"); under budget
  pressure project-type records weigh recency more (``recall.pressure_rescore``).
- ``list_records``: the audit path, several types/scopes at once, pending listable.
- ``get_record`` / ``update_record`` / ``delete_record``: a retired record does not exist for
  the protocol, so it is ``not_found`` (seeds/002 "fail on unknown id rather than no-op").
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from shared import errors
from shared.models import ListResponse, Memory, MemoryResponse, RecallResponse, ScoredMemory
from shared.text import query_tokens
from shared.tokens import TokenCounter
from store_worker import recall as recall_mod
from store_worker import validate as v

if TYPE_CHECKING:
    from shared.config import StoreSettings
    from store_worker.bank import Bank

# Standing strength of a record with no query (DESIGN §4's boosts, plus a base of 1 so an
# unboosted record still ranks by recency).
AMBIENT_BASE = 1.0
MAX_FILES = 64
_PATH_SPLIT = re.compile(r"[/\\._\-\s]+")


class ProviderMixin:
    settings: StoreSettings
    tokens: TokenCounter

    if TYPE_CHECKING:  # provided by MemoryStore / VectorMixin

        def _bank(self, name: str | None, *, create: bool = False) -> Bank: ...

        def now(self) -> int: ...

        def _recall_params(self, query: object, **kw: Any) -> recall_mod.RecallParams: ...

        def _query_vector(
            self, bank: Bank, params: recall_mod.RecallParams
        ) -> tuple[list[float] | None, str]: ...

        def update(self, *args: Any, **kwargs: Any) -> MemoryResponse: ...

        def delete(self, *args: Any, **kwargs: Any) -> MemoryResponse: ...

    # -- Recall --------------------------------------------------------------------------------

    def recall_context(
        self,
        *,
        bank: str | None = None,
        query: str | None = None,
        files_touched: Sequence[str] = (),
        session_id: str | None = None,
        turn_id: str | None = None,
        project: str | None = None,
        token_budget: int | None = None,
        model_target: str | None = None,
        type_filter: Iterable[str] | None = None,
        scope_filter: Iterable[str] | None = None,
        include_pending: bool = False,
        limit: int | None = None,
    ) -> RecallResponse:
        """Recall for context assembly; ``tokens`` counted for ``model_target`` when given.

        ``token_budget`` None is the provider's ``default_token_budget`` (seeds/000: recall
        competes for the context's budget pool, so it is never unbounded here)."""
        v.turn_id(turn_id)  # seeds/002: RecallRequest.turn_id is a ULID
        if token_budget is None:
            token_budget = self.settings.recall_budget_tokens
        counter = self._counter(model_target)
        file_words = _file_words(files_touched)
        explicit = v.optional_text(query, "query").strip()
        params = self._recall_params(
            explicit or " ".join(file_words),
            limit=limit,
            tag=None,
            mode="hybrid",
            include_superseded=False,
            include_pending=include_pending,
            token_budget=token_budget,
            session_id=session_id,
            project=project or None,
            type_filter=type_filter,
            scope_filter=scope_filter,
        )
        target = self._bank(bank)
        now = self.now()
        if explicit:
            vector, retrieval = self._query_vector(target, params)
            scores, mask = recall_mod.score_bank(target, params, now, vector)
        else:
            scores, mask = self._standing_scores(target, params, now)
            retrieval = "lexical"
        fetch = params.limit * 4  # over-fetch: trimming and re-weighing need room
        hits = [
            recall_mod.Hit(_recounted(h.memory, counter, self.tokens), h.score)
            for h in recall_mod.top(target, scores, mask, fetch)
        ]
        hits = recall_mod.pressure_rescore(target, hits, params, now)
        hits = recall_mod.apply_budget(hits, token_budget)[: params.limit]
        return RecallResponse(
            memories=tuple(
                ScoredMemory(memory=h.memory, relevance_score=h.relevance, score=h.score)
                for h in hits
            ),
            retrieval=retrieval,
            bank=target.name,
        )

    def _counter(self, model_target: str | None) -> TokenCounter:
        if model_target is None or model_target == "":
            return self.tokens
        name = v.optional_str(model_target, "model_target")
        return self.tokens if name == self.tokens.model else TokenCounter(name)

    def _standing_scores(
        self, bank: Bank, p: recall_mod.RecallParams, now_ms: int
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
        """Every visible record, by standing strength plus any match of the files' words."""
        idx = bank.index
        mask = recall_mod.filter_mask(bank, p)
        age_ms = np.maximum(now_ms - idx.col("stated_at").astype(np.float64), 0.0)
        half_life_ms = p.half_life_days * recall_mod.DAY_MS
        decay = np.maximum(np.power(0.5, age_ms / half_life_ms), recall_mod.DECAY_FLOOR)
        base = (
            AMBIENT_BASE
            + recall_mod.W_CORROBORATION * np.log1p(idx.col("corroboration").astype(np.float64))
            + recall_mod.W_PINNED * idx.col("pinned").astype(np.float64)
        )
        score = base * decay
        if p.query:
            score = score + idx.bm25(query_tokens(p.query))
        return score, mask

    # -- ListRecords / GetRecord / UpdateRecord / DeleteRecord -------------------------------

    def list_records(
        self,
        *,
        bank: str | None = None,
        type_filter: Iterable[str] | None = None,
        scope_filter: Iterable[str] | None = None,
        status: str | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
    ) -> ListResponse:
        """Live records newest first, pending included unless ``status`` says otherwise."""
        types = set(v.memory_types(type_filter))
        scopes = set(v.memory_scopes(scope_filter))
        if status not in (None, "canonical", "pending"):
            raise errors.InvalidArgumentError(f"unknown status {status!r}")
        size = v.page_size(page_size)
        after = _decode_token(page_token) if page_token else None
        target = self._bank(bank)
        rows = [
            m
            for m in target.records.values()
            if m.invalid_at is None
            and (not types or m.type in types)
            and (not scopes or m.scope in scopes)
            and (status is None or m.status == status)
        ]
        rows.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        total = len(rows)
        if after is not None:
            rows = [m for m in rows if (m.created_at, m.id) < after]
        page = rows[:size]
        token = _encode_token(page[-1]) if len(rows) > size else None
        return ListResponse(
            memories=tuple(page), next_page_token=token, total=total, bank=target.name
        )

    def get_record(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        target = self._bank(bank)
        return MemoryResponse(memory=_existing(target, id), bank=target.name)

    def update_record(
        self, id: str, *, text: str, title: str | None = None, bank: str | None = None
    ) -> MemoryResponse:
        """UpdateRecord: the content is replaced wholesale; the title only when given."""
        _existing(self._bank(bank), id)
        return self.update(id, bank=bank, text=text, title=title)

    def delete_record(
        self, id: str, *, bank: str | None = None, reason: str | None = "DeleteRecord"
    ) -> MemoryResponse:
        _existing(self._bank(bank), id)
        return self.delete(id, bank=bank, reason=reason)


def _existing(bank: Bank, id: str) -> Memory:
    mem = bank.records.get(v.memory_id(id))
    if mem is None or mem.invalid_at is not None:
        raise errors.NotFoundError(f"no record {id!r} in bank {bank.name!r}")
    return mem


def _recounted(mem: Memory, counter: TokenCounter, stored: TokenCounter) -> Memory:
    """The record as returned: ``tokens`` for the target model (a response-only copy)."""
    if counter is stored:
        return mem
    return mem.model_copy(update={"tokens": counter.count(mem.text)})


def _file_words(files: Sequence[str]) -> list[str]:
    """Words of the touched files' paths: a relevance hint, never a filter."""
    if not isinstance(files, list | tuple) or len(files) > MAX_FILES * 16:
        raise errors.InvalidArgumentError("files_touched must be a list of paths")
    out: dict[str, None] = {}
    for path in list(files)[:MAX_FILES]:
        if not isinstance(path, str):
            raise errors.InvalidArgumentError("files_touched must be strings")
        for word in _PATH_SPLIT.split(path.lower()):
            if len(word) > 2 and not word.isdigit():
                out.setdefault(word, None)
    return list(out)


def _encode_token(mem: Memory) -> str:
    raw = json.dumps(["p", mem.created_at, mem.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_token(token: str) -> tuple[int, str]:
    return v.page_token(token, tag="p")
