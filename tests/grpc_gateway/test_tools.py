"""The reference tools over the store's public API: remember / forget / search
(grpc_gateway/tools.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_gateway.tools import NEAR_MATCH, Tools, similarity
from grpc_gateway.views import ProtocolViews
from shared.contract import errors
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore


@pytest.fixture
def fresh_store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "data", clock=FakeClock())


@pytest.fixture
def tools(fresh_store: MemoryStore) -> Tools:
    return Tools(ProtocolViews(fresh_store))


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize(
    ("a", "b", "near"),
    [
        ("The user prefers tabs", "the user prefers tabs.", True),
        ("The user prefers tabs over spaces", "The user prefers tabs over spaces in Python", True),
        ("The user likes tea", "The user likes coffee", True),  # a possible change of mind
        ("noted at 1796582674965", "noted at 1796582684737", False),  # an id, a new fact
        ("The user lives in Lisbon", "The user lives in Porto", False),  # a name
        ("The user prefers tabs", "Deploys run on Fridays after the standup", False),
        ("", "anything", False),
    ],
)
def test_similarity_flags_near_matches(a: str, b: str, near: bool) -> None:
    score = similarity(a, b)
    assert 0.0 <= score <= 1.0
    assert (score >= NEAR_MATCH) is near


def test_subset_scores_are_discounted_by_length() -> None:
    short, long = "user prefers tabs", "user prefers tabs over spaces in python and go and rust"
    assert similarity(short, long) < similarity(short, "user prefers tabs over spaces")


def test_remember_creates_when_nothing_is_close(fresh_store: MemoryStore, tools: Tools) -> None:
    made = tools.remember("The user lives in Lisbon", type="user", session_id="s1")
    assert made.action == "created" and made.memory is not None
    assert made.memory.provenance.recorded_by == "memory.remember"


def test_remember_asks_instead_of_duplicating(fresh_store: MemoryStore, tools: Tools) -> None:
    # Given an existing record
    first = fresh_store.save("The user prefers tabs over spaces").memory
    before = _files(fresh_store.root)
    # When a close variant is remembered
    asked = tools.remember("The user prefers tabs over spaces in Python")
    # Then nothing is written and the candidate comes back
    assert asked.action == "needs_confirmation"
    assert asked.memory is None
    assert [c.memory.id for c in asked.candidates] == [first.id]
    assert _files(fresh_store.root) == before


def test_remember_updates_the_chosen_id_or_confirms_new(
    fresh_store: MemoryStore, tools: Tools
) -> None:
    first = fresh_store.save("The user prefers tabs over spaces", type="feedback").memory
    updated = tools.remember("The user prefers tabs, even in YAML", update_id=first.id)
    assert (updated.action, updated.memory.id) == ("updated", first.id)  # type: ignore[union-attr]
    assert fresh_store.get(first.id).memory.type == "feedback"  # type stays
    with pytest.raises(errors.InvalidTypeError):
        tools.remember("x", update_id=first.id, type="project")
    made = tools.remember("The user prefers tabs, even in JSON", confirm_new=True)
    assert made.action == "created" and made.memory is not None and made.memory.id != first.id


def test_restating_the_same_fact_reinforces(fresh_store: MemoryStore, tools: Tools) -> None:
    first = fresh_store.save("The user has two cats").memory
    again = tools.remember("the user has two cats.")
    assert again.action == "reinforced"
    assert again.memory is not None and again.memory.corroboration == first.corroboration + 1


def test_only_records_visible_to_the_caller_are_candidates(
    fresh_store: MemoryStore, tools: Tools
) -> None:
    fresh_store.save("The build uses Bazel remote caching", scope="session", session_id="other")
    made = tools.remember(
        "The build uses Bazel remote caching now", scope="session", session_id="mine"
    )
    assert made.action == "created"


def test_remember_into_a_new_bank_has_no_candidates(fresh_store: MemoryStore, tools: Tools) -> None:
    made = tools.remember("The user likes figs", bank="fresh-bank")
    assert (made.action, made.bank) == ("created", "fresh-bank")


def test_remember_validates_before_anything(fresh_store: MemoryStore, tools: Tools) -> None:
    fresh_store.save("seed")
    before = _files(fresh_store.root)
    with pytest.raises(errors.InvalidTypeError):
        tools.remember("x", type="opinion")
    with pytest.raises(errors.InvalidScopeError):
        tools.remember("x", scope="universe")
    with pytest.raises(errors.InvalidArgumentError):
        tools.remember("   ")
    with pytest.raises(errors.InvalidArgumentError):
        tools.remember("x", threshold=0)
    assert _files(fresh_store.root) == before


def test_forget_retires_and_unknown_or_retired_is_not_found(
    fresh_store: MemoryStore, tools: Tools
) -> None:
    mem = fresh_store.save("The user dislikes olives").memory
    assert tools.forget(mem.id).memory.invalid_at is not None
    with pytest.raises(errors.NotFoundError):
        tools.forget(mem.id)
    with pytest.raises(errors.NotFoundError):
        tools.forget("never-was")


def test_search_is_an_explicit_recall(fresh_store: MemoryStore, tools: Tools) -> None:
    fresh_store.configure({"ratification": True})
    canon = fresh_store.save("The user's bike is a red Peugeot").memory
    draft = fresh_store.save("The user may sell the Peugeot bike", status="pending").memory
    assert [h.memory.id for h in tools.search("Peugeot bike").memories] == [canon.id]
    both = tools.search("Peugeot bike", include_pending=True).memories
    assert {h.memory.id for h in both} == {canon.id, draft.id}
    with pytest.raises(errors.InvalidArgumentError):
        tools.search("")


def test_remember_creates_when_only_a_timestamp_differs(
    fresh_store: MemoryStore, tools: Tools
) -> None:
    """ "noted at 1796582674965" was offered as a 0.95 near-match of "noted at ...684737"."""
    fresh_store.save("noted at 1796582674965")
    made = tools.remember("noted at 1796582684737")
    assert made.action == "created" and not made.candidates
