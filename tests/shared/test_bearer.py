"""``shared.client.bearer``: the one check of an Authorization header the gateway and MCP share."""

from __future__ import annotations

import pytest

from shared.client.bearer import bearer_matches

TOKEN = b"s3cr3t-t0ken"


@pytest.mark.parametrize(
    "header",
    ["Bearer s3cr3t-t0ken", "bearer s3cr3t-t0ken", "BEARER s3cr3t-t0ken"],
)
def test_the_scheme_is_case_insensitive(header: str) -> None:
    assert bearer_matches(header, TOKEN)
    assert bearer_matches(header.encode(), TOKEN)


@pytest.mark.parametrize(
    "header", ["", "Bearer", "Bearer ", "Basic s3cr3t-t0ken", "Bearer s3cr3t-t0ke", "s3cr3t-t0ken",
               "Bearer s3cr3t-t0ken2", "Bearers3cr3t-t0ken",
               "Bearer s3cr3t-t0ken ", " Bearer s3cr3t-t0ken"],
)  # fmt: skip
def test_anything_else_is_refused(header: str) -> None:
    assert not bearer_matches(header, TOKEN)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.0.3", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("192.168.1.20", False),
        ("memory.internal", False),
    ],
)
def test_only_this_machine_reaches_a_loopback_host(host: str, loopback: bool) -> None:
    from shared.client.bearer import is_loopback

    assert is_loopback(host) is loopback


def test_a_server_beyond_loopback_needs_a_token_or_an_explicit_yes() -> None:
    from shared.client.bearer import refused_open

    why = refused_open("the gRPC gateway", "0.0.0.0", None, {})
    assert why is not None and "no bearer token" in why and "MEMORY_ALLOW_NO_TOKEN=1" in why
    assert refused_open("x", "0.0.0.0", "s3cret-token", {}) is None
    assert refused_open("x", "127.0.0.1", None, {}) is None
    assert refused_open("x", "0.0.0.0", None, {"MEMORY_ALLOW_NO_TOKEN": "1"}) is None
    assert refused_open("x", "0.0.0.0", None, {"MEMORY_ALLOW_NO_TOKEN": "yes"}) is not None
