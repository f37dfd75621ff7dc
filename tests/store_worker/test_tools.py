"""The reference tools as store operations: remember / forget / search (store_worker/tools.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared import errors
from shared.clock import FakeClock
from store_worker.core import MemoryStore
from store_worker.tools import NEAR_MATCH, similarity


@pytest.fixture
def fresh_store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "data", clock=FakeClock())


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


def test_remember_creates_when_nothing_is_close(fresh_store: MemoryStore) -> None:
    made = fresh_store.remember("The user lives in Lisbon", type="user", session_id="s1")
    assert made.action == "created" and made.memory is not None
    assert made.memory.provenance.recorded_by == "memory.remember"


def test_remember_asks_instead_of_duplicating(fresh_store: MemoryStore) -> None:
    # Given an existing record
    first = fresh_store.save("The user prefers tabs over spaces").memory
    before = _files(fresh_store.root)
    # When a close variant is remembered
    asked = fresh_store.remember("The user prefers tabs over spaces in Python")
    # Then nothing is written and the candidate comes back
    assert asked.action == "needs_confirmation"
    assert asked.memory is None
    assert [c.memory.id for c in asked.candidates] == [first.id]
    assert _files(fresh_store.root) == before


def test_remember_updates_the_chosen_id_or_confirms_new(fresh_store: MemoryStore) -> None:
    first = fresh_store.save("The user prefers tabs over spaces", type="feedback").memory
    updated = fresh_store.remember("The user prefers tabs, even in YAML", update_id=first.id)
    assert (updated.action, updated.memory.id) == ("updated", first.id)  # type: ignore[union-attr]
    assert fresh_store.get(first.id).memory.type == "feedback"  # type stays
    with pytest.raises(errors.InvalidTypeError):
        fresh_store.remember("x", update_id=first.id, type="project")
    made = fresh_store.remember("The user prefers tabs, even in JSON", confirm_new=True)
    assert made.action == "created" and made.memory is not None and made.memory.id != first.id


def test_restating_the_same_fact_reinforces(fresh_store: MemoryStore) -> None:
    first = fresh_store.save("The user has two cats").memory
    again = fresh_store.remember("the user has two cats.")
    assert again.action == "reinforced"
    assert again.memory is not None and again.memory.corroboration == first.corroboration + 1


def test_only_records_visible_to_the_caller_are_candidates(fresh_store: MemoryStore) -> None:
    fresh_store.save("The build uses Bazel remote caching", scope="session", session_id="other")
    made = fresh_store.remember(
        "The build uses Bazel remote caching now", scope="session", session_id="mine"
    )
    assert made.action == "created"


def test_remember_into_a_new_bank_has_no_candidates(fresh_store: MemoryStore) -> None:
    made = fresh_store.remember("The user likes figs", bank="fresh-bank")
    assert (made.action, made.bank) == ("created", "fresh-bank")


def test_remember_validates_before_anything(fresh_store: MemoryStore) -> None:
    fresh_store.save("seed")
    before = _files(fresh_store.root)
    with pytest.raises(errors.InvalidTypeError):
        fresh_store.remember("x", type="opinion")
    with pytest.raises(errors.InvalidScopeError):
        fresh_store.remember("x", scope="universe")
    with pytest.raises(errors.InvalidArgumentError):
        fresh_store.remember("   ")
    with pytest.raises(errors.InvalidArgumentError):
        fresh_store.remember("x", threshold=0)
    assert _files(fresh_store.root) == before


def test_forget_retires_and_unknown_or_retired_is_not_found(fresh_store: MemoryStore) -> None:
    mem = fresh_store.save("The user dislikes olives").memory
    assert fresh_store.forget(mem.id).memory.invalid_at is not None
    with pytest.raises(errors.NotFoundError):
        fresh_store.forget(mem.id)
    with pytest.raises(errors.NotFoundError):
        fresh_store.forget("never-was")


def test_search_is_an_explicit_recall(fresh_store: MemoryStore) -> None:
    fresh_store.configure({"ratification": True})
    canon = fresh_store.save("The user's bike is a red Peugeot").memory
    draft = fresh_store.save("The user may sell the Peugeot bike", status="pending").memory
    assert [h.memory.id for h in fresh_store.search("Peugeot bike").memories] == [canon.id]
    both = fresh_store.search("Peugeot bike", include_pending=True).memories
    assert {h.memory.id for h in both} == {canon.id, draft.id}
    with pytest.raises(errors.InvalidArgumentError):
        fresh_store.search("")
