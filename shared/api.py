"""``StoreAPI``: the store's public methods as one typed contract (DESIGN §3).

Every caller of the store is typed against this Protocol: the ``memory`` CLI (``Ctx.store``),
the extractor, the consolidator and the chat example. Two classes implement it, and the
conformance suite (``tests/conformance``) runs the same behavioural tests against both:

- ``store_worker.core.MemoryStore``: the store itself, in this process (the embedded mode,
  opened through the store worker's entry point: ``shared.workers.open_embedded_store``);
- ``shared.client.StoreClient``: the same methods over Ray, on the ``memory-store`` actor.

Options are keyword-only wherever the store takes them so; responses are the pydantic models of
``shared.models``. ``describe``, ``capabilities`` and ``configure`` answer plain mappings (their
keys are documented in DESIGN §3 and ``store_worker.ops``; ``OutboxPolicy`` reads the part the
extractor needs).

Not in the contract: the store's in-process helpers (``close``, ``now``, ``trash_dir``,
``purge_trash``, ``prune_session_state``) and the memory.v1 views the gRPC gateway serves
(``remember``, ``forget``, ``search``, ``recall_context``, ``list_records``, ``get_record``,
``update_record``, ``delete_record``), which move to ``grpc_gateway`` over this contract.
``tests/shared/test_api.py`` keeps this file and ``MemoryStore`` from drifting apart.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from shared.models import (
    BacklinksResponse,
    BankCreateResponse,
    BankDeleteResponse,
    BankInfo,
    BankListResponse,
    DanglingResponse,
    DoctorResponse,
    Event,
    EventsResponse,
    InjectResponse,
    ListResponse,
    Memory,
    MemoryResponse,
    OutboxAckResponse,
    OutboxJob,
    OutboxListResponse,
    PreviewResponse,
    PurgeResponse,
    RecallResponse,
    RejectResponse,
    ReloadResponse,
    RescanResponse,
    Rule,
    RuleListResponse,
    RuleSetResponse,
    SaveManyResponse,
    SaveRequest,
    SaveResponse,
    SupersedeManyResponse,
    SupersedeRequest,
    SupersedeResponse,
    TagsResponse,
    TurnCompletedResponse,
)

Subscriber = Callable[[Event], object]
"""An event subscriber in the store's process (over Ray: the subscriber's actor handle)."""

Wake = Callable[[], object]
"""Called after each ``turn_completed`` enqueue (``outbox_watch``); must be picklable over Ray."""

Message = dict[str, Any]
"""One chat message as a harness sends it: ``role``, ``content``, optional ``timestamp``."""


class StoreAPI(Protocol):
    """The store's public methods (DESIGN §3); see the module docstring for what is left out."""

    # -- banks -----------------------------------------------------------------------------

    def bank_create(self, name: str, description: str | None = None) -> BankCreateResponse: ...

    def bank_list(self) -> BankListResponse: ...

    def bank_delete(self, name: str) -> BankDeleteResponse: ...

    # -- memories: writes ------------------------------------------------------------------

    def save(
        self,
        text: str,
        *,
        bank: str | None = None,
        title: str | None = None,
        id: str | None = None,
        type: str = "user",
        scope: str = "global",
        project: str | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        recorded_by: str | None = None,
        tags: Iterable[str] | None = None,
        entities: Iterable[str] | None = None,
        pinned: bool = False,
        confidence: str = "stated",
        status: str | None = None,
        reinforce: bool = True,
        occurred_at: int | None = None,
    ) -> SaveResponse: ...

    def save_many(self, items: Sequence[SaveRequest | dict[str, Any]]) -> SaveManyResponse:
        """Several saves committed together, all or nothing (one fsync per bank)."""
        ...

    def update(
        self,
        id: str,
        *,
        bank: str | None = None,
        text: str | None = None,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        entities: Iterable[str] | None = None,
        pinned: bool | None = None,
        type: str | None = None,
        scope: str | None = None,
        occurred_at: int | None = None,
    ) -> MemoryResponse: ...

    def pin(self, id: str, pinned: bool = True, *, bank: str | None = None) -> MemoryResponse: ...

    def delete(
        self, id: str, *, bank: str | None = None, reason: str | None = None
    ) -> MemoryResponse: ...

    def supersede(
        self,
        id: str,
        superseded_by: str,
        *,
        bank: str | None = None,
        reason: str | None = None,
        reinforce: bool = False,
        revision: int | None = None,
    ) -> SupersedeResponse: ...

    def supersede_many(
        self, items: Sequence[SupersedeRequest | dict[str, Any]]
    ) -> SupersedeManyResponse:
        """Several supersedes committed together, all or nothing (one fsync per bank)."""
        ...

    # -- memories: reads -------------------------------------------------------------------

    def get(self, id: str, *, bank: str | None = None) -> MemoryResponse: ...

    def list(
        self,
        *,
        bank: str | None = None,
        tag: str | None = None,
        type: str | None = None,
        scope: str | None = None,
        status: str | None = None,
        include_superseded: bool = False,
        page_size: int | None = None,
        page_token: str | None = None,
        type_filter: Iterable[str] | None = None,
        scope_filter: Iterable[str] | None = None,
    ) -> ListResponse: ...

    def tags(self, *, bank: str | None = None) -> TagsResponse: ...

    def recall(
        self,
        query: str,
        *,
        bank: str | None = None,
        limit: int | None = None,
        tag: str | None = None,
        mode: str = "hybrid",
        include_superseded: bool = False,
        include_pending: bool = False,
        token_budget: int | None = None,
        session_id: str | None = None,
        project: str | None = None,
        type_filter: Iterable[str] | None = None,
        scope_filter: Iterable[str] | None = None,
        hint: str | None = None,
        model_target: str | None = None,
        as_of: int | None = None,
    ) -> RecallResponse: ...

    def backlinks(self, id: str, *, bank: str | None = None) -> BacklinksResponse: ...

    def dangling(self, *, bank: str | None = None) -> DanglingResponse: ...

    # -- drafts (ratification) -------------------------------------------------------------

    def approve(self, id: str, *, bank: str | None = None) -> MemoryResponse: ...

    def reject(self, id: str, *, bank: str | None = None) -> RejectResponse: ...

    def drafts(self, *, bank: str | None = None) -> tuple[Memory, ...]: ...

    # -- secrets already stored (issue 12) -------------------------------------------------

    def redact_rescan(self, *, bank: str | None = None, purge: bool = False) -> RescanResponse: ...

    def purge(self, id: str, *, bank: str | None = None) -> PurgeResponse: ...

    # -- rules -----------------------------------------------------------------------------

    def rule_list(self, *, bank: str | None = None) -> RuleListResponse: ...

    def rule_get(self, name: str, *, bank: str | None = None) -> Rule: ...

    def rule_set(
        self, name: str, content: str, *, bank: str | None = None, expect: str | None = None
    ) -> RuleSetResponse: ...

    # -- the harness seam ------------------------------------------------------------------

    def pre_generate(
        self,
        session_id: str,
        turn_id: str | None = None,
        step: int = 0,
        messages: builtins.list[Message] | None = None,
        metadata: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
    ) -> InjectResponse: ...

    def preview(
        self, query: str, *, bank: str | None = None, session_id: str | None = None
    ) -> PreviewResponse: ...

    def turn_completed(
        self,
        session_id: str,
        turn_id: str | None = None,
        messages: builtins.list[Message] | None = None,
        status: str = "completed",
        parent_session_id: str | None = None,
        *,
        parent: str | None = None,
    ) -> TurnCompletedResponse: ...

    def link_session(self, session_id: str, parent_session_id: str | None) -> None: ...

    def session_lineage(self, session_id: str | None) -> tuple[str, ...]: ...

    # -- sibling plumbing: the extraction outbox -------------------------------------------

    def outbox_watch(self, name: str, callback: Wake | None) -> None: ...

    def outbox_claim(self, limit: int = 8) -> builtins.list[OutboxJob]: ...

    def outbox_note(self, job_id: str, reply: dict[str, Any], *, lease: str) -> OutboxJob: ...

    def outbox_ack(self, job_id: str) -> OutboxAckResponse: ...

    def outbox_fail(
        self,
        job_id: str,
        error: str,
        *,
        retry_after_ms: int | None = None,
        dead_letter: bool = False,
        lease: str | None = None,
    ) -> OutboxAckResponse: ...

    def outbox_requeue(self, job_id: str, *, fresh: bool = False) -> OutboxAckResponse: ...

    def outbox_list(self, *, include_dead: bool = True, limit: int = 100) -> OutboxListResponse: ...

    def outbox_job(self, job_id: str) -> OutboxJob: ...

    # -- sibling plumbing: events and state ------------------------------------------------

    def subscribe(
        self, name: str, callback: Subscriber, banks: Iterable[str] | None = None
    ) -> None: ...

    def unsubscribe(self, name: str) -> bool: ...

    def events_since(
        self, cursor: int = 0, *, limit: int = 500, bank: str | None = None
    ) -> EventsResponse: ...

    def state_get(self, owner: str, key: str) -> object | None: ...

    def state_set(self, owner: str, key: str, value: object) -> None: ...

    # -- operations ------------------------------------------------------------------------

    def doctor(self) -> DoctorResponse: ...

    def describe(self) -> dict[str, Any]: ...

    def capabilities(self) -> dict[str, Any]: ...

    def configure(self, config: dict[str, Any]) -> dict[str, Any]: ...

    def reload(self) -> ReloadResponse: ...

    # -- this store as one shard of several (issue 16; shared.shards, shared.sharded) -----

    def shard_routing(self, table: dict[str, Any] | None = None) -> dict[str, Any]:
        """``{"shard", "routing", "banks"}``; with ``table``, take that slot table first."""
        ...

    def bank_export(self, name: str) -> dict[str, bytes]:
        """A bank's files by relative path; only a frozen (moving) or foreign bank."""
        ...

    def bank_import(self, name: str, files: dict[str, bytes]) -> BankInfo:
        """Place and load a bank's files; only a bank this shard does not own yet."""
        ...

    def bank_release(self, name: str) -> BankDeleteResponse:
        """Trash this shard's copy of a bank another shard now owns."""
        ...
