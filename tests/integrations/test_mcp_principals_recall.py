"""``memory mcp --transport http``, driven by the MCP SDK's client: a scoped token's recall
fills its page where records it may not see (the admin's session its own descends from)
outrank the ones it sees, as on the gateway (``shared.client.scoped_recall``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from shared.client import connect
from tests.integrations.test_mcp_principals import ADMIN, as_token
from tests.integrations.test_mcp_server import call, served_http

APP = "/srv/app"
QUERY = "deploy rollout checklist"


@pytest.fixture
def served(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> Iterator[dict[str, Any]]:
    """20 records of the admin's session outrank 6 the agent sees, and an MCP server on them."""
    data = tmp_path / "data"
    store = connect(f"file:{data}")
    token = store.token_create("agent", banks=["main"], projects=[APP])["token"]
    assert store.session_owner("sess-agent", claim="agent") == "agent"
    store.link_session("sess-agent", "sess-kernel")
    for i in range(20):
        store.save(
            f"Deploy rollout checklist {i}: deploy rollout checklist",
            scope="session",
            session_id="sess-kernel",
        )
    for text, where in (
        ("Deploy rollout checklist lives in the wiki", {}),
        ("The checklist for a deploy is short", {}),
        ("Rollout of the app goes through staging first", {"scope": "project", "project": APP}),
        ("A deploy of the app needs the on-call", {"scope": "project", "project": APP}),
        ("Deploy notes: rollout paused", {"scope": "session", "session_id": "sess-agent"}),
        ("The checklist was reviewed", {"scope": "session", "session_id": "sess-agent"}),
    ):
        store.save(text, **where)
    ranked = store.recall(QUERY, session_id="sess-agent", project=APP, limit=50).memories
    store.close()
    env = {**memory_env, "MEMORY_MCP_TOKEN": ADMIN}
    with served_http(memory_cmd, env, data, cwd=tmp_path) as url:
        yield {"url": url, "token": token, "ranked": ranked}


def test_a_scoped_recall_over_mcp_fills_its_page(served: dict[str, Any]) -> None:
    ranked = served["ranked"]
    hidden = [h.memory.id for h in ranked if h.memory.session_id == "sess-kernel"]
    assert [h.memory.id for h in ranked[:20]] == hidden  # every hidden record ranks first
    order = [h.memory.id for h in ranked if h.memory.session_id != "sess-kernel"]
    assert len(order) == 6
    got: dict[str, Any] = {}

    async def body(client: Client) -> None:
        got["page"] = await call(
            client, "recall", query=QUERY, session_id="sess-agent", project=APP, limit=5
        )

    as_token(served["url"], served["token"], body)
    assert [m["id"] for m in got["page"]["memories"]] == order[:5]
