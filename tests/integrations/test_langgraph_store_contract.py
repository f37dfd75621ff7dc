"""The LangGraph store (``integrations.langgraph_store``) where LangGraph's ``BaseStore``
contract is easy to miss: ops handed straight to ``batch``, items from ``get``, puts from many
threads at once, and one script run against both this store and LangGraph's own
``InMemoryStore`` with the same answers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from integrations.langgraph_store import AgentMemoryStore
from shared.contract.errors import InvalidArgumentError

BANK = "graph"


@pytest.fixture
def store(store_target: str) -> Iterator[AgentMemoryStore]:
    with AgentMemoryStore(store_target, bank=BANK) as opened:
        yield opened


def test_get_answers_an_item_not_a_search_result(store: AgentMemoryStore) -> None:
    store.put(("memories", "user-1"), "food", {"likes": "pizza"})

    item = store.get(("memories", "user-1"), "food")
    (batched,) = store.batch([GetOp(("memories", "user-1"), "food")])

    assert type(item) is Item and type(batched) is Item
    assert "score" not in item.dict()  # as LangGraph's stores answer a get
    assert item == batched


@pytest.mark.parametrize(
    "namespace",
    [("a.b",), ("a", ""), ("a", 1), ("a\x00b",)],
    ids=["period", "empty", "not-a-string", "nul"],
)
def test_ops_handed_to_batch_have_their_labels_checked_and_write_nothing(
    store: AgentMemoryStore, namespace: tuple[Any, ...]
) -> None:
    ops = [PutOp(("ok",), "first", {"v": 1}), PutOp(namespace, "k", {"v": 1})]

    with pytest.raises(InvalidNamespaceError):
        store.batch(ops)
    with pytest.raises(InvalidNamespaceError):
        asyncio.run(store.abatch(ops))
    with pytest.raises(InvalidNamespaceError):
        store.batch([SearchOp(namespace)])

    assert store.search(()) == []  # not even the good put before it
    assert store.list_namespaces() == []


def test_a_ttl_handed_to_batch_is_refused_as_put_refuses_it(store: AgentMemoryStore) -> None:
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("a",), "k", {"v": 1}, ttl=5)
    with pytest.raises(NotImplementedError, match="TTL"):
        store.batch([PutOp(("a",), "first", {"v": 1}), PutOp(("a",), "k", {"v": 1}, ttl=5.0)])

    assert store.search(()) == []
    store.batch([PutOp(("a",), "k", {"v": 1}, ttl=None)])  # no TTL is no error
    got = store.get(("a",), "k", refresh_ttl=True)
    assert got is not None and got.value == {"v": 1}


def test_a_bad_value_anywhere_in_a_batch_runs_none_of_it(store: AgentMemoryStore) -> None:
    good = PutOp(("a",), "first", {"v": 1})

    with pytest.raises(InvalidArgumentError, match="JSON"):
        store.batch([good, PutOp(("a",), "when", {"at": datetime.now(UTC)})])
    with pytest.raises(InvalidArgumentError, match="JSON"):
        store.batch([good, PutOp(("a",), "raw", {"data": b"bytes"})])
    with pytest.raises(InvalidArgumentError, match="a dict"):
        store.batch([good, PutOp(("a",), "list", ["not", "a", "dict"])])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="at most 6"):
        store.batch([good, PutOp(tuple("abcdefg"), "k", {"v": 1})])

    assert store.search(()) == []


def test_puts_from_many_threads_keep_one_item_per_key(store: AgentMemoryStore) -> None:
    ns = ("threads",)
    start = threading.Barrier(12)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        start.wait()
        try:
            store.put(ns, f"k{n % 3}", {"n": n})
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert sorted(i.key for i in store.search(ns, limit=50)) == ["k0", "k1", "k2"]
    for key in ("k0", "k1", "k2"):
        item = store.get(ns, key)
        assert item is not None and item.value["n"] % 3 == int(key[1])


# -- the same script against LangGraph's in-memory store --------------------------------------


def _script(store: BaseStore) -> list[Any]:
    """LangGraph's documented memory patterns, each answer reduced to what both stores must
    agree on (not timestamps, scores or the order of an unranked search)."""

    def keys(items: list[Any]) -> list[tuple[tuple[str, ...], str]]:
        return sorted((i.namespace, i.key) for i in items)

    out: list[Any] = []
    user = ("users", "user-1", "memories")
    store.put(user, "m1", {"data": "I like pizza", "n": 1})
    store.put(user, "m2", {"data": "I work as an engineer", "n": 2})
    store.put(("users", "user-2", "memories"), "m1", {"data": "I like pizza", "n": 1})
    store.put(("users", "user-1", "profile"), "name", {"data": "Bob", "n": 0}, index=False)
    store.put(("docs",), "r1", {"kind": "report", "meta": {"year": 2024}, "tags": ["a", "b"]})
    out.append(store.get(user, "m1").value)  # type: ignore[union-attr]
    out.append(store.get(user, "missing"))
    out.append(keys(store.search(user)))
    out.append(keys(store.search(("users",))))
    out.append(keys(store.search(("users",), filter={"n": 1})))
    out.append(keys(store.search(("users",), filter={"n": {"$gte": 2}})))
    out.append(keys(store.search((), filter={"n": {"$ne": 1}})))
    out.append(keys(store.search((), filter={"meta": {"year": 2024}, "tags": ["a", "b"]})))
    # namespaces before any delete: the in-memory store goes on listing one emptied
    # (or only read from), which LangGraph's database stores do not
    out.append(store.list_namespaces())
    out.append(store.list_namespaces(prefix=("users",)))
    out.append(store.list_namespaces(prefix=("users", "*", "memories")))
    out.append(store.list_namespaces(suffix=("profile",)))
    out.append(store.list_namespaces(max_depth=2))
    out.append(store.list_namespaces(limit=1, offset=1))
    store.put(user, "m1", {"data": "I like sushi now", "n": 1})
    out.append(store.get(user, "m1").value)  # type: ignore[union-attr]
    out.append(keys(store.search(user)))  # an overwrite is not a second item
    store.put(user, "m2", None)  # a None value deletes
    store.delete(("users", "user-2", "memories"), "m1")
    store.delete(("nowhere",), "nothing")
    out.append(store.get(user, "m2"))
    out.append(keys(store.search(("users",))))
    page = [store.search((), limit=1, offset=o) for o in range(4)]
    out.append(([len(p) for p in page], keys([i for p in page for i in p])))
    # reads before writes: LangGraph's own stores apply a batch's puts after its reads
    store.put(("b",), "k", {"v": 1})
    results = store.batch(
        [
            GetOp(("b",), "k"),
            SearchOp(("b",), filter={"v": 1}),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("b",)),)),
            PutOp(("b",), "k2", {"v": 2}),
            PutOp(("b",), "k", None),
        ]
    )
    out.append(
        [
            results[0].value,  # type: ignore[union-attr]
            keys(results[1]),  # type: ignore[arg-type]
            results[2],
            results[3:],
            store.get(("b",), "k"),
            keys(store.search(("b",))),
        ]
    )

    async def asynchronous() -> list[Any]:
        await store.aput(("c",), "k", {"v": "x"})
        got = await store.aget(("c",), "k")
        found = await store.asearch(("c",))
        spaces = await store.alist_namespaces(prefix=("c",))
        await store.adelete(("c",), "k")
        return [got.value, keys(found), spaces, await store.aget(("c",), "k")]  # type: ignore[union-attr]

    out.append(asyncio.run(asynchronous()))
    return out


def test_a_shared_script_answers_as_langgraphs_in_memory_store(store: AgentMemoryStore) -> None:
    assert _script(store) == _script(InMemoryStore())


def test_a_query_search_finds_what_the_in_memory_store_finds(store: AgentMemoryStore) -> None:
    # without embeddings the in-memory store answers every item under the prefix, unranked;
    # this store answers only what matches the query: the match is among both answers
    def put(target: BaseStore) -> list[str]:
        ns = ("users", "user-1", "memories")
        target.put(ns, "pizza", {"data": "I like pizza with olives"})
        target.put(ns, "job", {"data": "I work as an engineer"})
        return [i.key for i in target.search(ns, query="pizza olives")]

    ours, theirs = put(store), put(InMemoryStore())

    assert ours == ["pizza"]
    assert set(ours) <= set(theirs)


def test_an_unknown_filter_operator_is_refused_whatever_is_stored(
    store: AgentMemoryStore,
) -> None:
    with pytest.raises(InvalidArgumentError, match=r"\$in"):
        store.search(("a",), filter={"n": {"$in": [1]}})  # nothing stored yet
    store.put(("a",), "k", {"n": 1, "meta": {"year": 2024}})
    with pytest.raises(InvalidArgumentError, match=r"\$regex"):
        store.search(("a",), filter={"meta": {"year": {"$regex": "20"}}})
    with pytest.raises(InvalidArgumentError, match=r"\$in"):
        store.batch([PutOp(("a",), "k2", {"n": 2}), SearchOp(("a",), filter={"n": {"$in": [1]}})])

    assert [i.key for i in store.search(("a",))] == ["k"]  # the batch wrote nothing
    assert [i.key for i in store.search(("a",), filter={"meta": {"year": {"$lte": 2024}}})] == ["k"]


def _remembering_graph(store: BaseStore) -> Any:
    """A graph whose node keeps facts per user through the store it was compiled with, and
    answers with what it finds for the user (LangGraph's cross-thread memory pattern)."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict, total=False):
        user: str
        fact: str
        forget: str
        known: list[str]
        spaces: list[tuple[str, ...]]

    def remember(state: State, *, store: BaseStore) -> State:
        ns = ("users", state["user"], "memories")
        if state.get("fact"):
            store.put(ns, state["fact"].split()[0].lower(), {"data": state["fact"]})
        if state.get("forget"):
            store.delete(ns, state["forget"])
        known = sorted(i.value["data"] for i in store.search(ns, limit=100))
        return {"known": known, "spaces": store.list_namespaces(prefix=("users",))}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def test_a_graph_keeps_the_same_memories_as_with_the_in_memory_store(
    store: AgentMemoryStore,
) -> None:
    turns: list[dict[str, str]] = [
        {"user": "ann", "fact": "Coffee black, no sugar"},
        {"user": "ann", "fact": "Tea only after lunch"},
        {"user": "bob", "fact": "Coffee with oat milk"},
        {"user": "ann", "fact": "Coffee with milk now"},  # the same key: replaces
        {"user": "ann", "forget": "tea"},
        {"user": "bob"},
    ]

    def run(target: BaseStore) -> list[Any]:
        graph = _remembering_graph(target)
        answers = []
        for n, turn in enumerate(turns):
            config: Any = {"configurable": {"thread_id": f"thread-{n}"}}  # a new thread each
            out = graph.invoke(turn, config)
            answers.append((out["known"], out["spaces"]))
        return answers

    ours = run(store)

    assert ours == run(InMemoryStore())
    assert ours[-2][0] == ["Coffee with milk now"]


def test_a_search_without_a_query_answers_the_latest_updated_first(tmp_path: Any) -> None:
    # as LangGraph's database stores order it (updated_at, newest first); a clock that moves
    # on each read keeps every write's time apart
    from shared.contract.clock import FakeClock
    from store_worker.core import MemoryStore

    raw = MemoryStore(tmp_path / "data", clock=FakeClock())
    try:
        store = AgentMemoryStore(raw, bank=BANK)
        ns = ("users", "ann")
        for key in ("a", "b", "c", "d"):
            store.put(ns, key, {"v": key})
        store.put(ns, "b", {"v": "b again"})

        assert [i.key for i in store.search(ns)] == ["b", "d", "c", "a"]
        pages = [store.search(ns, limit=2, offset=o) for o in (0, 2)]
        assert [i.key for p in pages for i in p] == ["b", "d", "c", "a"]
        assert [i.key for i in store.search(ns, filter={"v": {"$ne": "d"}})] == ["b", "c", "a"]
        updated = [i.updated_at for i in store.search(ns)]
        assert updated == sorted(updated, reverse=True)
    finally:
        raw.close()


def test_a_value_over_the_stores_text_limit_is_refused_with_a_clear_error(
    store: AgentMemoryStore,
) -> None:
    # LangGraph's stores take any size; this one keeps a memory's text to its limit (16,000
    # characters unless configured), which only the store knows: it refuses when the put runs
    big = {"text": "lorem ipsum " * 2_000}

    with pytest.raises(InvalidArgumentError, match="the limit is 16000"):
        store.put(("docs",), "big", big)

    assert store.search(()) == []
