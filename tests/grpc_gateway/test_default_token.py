"""Authenticated by default: ``memory grpc`` given no token serves with this user's admin token,
kept in the state folder (0600) and reused across restarts; a client that finds the gateway
through its record reads the token from the file the record names; serving open takes an
opt-in that is announced, also on loopback.

Each gateway is a real ``memory grpc --data-dir`` process, with its own user state folder."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from grpc_gateway.auth import bearer_metadata
from shared.client import gateway_file
from shared.proto.memory.v1 import memory_pb2 as pb
from shared.proto.memory.v1 import memory_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]
MAIN = "import sys\nfrom shared.cli import main\nsys.exit(main())\n"


class User:
    """One user of the machine: a state folder, a data dir, and ``memory`` run as them."""

    def __init__(self, tmp_path: Path) -> None:
        self.state = tmp_path / "state"
        self.data = tmp_path / "data"
        self.token_file = self.state / "agent-memory" / "token"
        self.env = {
            **{k: v for k, v in os.environ.items() if "TOKEN" not in k},
            "PYTHONPATH": str(ROOT),
            "XDG_STATE_HOME": str(self.state),
            "MEMORY_DATA_DIR": str(self.data),
        }
        for name in ("MEMORY_EMBEDDED", "RAY_ADDRESS"):
            self.env.pop(name, None)

    def memory(self, *argv: str, code: int = 0, **env: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", MAIN, *argv],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == code, (argv, done.stdout, done.stderr)
        return done.stdout + done.stderr

    def serve(self, *flags: str, **env: str) -> subprocess.Popen[str]:
        """``memory grpc --data-dir`` in its own process, once it has recorded itself."""
        gateway_file.remove(self.data)
        proc = subprocess.Popen(
            [sys.executable, "-c", MAIN, "grpc", "--grpc-port", "0", "--data-dir",
             str(self.data), *flags],
            env={**self.env, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while gateway_file.read(self.data) is None:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "memory grpc never recorded itself"
            time.sleep(0.05)  # waiting for another process to bind; nothing to join
        return proc

    def address(self) -> str:
        found = gateway_file.read(self.data)
        assert found is not None
        return found.address


def stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.terminate()
    out, err = proc.communicate(timeout=60)
    return out, err


def banks(address: str, metadata: tuple[tuple[str, str], ...] = ()) -> grpc.StatusCode:
    """The status of one memory.v1 call on a fresh channel."""
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        try:
            stub.Recall(pb.RecallRequest(query="deploy"), metadata=metadata, timeout=30)
        except grpc.RpcError as e:
            return e.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


@pytest.fixture
def user(tmp_path: Path) -> Iterator[User]:
    yield User(tmp_path)


def test_a_gateway_given_no_token_makes_one_clients_find_it_and_a_bare_client_is_refused(
    user: User,
) -> None:
    # Given `memory grpc` started with no token and no opt-in
    proc = user.serve()
    try:
        address = user.address()
        token = user.token_file.read_text().strip()
        # Then it made the admin token: private file in a private folder, a long random token
        assert stat.S_IMODE(user.token_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(user.token_file.parent.stat().st_mode) == 0o700
        assert len(token) >= 40
        # a client with no token is refused; with the token, served
        assert banks(address) == grpc.StatusCode.INTERNAL  # memory.v1's `unknown`
        assert banks(address, bearer_metadata("wrong")) == grpc.StatusCode.INTERNAL
        assert banks(address, bearer_metadata(token)) == grpc.StatusCode.OK
        # the CLI, finding the gateway through its record, sends the token by itself
        assert "saved" in user.memory("save", "The deploy script is tools/ship.sh")
        assert "tools/ship.sh" in user.memory("recall", "deploy script")
        # and the token is nowhere but its file: not in the record, nor on the command line
        record = gateway_file.path(user.data).read_text()
        assert token not in record and json.loads(record)["token_file"] == str(user.token_file)
        assert token not in Path(f"/proc/{proc.pid}/cmdline").read_text()
    finally:
        out, err = stop(proc)
    assert token not in out + err  # nor in what it printed, which says where it is
    assert f"bearer token: in {user.token_file}" in out


def test_the_admin_token_is_reused_across_restarts(user: User) -> None:
    first = user.serve()
    try:
        token = user.token_file.read_text().strip()
        made = user.token_file.stat().st_mtime_ns
    finally:
        stop(first)
    again = user.serve()
    try:
        # the same file, untouched, and the token it holds still opens the new gateway
        assert user.token_file.read_text().strip() == token
        assert user.token_file.stat().st_mtime_ns == made
        assert banks(user.address(), bearer_metadata(token)) == grpc.StatusCode.OK
        assert banks(user.address()) == grpc.StatusCode.INTERNAL
    finally:
        stop(again)


@pytest.mark.parametrize(
    ("flags", "env"),
    [(("--no-token",), {}), ((), {"MEMORY_ALLOW_NO_TOKEN": "1"})],
    ids=["flag", "variable"],
)
def test_serving_open_takes_an_opt_in_announced_on_loopback_too(
    user: User, flags: tuple[str, ...], env: dict[str, str]
) -> None:
    proc = user.serve(*flags, **env)
    try:
        found = gateway_file.read(user.data)
        assert found is not None and found.no_token and found.token is None
        assert banks(found.address) == grpc.StatusCode.OK  # open, as asked
        assert not user.token_file.exists()  # none made
    finally:
        _, err = stop(proc)
    assert "WARNING" in err and "NO bearer token" in err and "127.0.0.1" in err


def test_a_token_file_other_users_may_read_is_refused(user: User) -> None:
    # Given an admin token file left readable by everyone (its token may be known)
    user.token_file.parent.mkdir(parents=True)
    user.token_file.write_text("leaked-token\n")
    user.token_file.chmod(0o644)
    # Then the gateway refuses to serve with it, typed, saying what to do; nothing recorded
    err = user.memory("grpc", "--grpc-port", "0", "--data-dir", str(user.data), code=2)
    assert "error: invalid_argument:" in err and "readable by other users" in err
    assert "leaked-token" not in err and gateway_file.read(user.data) is None
    # and `memory token show` will not print it either
    shown = user.memory("token", "show", code=2)
    assert "readable by other users" in shown and "leaked-token" not in shown


def test_memory_token_show_path_and_rotate(user: User) -> None:
    # Before any start there is none to show
    assert "no admin token yet" in user.memory("token", "show", code=2)
    assert user.memory("token", "path").strip() == str(user.token_file)
    proc = user.serve()
    try:
        token = user.token_file.read_text().strip()
        assert user.memory("token", "show").strip() == token
        # When it is rotated, the file holds a new token (the running gateway keeps the old)
        assert "restart" in user.memory("token", "rotate")
        rotated = user.memory("token", "show").strip()
        assert rotated != token and len(rotated) >= 40
        assert stat.S_IMODE(user.token_file.stat().st_mode) == 0o600
        assert banks(user.address(), bearer_metadata(token)) == grpc.StatusCode.OK
    finally:
        stop(proc)
    # and the next start serves with the new one
    again = user.serve()
    try:
        assert banks(user.address(), bearer_metadata(rotated)) == grpc.StatusCode.OK
        assert banks(user.address(), bearer_metadata(token)) == grpc.StatusCode.INTERNAL
    finally:
        stop(again)
