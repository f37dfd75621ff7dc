"""Who may use the console: the one place every request's token is checked (``Gate``).

Today a token is the gateway's bearer token (``MEMORY_GRPC_TOKEN``), or the console's own
(``MEMORY_CONSOLE_TOKEN``, else a random one made at start), and it makes its holder the
``admin`` principal, who may read and change everything, and approve what only a person may
(the ``admin`` scope: a proposed learned rule). When principals with scopes come,
``Gate.principal`` is the one function that changes: it maps a token to a principal and its
scopes, and every page and form already asks it, naming the scope it needs.

A browser signs in once with the token in the URL ``memory up`` prints (``/login?token=...``):
the token goes into an HttpOnly, SameSite=Strict cookie and the URL is cleaned. A script may
send ``Authorization: Bearer <token>`` instead.

Every form carries a CSRF token (``Gate.csrf``): an HMAC of the session's token under a key
made at start, checked on every POST before anything runs (a synchronizer token bound to the
session; the SameSite cookie is a second fence).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Literal

from shared.contract.errors import MemoryServiceError

Scope = Literal["read", "write", "admin"]
COOKIE = "memory_console"
CSRF_FIELD = "csrf"


class Unauthenticated(MemoryServiceError):
    """No token, or not one this console knows (HTTP 401)."""

    category = "unauthenticated"


class Forbidden(MemoryServiceError):
    """A known principal without the scope the action needs, or a form without its CSRF token
    (HTTP 403)."""

    category = "permission_denied"


@dataclass(frozen=True)
class Principal:
    """Who is asking, and what they may do."""

    name: str
    scopes: frozenset[str]


ADMIN = Principal("admin", frozenset({"read", "write", "admin"}))


class Gate:
    """Maps tokens to principals and checks each request's scope and CSRF token."""

    def __init__(self, *tokens: str | None) -> None:
        self.tokens = tuple(t for t in tokens if t)
        if not self.tokens:
            raise ValueError("the console needs at least one token")
        self._key = secrets.token_bytes(32)  # signs CSRF tokens and consolidation plans

    @property
    def token(self) -> str:
        """The token to print in the sign-in URL."""
        return self.tokens[0]

    def principal(self, token: str | None) -> Principal:
        """THE check: the principal a token stands for (today: any known token is admin)."""
        if token and any(hmac.compare_digest(token, known) for known in self.tokens):
            return ADMIN
        raise Unauthenticated(
            "sign in with the console URL `memory up` (or `memory console`) printed"
        )

    def authorize(self, token: str | None, need: Scope, csrf: str | None = None) -> Principal:
        """The principal behind ``token`` if it holds ``need``; a write also needs the form's
        CSRF token (so does an ``admin`` action). Raises ``Unauthenticated`` or ``Forbidden``."""
        who = self.principal(token)
        if need not in who.scopes:
            raise Forbidden(f"{who.name} may not {need} here")
        if need != "read" and not (csrf and hmac.compare_digest(csrf, self.csrf(token or ""))):
            raise Forbidden("the form's CSRF token is missing or stale: reload the page")
        return who

    def csrf(self, token: str) -> str:
        return self.sign(b"csrf:" + token.encode())

    def sign(self, data: bytes) -> str:
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()

    def signed(self, data: bytes, signature: str) -> bool:
        return hmac.compare_digest(self.sign(data), signature)


def new_token() -> str:
    return secrets.token_urlsafe(24)
