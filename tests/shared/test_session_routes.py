"""A session's calls reach its bank's shard from any client (``shared.client.sessions``).

Two ``ShardedStoreClient`` objects over the same two in-process shards stand for two processes
(a hook's ``SessionStart`` and its ``Stop`` run in fresh processes): nothing is shared between
them but the shards.
"""

from __future__ import annotations

import pytest
from ulid import ULID

from shared.client.sessions import OWNER, session_key
from shared.client.sharded import ShardedStoreClient

SAID = [{"role": "user", "content": "I deploy with the staging profile"}]


def other_process(shards: ShardedStoreClient) -> ShardedStoreClient:
    """A client of the same shards that has seen nothing (a fresh process)."""
    return ShardedStoreClient(shards.shards)


def bank_on(shards: ShardedStoreClient, shard: int) -> str:
    name = next(f"proj-{i}" for i in range(100) if shards.owner(f"proj-{i}") == shard)
    shards.bank_create(name)
    return name


def jobs_on(shards: ShardedStoreClient, shard: int) -> list[tuple[str, str | None]]:
    return [(j.session_id, j.bank) for j in shards.shards[shard].outbox_list().jobs]


def test_a_turn_completed_elsewhere_lands_on_the_sessions_bank_shard(
    shards: ShardedStoreClient,
) -> None:
    # Given a session bound to a bank on shard 1 by its session metadata, in one process
    bank = bank_on(shards, 1)
    assert shards.owner(None) == 0  # the default bank lives on the other shard
    first = other_process(shards)
    got = first.pre_generate("s1", str(ULID()), 0, SAID, {"session": {"memory_bank": bank}})
    assert got.bank == bank
    # When another process completes the turn, naming no bank
    done = other_process(shards).turn_completed("s1", str(ULID()), SAID)
    # Then the job is queued on shard 1, in the session's bank; shard 0 has none
    assert done.queued
    assert jobs_on(shards, 1) == [("s1", bank)] and jobs_on(shards, 0) == []


def test_a_later_step_without_metadata_stays_on_the_sessions_bank(
    shards: ShardedStoreClient,
) -> None:
    bank = bank_on(shards, 1)
    shards.save("Staging deploys run tools/ship.sh", bank=bank)
    other_process(shards).pre_generate("s2", None, 0, [], {"session": {"memory_bank": bank}})
    # a step from another process that names no bank: the store remembers the session's bank
    later = other_process(shards).pre_generate("s2", str(ULID()), 0, SAID, None)
    assert later.bank == bank and any("tools/ship.sh" in m.memory.text for m in later.memories)


def test_a_sub_session_follows_its_parents_bank(shards: ShardedStoreClient) -> None:
    bank = bank_on(shards, 1)
    other_process(shards).pre_generate("parent", None, 0, [], {"session": {"memory_bank": bank}})
    child = other_process(shards).pre_generate(
        "child", str(ULID()), 0, SAID, None, parent_session_id="parent"
    )
    assert child.bank == bank
    other_process(shards).turn_completed("child", str(ULID()), SAID)
    assert ("child", bank) in jobs_on(shards, 1)


def test_a_turns_own_bank_routes_that_turn(shards: ShardedStoreClient) -> None:
    bank = bank_on(shards, 1)
    turn = str(ULID())
    other_process(shards).pre_generate("s3", turn, 0, SAID, {"memory_bank": bank})
    other_process(shards).turn_completed("s3", turn, SAID)
    assert jobs_on(shards, 1) == [("s3", bank)]


def test_a_session_on_the_default_bank_writes_no_entry(shards: ShardedStoreClient) -> None:
    # Given sessions that never name another bank
    client = other_process(shards)
    client.pre_generate("plain", str(ULID()), 0, SAID, None)
    client.pre_generate("named-default", str(ULID()), 0, SAID, {"session": {"memory_bank": None}})
    # Then nothing was recorded for them, and their turns go to the default bank's shard
    for session in ("plain", "named-default"):
        assert shards.shards[0].state_get(OWNER, session_key(session)) is None
    other_process(shards).turn_completed("plain", str(ULID()), SAID)
    assert jobs_on(shards, 0) == [("plain", "main")]


def test_bad_session_ids_are_refused_by_the_store_and_record_nothing(
    shards: ShardedStoreClient,
) -> None:
    from shared.contract import errors

    bank = bank_on(shards, 1)
    with pytest.raises(errors.InvalidArgumentError):
        shards.pre_generate(None, None, 0, [], {"session": {"memory_bank": bank}})  # type: ignore[arg-type]
    assert shards.shards[0].state_get(OWNER, session_key("None")) is None
    with pytest.raises(errors.InvalidArgumentError):
        shards.pre_generate("s-bad-meta", None, 0, [], "not a mapping")  # type: ignore[arg-type]
    assert shards.shards[0].state_get(OWNER, session_key("s-bad-meta")) is None


def test_a_linked_sub_session_keeps_its_parents_shard_in_later_processes(
    shards: ShardedStoreClient,
) -> None:
    # Given a parent bound to a bank on shard 1, and a child linked to it in another process
    bank = bank_on(shards, 1)
    other_process(shards).pre_generate("boss", None, 0, [], {"session": {"memory_bank": bank}})
    other_process(shards).link_session("worker", "boss")
    # When a third process asks for the child's lineage and completes its turn
    lineage = other_process(shards).session_lineage("worker")
    other_process(shards).turn_completed("worker", str(ULID()), SAID)
    # Then both reached shard 1, where the link and the parent's bank are
    assert lineage == ("worker", "boss")
    assert jobs_on(shards, 1) == [("worker", bank)]
