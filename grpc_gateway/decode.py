"""Request bytes parsed inside the handler, so an undecodable request keeps the error contract.

grpcio's own ``request_deserializer`` runs before any servicer: bytes it cannot parse (garbage,
or a ``Struct`` nested past protobuf's recursion limit) end the call as ``INTERNAL "Exception
deserializing request!"`` with no MemoryError trailer. Here every method takes the raw bytes and
parses them itself; a failure is an ``InvalidArgumentError`` handed to the service's own
``abort`` (memory.v1 classifies it for its seven categories, memory.store.v1 keeps
``invalid_argument``), with its trailers, before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from shared.contract import errors

Abort = Callable[[Any, errors.MemoryServiceError], None]


def parsing(
    fn: Callable[[Any, Any], Any], message: Any, abort: Abort
) -> Callable[[bytes, Any], Any]:
    """``fn(request, context)`` as a handler of raw bytes: ``message`` parsed from them first."""

    def handle(raw: bytes, context: Any) -> Any:
        try:
            request = message.FromString(raw)
        except Exception as e:  # DecodeError, RecursionError, ...: never grpcio's bare INTERNAL
            name = message.DESCRIPTOR.full_name
            abort(context, errors.InvalidArgumentError(f"undecodable {name}: {e}"))
            raise AssertionError("unreachable") from e  # abort raised
        return fn(request, context)

    return handle


def unary_handler(fn: Callable[[Any, Any], Any], message: Any, abort: Abort) -> Any:
    """One unary-unary method handler that parses its own request (``parsing``)."""
    return grpc.unary_unary_rpc_method_handler(
        parsing(fn, message, abort),
        response_serializer=lambda response: response.SerializeToString(),
    )


def add_service(
    server: grpc.Server,
    servicer: object,
    service: ServiceDescriptor,
    messages: ModuleType,
    abort: Abort,
) -> None:
    """Serve ``service``'s (unary) methods from ``servicer``, each parsing its own request;
    ``messages`` is the generated module that holds the request classes."""
    handlers = {
        method.name: unary_handler(
            getattr(servicer, method.name), getattr(messages, method.input_type.name), abort
        )
        for method in service.methods
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )
