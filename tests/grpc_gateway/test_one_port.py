"""One port, one store: a second gateway on a port another one holds is refused at start.

grpcio binds with SO_REUSEPORT by default: a second ``memory grpc --data-dir B`` bound the port
the gateway of data dir A held, and the kernel split new connections between the two stores.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from grpc_gateway import actor
from grpc_gateway.auth import bearer_metadata
from grpc_gateway.server import PortHeldError, build_server
from shared.cli import build_parser
from shared.client import admin_token, connect, gateway_file
from shared.proto.memory.v1 import memory_pb2 as pb
from shared.proto.memory.v1 import memory_pb2_grpc as pb_grpc


def _grpc_args(data_dir: Path, port: int) -> Any:
    return build_parser().parse_args(
        ["grpc", "--grpc-port", str(port), "--data-dir", str(data_dir)]
    )


@pytest.fixture
def gateway_a(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, int]]:
    """``memory grpc --data-dir A`` serving on a port the kernel picked (with the admin token
    it made: ``_token`` reads it through A's record, as a client does)."""
    monkeypatch.delenv("MEMORY_GRPC_TOKEN", raising=False)
    monkeypatch.delenv("MEMORY_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./data/memory record of this machine's own `up`
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # nor its pointer
    data_a = tmp_path / "a"
    stop = threading.Event()
    serving = threading.Thread(target=actor.serve_from_args, args=(_grpc_args(data_a, 0), stop))
    serving.start()
    try:
        deadline = time.monotonic() + 30
        while (found := gateway_file.read(data_a)) is None and time.monotonic() < deadline:
            time.sleep(0.05)  # polling the record the server writes once it listens
        assert found is not None
        yield data_a, int(found.address.rsplit(":", 1)[1])
    finally:
        stop.set()
        serving.join(30)


def _token() -> tuple[tuple[str, str], ...]:
    """The admin token's call metadata (the token the gateways here serve with)."""
    return bearer_metadata(admin_token.load(admin_token.path()))


def _all_reach(port: int, memory_id: str, connections: int = 20) -> list[str]:
    """The text each of ``connections`` new channels reads for ``memory_id``."""
    seen = []
    for _ in range(connections):
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            got = stub.GetRecord(pb.GetRecordRequest(id=memory_id), metadata=_token(), timeout=10)
            seen.append(got.record.content[0].text)
    return seen


def _record(port: int, text: str) -> str:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        block = pb.ContentBlock(text=text)
        request = pb.RecordRequest(type=1, scope=3, content=[block])
        return str(stub.Record(request, metadata=_token(), timeout=10).result.id)


def test_a_second_gateway_on_a_held_port_is_refused_and_the_first_keeps_every_connection(
    gateway_a: tuple[Path, int], tmp_path: Path
) -> None:
    _, port = gateway_a
    mid = _record(port, "Store A keeps the deploy notes")
    # When `memory grpc --data-dir B` asks for the port A's gateway holds
    data_b = tmp_path / "b"
    stop = threading.Event()
    stop.set()
    with pytest.raises(PortHeldError, match=f"127.0.0.1:{port}") as refused:
        actor.serve_from_args(_grpc_args(data_b, port), stop)
    # Then it is refused, typed (memory.v1's source_unavailable, not worth retrying)
    assert refused.value.category == "source_unavailable" and not refused.value.retryable
    assert "taken by another process" in refused.value.message
    assert gateway_file.read(data_b) is None  # never served, nothing recorded for B
    # And every new connection still reaches store A
    assert _all_reach(port, mid) == ["Store A keeps the deploy notes"] * 20


def test_the_refusal_names_the_gateway_holding_the_port_when_its_record_is_found(
    gateway_a: tuple[Path, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_a, port = gateway_a
    monkeypatch.setenv("MEMORY_DATA_DIR", str(data_a))  # where this shell's CLI looks
    stop = threading.Event()
    stop.set()
    with pytest.raises(PortHeldError) as refused:
        actor.serve_from_args(_grpc_args(tmp_path / "b", port), stop)
    holder = gateway_file.read(data_a)
    assert holder is not None
    assert f"the gateway of data dir {data_a} (pid {holder.pid})" in refused.value.message


def test_the_server_itself_binds_without_so_reuseport(gateway_a: tuple[Path, int]) -> None:
    # Past the check at start (a race): grpcio's bind itself fails, typed
    data_a, port = gateway_a
    mid = _record(port, "Only store A answers here")
    other = connect(f"file:{data_a.parent / 'b'}")
    try:
        with pytest.raises(PortHeldError, match=f":{port}"):
            build_server(other, port=port)
    finally:
        other.close()
    assert _all_reach(port, mid) == ["Only store A answers here"] * 20


def test_up_refuses_an_explicit_grpc_port_that_is_taken_before_starting_the_gateway(
    gateway_a: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, port = gateway_a
    monkeypatch.setattr(actor, "_running", lambda name: False)

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the gateway actor was started")

    monkeypatch.setattr(actor, "start_detached", never)
    with pytest.raises(PortHeldError, match=f":{port}"):
        actor.start({"MEMORY_GRPC_PORT": str(port)})


def test_memory_up_refuses_a_taken_grpc_port_before_any_cluster_starts(
    gateway_a: tuple[Path, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from shared import cli

    data_a, port = gateway_a
    gateway_file.point(data_a)  # the holder, as this user's `up` left it

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a Ray cluster was started or joined")

    monkeypatch.setattr(cli, "_join_or_start", never)
    # When `memory up --grpc-port P` asks for the port A's gateway holds, for data dir B
    argv = ["up", "--data-dir", str(tmp_path / "b"), "--grpc-port", str(port)]
    err = io.StringIO()
    code = cli.run(argv, out=io.StringIO(), err=err)
    # Then it is refused, typed (exit 2, one line), naming the holder, before any Ray start
    holder = gateway_file.read(data_a)
    assert holder is not None and code == 2
    line = err.getvalue()
    assert line.startswith("error: source_unavailable: cannot listen on 127.0.0.1:")
    assert f":{port}: the port is taken by the gateway of data dir {data_a} (pid {holder.pid})" in (
        line
    )
    assert "--grpc-port" in line and line.count("\n") == 1
    assert not (tmp_path / "b").exists()  # nothing of B made


def test_up_moves_off_a_taken_default_port_instead_of_refusing_it(tmp_path: Path) -> None:
    import contextlib
    import socket

    from grpc_gateway.spec import DEFAULT_PORT

    # Given the default port taken (here, or already by another server on this machine)
    with socket.socket() as sock:
        with contextlib.suppress(OSError):  # taken already: the case at hand too
            sock.bind(("127.0.0.1", DEFAULT_PORT))
        assert not actor.port_free(DEFAULT_PORT)
        # Then `up`'s check before the cluster lets it through (the gateway takes a free port)
        env = {"MEMORY_DATA_DIR": str(tmp_path / "d"), "MEMORY_GRPC_TOKEN": "t"}
        assert actor.before_up(env) == {}
        # while the same port asked for is refused
        with pytest.raises(PortHeldError):
            actor.before_up({**env, "MEMORY_GRPC_PORT": str(DEFAULT_PORT)})


def _ipv6_loopback() -> bool:
    import socket

    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.parametrize("host", ["localhost", "[::1]"])
def test_a_second_gateway_on_the_other_loopback_of_a_held_port_is_refused(
    gateway_a: tuple[Path, int], host: str
) -> None:
    """A gateway on 127.0.0.1:P and another on [::1]:P (or on ``localhost``, which grpcio
    binds on whichever of the two it can) would share ``localhost:P``: a client dialling that
    name reaches whichever store the resolver tries first."""
    if not _ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    data_a, port = gateway_a
    other = connect(f"file:{data_a.parent / 'b'}")
    try:
        with pytest.raises(PortHeldError, match=f":{port}"):
            build_server(other, host=host, port=port)
    finally:
        other.close()
