"""``<data_dir>/.state/gateway.json``: where the CLI finds the running gateway
(without Ray)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from shared.client import gateway_file
from shared.contract.config import DEFAULT_DATA_DIR


def test_written_0600_read_back_and_forgotten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORY_GRPC_TOKEN", raising=False)
    token_file = tmp_path / "token"
    token_file.write_text("tok-in-its-file\n")
    written = gateway_file.write(tmp_path, "127.0.0.1:50123", token_file)
    assert written == tmp_path / ".state" / "gateway.json"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600  # it names the token's file
    assert "tok-in-its-file" not in written.read_text()  # the file, never the token
    info = gateway_file.read(tmp_path)
    assert info == gateway_file.GatewayInfo(
        "127.0.0.1:50123", "tok-in-its-file", os.getpid(), str(token_file)
    )
    gateway_file.remove(tmp_path, pid=os.getpid() + 1)  # another gateway's record: kept
    assert gateway_file.read(tmp_path) is not None
    gateway_file.remove(tmp_path, pid=os.getpid())
    assert gateway_file.read(tmp_path) is None and not written.exists()


def test_forget_removes_a_killed_gateways_record_once_its_process_is_gone(tmp_path: Path) -> None:
    # Given a record written by a gateway process that `down` then kills (ray.kill runs none of
    # the actor's clean-up, so the record stayed behind, naming a pid that may be reused)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        gateway_file.write(tmp_path, "127.0.0.1:50123", tmp_path / "token")
        path = gateway_file.path(tmp_path)
        path.write_text(path.read_text().replace(str(os.getpid()), str(child.pid)))
        info = gateway_file.GatewayInfo("127.0.0.1:50123", "tok", child.pid)
        # While it runs, the record stays
        assert gateway_file.forget(tmp_path, info, wait_s=0) is False and path.exists()
        # When it is killed, then forget waits for it to end and removes the record
        child.kill()
        child.wait()
        assert gateway_file.forget(tmp_path, info) is True
        assert not path.exists()
    finally:
        child.kill()
        child.wait()


def test_a_dead_writer_or_a_broken_file_is_no_gateway(tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    path = gateway_file.path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(f'{{"address": "127.0.0.1:1", "token": null, "pid": {child.stdout}}}')
    assert gateway_file.read(tmp_path) is None  # that process has exited
    path.write_text("{not json")
    assert gateway_file.read(tmp_path) is None
    assert gateway_file.read(tmp_path / "missing") is None


@pytest.mark.parametrize(
    ("host", "dial"),
    [
        ("0.0.0.0", "127.0.0.1:9"),
        ("127.0.0.1", "127.0.0.1:9"),
        ("::1", "[::1]:9"),
        ("", "127.0.0.1:9"),
    ],
)
def test_dial_address(host: str, dial: str) -> None:
    assert gateway_file.dial_address(host, 9) == dial


def test_the_default_data_dir_is_the_store_settings_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from shared.contract.config import StoreSettings

    assert gateway_file.DEFAULT_DATA_DIR == DEFAULT_DATA_DIR
    monkeypatch.delenv("MEMORY_DATA_DIR", raising=False)
    assert gateway_file.default_data_dir() == StoreSettings().data_path
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path / "d"))
    assert gateway_file.default_data_dir() == StoreSettings.from_env(dict(os.environ)).data_path


# -- the per-user pointer and the discovery precedence ----------------------------------------


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's state folder and a project folder with no ``./data/memory``, as the cwd."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("MEMORY_DATA_DIR", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return tmp_path / "state"


def test_the_pointer_is_private_holds_no_token_and_goes_with_its_data_dir(
    user: Path, tmp_path: Path
) -> None:
    # Given a gateway recorded in a data dir (with a token), and `up`'s pointer to that dir
    served = tmp_path / "served"
    (tmp_path / "token").write_text("tok")
    gateway_file.write(served, "127.0.0.1:50123", tmp_path / "token")
    pointer = gateway_file.point(served)
    # Then the pointer is this user's, private, and names the data dir only
    assert pointer == user / "agent-memory" / "gateway.json"
    assert stat.S_IMODE(pointer.stat().st_mode) == 0o600
    assert stat.S_IMODE(pointer.parent.stat().st_mode) == 0o700
    assert "tok" not in pointer.read_text() and not list(pointer.parent.glob(".*.tmp"))
    # and a command in another folder finds the gateway through it
    assert gateway_file.discover() == (served, gateway_file.read(served))
    # When `down` removes another data dir's pointer, it stays; its own goes
    gateway_file.unpoint(tmp_path / "elsewhere")
    assert gateway_file.pointed() == served
    gateway_file.unpoint(served)
    assert not pointer.exists() and gateway_file.discover() is None


def test_the_pointer_leads_only_to_a_live_gateway_of_its_data_dir(
    user: Path, tmp_path: Path
) -> None:
    served = tmp_path / "served"
    gateway_file.point(served)
    # no record in the data dir (removed, the folder moved): nothing
    assert gateway_file.discover() is None
    # a record whose process is gone (a crash, a reboot): nothing
    gateway_file.write(served, "127.0.0.1:50123", None)
    path = gateway_file.path(served)
    path.write_text(path.read_text().replace(f'"pid": {os.getpid()}', '"pid": 999999999'))
    assert gateway_file.discover() is None
    # a gateway restarted on another port rewrites the record: the pointer leads to it
    gateway_file.write(served, "127.0.0.1:50999", None)
    assert gateway_file.discover() == (served, gateway_file.read(served))


def test_precedence_env_then_cwd_record_then_pointer(user: Path, tmp_path: Path) -> None:
    pointed, here, chosen = tmp_path / "pointed", Path("data/memory"), tmp_path / "chosen"
    for data_dir, port in ((pointed, 1), (here, 2), (chosen, 3)):
        gateway_file.write(data_dir, f"127.0.0.1:{port}", None)
    gateway_file.point(pointed)
    # ./data/memory's record beats the pointer
    assert gateway_file.discover() == (here.resolve(), gateway_file.read(here))
    # MEMORY_DATA_DIR beats both, and is the only place looked at when set
    os.environ["MEMORY_DATA_DIR"] = str(chosen)
    try:
        assert gateway_file.discover() == (chosen, gateway_file.read(chosen))
        os.environ["MEMORY_DATA_DIR"] = str(tmp_path / "nothing-recorded")
        assert gateway_file.discover() is None
    finally:
        del os.environ["MEMORY_DATA_DIR"]
    gateway_file.remove(here)
    assert gateway_file.discover() == (pointed, gateway_file.read(pointed))


def test_two_users_pointers_never_cross(
    user: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two users (two state folders), each with their own running data dir
    for name in ("ann", "bob"):
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / f"{name}-state"))
        gateway_file.write(tmp_path / name, f"127.0.0.1:{len(name)}", None)
        gateway_file.point(tmp_path / name)
    # Then each finds their own
    for name in ("ann", "bob"):
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / f"{name}-state"))
        assert gateway_file.discover() == (tmp_path / name, gateway_file.read(tmp_path / name))
    # and a pointer another user owns (a shared XDG_STATE_HOME) is never followed
    if os.getuid() == 0:  # only root can give a file away
        os.chown(gateway_file.pointer_path(), 4242, -1)
        assert gateway_file.pointed() is None and gateway_file.discover() is None


def test_the_state_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the spec: must be absolute
    assert gateway_file.state_dir() == tmp_path / ".local" / "state" / "agent-memory"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "s"))
    assert gateway_file.pointer_path() == tmp_path / "s" / "agent-memory" / "gateway.json"
