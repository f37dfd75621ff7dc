"""Fixtures of the gateway tests: a real gRPC server on an ephemeral 127.0.0.1 port, serving
a real ``MemoryStore`` on ``tmp_path`` through the real servicers (no Ray)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from grpc_gateway.server import CATEGORY_KEY, ERROR_KEY, build_server
from shared.client.grpc import GrpcStoreClient
from shared.contract.clock import FakeClock
from shared.proto.memory.v1 import memory_pb2 as pb
from shared.proto.memory.v1 import memory_pb2_grpc as pb_grpc
from store_worker.core import MemoryStore

# memory.v1's error taxonomy (docs/PROTOCOLS.md#errors): each of the seven categories maps to
# one gRPC status code, written out here, not imported from the code under test.
SPEC_CODES = {
    "not_found": "NOT_FOUND",
    "invalid_type": "INVALID_ARGUMENT",
    "ratification_unsupported": "FAILED_PRECONDITION",
    "budget_exceeded": "RESOURCE_EXHAUSTED",
    "source_unavailable": "UNAVAILABLE",
    "unknown": "INTERNAL",
    "invalid_scope": "INVALID_ARGUMENT",
}


@dataclass
class Gateway:
    store: MemoryStore
    clock: FakeClock
    memory: pb_grpc.MemoryServiceStub
    tools: pb_grpc.MemoryToolsStub
    data_dir: Path


@pytest.fixture
def make_gateway(tmp_path: Path) -> Iterator[Callable[..., Gateway]]:
    """``make_gateway(store=None, token=None, **settings)`` → a served gateway; all stop after."""
    started: list[tuple[Any, Any]] = []

    def create(*, store: Any = None, token: str | None = None, **settings: Any) -> Gateway:
        clock = FakeClock()
        data_dir = tmp_path / f"data{len(started)}"
        real = MemoryStore(data_dir, clock=clock)
        if settings:
            real.configure(settings)
        server, port = build_server(store or real, port=0, token=token)
        server.start()
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        started.append((server, channel))
        return Gateway(
            store=real,
            clock=clock,
            memory=pb_grpc.MemoryServiceStub(channel),
            tools=pb_grpc.MemoryToolsStub(channel),
            data_dir=data_dir,
        )

    yield create
    for server, channel in started:
        channel.close()
        server.stop(None)


@pytest.fixture
def gw(make_gateway: Callable[..., Gateway]) -> Gateway:
    return make_gateway()


@pytest.fixture
def rgw(make_gateway: Callable[..., Gateway]) -> Gateway:
    """A gateway over a store with ratification on."""
    return make_gateway(ratification=True)


@dataclass
class Failure:
    code: grpc.StatusCode
    error: pb.MemoryError
    category_name: str
    details: str


def _failure(exc: grpc.RpcError) -> Failure:
    trailers = dict(exc.trailing_metadata() or ())
    assert ERROR_KEY in trailers, f"no MemoryError trailer on {exc.code()}: {exc.details()}"
    return Failure(
        code=exc.code(),
        error=pb.MemoryError.FromString(trailers[ERROR_KEY]),
        category_name=str(trailers.get(CATEGORY_KEY, "")),
        details=exc.details() or "",
    )


@pytest.fixture
def rpc_error() -> Callable[..., Failure]:
    """``rpc_error(stub.Method, request, **call_kwargs)`` → the typed failure (must fail)."""

    def call(method: Callable[..., Any], request: Any, **kwargs: Any) -> Failure:
        with pytest.raises(grpc.RpcError) as info:
            method(request, timeout=10, **kwargs)
        failure = _failure(info.value)
        assert failure.code != grpc.StatusCode.UNKNOWN  # memory.v1: never UNKNOWN
        return failure

    return call


def snapshot_dir(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture
def snapshot() -> Callable[[Path], dict[str, bytes]]:
    """Every file under a folder, path → bytes (to prove bad input writes nothing)."""
    return snapshot_dir


class LinkedAgent:
    """A gateway with the admin and a scoped agent (bank main, project ``APP``) as two
    clients; the agent's session ``MINE`` (claimed by its first use) is linked below the
    admin's session ``KERNEL``, so the admin's session records are in its lineage but not
    the agent's to see."""

    ADMIN_TOKEN = "admin-token-for-tests"
    APP = "/srv/app"
    MINE = "sess-agent"
    KERNEL = "sess-kernel"

    def __init__(self, root: Path) -> None:
        self.store = MemoryStore(root / "data", clock=FakeClock())
        self.server, port = build_server(self.store, port=0, token=self.ADMIN_TOKEN)
        self.server.start()
        self.address = f"127.0.0.1:{port}"
        self.admin = GrpcStoreClient(self.address, token=self.ADMIN_TOKEN, timeout=10)
        created = self.admin.token_create("agent", banks=["main"], projects=[self.APP])
        self.token = created["token"]
        self.agent = GrpcStoreClient(self.address, token=self.token, timeout=10)
        self.agent.pre_generate(self.MINE)  # the agent's session: its first use claims it
        self.admin.pre_generate(self.KERNEL)
        self.admin.link_session(self.MINE, self.KERNEL)

    def close(self) -> None:
        self.agent.close()
        self.admin.close()
        self.server.stop(None)
        self.store.close()
