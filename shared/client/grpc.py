"""``GrpcStoreClient``: the gRPC transport, over the gateway's memory.store.v1 service.

The ``memory`` CLI reaches the running store through this client, without Ray in its process:
``memory up`` starts the gateway and records where it listens (``shared.client.gateway_file``), and
each op is one unary ``Call`` (a few milliseconds) instead of a Ray driver (seconds)::

    store = GrpcStoreClient("127.0.0.1:50051", token=None)
    store.save("The user prefers tabs", tags=["style"])

The op travels by name with its arguments as JSON (``shared.client.wire``); the answer is
validated against the op's declared response type, or, with ``validate=False``, handed back as
``store_wire.View``s (a caller that only reads fields skips loading pydantic). Errors reach the
caller as the store raised them (same class, category, message, retryable); a gateway that does
not answer is a retryable ``SourceUnavailableError``. Every call is sent at most once: a write is
never repeated behind the caller's back. Ops that take a callback (``subscribe``,
``outbox_watch``) are refused with ``InvalidArgumentError``: poll ``events_since`` and
``outbox_list`` instead.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar, cast

import grpc

from shared.client import wire as store_wire
from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.errors import MemoryServiceError, SourceUnavailableError, UnknownError
from shared.contract.op import Op
from shared.contract.principal import WHOAMI
from shared.proto.memory.store.v1 import store_pb2 as spb

R = TypeVar("R")
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
        detail = spb.StoreError.FromString(raw)
        leaf = getattr(errors, detail.kind, None)
        if not (
            isinstance(leaf, type)
            and issubclass(leaf, MemoryServiceError)
            and leaf.category == detail.category
        ):
            leaf = type(MemoryServiceError.from_dict({"category": detail.category}))
        return leaf(detail.message, detail.retryable)
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


class GrpcStoreClient(StoreAPI):
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
        self._call = self._channel.unary_unary(
            f"/{store_wire.SERVICE}/Call",
            request_serializer=spb.StoreCall.SerializeToString,
            response_deserializer=spb.StoreResult.FromString,
        )

    def close(self) -> None:
        self._channel.close()

    def whoami(self) -> dict[str, Any] | None:
        """The principal this client's token names at the gateway (``gateway.whoami``):
        ``shared.contract.principal.Principal.to_dict``."""
        request = spb.StoreCall(op=WHOAMI, args_json="{}")
        try:
            reply = self._call(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise error_from(e, self.address) from None
        found = json.loads(reply.result_json or "null")
        return found if isinstance(found, dict) else None

    def call(self, op: Op[R]) -> R:
        cls = store_wire.served(op.method)
        request = spb.StoreCall(op=op.method, args_json=store_wire.encode_args(op))
        try:
            reply = self._call(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise error_from(e, self.address) from None
        if not self.validate:
            return cast(R, store_wire.decode_view(op.method, reply.result_json))
        return cast(R, store_wire.decode_result(cls, reply.result_json))
