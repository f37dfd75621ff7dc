"""The calibrated relevance (``store_worker/recall/relevance.py``) and what injection takes
with it: nothing for a prompt the bank knows nothing about, a block for one it does, the
pinned floor always, and why each memory came."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ulid import ULID

from shared.contract.errors import InvalidArgumentError
from store_worker.core import MemoryStore
from store_worker.recall import relevance

Factory = Callable[..., MemoryStore]

NOTES = [
    "The staging server is called kestrel-stg and runs on port 8443",
    "The user drinks green tea every morning",
    "The user edits code in the Helix editor",
    "The user has an Emacs sticker on the laptop lid",
    "Deploys go out on Fridays after the standup",
    "The user's daughter plays the cello",
]


@pytest.fixture
def notes(fresh_store: Factory) -> MemoryStore:
    store = fresh_store()
    for text in NOTES:
        store.save(text)
    return store


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def turn(store: MemoryStore, text: str) -> Any:
    return store.pre_generate(str(ULID()), str(ULID()), 0, [user(text)])


# -- the score ---------------------------------------------------------------------------------


def test_a_memory_holding_the_whole_query_reads_higher_than_one_holding_part(
    notes: MemoryStore,
) -> None:
    found = notes.recall("what is the staging server called", limit=10)
    top = found.memories[0]
    assert top.memory.text.startswith("The staging server")
    assert top.relevance_score >= 0.6
    assert top.why is not None and set(top.why.terms) >= {"stage", "server"}
    assert all(0.0 <= h.relevance_score <= 1.0 for h in found.memories)


def test_an_unrelated_query_reads_low_in_every_bank(fresh_store: Factory) -> None:
    """The same threshold holds in a bank of six notes and one of three hundred: a query about
    something neither holds stays under it, whatever one common word matches."""
    small = fresh_store()
    for text in NOTES:
        small.save(text)
    large = fresh_store()
    for i in range(300):
        large.save(f"Note {i}: the user tried recipe number {i} with the cello group on day {i}")
    for store in (small, large):
        found = store.recall("how do I reverse a linked list in Python for the user", limit=10)
        assert all(h.relevance_score < 0.3 for h in found.memories), store.root


def test_the_score_does_not_change_the_ranking(notes: MemoryStore) -> None:
    before = [h.memory.id for h in notes.recall("green tea editor", limit=10).memories]
    raw = notes.recall("green tea editor", limit=10)
    assert [h.memory.id for h in raw.memories] == before
    assert [h.score for h in raw.memories] == sorted((h.score for h in raw.memories), reverse=True)


def test_min_relevance_filters_only_when_asked(notes: MemoryStore) -> None:
    everything = notes.recall("staging tea", limit=10)
    assert len(everything.memories) >= 2
    cut = max(h.relevance_score for h in everything.memories)
    kept = notes.recall("staging tea", limit=10, min_relevance=cut)
    assert [h.relevance_score for h in kept.memories] == [
        h.relevance_score for h in everything.memories if h.relevance_score >= cut
    ]
    for bad in (-0.1, 1.5, "high", True):
        with pytest.raises(InvalidArgumentError, match="min_relevance"):
            notes.recall("staging", min_relevance=bad)


# -- the cut -----------------------------------------------------------------------------------


def test_select_keeps_what_meets_the_threshold_in_recall_order() -> None:
    cands = [("a", 0.5, 10.0), ("b", 0.2, 9.0), ("c", 0.45, 8.0), ("d", 0.31, 7.0)]
    assert [c[0] for c in relevance.select(cands, 0.3)] == ["a", "c", "d"]
    assert relevance.select(cands, 0.6) == []
    assert relevance.select([], 0.0) == []


def test_select_lets_one_far_above_the_rest_go_alone() -> None:
    cands = [("a", 0.95, 10.0), ("b", 0.4, 9.0), ("c", 0.35, 8.0)]
    assert [c[0] for c in relevance.select(cands, 0.3, gap=0.3)] == ["a"]
    assert [c[0] for c in relevance.select(cands, 0.3, gap=1.0)] == ["a", "b", "c"]


def test_select_drops_what_recall_scored_far_below_the_best() -> None:
    cands = [("a", 0.6, 10.0), ("b", 0.6, 2.9), ("c", 0.6, 3.0)]
    assert [c[0] for c in relevance.select(cands, 0.3, relative=0.3)] == ["a", "c"]


# -- injection ---------------------------------------------------------------------------------


def test_an_off_topic_prompt_gets_no_recalled_block(notes: MemoryStore) -> None:
    res = turn(notes, "How do I reverse a linked list in Python?")
    assert res.memories == () and res.append_messages == ()
    view = notes.preview("Why does my pytest fixture run twice?")
    assert view.memories == () and view.message is None and view.tokens == 0


def test_an_on_topic_prompt_gets_its_memory_and_why(notes: MemoryStore) -> None:
    res = turn(notes, "what is the staging server called?")
    assert [m.memory.text for m in res.memories][:1] == [NOTES[0]]
    assert "kestrel-stg" in res.append_messages[-1]["content"]
    assert res.ambient == 0
    first = res.memories[0]
    assert first.relevance_score >= notes.settings.min_relevance
    assert first.why is not None and "server" in first.why.terms and not first.why.ambient
    assert "green tea" not in res.append_messages[-1]["content"]


def test_the_pinned_floor_still_comes_and_is_counted_apart(fresh_store: Factory) -> None:
    store = fresh_store(ambient_floor=2)
    for text in NOTES:
        store.save(text)
    allergy = store.save("The user is allergic to peanuts", pinned=True).memory
    for _ in range(10):  # said ten times: strong by corroboration, still not ambient
        store.save("The user likes sourdough bread")
    off = turn(store, "How do I reverse a linked list in Python?")
    assert [m.memory.id for m in off.memories] == [allergy.id]
    assert off.ambient == 1
    assert off.memories[0].why is not None and off.memories[0].why.ambient
    view = store.preview("what is the staging server called?")
    assert [m.memory.id for m in view.memories] == [
        store.recall("staging server", limit=1).memories[0].memory.id,
        allergy.id,
    ]
    assert view.ambient == 1 and view.tokens > 0
    assert view.min_relevance == store.settings.min_relevance


def test_min_relevance_zero_takes_recalls_top_k_again(fresh_store: Factory) -> None:
    store = fresh_store(min_relevance=0.0, ambient_floor=0)
    for text in NOTES:
        store.save(text)
    got = turn(store, "user editor tea")
    assert len(got.memories) >= 3


def test_each_injected_turn_leaves_an_event_saying_what_came_and_why(
    fresh_store: Factory,
) -> None:
    store = fresh_store(ambient_floor=1)
    for text in NOTES:
        store.save(text)
    pin = store.save("The user is allergic to peanuts", pinned=True).memory
    turn(store, "what is the staging server called?")
    turn(store, "How do I reverse a linked list in Python?")
    store.preview("what is the staging server called?")  # a dry run leaves none
    found = [e for e in store.events_since(0).events if e.event_type == "injected"]
    assert len(found) == 2
    on, off = (e.reason or "" for e in found)
    staging = store.recall("staging server", limit=1).memories[0].memory.id
    assert on.startswith("1 recalled, 1 ambient: ") and f"{staging} 0." in on
    assert "server" in on and f"{pin.id} ambient (pinned)" in on
    assert off == f"0 recalled, 1 ambient: {pin.id} ambient (pinned)"
    assert "8443" not in on  # ids and terms, never a memory's text
