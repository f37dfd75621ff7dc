"""``StoreAPI``: the store's public methods, written once over ``call(op)``.

Every operation is declared once in ``shared.contract.ops`` (its arguments, answer, read or write,
route); each typed method below is that operation bound by ``operation`` and costs one line.
A way of reaching a store subclasses ``StoreAPI`` and implements only ``call`` (a transport,
as an HTTP client's transport implements only ``handle_request``):

- ``store_worker.core.MemoryStore``: the store itself, in this process (embedded);
- ``shared.client.ray.StoreClient``: the ``memory-store`` actor over Ray;
- ``shared.client.grpc.GrpcStoreClient``: the gateway's memory.store.v1 service;
- ``shared.client.sharded.ShardedStoreClient``: several stores, routed by each op's route;
- ``shared.client.coalesce.Coalescing``: concurrent saves sent together, over another transport;
- ``shared.client.mock.MockStore``: a handler function, for tests.

The conformance suite (``tests/conformance``) runs the same behavioural tests against each.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from shared.contract import ops
from shared.contract.op import REGISTRY, Op, response_name

if TYPE_CHECKING:  # a CLI process builds ops without loading pydantic or the models
    from shared.contract.models import Event

P = ParamSpec("P")
R = TypeVar("R")

Subscriber = Callable[["Event"], object]
"""An event subscriber in the store's process (over Ray: the subscriber's actor handle)."""

Wake = Callable[[], object]
"""Called after each ``turn_completed`` enqueue (``outbox_watch``); must be picklable over Ray."""


class Sharding(Protocol):
    """What a store of several shards exposes (``StoreAPI.sharding``): its shards, each a
    store of its own, and which one owns a bank."""

    @property
    def shards(self) -> Sequence[StoreAPI]: ...

    def owner(self, bank: str | None) -> int: ...

    def refresh(self, *, recount: bool = False) -> Any: ...


def operation(op: Callable[P, Op[R]]) -> Callable[Concatenate[StoreAPI, P], R]:
    """The typed method of an operation: builds the op from its arguments and calls it."""

    def method(self: StoreAPI, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.call(op(*args, **kwargs))

    cls: Any = op
    method.__name__ = method.__qualname__ = cls.method
    method.__doc__ = cls.__doc__
    signature = inspect.signature(cls)
    me = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[me, *signature.parameters.values()], return_annotation=response_name(cls)
    )
    return method


class StoreAPI:
    """The store's public methods; a subclass implements ``call`` (see the module docstring)."""

    def call(self, op: Op[R]) -> R:
        """Run one operation and answer its declared response."""
        raise NotImplementedError

    def close(self) -> None:
        """Let go of what this client holds (files, a channel); nothing by default."""

    def sharding(self) -> Sharding | None:
        """The shards behind this store, when there are several to address one by one."""
        return None

    def __enter__(self) -> StoreAPI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the operations, one line each (declared in shared.contract.ops) --------------------
    ping = operation(ops.Ping)
    bank_create = operation(ops.BankCreate)
    bank_list = operation(ops.BankList)
    bank_delete = operation(ops.BankDelete)
    save = operation(ops.Save)
    save_many = operation(ops.SaveMany)
    update = operation(ops.Update)
    pin = operation(ops.Pin)
    delete = operation(ops.Delete)
    supersede = operation(ops.Supersede)
    supersede_many = operation(ops.SupersedeMany)
    get = operation(ops.Get)
    history = operation(ops.History)
    import_records = operation(ops.Import)
    export = operation(ops.Export)
    list = operation(ops.List)
    tags = operation(ops.Tags)
    recall = operation(ops.Recall)
    backlinks = operation(ops.Backlinks)
    dangling = operation(ops.Dangling)
    approve = operation(ops.Approve)
    reject = operation(ops.Reject)
    drafts = operation(ops.Drafts)
    redact_rescan = operation(ops.RedactRescan)
    purge = operation(ops.Purge)
    rule_list = operation(ops.RuleList)
    rule_get = operation(ops.RuleGet)
    rule_set = operation(ops.RuleSet)
    rule_propose = operation(ops.RulePropose)
    rule_pending = operation(ops.RulePending)
    rule_approve = operation(ops.RuleApprove)
    rule_reject = operation(ops.RuleReject)
    pre_generate = operation(ops.PreGenerate)
    preview = operation(ops.Preview)
    turn_completed = operation(ops.TurnCompleted)
    link_session = operation(ops.LinkSession)
    session_lineage = operation(ops.SessionLineage)
    outbox_watch = operation(ops.OutboxWatch)
    outbox_claim = operation(ops.OutboxClaim)
    outbox_note = operation(ops.OutboxNote)
    outbox_ack = operation(ops.OutboxAck)
    outbox_fail = operation(ops.OutboxFail)
    outbox_requeue = operation(ops.OutboxRequeue)
    outbox_drop = operation(ops.OutboxDrop)
    outbox_list = operation(ops.OutboxList)
    outbox_job = operation(ops.OutboxLookup)
    subscribe = operation(ops.Subscribe)
    unsubscribe = operation(ops.Unsubscribe)
    events_since = operation(ops.EventsSince)
    state_get = operation(ops.StateGet)
    state_set = operation(ops.StateSet)
    doctor = operation(ops.Doctor)
    describe = operation(ops.Describe)
    capabilities = operation(ops.Capabilities)
    configure = operation(ops.Configure)
    reload = operation(ops.Reload)
    shard_routing = operation(ops.ShardRouting)
    bank_copy = operation(ops.BankCopy)
    bank_place = operation(ops.BankPlace)
    bank_release = operation(ops.BankRelease)
    token_create = operation(ops.TokenCreate)
    token_list = operation(ops.TokenList)
    token_revoke = operation(ops.TokenRevoke)
    token_resolve = operation(ops.TokenResolve)
    session_owner = operation(ops.SessionOwner)


METHODS: tuple[str, ...] = tuple(sorted(REGISTRY))
"""Every operation's method name."""
