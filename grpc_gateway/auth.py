"""Optional bearer-token authentication for the gateway (docs/PROTOCOLS.md#authentication).

With a token configured, every call must carry ``authorization: Bearer <token>`` metadata; anything
else is refused before the servicer runs, with a ``MemoryError`` in the trailing metadata like every
other failure. memory.v1's seven error categories have no authentication one, so a refused token is
``unknown`` and, as that category maps, gRPC ``INTERNAL`` (a kernel must never see a status outside
the mapping), with a message naming the missing header. The comparison is constant-time (``hmac``).
``open_services`` names services that need no token (``grpc.health.v1.Health``: a Kubernetes probe
or load balancer carries none).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from shared.client.bearer import bearer_matches
from shared.contract import errors

HEADER = "authorization"


class BearerAuth(grpc.ServerInterceptor):
    """Refuses calls whose ``authorization`` metadata is not ``Bearer <token>``."""

    def __init__(
        self, token: str, abort: Callable[..., None], *, open_services: tuple[str, ...] = ()
    ) -> None:
        if not token:
            raise errors.InvalidArgumentError("a bearer token must be non-empty")
        self._token = token.encode()
        self._abort = abort
        self._open = tuple(f"/{name}/" for name in open_services)

        def deny(request: Any, context: Any) -> None:
            err = errors.UnknownError(
                f"unauthenticated: missing or wrong bearer token ({HEADER}: Bearer <token>)"
            )
            self._abort(context, err)

        self._deny: grpc.RpcMethodHandler[Any, None] = grpc.unary_unary_rpc_method_handler(deny)

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        if self._open and str(details.method).startswith(self._open):
            return continuation(details)
        got = ""
        for key, value in details.invocation_metadata or ():
            if key == HEADER and isinstance(value, str):
                got = value
        if bearer_matches(got, self._token):
            return continuation(details)
        return self._deny


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """Call metadata for a client: ``stub.Recall(req, metadata=bearer_metadata(token))``."""
    return ((HEADER, f"Bearer {token}"),)
