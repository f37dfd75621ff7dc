"""The reference tools as store operations: ``remember``, ``forget``, ``search`` (seeds/001
"Write triggers (reference tools)", seeds/002 "memory.remember fuzzy near-match check before
creating a new record: MUST").

``remember`` never silently duplicates or overwrites: before creating, it recalls the caller's
visible records for the new text and scores each with rapidfuzz. When a close record exists it
writes nothing and returns the candidates, so the caller (the model) chooses: update that id
(``update_id=...``) or confirm a new record (``confirm_new=True``). Re-stating the very same
fact (same fingerprint, same place) is not ambiguous: it reinforces, as ``save`` does.

Similarity (FACTS.md "Near-duplicates"): ``token_set_ratio`` scores a subset as 100 ("user
prefers tabs" vs "user prefers tabs over spaces"), so it is discounted by the length ratio and
paired with ``token_sort_ratio``; the larger wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from rapidfuzz import fuzz

from shared import errors
from shared.models import Frozen, Memory, MemoryResponse, RecallResponse
from shared.redact import redact
from shared.text import fingerprint, normalize
from store_worker import validate as v

if TYPE_CHECKING:
    from shared.config import StoreSettings
    from shared.models import SaveResponse

NEAR_MATCH = 0.75
CANDIDATE_POOL = 10
REMEMBERED_BY = "memory.remember"


class Candidate(Frozen):
    """A record close to the text being remembered, and how close (0-1)."""

    memory: Memory
    similarity: float


class RememberResponse(Frozen):
    """``needs_confirmation`` wrote nothing: pick a candidate id or confirm a new record."""

    action: Literal["created", "reinforced", "updated", "needs_confirmation"]
    bank: str
    memory: Memory | None = None
    candidates: tuple[Candidate, ...] = ()


def similarity(a: str, b: str) -> float:
    """Near-match score in [0, 1] of two texts, after normalisation."""
    na, nb = normalize(a), normalize(b)
    if not na or not nb:
        return 0.0
    shorter, longer = sorted((len(na), len(nb)))
    subset = fuzz.token_set_ratio(na, nb) * (0.6 + 0.4 * shorter / longer)
    return max(fuzz.token_sort_ratio(na, nb), subset) / 100.0


class ToolsMixin:
    settings: StoreSettings

    if TYPE_CHECKING:  # provided by MemoryStore

        def save(self, *args: Any, **kwargs: Any) -> SaveResponse: ...

        def update(self, *args: Any, **kwargs: Any) -> MemoryResponse: ...

        def delete_record(self, *args: Any, **kwargs: Any) -> MemoryResponse: ...

        def recall(self, *args: Any, **kwargs: Any) -> RecallResponse: ...

    def remember(
        self,
        text: str,
        *,
        bank: str | None = None,
        title: str | None = None,
        type: str | None = None,
        scope: str | None = None,
        project: str | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        recorded_by: str | None = REMEMBERED_BY,
        tags: Iterable[str] | None = None,
        entities: Iterable[str] | None = None,
        update_id: str | None = None,
        confirm_new: bool = False,
        threshold: float = NEAR_MATCH,
    ) -> RememberResponse:
        """memory.remember: create, reinforce, update the chosen id, or ask first."""
        if update_id is not None:
            return self._remember_update(
                update_id, text, bank=bank, title=title, type=type, scope=scope
            )
        body = v.text(text, max_chars=self.settings.max_text_chars)
        mem_type = v.memory_type(type or "user")
        mem_scope = v.memory_scope(scope or "global")
        threshold = v.fraction(threshold, "threshold")
        if not confirm_new:
            near = self._near_matches(body, bank, session_id, project, threshold)
            fp = fingerprint(redact(body).text)
            restated = any(c.memory.fingerprint == fp and c.memory.scope == mem_scope for c in near)
            if near and not restated:
                return RememberResponse(
                    action="needs_confirmation", bank=self._bank_name(bank), candidates=near
                )
        saved = self.save(
            body,
            bank=bank,
            title=title,
            type=mem_type,
            scope=mem_scope,
            project=project,
            session_id=session_id,
            turn_id=turn_id,
            recorded_by=recorded_by,
            tags=tags,
            entities=entities,
        )
        return RememberResponse(
            action="created" if saved.created else "reinforced",
            bank=saved.bank,
            memory=saved.memory,
        )

    def _remember_update(
        self,
        update_id: str,
        text: str,
        *,
        bank: str | None,
        title: str | None,
        type: str | None,
        scope: str | None,
    ) -> RememberResponse:
        """The caller chose an existing record: replace its text (type and scope stay)."""
        updated = self.update(update_id, bank=bank, text=text, title=title, type=type, scope=scope)
        return RememberResponse(action="updated", bank=updated.bank, memory=updated.memory)

    def _near_matches(
        self,
        body: str,
        bank: str | None,
        session_id: str | None,
        project: str | None,
        threshold: float,
    ) -> tuple[Candidate, ...]:
        """Visible records (drafts included) whose text is within ``threshold`` of ``body``."""
        try:
            found = self.recall(
                body,
                bank=bank,
                limit=CANDIDATE_POOL,
                session_id=session_id,
                project=project,
                include_pending=True,
            )
        except errors.NotFoundError:  # a bank that does not exist yet holds no near-match
            return ()
        scored = [
            Candidate(memory=h.memory, similarity=similarity(body, h.memory.text))
            for h in found.memories
        ]
        near = [c for c in scored if c.similarity >= threshold]
        near.sort(key=lambda c: (-c.similarity, c.memory.id))
        return tuple(near)

    def _bank_name(self, bank: str | None) -> str:
        return v.bank_name(bank or self.settings.default_bank)

    def forget(
        self, id: str, *, bank: str | None = None, reason: str | None = "memory.forget"
    ) -> MemoryResponse:
        """memory.forget: retire one record by id (a pending draft is discarded); an unknown
        or already retired id is ``not_found``."""
        return self.delete_record(id, bank=bank, reason=reason)

    def search(
        self,
        query: str,
        *,
        bank: str | None = None,
        limit: int | None = None,
        session_id: str | None = None,
        project: str | None = None,
        type_filter: Iterable[str] | None = None,
        scope_filter: Iterable[str] | None = None,
        include_pending: bool = False,
    ) -> RecallResponse:
        """memory.search: an explicit recall, not gated by any turn's token budget."""
        v.text(query, max_chars=self.settings.max_text_chars, what="query")
        return self.recall(
            query,
            bank=bank,
            limit=limit,
            session_id=session_id,
            project=project,
            type_filter=type_filter,
            scope_filter=scope_filter,
            include_pending=include_pending,
        )
