"""The ``memory-grpc`` actor forwarding to the ``memory-store`` actor in the session cluster."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest

from grpc_gateway.actor import GatewaySettings
from grpc_gateway.auth import bearer_metadata
from grpc_gateway.spec import ACTOR_NAME, WORKER
from shared.contract.errors import InvalidArgumentError
from shared.proto.memory.v1 import memory_pb2 as pb
from shared.proto.memory.v1 import memory_pb2_grpc as pb_grpc


@pytest.mark.ray
def test_gateway_actor_forwards_to_the_store_actor(
    ray_cluster: Any, store_actor: Any, unique_bank: str
) -> None:
    # Given the store actor and a gateway actor on an ephemeral port with a token
    handle = WORKER.start({"MEMORY_GRPC_PORT": "0", "MEMORY_GRPC_TOKEN": "t0k"})
    try:
        address = ray_cluster.get(handle.address.remote())
        channel = grpc.insecure_channel(address)
        stub = pb_grpc.MemoryServiceStub(channel)
        meta = (*bearer_metadata("t0k"), ("x-memory-bank", unique_bank))
        # When a record is written and read back over gRPC
        written = stub.Record(
            pb.RecordRequest(type=1, scope=3, content=[pb.ContentBlock(text="Gateway probe fig")]),
            metadata=meta,
            timeout=30,
        )
        recalled = stub.Recall(pb.RecallRequest(query="gateway fig"), metadata=meta, timeout=30)
        with pytest.raises(grpc.RpcError) as info:
            stub.GetRecord(pb.GetRecordRequest(id="ghost"), metadata=meta, timeout=30)
        # Then the store actor holds it, and errors keep their exact codes across both hops
        assert [r.id for r in recalled.records] == [written.result.id]
        assert store_actor.get(written.result.id, bank=unique_bank).memory.text == (
            "Gateway probe fig"
        )
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        channel.close()
    finally:
        ray_cluster.kill(handle, no_restart=True)
    # and stopping the gateway leaves the store and its data untouched
    assert store_actor.get(written.result.id, bank=unique_bank).memory.id == written.result.id
    with pytest.raises(ValueError):
        ray_cluster.get_actor(ACTOR_NAME, namespace="memory")


def test_the_gateway_actor_says_where_it_serves_in_its_repr(
    tmp_path: Any, monkeypatch: Any
) -> None:
    from grpc_gateway import actor as gateway_actor
    from store_worker.core import MemoryStore

    # Given the gateway's Ray shell over an embedded store (the actor's class without Ray)
    store = MemoryStore(tmp_path / "data")
    monkeypatch.setattr(gateway_actor, "store_client", lambda: store)
    env = {"MEMORY_GRPC_PORT": "0", "MEMORY_DATA_DIR": str(tmp_path / "data")}
    shell = gateway_actor.GatewayActor(env)
    try:
        # Then its repr, the dashboard's Actors page Repr column, names its address and folder
        # (and that it asks for a token: the user's admin token, given none)
        assert repr(shell) == (
            f"GatewayActor({shell.address()}, bearer token; {tmp_path / 'data'})"
        )
        assert not shell.address().endswith(":0")
    finally:
        shell.stop()
        store.close()


def test_gateway_settings_come_from_memory_grpc_variables() -> None:
    settings = GatewaySettings.from_env({"MEMORY_GRPC_PORT": "50999", "MEMORY_GRPC_BANK": "work"})
    assert (settings.host, settings.port, settings.bank, settings.token) == (
        "127.0.0.1",
        50999,
        "work",
        None,
    )
    with pytest.raises(InvalidArgumentError):
        GatewaySettings.from_env({"MEMORY_GRPC_PORT": "70000"})


def test_memory_up_grpc_flags_start_the_gateway_beside_the_defaults() -> None:
    from shared.cli import build_parser

    args = build_parser().parse_args(["up", "--grpc-port", "50999"])
    # `up` asks for the console beside the default workers (`--no-console` leaves it out)
    assert args.also_start == ["console", "grpc"]
    assert args.worker_env == {"MEMORY_GRPC_PORT": "50999"}
    assert build_parser().parse_args(["up", "--grpc"]).also_start == ["console", "grpc"]
    assert build_parser().parse_args(["up"]).also_start == ["console"]
    assert build_parser().parse_args(["up", "--no-console", "--grpc"]).also_start == ["grpc"]
    # on by default: the CLI reaches the store through it without loading Ray
    assert WORKER.default_on is True and WORKER.actor_name == "memory-grpc"


def test_memory_up_grpc_starts_store_and_gateway_with_the_port(monkeypatch: Any) -> None:
    import io

    from shared import cli
    from shared.cli import cluster
    from shared.client import ray as client

    started: list[tuple[list[str], dict[str, str]]] = []

    def fake_start(specs: Any, env: dict[str, str]) -> list[Any]:
        started.append(([s.name for s in specs], env))
        return [(s, None) for s in specs]

    class FakeClient:
        def __init__(self, **kw: Any) -> None:
            pass

        def describe(self) -> dict[str, str]:
            return {"data_dir": "/tmp/x"}

    monkeypatch.setattr(cli, "_join_or_start", lambda ctx, opts: {"dashboard_url": ""})
    monkeypatch.setattr(cluster, "start_workers", fake_start)
    monkeypatch.setattr(client, "StoreClient", FakeClient)
    assert cli.run(["up", "--grpc-port", "50999"], out=io.StringIO()) == 0
    assert cli.run(["up"], out=io.StringIO()) == 0
    (with_grpc, env), (plain, _) = started
    assert with_grpc[0] == "store" and "grpc" in with_grpc
    assert env["MEMORY_GRPC_PORT"] == "50999"
    assert "grpc" in plain  # a bare `up` starts the gateway too: the CLI needs it


def test_memory_up_says_where_the_token_is_never_the_token(
    monkeypatch: Any, tmp_path: Any
) -> None:
    import io

    from shared import cli
    from shared.cli import cluster
    from shared.client import admin_token, gateway_file
    from shared.client import ray as client

    served = tmp_path / "served"
    sent: list[dict[str, str]] = []

    def fake_start(specs: Any, env: dict[str, str]) -> list[Any]:
        # the gateway as the actor records itself: the file its token is in
        sent.append(env)
        gateway_file.write(served, "127.0.0.1:50999", env["MEMORY_GRPC_TOKEN_FILE"])
        return [(s, None) for s in specs]

    class FakeClient:
        def __init__(self, **kw: Any) -> None:
            pass

        def describe(self) -> dict[str, str]:
            return {"data_dir": str(served)}

    monkeypatch.delenv("MEMORY_GRPC_TOKEN", raising=False)
    monkeypatch.delenv("MEMORY_ALLOW_NO_TOKEN", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(cli, "_join_or_start", lambda ctx, opts: {"dashboard_url": ""})
    monkeypatch.setattr(cluster, "start_workers", fake_start)
    monkeypatch.setattr(client, "StoreClient", FakeClient)
    out = io.StringIO()
    assert cli.run(["up", "--data-dir", str(served)], out=out) == 0
    # the token was made before the workers started, and only its path reaches them
    token_file = admin_token.path()
    token = token_file.read_text().strip()
    assert sent[0]["MEMORY_GRPC_TOKEN_FILE"] == str(token_file)
    assert token not in json.dumps(sent)
    printed = out.getvalue()
    assert f"token:     in {token_file}" in printed and "memory token show" in printed
    assert token not in printed


def test_memory_grpc_verb_serves_an_embedded_store(tmp_path: Any, capsys: Any) -> None:
    import threading

    from grpc_gateway.actor import serve_from_args
    from shared.cli import build_parser

    args = build_parser().parse_args(["grpc", "--grpc-port", "0", "--data-dir", str(tmp_path)])
    stop = threading.Event()
    stop.set()  # serve, then stop at once: proves the verb binds and shuts down cleanly
    assert serve_from_args(args, stop) == 0
    printed = capsys.readouterr().out
    assert "memory.v1 gRPC on 127.0.0.1:" in printed and ":0 " not in printed


def test_memory_grpc_on_a_data_dir_is_found_by_the_cli_while_it_serves(tmp_path: Any) -> None:
    import threading
    import time

    from grpc_gateway.actor import serve_from_args
    from shared.cli import build_parser
    from shared.client import gateway_file
    from shared.client.grpc import GrpcStoreClient

    args = build_parser().parse_args(["grpc", "--grpc-port", "0", "--data-dir", str(tmp_path)])
    stop = threading.Event()
    serving = threading.Thread(target=serve_from_args, args=(args, stop))
    serving.start()
    try:
        deadline = time.monotonic() + 30
        while (found := gateway_file.read(tmp_path)) is None and time.monotonic() < deadline:
            time.sleep(0.05)  # polling the file the server writes once it listens
        assert found is not None and not found.address.endswith(":0")
        # a client that finds it through its record sends the token the record leads to
        assert found.token is not None and found.token_file is not None
        with GrpcStoreClient(found.address, token=found.token, timeout=10) as client:
            assert client.ping() == "pong"
    finally:
        stop.set()
        serving.join(30)
    assert gateway_file.read(tmp_path) is None  # forgotten on the way out


@pytest.mark.parametrize("verb", ["grpc", "up"])
def test_the_token_flag_is_refused_with_what_to_use_instead(
    verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from shared.cli import build_parser

    # a token on the command line shows in `ps` to every user of the machine
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args([verb, "--grpc-token", "s3cret"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "MEMORY_GRPC_TOKEN" in err and "--grpc-token-file" in err


def test_the_token_comes_from_a_file_on_grpc_and_up(tmp_path: Any) -> None:
    from grpc_gateway.actor import GatewaySettings, authenticate, env_from_args
    from shared.cli import build_parser

    path = tmp_path / "token"
    path.write_text("s3cret\n")
    served = build_parser().parse_args(["grpc", "--grpc-token-file", str(path)])
    env = env_from_args(served, {})
    # the path travels (the record names it for clients), never the token itself
    assert env == {"MEMORY_GRPC_TOKEN_FILE": str(path)}
    settings = authenticate(GatewaySettings.from_env(env), env)
    assert (settings.token, settings.token_file) == ("s3cret", str(path))
    up = build_parser().parse_args(["up", "--grpc-token-file", str(path)])
    assert up.worker_env == {"MEMORY_GRPC_TOKEN_FILE": str(path)}
    assert up.also_start == ["console", "grpc"]


def test_up_no_token_reaches_the_gateway_and_is_announced_before_the_cluster_starts(
    capsys: pytest.CaptureFixture[str], tmp_path: Any, monkeypatch: Any
) -> None:
    from grpc_gateway.actor import before_up
    from shared.cli import build_parser
    from shared.client import admin_token

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    up = build_parser().parse_args(["up", "--no-token"])
    assert up.worker_env == {"MEMORY_GRPC_NO_TOKEN": "1"}
    # `up` runs this before it starts or joins a cluster: the opt-in is said on stderr
    assert before_up({**up.worker_env, "MEMORY_DATA_DIR": str(tmp_path / "d")}) == {}
    err = capsys.readouterr().err
    assert "WARNING: the gRPC gateway on 127.0.0.1 serves with NO bearer token" in err
    assert not admin_token.path().exists()  # none made
    # and given nothing, the admin token is made now and only its path handed on
    handed = before_up({"MEMORY_DATA_DIR": str(tmp_path / "d")})
    assert handed == {"MEMORY_GRPC_TOKEN_FILE": str(admin_token.path())}
    assert "WARNING" not in capsys.readouterr().err


@pytest.mark.parametrize("content", [None, "", "two\nlines\n", b"\xff"])
def test_a_bad_token_file_is_a_usage_error(
    tmp_path: Any, content: str | bytes | None, capsys: pytest.CaptureFixture[str]
) -> None:
    from shared.cli import build_parser

    path = tmp_path / "token"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["grpc", "--grpc-token-file", str(path)])
    assert caught.value.code == 2
    assert "token file" in capsys.readouterr().err


def test_memory_grpc_beyond_loopback_with_no_token_is_refused_before_it_binds(
    tmp_path: Any, monkeypatch: Any
) -> None:
    import threading

    import pytest

    from grpc_gateway.actor import serve_from_args
    from shared.cli import build_parser
    from shared.client import gateway_file
    from shared.contract.errors import InvalidArgumentError

    monkeypatch.delenv("MEMORY_GRPC_TOKEN", raising=False)
    monkeypatch.delenv("MEMORY_ALLOW_NO_TOKEN", raising=False)
    argv = ["grpc", "--grpc-host", "0.0.0.0", "--grpc-port", "0", "--data-dir", str(tmp_path)]
    stop = threading.Event()
    stop.set()
    # --no-token alone is not enough beyond loopback
    with pytest.raises(InvalidArgumentError, match="no bearer token"):
        serve_from_args(build_parser().parse_args([*argv, "--no-token"]), stop)
    assert gateway_file.read(tmp_path) is None  # never served, nothing recorded
    # asked for knowingly, it serves
    monkeypatch.setenv("MEMORY_ALLOW_NO_TOKEN", "1")
    assert serve_from_args(build_parser().parse_args([*argv, "--no-token"]), stop) == 0
