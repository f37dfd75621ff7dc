"""Checking an ``Authorization: Bearer <token>`` header, for the gRPC gateway and the MCP server.

The scheme is case-insensitive (RFC 7235 §2.1: ``bearer``, ``BEARER``); the token is compared
in constant time (``hmac.compare_digest``), so the answer's timing says nothing about it.
"""

from __future__ import annotations

import hmac


def bearer_matches(header: bytes | str, token: bytes) -> bool:
    """Whether ``header`` is exactly ``Bearer <token>``, the scheme in any case (a stray
    blank is refused: a token is compared byte for byte)."""
    raw = header.encode() if isinstance(header, str) else header
    scheme, _, credential = raw.partition(b" ")
    ok_scheme = scheme.lower() == b"bearer"
    return hmac.compare_digest(credential, token) and ok_scheme
