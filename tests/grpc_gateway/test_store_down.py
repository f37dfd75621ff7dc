"""An unreachable store over real gRPC → UNAVAILABLE + ``source_unavailable``, which a kernel may
retry.

No stub raises the error here: the gateway serves a real ``shared.client.ray.StoreClient`` whose
actor is missing or was killed in the session cluster, so the error comes from the client's
own transport handling (``get_actor`` → ``ValueError``; a dead handle → ``RayActorError``).
The shared ``memory-store`` actor is never touched: each test uses an actor name of its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path
from typing import Any

import grpc
import pytest

from grpc_gateway.actor import GatewaySettings, server_for
from grpc_gateway.server import CATEGORY_KEY, ERROR_KEY, StoreAPI
from shared.proto.memory.v1 import memory_pb2 as pb
from shared.proto.memory.v1 import memory_pb2_grpc as pb_grpc

pytestmark = pytest.mark.ray

_names = count(1)


def _actor_name(kind: str) -> str:
    return f"memory-store-{kind}-{os.getpid()}-{next(_names)}"


def _client(actor_name: str) -> StoreAPI:
    """What ``grpc_gateway.actor.store_client`` builds, but on an actor name of our own."""
    from shared.client.ray import StoreClient

    return StoreClient(actor_name=actor_name, timeout=30)


@pytest.fixture
def serve() -> Iterator[Callable[[StoreAPI], pb_grpc.MemoryServiceStub]]:
    """``serve(store)`` → a stub on a real gateway (``server_for``, as the actor builds it)."""
    started: list[tuple[Any, grpc.Channel]] = []

    def create(store: StoreAPI) -> pb_grpc.MemoryServiceStub:
        settings = GatewaySettings.from_env({"MEMORY_GRPC_PORT": "0"})
        server, port = server_for(settings, store, serialize=False)
        server.start()
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        started.append((server, channel))
        return pb_grpc.MemoryServiceStub(channel)

    yield create
    for server, channel in started:
        channel.close()
        server.stop(None)


def _record(text: str) -> pb.RecordRequest:
    return pb.RecordRequest(type=1, scope=3, content=[pb.ContentBlock(text=text)])


def _assert_unavailable(call: Callable[..., Any], request: Any) -> pb.MemoryError:
    """The call fails with UNAVAILABLE and a retryable ``source_unavailable`` MemoryError,
    read from the trailers exactly as the conformance suite reads them."""
    with pytest.raises(grpc.RpcError) as info:
        call(request, timeout=60)
    exc = info.value
    assert exc.code() != grpc.StatusCode.UNKNOWN  # memory.v1: never UNKNOWN
    assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc.details()
    trailers = dict(exc.trailing_metadata() or ())
    assert ERROR_KEY in trailers, f"no MemoryError trailer: {exc.details()}"
    error = pb.MemoryError.FromString(trailers[ERROR_KEY])
    assert trailers.get(CATEGORY_KEY) == "source_unavailable"
    assert pb.MemoryErrorCategory.Name(error.category) == (
        "MEMORY_ERROR_CATEGORY_SOURCE_UNAVAILABLE"
    )
    assert error.retryable is True
    assert error.message and error.message == exc.details()
    return error


def test_a_store_actor_that_does_not_exist_is_source_unavailable(
    ray_cluster: Any, serve: Callable[[StoreAPI], pb_grpc.MemoryServiceStub]
) -> None:
    # Given a gateway over a real StoreClient whose actor name has no actor in the cluster
    name = _actor_name("absent")
    with pytest.raises(ValueError):
        ray_cluster.get_actor(name, namespace="memory")
    stub = serve(_client(name))
    # When a read and a write are sent over gRPC, then both are UNAVAILABLE and retryable
    recall = _assert_unavailable(stub.Recall, pb.RecallRequest(query="anything"))
    _assert_unavailable(stub.Record, _record("Nothing can store this"))
    assert name in recall.message  # the client names what is not running


def test_a_killed_store_actor_is_source_unavailable(
    ray_cluster: Any,
    serve: Callable[[StoreAPI], pb_grpc.MemoryServiceStub],
    tmp_path: Path,
    unique_bank: str,
) -> None:
    from store_worker.actor import start

    # Given a store actor of our own behind the gateway, answering (the handle is now cached)
    name = _actor_name("killed")
    handle = start({"MEMORY_DATA_DIR": str(tmp_path / "data")}, name=name)
    try:
        stub = serve(_client(name))
        meta = (("x-memory-bank", unique_bank),)
        written = stub.Record(_record("Killed store probe fig"), metadata=meta, timeout=60)
        found = stub.Recall(pb.RecallRequest(query="probe fig"), metadata=meta, timeout=60)
        assert [r.id for r in found.records] == [written.result.id]
    finally:
        # When the actor dies for good (no restart: Ray would bring it back otherwise)
        ray_cluster.kill(handle, no_restart=True)
    # Then a write on the cached dead handle is UNAVAILABLE (never retried: RayActorError) ...
    write = _assert_unavailable(
        lambda req, **kw: stub.Record(req, metadata=meta, **kw),
        _record("Written after the store died"),
    )
    assert f"{name} is unavailable" in write.message  # the dead-handle path, not a lookup
    # ... and so is a read, once the client looks the name up again
    _assert_unavailable(
        lambda req, **kw: stub.Recall(req, metadata=meta, **kw),
        pb.RecallRequest(query="probe fig"),
    )


def test_health_is_not_serving_while_the_store_is_down(ray_cluster: Any) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    # Given a gateway over a real StoreClient whose actor is not running
    settings = GatewaySettings.from_env({"MEMORY_GRPC_PORT": "0"})
    server, port = server_for(settings, _client(_actor_name("health")), serialize=False)
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            # When a plain grpcio client asks, then the server and each service say NOT_SERVING
            for service in ("", "memory.v1.MemoryService", "memory.store.v1.StoreService"):
                answer = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=60)
                assert answer.status == health_pb2.HealthCheckResponse.NOT_SERVING, service
    finally:
        server.stop(None)
