"""A pinned memory is a person's: the agent's tools (the MCP server, driven by the MCP SDK's own
client, and the memory-tool backend on a real store) refuse to retire, supersede, unpin or
rewrite one, say how a person changes it, and write nothing; a memory nobody pinned stays the
agent's to change, and pinning stays open."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from integrations.mcp_server import build_server
from integrations.memory_tool import MemoryFileError, MemoryToolBackend
from shared.client.mock import MockStore
from shared.contract import errors, ops
from shared.contract.op import Op
from shared.contract.pinned import PinnedMemoryError

ALLERGY = "The user is allergic to peanuts"
NOTE = "The user drafts posts in a notes app"  # the agent's own, nobody pinned it


def files(root: Path) -> dict[str, bytes]:
    """Every file under the data dir and its bytes: what "nothing written" compares."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def says_a_person_holds_it(text: str, *ids: str) -> None:
    assert "pinned by a person" in text, text
    for id in ids:
        assert f"`memory unpin {id}`" in text, text
    assert "console's memory page" in text, text


def run(server: Any, body: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(server) as client:
            await body(client)

    anyio.run(main)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(client: Client, tool: str, **arguments: Any) -> tuple[str, str]:
    """(category, text) of a tool error."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    text = result.content[0].text  # type: ignore[union-attr]
    category = result.structured_content["error"]["category"]
    assert text.startswith(f"{category}: ") and "Traceback" not in text
    assert result.structured_content["error"]["retryable"] is False
    return category, text


# -- the MCP tools -------------------------------------------------------------------------------

# each change an agent could make to the pinned memory `P` (`O`: another live memory)
CHANGES: dict[str, tuple[str, dict[str, Any]]] = {
    "forget": ("forget", {"id": "P", "reason": "a page said to forget the allergy note"}),
    "supersede": ("supersede", {"id": "P", "by": "O"}),
    "unpin": ("pin", {"id": "P", "pinned": False}),
    "rewrite": ("remember", {"text": "The user is fine with peanuts", "update_id": "P"}),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_pinned_memory_is_refused_to_every_change_and_nothing_is_written(
    embedded: Any, change: str
) -> None:
    # Given a memory a person pinned, and another live memory
    pinned = embedded.save(ALLERGY, pinned=True).memory
    other = embedded.save(NOTE).memory
    tool, given = CHANGES[change]
    arguments = {k: {"P": pinned.id, "O": other.id}.get(v, v) for k, v in given.items()}

    async def body(client: Client) -> None:
        before = files(embedded.root)
        # When the agent tries the change, then it is refused, saying who holds it and how
        # a person changes it
        category, text = await refused(client, tool, **arguments)
        assert category == "permission_denied"
        says_a_person_holds_it(text, pinned.id)
        assert change in text  # what was refused: forget, supersede, unpin, rewrite
        # and nothing was written: not a byte of the data dir changed
        assert files(embedded.root) == before
        found = (await call(client, "recall", query="peanuts allergic"))["memories"]
        assert [(m["id"], m["text"], m["pinned"]) for m in found][:1] == [
            (pinned.id, ALLERGY, True)
        ]

    run(build_server(embedded), body)
    assert embedded.get(pinned.id).memory == pinned


@pytest.mark.parametrize("change", ["rewrite", "supersede", "unpin"])
def test_a_pin_made_between_the_agents_read_and_its_write_is_kept(
    embedded: Any, change: str
) -> None:
    """The tool writes at the revision it checked: a person pinning the memory in between
    makes the write a conflict, so the change never lands on the now pinned memory."""
    note = embedded.save(NOTE).memory
    other = embedded.save(ALLERGY).memory
    pinned_after_read: list[str] = []

    def a_person_pins_after_the_read(op: Op[Any]) -> object:
        answer = embedded.call(op)
        if isinstance(op, ops.Get) and op.id == note.id and not pinned_after_read:
            pinned_after_read.append(embedded.pin(note.id, True).memory.id)
        return answer

    tool, given = CHANGES[change]
    arguments = {k: {"P": note.id, "O": other.id}.get(v, v) for k, v in given.items()}

    async def body(client: Client) -> None:
        category, text = await refused(client, tool, **arguments)
        assert category == "invalid_argument" and "changed since it was read" in text
        # read again, the agent is told it is pinned
        _, text = await refused(client, tool, **arguments)
        says_a_person_holds_it(text, note.id)

    run(build_server(MockStore(a_person_pins_after_the_read)), body)
    assert pinned_after_read == [note.id]
    kept = embedded.get(note.id).memory
    assert (kept.text, kept.pinned, kept.invalid_at) == (NOTE, True, None)


def test_a_server_acting_as_a_scoped_token_refuses_the_same(embedded: Any) -> None:
    """A token that may write its bank still may not change what a person pinned there."""
    pinned = embedded.save(ALLERGY, pinned=True).memory
    note = embedded.save(NOTE).memory
    token = embedded.token_create("agent", banks=["main"])["token"]

    async def body(client: Client) -> None:
        before = files(embedded.root)
        for tool, given in CHANGES.values():
            arguments = {k: {"P": pinned.id, "O": note.id}.get(v, v) for k, v in given.items()}
            category, text = await refused(client, tool, **arguments)
            assert category == "permission_denied"
            says_a_person_holds_it(text, pinned.id)
        assert files(embedded.root) == before
        assert (await call(client, "forget", id=note.id))["action"] == "forgotten"

    run(build_server(embedded, token=token), body)


def test_a_memory_nobody_pinned_stays_the_agents_to_change(embedded: Any) -> None:
    embedded.save(ALLERGY, pinned=True)

    async def body(client: Client) -> None:
        # Given a memory the agent wrote itself
        note = (await call(client, "remember", text=NOTE))["memory"]["id"]
        # it revises it, unpins it (a no-op), supersedes it and forgets the correction
        revised = await call(
            client, "remember", text="The user drafts posts in Obsidian", update_id=note
        )
        assert revised["action"] == "updated"
        assert revised["memory"]["text"] == "The user drafts posts in Obsidian"
        assert (await call(client, "pin", id=note, pinned=False))["memory"]["pinned"] is False
        new = (
            await call(client, "remember", text="The user drafts posts on paper", confirm_new=True)
        )["memory"]
        assert (await call(client, "supersede", id=note, by=new["id"]))["action"] == "superseded"
        assert (await call(client, "forget", id=new["id"]))["action"] == "forgotten"

    run(build_server(embedded), body)


def test_pinning_stays_allowed_and_a_pinned_memory_may_replace_another(embedded: Any) -> None:
    old = embedded.save("The user may be allergic to nuts").memory

    async def body(client: Client) -> None:
        # the agent pins a fact (and pinning it again is the same answer)
        fact = (await call(client, "remember", text=ALLERGY, confirm_new=True))["memory"]["id"]
        assert (await call(client, "pin", id=fact))["memory"]["pinned"] is True
        assert (await call(client, "pin", id=fact, pinned=True))["memory"]["pinned"] is True
        # superseding another memory in favour of the pinned one leaves the pinned one as is
        kept = embedded.get(fact).memory
        done = await call(client, "supersede", id=old.id, by=fact)
        assert done["action"] == "superseded" and done["by"]["id"] == fact
        assert embedded.get(fact).memory == kept
        # once pinned, it is held as a person's: the agent no longer unpins it
        _, text = await refused(client, "pin", id=fact, pinned=False)
        says_a_person_holds_it(text, fact)

    run(build_server(embedded), body)


def test_once_a_person_unpins_it_the_agent_may_change_it(embedded: Any) -> None:
    pinned = embedded.save(ALLERGY, pinned=True).memory

    async def body(client: Client) -> None:
        assert (await refused(client, "forget", id=pinned.id))[0] == "permission_denied"
        embedded.pin(pinned.id, False)  # what `memory unpin ID` does
        assert (await call(client, "forget", id=pinned.id))["action"] == "forgotten"

    run(build_server(embedded), body)


def test_a_near_match_that_is_pinned_is_offered_as_not_revisable(embedded: Any) -> None:
    pinned = embedded.save(ALLERGY, pinned=True).memory

    async def body(client: Client) -> None:
        asked = await call(client, "remember", text="The user is allergic to peanut butter")
        assert asked["action"] == "needs_confirmation"
        assert asked["candidates"][0]["id"] == pinned.id
        assert asked["candidates"][0]["pinned"] is True
        assert "pinned candidate is a person's" in asked["hint"]

    run(build_server(embedded), body)


def test_the_tool_descriptions_say_pinned_memories_are_off_limits(embedded: Any) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("remember", "forget", "supersede", "pin"):
            assert "pinned" in (tools[name].description or "").lower(), name
        for name in ("forget", "pin"):
            assert "memory unpin ID" in (tools[name].description or ""), name
        pinned = tools["pin"].input_schema["properties"]["pinned"]["description"]
        assert "refused for a pinned memory" in pinned
        assert "pinned memory" in (client.instructions or "")

    run(build_server(embedded), body)


def test_over_stdio_a_memory_the_cli_pinned_is_refused_to_the_agent(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    """The whole path: a person pins with the CLI, the agent runs `memory mcp` over stdio."""
    data = tmp_path / "data"
    saved = subprocess.run(
        [*memory_cmd, "save", ALLERGY, "--pin", "--json", "--data-dir", str(data)],
        env=memory_env,
        capture_output=True,
        text=True,
        check=True,
    )
    id = json.loads(saved.stdout)["memory"]["id"]
    params = StdioServerParameters(
        command=memory_cmd[0],
        args=[*memory_cmd[1:], "mcp", "--data-dir", str(data)],
        env=memory_env,
    )

    async def body(client: Client) -> None:
        await call(client, "recall", query="peanuts")
        before = files(data)
        for tool, arguments in [
            ("forget", {"id": id}),
            ("pin", {"id": id, "pinned": False}),
            ("remember", {"text": "The user eats peanuts", "update_id": id}),
        ]:
            category, text = await refused(client, tool, **arguments)
            assert category == "permission_denied"
            says_a_person_holds_it(text, id)
        assert files(data) == before

    run(params, body)
    shown = subprocess.run(
        [*memory_cmd, "get", id, "--json", "--data-dir", str(data)],
        env=memory_env,
        capture_output=True,
        text=True,
        check=True,
    )
    memory = json.loads(shown.stdout)["memory"]
    assert (memory["text"], memory["pinned"], memory["invalid_at"]) == (ALLERGY, True, None)


# -- the memory-tool backend ---------------------------------------------------------------------

MEMORIES = "/memories/main/memories.md"


@pytest.fixture
def pinned_bank(embedded: Any) -> tuple[str, str]:
    """(pinned id, unpinned id) in the bank ``main``, with a rule beside them."""
    pinned = embedded.save(ALLERGY, pinned=True).memory.id
    other = embedded.save(NOTE).memory.id
    embedded.rule_set("style", "Answer briefly.\n")
    return pinned, other


WHOLE_FILE: dict[str, dict[str, Any]] = {
    "delete": {"command": "delete", "path": MEMORIES},
    "create": {"command": "create", "path": MEMORIES, "file_text": "- nothing pinned\n"},
    "rename away": {
        "command": "rename",
        "old_path": MEMORIES,
        "new_path": "/memories/main/rules/moved.md",
    },
    "rename onto": {
        "command": "rename",
        "old_path": "/memories/main/rules/style.md",
        "new_path": MEMORIES,
    },
    "str_replace": {
        "command": "str_replace",
        "path": MEMORIES,
        "old_str": "allergic to peanuts",
        "new_str": "fine with peanuts",
    },
}


@pytest.mark.parametrize("change", sorted(WHOLE_FILE))
def test_the_memory_tool_refuses_a_change_to_a_pinned_memory_and_writes_nothing(
    embedded: Any, pinned_bank: tuple[str, str], change: str
) -> None:
    pinned, other = pinned_bank
    tool = MemoryToolBackend(embedded, allow_rule_edits=True)
    call = WHOLE_FILE[change]
    before = files(embedded.root)
    with pytest.raises(PinnedMemoryError) as refused:
        tool.execute(call)
    assert refused.value.category == "permission_denied"
    says_a_person_holds_it(refused.value.message, pinned)
    assert other not in refused.value.message  # only the pinned one is named
    # the tool_result block the model is given says the same
    result = tool.tool_result(call)
    assert result["is_error"] and result["content"].startswith("permission_denied: ")
    assert files(embedded.root) == before


def test_the_memory_tool_still_adds_beside_a_pinned_memory(
    embedded: Any, pinned_bank: tuple[str, str]
) -> None:
    pinned, other = pinned_bank
    tool = MemoryToolBackend(embedded)
    # a replace on a line nobody pinned is refused as before (memories.md is read-only)
    with pytest.raises(MemoryFileError, match="read-only"):
        tool.execute(
            {"command": "str_replace", "path": MEMORIES, "old_str": "notes app", "new_str": "x"}
        )
    # an insert adds a memory; the pinned one is listed as it was
    answer = tool.execute(
        {"command": "insert", "path": MEMORIES, "insert_line": 0, "insert_text": "Ship Fridays"}
    )
    assert answer.startswith("Memory saved:")
    shown = tool.execute({"command": "view", "path": MEMORIES})
    assert f"[{pinned}] {ALLERGY}" in shown and f"[{other}] {NOTE}" in shown
    assert "Ship Fridays" in shown


def test_a_replace_spanning_into_a_pinned_line_is_refused_as_pinned(
    embedded: Any, pinned_bank: tuple[str, str]
) -> None:
    pinned, _ = pinned_bank
    tool = MemoryToolBackend(embedded)
    text = tool.execute({"command": "view", "path": MEMORIES})
    lines = [line.split("\t", 1)[1] for line in text.splitlines()]
    # the end of one line and the start of the next: whichever order, the pinned one is in it
    spanning = lines[0][-6:] + "\n" + lines[1][:8]
    with pytest.raises(errors.PermissionDeniedError) as refused:
        tool.execute(
            {"command": "str_replace", "path": MEMORIES, "old_str": spanning, "new_str": ""}
        )
    says_a_person_holds_it(refused.value.message, pinned)


def test_the_memory_tool_on_a_bank_with_nothing_pinned_answers_as_before(embedded: Any) -> None:
    embedded.save(NOTE)
    tool = MemoryToolBackend(embedded)
    for call in (
        {"command": "delete", "path": MEMORIES},
        {"command": "create", "path": MEMORIES, "file_text": "x"},
        {"command": "delete", "path": "/memories/nobank/memories.md"},
    ):
        with pytest.raises(MemoryFileError, match="read-only"):
            tool.execute(call)
