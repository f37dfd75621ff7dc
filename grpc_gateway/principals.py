"""Who is calling: the gateway resolves each call's bearer token to a principal
(``shared.contract.principal``) and serves the call as that principal's (``shared.client.scoped``).

- the gateway's own token (``--grpc-token-file``, ``MEMORY_GRPC_TOKEN``) is the admin's;
- a scoped token (``memory token create``) is looked up by its hash in the store;
- with no token configured the gateway is open: a call that carries no credential is the
  admin's; one that carries a scoped token is limited by it, and one whose credential names no
  live token (a revoked one, a typo) is refused as on a locked gateway, never served as the
  admin's.

Anything else is refused before the servicer runs, as ``grpc_gateway.auth.BearerAuth`` refuses
a wrong token (memory.v1's ``unknown``, with a message naming the header). The principal is
resolved on the worker thread that serves the call, and set in ``shared.client.scoped.CURRENT``
for the call's duration: every store call the servicer makes goes through ``PerCall``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import grpc

from grpc_gateway.auth import HEADER
from shared.client.bearer import bearer_matches
from shared.client.scoped import acting_as
from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.principal import ADMIN, Principal, digest

DENIED = f"unauthenticated: missing or wrong bearer token ({HEADER}: Bearer <token>)"


class Resolver:
    """A call's ``authorization`` header → its principal, or ``None`` (refused)."""

    def __init__(
        self,
        store: StoreAPI,
        token: str | None,
        locked: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self.store = store
        self._admin = token.encode() if token else None
        self._locked = locked

    def __call__(self, header: str) -> Principal | None:
        if self._admin is not None and bearer_matches(header, self._admin):
            return ADMIN
        scheme, _, credential = header.partition(" ")
        scoped = None
        if scheme.lower() == "bearer" and credential:
            with self._locked():
                found = self.store.token_resolve(digest(credential))
            scoped = Principal.from_dict(found) if found else None
        if scoped is not None or self._admin is not None or header.strip():
            return scoped
        return ADMIN  # an open gateway: a caller that brings no credential is the admin


class PrincipalAuth(grpc.ServerInterceptor):
    """Resolves each call's principal (``Resolver``), refuses a call that has none, and
    serves a unary call as its principal's (``acting_as``)."""

    def __init__(
        self,
        resolve: Callable[[str], Principal | None],
        abort: Callable[..., None],
        *,
        open_services: tuple[str, ...] = (),
    ) -> None:
        self._resolve = resolve
        self._abort = abort
        self._open = tuple(f"/{name}/" for name in open_services)

        def deny(request: Any, context: Any) -> None:
            self._abort(context, errors.UnknownError(DENIED))

        self._deny: grpc.RpcMethodHandler[Any, None] = grpc.unary_unary_rpc_method_handler(deny)

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        if self._open and str(details.method).startswith(self._open):
            return continuation(details)
        header = ""
        for key, value in details.invocation_metadata or ():
            if key == HEADER and isinstance(value, str):
                header = value
        handler = continuation(details)
        if handler is None:
            return None
        if handler.unary_unary is None:  # a stream (reflection): resolved here
            return handler if self._resolve(header) is not None else self._deny
        serve = handler.unary_unary

        def as_principal(request: Any, context: Any) -> Any:
            try:
                principal = self._resolve(header)
            except errors.MemoryServiceError as e:  # the store is down: say so
                self._abort(context, e)
                raise AssertionError("unreachable") from e
            if principal is None:
                self._abort(context, errors.UnknownError(DENIED))
            with acting_as(principal):  # type: ignore[arg-type]
                return serve(request, context)

        return grpc.unary_unary_rpc_method_handler(
            as_principal,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
