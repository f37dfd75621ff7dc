"""Running the MCP server: stdio, or streamable HTTP on loopback behind a bearer token (the one
given, else the admin token: ``integrations.cli``; none only when opted into).

The token check is a small ASGI wrapper in front of the SDK's app: every HTTP request must
carry ``Authorization: Bearer <token>`` (constant-time comparison, as the gRPC gateway's
``BearerAuth``); anything else is a 401 with a JSON body naming the header, before the MCP
session sees it. The server's token is the admin's; a scoped token (``memory token create``)
is looked up by its hash in the store, and the request is served as its principal's
(``shared.client.scoped``: the rule the gateway applies): the tools then see and change only
what the principal may, and a refusal is a tool error ``permission_denied`` (or ``not_found``
for a record it may not see). A server started with no token serves a request without one as
the admin's, as before, and a request with a scoped token as that principal's.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio.to_thread

from integrations.store import RunningStore
from shared.client.bearer import bearer_matches
from shared.client.ports import PortHeldError, port_free
from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.principal import ADMIN, Principal, digest

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def stdio(
    store: StoreAPI | RunningStore,
    *,
    allow_rule_edits: bool,
    project: str | None = None,
    scoped: str | None = None,
) -> None:
    from integrations.mcp_server import build_server

    server = build_server(store, allow_rule_edits=allow_rule_edits, project=project, token=scoped)
    server.run("stdio")


def http_app(
    store: StoreAPI | RunningStore,
    *,
    host: str,
    path: str,
    token: str | None,
    allow_rule_edits: bool,
    project: str | None = None,
    scoped: str | None = None,
) -> App:
    """The streamable-HTTP ASGI app (behind the token check when a token is set). On a
    loopback ``host`` the SDK also refuses requests whose Host header is not loopback (DNS
    rebinding protection)."""
    from integrations.mcp_server import build_server

    server = build_server(store, allow_rule_edits=allow_rule_edits, project=project, token=scoped)
    app: App = server.streamable_http_app(streamable_http_path=path, host=host)
    return BearerGate(app, token, resolve=lambda d: _scoped(store, d))


def _scoped(store: StoreAPI | RunningStore, token_digest: str) -> Principal | None:
    """The principal of the scoped token whose hash is ``token_digest``, if the store knows
    it (a store this server cannot reach, or may not ask, knows none)."""
    target = store.get() if isinstance(store, RunningStore) else store
    try:
        found = target.token_resolve(token_digest)
    except errors.MemoryServiceError:
        return None
    return Principal.from_dict(found) if found else None


def http(
    store: StoreAPI | RunningStore,
    *,
    host: str,
    port: int,
    path: str,
    token: str | None,
    allow_rule_edits: bool,
    project: str | None = None,
    scoped: str | None = None,
) -> None:
    import uvicorn

    app = http_app(
        store,
        host=host,
        path=path,
        token=token,
        allow_rule_edits=allow_rule_edits,
        project=project,
        scoped=scoped,
    )
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    except SystemExit as e:  # uvicorn exits when it cannot bind: say why, typed
        if e.code and port and not port_free(port, host):
            raise PortHeldError(host, port) from None
        raise


PRINCIPAL_KEY = "memory_principal"  # where the request's principal is kept in its ASGI state


def principal_of(scope: Scope) -> Principal | None:
    """The principal ``BearerGate`` resolved for this request (``None``: not gated)."""
    found = (scope.get("state") or {}).get(PRINCIPAL_KEY)
    return found if isinstance(found, Principal) else None


class BearerGate:
    """Resolves each HTTP request's ``Authorization: Bearer <token>`` to its principal (the
    admin for ``token``, a scoped one through ``resolve``), kept in the request's ASGI state;
    refuses a request that has none (with ``token`` set) or whose token is unknown or revoked
    (with no ``token`` too: a wrong credential is never served as the admin's)."""

    def __init__(
        self,
        app: App,
        token: str | None,
        *,
        resolve: Callable[[str], Principal | None] | None = None,
    ) -> None:
        self.app = app
        self._token = token.encode() if token else None
        self._resolve = resolve

    def principal(self, header: bytes) -> Principal | None:
        if self._token is not None and bearer_matches(header, self._token):
            return ADMIN
        scheme, _, credential = header.partition(b" ")
        scoped = None
        if scheme.lower() == b"bearer" and credential and self._resolve is not None:
            scoped = self._resolve(digest(credential.decode("utf-8", "replace")))
        if scoped is not None or self._token is not None or header.strip():
            return scoped  # a credential naming no live token is refused, open server or not
        return ADMIN  # a server with no token: a caller that brings no credential is the admin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)  # lifespan events carry no headers
            return
        got = b""
        for key, value in scope.get("headers") or ():
            if key.lower() == b"authorization":
                got = value
        if self._token is not None and bearer_matches(got, self._token):
            principal: Principal | None = ADMIN
        else:  # a scoped token is looked up in the store: off the event loop
            principal = await anyio.to_thread.run_sync(self.principal, got)
        if principal is not None:
            scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {
                "error": {
                    "category": "unknown",
                    "message": "unauthenticated: missing or wrong "
                    "bearer token (Authorization: Bearer <token>)",
                }
            }
        ).encode()
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})
