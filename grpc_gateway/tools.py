"""The reference tools over the store's public API: ``remember``, ``forget``, ``search``
(docs/PROTOCOLS.md#record-and-the-reference-tools: ``remember`` must check for near-matches
before creating a record).

``remember`` never silently duplicates or overwrites: before creating, it recalls the caller's
visible records for the new text and scores each with rapidfuzz. When a close record exists it
writes nothing and returns the candidates, so the caller (the model) chooses: update that id
(``update_id=...``) or confirm a new record (``confirm_new=True``). Re-stating the very same
fact (same fingerprint, same place) is not ambiguous: it reinforces, as the store's ``save``
does (unlike memory.v1 ``Record``, which always creates).

The check itself (``similarity``, ``near_matches``) lives in ``shared.client.nearmatch``: the MCP
server's ``remember`` (``integrations``) runs the same one.

A pinned record is a person's (``shared.contract.pinned``, as for the MCP tools): ``forget`` of
it and ``remember`` with its ``update_id`` are refused (a ``PinnedMemoryError``, on the wire
``unknown`` with a message starting ``permission denied:``; ``server.on_the_wire``) and nothing is
written. The record is looked up as the caller sees it first, so one it may not see, or a
retired one, stays ``not_found``. A record nobody pinned stays the model's to change.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from grpc_gateway.views import ProtocolViews
from shared.client.nearmatch import (
    NEAR_MATCH,
    Candidate,
    check_threshold,
    near_matches,
    restates,
    similarity,
)
from shared.contract import errors
from shared.contract.models import (
    MEMORY_SCOPES,
    MEMORY_TYPES,
    Frozen,
    Memory,
    MemoryResponse,
    RecallResponse,
)
from shared.contract.pinned import refuse_if_pinned

__all__ = ["NEAR_MATCH", "Candidate", "RememberResponse", "Tools", "similarity"]

REMEMBERED_BY = "memory.remember"


class RememberResponse(Frozen):
    """``needs_confirmation`` wrote nothing: pick a candidate id or confirm a new record."""

    action: Literal["created", "reinforced", "updated", "needs_confirmation"]
    bank: str
    memory: Memory | None = None
    candidates: tuple[Candidate, ...] = ()


class Tools:
    """memory.v1's MemoryTools over the protocol views (and so over ``StoreAPI``)."""

    def __init__(self, views: ProtocolViews) -> None:
        self.views = views
        self.store = views.store

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
        update_id: str | None = None,
        confirm_new: bool = False,
        threshold: float = NEAR_MATCH,
        caller: str | None = None,
    ) -> RememberResponse:
        """memory.remember: create, reinforce, update the chosen id (never a pinned one), or
        ask first."""
        if update_id is not None:
            current = self.views.existing(update_id, bank=bank).memory  # as the caller sees it
            refuse_if_pinned(current, "rewrite")
            updated = self.store.update(  # type and scope stay (immutable); at the revision
                update_id,  # checked, so a record pinned since is a conflict, not rewritten
                bank=bank,
                text=text,
                title=title,
                type=type,
                scope=scope,
                revision=current.revision,
            )
            return RememberResponse(action="updated", bank=updated.bank, memory=updated.memory)
        body = _checked(text, type, scope, threshold)
        session_id, project = self.views.owners.fill(
            scope, session_id=session_id, project=project, caller=caller
        )  # as Record: a plain memory.v1 caller names no owner
        if not confirm_new:
            near, bank_name = near_matches(
                self.store,
                body,
                bank=bank,
                session_id=session_id,
                project=project,
                threshold=threshold,
                include_pending=self.views.ratification_on(),
            )
            if near and not restates(near, body, scope or "global"):
                return RememberResponse(
                    action="needs_confirmation", bank=bank_name, candidates=near
                )
        saved = self.store.save(
            body,
            bank=bank,
            title=title,
            type=type or "user",
            scope=scope or "global",
            project=project,
            session_id=session_id,
            turn_id=turn_id,
            recorded_by=recorded_by,
        )
        return RememberResponse(
            action="created" if saved.created else "reinforced",
            bank=saved.bank,
            memory=saved.memory,
        )

    def forget(
        self, id: str, *, bank: str | None = None, reason: str | None = "memory.forget"
    ) -> MemoryResponse:
        """memory.forget: retire one record by id (a pending draft is discarded); an unknown
        or already retired id is ``not_found``, a pinned one is refused."""
        refuse_if_pinned(self.views.existing(id, bank=bank).memory, "forget")
        return self.store.delete(id, bank=bank, reason=reason)  # as DeleteRecord, checked once

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
        if not isinstance(query, str) or not query.strip():
            raise errors.InvalidArgumentError("query is empty: memory.search needs words")
        return self.store.recall(
            query,
            bank=bank,
            limit=limit,
            session_id=session_id,
            project=project,
            type_filter=type_filter,
            scope_filter=scope_filter,
            include_pending=include_pending and self.views.ratification_on(),
        )


def _checked(text: str, type: str | None, scope: str | None, threshold: float) -> str:
    """Everything a near-match answer would otherwise hide, checked before any lookup."""
    if not isinstance(text, str) or not text.strip():
        raise errors.InvalidArgumentError("content is empty: nothing to remember")
    if type is not None and type not in MEMORY_TYPES:
        raise errors.InvalidTypeError(f"unknown memory type {type!r}; use {MEMORY_TYPES}")
    if scope is not None and scope not in MEMORY_SCOPES:
        raise errors.InvalidScopeError(f"unknown memory scope {scope!r}; use {MEMORY_SCOPES}")
    check_threshold(threshold)
    return text
