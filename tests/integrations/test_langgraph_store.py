"""The LangGraph store (``integrations.langgraph_store``) against LangGraph's documented store
contract (``BaseStore``: put, get, search, delete, list_namespaces, batch, abatch), embedded
and through a real gateway, and inside a real LangGraph graph with a fake chat model."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_core")

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)

from integrations.langgraph_store import AgentMemoryStore, memory_id
from shared.client import connect
from shared.contract.errors import InvalidArgumentError

GITHUB_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
BANK = "graph"


@pytest.fixture
def store(store_target: str) -> Iterator[AgentMemoryStore]:
    with AgentMemoryStore(store_target, bank=BANK) as opened:
        yield opened


# -- put, get, delete ------------------------------------------------------------------------


def test_put_then_get_answers_the_value_as_an_item(store: AgentMemoryStore) -> None:
    store.put(("memories", "user-1"), "food", {"likes": ["pizza", "sushi"], "n": 2, "ok": True})

    item = store.get(("memories", "user-1"), "food")

    assert item is not None
    assert item.value == {"likes": ["pizza", "sushi"], "n": 2, "ok": True}
    assert (item.namespace, item.key) == (("memories", "user-1"), "food")
    assert item.created_at == item.updated_at
    assert item.created_at.tzinfo is not None


def test_a_missing_key_or_namespace_gets_none(store: AgentMemoryStore) -> None:
    assert store.get(("memories", "nobody"), "food") is None  # not even a bank yet
    store.put(("memories", "user-1"), "food", {"likes": "pizza"})
    assert store.get(("memories", "user-1"), "drink") is None
    assert store.get(("memories", "user-2"), "food") is None


def test_a_credential_in_the_value_is_stored_and_read_back_redacted(
    store: AgentMemoryStore,
) -> None:
    store.put(("config",), "ci", {"token": GITHUB_TOKEN, "note": f"mine is {GITHUB_TOKEN} ok"})

    item = store.get(("config",), "ci")

    assert item is not None
    assert item.value == {
        "token": "[REDACTED:github_token]",
        "note": "mine is [REDACTED:github_token] ok",
    }
    assert GITHUB_TOKEN not in repr(store.search(("config",)))


def test_a_quoted_password_in_a_value_reads_back_as_json_without_it(
    store: AgentMemoryStore,
) -> None:
    # a context rule reads `password: "..."` across the JSON string's escaped quotes: the
    # value still comes back a dict, the password gone, the rest of the value kept
    store.put(("config",), "db", {"note": 'password: "hunter2", then', "host": "db.local"})

    item = store.get(("config",), "db")

    assert item is not None
    assert item.value["host"] == "db.local"
    assert "hunter2" not in item.value["note"]
    assert item.value["note"].startswith("[REDACTED:")


def test_put_on_a_key_replaces_its_value_and_keeps_its_history(
    store: AgentMemoryStore, store_target: str
) -> None:
    ns = ("memories", "user-1")
    store.put(ns, "food", {"likes": "pizza"})
    first = store.get(ns, "food")
    store.put(ns, "food", {"likes": "tacos"})

    item = store.get(ns, "food")

    assert item is not None and first is not None
    assert item.value == {"likes": "tacos"}
    assert item.created_at == first.created_at
    assert item.updated_at >= first.updated_at
    assert [i.value for i in store.search(ns)] == [{"likes": "tacos"}]  # one item, not two
    store.close()  # the data dir's lock, for the store's own client
    with connect(store_target) as raw:
        history = raw.history(memory_id(ns, "food"), bank=BANK)
    assert [r.text for r in history.revisions] == ['{"likes": "pizza"}', '{"likes": "tacos"}']


def test_two_keys_with_equal_values_stay_two_items(store: AgentMemoryStore) -> None:
    ns = ("memories", "user-1")
    store.put(ns, "a", {"likes": "pizza"})
    store.put(ns, "b", {"likes": "pizza"})

    assert sorted(i.key for i in store.search(ns)) == ["a", "b"]
    store.delete(ns, "a")
    item = store.get(ns, "b")
    assert item is not None and item.value == {"likes": "pizza"}


def test_delete_removes_an_item_and_a_key_can_be_put_again(store: AgentMemoryStore) -> None:
    ns = ("memories", "user-1")
    store.put(ns, "food", {"likes": "pizza"})
    store.delete(ns, "food")
    assert store.get(ns, "food") is None
    assert store.search(ns) == []
    store.delete(ns, "food")  # deleting what is gone is no error

    store.put(ns, "food", {"likes": "ramen"})

    item = store.get(ns, "food")
    assert item is not None and item.value == {"likes": "ramen"}
    store.put(ns, "food", {"likes": "pho"})
    assert [i.value for i in store.search(ns)] == [{"likes": "pho"}]


def test_bad_namespaces_and_keys_are_refused_and_write_nothing(store: AgentMemoryStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})  # LangGraph's own rule: no period in a label
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"v": 1})  # its reserved root
    with pytest.raises(InvalidArgumentError, match="credential"):
        store.put(("secrets",), GITHUB_TOKEN, {"v": 1})
    with pytest.raises(InvalidArgumentError, match="at most 6"):
        store.put(tuple("abcdefg"), "k", {"v": 1})
    assert store.search(()) == []
    assert store.list_namespaces() == []


# -- search ------------------------------------------------------------------------------------


def _seed(store: AgentMemoryStore) -> None:
    store.put(("docs", "user-1"), "r1", {"kind": "report", "year": 2023, "text": "quarterly sales"})
    store.put(("docs", "user-1"), "r2", {"kind": "memo", "year": 2024, "text": "team offsite plan"})
    store.put(("docs", "user-2"), "r3", {"kind": "report", "year": 2025, "text": "annual sales"})
    store.put(("notes",), "n1", {"kind": "report", "year": 2025, "text": "grocery list"})


def test_search_keeps_to_the_namespace_prefix(store: AgentMemoryStore) -> None:
    _seed(store)

    assert sorted(i.key for i in store.search(("docs",))) == ["r1", "r2", "r3"]
    assert sorted(i.key for i in store.search(("docs", "user-1"))) == ["r1", "r2"]
    assert sorted(i.key for i in store.search(())) == ["n1", "r1", "r2", "r3"]
    assert store.search(("docs", "user-9")) == []
    assert all(i.score is None for i in store.search(("docs",)))


def test_search_filters_on_the_value(store: AgentMemoryStore) -> None:
    _seed(store)

    assert sorted(i.key for i in store.search(("docs",), filter={"kind": "report"})) == [
        "r1",
        "r3",
    ]
    assert [i.key for i in store.search((), filter={"year": {"$gt": 2024}, "kind": "memo"})] == []
    assert sorted(i.key for i in store.search((), filter={"year": {"$gte": 2024}})) == [
        "n1",
        "r2",
        "r3",
    ]
    assert sorted(i.key for i in store.search((), filter={"kind": {"$ne": "report"}})) == ["r2"]


def test_search_pages_with_limit_and_offset(store: AgentMemoryStore) -> None:
    for n in range(5):
        store.put(("pages",), f"k{n}", {"n": n})

    pages = [store.search(("pages",), limit=2, offset=o) for o in (0, 2, 4)]

    assert [len(p) for p in pages] == [2, 2, 1]
    assert sorted(i.key for p in pages for i in p) == [f"k{n}" for n in range(5)]


def test_search_with_a_query_recalls_the_matching_items_ranked(store: AgentMemoryStore) -> None:
    _seed(store)

    hits = store.search(("docs",), query="sales report")

    assert {i.key for i in hits} >= {"r1", "r3"}
    assert "n1" not in {i.key for i in hits}  # outside the prefix
    assert all(i.score is not None and 0.0 <= i.score <= 1.0 for i in hits)
    assert [i.score for i in hits] == sorted((i.score or 0.0 for i in hits), reverse=True)
    only = store.search(("docs",), query="sales", filter={"year": 2025})
    assert [i.key for i in only] == ["r3"]


# -- namespaces, batches ---------------------------------------------------------------------


def test_list_namespaces_by_prefix_suffix_and_depth(store: AgentMemoryStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c"), ("z",)]:
        store.put(ns, "k", {"v": 1})

    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c"), ("z",)]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("a", "x", "c")]
    assert store.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c"), ("a", "x", "c")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "x", "c")]


def test_batch_runs_its_ops_in_order_with_one_result_each(store: AgentMemoryStore) -> None:
    ns = ("batch",)

    results = store.batch(
        [
            PutOp(ns, "k1", {"v": 1}),
            GetOp(ns, "k1"),
            PutOp(ns, "k2", {"v": 2}),
            SearchOp(ns, filter={"v": 2}),
            ListNamespacesOp(),
            PutOp(ns, "k1", None),
            GetOp(ns, "k1"),
        ]
    )

    assert results[0] is None and results[2] is None and results[5] is None
    assert results[1] is not None and results[1].value == {"v": 1}
    assert [i.key for i in results[3]] == ["k2"]
    assert results[4] == [ns]
    assert results[6] is None


def test_the_async_methods_go_through_abatch(store: AgentMemoryStore) -> None:
    async def body() -> tuple[Any, ...]:
        ns = ("async", "user-1")
        await store.aput(ns, "k", {"v": "one"})
        got = await store.aget(ns, "k")
        found = await store.asearch(("async",), query="one")
        spaces = await store.alist_namespaces(prefix=("async",))
        both = await store.abatch([GetOp(ns, "k"), GetOp(ns, "missing")])
        await store.adelete(ns, "k")
        return got, found, spaces, both, await store.aget(ns, "k")

    got, found, spaces, both, gone = asyncio.run(body())

    assert got.value == {"v": "one"}
    assert [i.key for i in found] == ["k"]
    assert spaces == [("async", "user-1")]
    assert both[0].value == {"v": "one"} and both[1] is None
    assert gone is None


def test_a_store_handed_in_stays_open(tmp_path: Any) -> None:
    with connect(f"file:{tmp_path / 'data'}") as raw:
        adapter = AgentMemoryStore(raw)
        adapter.put(("x",), "k", {"v": 1})
        adapter.close()
        assert raw.list().total == 1  # still usable: the adapter did not close it


# -- a real graph ----------------------------------------------------------------------------


class Prompts(BaseCallbackHandler):
    """The messages each chat model call was given."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.seen.append("\n".join(str(m.content) for batch in messages for m in batch))


def _graph(store: BaseStore, *, asynchronous: bool) -> Any:
    """LangGraph's documented cross-thread memory pattern: a node reads and writes the
    user's memories through ``store``, the chat model answers with them in its prompt."""
    model = FakeListChatModel(responses=["Nice to meet you, Bob.", "Your name is Bob."])

    def prompt(state: MessagesState, memories: list[Any]) -> list[Any]:
        info = "\n".join(m.value["data"] for m in memories)
        system = {"role": "system", "content": f"User info: {info}"}
        return [system, *state["messages"]]

    def call_model(state: MessagesState, config: RunnableConfig, *, store: BaseStore) -> Any:
        namespace = ("memories", config["configurable"]["user_id"])
        memories = store.search(namespace, query=str(state["messages"][-1].content))
        if "remember" in str(state["messages"][-1].content).lower():
            store.put(namespace, str(uuid.uuid4()), {"data": "User name is Bob"})
        return {"messages": model.invoke(prompt(state, memories))}

    async def acall_model(state: MessagesState, config: RunnableConfig, *, store: BaseStore) -> Any:
        namespace = ("memories", config["configurable"]["user_id"])
        memories = await store.asearch(namespace, query=str(state["messages"][-1].content))
        if "remember" in str(state["messages"][-1].content).lower():
            await store.aput(namespace, str(uuid.uuid4()), {"data": "User name is Bob"})
        return {"messages": await model.ainvoke(prompt(state, memories))}

    builder = StateGraph(MessagesState)
    builder.add_node("call_model", acall_model if asynchronous else call_model)
    builder.add_edge(START, "call_model")
    return builder.compile(checkpointer=InMemorySaver(), store=store)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_a_graph_remembers_across_threads(store: AgentMemoryStore, asynchronous: bool) -> None:
    graph = _graph(store, asynchronous=asynchronous)
    prompts = Prompts()

    def turn(thread: str, text: str) -> Any:
        config: RunnableConfig = {
            "configurable": {"thread_id": thread, "user_id": "user-1"},
            "callbacks": [prompts],
        }
        message = {"messages": [{"role": "user", "content": text}]}
        if asynchronous:
            return asyncio.run(graph.ainvoke(message, config))
        return graph.invoke(message, config)

    turn("thread-1", "Hi! Remember: my name is Bob")
    answer = turn("thread-2", "What is my name? Bob, User name?")

    assert answer["messages"][-1].content == "Your name is Bob."
    assert "User info: User name is Bob" in prompts.seen[-1]  # a new thread saw the memory
    assert [i.value for i in store.search(("memories", "user-1"))] == [{"data": "User name is Bob"}]
