"""The mem0-compatible ``Memory`` (``integrations.mem0_compat``): mem0's documented quickstart
run unchanged but for its import line, against a running store found as ``Memory()`` finds it
(a real gateway, its model a local OpenAI-compatible stub reached through litellm's real HTTP
path); then each method's answers and the id mapping, embedded and through a gateway."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from integrations.mem0_compat import Memory, bank_of
from shared.client import connect, gateway_file
from shared.contract.errors import InvalidArgumentError, NotFoundError
from shared.llm import LiteLLMBackend
from tests.shared.llm.stub import Server, serving

MODEL = "openai/gpt-4o-mini"
GITHUB_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
DOC_ID = "892db2ae-06d9-49e5-8b3e-585ef9b85b8e"  # the id mem0's quickstart uses


def reply(*texts: str, **fields: Any) -> str:
    """An extraction reply (the extractor's schema) naming ``texts`` as memories."""
    memories = [{"text": t, "type": "user", "entities": ["user"], **fields} for t in texts]
    return json.dumps({"memories": memories, "rules": []})


SCI_FI = reply("The user loves sci-fi movies.", "The user is not a big fan of thriller movies.")

# mem0's Python quickstart (docs/v0x/open-source/python-quickstart.mdx, "Basic Usage" and
# "Using All Three Parameters"), as written there but for the import line.
QUICKSTART = """
import os
from integrations.mem0_compat import Memory

os.environ["OPENAI_API_KEY"] = "your-api-key"

m = Memory()

messages = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about a thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future."}
]

# Store inferred memories (default behavior)
result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"})

# Store memories with agent and run context
result = m.add(messages, user_id="alice", agent_id="movie-assistant", run_id="session-001", metadata={"category": "movie_recommendations"})

# Store raw messages without inference
# result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"}, infer=False)

# Get all memories
all_memories = m.get_all(user_id="alice")

# Get a single memory by ID
specific_memory = m.get("892db2ae-06d9-49e5-8b3e-585ef9b85b8e")

related_memories = m.search(query="What do you know about me?", user_id="alice")

result = m.update(memory_id="892db2ae-06d9-49e5-8b3e-585ef9b85b8e", data="I love India, it is my favorite country.")

history = m.history(memory_id="892db2ae-06d9-49e5-8b3e-585ef9b85b8e")

# Store memories with full context
m.add("User prefers vegetarian food",
      user_id="alice",
      agent_id="diet-assistant",
      run_id="consultation-001")

# Retrieve memories with different scopes
all_user_memories = m.get_all(user_id="alice")
agent_memories = m.get_all(user_id="alice", agent_id="diet-assistant")
session_memories = m.get_all(user_id="alice", run_id="consultation-001")
specific_memories = m.get_all(user_id="alice", agent_id="diet-assistant", run_id="consultation-001")

# Search with context
general_search = m.search("What do you know about me?", user_id="alice")
agent_search = m.search("What do you know about me?", user_id="alice", agent_id="diet-assistant")
session_search = m.search("What do you know about me?", user_id="alice", run_id="consultation-001")

# Delete a memory by id
m.delete(memory_id="892db2ae-06d9-49e5-8b3e-585ef9b85b8e")
# Delete all memories for a user
m.delete_all(user_id="alice")

m.reset() # Reset all memories
"""  # noqa: E501  (the snippets as mem0 wrote them)

# mem0's current Python quickstart (docs.mem0.ai/open-source/python-quickstart), likewise.
QUICKSTART_V1 = """
from integrations.mem0_compat import Memory

m = Memory()

messages = [
    {"role": "user", "content": "Hi, I'm Alex. I love basketball and gaming."},
    {"role": "assistant", "content": "Hey Alex! I'll remember your interests."}
]
m.add(messages, user_id="alex")

results = m.search("What do you know about me?", filters={"user_id": "alex"})
print(results)
"""


@pytest.fixture
def stub() -> Iterator[Server]:
    yield from serving()


@pytest.fixture
def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub: Server) -> Iterator[Any]:
    """A store served by a real gateway that ``connect()`` finds through ``MEMORY_DATA_DIR``'s
    record (as ``memory up`` leaves it), and the extraction model set in the environment."""
    from grpc_gateway.server import build_server
    from store_worker.core import MemoryStore

    served = MemoryStore(tmp_path / "served")
    token_file = tmp_path / "token"  # behind a token its record names, as `memory up` leaves it
    token_file.write_text("mem0-gateway-token\n")
    server, port = build_server(served, port=0, token="mem0-gateway-token")
    server.start()
    record = tmp_path / "data"
    gateway_file.write(record, f"127.0.0.1:{port}", token_file)
    monkeypatch.setenv("MEMORY_DATA_DIR", str(record))
    monkeypatch.delenv("MEMORY_EMBEDDED", raising=False)
    monkeypatch.delenv("MEMORY_GRPC_TOKEN", raising=False)
    monkeypatch.setenv("MEMORY_EXTRACTION_MODEL", MODEL)
    monkeypatch.setenv("MEMORY_EXTRACTION_API_BASE", stub.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")  # the snippet sets it; restored after
    try:
        yield served
    finally:
        server.stop(None)
        served.close()


def turn_of(body: dict[str, Any]) -> str:
    """The turn an extraction request carries (after the known memories in its prompt)."""
    return str(body["messages"][-1]["content"]).split("The turn")[-1]


def by_turn(body: dict[str, Any]) -> str:
    """The stub model: the vegetarian fact for that message, else the movie facts."""
    if "vegetarian" in turn_of(body):
        return reply("The user prefers vegetarian food.")
    return SCI_FI


def test_the_quickstart_runs_unchanged_but_for_the_import(running: Any, stub: Server) -> None:
    # Given the running store, a model, and the memory the quickstart's literal id names
    stub.reply = by_turn
    running.save(
        "User is planning to watch a movie tonight.",
        bank="alice",
        id=DOC_ID,
        tags=["mem0"],
        title='{"mem0": {"user_id": "alice", "metadata": {"category": "movie_recommendations"}}}',
    )

    # When the quickstart runs
    scope: dict[str, Any] = {}
    exec(compile(QUICKSTART, "quickstart", "exec"), scope)

    # Then each add made one model call through the stub, the turn in its prompt
    assert len(stub.requests) == 3
    assert "I love sci-fi movies" in turn_of(stub.requests[0][2])
    # get_all answers mem0's rows: the seeded memory and the two facts (the second add
    # restated them: reinforced, not duplicated)
    first = scope["all_memories"]["results"]
    assert sorted(r["memory"] for r in first) == [
        "The user is not a big fan of thriller movies.",
        "The user loves sci-fi movies.",
        "User is planning to watch a movie tonight.",
    ]
    assert all(r["user_id"] == "alice" for r in first)
    assert all(r["metadata"] == {"category": "movie_recommendations"} for r in first)
    assert all(len(r["hash"]) == 32 and r["created_at"] for r in first)
    assert scope["specific_memory"]["id"] == DOC_ID
    assert scope["specific_memory"]["memory"] == "User is planning to watch a movie tonight."
    assert {r["memory"] for r in scope["related_memories"]["results"]} >= {
        "The user loves sci-fi movies.",
        "The user is not a big fan of thriller movies.",
    }
    assert all(0 < r["score"] <= 1 for r in scope["related_memories"]["results"])
    assert scope["result"] == {"message": "Memory updated successfully!"}
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in scope["history"]] == [
        ("ADD", None, "User is planning to watch a movie tonight."),
        (
            "UPDATE",
            "User is planning to watch a movie tonight.",
            "I love India, it is my favorite country.",
        ),
    ]
    # the three ids filter as mem0's do: any subset of them
    veg = "The user prefers vegetarian food."
    for name in ("agent_memories", "session_memories", "specific_memories"):
        assert [r["memory"] for r in scope[name]["results"]] == [veg], name
    row = scope["specific_memories"]["results"][0]
    assert (row["user_id"], row["agent_id"], row["run_id"]) == (
        "alice",
        "diet-assistant",
        "consultation-001",
    )
    assert len(scope["all_user_memories"]["results"]) == 4
    assert veg in {r["memory"] for r in scope["general_search"]["results"]}
    assert [r["memory"] for r in scope["agent_search"]["results"]] == [veg]
    assert [r["memory"] for r in scope["session_search"]["results"]] == [veg]
    # and delete, delete_all and reset left no live memory
    assert scope["m"].get(DOC_ID) is None
    assert running.list(bank="alice").total == 0


def test_the_current_quickstart_runs_too(
    running: Any, stub: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    stub.reply = reply("The user's name is Alex.", "The user loves basketball and gaming.")

    exec(compile(QUICKSTART_V1, "quickstart", "exec"), {})

    printed = capsys.readouterr().out
    assert "The user loves basketball and gaming." in printed
    assert running.list(bank="alex").total == 2


# -- each method, embedded and through a gateway -------------------------------------------


@pytest.fixture
def m(store_target: str) -> Iterator[Memory]:
    with Memory(store_target) as opened:
        yield opened


def test_add_without_inference_keeps_each_message_redacted(m: Memory) -> None:
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": f"my token is {GITHUB_TOKEN}", "name": "al"},
        {"role": "assistant", "content": "Noted."},
    ]

    added = m.add(messages, user_id="alice", metadata={"k": "v"}, infer=False)["results"]

    assert [(r["memory"], r["event"], r["role"]) for r in added] == [
        ("my token is [REDACTED:github_token]", "ADD", "user"),
        ("Noted.", "ADD", "assistant"),
    ]
    assert added[0]["actor_id"] == "al" and added[0]["metadata"] == {"k": "v"}
    got = m.get(added[0]["id"])
    assert got is not None
    assert got["memory"] == "my token is [REDACTED:github_token]"
    assert (got["user_id"], got["actor_id"], got["role"]) == ("alice", "al", "user")
    assert got["updated_at"] is None


def test_equal_messages_stay_apart_and_each_add_is_its_own(m: Memory) -> None:
    m.add("I like tea", user_id="alice", infer=False)
    m.add("I like tea", user_id="alice", infer=False)

    assert [r["memory"] for r in m.get_all(user_id="alice")["results"]] == ["I like tea"] * 2


def test_a_user_id_that_is_no_bank_name_gets_a_bank_of_its_own(
    m: Memory, store_target: str
) -> None:
    m.add("I like tea", user_id="Alice@Example.org", infer=False)
    m.add("I like coffee", user_id="bob", infer=False)

    rows = m.get_all(user_id="Alice@Example.org")["results"]

    assert [(r["memory"], r["user_id"]) for r in rows] == [("I like tea", "Alice@Example.org")]
    assert bank_of("Alice@Example.org").startswith("alice-example-org-")
    assert bank_of("bob") == "bob"
    m.close()
    with connect(store_target) as raw:
        assert {b.name for b in raw.bank_list().banks} >= {"bob", bank_of("Alice@Example.org")}


def test_ids_and_metadata_filter(m: Memory) -> None:
    m.add("fact one", user_id="u", agent_id="a1", run_id="r1", metadata={"c": 1}, infer=False)
    m.add("fact two", user_id="u", agent_id="a1", run_id="r2", metadata={"c": 2}, infer=False)
    m.add("fact three", user_id="u", agent_id="a2", infer=False)

    def texts(answer: dict[str, Any]) -> list[str]:
        return sorted(r["memory"] for r in answer["results"])

    assert texts(m.get_all(user_id="u")) == ["fact one", "fact three", "fact two"]
    assert texts(m.get_all(user_id="u", agent_id="a1")) == ["fact one", "fact two"]
    assert texts(m.get_all(user_id="u", run_id="r2")) == ["fact two"]
    assert texts(m.get_all(agent_id="a2", user_id="u")) == ["fact three"]
    assert texts(m.get_all(user_id="u", filters={"c": 1})) == ["fact one"]
    assert texts(m.search("fact", user_id="u", agent_id="a1", filters={"c": 2})) == ["fact two"]
    assert texts(m.search("fact", filters={"user_id": "u", "run_id": "r1"})) == ["fact one"]
    assert len(m.get_all(user_id="u", limit=2)["results"]) == 2
    assert len(m.search("fact", user_id="u", limit=1)["results"]) == 1
    assert m.search("fact", user_id="u", threshold=1.01)["results"] == []


def test_update_history_and_delete(m: Memory) -> None:
    [row] = m.add("I live in Lisbon", user_id="alice", infer=False)["results"]

    assert m.update(row["id"], "I live in Porto") == {"message": "Memory updated successfully!"}
    got = m.get(row["id"])
    assert got is not None and got["memory"] == "I live in Porto"
    assert got["updated_at"] is not None
    assert m.delete(row["id"]) == {"message": "Memory deleted successfully!"}

    assert m.get(row["id"]) is None
    history = m.history(row["id"])
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "I live in Lisbon"),
        ("UPDATE", "I live in Lisbon", "I live in Porto"),
        ("DELETE", "I live in Porto", None),
    ]
    assert [h["is_deleted"] for h in history] == [False, False, True]


def test_a_fresh_client_finds_a_memory_by_its_id_alone(store_target: str) -> None:
    with Memory(store_target) as first:
        [row] = first.add("I like tea", user_id="carol", infer=False)["results"]
    with Memory(store_target) as second:
        got = second.get(row["id"])
        assert got is not None and got["user_id"] == "carol"
        assert second.history(row["id"])[0]["event"] == "ADD"


def test_bad_calls_are_refused_and_write_nothing(m: Memory) -> None:
    with pytest.raises(InvalidArgumentError, match="user_id"):
        m.add("hello", infer=False)
    with pytest.raises(InvalidArgumentError, match="credential"):
        m.add("hello", user_id=GITHUB_TOKEN, infer=False)
    with pytest.raises(InvalidArgumentError, match="characters"):
        m.add("hello", user_id="alice", metadata={"big": "x" * 300}, infer=False)
    with pytest.raises(InvalidArgumentError, match="message"):
        m.add([{"role": "user"}], user_id="alice", infer=False)
    with pytest.raises(InvalidArgumentError, match="not supported"):
        m.add("hello", user_id="alice", memory_type="procedural_memory")
    with pytest.raises(InvalidArgumentError, match="limit"):
        m.search("hello", user_id="alice", limit=0)
    with pytest.raises(NotFoundError):
        m.update("00000000-0000-4000-8000-000000000000", "x")
    assert m.get("00000000-0000-4000-8000-000000000000") is None
    assert m.get_all(user_id="alice")["results"] == []


def test_inference_without_a_model_says_what_to_do(
    m: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORY_EXTRACTION_MODEL", raising=False)

    with pytest.raises(InvalidArgumentError, match="infer=False"):
        m.add("I like tea", user_id="alice")

    assert m.get_all(user_id="alice")["results"] == []


def test_inference_answers_what_it_added_updated_and_restated(store_target: str) -> None:
    # Given a model (litellm's real call path, its mock provider) that learns two facts
    first = reply("The user lives in Lisbon.", "The user likes tea.")
    with Memory(store_target, model=MODEL, llm=LiteLLMBackend(mock_response=first)) as m:
        added = m.add("I live in Lisbon and like tea", user_id="dana", metadata={"src": "chat"})
    assert [(r["event"], r["memory"]) for r in added["results"]] == [
        ("ADD", "The user lives in Lisbon."),
        ("ADD", "The user likes tea."),
    ]
    assert all(r["metadata"] == {"src": "chat"} for r in added["results"])
    lisbon, tea = (r["id"] for r in added["results"])

    # When it then corrects one and restates the other
    second = json.dumps(
        {
            "memories": [
                {"text": "The user lives in Porto.", "supersedes": lisbon},
                {"text": "The user likes tea.", "reinforces": tea},
            ],
            "rules": [],
        }
    )
    with Memory(store_target, model=MODEL, llm=LiteLLMBackend(mock_response=second)) as m:
        changed = m.add("I moved to Porto; still like tea", user_id="dana")["results"]
        rows = m.get_all(user_id="dana")["results"]

    # Then the correction is an UPDATE naming what it replaced, the restatement a NONE
    assert [(r["event"], r["memory"]) for r in changed] == [
        ("UPDATE", "The user lives in Porto."),
        ("NONE", "The user likes tea."),
    ]
    assert changed[0]["previous_memory"] == "The user lives in Lisbon."
    assert sorted(r["memory"] for r in rows) == ["The user likes tea.", "The user lives in Porto."]


def test_from_config_names_the_model_as_litellm_does(tmp_path: Path) -> None:
    config = {"llm": {"provider": "openai", "config": {"model": "gpt-4o-mini"}}}
    with Memory.from_config(config, store=f"file:{tmp_path / 'data'}") as m:
        assert m.model == "openai/gpt-4o-mini"
