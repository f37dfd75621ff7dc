"""The integrations take a scoped token (``memory token create``) and act as its principal:
the memory-tool backend (``token=``), ``memory mcp --scoped-token-file`` over the running
store's gateway and over an embedded data dir, and ``memory hook install`` (which writes the
token file's path into the settings, never the token)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from integrations.memory_tool import MemoryToolBackend
from shared.contract import errors
from tests.integrations.test_mcp_server import call, refused, run

HERE, THERE = "/srv/here", "/srv/there"


def test_memory_tool_backend_acts_as_the_token(embedded: Any) -> None:
    glob = embedded.save("The team ships on Fridays").memory.id
    embedded.save("There builds with bazel", scope="project", project=THERE)
    token = embedded.token_create("reader", read_only=True, projects=[HERE])["token"]
    tool = MemoryToolBackend(embedded, project=THERE, token=token)
    shown = tool.execute({"command": "view", "path": "/memories/main/memories.md"})
    assert glob in shown and "bazel" not in shown  # THERE is not the token's project
    before = embedded.list().total
    with pytest.raises(errors.PermissionDeniedError, match="'write' permission"):
        tool.execute(
            {
                "command": "insert",
                "path": "/memories/main/memories.md",
                "insert_line": 0,
                "insert_text": "Planted fact",
            }
        )
    assert embedded.list().total == before
    with pytest.raises(errors.UnknownError, match="unauthenticated"):
        MemoryToolBackend(embedded, token="not-a-token")


def _token_file(tmp_path: Path, token: str) -> Path:
    path = tmp_path / "scoped-token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    return path


def test_mcp_over_the_running_store_acts_as_the_token(
    memory_cmd: list[str], memory_env: dict[str, str], fresh_store: Any, tmp_path: Path
) -> None:
    from grpc_gateway.server import build_server as build_gateway
    from shared.client import gateway_file

    served = tmp_path / "served"
    store = fresh_store(data_dir=served)
    store.bank_create("other")
    store.save("Other bank lunch is at noon", bank="other")
    token = store.token_create("mainonly", banks=["main"], read_only=True)["token"]
    gateway, port = build_gateway(store, port=0, token="admin-token")
    gateway.start()
    admin_file = tmp_path / "admin-token"  # the record names the admin token's file
    admin_file.write_text("admin-token\n")
    gateway_file.write(served, f"127.0.0.1:{port}", admin_file)
    env = {**memory_env, "MEMORY_DATA_DIR": str(served), "XDG_STATE_HOME": str(tmp_path)}
    env.pop("MEMORY_TOKEN", None)
    params = StdioServerParameters(
        command=memory_cmd[0],
        args=[*memory_cmd[1:], "mcp", "--scoped-token-file", str(_token_file(tmp_path, token))],
        env=env,
    )

    async def body(client: Client) -> None:
        category, text = await refused(client, "recall", query="lunch noon", bank="other")
        assert category == "permission_denied" and "'bank' permission" in text
        category, _ = await refused(client, "remember", text="Planted", confirm_new=True)
        assert category == "permission_denied"
        assert (await call(client, "recall", query="lunch noon"))["bank"] == "main"

    try:
        run(params, body)
    finally:
        gateway.stop(None)
    assert store.list().total == 0  # main holds nothing: the refused remember wrote nothing


def test_mcp_on_an_embedded_data_dir_acts_as_the_token(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    from shared.client import connect

    data = tmp_path / "data"
    store = connect(f"file:{data}")
    token = store.token_create("reader", read_only=True)["token"]
    store.close()
    params = StdioServerParameters(
        command=memory_cmd[0],
        args=[
            *memory_cmd[1:],
            "mcp",
            "--data-dir",
            str(data),
            "--scoped-token-file",
            str(_token_file(tmp_path, token)),
        ],
        env=memory_env,
    )

    async def body(client: Client) -> None:
        category, text = await refused(client, "remember", text="Planted", confirm_new=True)
        assert category == "permission_denied" and "'write' permission" in text

    run(params, body)


def test_hook_install_names_the_token_file_never_the_token(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    path = _token_file(tmp_path, "tok-never-in-settings")
    done = subprocess.run(
        [*memory_cmd, "hook", "install", "claude-code", "--scoped-token-file", str(path)],
        env=memory_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "tok-never-in-settings" not in done.stdout
    stop = json.loads(done.stdout)["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert stop == f"memory hook Stop --scoped-token-file {path}"
