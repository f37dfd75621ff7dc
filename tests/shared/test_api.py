"""``StoreAPI`` cannot drift from the store or the client: same methods, same parameters.

mypy checks the types (``store_worker.actor.open_embedded`` returns a ``MemoryStore`` as a
``StoreAPI``; ``shared.client`` assigns ``StoreClient`` to ``type[StoreAPI]``); this checks what
mypy lets pass: names, parameter names, kinds and defaults, and that every client method says
whether it may be re-sent.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from shared import client as client_mod
from shared.api import StoreAPI
from shared.client import READ_METHODS, STORE_METHODS, ActorClient, StoreClient
from store_worker.core import MemoryStore

# MemoryStore's public methods that are not part of the contract, and why.
IN_PROCESS = {"close", "now", "trash_dir", "purge_trash", "prune_session_state"}
# Parameters only the in-process store takes: the actor passes its own sibling probe.
IN_PROCESS_PARAMS = {"doctor": frozenset({"siblings"})}
# Ray adds this to every method of a class it made an actor of, in the driver too (once any
# test in the session started the store actor, MemoryStore's methods carry it).
RAY_TRACING_PARAM = "_ray_trace_ctx"
# Client methods that are not calls of the store.
CLIENT_PLUMBING = {"call", "retry_safe", "handle"}


def public(cls: type) -> set[str]:
    return {
        name
        for name, value in vars_all(cls).items()
        if not name.startswith("_") and callable(value)
    }


def vars_all(cls: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        out.update(vars(klass))
    return out


def params(
    fn: Callable[..., Any], skip: frozenset[str] = frozenset()
) -> list[tuple[str, Any, Any]]:
    sig = inspect.signature(fn)
    return [
        (p.name, p.kind, p.default)
        for p in sig.parameters.values()
        if p.name != "self" and p.name not in skip and p.name != RAY_TRACING_PARAM
    ]


CONTRACT = sorted(public(StoreAPI))


def test_the_contract_is_the_stores_public_methods_minus_the_named_exceptions() -> None:
    store = public(MemoryStore)
    assert set(CONTRACT) == store - IN_PROCESS
    assert IN_PROCESS <= store  # the exceptions still exist
    assert len(CONTRACT) > 40


@pytest.mark.parametrize("name", CONTRACT)
def test_the_store_takes_the_contracts_parameters(name: str) -> None:
    skip = IN_PROCESS_PARAMS.get(name, frozenset())
    assert params(getattr(MemoryStore, name), skip) == params(getattr(StoreAPI, name))
    for extra in skip:  # an in-process-only parameter must be optional
        default = inspect.signature(getattr(MemoryStore, name)).parameters[extra].default
        assert default is not inspect.Parameter.empty


@pytest.mark.parametrize("name", CONTRACT)
def test_the_client_takes_the_contracts_parameters(name: str) -> None:
    assert params(getattr(StoreClient, name)) == params(getattr(StoreAPI, name))


def test_every_client_method_declares_whether_it_may_be_resent() -> None:
    declared = public(StoreClient) - CLIENT_PLUMBING
    assert declared == STORE_METHODS
    assert set(CONTRACT) <= STORE_METHODS
    undeclared = [
        n
        for n in declared
        if getattr(getattr(StoreClient, n), "__store_retry_safe__", None) is None
    ]
    assert undeclared == []


def test_reads_are_the_methods_that_change_nothing() -> None:
    # the writes a re-run would count twice, or answer a conflict for, are never re-sent
    for write in ("save", "update", "delete", "supersede", "pin", "turn_completed", "outbox_fail"):
        assert write not in READ_METHODS
    for read in ("get", "list", "recall", "tags", "describe", "events_since", "outbox_list"):
        assert read in READ_METHODS
    client = StoreClient(handle=object())
    assert client.retry_safe("recall") and not client.retry_safe("save")
    assert not client.retry_safe("not_a_method")  # unknown: at most once, the safe default


def test_a_sibling_actor_client_retries_only_its_declared_reads() -> None:
    sibling = ActorClient(object(), actor_name="memory-x", reads=frozenset({"status"}))
    assert sibling.retry_safe("status") and not sibling.retry_safe("run_now")


def test_an_answer_of_the_wrong_type_is_an_unknown_error() -> None:
    from shared.errors import UnknownError
    from shared.models import RecallResponse

    class Wrong(StoreClient):
        def _invoke(self, method: str, args: Any, kwargs: Any) -> object:
            return {"memories": "not a list"}

    with pytest.raises(UnknownError, match=r"memory-store\.recall answered a dict"):
        Wrong(handle=object()).recall("q")
    ok = RecallResponse(memories=(), retrieval="lexical", bank="main")

    class Right(StoreClient):
        def _invoke(self, method: str, args: Any, kwargs: Any) -> object:
            return ok

    assert Right(handle=object()).recall("q") is ok
    assert client_mod._seq(x for x in ["a"]) == ("a",)  # a generator crosses as a tuple


@pytest.mark.parametrize("name", CONTRACT)
def test_the_grpc_client_takes_the_contracts_parameters(name: str) -> None:
    from shared.grpc_client import GrpcStoreClient

    assert params(getattr(GrpcStoreClient, name)) == params(getattr(StoreAPI, name))
