"""Checking an ``Authorization: Bearer <token>`` header, for the gRPC gateway and the MCP server.

The scheme is case-insensitive (RFC 7235 §2.1: ``bearer``, ``BEARER``); the token is compared
in constant time (``hmac.compare_digest``), so the answer's timing says nothing about it.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping


def bearer_matches(header: bytes | str, token: bytes) -> bool:
    """Whether ``header`` is exactly ``Bearer <token>``, the scheme in any case (a stray
    blank is refused: a token is compared byte for byte)."""
    raw = header.encode() if isinstance(header, str) else header
    scheme, _, credential = raw.partition(b" ")
    ok_scheme = scheme.lower() == b"bearer"
    return hmac.compare_digest(credential, token) and ok_scheme


# A client's own token (a scoped one from `memory token create`): used instead of the token the
# gateway's record holds (the admin's), so an agent given one acts as its principal.
CLIENT_TOKEN_ENV = "MEMORY_TOKEN"


def client_token(env: Mapping[str, str], recorded: str | None) -> str | None:
    """The bearer a client sends: ``MEMORY_TOKEN`` when set, else ``recorded``."""
    return env.get(CLIENT_TOKEN_ENV) or recorded


# Set to 1 to serve with no token on an interface other than loopback, knowingly (a private
# network whose every host may read and write every memory).
OPEN_ENV = "MEMORY_ALLOW_NO_TOKEN"


def is_loopback(host: str) -> bool:
    """Whether only this machine reaches a server bound to ``host``: ``localhost`` or a
    loopback address (127.0.0.0/8, ::1). Any other name, and the any-interface forms
    (``0.0.0.0``, ``::``, ``""``), are not."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def refused_open(what: str, host: str, token: str | None, env: Mapping[str, str]) -> str | None:
    """Why a server must not start: bound to ``host`` beyond loopback with no bearer token,
    every host that reaches it would read, write and erase every memory. ``None`` when it
    may (loopback, a token, or ``MEMORY_ALLOW_NO_TOKEN=1``)."""
    if token or is_loopback(host) or env.get(OPEN_ENV) == "1":
        return None
    return (
        f"{what} would listen on {host!r} with no bearer token: anyone who reaches it could "
        "read and change every memory. Drop --no-token (your admin token is used), listen on "
        f"127.0.0.1, or set {OPEN_ENV}=1 to serve it open knowingly"
    )
