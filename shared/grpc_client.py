"""``GrpcStoreClient``: ``StoreAPI`` over the gateway's memory.store.v1 service (issue 13).

The ``memory`` CLI reaches the running store through this client, without Ray in its process:
``memory up`` starts the gateway and records where it listens (``shared.gateway_file``), and
each verb is one unary gRPC call (a few milliseconds) instead of a Ray driver (seconds)::

    store = GrpcStoreClient("127.0.0.1:50051", token=None)
    store.save("The user prefers tabs", tags=["style"])

One explicit, typed method per ``StoreAPI`` method; arguments travel by name as JSON, the
answer is validated against the method's declared response type (``shared.store_wire``).
Errors reach the caller as the store raised them (same class, category, message, retryable);
a gateway that does not answer is a retryable ``SourceUnavailableError``. Every call is sent at
most once: a write is never repeated behind the caller's back.

``subscribe`` and ``outbox_watch`` take a callback that would have to run in this process;
they refuse with ``InvalidArgumentError`` (poll ``events_since`` / ``outbox_list`` instead).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import grpc

from shared import errors, store_wire
from shared.errors import (
    InvalidArgumentError,
    MemoryServiceError,
    SourceUnavailableError,
    UnknownError,
)
from shared.store_wire import labels

if TYPE_CHECKING:  # annotations only: a CLI process answers with views, never imports pydantic
    from shared.api import Message, StoreAPI, Subscriber, Wake
    from shared.models import (
        BacklinksResponse,
        BankCreateResponse,
        BankDeleteResponse,
        BankInfo,
        BankListResponse,
        DanglingResponse,
        DoctorResponse,
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

DEFAULT_TIMEOUT_S = 120.0
_NO_GATEWAY = (
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
)


def error_from(e: grpc.RpcError, address: str) -> MemoryServiceError:
    """A failed call as the store's typed error (its trailers), or a transport failure."""
    trailers = dict(cast(Any, e).trailing_metadata() or ())
    raw = trailers.get(store_wire.ERROR_KEY)
    if isinstance(raw, bytes):
        detail = store_wire.decode_error_message(raw)
        leaf = getattr(errors, detail["kind"], None)
        if not (
            isinstance(leaf, type)
            and issubclass(leaf, MemoryServiceError)
            and leaf.category == detail["category"]
        ):
            leaf = type(MemoryServiceError.from_dict({"category": detail["category"]}))
        return leaf(detail["message"], detail["retryable"])
    code = cast(Any, e).code()
    message = str(cast(Any, e).details() or code)
    category = trailers.get(store_wire.CATEGORY_KEY)
    if isinstance(category, str):  # a memory.v1 refusal (the bearer token) before the service
        return MemoryServiceError.from_dict({"category": category, "message": message})
    if code in _NO_GATEWAY:
        return SourceUnavailableError(
            f"the memory gateway at {address} is not answering: {message}"
        )
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return UnknownError(f"the gateway at {address} does not serve this call: {message}")
    return UnknownError(f"the gateway at {address} failed: {code.name}: {message}")


# What an answer may weigh: what the store accepts must come back. gRPC's default of 4 MiB
# refused a claim of one long turn (200 messages of 32k characters: 6.4 MB, while the store
# had leased it: every claim failed, the queue behind it with them) and a page of events of
# long memories (``memory watch`` stuck at its cursor). The gateway takes requests of up to
# the same 64 MiB (``grpc_gateway.server.MAX_REQUEST_BYTES``).
MAX_ANSWER_BYTES = 64 * 1024 * 1024


class GrpcStoreClient:
    """``StoreAPI`` over gRPC: the gateway at ``address`` (``host:port``)."""

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        channel: grpc.Channel | None = None,
        validate: bool = True,
    ) -> None:
        self.address = address
        self.timeout = timeout
        self.validate = validate
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._channel = channel or grpc.insecure_channel(
            address, options=[("grpc.max_receive_message_length", MAX_ANSWER_BYTES)]
        )
        self._calls: dict[str, Any] = {}

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> GrpcStoreClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, /, **kwargs: object) -> Any:
        call = self._calls.get(method)
        if call is None:
            # StoreCall / StoreResult in wire format (shared.store_wire): no protobuf import
            call = self._calls[method] = self._channel.unary_unary(
                store_wire.path(method),
                request_serializer=store_wire.encode_call,
                response_deserializer=store_wire.decode_result_message,
            )
        request = store_wire.encode_args(kwargs)
        try:
            reply = call(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise error_from(e, self.address) from None
        if not self.validate:
            return store_wire.decode_view(method, reply)
        return store_wire.decode_result(method, reply)

    def ping(self) -> str:
        """``"pong"`` once the gateway and the store behind it answer."""
        return cast("str", self._call("ping"))

    # -- banks -----------------------------------------------------------------------------

    def bank_create(self, name: str, description: str | None = None) -> BankCreateResponse:
        return cast(
            "BankCreateResponse", self._call("bank_create", name=name, description=description)
        )

    def bank_list(self) -> BankListResponse:
        return cast("BankListResponse", self._call("bank_list"))

    def bank_delete(self, name: str) -> BankDeleteResponse:
        return cast("BankDeleteResponse", self._call("bank_delete", name=name))

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
    ) -> SaveResponse:
        return cast(
            "SaveResponse",
            self._call(
                "save",
                text=text,
                bank=bank,
                title=title,
                id=id,
                type=type,
                scope=scope,
                project=project,
                session_id=session_id,
                turn_id=turn_id,
                recorded_by=recorded_by,
                tags=labels(tags),
                entities=labels(entities),
                pinned=pinned,
                confidence=confidence,
                status=status,
                reinforce=reinforce,
                occurred_at=occurred_at,
            ),
        )

    def redact_rescan(self, *, bank: str | None = None, purge: bool = False) -> RescanResponse:
        return cast("RescanResponse", self._call("redact_rescan", bank=bank, purge=purge))

    def purge(self, id: str, *, bank: str | None = None) -> PurgeResponse:
        return cast("PurgeResponse", self._call("purge", id=id, bank=bank))

    def save_many(self, items: Sequence[SaveRequest | dict[str, Any]]) -> SaveManyResponse:
        return cast("SaveManyResponse", self._call("save_many", items=items))

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
    ) -> MemoryResponse:
        return cast(
            "MemoryResponse",
            self._call(
                "update",
                id=id,
                bank=bank,
                text=text,
                title=title,
                tags=labels(tags),
                entities=labels(entities),
                pinned=pinned,
                type=type,
                scope=scope,
                occurred_at=occurred_at,
            ),
        )

    def pin(self, id: str, pinned: bool = True, *, bank: str | None = None) -> MemoryResponse:
        return cast("MemoryResponse", self._call("pin", id=id, pinned=pinned, bank=bank))

    def delete(
        self, id: str, *, bank: str | None = None, reason: str | None = None
    ) -> MemoryResponse:
        return cast("MemoryResponse", self._call("delete", id=id, bank=bank, reason=reason))

    def supersede(
        self,
        id: str,
        superseded_by: str,
        *,
        bank: str | None = None,
        reason: str | None = None,
        reinforce: bool = False,
        revision: int | None = None,
    ) -> SupersedeResponse:
        return cast(
            "SupersedeResponse",
            self._call(
                "supersede",
                id=id,
                superseded_by=superseded_by,
                bank=bank,
                reason=reason,
                reinforce=reinforce,
                revision=revision,
            ),
        )

    # -- memories: reads -------------------------------------------------------------------

    def supersede_many(
        self, items: Sequence[SupersedeRequest | dict[str, Any]]
    ) -> SupersedeManyResponse:
        return cast("SupersedeManyResponse", self._call("supersede_many", items=items))

    def get(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        return cast("MemoryResponse", self._call("get", id=id, bank=bank))

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
    ) -> ListResponse:
        return cast(
            "ListResponse",
            self._call(
                "list",
                bank=bank,
                tag=tag,
                type=type,
                scope=scope,
                status=status,
                include_superseded=include_superseded,
                page_size=page_size,
                page_token=page_token,
                type_filter=labels(type_filter),
                scope_filter=labels(scope_filter),
            ),
        )

    def tags(self, *, bank: str | None = None) -> TagsResponse:
        return cast("TagsResponse", self._call("tags", bank=bank))

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
    ) -> RecallResponse:
        return cast(
            "RecallResponse",
            self._call(
                "recall",
                query=query,
                bank=bank,
                limit=limit,
                tag=tag,
                mode=mode,
                include_superseded=include_superseded,
                include_pending=include_pending,
                token_budget=token_budget,
                session_id=session_id,
                project=project,
                type_filter=labels(type_filter),
                scope_filter=labels(scope_filter),
                hint=hint,
                model_target=model_target,
                as_of=as_of,
            ),
        )

    def backlinks(self, id: str, *, bank: str | None = None) -> BacklinksResponse:
        return cast("BacklinksResponse", self._call("backlinks", id=id, bank=bank))

    def dangling(self, *, bank: str | None = None) -> DanglingResponse:
        return cast("DanglingResponse", self._call("dangling", bank=bank))

    # -- drafts (ratification) -------------------------------------------------------------

    def approve(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        return cast("MemoryResponse", self._call("approve", id=id, bank=bank))

    def reject(self, id: str, *, bank: str | None = None) -> RejectResponse:
        return cast("RejectResponse", self._call("reject", id=id, bank=bank))

    def drafts(self, *, bank: str | None = None) -> tuple[Memory, ...]:
        return cast("tuple[Memory, ...]", self._call("drafts", bank=bank))

    # -- rules -----------------------------------------------------------------------------

    def rule_list(self, *, bank: str | None = None) -> RuleListResponse:
        return cast("RuleListResponse", self._call("rule_list", bank=bank))

    def rule_get(self, name: str, *, bank: str | None = None) -> Rule:
        return cast("Rule", self._call("rule_get", name=name, bank=bank))

    def rule_set(
        self, name: str, content: str, *, bank: str | None = None, expect: str | None = None
    ) -> RuleSetResponse:
        return cast(
            "RuleSetResponse",
            self._call("rule_set", name=name, content=content, bank=bank, expect=expect),
        )

    # -- the harness seam ------------------------------------------------------------------

    def pre_generate(
        self,
        session_id: str,
        turn_id: str | None = None,
        step: int = 0,
        messages: builtins.list[Message] | None = None,
        metadata: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
    ) -> InjectResponse:
        return cast(
            "InjectResponse",
            self._call(
                "pre_generate",
                session_id=session_id,
                turn_id=turn_id,
                step=step,
                messages=messages,
                metadata=metadata,
                parent_session_id=parent_session_id,
            ),
        )

    def preview(
        self, query: str, *, bank: str | None = None, session_id: str | None = None
    ) -> PreviewResponse:
        return cast(
            "PreviewResponse", self._call("preview", query=query, bank=bank, session_id=session_id)
        )

    def turn_completed(
        self,
        session_id: str,
        turn_id: str | None = None,
        messages: builtins.list[Message] | None = None,
        status: str = "completed",
        parent_session_id: str | None = None,
        *,
        parent: str | None = None,
    ) -> TurnCompletedResponse:
        return cast(
            "TurnCompletedResponse",
            self._call(
                "turn_completed",
                session_id=session_id,
                turn_id=turn_id,
                messages=messages,
                status=status,
                parent_session_id=parent_session_id,
                parent=parent,
            ),
        )

    def link_session(self, session_id: str, parent_session_id: str | None) -> None:
        self._call("link_session", session_id=session_id, parent_session_id=parent_session_id)

    def session_lineage(self, session_id: str | None) -> tuple[str, ...]:
        return cast("tuple[str, ...]", self._call("session_lineage", session_id=session_id))

    # -- sibling plumbing: the extraction outbox -------------------------------------------

    def outbox_watch(self, name: str, callback: Wake | None) -> None:
        raise InvalidArgumentError(
            "outbox_watch runs its callback in the store's process, which a gRPC client cannot "
            "give it; poll outbox_list instead"
        )

    def outbox_claim(self, limit: int = 8) -> builtins.list[OutboxJob]:
        return cast("builtins.list[OutboxJob]", self._call("outbox_claim", limit=limit))

    def outbox_note(self, job_id: str, reply: dict[str, Any], *, lease: str) -> OutboxJob:
        return cast("OutboxJob", self._call("outbox_note", job_id=job_id, reply=reply, lease=lease))

    def outbox_ack(self, job_id: str) -> OutboxAckResponse:
        return cast("OutboxAckResponse", self._call("outbox_ack", job_id=job_id))

    def outbox_fail(
        self,
        job_id: str,
        error: str,
        *,
        retry_after_ms: int | None = None,
        dead_letter: bool = False,
        lease: str | None = None,
    ) -> OutboxAckResponse:
        return cast(
            "OutboxAckResponse",
            self._call(
                "outbox_fail",
                job_id=job_id,
                error=error,
                retry_after_ms=retry_after_ms,
                dead_letter=dead_letter,
                lease=lease,
            ),
        )

    def outbox_requeue(self, job_id: str, *, fresh: bool = False) -> OutboxAckResponse:
        return cast("OutboxAckResponse", self._call("outbox_requeue", job_id=job_id, fresh=fresh))

    def outbox_list(self, *, include_dead: bool = True, limit: int = 100) -> OutboxListResponse:
        return cast(
            "OutboxListResponse", self._call("outbox_list", include_dead=include_dead, limit=limit)
        )

    def outbox_job(self, job_id: str) -> OutboxJob:
        return cast("OutboxJob", self._call("outbox_job", job_id=job_id))

    # -- sibling plumbing: events and state ------------------------------------------------

    def shard_routing(self, table: dict[str, Any] | None = None) -> dict[str, Any]:
        raise _not_served("shard_routing")

    def bank_export(self, name: str) -> dict[str, bytes]:
        raise _not_served("bank_export")

    def bank_import(self, name: str, files: dict[str, bytes]) -> BankInfo:
        raise _not_served("bank_import")

    def bank_release(self, name: str) -> BankDeleteResponse:
        raise _not_served("bank_release")

    def subscribe(
        self, name: str, callback: Subscriber, banks: Iterable[str] | None = None
    ) -> None:
        raise InvalidArgumentError(
            "subscribe delivers events to a callback in the store's process, which a gRPC "
            "client cannot give it; poll events_since instead"
        )

    def unsubscribe(self, name: str) -> bool:
        return cast("bool", self._call("unsubscribe", name=name))

    def events_since(
        self, cursor: int = 0, *, limit: int = 500, bank: str | None = None
    ) -> EventsResponse:
        return cast(
            "EventsResponse", self._call("events_since", cursor=cursor, limit=limit, bank=bank)
        )

    def state_get(self, owner: str, key: str) -> object | None:
        return cast("object", self._call("state_get", owner=owner, key=key))

    def state_set(self, owner: str, key: str, value: object) -> None:
        """``value`` crosses as JSON: a value JSON cannot hold is ``InvalidArgumentError``."""
        self._call("state_set", owner=owner, key=key, value=value)

    # -- operations ------------------------------------------------------------------------

    def doctor(self) -> DoctorResponse:
        return cast("DoctorResponse", self._call("doctor"))

    def describe(self) -> dict[str, Any]:
        return cast("dict[str, Any]", self._call("describe"))

    def capabilities(self) -> dict[str, Any]:
        return cast("dict[str, Any]", self._call("capabilities"))

    def configure(self, config: dict[str, Any]) -> dict[str, Any]:
        return cast("dict[str, Any]", self._call("configure", config=config))

    def reload(self) -> ReloadResponse:
        return cast("ReloadResponse", self._call("reload"))


if TYPE_CHECKING:  # mypy: a client that does not implement the contract fails here
    _contract: type[StoreAPI] = GrpcStoreClient


def _not_served(method: str) -> InvalidArgumentError:
    """Shard administration runs over Ray, beside the shards (``memory shards rebalance``)."""
    return InvalidArgumentError(
        f"{method} is shard administration, not served over gRPC: run `memory shards` "
        "where the cluster runs"
    )
