"""memory.store.v1.StoreService: every store operation over gRPC, for the CLI.

One RPC, ``Call``: the request names an op (``shared.contract.ops``) and carries its arguments as
JSON; they are checked against the op's fields and types (``shared.client.wire.decode_op``, the one
validation at this boundary), the store runs the op, and its answer goes back as JSON of the
op's declared response type. A few gateway-level calls (``gateway.status``,
``gateway.metrics``: ``shared.client.lifecycle``) are answered by the gateway itself, which has
Ray, before anything reaches the store: the CLI reads the cluster's state without importing
Ray, and the store serves no operation of the cluster's.

A failure ends the call with the store's own category (``invalid_argument`` included: these
callers speak the store's API, not memory.v1's seven categories), its status code
(``errors.GRPC_CODES``) and the ``memory-store-error-bin`` / ``memory-error-category``
trailers. No path answers ``UNKNOWN``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import grpc

from grpc_gateway.decode import unary_handler
from shared.client import wire as store_wire
from shared.client.scoped import CURRENT, WHOAMI
from shared.contract import errors, ops
from shared.contract.api import StoreAPI
from shared.contract.config import refused_remotely
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
    """``"pong"`` once the store answers (its boot error otherwise)."""
    return store.ping()


GatewayCall = Callable[[dict[str, Any]], Any]  # JSON arguments in, a JSON-able answer out


def _object(request: spb.StoreCall) -> dict[str, Any]:
    try:
        args = json.loads(request.args_json or "{}")
    except ValueError as e:
        raise errors.InvalidArgumentError(f"{request.op}: arguments are not JSON: {e}") from e
    if not isinstance(args, dict):
        raise errors.InvalidArgumentError(f"{request.op}: arguments must be a JSON object")
    return args


class StoreServicer:
    """The ``Call`` handler over one ``StoreAPI``; ``locked`` serializes calls to a store that
    is not thread-safe (an embedded store), or is a no-op. ``gateway_calls``: calls the gateway
    answers itself, by name (none for a gateway without a cluster: ``memory grpc --data-dir``)."""

    def __init__(
        self,
        store: StoreAPI,
        locked: Callable[[], AbstractContextManager[None]],
        gateway_calls: Mapping[str, GatewayCall] | None = None,
    ) -> None:
        self.store = store
        self._locked = locked
        self._gateway_calls = dict(gateway_calls or {})

    def Call(self, request: spb.StoreCall, context: Any) -> spb.StoreResult:
        """One op: its arguments checked, the store run, the answer encoded."""
        try:
            if request.op == WHOAMI:  # which principal this call's token names
                principal = CURRENT.get()
                return spb.StoreResult(
                    result_json=json.dumps(principal.to_dict() if principal else None)
                )
            own = self._gateway_calls.get(request.op)
            if own is not None:  # the gateway's own, never the store's (no store lock)
                principal = CURRENT.get()
                if principal is not None and not principal.admin:
                    raise principal.refuse("admin", f"{request.op} is the administrator's")
                return spb.StoreResult(result_json=json.dumps(own(_object(request))))
            op = store_wire.decode_op(request.op, request.args_json)
            if isinstance(op, ops.Configure) and (why := refused_remotely(op.config)):
                # a remote caller never points the store at its files (as memory.v1 Configure)
                raise errors.InvalidArgumentError(why)
            with self._locked():
                value = ping(self.store) if isinstance(op, ops.Ping) else self.store.call(op)
            return spb.StoreResult(result_json=store_wire.encode_result(type(op), value))
        except errors.MemoryServiceError as e:
            err = e
        except Exception as e:  # translate, never leak
            log.exception("store.v1 %s failed", request.op)
            err = errors.UnknownError(f"{type(e).__name__}: {e}")
        abort(context, err)
        raise AssertionError("unreachable")  # context.abort raised

    def handler(self) -> grpc.GenericRpcHandler:
        """The service's one method, for ``server.add_generic_rpc_handlers``."""
        # the request is parsed in the handler: undecodable bytes are invalid_argument
        call = unary_handler(self.Call, spb.StoreCall, abort)
        return grpc.method_handlers_generic_handler(DESCRIPTOR.full_name, {"Call": call})
