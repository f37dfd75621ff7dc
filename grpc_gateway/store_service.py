"""memory.store.v1.StoreService: every ``StoreAPI`` method over gRPC, for the CLI (issue 13).

Each RPC of ``store.proto`` is one ``StoreAPI`` method (``shared.store_wire``): the request's
JSON arguments are checked against the method's signature and types, the store runs, and its
answer goes back as JSON of the declared response type. A failure ends the call with the
store's own category (``invalid_argument`` included: these callers speak the store's API, not
memory.v1's seven categories), its status code (``errors.GRPC_CODES``) and the
``memory-store-error-bin`` / ``memory-error-category`` trailers. No path answers ``UNKNOWN``.

Handlers are registered from the proto's own descriptor, so an RPC without a store method (or
the reverse) fails at start-up and in ``tests/grpc_gateway/test_store_service.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import grpc

from shared import errors, store_wire
from shared.api import StoreAPI
from shared.config import refused_remotely
from shared.proto.memory.store.v1 import store_pb2 as spb

log = logging.getLogger(__name__)

DESCRIPTOR = spb.DESCRIPTOR.services_by_name["StoreService"]


def abort(context: Any, err: errors.MemoryServiceError) -> None:
    """End the call with the store's error as it is: its category's status and trailers."""
    status = grpc.StatusCode[errors.GRPC_CODES.get(err.category, "INTERNAL")]
    detail = spb.StoreError(
        category=err.category,
        message=err.message,
        retryable=err.retryable,
        kind=type(err).__name__,
    )
    context.set_trailing_metadata(
        (
            (store_wire.ERROR_KEY, detail.SerializeToString()),
            (store_wire.CATEGORY_KEY, err.category),
        )
    )
    context.abort(status, err.message)


def ping(store: StoreAPI) -> str:
    """``"pong"`` once the store answers: its own ``ping`` (the actor's client), or a bank
    listing (an embedded store has no ping)."""
    own = getattr(store, "ping", None)
    if callable(own):
        return str(own())
    store.bank_list()
    return "pong"


class StoreServicer:
    """The handlers of ``StoreService`` over one ``StoreAPI``; ``locked`` serializes calls to
    a store that is not thread-safe (an embedded store), or is a no-op."""

    def __init__(self, store: StoreAPI, locked: Callable[[], AbstractContextManager[None]]) -> None:
        self.store = store
        self._locked = locked

    def call(self, method: str, request: spb.StoreCall, context: Any) -> spb.StoreResult:
        """One RPC: arguments checked, the store method run, the answer encoded."""
        try:
            kwargs = store_wire.decode_args(method, request.args_json)
            if method == "configure" and (why := refused_remotely(kwargs["config"])):
                # a remote caller never points the store at its files (as memory.v1 Configure)
                raise errors.InvalidArgumentError(why)
            with self._locked():
                if method == "ping":
                    value: object = ping(self.store)
                else:
                    value = getattr(self.store, method)(**kwargs)
            return spb.StoreResult(result_json=store_wire.encode_result(method, value))
        except errors.MemoryServiceError as e:
            err = e
        except Exception as e:  # translate, never leak
            log.exception("store.v1 %s failed", method)
            err = errors.UnknownError(f"{type(e).__name__}: {e}")
        abort(context, err)
        raise AssertionError("unreachable")  # context.abort raised

    def handler(self) -> grpc.GenericRpcHandler:
        """The service's handlers, one per RPC of the proto."""
        table: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
        for rpc in DESCRIPTOR.methods:
            method = store_wire.method_name(rpc.name)
            if method not in store_wire.EXTRA and not callable(getattr(self.store, method, None)):
                raise errors.UnknownError(f"store.proto names {rpc.name}, which the store lacks")
            table[rpc.name] = grpc.unary_unary_rpc_method_handler(
                _bound(self, method),
                request_deserializer=spb.StoreCall.FromString,
                response_serializer=spb.StoreResult.SerializeToString,
            )
        return grpc.method_handlers_generic_handler(DESCRIPTOR.full_name, table)


def _bound(servicer: StoreServicer, method: str) -> Callable[[spb.StoreCall, Any], Any]:
    def rpc(request: spb.StoreCall, context: Any) -> spb.StoreResult:
        return servicer.call(method, request, context)

    return rpc


def methods() -> Iterator[str]:
    """The ``StoreAPI`` methods the proto serves (``ping`` aside)."""
    for rpc in DESCRIPTOR.methods:
        name = store_wire.method_name(rpc.name)
        if name not in store_wire.EXTRA:
            yield name
