"""Running the MCP server: stdio, or streamable HTTP on loopback behind a bearer token (the one
given, else the admin token: ``integrations.cli``; none only when opted into).

The token check is a small ASGI wrapper in front of the SDK's app: every HTTP request must
carry ``Authorization: Bearer <token>`` (constant-time comparison, as the gRPC gateway's
``BearerAuth``); anything else is a 401 with a JSON body naming the header, before the MCP
session sees it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from integrations.store import RunningStore
from shared.client.bearer import bearer_matches
from shared.client.ports import PortHeldError, port_free
from shared.contract.api import StoreAPI

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def stdio(
    store: StoreAPI | RunningStore, *, allow_rule_edits: bool, project: str | None = None
) -> None:
    from integrations.mcp_server import build_server

    build_server(store, allow_rule_edits=allow_rule_edits, project=project).run("stdio")


def http_app(
    store: StoreAPI | RunningStore,
    *,
    host: str,
    path: str,
    token: str | None,
    allow_rule_edits: bool,
    project: str | None = None,
) -> App:
    """The streamable-HTTP ASGI app (behind the token check when a token is set). On a
    loopback ``host`` the SDK also refuses requests whose Host header is not loopback (DNS
    rebinding protection)."""
    from integrations.mcp_server import build_server

    server = build_server(store, allow_rule_edits=allow_rule_edits, project=project)
    app: App = server.streamable_http_app(streamable_http_path=path, host=host)
    return BearerGate(app, token) if token else app


def http(
    store: StoreAPI | RunningStore,
    *,
    host: str,
    port: int,
    path: str,
    token: str | None,
    allow_rule_edits: bool,
    project: str | None = None,
) -> None:
    import uvicorn

    app = http_app(
        store,
        host=host,
        path=path,
        token=token,
        allow_rule_edits=allow_rule_edits,
        project=project,
    )
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    except SystemExit as e:  # uvicorn exits when it cannot bind: say why, typed
        if e.code and port and not port_free(port, host):
            raise PortHeldError(host, port) from None
        raise


class BearerGate:
    """Refuses HTTP requests without ``Authorization: Bearer <token>``."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)  # lifespan events carry no headers
            return
        got = b""
        for key, value in scope.get("headers") or ():
            if key.lower() == b"authorization":
                got = value
        if bearer_matches(got, self._token):
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
