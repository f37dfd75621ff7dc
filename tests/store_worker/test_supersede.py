"""supersede: retire one record in favour of a live survivor; refusals; reinforce."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import ConflictError, InvalidArgumentError, NotFoundError
from shared.contract.models import Event, Memory
from store_worker.core import MemoryStore


def log_bytes(data_dir: Path, bank: str = "main") -> bytes:
    return (data_dir / bank / "memories.jsonl").read_bytes()


def test_supersede_retires_with_a_pointer(store: MemoryStore, data_dir: Path) -> None:
    # Given an old fact and its replacement
    old = store.save("deploys go out on Fridays", tags=["deploy"]).memory
    new = store.save("deploys go out on Tuesdays").memory
    # When the old one is superseded
    res = store.supersede(old.id, new.id, reason="schedule changed")
    # Then it is retired with a pointer, and the survivor is untouched
    assert res.reinforced is False
    assert res.memory.id == old.id
    assert res.memory.invalid_at is not None
    assert res.memory.superseded_by == new.id
    assert res.memory.revision == old.revision + 1
    assert res.survivor == new
    assert store.get(new.id).memory == new
    assert store.get(old.id).memory == res.memory  # never erased
    assert [m.id for m in store.list().memories] == [new.id]
    rows = [json.loads(x) for x in log_bytes(data_dir).splitlines()]
    assert len(rows) == 3 and rows[-1]["superseded_by"] == new.id
    hits = store.recall("deploys fridays").memories
    assert old.id not in [h.memory.id for h in hits]
    history = store.recall("deploys fridays", include_superseded=True).memories
    assert old.id in [h.memory.id for h in history]


def test_reinforce_merges_into_the_survivor(
    store: MemoryStore, clock: FakeClock, data_dir: Path
) -> None:
    old = store.save("likes green tea", tags=["drinks"], entities=["tea"]).memory
    store.save("likes green tea")  # corroboration 1
    clock.advance(days=1)
    new = store.save("likes oolong tea", tags=["taste"], entities=["oolong"]).memory
    before = log_bytes(data_dir)
    res = store.supersede(old.id, new.id, reinforce=True)
    s = res.survivor
    assert res.reinforced is True
    assert s.id == new.id
    assert s.corroboration == new.corroboration + 1 + 1  # loser's 1 + the loser itself
    assert s.tags == ("taste", "drinks")
    assert s.entities == ("oolong", "tea")
    assert s.revision == new.revision + 1
    assert s.stated_at == max(new.stated_at, old.stated_at)
    assert s.text == new.text and s.provenance == new.provenance
    assert store.get(new.id).memory == s
    # one append carried both lines
    added = log_bytes(data_dir)[len(before) :].splitlines()
    assert [Memory.model_validate_json(x).id for x in added] == [old.id, new.id]


def test_reinforce_leaves_a_pinned_survivor_untouched(store: MemoryStore) -> None:
    old = store.save("old wording", tags=["a"]).memory
    new = store.save("new wording", pinned=True).memory
    res = store.supersede(old.id, new.id, reinforce=True)
    assert res.reinforced is False
    assert res.survivor == new
    assert store.get(new.id).memory == new
    assert store.get(old.id).memory.superseded_by == new.id


def test_refuses_self(store: MemoryStore, data_dir: Path) -> None:
    m = store.save("me").memory
    before = log_bytes(data_dir)
    with pytest.raises(ConflictError):
        store.supersede(m.id, m.id)
    assert log_bytes(data_dir) == before


def test_refuses_missing_survivor(store: MemoryStore, data_dir: Path) -> None:
    m = store.save("target").memory
    before = log_bytes(data_dir)
    with pytest.raises(NotFoundError):
        store.supersede(m.id, "no-such-survivor")
    assert log_bytes(data_dir) == before
    assert store.get(m.id).memory == m


def test_refuses_missing_target(store: MemoryStore) -> None:
    s = store.save("survivor").memory
    with pytest.raises(NotFoundError):
        store.supersede("no-such-target", s.id)


@pytest.mark.parametrize("how", ["deleted", "superseded"])
def test_refuses_retired_survivor(store: MemoryStore, data_dir: Path, how: str) -> None:
    target = store.save("target").memory
    survivor = store.save("survivor").memory
    if how == "deleted":
        store.delete(survivor.id)
    else:
        third = store.save("third").memory
        store.supersede(survivor.id, third.id)
    before = log_bytes(data_dir)
    with pytest.raises(ConflictError):
        store.supersede(target.id, survivor.id)
    assert log_bytes(data_dir) == before
    assert store.get(target.id).memory.invalid_at is None


def test_refuses_pinned_target(store: MemoryStore, data_dir: Path) -> None:
    target = store.save("pinned target", pinned=True).memory
    survivor = store.save("survivor").memory
    before = log_bytes(data_dir)
    with pytest.raises(ConflictError, match="pinned"):
        store.supersede(target.id, survivor.id, reinforce=True)
    assert log_bytes(data_dir) == before
    assert store.get(survivor.id).memory == survivor
    # after unpinning it may go
    store.pin(target.id, False)
    assert store.supersede(target.id, survivor.id).memory.superseded_by == survivor.id


@pytest.mark.parametrize("how", ["deleted", "superseded"])
def test_refuses_already_retired_target(store: MemoryStore, data_dir: Path, how: str) -> None:
    target = store.save("target").memory
    a = store.save("survivor a").memory
    b = store.save("survivor b").memory
    if how == "deleted":
        store.delete(target.id)
    else:
        store.supersede(target.id, a.id)
    before = log_bytes(data_dir)
    with pytest.raises(ConflictError):
        store.supersede(target.id, b.id)
    assert log_bytes(data_dir) == before
    assert store.get(target.id).memory.superseded_by == (a.id if how == "superseded" else None)


@pytest.mark.parametrize(("target", "survivor"), [("Bad Id", "ok"), ("ok", "../x")])
def test_malformed_ids(store: MemoryStore, target: str, survivor: str) -> None:
    with pytest.raises(InvalidArgumentError):
        store.supersede(target, survivor)


def test_supersede_in_a_named_bank(store: MemoryStore) -> None:
    a = store.save("a one", bank="work").memory
    b = store.save("b two", bank="work").memory
    res = store.supersede(a.id, b.id, bank="work")
    assert res.bank == "work"
    with pytest.raises(NotFoundError):
        store.supersede(a.id, b.id)  # not in main


def test_events_for_supersede(store: MemoryStore) -> None:
    seen: list[Event] = []
    store.subscribe("t", seen.append)
    a = store.save("loser").memory
    b = store.save("winner").memory
    store.supersede(a.id, b.id, reason="duplicate", reinforce=True)
    kinds = [(e.event_type, e.memory.id if e.memory else None, e.reason) for e in seen[-2:]]
    assert kinds == [("superseded", a.id, "duplicate"), ("updated", b.id, "duplicate")]


def test_supersede_survives_reopen(data_dir: Path) -> None:
    s = MemoryStore(data_dir, clock=FakeClock())
    a = s.save("alpha").memory
    b = s.save("beta").memory
    s.supersede(a.id, b.id, reinforce=True)
    s.close()
    s2 = MemoryStore(data_dir, clock=FakeClock())
    assert s2.get(a.id).memory.superseded_by == b.id
    assert s2.get(b.id).memory.corroboration == 1
    assert s2.list().total == 1
    # the retired record's text no longer reinforces anything: it is a new save
    assert s2.save("alpha").created is True
    s2.close()


def test_a_reason_of_megabytes_is_refused_and_writes_nothing(
    store: MemoryStore, data_dir: Path
) -> None:
    # A reason rides every event of its write, kept in RAM event_buffer times over
    from store_worker.storage.writes import MAX_REASON_CHARS

    old = store.save("The API runs on port 8080").memory.id
    new = store.save("The API runs on port 9090").memory.id
    before = log_bytes(data_dir)
    long = "x" * (MAX_REASON_CHARS + 1)
    with pytest.raises(InvalidArgumentError, match="reason must be at most 2,000 characters"):
        store.delete(old, reason=long)
    with pytest.raises(InvalidArgumentError, match="reason"):
        store.supersede(old, new, reason=long)
    with pytest.raises(InvalidArgumentError, match="reason"):
        store.supersede_many(
            [{"id": old, "superseded_by": new}, {"id": new, "superseded_by": old, "reason": long}]
        )
    assert log_bytes(data_dir) == before  # nothing written
    assert store.get(old).memory.live and store.get(new).memory.live
    # a reason up to the cap is taken
    done = store.supersede(old, new, reason="y" * MAX_REASON_CHARS)
    assert done.memory.superseded_by == new
