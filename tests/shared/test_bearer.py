"""``shared.bearer``: the one check of an Authorization header the gateway and MCP share."""

from __future__ import annotations

import pytest

from shared.bearer import bearer_matches

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
