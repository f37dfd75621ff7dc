"""The contract is declared once: each op names its answer, read or write and route; every
transport implements only ``call``; the store serves every op with the op's own parameters."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from shared.client.grpc import GrpcStoreClient
from shared.client.ray import ActorClient, StoreClient
from shared.client.sharded import ShardedStoreClient
from shared.contract import ops
from shared.contract.api import METHODS, StoreAPI
from shared.contract.errors import InvalidArgumentError, UnknownError
from shared.contract.models import RecallResponse, SaveResponse
from shared.contract.op import REGISTRY, Op, fields_of, op_named
from store_worker.core import MemoryStore

# MemoryStore's public methods that are not operations, and why: in-process helpers.
IN_PROCESS = {"call", "close", "now", "trash_dir", "purge_trash", "prune_session_state", "sharding"}
# Parameters only the in-process store takes: the actor passes its own sibling probe.
IN_PROCESS_PARAMS = {"doctor": frozenset({"siblings"})}
RAY_TRACING_PARAM = "_ray_trace_ctx"  # Ray adds it to the methods of a class made an actor


def fields(cls: type[Op[Any]]) -> list[tuple[str, Any, Any]]:
    sig = inspect.signature(cls)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def params(fn: Any, skip: frozenset[str] = frozenset()) -> list[tuple[str, Any, Any]]:
    sig = inspect.signature(fn)
    return [
        (p.name, p.kind, p.default)
        for p in sig.parameters.values()
        if p.name not in ("self", RAY_TRACING_PARAM) and p.name not in skip
    ]


def test_every_op_is_registered_once_with_a_resolvable_answer() -> None:
    assert len(METHODS) > 50
    for name, cls in REGISTRY.items():
        assert cls.method == name
        assert cls.response_type() is not None
        built = fields_of(cls)  # made a dataclass on first use
        assert dataclasses.is_dataclass(cls) and len(built) == len(fields(cls))
        # the signature declared before it was built is the dataclass constructor's
        made = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert [(p.name, p.kind, p.default) for p in made] == fields(cls)
        assert callable(getattr(StoreAPI, name))


def test_reads_are_the_ops_that_change_nothing() -> None:
    # the writes a re-run would count twice, or answer a conflict for, are never re-sent
    for write in ("save", "update", "delete", "supersede", "pin", "turn_completed", "outbox_fail"):
        assert not REGISTRY[write].retry
    for read in ("get", "list", "recall", "tags", "describe", "events_since", "outbox_list"):
        assert REGISTRY[read].retry


@pytest.mark.parametrize("name", METHODS)
def test_the_store_serves_each_op_with_its_parameters(name: str) -> None:
    cls = REGISTRY[name]
    skip = IN_PROCESS_PARAMS.get(name, frozenset())
    assert params(getattr(MemoryStore, name), skip) == fields(cls)


def test_the_store_has_no_public_method_that_is_not_an_op() -> None:
    public = {n for n, v in inspect.getmembers(MemoryStore, callable) if not n.startswith("_")}
    assert public - set(METHODS) == IN_PROCESS


@pytest.mark.parametrize("transport", [StoreClient, GrpcStoreClient, ShardedStoreClient])
def test_transports_implement_only_call(transport: type[StoreAPI]) -> None:
    overridden = {name for name in METHODS if name in vars(transport)}
    assert overridden == set(), f"{transport.__name__} writes {overridden} again"
    assert "call" in vars(transport)


def test_an_op_freezes_its_labels_and_carries_only_what_changed() -> None:
    op = ops.Save("tea", tags=(t for t in ["drink", "green"]), pinned=True)
    assert op.tags == ("drink", "green")  # a generator would be spent by a first send
    assert op.changed() == {"text": "tea", "tags": ("drink", "green"), "pinned": True}
    assert ops.Save("x", tags="one").tags == "one"  # a bare string stays one label


def test_an_unknown_op_is_a_typed_refusal() -> None:
    with pytest.raises(InvalidArgumentError, match="not a store operation"):
        op_named("drop_everything")


def test_a_sibling_actor_client_retries_only_its_declared_reads() -> None:
    sibling = ActorClient(object(), actor_name="memory-x", reads=frozenset({"status"}))
    assert sibling.retry_safe("status") and not sibling.retry_safe("run_now")


class _Answering(ActorClient):
    def __init__(self, answer: object) -> None:
        super().__init__(object(), actor_name="memory-store")
        self.answer = answer
        self.sent: list[tuple[str, bool]] = []

    def _invoke(self, method: str, args: Any, kwargs: Any, *, retry: bool) -> object:
        self.sent.append((args[0].method, retry))
        return self.answer


def test_an_answer_of_the_wrong_type_is_an_unknown_error() -> None:
    client = StoreClient(handle=object(), coalesce=False)
    client.actor = _Answering({"memories": "not a list"})
    client._send = type(client._send)(client.actor)  # type: ignore[call-arg]
    with pytest.raises(UnknownError, match=r"memory-store\.recall answered a dict"):
        client.recall("q")
    ok = RecallResponse(memories=(), retrieval="lexical", bank="main")
    client.actor.answer = ok  # type: ignore[attr-defined]
    assert client.recall("q") is ok
    assert client.actor.sent == [("recall", True), ("recall", True)]  # type: ignore[attr-defined]


def test_the_ray_client_sends_a_write_at_most_once() -> None:
    client = StoreClient(handle=object(), coalesce=False)
    answer = {"created": True, "memory": None, "bank": "main"}
    client.actor = _Answering(answer)
    client._send = type(client._send)(client.actor)  # type: ignore[call-arg]
    with pytest.raises(UnknownError):  # the fake's answer is no SaveResponse
        client.save("x", reinforce=False)
    assert client.actor.sent == [("save", False)]  # type: ignore[attr-defined]
    assert SaveResponse  # the declared answer
