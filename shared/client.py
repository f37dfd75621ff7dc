"""The Ray client every caller of the store uses: the CLI, the extractor, the consolidator.

``connect()`` joins a running cluster; ``StoreClient`` wraps the named ``memory-store`` actor
and implements ``shared.api.StoreAPI`` with one explicit, typed method per store method::

    connect()
    store = StoreClient()
    store.save("The user prefers tabs", tags=["style"])   # == ray.get(handle.save.remote(...))

Each method declares once, by its decorator, whether it may be re-sent after the actor
restarted mid-call: ``@read`` (changes nothing: Ray re-sends it, ``READ_RETRIES`` times, and
the client tries once more on a fresh handle) or ``@write`` (at most once: ``store_worker.actor``
says why). The answer is checked against the method's declared response type (a mismatch is
an ``UnknownError``, never a wrong object handed on).

Errors reach the caller as the store raised them: Ray wraps an actor's exception in a
``RayTaskError`` (a dual subclass of the original class), and the client re-raises the original
``MemoryServiceError`` so ``except NotFoundError`` works and ``str(e)`` is the store's message.
Transport failures (no cluster, no actor, a dead or restarting actor, a timeout) become a
retryable ``SourceUnavailableError`` (DESIGN §9).

``ActorClient`` is the untyped base, for a sibling's own actor (``memory consolidate`` calls
the consolidator's ``run_now`` through it): ``client.call("name", ...)``.
"""

from __future__ import annotations

import builtins
import logging
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import TypeAdapter, ValidationError

from shared.api import Message, Wake

if TYPE_CHECKING:
    from shared.api import StoreAPI
from shared.coalesce import LINGER_S, SaveCoalescer
from shared.errors import MemoryServiceError, SourceUnavailableError, UnknownError
from shared.models import (
    MAX_SAVE_ITEMS,
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
from shared.workers import NAMESPACE

STORE_ACTOR = "memory-store"
NO_STORE_HINT = "no memory store is running; start it with `memory up` or `make run`"
DEFAULT_TIMEOUT_S = 120.0
READ_RETRIES = 3

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., object])
_RETRY_SAFE = "__store_retry_safe__"


def connect(address: str | None = None, *, quiet: bool = True) -> dict[str, Any]:
    """Join a running Ray cluster in namespace ``memory``; returns ``{"dashboard_url": ...}``.

    ``address`` defaults to ``RAY_ADDRESS``, else the local ``ray start`` cluster (never Ray's
    "auto", which may join any cluster on the machine: ``shared.cluster.local_address``).
    Already connected (a test's cluster, a Ray job): nothing changes.
    """
    from shared.cluster import local_address

    # Ray takes ~0.9 s to import: a process that never imported it is joined to no cluster,
    # and with no cluster to join (`memory status` before `up`) it is not imported at all.
    already = sys.modules.get("ray")
    if already is not None and already.is_initialized():
        return {"dashboard_url": _dashboard_url()}
    address = address or os.environ.get("RAY_ADDRESS") or local_address()
    if not address:
        raise SourceUnavailableError(_why_no_cluster())
    import ray

    _token_auth_if_available()
    try:
        context = ray.init(
            address=address,
            namespace=NAMESPACE,
            logging_level=logging.ERROR if quiet else logging.INFO,
            log_to_driver=not quiet,
        )
    except ConnectionError as e:
        raise SourceUnavailableError(_why_no_cluster()) from e
    url = getattr(context, "dashboard_url", "") or ""
    return {"dashboard_url": _http(url)}


def _why_no_cluster() -> str:
    """``NO_STORE_HINT``, unless the cluster ``memory up`` started is half dead (its GCS
    gone, its processes running: ``shared.cluster.half_dead``), which a new ``up`` cannot fix."""
    from shared.cluster import half_dead

    return half_dead() or NO_STORE_HINT


def _token_auth_if_available() -> None:
    """Send the cluster token when there is one (FACTS "Ray": clients need RAY_AUTH_MODE=token).

    Ray turns token mode on by itself only for ``address="auto"``; with an explicit address
    and the mode unset, a token-auth cluster (``memory up`` keeps auth on) refuses the
    driver. Ray reads the mode when it is imported, so the env var alone is too late here;
    its own helper also refreshes the cached config.
    """
    if os.environ.get("RAY_AUTH_MODE"):
        return  # the user's explicit choice
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # pragma: no cover - a Ray without token auth
        return
    quiet = logging.getLogger(maybe_enable_token_auth_if_token_available.__module__)
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "token authentication is enabled" on every CLI call
    try:
        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    finally:
        quiet.setLevel(level)


def _dashboard_url() -> str:
    try:
        from ray._private.worker import get_dashboard_url  # no public getter once connected

        return _http(str(get_dashboard_url() or ""))  # type: ignore[no-untyped-call]
    except Exception:
        return ""


def _http(url: str) -> str:
    if url and not url.startswith("http"):
        return f"http://{url}"
    return url


def get_actor(name: str) -> Any:
    """The handle of a named actor in the namespace, or ``SourceUnavailableError``."""
    import ray

    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError as e:
        hint = NO_STORE_HINT if name == STORE_ACTOR else f"{name} is not running"
        raise SourceUnavailableError(hint) from e


def read(method: F) -> F:
    """Declare a client method retry-safe: it changes nothing, so it may be re-sent after the
    actor restarted mid-call."""
    setattr(method, _RETRY_SAFE, True)
    return method


def write(method: F) -> F:
    """Declare a client method at-most-once: never re-sent (a re-run could count twice)."""
    setattr(method, _RETRY_SAFE, False)
    return method


class ActorClient:
    """Synchronous, untyped calls to a named actor: ``client.call("method", *args)``.

    ``reads`` names the actor's retry-safe methods; every other call is sent at most once.
    """

    def __init__(
        self,
        handle: Any = None,
        *,
        actor_name: str,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        reads: frozenset[str] = frozenset(),
    ) -> None:
        self._handle = handle
        self.actor_name = actor_name
        self.timeout = timeout
        self._reads = reads

    @property
    def handle(self) -> Any:
        if self._handle is None:
            self._handle = get_actor(self.actor_name)
        return self._handle

    def retry_safe(self, method: str) -> bool:
        return method in self._reads

    def call(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        """``ray.get(handle.<method>.remote(...))`` with the actor's errors, unwrapped."""
        return self._invoke(method, args, kwargs)

    def _invoke(self, method: str, args: tuple[object, ...], kwargs: dict[str, object]) -> object:
        import ray.exceptions as rex

        retry = self.retry_safe(method)
        attempts = 2 if retry else 1
        for attempt in range(attempts):
            try:
                return self._once(method, retry, args, kwargs)
            except rex.RayActorError as e:  # died, or restarting (ActorUnavailableError)
                self._handle = None  # a fresh `memory up` makes a new actor with the name
                if attempt + 1 < attempts:
                    continue
                raise SourceUnavailableError(f"{self.actor_name} is unavailable: {e}") from e
        raise AssertionError("unreachable")  # pragma: no cover

    def _once(
        self, method: str, retry: bool, args: tuple[object, ...], kwargs: dict[str, object]
    ) -> object:
        import ray
        import ray.exceptions as rex

        remote = getattr(self.handle, method, None)
        if remote is None:
            raise UnknownError(f"the running {self.actor_name} has no method {method!r}")
        if retry:
            # Ray re-sends a read after the actor restarted (a call to a restarting actor fails
            # at once otherwise); writes keep the actor's max_task_retries=0: at most once.
            remote = remote.options(max_task_retries=READ_RETRIES)
        ref = remote.remote(*args, **kwargs)
        try:
            return cast(object, ray.get(ref, timeout=self.timeout))
        except rex.GetTimeoutError as e:
            ray.cancel(ref)
            raise SourceUnavailableError(
                f"{self.actor_name}.{method} took longer than {self.timeout:g} s"
            ) from e
        except rex.RayTaskError as e:
            raise unwrap(e) from None


_ADAPTERS: dict[object, TypeAdapter[Any]] = {}


def _checked(expect: type[T], value: object, where: str) -> T:
    """``value`` as the declared response type, or ``UnknownError`` (a store of another
    version answered something else)."""
    adapter = _ADAPTERS.get(expect)
    if adapter is None:
        adapter = _ADAPTERS[expect] = TypeAdapter(expect)
    try:
        return cast(TypeAdapter[T], adapter).validate_python(value)
    except ValidationError as e:
        raise UnknownError(
            f"{where} answered a {type(value).__name__}, not the declared response: "
            f"{e.errors()[0]['msg']}"
        ) from e


class StoreClient(ActorClient):
    """``StoreAPI`` over Ray: the ``memory-store`` actor (or another store actor by name)."""

    def __init__(
        self,
        handle: Any = None,
        *,
        actor_name: str = STORE_ACTOR,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        coalesce: bool = True,
        linger_s: float = LINGER_S,
    ) -> None:
        super().__init__(handle, actor_name=actor_name, timeout=timeout)
        # concurrent threads' saves go out together as one save_many (shared/coalesce.py)
        self.coalescer = (
            SaveCoalescer(
                one=self._save_one,
                many=self._save_many,
                max_items=MAX_SAVE_ITEMS,
                linger_s=linger_s,
            )
            if coalesce
            else None
        )

    def retry_safe(self, method: str) -> bool:
        return method in READ_METHODS

    def _call(self, expect: type[T], method: str, /, *args: object, **kwargs: object) -> T:
        result = self._invoke(method, args, kwargs)
        return _checked(expect, result, f"{self.actor_name}.{method}")

    @read
    def ping(self) -> str:
        """``"pong"`` once the store is up (its boot error otherwise)."""
        return self._call(str, "ping")

    # -- banks -----------------------------------------------------------------------------

    @write
    def bank_create(self, name: str, description: str | None = None) -> BankCreateResponse:
        return self._call(BankCreateResponse, "bank_create", name, description)

    @read
    def bank_list(self) -> BankListResponse:
        return self._call(BankListResponse, "bank_list")

    @write
    def bank_delete(self, name: str) -> BankDeleteResponse:
        return self._call(BankDeleteResponse, "bank_delete", name)

    # -- memories: writes ------------------------------------------------------------------

    @write
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
        # only what differs from save's defaults crosses the wire (less to pickle per save)
        given = {
            "bank": bank,
            "title": title,
            "id": id,
            "type": type,
            "scope": scope,
            "project": project,
            "session_id": session_id,
            "turn_id": turn_id,
            "recorded_by": recorded_by,
            "tags": _seq(tags),
            "entities": _seq(entities),
            "pinned": pinned,
            "confidence": confidence,
            "status": status,
            "occurred_at": occurred_at,
        }
        item: dict[str, Any] = {"text": text}
        item.update((k, v) for k, v in given.items() if v != _SAVE_DEFAULTS[k])
        if not reinforce:  # save_many always reinforces: a create-only save goes alone
            return self._call(SaveResponse, "save", reinforce=False, **item)
        if self.coalescer is None:
            return self._save_one(item)
        return self.coalescer.save(item)

    def _save_one(self, item: dict[str, Any]) -> SaveResponse:
        return self._call(SaveResponse, "save", **item)

    def _save_many(self, items: builtins.list[dict[str, Any]]) -> SaveManyResponse:
        return self._call(SaveManyResponse, "save_many", items)

    @write
    def save_many(self, items: Sequence[SaveRequest | dict[str, Any]]) -> SaveManyResponse:
        return self._call(SaveManyResponse, "save_many", list(items))

    @write
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
        return self._call(
            MemoryResponse,
            "update",
            id,
            bank=bank,
            text=text,
            title=title,
            tags=_seq(tags),
            entities=_seq(entities),
            pinned=pinned,
            type=type,
            scope=scope,
            occurred_at=occurred_at,
        )

    @write
    def pin(self, id: str, pinned: bool = True, *, bank: str | None = None) -> MemoryResponse:
        return self._call(MemoryResponse, "pin", id, pinned, bank=bank)

    @write
    def delete(
        self, id: str, *, bank: str | None = None, reason: str | None = None
    ) -> MemoryResponse:
        return self._call(MemoryResponse, "delete", id, bank=bank, reason=reason)

    @write
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
        return self._call(
            SupersedeResponse,
            "supersede",
            id,
            superseded_by,
            bank=bank,
            reason=reason,
            reinforce=reinforce,
            revision=revision,
        )

    # -- memories: reads -------------------------------------------------------------------

    @write
    def supersede_many(
        self, items: Sequence[SupersedeRequest | dict[str, Any]]
    ) -> SupersedeManyResponse:
        return self._call(SupersedeManyResponse, "supersede_many", list(items))

    @read
    def get(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        return self._call(MemoryResponse, "get", id, bank=bank)

    @read
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
        return self._call(
            ListResponse,
            "list",
            bank=bank,
            tag=tag,
            type=type,
            scope=scope,
            status=status,
            include_superseded=include_superseded,
            page_size=page_size,
            page_token=page_token,
            type_filter=_seq(type_filter),
            scope_filter=_seq(scope_filter),
        )

    @read
    def tags(self, *, bank: str | None = None) -> TagsResponse:
        return self._call(TagsResponse, "tags", bank=bank)

    @read
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
        return self._call(
            RecallResponse,
            "recall",
            query,
            bank=bank,
            limit=limit,
            tag=tag,
            mode=mode,
            include_superseded=include_superseded,
            include_pending=include_pending,
            token_budget=token_budget,
            session_id=session_id,
            project=project,
            type_filter=_seq(type_filter),
            scope_filter=_seq(scope_filter),
            hint=hint,
            model_target=model_target,
            as_of=as_of,
        )

    @read
    def backlinks(self, id: str, *, bank: str | None = None) -> BacklinksResponse:
        return self._call(BacklinksResponse, "backlinks", id, bank=bank)

    @read
    def dangling(self, *, bank: str | None = None) -> DanglingResponse:
        return self._call(DanglingResponse, "dangling", bank=bank)

    # -- drafts (ratification) -------------------------------------------------------------

    @write
    def approve(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        return self._call(MemoryResponse, "approve", id, bank=bank)

    @write
    def reject(self, id: str, *, bank: str | None = None) -> RejectResponse:
        return self._call(RejectResponse, "reject", id, bank=bank)

    @read
    def drafts(self, *, bank: str | None = None) -> tuple[Memory, ...]:
        return self._call(tuple[Memory, ...], "drafts", bank=bank)

    # -- secrets already stored (issue 12) -------------------------------------------------

    @write
    def redact_rescan(self, *, bank: str | None = None, purge: bool = False) -> RescanResponse:
        return self._call(RescanResponse, "redact_rescan", bank=bank, purge=purge)

    @write
    def purge(self, id: str, *, bank: str | None = None) -> PurgeResponse:
        return self._call(PurgeResponse, "purge", id, bank=bank)

    # -- rules -----------------------------------------------------------------------------

    @read
    def rule_list(self, *, bank: str | None = None) -> RuleListResponse:
        return self._call(RuleListResponse, "rule_list", bank=bank)

    @read
    def rule_get(self, name: str, *, bank: str | None = None) -> Rule:
        return self._call(Rule, "rule_get", name, bank=bank)

    @write
    def rule_set(
        self, name: str, content: str, *, bank: str | None = None, expect: str | None = None
    ) -> RuleSetResponse:
        return self._call(RuleSetResponse, "rule_set", name, content, bank=bank, expect=expect)

    # -- the harness seam ------------------------------------------------------------------

    @write  # remembers the session's bank and what its rules section was
    def pre_generate(
        self,
        session_id: str,
        turn_id: str | None = None,
        step: int = 0,
        messages: builtins.list[Message] | None = None,
        metadata: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
    ) -> InjectResponse:
        return self._call(
            InjectResponse,
            "pre_generate",
            session_id,
            turn_id,
            step,
            messages,
            metadata,
            parent_session_id,
        )

    @read
    def preview(
        self, query: str, *, bank: str | None = None, session_id: str | None = None
    ) -> PreviewResponse:
        return self._call(PreviewResponse, "preview", query, bank=bank, session_id=session_id)

    @write
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
        return self._call(
            TurnCompletedResponse,
            "turn_completed",
            session_id,
            turn_id,
            messages,
            status,
            parent_session_id,
            parent=parent,
        )

    @write
    def link_session(self, session_id: str, parent_session_id: str | None) -> None:
        return self._call(type(None), "link_session", session_id, parent_session_id)

    @read
    def session_lineage(self, session_id: str | None) -> tuple[str, ...]:
        return self._call(tuple[str, ...], "session_lineage", session_id)

    # -- sibling plumbing: the extraction outbox -------------------------------------------

    @write
    def outbox_watch(self, name: str, callback: Wake | None) -> None:
        """``callback`` is pickled into the store's process and called there."""
        return self._call(type(None), "outbox_watch", name, callback)

    @write
    def outbox_claim(self, limit: int = 8) -> builtins.list[OutboxJob]:
        return self._call(builtins.list[OutboxJob], "outbox_claim", limit)

    @write
    def outbox_note(self, job_id: str, reply: dict[str, Any], *, lease: str) -> OutboxJob:
        return self._call(OutboxJob, "outbox_note", job_id, reply, lease=lease)

    @write
    def outbox_ack(self, job_id: str) -> OutboxAckResponse:
        return self._call(OutboxAckResponse, "outbox_ack", job_id)

    @write
    def outbox_fail(
        self,
        job_id: str,
        error: str,
        *,
        retry_after_ms: int | None = None,
        dead_letter: bool = False,
        lease: str | None = None,
    ) -> OutboxAckResponse:
        return self._call(
            OutboxAckResponse,
            "outbox_fail",
            job_id,
            error,
            retry_after_ms=retry_after_ms,
            dead_letter=dead_letter,
            lease=lease,
        )

    @write
    def outbox_requeue(self, job_id: str, *, fresh: bool = False) -> OutboxAckResponse:
        return self._call(OutboxAckResponse, "outbox_requeue", job_id, fresh=fresh)

    @read
    def outbox_list(self, *, include_dead: bool = True, limit: int = 100) -> OutboxListResponse:
        return self._call(OutboxListResponse, "outbox_list", include_dead=include_dead, limit=limit)

    @read
    def outbox_job(self, job_id: str) -> OutboxJob:
        return self._call(OutboxJob, "outbox_job", job_id)

    # -- sibling plumbing: events and state ------------------------------------------------

    @write
    def subscribe(self, name: str, callback: object, banks: Iterable[str] | None = None) -> None:
        """Over Ray ``callback`` is the subscriber's actor handle: events arrive at its
        ``on_event``; name the subscription after that actor (it is re-attached by name
        after a store restart)."""
        return self._call(type(None), "subscribe", name, callback, _seq(banks))

    @write
    def unsubscribe(self, name: str) -> bool:
        return self._call(bool, "unsubscribe", name)

    @read
    def events_since(
        self, cursor: int = 0, *, limit: int = 500, bank: str | None = None
    ) -> EventsResponse:
        return self._call(EventsResponse, "events_since", cursor, limit=limit, bank=bank)

    @read
    def state_get(self, owner: str, key: str) -> object | None:
        return self._call(object, "state_get", owner, key)

    @write
    def state_set(self, owner: str, key: str, value: object) -> None:
        return self._call(type(None), "state_set", owner, key, value)

    # -- operations ------------------------------------------------------------------------

    @write  # writes and trashes a scratch bank
    def doctor(self) -> DoctorResponse:
        return self._call(DoctorResponse, "doctor")

    @read
    def describe(self) -> dict[str, Any]:
        return self._call(dict[str, Any], "describe")

    @read
    def capabilities(self) -> dict[str, Any]:
        return self._call(dict[str, Any], "capabilities")

    @write
    def configure(self, config: dict[str, Any]) -> dict[str, Any]:
        return self._call(dict[str, Any], "configure", config)

    @write
    def reload(self) -> ReloadResponse:
        return self._call(ReloadResponse, "reload")

    # -- this store as one shard of several ----------------------------------------------

    @write
    def shard_routing(self, table: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._call(dict[str, Any], "shard_routing", table)

    @read
    def bank_export(self, name: str) -> dict[str, bytes]:
        return self._call(dict[str, bytes], "bank_export", name)

    @write
    def bank_import(self, name: str, files: dict[str, bytes]) -> BankInfo:
        return self._call(BankInfo, "bank_import", name, files)

    @write
    def bank_release(self, name: str) -> BankDeleteResponse:
        return self._call(BankDeleteResponse, "bank_release", name)

    # -- the memory.v1 views: the gateway calls them until they move into grpc_gateway -----
    # (not in StoreAPI; they go with store_worker/tools.py and provider.py)


# save's defaults (StoreAPI.save): an option equal to its default is not sent
_SAVE_DEFAULTS: dict[str, object] = {
    "bank": None,
    "title": None,
    "id": None,
    "type": "user",
    "scope": "global",
    "project": None,
    "session_id": None,
    "turn_id": None,
    "recorded_by": None,
    "tags": None,
    "entities": None,
    "pinned": False,
    "confidence": "stated",
    "status": None,
    "occurred_at": None,
}


def _seq(values: Iterable[str] | None) -> Iterable[str] | None:
    """An iterable option as a tuple: a generator does not cross a process boundary. A bare
    string goes as it is (the store reads it as one label, as in-process)."""
    if values is None or isinstance(values, str):
        return values
    return tuple(values)


def _declared(cls: type, safe: bool) -> frozenset[str]:
    return frozenset(
        name
        for name, value in vars(cls).items()
        if not name.startswith("_") and getattr(value, _RETRY_SAFE, None) is safe
    )


READ_METHODS = _declared(StoreClient, True)
"""The client's ``@read`` methods (derived from the declarations, never kept by hand)."""
STORE_METHODS = READ_METHODS | _declared(StoreClient, False)
"""Every method the client declares."""

if TYPE_CHECKING:  # mypy: a client that does not implement the contract fails here
    _contract: type[StoreAPI] = StoreClient


def unwrap(error: Exception) -> MemoryServiceError:
    """The store's own typed error inside a ``RayTaskError``; anything else is ``unknown``."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, MemoryServiceError):
        return cause
    if cause is not None:
        return UnknownError(f"{type(cause).__name__}: {cause}")
    return UnknownError(str(error).strip().splitlines()[-1] if str(error).strip() else "")
