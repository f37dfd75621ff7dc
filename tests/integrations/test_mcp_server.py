"""``memory mcp`` driven by the MCP SDK's own client: in-process, over stdio, over streamable
HTTP on loopback, and two servers on one running store (the session's Ray actor)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, get_args

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from integrations.mcp_server import MemoryScope, MemoryType, build_server
from shared.contract import errors
from shared.contract.models import MEMORY_SCOPES, MEMORY_TYPES

Session = Callable[[Client], Awaitable[None]]
FACT = "The deploy script lives in tools/ship.sh and needs the staging profile"


def run(server: Any, body: Session) -> None:
    async def main() -> None:
        async with Client(server) as client:
            await body(client)

    anyio.run(main)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def office_moved(client: Client) -> tuple[str, str]:
    """(old, new): the ids of a fact and of its correction, both remembered, neither superseded."""
    old = (await call(client, "remember", text="The office is in Leeds"))["memory"]["id"]
    new = (await call(client, "remember", text="We moved the office to York"))["memory"]["id"]
    return old, new


async def refused(client: Client, tool: str, **arguments: Any) -> tuple[str, str]:
    """(category, text) of a tool error."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert isinstance(result.structured_content, dict)
    text = result.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in text
    category = result.structured_content["error"]["category"]
    assert text.startswith(f"{category}: ")
    return category, text


async def recall_ids(client: Client, query: str, **extra: Any) -> list[str]:
    found = await call(client, "recall", query=query, **extra)
    return [m["id"] for m in found["memories"]]


async def remember_recall_forget(client: Client) -> None:
    """The round trip every transport must pass."""
    # Given a server with the tools
    names = {t.name for t in (await client.list_tools()).tools}
    assert {"remember", "recall", "forget", "supersede", "pin", "list_rules"} <= names
    # When a fact is remembered, then the next call recalls it (read-your-writes)
    saved = await call(client, "remember", text=FACT)
    assert saved["action"] == "created"
    mid = saved["memory"]["id"]
    assert mid in await recall_ids(client, "where is the deploy script")
    # When it is forgotten, then it is gone and a second forget is not_found
    assert (await call(client, "forget", id=mid))["action"] == "forgotten"
    assert mid not in await recall_ids(client, "where is the deploy script")
    assert (await refused(client, "forget", id=mid))[0] == "not_found"
    # An invalid argument is a tool error carrying its category
    assert (await refused(client, "remember", text="x", type="opinion"))[0] == "invalid_type"
    assert (await refused(client, "recall", query="   "))[0] == "invalid_argument"


# -- in-process ----------------------------------------------------------------------------------


def test_the_literal_types_are_the_stores() -> None:
    assert set(get_args(MemoryType)) == set(MEMORY_TYPES)
    assert set(get_args(MemoryScope)) == set(MEMORY_SCOPES)


def test_tools_have_schemas_descriptions_and_hints(embedded: Any) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "set_rule" not in tools  # rules are human-owned unless the operator allows
        for tool in tools.values():
            assert tool.description and len(tool.description) > 40
            assert tool.input_schema["type"] == "object"
            assert tool.annotations is not None
        assert tools["recall"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert tools["forget"].annotations.destructive_hint is True  # type: ignore[union-attr]
        assert tools["remember"].annotations.read_only_hint is False  # type: ignore[union-attr]
        assert tools["pin"].annotations.idempotent_hint is True  # type: ignore[union-attr]
        assert tools["remember"].input_schema["required"] == ["text"]
        type_schema = tools["remember"].input_schema["properties"]["type"]
        assert set(type_schema["enum"]) == set(MEMORY_TYPES)
        # every parameter says what it is for (a title alone, "Update Id", told an agent
        # nothing)
        for tool in tools.values():
            for name, prop in tool.input_schema["properties"].items():
                assert len(prop.get("description", "")) > 15, (tool.name, name)

    run(build_server(embedded), body)


def test_round_trip_in_process(embedded: Any) -> None:
    run(build_server(embedded), remember_recall_forget)


def test_remember_asks_before_a_near_duplicate(embedded: Any) -> None:
    async def body(client: Client) -> None:
        # Given a remembered preference
        first = await call(client, "remember", text="The user prefers tabs over spaces")
        # When a close paraphrase is remembered, nothing is written and candidates come back
        asked = await call(client, "remember", text="The user prefers tabs to spaces")
        assert asked["action"] == "needs_confirmation"
        assert asked["candidates"][0]["id"] == first["memory"]["id"]
        assert len(embedded.list().memories) == 1
        # Then the agent chooses: update that id, or confirm a new one
        updated = await call(
            client,
            "remember",
            text="The user prefers tabs to spaces",
            update_id=first["memory"]["id"],
        )
        assert updated["action"] == "updated"
        again = await call(
            client, "remember", text="The user likes tabs, not spaces", confirm_new=True
        )
        assert again["action"] == "created"
        # And the very same fact again reinforces, without asking
        same = await call(client, "remember", text="The user likes tabs, not spaces")
        assert same["action"] == "reinforced"

    run(build_server(embedded), body)


def test_remember_says_what_kinds_it_redacted(embedded: Any) -> None:
    async def body(client: Client) -> None:
        # When a fact holding a token and a password is remembered
        token = "ghp_" + "aB3" * 12
        saved = await call(
            client, "remember", text=f"CI uses {token}; my password is hunter2x! on staging"
        )
        # Then the answer names the kinds (as `memory save` does), and no value
        assert saved["action"] == "created"
        assert saved["redacted"] == ["github_token", "password"]
        assert token not in json.dumps(saved) and "hunter2x" not in json.dumps(saved)
        # and an update that redacts says so too; a clean save carries no `redacted` at all
        updated = await call(
            client, "remember", text=f"CI now uses {token}", update_id=saved["memory"]["id"]
        )
        assert updated["redacted"] == ["github_token"]
        clean = await call(client, "remember", text="The user prefers dark mode")
        assert "redacted" not in clean

    run(build_server(embedded), body)


def test_remember_takes_when_it_happened(embedded: Any) -> None:
    async def body(client: Client) -> None:
        # When an event is remembered with the day it happened
        saved = await call(
            client,
            "remember",
            text="The user ran the Lisbon half marathon",
            occurred_at="2023-05-07",
        )
        # Then it carries that date (not the day it was said), and a question naming the
        # month finds it
        assert saved["memory"]["occurred"] == "2023-05-07"
        assert saved["memory"]["id"] in await recall_ids(client, "what did the user do in May 2023")
        # an update moves it; a date that is no date is refused and writes nothing
        moved = await call(
            client,
            "remember",
            text="The user ran the Lisbon half marathon in 2h05",
            update_id=saved["memory"]["id"],
            occurred_at="2023-05-08T09:00Z",
        )
        assert moved["memory"]["occurred"] == "2023-05-08"
        category, text = await refused(
            client, "remember", text="Another race", occurred_at="last spring", confirm_new=True
        )
        assert category == "invalid_argument" and "ISO-8601" in text
        assert "Another race" not in json.dumps(await call(client, "recall", query="race"))

    run(build_server(embedded), body)


def test_supersede_answers_with_the_brief_form(embedded: Any) -> None:
    async def body(client: Client) -> None:
        old, new = await office_moved(client)
        done = await call(client, "supersede", id=old, by=new, reason="moved")
        # the same memory shape as remember/recall/pin, no index internals
        assert done["action"] == "superseded" and done["bank"] == "main"
        assert done["memory"]["id"] == old and done["by"]["id"] == new
        assert set(done["memory"]) == set(done["by"]) == {
            "id", "text", "title", "type", "scope", "tags", "pinned", "status", "occurred",
            "stated",
        }  # fmt: skip

    run(build_server(embedded), body)


def test_supersede_again_answers_the_same_and_writes_nothing(embedded: Any) -> None:
    """The tool says it is idempotent: a retry after a lost answer must not be an error."""

    async def body(client: Client) -> None:
        # Given a correction done once
        old, new = await office_moved(client)
        first = await call(client, "supersede", id=old, by=new, reason="moved")
        log = (embedded.root / "main" / "memories.jsonl").read_bytes()
        # When the same call comes again, then it answers the same and writes nothing
        again = await call(client, "supersede", id=old, by=new, reason="moved")
        assert again == {**first, "already": True}
        assert (embedded.root / "main" / "memories.jsonl").read_bytes() == log
        # but retiring it in favour of another memory is still refused, saying why
        other = (await call(client, "remember", text="The office has a cat"))["memory"]["id"]
        category, text = await refused(client, "supersede", id=old, by=other)
        assert category == "invalid_argument" and f"superseded by {new}" in text

    run(build_server(embedded), body)


def test_memories_are_dated_by_when_they_happened_and_when_stated(embedded: Any) -> None:
    # Given a memory of something that happened long before it was saved, and a plain one
    embedded.save("Caroline went to a support group", occurred_at=1_683_417_600_000)
    embedded.save("Caroline likes support groups")
    stated = embedded.clock.now_ms()

    async def body(client: Client) -> None:
        found = await call(client, "recall", query="Caroline support group")
        dates = {m["text"]: (m["occurred"], m["stated"]) for m in found["memories"]}
        today = datetime.fromtimestamp(stated / 1000, UTC).strftime("%Y-%m-%d")
        assert dates == {
            "Caroline went to a support group": ("2023-05-07", today),
            "Caroline likes support groups": (None, today),
        }

    run(build_server(embedded), body)


def test_supersede_pin_and_rules(embedded: Any) -> None:
    embedded.rule_set("style", "Answer in British English.")

    async def body(client: Client) -> None:
        old, new = await office_moved(client)
        await call(client, "supersede", id=old, by=new, reason="moved")
        assert await recall_ids(client, "office") == [new]
        assert (await call(client, "pin", id=new))["memory"]["pinned"] is True
        # unpinning is a person's (`memory unpin`): the tool refuses it; an unpinned memory
        # stays as it is
        assert (await refused(client, "pin", id=new, pinned=False))[0] == "permission_denied"
        assert embedded.get(new).memory.pinned is True
        cat = (await call(client, "remember", text="The office has a cat"))["memory"]["id"]
        assert (await call(client, "pin", id=cat, pinned=False))["memory"]["pinned"] is False
        rules = await call(client, "list_rules")
        assert rules["rules"][0]["name"] == "style"
        assert (await refused(client, "supersede", id=old, by="no-such-id"))[0] in (
            "not_found",
            "invalid_argument",
        )

    run(build_server(embedded), body)


def test_rule_editing_only_when_allowed(embedded: Any) -> None:
    async def body(client: Client) -> None:
        await call(client, "set_rule", name="tone", content="Be brief.")
        assert embedded.rule_get("tone").content.strip() == "Be brief."
        await call(client, "set_rule", name="tone", content="")
        assert embedded.rule_list().rules == ()
        assert (await refused(client, "set_rule", name="tone", content=""))[0] == "not_found"

    run(build_server(embedded, allow_rule_edits=True), body)


def test_resources_rules_and_preview(embedded: Any) -> None:
    embedded.rule_set("style", "Answer in British English.")
    embedded.save("The staging database is called pelican")

    async def body(client: Client) -> None:
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert listed == ["memory://banks"]
        banks = (await client.read_resource("memory://banks")).contents[0]
        assert "memory://banks/main/rules" in banks.text  # type: ignore[union-attr]
        rules = (await client.read_resource("memory://banks/main/rules")).contents[0]
        assert "## style" in rules.text  # type: ignore[union-attr]
        shown = await client.read_resource("memory://banks/main/preview?query=staging%20database")
        text = shown.contents[0].text  # type: ignore[union-attr]
        assert "British English" in text and "pelican" in text

    run(build_server(embedded), body)


def test_tools_take_only_the_arguments_their_schemas_name(embedded: Any) -> None:
    """The SDK dropped an argument a tool does not take: `remember(text, tags=[...])` or a
    misspelt `scpoe` saved the memory without it and answered success."""

    async def body(client: Client) -> None:
        # Given the tools as a client lists them: no other argument is allowed
        for tool in (await client.list_tools()).tools:
            assert tool.input_schema["additionalProperties"] is False, tool.name
        # When a call carries one the tool does not take, then it is refused, named, and
        # nothing is written
        category, text = await refused(
            client, "remember", text=FACT, tags=["deploy"], scpoe="project"
        )
        assert category == "invalid_argument"
        assert "unknown arguments scpoe, tags" in text and "scope" in text
        assert embedded.list().total == 0
        # and the arguments it does take still work
        assert (await call(client, "remember", text=FACT, scope="global"))["action"] == "created"

    run(build_server(embedded), body)


def test_the_recall_limit_in_the_schema_is_the_stores(embedded: Any) -> None:
    """The schema said 1-10000; the store refuses above 500."""
    from store_worker.storage.validate import limit

    embedded.save(FACT)

    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools["recall"].input_schema["properties"]["limit"]
        (bounded,) = [s for s in schema["anyOf"] if s.get("type") == "integer"]
        most = bounded["maximum"]
        assert bounded["minimum"] == 1
        assert f"1-{most};" in schema["description"]
        # the bound is the store's own: the largest it takes, and one more it refuses
        assert limit(most, 10) == most
        with pytest.raises(errors.InvalidArgumentError):
            limit(most + 1, 10)
        assert await recall_ids(client, "deploy script", limit=most)
        category, text = await refused(client, "recall", query="deploy", limit=most + 1)
        assert category == "invalid_argument" and "limit" in text

    run(build_server(embedded), body)


def test_a_session_memory_without_its_session_is_refused_before_the_near_match_check(
    embedded: Any,
) -> None:
    """It answered `needs_confirmation` (a close memory exists), and the confirmed call was
    then refused: the agent was sent round a loop to a refusal."""
    embedded.save(FACT)

    async def body(client: Client) -> None:
        category, text = await refused(client, "remember", text=FACT, scope="session")
        assert category == "invalid_scope" and "session_id" in text

    run(build_server(embedded), body)


# -- stdio and HTTP: the `memory mcp` command ------------------------------------------------------


def test_stdio_round_trip(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    params = StdioServerParameters(
        command=memory_cmd[0],
        args=[*memory_cmd[1:], "mcp", "--data-dir", str(tmp_path / "data")],
        env=memory_env,
    )

    async def body(client: Client) -> None:
        # the server names this package's version (it said '')
        assert client.server_info.name == "agent-memory"
        assert client.server_info.version == metadata.version("agent-memory")
        await remember_recall_forget(client)

    run(params, body)


def test_a_server_started_before_the_store_serves_once_it_is_up(
    memory_cmd: list[str], memory_env: dict[str, str], fresh_store: Any, tmp_path: Path
) -> None:
    """An agent starts its MCP servers with the session, often before `memory up`: the
    server exited ("Connection closed" in the client) and was gone for the session."""
    from grpc_gateway.server import build_server as build_gateway
    from shared.client import gateway_file

    # Given `memory mcp` started in the agent's project folder while no store runs (no
    # gateway recorded, no Ray cluster in its TMPDIR)
    project, state = tmp_path / "project", tmp_path / "state"
    project.mkdir()
    env = {**memory_env, "XDG_STATE_HOME": str(state), "TMPDIR": str(tmp_path)}
    for name in ("MEMORY_DATA_DIR", "RAY_ADDRESS"):
        env.pop(name, None)
    params = StdioServerParameters(
        command=memory_cmd[0], args=[*memory_cmd[1:], "mcp"], env=env, cwd=project
    )
    served = tmp_path / "served"
    store = fresh_store(data_dir=served)
    gateway, port = build_gateway(store, port=0)

    async def body(client: Client) -> None:
        # When a tool is called, then it is a typed, retryable error naming what to do
        down = await client.call_tool("recall", {"query": "deploy script"})
        assert down.is_error and isinstance(down.structured_content, dict)
        error = down.structured_content["error"]
        assert (error["category"], error["retryable"]) == ("source_unavailable", True)
        assert "memory up" in error["message"]
        # When the store comes up (`memory up`: a gateway, recorded and pointed to)
        gateway.start()
        gateway_file.write(served, f"127.0.0.1:{port}", None)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("XDG_STATE_HOME", str(state))
            gateway_file.point(served)
        # Then the same server serves: a project memory goes under the server's folder (the
        # agent's project, as `memory save --scope project` uses its cwd) and is recalled
        saved = await call(client, "remember", text=FACT, scope="project", type="project")
        mid = saved["memory"]["id"]
        assert mid in await recall_ids(client, "where is the deploy script")
        assert store.get(mid).memory.project == str(project)

    try:
        run(params, body)
    finally:
        gateway.stop(None)


def test_a_server_follows_the_gateway_to_its_new_token(
    memory_cmd: list[str], memory_env: dict[str, str], fresh_store: Any, tmp_path: Path
) -> None:
    """`memory down`, then `memory up` with a new token on the same address: the server kept
    the token it had found, and every call failed `unknown: unauthenticated` until the agent
    was restarted (only an unreachable store was looked for again)."""
    from grpc_gateway.server import build_server as build_gateway
    from shared.client import gateway_file

    served = tmp_path / "served"
    store = fresh_store(data_dir=served)
    env = {**memory_env, "MEMORY_DATA_DIR": str(served), "XDG_STATE_HOME": str(tmp_path)}
    params = StdioServerParameters(command=memory_cmd[0], args=[*memory_cmd[1:], "mcp"], env=env)
    # Given a gateway with a token, recorded for the data dir (the record names its file)
    token_file = tmp_path / "token"
    token_file.write_text("first-token\n")
    gateway, port = build_gateway(store, port=0, token="first-token")
    gateway.start()
    gateway_file.write(served, f"127.0.0.1:{port}", token_file)

    async def body(client: Client) -> None:
        saved = await call(client, "remember", text=FACT)
        # When the gateway comes back on the same address with another token (rotated)
        gateway.stop(None).wait()
        token_file.write_text("second-token\n")
        again, _ = build_gateway(store, port=port, token="second-token")
        again.start()
        gateway_file.write(served, f"127.0.0.1:{port}", token_file)
        try:
            # Then the next call finds the new record and is answered
            assert saved["memory"]["id"] in await recall_ids(client, "deploy script")
            assert "main" in (await client.read_resource("memory://banks")).contents[0].text  # type: ignore[union-attr]
        finally:
            again.stop(None)

    try:
        run(params, body)
    finally:
        gateway.stop(None)


def test_recall_defaults_to_the_servers_project_like_the_cli(embedded: Any, tmp_path: Path) -> None:
    # Given a project memory filed under a folder, as `memory save --scope project` there does
    embedded.save(FACT, scope="project", project=str(tmp_path), type="project")

    async def body(client: Client) -> None:
        assert await recall_ids(client, "deploy script")  # a server running in that folder
        remembered = await call(
            client, "remember", text="Tests run with make test", scope="project"
        )
        assert embedded.get(remembered["memory"]["id"]).memory.project == str(tmp_path)

    run(build_server(embedded, project=str(tmp_path)), body)

    async def elsewhere(client: Client) -> None:
        assert await recall_ids(client, "deploy script") == []  # another folder's server

    run(build_server(embedded, project=str(tmp_path / "other")), elsewhere)


def test_a_relative_project_is_taken_in_the_servers_folder(embedded: Any, tmp_path: Path) -> None:
    # "." and "sub" are the agent's, as a shell would read them: resolved in the server's
    # folder, never in the store's (which refuses them)
    here = tmp_path / "agent"

    async def body(client: Client) -> None:
        dot = await call(client, "remember", text=FACT, scope="project", project=".")
        sub = await call(
            client, "remember", text="Tests run with make test", scope="project", project="sub"
        )
        assert embedded.get(dot["memory"]["id"]).memory.project == str(here)
        assert embedded.get(sub["memory"]["id"]).memory.project == str(here / "sub")
        assert await recall_ids(client, "deploy script", project=".") == [dot["memory"]["id"]]

    run(build_server(embedded, project=str(here)), body)


def test_an_id_alone_never_reaches_another_projects_or_sessions_memory(
    embedded: Any, tmp_path: Path
) -> None:
    # ids are slugs of the text: an agent in project B could pin (and so read), rewrite,
    # supersede or forget project A's memory, or a session's, by guessing one
    secret = embedded.save(
        "Project A ships with the kestrel key ceremony", id="a-secret", scope="project",
        project=str(tmp_path / "a"),
    ).memory  # fmt: skip
    private = embedded.save(
        "Session S drafts the merger memo", id="s-private", scope="session", session_id="S"
    )
    mine = embedded.save("The user prefers short answers").memory

    async def body(client: Client) -> None:
        for target in (secret.id, private.memory.id):
            for tool, args in (
                ("pin", {"id": target}),
                ("forget", {"id": target}),
                ("supersede", {"id": target, "by": mine.id}),
                ("supersede", {"id": mine.id, "by": target}),
                ("remember", {"text": "overwritten", "update_id": target}),
            ):
                category, text = await refused(client, tool, **args)
                assert category == "not_found" and "kestrel" not in text and "merger" not in text
        # the session's own agent names its session and reaches it
        done = await call(client, "pin", id=private.memory.id, session_id="S")
        assert done["memory"]["pinned"] is True

    run(build_server(embedded, project=str(tmp_path / "b")), body)
    assert embedded.get(secret.id).memory.model_dump() == secret.model_dump()
    assert embedded.get(mine.id).memory.invalid_at is None

    async def own(client: Client) -> None:  # project A's own server reaches it
        assert (await call(client, "pin", id=secret.id))["memory"]["pinned"] is True

    run(build_server(embedded, project=str(tmp_path / "a")), own)


def test_a_second_server_on_the_data_dir_names_the_first_and_serves_once_free(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    """Two agent windows on one `--data-dir`: the second server exited at start (the client
    said only "Connection closed") and that window had no memory tools for its session, even
    after the first window closed."""
    from shared.client import connect

    data = str(tmp_path / "data")
    store = connect(f"file:{data}")
    store.save(FACT)
    store.close()
    argv = [*memory_cmd, "mcp", "--data-dir", data]
    # Given a first server (an agent window) holding the data dir
    first = subprocess.Popen(
        argv, env=memory_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while _lock_pid(Path(data) / ".lock") != first.pid:
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)  # another process taking a lock: nothing to join
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=memory_env)

        async def body(second: Client) -> None:
            # When a second server starts on the same data dir, then it starts, and each
            # call is a typed error naming the holder and what to do
            assert "recall" in {t.name for t in (await second.list_tools()).tools}
            category, text = await refused(second, "recall", query="deploy script")
            assert category == "source_unavailable"
            assert f"data dir {data} is in use by pid {first.pid} " in text
            assert "Drop --data-dir" in text
            # When the first window closes, then the second serves the same memory
            assert first.stdin is not None
            first.stdin.close()
            assert first.wait(timeout=60) == 0
            assert await recall_ids(second, "where is the deploy script")
            saved = await call(second, "remember", text="Releases are tagged on main")
            assert saved["action"] == "created"

        run(params, body)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    # Then nothing was lost across the hand-over
    store = connect(f"file:{data}")
    try:
        assert store.list().total == 2
    finally:
        store.close()


def test_a_server_on_a_data_dir_it_cannot_write_says_why_and_serves_once_it_can(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    """An unwritable data dir (a read-only mount; here a path through a file) made the
    server exit at start: the client said only "Connection closed", the agent had no memory
    tools and never learnt why."""
    # Given a --data-dir whose parent is a file
    blocker = tmp_path / "memory"
    blocker.write_text("not a folder")
    data = str(blocker / "data")
    params = StdioServerParameters(
        command=memory_cmd[0], args=[*memory_cmd[1:], "mcp", "--data-dir", data], env=memory_env
    )

    async def body(client: Client) -> None:
        # When a tool is called, then it is a typed error saying why
        category, text = await refused(client, "remember", text=FACT)
        assert category == "source_unavailable" and "not writable" in text
        # When the folder is made usable, then the same server serves
        blocker.unlink()
        blocker.mkdir()
        assert (await call(client, "remember", text=FACT))["action"] == "created"
        assert await recall_ids(client, "where is the deploy script")

    run(params, body)


def _lock_pid(path: Path) -> int | None:
    try:
        return int(json.loads(path.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None  # not there yet, or being written


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)  # waiting for another process to bind; nothing to join
    raise AssertionError("memory mcp --transport http never listened")


@contextmanager
def served_http(
    memory_cmd: list[str],
    env: dict[str, str],
    data: Path | str,
    *flags: str,
    cwd: Path | None = None,
) -> Iterator[str]:
    """``memory mcp --transport http`` over ``data`` in a process of its own, listening: its
    URL; stopped on the way out."""
    port = _free_port()
    args = ["mcp", "--transport", "http", "--port", str(port), "--data-dir", str(data), *flags]
    proc = subprocess.Popen(
        [*memory_cmd, *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_http_round_trip_with_bearer_token(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**memory_env, "MEMORY_MCP_TOKEN": "s3cret-token"}
    with served_http(memory_cmd, env, tmp_path / "data") as url:
        # Without the token: refused before any MCP session
        bare = httpx2.post(url, json={}, headers={"accept": "application/json"})
        assert bare.status_code == 401
        assert "bearer token" in bare.text

        async def main() -> None:
            headers = {"Authorization": "Bearer s3cret-token"}
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    await remember_recall_forget(client)

        anyio.run(main)


def test_http_on_a_port_another_server_holds_is_refused_and_the_first_keeps_serving(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    """uvicorn binds without SO_REUSEPORT: a second server never shares the first one's port
    (grpcio's default did, for the gateway, and the kernel split connections between them)."""
    port = _free_port()

    def serve(data: str, token: str) -> subprocess.Popen[str]:
        argv = ["mcp", "--transport", "http", "--port", str(port), "--data-dir", data]
        return subprocess.Popen(
            [*memory_cmd, *argv],
            env={**memory_env, "MEMORY_MCP_TOKEN": token},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    first = serve(str(tmp_path / "a"), "token-of-a")
    try:
        _wait_listening(port, first)
        # When a second server, on another data dir, asks for the same port
        second = serve(str(tmp_path / "b"), "token-of-b")
        _, err = second.communicate(timeout=60)
        # Then it is refused, typed, naming the port, before its store was opened
        assert second.returncode == 2 and "error: source_unavailable:" in err, err
        assert f"127.0.0.1:{port}" in err and "taken by another process" in err
        assert not (tmp_path / "b").exists()
        # And every new connection still reaches the first (the second would answer 401)
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"accept": "application/json", "Authorization": "Bearer token-of-a"}
        for _ in range(20):
            with httpx2.Client(timeout=30) as http:  # a new connection each time
                assert http.post(url, json={}, headers=headers).status_code != 401
    finally:
        first.terminate()
        first.wait(timeout=30)


# -- two servers on one running store --------------------------------------------------------------


@pytest.mark.ray
def test_two_servers_on_the_running_store_see_each_others_writes(
    store_actor: Any,
    ray_cluster: Any,
    unique_bank: str,
    memory_cmd: list[str],
    memory_env: dict[str, str],
) -> None:
    # Given one server in this process and another `memory mcp` process, both on the actor
    store_actor.bank_create(unique_bank)
    address = ray_cluster.get_runtime_context().gcs_address
    env = {**memory_env, "RAY_ADDRESS": address, "RAY_AUTH_MODE": "disabled"}
    params = StdioServerParameters(command=memory_cmd[0], args=[*memory_cmd[1:], "mcp"], env=env)

    async def main() -> None:
        async with Client(build_server(store_actor)) as here, Client(params) as there:
            # When one remembers, the other recalls it at once
            saved = await call(here, "remember", text=FACT, bank=unique_bank)
            mid = saved["memory"]["id"]
            assert mid in await recall_ids(there, "deploy script", bank=unique_bank)
            # When the other forgets it, the first no longer recalls it
            await call(there, "forget", id=mid, bank=unique_bank)
            assert mid not in await recall_ids(here, "deploy script", bank=unique_bank)

    anyio.run(main)


def test_a_store_error_never_carries_a_traceback() -> None:
    class Broken:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("disk on fire")

    async def body(client: Client) -> None:
        category, text = await refused(client, "recall", query="anything")
        assert category == "unknown" and "RuntimeError" in text

    run(build_server(Broken()), body)  # type: ignore[arg-type]


def test_recall_says_how_it_read_a_misspelt_query(tmp_path: Path) -> None:
    from store_worker.core import MemoryStore
    from store_worker.recall.synonyms import FakeSynonyms

    store = MemoryStore(tmp_path / "data", synonyms=FakeSynonyms({"tournament": []}))
    store.save("Nate won the regional video game tournament")

    async def body(client: Client) -> None:
        found = await call(client, "recall", query="which torunament did nate win")
        assert found["read_as"] == "which tournament did nate win"
        assert found["memories"][0]["id"] == "nate-won-regional-video-game-tournament"
        assert "read_as" not in await call(client, "recall", query="the tournament")

    run(build_server(store), body)
    store.close()


def test_http_beyond_loopback_with_no_token_is_refused_before_it_binds(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    # Every host that reached it would read and change every memory: refused, typed, at once
    env = {k: v for k, v in memory_env.items() if "TOKEN" not in k}
    env.pop("MEMORY_ALLOW_NO_TOKEN", None)
    argv = ["mcp", "--transport", "http", "--host", "0.0.0.0", "--port", str(_free_port())]
    argv.append("--no-token")  # given none, it makes one; serving open takes the variable too
    done = subprocess.run(
        [*memory_cmd, *argv, "--data-dir", str(tmp_path / "data")],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "no bearer token" in done.stderr and "MEMORY_ALLOW_NO_TOKEN=1" in done.stderr
    assert not (tmp_path / "data").exists()  # refused before the store was opened


def _serve_http(
    memory_cmd: list[str], env: dict[str, str], port: int, data: Path, *flags: str
) -> subprocess.Popen[str]:
    argv = ["mcp", "--transport", "http", "--port", str(port), "--data-dir", str(data), *flags]
    return subprocess.Popen(
        [*memory_cmd, *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_http_given_no_token_serves_with_the_admin_token_and_reuses_it(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    import stat

    # Given `memory mcp --transport http` with no token and no opt-in
    state = tmp_path / "state"
    env = {k: v for k, v in memory_env.items() if "TOKEN" not in k}
    env["XDG_STATE_HOME"] = str(state)
    token_file = state / "agent-memory" / "token"
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    for start in ("first", "restarted"):
        proc = _serve_http(memory_cmd, env, port, tmp_path / "data")
        try:
            _wait_listening(port, proc)
            token = token_file.read_text().strip()
            assert stat.S_IMODE(token_file.stat().st_mode) == 0o600, start
            if start == "first":
                made = token
            assert token == made  # the same token across restarts
            # Then a client with no token is refused before any MCP session
            bare = httpx2.post(url, json={}, headers={"accept": "application/json"})
            assert bare.status_code == 401 and "bearer token" in bare.text

            # and the MCP SDK's client with the admin token is served
            async def main(token: str) -> None:
                headers = {"Authorization": f"Bearer {token}"}
                async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
                    async with Client(streamable_http_client(url, http_client=http)) as client:
                        await remember_recall_forget(client)

            anyio.run(main, token)
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
        assert made not in err and "WARNING" not in err
        assert f"the token in {token_file}" in err  # where, never what


def test_http_with_no_token_is_announced_on_loopback(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in memory_env.items() if "TOKEN" not in k}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    port = _free_port()
    proc = _serve_http(memory_cmd, env, port, tmp_path / "data", "--no-token")
    try:
        _wait_listening(port, proc)

        async def main() -> None:  # open, as asked: the SDK's client needs no header
            async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp")) as client:
                await remember_recall_forget(client)

        anyio.run(main)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "WARNING: memory mcp on 127.0.0.1 serves with NO bearer token" in err
    assert not (tmp_path / "state" / "agent-memory" / "token").exists()  # none made


def test_recall_says_how_relevant_each_memory_is_and_why(embedded: Any) -> None:
    # Given a bank that knows about the staging server and about tea
    embedded.save("The staging server is called kestrel-stg")
    embedded.save("The user drinks green tea every morning")
    embedded.save("The user edits code in the Helix editor")

    async def body(client: Client) -> None:
        # When the recall tool is asked about the server, each memory says why it came
        found = await call(client, "recall", query="what is the staging server called")
        first = found["memories"][0]
        assert first["text"] == "The staging server is called kestrel-stg"
        assert 0.3 <= first["relevance"] <= 1.0
        assert {"stage", "server"} <= set(first["why"]["terms"])
        assert all(0.0 <= m["relevance"] <= 1.0 for m in found["memories"])
        # and with min_relevance, a prompt the bank knows nothing about gets nothing
        off = await call(
            client, "recall", query="reverse a linked list in Python", min_relevance=0.3
        )
        assert off["memories"] == []
        on = await call(client, "recall", query="staging server name", min_relevance=0.3)
        assert [m["text"] for m in on["memories"]] == ["The staging server is called kestrel-stg"]
        category, _ = await refused(client, "recall", query="server", min_relevance=2)
        assert category == "invalid_argument"

    run(build_server(embedded), body)
