"""memory.store.v1 and standard gRPC citizenship on a real gateway over an embedded store
(docs/PROTOCOLS.md#memorystorev1-the-stores-own-service): the proto serves exactly ``StoreAPI``; bad
arguments are refused as the store's own ``invalid_argument`` before the store runs;
``grpc.health.v1`` answers SERVING to a plain grpcio client (without the bearer token); reflection
lists the services."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from grpc_gateway import store_service
from grpc_gateway.server import build_server
from shared.client import wire as store_wire
from shared.client.grpc import GrpcStoreClient
from shared.contract import errors, ops
from shared.contract.errors import InvalidArgumentError
from shared.contract.op import REGISTRY
from shared.proto.memory.store.v1 import store_pb2 as spb
from store_worker.core import MemoryStore

Serve = Callable[..., tuple[str, MemoryStore]]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    """``serve(token=None)`` → (address, store): a gateway on an embedded store; all stop after."""
    started: list[tuple[Any, MemoryStore]] = []

    def create(token: str | None = None) -> tuple[str, MemoryStore]:
        store = MemoryStore(tmp_path / f"data{len(started)}")
        server, port = build_server(store, port=0, token=token)
        server.start()
        started.append((server, store))
        return f"127.0.0.1:{port}", store

    yield create
    for server, store in started:
        server.stop(None)
        store.close()


def _raw(address: str, op: str, args_json: str, **kw: Any) -> spb.StoreResult:
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/{store_wire.SERVICE}/Call",
            request_serializer=spb.StoreCall.SerializeToString,
            response_deserializer=spb.StoreResult.FromString,
        )
        request = spb.StoreCall(op=op, args_json=args_json)
        result: spb.StoreResult = call(request, timeout=10, **kw)
        return result


def _store_error(e: grpc.RpcError) -> spb.StoreError:
    trailers: dict[str, Any] = dict(cast(Any, e).trailing_metadata() or ())
    assert (
        trailers[store_wire.CATEGORY_KEY]
        == spb.StoreError.FromString(trailers[store_wire.ERROR_KEY]).category
    )
    return spb.StoreError.FromString(trailers[store_wire.ERROR_KEY])


def test_one_rpc_carries_every_op_but_the_callback_ones() -> None:
    assert [m.name for m in store_service.DESCRIPTOR.methods] == ["Call"]
    assert spb.DESCRIPTOR.package == "memory.store.v1"
    not_carried = {name for name, op in REGISTRY.items() if not op.wire}
    assert {"subscribe", "outbox_watch"} <= not_carried
    for name in not_carried:
        with pytest.raises(InvalidArgumentError, match="not served over gRPC"):
            store_wire.served(name)


def test_an_unknown_op_is_invalid_argument_and_writes_nothing(serve: Serve) -> None:
    address, store = serve()
    for name in ("drop_everything", "subscribe", ""):
        with pytest.raises(grpc.RpcError) as caught:
            _raw(address, name, "{}")
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert _store_error(caught.value).category == "invalid_argument"
    assert store.list().total == 0


@pytest.mark.parametrize(
    ("op", "args_json", "says"),
    [
        ("save", '{"text": "x", "colour": "red"}', "unknown argument colour"),
        ("save", "{}", "missing argument text"),
        ("recall", '{"query": "x", "limit": "many"}', "limit"),
        ("get", "[1, 2]", "must be a JSON object"),
        ("get", "{not json", "not JSON"),
        ("configure", '{"config": {"data_dir": "/elsewhere"}}', "data_dir cannot be configured"),
        # a model folder anywhere on the store's host: its weights loaded, maybe its code run
        (
            "configure",
            '{"config": {"embedding_model": "local:/tmp/someones-folder"}}',
            "local model folder cannot be configured",
        ),
        (
            "configure",
            '{"config": {"embeddings_enabled": true, "embedding_model": "local:../x"}}',
            "local model folder cannot be configured",
        ),
    ],
)
def test_bad_arguments_are_invalid_argument_and_write_nothing(
    serve: Serve, op: str, args_json: str, says: str
) -> None:
    address, store = serve()
    with pytest.raises(grpc.RpcError) as caught:
        _raw(address, op, args_json)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    detail = _store_error(caught.value)
    assert (detail.category, detail.kind) == ("invalid_argument", "InvalidArgumentError")
    assert says in detail.message
    assert store.list().total == 0 and store.describe()["data_dir"] != "/elsewhere"


def test_batched_writes_cross_the_wire_as_typed_answers(serve: Serve) -> None:
    address, store = serve()
    client = GrpcStoreClient(address)
    try:
        saved = client.save_many([{"text": "The API runs on port 8080"}, {"text": "Port 9090"}])
        old, new = (r.memory.id for r in saved.results)
        merged = client.supersede_many([{"id": old, "superseded_by": new, "reinforce": True}])
        assert merged.results[0].memory.superseded_by == new
        survivor = merged.results[0].survivor
        assert merged.results[0].reinforced
        assert survivor.revision == saved.results[1].memory.revision + 1
        with pytest.raises(errors.NotFoundError):
            client.supersede_many([{"id": new, "superseded_by": "no-such-memory"}])
        assert [m.id for m in store.list().memories] == [new]
    finally:
        client.close()


def test_errors_keep_the_leaf_and_a_dead_gateway_is_source_unavailable(serve: Serve) -> None:
    address, _ = serve()
    client = GrpcStoreClient(address, timeout=10)
    mem = client.save("The build uses make").memory
    client.delete(mem.id)
    with pytest.raises(errors.ConflictError) as caught:  # a leaf under invalid_argument
        client.update(mem.id, text="again")
    assert caught.value.category == "invalid_argument" and mem.id in caught.value.message
    with pytest.raises(errors.NotFoundError):
        client.get("no-such-memory")
    with pytest.raises(errors.InvalidArgumentError, match="events_since"):
        client.subscribe("me", print)
    client.close()
    dead = GrpcStoreClient("127.0.0.1:1", timeout=2)
    with pytest.raises(errors.SourceUnavailableError) as down:
        dead.bank_list()
    assert down.value.retryable and "127.0.0.1:1" in down.value.message


def test_a_token_guards_the_store_service_but_not_health(serve: Serve) -> None:
    address, _ = serve(token="s3cret")
    with pytest.raises(errors.UnknownError, match="bearer token"):
        GrpcStoreClient(address, timeout=10).bank_list()
    assert GrpcStoreClient(address, token="s3cret", timeout=10).ping() == "pong"
    with grpc.insecure_channel(address) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=""), timeout=10
        )
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_health_check_from_a_plain_grpcio_client_answers_serving(serve: Serve) -> None:
    address, _ = serve()
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "memory.v1.MemoryService", store_wire.SERVICE):
            answer = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING, service
        with pytest.raises(grpc.RpcError) as unknown:
            stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


def test_health_watch_starts_from_the_store_now(serve: Serve) -> None:
    address, _ = serve()
    with grpc.insecure_channel(address) as channel:
        stream = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service=store_wire.SERVICE), timeout=10
        )
        first = next(iter(stream))
        stream.cancel()
    assert first.status == health_pb2.HealthCheckResponse.SERVING


def test_health_follows_the_store(serve: Serve) -> None:
    from grpc_gateway import health

    answers = iter([None, errors.SourceUnavailableError("store gone")])

    def probe() -> None:
        failure = next(answers)
        if failure is not None:
            raise failure

    checker = health.StoreHealth(probe, ["memory.v1.MemoryService"])
    request = health_pb2.HealthCheckRequest(service="")
    assert checker._server_status[""] == health_pb2.HealthCheckResponse.NOT_SERVING  # not yet
    assert checker.refresh() is True
    assert checker.refresh() is False
    assert checker.Check(request, None).status == health_pb2.HealthCheckResponse.NOT_SERVING


def test_reflection_lists_the_services(serve: Serve) -> None:
    address, _ = serve()
    with grpc.insecure_channel(address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        (answer,) = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
        listed = {s.name for s in answer.list_services_response.service}
        assert {
            "memory.v1.MemoryService",
            "memory.v1.MemoryTools",
            "memory.store.v1.StoreService",
            "grpc.health.v1.Health",
            "grpc.reflection.v1alpha.ServerReflection",
        } <= listed
        # and the schema of the store service is there for grpcurl
        ask = reflection_pb2.ServerReflectionRequest(file_containing_symbol=store_wire.SERVICE)
        (found,) = list(stub.ServerReflectionInfo(iter([ask]), timeout=10))
        assert found.file_descriptor_response.file_descriptor_proto


@pytest.mark.parametrize("text", ["", "{}", '{"query": "café ☕"}', "x" * 200, "y" * 70_000])
def test_an_op_round_trips_through_the_wire(text: str) -> None:
    op = ops.Recall(text, type_filter=iter(["user"]), limit=3)
    back = store_wire.decode_op("recall", store_wire.encode_args(op))
    assert back == op
    saved = ops.SaveMany([ops.Save(text, tags=["a"]), {"text": "b"}])
    assert store_wire.decode_op("save_many", store_wire.encode_args(saved)).items == [
        {"text": text, "tags": ["a"]},
        {"text": "b"},
    ]


def test_the_gateways_own_calls_are_answered_before_the_store(tmp_path: Path) -> None:
    # Given a gateway that answers `gateway.status` itself (as the Ray actor does: it has Ray)
    from shared.client import lifecycle

    seen: list[dict[str, Any]] = []

    def status(args: dict[str, Any]) -> dict[str, Any]:
        seen.append(args)
        return {"dashboard_url": "", "workers": {"store": True}, "shards": []}

    store = MemoryStore(tmp_path / "data")
    server, port = build_server(store, port=0, gateway_calls={lifecycle.STATUS_CALL: status})
    server.start()
    address = f"127.0.0.1:{port}"
    try:
        # When the CLI asks it over memory.store.v1's one RPC
        reply = _raw(address, lifecycle.STATUS_CALL, '{"workers": {"store": "memory-store"}}')
        # Then the gateway answered, with the arguments as sent; the store served no op
        assert json.loads(reply.result_json)["workers"] == {"store": True}
        assert seen == [{"workers": {"store": "memory-store"}}]
        # bad arguments are the caller's invalid_argument, as for a store op
        with pytest.raises(grpc.RpcError) as caught:
            _raw(address, lifecycle.STATUS_CALL, "[1]")
        assert _store_error(caught.value).category == "invalid_argument"
        # and a call the gateway does not answer is not a store op either (a gateway with no
        # cluster: `memory grpc --data-dir`; the CLI then goes over Ray)
        with pytest.raises(grpc.RpcError) as caught:
            _raw(address, lifecycle.METRICS_CALL, "{}")
        assert _store_error(caught.value).category == "invalid_argument"
    finally:
        server.stop(None)
        store.close()
