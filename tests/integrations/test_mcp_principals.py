"""``memory mcp --transport http`` serves each request as its bearer token's principal, driven
by the MCP SDK's own client: the server's token is the admin's, a scoped token (``memory token
create``) sees and changes only its banks, projects and sessions, with the rule the gateway
applies (``shared.client.scoped``), and a refusal writes nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from shared.client import connect
from tests.integrations.test_mcp_server import call, refused, served_http

ADMIN = "admin-s3cret"
HERE, THERE = "/srv/here", "/srv/there"


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


@pytest.fixture
def served(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> Iterator[dict[str, Any]]:
    """A data dir seeded as the admin, its tokens, and an MCP server over HTTP on it."""
    data = tmp_path / "data"
    store = connect(f"file:{data}")
    ids = {
        "global": store.save("The team ships on Fridays").memory.id,
        "here": store.save("Here builds with make", scope="project", project=HERE).memory.id,
        "there": store.save("There builds with bazel", scope="project", project=THERE).memory.id,
    }
    store.bank_create("other")
    ids["other"] = store.save("Other bank lunch is at noon", bank="other").memory.id
    tokens = {
        "here": store.token_create("here", projects=[HERE])["token"],
        "reader": store.token_create("reader", read_only=True)["token"],
        "main": store.token_create("mainonly", banks=["main"])["token"],
        "one": store.token_create("one")["token"],
        "two": store.token_create("two")["token"],
    }
    store.close()
    env = {**memory_env, "MEMORY_MCP_TOKEN": ADMIN}
    with served_http(memory_cmd, env, data, cwd=tmp_path) as url:
        yield {"url": url, "ids": ids, "tokens": tokens, "data": data}


def as_token(url: str, token: str, body: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                await body(client)

    anyio.run(main)


def test_an_unknown_token_is_refused_before_mcp(served: dict[str, Any]) -> None:
    wrong = httpx2.post(
        served["url"],
        json={},
        headers={"accept": "application/json", "authorization": "Bearer not-a-token"},
    )
    assert wrong.status_code == 401


def test_read_only_token_cannot_write_and_writes_nothing(served: dict[str, Any]) -> None:
    before = _files(served["data"])

    async def body(client: Client) -> None:
        category, text = await refused(client, "remember", text="Planted rule", confirm_new=True)
        assert category == "permission_denied" and "'write' permission" in text
        category, _ = await refused(client, "forget", id=served["ids"]["global"])
        assert category == "permission_denied"
        found = await call(client, "recall", query="Fridays ships")
        assert [m["id"] for m in found["memories"]] == [served["ids"]["global"]]

    as_token(served["url"], served["tokens"]["reader"], body)
    assert _files(served["data"]) == before


def test_bank_scoped_token_cannot_see_another_bank(served: dict[str, Any]) -> None:
    async def body(client: Client) -> None:
        category, text = await refused(client, "recall", query="lunch noon", bank="other")
        assert category == "permission_denied" and "'bank' permission" in text
        category, _ = await refused(client, "forget", id=served["ids"]["other"], bank="other")
        assert category == "permission_denied"
        banks = await client.read_resource("memory://banks")
        assert '"main"' in banks.contents[0].text and '"other"' not in banks.contents[0].text  # type: ignore[union-attr]

    as_token(served["url"], served["tokens"]["main"], body)

    async def admin(client: Client) -> None:  # the admin's token sees every bank
        found = await call(client, "recall", query="lunch noon", bank="other")
        assert [m["id"] for m in found["memories"]] == [served["ids"]["other"]]

    as_token(served["url"], ADMIN, admin)


def test_another_projects_memory_is_not_found_as_on_the_gateway(served: dict[str, Any]) -> None:
    before = _files(served["data"])

    async def body(client: Client) -> None:
        for tool, args in (
            ("forget", {}),
            ("pin", {}),
            ("supersede", {"by": served["ids"]["global"]}),
        ):
            category, _ = await refused(client, tool, id=served["ids"]["there"], **args)
            assert category == "not_found", tool
        category, text = await refused(client, "recall", query="bazel", project=THERE)
        assert category == "permission_denied" and "'project' permission" in text
        found = await call(client, "recall", query="builds make", project=HERE)
        assert served["ids"]["here"] in [m["id"] for m in found["memories"]]

    as_token(served["url"], served["tokens"]["here"], body)
    assert _files(served["data"]) == before


def test_a_session_is_its_first_users(served: dict[str, Any]) -> None:
    async def first(client: Client) -> None:
        saved = await call(
            client, "remember", text="One's plan is a secret", scope="session", session_id="s-1"
        )
        assert saved["action"] == "created"

    as_token(served["url"], served["tokens"]["one"], first)
    before = _files(served["data"])

    async def second(client: Client) -> None:
        category, text = await refused(client, "recall", query="plan secret", session_id="s-1")
        assert category == "permission_denied" and "'session' permission" in text
        category, _ = await refused(
            client, "remember", text="Mine now", scope="session", session_id="s-1"
        )
        assert category == "permission_denied"

    as_token(served["url"], served["tokens"]["two"], second)
    assert _files(served["data"]) == before


def test_an_open_server_refuses_a_revoked_or_unknown_token(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    """``--no-token`` serves callers that bring no credential as the admin; one that brings a
    credential naming no live token (revoked, mistyped) is refused, not upgraded."""
    data = tmp_path / "data"
    store = connect(f"file:{data}")
    store.save("There builds with bazel", scope="project", project=THERE)
    live = store.token_create("live", projects=[HERE])["token"]
    gone = store.token_create("gone", projects=[HERE])["token"]
    store.token_revoke("gone")
    store.close()
    before = _files(data)
    env = {k: v for k, v in memory_env.items() if k != "MEMORY_MCP_TOKEN"}
    with served_http(memory_cmd, env, data, "--no-token", cwd=tmp_path) as url:
        for wrong in (gone, live + "x", "not-a-token"):
            answer = httpx2.post(
                url,
                json={},
                headers={"accept": "application/json", "authorization": f"Bearer {wrong}"},
            )
            assert answer.status_code == 401, wrong
        assert _files(data) == before
