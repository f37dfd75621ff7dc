"""Where the mem0-compatible ``Memory`` must answer as mem0's own does (mem0/memory/main.py):
the errors a mem0 user catches (``ValueError``), ``update``'s metadata merge, the ``top_k``
of mem0's newer ``search``/``get_all``, an empty conversation, the raw rows' keys, metadata
filter operators, and the ``llm`` providers ``from_config`` names as litellm knows them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from integrations.mem0_compat import Memory
from shared.contract.errors import InvalidArgumentError, NotFoundError

MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def m(store_target: str) -> Iterator[Memory]:
    with Memory(store_target) as opened:
        yield opened


def texts(answer: dict[str, Any]) -> list[str]:
    return sorted(r["memory"] for r in answer["results"])


def test_mem0s_errors_are_value_errors_as_mem0_raises_them(m: Memory) -> None:
    # mem0 raises ValueError (its validation error is one too): `except ValueError` must catch
    with pytest.raises(ValueError, match="user_id"):
        m.add("hello", infer=False)
    with pytest.raises(ValueError, match="reset"):
        m.delete_all()
    with pytest.raises(ValueError, match="not found"):
        m.update(MISSING, "x")
    with pytest.raises(ValueError, match="not found"):
        m.delete(MISSING)
    with pytest.raises(ValueError, match="threshold"):
        m.search("x", user_id="alice", threshold="high")
    # and they stay this store's typed errors
    with pytest.raises(NotFoundError):
        m.delete(MISSING)
    with pytest.raises(InvalidArgumentError):
        m.search("x", user_id="alice", limit=0)
    assert m.get_all(user_id="alice")["results"] == []


def test_history_of_an_unknown_id_is_empty_as_mem0s(m: Memory) -> None:
    assert m.history(MISSING) == []


def test_update_merges_metadata_as_mem0_does(m: Memory) -> None:
    [row] = m.add("I like tea", user_id="alice", metadata={"a": 1, "b": 2}, infer=False)["results"]

    m.update(row["id"], "I like green tea", metadata={"b": 3, "c": 4})

    got = m.get(row["id"])
    assert got is not None and got["memory"] == "I like green tea"
    assert got["metadata"] == {"a": 1, "b": 3, "c": 4}
    assert (got["user_id"], got["role"]) == ("alice", "user")


def test_top_k_is_mem0s_newer_name_for_limit(m: Memory) -> None:
    for text in ("fact one", "fact two", "fact three"):
        m.add(text, user_id="u", infer=False)

    assert len(m.search("fact", filters={"user_id": "u"}, top_k=2)["results"]) == 2
    assert len(m.get_all(filters={"user_id": "u"}, top_k=1)["results"]) == 1
    with pytest.raises(InvalidArgumentError, match="limit"):
        m.search("fact", user_id="u", limit=2, top_k=1)


def test_an_empty_conversation_adds_nothing(m: Memory) -> None:
    assert m.add([], user_id="alice", infer=False) == {"results": []}
    assert m.add([], user_id="alice") == {"results": []}  # no model call: nothing to read
    assert m.get_all(user_id="alice")["results"] == []


def test_a_raw_row_names_its_actor_and_role_as_mem0s(m: Memory) -> None:
    [row] = m.add("I like tea", user_id="alice", infer=False)["results"]

    assert set(row) >= {"id", "memory", "event", "actor_id", "role"}
    assert (row["event"], row["actor_id"], row["role"]) == ("ADD", None, "user")


def test_metadata_filters_take_mem0s_operators(m: Memory) -> None:
    m.add("one", user_id="u", metadata={"n": 1, "tag": "Red"}, infer=False)
    m.add("two", user_id="u", metadata={"n": 2, "tag": "blue"}, infer=False)
    m.add("three", user_id="u", metadata={"n": 3}, infer=False)

    def having(**filters: Any) -> list[str]:
        return texts(m.get_all(filters={"user_id": "u", **filters}))

    assert having(n={"gte": 2}) == ["three", "two"]
    assert having(n={"gt": 1, "lt": 3}) == ["two"]
    assert having(n={"in": [1, 3]}) == ["one", "three"]
    assert having(n={"nin": [1, 3]}) == ["two"]
    assert having(n={"ne": 2}) == ["one", "three"]
    assert having(n={"eq": 2}) == ["two"]
    assert having(tag={"icontains": "red"}) == ["one"]
    assert having(tag={"contains": "lu"}) == ["two"]
    assert having(tag="*") == ["one", "two"]
    assert having(OR=[{"n": 1}, {"tag": "blue"}]) == ["one", "two"]
    assert having(AND=[{"n": {"gte": 2}}, {"tag": "*"}]) == ["two"]
    assert having(NOT=[{"n": 1}]) == ["three", "two"]
    assert texts(m.search("one two three", filters={"user_id": "u", "n": {"lte": 1}})) == ["one"]
    with pytest.raises(InvalidArgumentError, match="operator"):
        having(n={"near": 2})


@pytest.mark.parametrize(
    ("provider", "model", "named"),
    [
        ("openai", "gpt-4o-mini", "openai/gpt-4o-mini"),
        ("litellm", "gpt-4o-mini", "gpt-4o-mini"),  # already litellm's name
        ("litellm", "anthropic/claude-3-5-haiku", "anthropic/claude-3-5-haiku"),
        ("azure_openai", "my-deployment", "azure/my-deployment"),
        ("aws_bedrock", "anthropic.claude-v2", "bedrock/anthropic.claude-v2"),
        ("together", "mistralai/Mixtral-8x7B", "together_ai/mistralai/Mixtral-8x7B"),
        ("lmstudio", "llama-3", "lm_studio/llama-3"),
        ("vllm", "llama-3", "hosted_vllm/llama-3"),
        ("openai_structured", "gpt-4o", "openai/gpt-4o"),
        ("ollama", "llama3.1:latest", "ollama/llama3.1:latest"),
    ],
)
def test_from_config_names_each_provider_as_litellm_does(
    tmp_path: Path, provider: str, model: str, named: str
) -> None:
    config = {"llm": {"provider": provider, "config": {"model": model}}}
    with Memory.from_config(config, store=f"file:{tmp_path / 'data'}") as m:
        assert m.model == named


def test_from_config_refuses_a_provider_litellm_cannot_call(tmp_path: Path) -> None:
    config = {"llm": {"provider": "langchain", "config": {"model": "x"}}}
    with pytest.raises(InvalidArgumentError, match="langchain"):
        Memory.from_config(config, store=f"file:{tmp_path / 'data'}")


def test_a_query_and_ids_are_checked_and_trimmed_as_mem0s(m: Memory) -> None:
    [row] = m.add("I like tea", user_id=" alice ", infer=False)["results"]

    assert texts(m.get_all(user_id="alice")) == ["I like tea"]  # mem0 trims an id
    got = m.get(row["id"])
    assert got is not None and got["user_id"] == "alice"
    for query in ("", "   "):
        with pytest.raises(ValueError, match="query"):
            m.search(query, user_id="alice")
    with pytest.raises(ValueError, match="user_id"):
        m.get_all(user_id="  ")
    assert texts(m.search("tea", user_id="alice", rerank=True)) == ["I like tea"]


def test_get_has_mem0s_keys(m: Memory) -> None:
    [row] = m.add("I like tea", user_id="alice", infer=False)["results"]

    got = m.get(row["id"])

    assert got is not None
    assert set(got) >= {"id", "memory", "hash", "metadata", "score", "created_at", "updated_at"}
    assert got["score"] is None and got["user_id"] == "alice"


def test_a_raw_turn_refused_in_its_last_message_writes_none_of_it(m: Memory) -> None:
    turn = [
        {"role": "user", "content": "I like tea"},
        {"role": "user", "content": "and coffee", "name": "n" * 250},
    ]

    with pytest.raises(ValueError, match="characters"):
        m.add(turn, user_id="alice", infer=False)

    assert m.get_all(user_id="alice")["results"] == []


def test_from_config_calls_the_model_with_the_configs_key_and_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mem0's configuration page: the llm's api_key and base URL live in the config itself
    from tests.shared.llm.stub import serving

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MEMORY_EXTRACTION_API_BASE", raising=False)
    for stub in serving():
        stub.reply = json.dumps(
            {"memories": [{"text": "The user likes tea.", "type": "user"}], "rules": []}
        )
        config = {
            "vector_store": {"provider": "qdrant", "config": {"host": "localhost", "port": 6333}},
            "llm": {
                "provider": "openai",
                "config": {
                    "model": "gpt-4o-mini",
                    "api_key": "sk-from-config",
                    "openai_base_url": stub.url,
                    "temperature": 0.1,
                },
            },
        }
        with Memory.from_config(config, store=f"file:{tmp_path / 'data'}") as m:
            added = m.add("I like tea", user_id="alice")["results"]
            assert "sk-from-config" not in repr(m.llm)
        assert [(r["event"], r["memory"]) for r in added] == [("ADD", "The user likes tea.")]
        [(_, headers, body)] = stub.requests
        assert headers["authorization"] == "Bearer sk-from-config"
        assert body["model"] == "gpt-4o-mini"


def test_history_rows_have_uuid_ids_as_mem0s(m: Memory) -> None:
    import uuid

    [row] = m.add("I like tea", user_id="alice", infer=False)["results"]
    m.update(row["id"], "I like green tea")

    ids = [h["id"] for h in m.history(row["id"])]

    assert len(ids) == 2 and len(set(ids)) == 2
    assert all(str(uuid.UUID(i)) == i for i in ids)
    assert [h["id"] for h in m.history(row["id"])] == ids  # the same rows read again


def test_filters_reach_the_actor_and_role_as_mem0s_payload_does(m: Memory) -> None:
    turn = [
        {"role": "user", "content": "I like tea", "name": "al"},
        {"role": "assistant", "content": "Noted, tea."},
    ]
    m.add(turn, user_id="alice", infer=False)

    assert texts(m.get_all(filters={"user_id": "alice", "actor_id": "al"})) == ["I like tea"]
    assert texts(m.get_all(filters={"user_id": "alice", "role": "assistant"})) == ["Noted, tea."]
    found = m.search("tea", filters={"user_id": "alice", "role": {"ne": "assistant"}})
    assert texts(found) == ["I like tea"]


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"custom_fact_extraction_prompt": "Extract only food."}, "custom_fact_extraction_prompt"),
        ({"custom_instructions": "Only food."}, "custom_instructions"),
        ({"graph_store": {"provider": "neo4j", "config": {"url": "bolt://x"}}}, "graph_store"),
    ],
)
def test_from_config_refuses_what_would_change_answers_unseen(
    tmp_path: Path, config: dict[str, Any], named: str
) -> None:
    # a custom prompt is refused as add(prompt=) is; a graph store's "relations" never come
    with pytest.raises(ValueError, match=named):
        Memory.from_config(config, store=f"file:{tmp_path / 'data'}")
    assert not (tmp_path / "data").exists()  # refused before the store is opened


def test_from_config_ignores_the_stores_it_does_not_need(tmp_path: Path) -> None:
    config = {
        "vector_store": {"provider": "qdrant", "config": {"host": "localhost", "port": 6333}},
        "embedder": {"provider": "openai", "config": {"model": "text-embedding-3-small"}},
        "history_db_path": str(tmp_path / "history.db"),
        "version": "v1.1",
    }
    with Memory.from_config(config, store=f"file:{tmp_path / 'data'}") as m:
        assert m.add("I like tea", user_id="alice", infer=False)["results"]
    assert not (tmp_path / "history.db").exists()


def test_id_filters_take_the_wildcard_and_operators(m: Memory) -> None:
    m.add("one", user_id="u", agent_id="a1", run_id="r1", infer=False)
    m.add("two", user_id="u", agent_id="a2", infer=False)
    m.add("three", user_id="u", agent_id="a3", infer=False)
    m.add("four", user_id="u", infer=False)

    def having(**filters: Any) -> list[str]:
        return texts(m.get_all(filters={"user_id": "u", **filters}))

    assert having(run_id="*") == ["one"]
    assert having(agent_id="*") == ["one", "three", "two"]
    assert having(agent_id={"in": ["a1", "a2"]}) == ["one", "two"]
    assert having(agent_id={"ne": "a1"}) == ["four", "three", "two"]  # no agent is not a1
    assert having(AND=[{"user_id": "u"}, {"agent_id": "a2"}]) == ["two"]
    found = m.search("one two", filters={"user_id": "u", "agent_id": {"nin": ["a2"]}})
    assert "two" not in texts(found)
    with pytest.raises(ValueError, match="user_id"):
        m.get_all(filters={"user_id": {"in": ["u", "v"]}})


def test_an_agent_or_run_without_a_user_spans_every_users_memories(m: Memory) -> None:
    # mem0 filters by the ids given: agent_id alone is that agent's memories of every user
    m.add("alice likes tea", user_id="alice", agent_id="helper", run_id="r1", infer=False)
    m.add("bob likes tea", user_id="bob", agent_id="helper", infer=False)
    m.add("carol likes tea", user_id="carol", agent_id="other", infer=False)

    rows = m.get_all(agent_id="helper")["results"]
    assert sorted((r["memory"], r["user_id"]) for r in rows) == [
        ("alice likes tea", "alice"),
        ("bob likes tea", "bob"),
    ]
    assert texts(m.search("likes tea", agent_id="helper")) == ["alice likes tea", "bob likes tea"]
    assert texts(m.search("likes tea", filters={"run_id": "r1"})) == ["alice likes tea"]
    assert len(m.search("likes tea", agent_id="helper", limit=1)["results"]) == 1

    m.delete_all(agent_id="helper")

    assert texts(m.get_all(filters={"agent_id": "*"})) == ["carol likes tea"]


def test_a_memory_given_a_bank_reads_only_that_bank(store_target: str) -> None:
    with Memory(store_target) as m:
        m.add("in the team bank", agent_id="helper", infer=False)  # the store's default bank
        m.add("alice's", user_id="alice", agent_id="helper", infer=False)
    with Memory(store_target, bank="team") as m:
        m.add("team's", agent_id="helper", infer=False)
        assert texts(m.get_all(agent_id="helper")) == ["team's"]


def test_a_bad_update_is_refused_and_changes_nothing(m: Memory) -> None:
    [row] = m.add("I like tea", user_id="alice", metadata={"a": 1}, infer=False)["results"]

    for data in (None, 5, ""):
        with pytest.raises(ValueError, match="data"):
            m.update(row["id"], data)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="metadata"):
        m.update(row["id"], "I like coffee", metadata="a=2")  # type: ignore[arg-type]

    got = m.get(row["id"])
    assert got is not None and (got["memory"], got["metadata"]) == ("I like tea", {"a": 1})
    assert [h["event"] for h in m.history(row["id"])] == ["ADD"]
