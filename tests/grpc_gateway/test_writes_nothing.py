"""Trust boundaries on a real gateway over an embedded store: a health check, a reflection
request and an unauthenticated call write nothing (the default bank materializes only on real
first use), and request bytes no handler can parse keep the error contract (a typed status and
the ``memory-error-category`` trailer, never grpcio's bare ``Exception deserializing request!``)
and write nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from grpc_gateway.auth import bearer_metadata
from grpc_gateway.server import CATEGORY_KEY, ERROR_KEY, build_server
from shared.client import wire as store_wire
from shared.proto.memory.store.v1 import store_pb2 as spb
from shared.proto.memory.v1 import memory_pb2 as pb
from store_worker.core import MemoryStore

TOKEN = "secret-token"


def _varint(n: int) -> bytes:
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited field, written by hand (the library refuses to build this deep)."""
    return bytes([number << 3 | 2]) + _varint(len(payload)) + payload


def _nested_struct(depth: int) -> bytes:
    """A ``google.protobuf.Struct`` ``{"k": {"k": ...}}`` nested ``depth`` deep."""
    struct = b""
    for _ in range(depth):  # Struct.fields[k] = Value{struct_value (5): Struct}
        struct = _field(1, _field(1, b"k") + _field(2, _field(5, struct)))
    return struct


UNDECODABLE = {
    "garbage": b"\xff\xff",
    "struct-5000-deep": _field(1, _nested_struct(5000)),  # ConfigureRequest.config
}


def _tree(root: Path) -> dict[str, bytes]:
    """Every file and folder under ``root``: path → bytes (a folder: b"/")."""
    return {
        str(p.relative_to(root)): (b"/" if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[..., tuple[grpc.Channel, Path]]]:
    """``served(token=None)`` → (channel, data dir): a gateway on an embedded store."""
    started: list[tuple[Any, grpc.Channel, MemoryStore]] = []

    def create(token: str | None = None) -> tuple[grpc.Channel, Path]:
        data_dir = tmp_path / f"data{len(started)}"
        store = MemoryStore(data_dir)
        server, port = build_server(store, port=0, token=token)
        server.start()
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        started.append((server, channel, store))
        return channel, data_dir

    yield create
    for server, channel, store in started:
        channel.close()
        server.stop(None)
        store.close()


def test_health_reflection_and_refused_calls_write_nothing(served: Any) -> None:
    channel, data_dir = served(token=TOKEN)
    before = _tree(data_dir)
    health = health_pb2_grpc.HealthStub(channel)
    answer = health.Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert answer.status == health_pb2.HealthCheckResponse.SERVING
    for request in (
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol=store_wire.SERVICE),
    ):
        reflect = reflection_pb2_grpc.ServerReflectionStub(channel)
        with pytest.raises(grpc.RpcError) as refused:  # reflection needs the token
            list(reflect.ServerReflectionInfo(iter([request]), timeout=10))
        assert refused.value.code() == grpc.StatusCode.INTERNAL
    call = channel.unary_unary(
        f"/{store_wire.SERVICE}/Call",
        request_serializer=spb.StoreCall.SerializeToString,
        response_deserializer=spb.StoreResult.FromString,
    )
    for op in ("bank_list", "save"):
        with pytest.raises(grpc.RpcError) as refused:
            call(spb.StoreCall(op=op, args_json='{"text": "x"}'), timeout=10)
        assert "bearer token" in (refused.value.details() or "")
    assert _tree(data_dir) == before
    assert not (data_dir / "main").exists()
    # real first use, with the token, still materializes the default bank
    call(spb.StoreCall(op="bank_list"), timeout=10, metadata=bearer_metadata(TOKEN))
    assert (data_dir / "main" / "bank.yaml").exists()


def test_reflection_without_a_token_writes_nothing(served: Any) -> None:
    channel, data_dir = served()
    before = _tree(data_dir)
    reflect = reflection_pb2_grpc.ServerReflectionStub(channel)
    ask = reflection_pb2.ServerReflectionRequest(file_containing_symbol=store_wire.SERVICE)
    (found,) = list(reflect.ServerReflectionInfo(iter([ask]), timeout=10))
    assert found.file_descriptor_response.file_descriptor_proto
    assert health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest()).status
    assert _tree(data_dir) == before


def _raw(channel: grpc.Channel, method: str, payload: bytes) -> grpc.RpcError:
    call = channel.unary_unary(method)  # bytes as they are: no serializer
    with pytest.raises(grpc.RpcError) as info:
        call(payload, timeout=10, metadata=bearer_metadata(TOKEN))
    return info.value


@pytest.mark.parametrize(
    ("method", "payload"),
    [
        ("/memory.v1.MemoryService/Configure", UNDECODABLE["garbage"]),
        ("/memory.v1.MemoryService/Configure", UNDECODABLE["struct-5000-deep"]),
        ("/memory.v1.MemoryTools/Remember", UNDECODABLE["garbage"]),
    ],
    ids=["configure-garbage", "configure-struct-5000-deep", "remember-garbage"],
)
def test_undecodable_memory_v1_request_keeps_the_error_contract(
    served: Any, method: str, payload: bytes
) -> None:
    channel, data_dir = served(token=TOKEN)
    before = _tree(data_dir)
    failure: Any = _raw(channel, method, payload)
    trailers = dict(failure.trailing_metadata() or ())
    # malformed input outside the seven categories is `unknown` (docs/PROTOCOLS.md#errors)
    assert (failure.code(), trailers[CATEGORY_KEY]) == (grpc.StatusCode.INTERNAL, "unknown")
    error = pb.MemoryError.FromString(trailers[ERROR_KEY])
    assert error.category == pb.MEMORY_ERROR_CATEGORY_UNKNOWN
    assert error.retryable is False
    assert "undecodable" in error.message
    assert "Exception deserializing" not in (failure.details() or "")
    assert _tree(data_dir) == before


@pytest.mark.parametrize("payload", UNDECODABLE.values(), ids=UNDECODABLE.keys())
def test_undecodable_store_call_is_invalid_argument(served: Any, payload: bytes) -> None:
    channel, data_dir = served(token=TOKEN)
    before = _tree(data_dir)
    failure: Any = _raw(channel, f"/{store_wire.SERVICE}/Call", payload)
    trailers = dict(failure.trailing_metadata() or ())
    assert failure.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert trailers[store_wire.CATEGORY_KEY] == "invalid_argument"
    error = spb.StoreError.FromString(trailers[store_wire.ERROR_KEY])
    assert (error.category, error.kind) == ("invalid_argument", "InvalidArgumentError")
    assert "undecodable memory.store.v1.StoreCall" in error.message
    assert _tree(data_dir) == before


def test_a_decodable_request_still_runs(served: Any) -> None:
    channel, _ = served(token=TOKEN)
    call = channel.unary_unary(
        "/memory.v1.MemoryService/Describe", response_deserializer=pb.DescribeResponse.FromString
    )
    payload = pb.DescribeRequest().SerializeToString()
    answer = call(payload, timeout=10, metadata=bearer_metadata(TOKEN))
    assert answer.producer.name == "memory-store"
