"""The optional bearer token: a wrong or missing token is refused as one of memory.v1's seven
error categories (``unknown`` → INTERNAL: the seven have none for authentication, and no status
outside the mapping may reach a kernel), says
which header is wanted, and writes nothing; the right one passes."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from grpc_gateway.auth import bearer_metadata
from shared.contract.errors import InvalidArgumentError
from shared.proto.memory.v1 import memory_pb2 as pb


def _record() -> pb.RecordRequest:
    return pb.RecordRequest(type=1, scope=3, content=[pb.ContentBlock(text="The user codes in Go")])


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        bearer_metadata("wrong-token"),
        (("authorization", "secret-token"),),  # no Bearer scheme
        (("authorization", "Bearer secret-token "),),
    ],
    ids=["missing", "wrong", "no-scheme", "trailing-space"],
)
def test_wrong_bearer_token_is_refused_and_writes_nothing(
    make_gateway: Any, rpc_error: Any, snapshot: Any, metadata: Any
) -> None:
    gw = make_gateway(token="secret-token")
    gw.memory.Record(_record(), metadata=bearer_metadata("secret-token"))
    before = snapshot(gw.data_dir)
    for method, req in (
        (gw.memory.Record, _record()),
        (gw.memory.Describe, pb.DescribeRequest()),
        (gw.tools.Forget, pb.ForgetRequest(id="the-user-codes-go")),
    ):
        failure = rpc_error(method, req, metadata=metadata)
        assert (failure.code, failure.category_name) == (grpc.StatusCode.INTERNAL, "unknown")
        assert failure.error.category == pb.MEMORY_ERROR_CATEGORY_UNKNOWN
        assert failure.error.retryable is False
        assert "bearer token" in failure.error.message
        assert "authorization: Bearer" in failure.error.message
    assert snapshot(gw.data_dir) == before


def test_right_bearer_token_passes(make_gateway: Any) -> None:
    gw = make_gateway(token="secret-token")
    ok = gw.memory.Describe(pb.DescribeRequest(), metadata=bearer_metadata("secret-token"))
    assert ok.producer.name == "memory-store"
    # the scheme is case-insensitive (RFC 7235 §2.1)
    lower = (("authorization", "bearer secret-token"),)
    assert gw.memory.Describe(pb.DescribeRequest(), metadata=lower).producer.name


def test_no_token_configured_needs_no_metadata(gw: Any) -> None:
    assert gw.memory.Describe(pb.DescribeRequest()).producer.name


def test_empty_token_is_refused_at_build_time() -> None:
    from grpc_gateway.auth import BearerAuth

    with pytest.raises(InvalidArgumentError):
        BearerAuth("", lambda *a: None)
