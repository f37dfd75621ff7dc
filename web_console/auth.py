"""Who may use the console: the one place every request's token becomes a principal (``Gate``).

The console uses the gateway's principals (``shared.contract.principal``, README "Trust
model"):

- the admin token (the gateway's configured one, ``MEMORY_GRPC_TOKEN`` or its token file, else
  this user's admin token, ``shared.client.admin_token``) is the ``admin`` principal, and so is
  its console sign-in key (``shared.client.console_file.login_key``, an HMAC of it), which the
  URL ``memory up`` prints carries instead of the token;
- a scoped token (``memory token create``) is looked up by its hash in the store's token
  registry (``token_resolve``) at every request, so a revoked token is refused at the next
  one: nothing is cached beyond the request;
- served open (``--no-token`` / ``MEMORY_ALLOW_NO_TOKEN=1``, announced at start) a request is
  the admin's unless it carries a scoped token, which then limits it, as on an open gateway.

``Gate.authorize`` is a coarse first fence per route (a read-only principal gets no write, a
scoped one no admin page); every store call a page makes then goes through
``shared.client.scoped.Scoped`` as that principal (``web_console.app.Page.store``), the same
enforcement layer the gateway uses: a bank outside its banks is refused, a memory it may not
see is not found.

A browser signs in once with the URL ``memory up`` prints (``/login?token=<sign-in key>``), or
with a scoped token at ``/login?token=<token>``:
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
from typing import Literal

from shared.client.console_file import login_key
from shared.contract.api import StoreAPI
from shared.contract.errors import MemoryServiceError
from shared.contract.principal import ADMIN, Principal, digest

Scope = Literal["read", "write", "admin"]
COOKIE = "memory_console"
CSRF_FIELD = "csrf"

__all__ = ["ADMIN", "COOKIE", "CSRF_FIELD", "Forbidden", "Gate", "Principal", "Unauthenticated"]


class Unauthenticated(MemoryServiceError):
    """No token, or not one this console knows (HTTP 401)."""

    category = "unauthenticated"


class Forbidden(MemoryServiceError):
    """A known principal without the permission the action needs, or a form without its CSRF
    token (HTTP 403)."""

    category = "permission_denied"


def may(who: Principal, need: Scope) -> bool:
    """Whether ``who`` holds ``need``: every principal reads (its own part), a read-write one
    writes, only the admin administers."""
    if need == "admin":
        return who.admin
    if need == "write":
        return who.admin or not who.read_only
    return True


class Gate:
    """Maps tokens to principals and checks each request's permission and CSRF token.

    ``admin`` is the admin token (``None``: served open, opted into); ``store`` the store
    whose token registry resolves scoped tokens (``build_app`` binds the console's own)."""

    def __init__(
        self, admin: str | None, *, store: StoreAPI | None = None, open: bool = False
    ) -> None:
        if not admin and not open:
            raise ValueError("the console needs the admin token, or to be served open")
        self.admin = admin or None
        # what signs in as the admin: the token, and the key the printed URL carries
        self._admin = (admin.encode(), login_key(admin).encode()) if admin else ()
        self.store = store
        self._key = secrets.token_bytes(32)  # signs CSRF tokens and consolidation plans

    @property
    def open(self) -> bool:
        return self.admin is None

    def bind(self, store: StoreAPI) -> None:
        """Resolve scoped tokens in ``store``'s registry (unless one was given)."""
        if self.store is None:
            self.store = store

    def principal(self, token: str | None) -> Principal:
        """THE check: the principal ``token`` stands for, asked afresh each request."""
        if token and any(hmac.compare_digest(token.encode(), k) for k in self._admin):
            return ADMIN
        if token and self.store is not None:
            found = self.store.token_resolve(digest(token))
            if found:
                return Principal.from_dict(found)
        if self.open:
            return ADMIN  # served open: every caller is the admin, unless it says otherwise
        raise Unauthenticated(
            "sign in with the console URL `memory up` (or `memory console`) printed, or a "
            "token from `memory token create` (a revoked one is refused)"
        )

    def authorize(
        self, token: str | None, need: Scope, csrf: str | None = None, *, form: bool = True
    ) -> Principal:
        """The principal behind ``token`` if it holds ``need``; a form (a POST) that is not a
        read also needs its CSRF token. Raises ``Unauthenticated`` or ``Forbidden``."""
        who = self.principal(token)
        if not may(who, need):
            what = "is read-only" if need == "write" else "is not the admin"
            raise Forbidden(f"permission denied: {who.name} {what}: this needs {need!r}")
        if (
            form
            and need != "read"
            and not (csrf and hmac.compare_digest(csrf, self.csrf(token or "")))
        ):
            raise Forbidden("the form's CSRF token is missing or stale: reload the page")
        return who

    def csrf(self, token: str) -> str:
        return self.sign(b"csrf:" + token.encode())

    def sign(self, data: bytes) -> str:
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()

    def signed(self, data: bytes, signature: str) -> bool:
        return hmac.compare_digest(self.sign(data), signature)
