"""``<data_dir>/.state/gateway.json``: where the CLI finds the running gateway (issue 13)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from shared import gateway_file
from shared.config import DEFAULT_DATA_DIR


def test_written_0600_read_back_and_forgotten(tmp_path: Path) -> None:
    written = gateway_file.write(tmp_path, "127.0.0.1:50123", "tok")
    assert written == tmp_path / ".state" / "gateway.json"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600  # it holds the token
    info = gateway_file.read(tmp_path)
    assert info == gateway_file.GatewayInfo("127.0.0.1:50123", "tok", os.getpid())
    gateway_file.remove(tmp_path, pid=os.getpid() + 1)  # another gateway's record: kept
    assert gateway_file.read(tmp_path) is not None
    gateway_file.remove(tmp_path, pid=os.getpid())
    assert gateway_file.read(tmp_path) is None and not written.exists()


def test_forget_removes_a_killed_gateways_record_once_its_process_is_gone(tmp_path: Path) -> None:
    # Given a record written by a gateway process that `down` then kills (ray.kill runs none of
    # the actor's clean-up, so the record, with its token, stayed behind)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        gateway_file.write(tmp_path, "127.0.0.1:50123", "tok")
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
    from shared.config import StoreSettings

    assert gateway_file.DEFAULT_DATA_DIR == DEFAULT_DATA_DIR
    monkeypatch.delenv("MEMORY_DATA_DIR", raising=False)
    assert gateway_file.default_data_dir() == StoreSettings().data_path
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path / "d"))
    assert gateway_file.default_data_dir() == StoreSettings.from_env(dict(os.environ)).data_path
