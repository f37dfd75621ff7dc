"""The slot table (``shared.client.shards``): stable slots, fair shares, minimal moves."""

from __future__ import annotations

from collections import Counter

import pytest

from shared.client.shards import SLOTS, Routing, actor_name, plan_slots, shard_count, slot_of
from shared.contract import errors


def test_a_banks_slot_is_stable_and_spread() -> None:
    assert slot_of("main") == slot_of("main")
    assert 0 <= slot_of("main") < SLOTS
    counts = Counter(slot_of(f"user-{i}") for i in range(20_000))
    assert len(counts) == SLOTS  # every slot gets banks
    assert max(counts.values()) < 3 * 20_000 / SLOTS


def test_shard_zero_keeps_todays_actor_name() -> None:
    assert [actor_name(i) for i in range(3)] == ["memory-store", "memory-store-1", "memory-store-2"]


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_growing_by_one_moves_about_one_share(n: int) -> None:
    before = plan_slots(Routing().slots, n)
    after = plan_slots(before, n + 1)
    assert max(Counter(after).values()) - min(Counter(after).values()) <= 1
    moved = sum(a != b for a, b in zip(before, after, strict=True))
    assert moved == Counter(after)[n]  # only slots the new shard takes move
    assert abs(moved - SLOTS / (n + 1)) <= 1
    banks = [f"b{i}" for i in range(3000)]
    share = sum(before[slot_of(b)] != after[slot_of(b)] for b in banks) / len(banks)
    assert abs(share - 1 / (n + 1)) < 0.05


def test_shrinking_hands_the_removed_shards_slots_to_the_rest() -> None:
    three = plan_slots(Routing().slots, 3)
    two = plan_slots(three, 2)
    assert set(two) == {0, 1}
    assert all(b == a for a, b in zip(three, two, strict=True) if a < 2)  # under their share
    assert sum(a != b for a, b in zip(three, two, strict=True)) == Counter(three)[2]
    assert plan_slots(two, 2) == two  # planning again moves nothing


def test_a_move_freezes_then_switches_one_slot() -> None:
    table = Routing()
    moving = table.start_move(5, 1)
    assert moving.version == 1 and moving.moving == {5: 1} and moving.slots[5] == 0
    done = moving.finish_move(5)
    assert done.version == 2 and done.moving == {} and done.slots[5] == 1
    assert Routing.parse(done.dump()) == done  # JSON round trip (string slot keys)
    assert Routing.parse(None) == Routing()


@pytest.mark.parametrize(
    "raw",
    [[1, 2], {"slots": [0] * 3}, {"moving": {"x": 1}}, {"version": -1}, {"slots": [-1] * SLOTS}],
)
def test_a_bad_table_is_a_typed_error(raw: object) -> None:
    with pytest.raises(errors.InvalidArgumentError):
        Routing.parse(raw)


@pytest.mark.parametrize("raw", ["0", "65", "two", ""])
def test_a_bad_shard_count_is_refused(raw: str) -> None:
    with pytest.raises(errors.InvalidArgumentError):
        shard_count(raw)
