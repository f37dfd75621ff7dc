"""A consolidation pass over several store shards: one pass per shard, merged (docs/SCALING.md).

In-process shards and the in-process runner (``run_in_turn``); ``test_shards_ray.py`` runs the
same plan as Ray tasks against shard actors.
"""

from __future__ import annotations

from consolidate_worker.core import LAST_RUN_KEY, OWNER, Consolidator
from consolidate_worker.report import PassError, Report
from consolidate_worker.settings import ConsolidatorSettings
from consolidate_worker.shards import (
    ShardJob,
    ShardRunner,
    merge,
    run_in_turn,
    shard_jobs,
    split_budget,
)
from shared.client.sharded import ShardedStoreClient
from shared.client.shards import slot_of
from shared.contract import errors
from shared.contract.api import StoreAPI

TOPICS = ("dark mode", "vim keybindings", "large fonts")


def banks_on_each(store: ShardedStoreClient) -> list[str]:
    """One bank owned by shard 0 and one by shard 1."""
    names = [f"user-{i}" for i in range(50)]
    return [next(b for b in names if store.owner(b) == i) for i in (0, 1)]


def seed(store: StoreAPI, bank: str) -> list[tuple[str, str]]:
    out = []
    for topic in TOPICS:
        old = store.save(f"The user prefers {topic} in the editor", bank=bank).memory
        new = store.save(f"The user prefers {topic} in their editor", bank=bank).memory
        out.append((old.id, new.id))
    return out


def merged_pairs(report: Report) -> set[frozenset[str]]:
    """Which pairs merged (the survivor of a same-millisecond pair is decided by id)."""
    return {frozenset((c.id, c.survivor)) for c in report.merged}


def in_turn(
    store: ShardedStoreClient, settings: ConsolidatorSettings, down: int | None = None
) -> ShardRunner:
    """The in-process runner; shard ``down`` answers as a stopped actor would."""

    def run(job: ShardJob, dry_run: bool) -> Report:
        if job.shard == down:
            raise errors.SourceUnavailableError("store shard actor is dead")
        core = Consolidator(store.shards[job.shard], settings=settings)
        return core.run_shard(job.shard, banks=job.banks, dry_run=dry_run, budget=job.budget)

    return run_in_turn(run)


def test_a_pass_runs_once_per_shard_and_merges(shards: ShardedStoreClient) -> None:
    # Given duplicates in a bank on each shard
    b0, b1 = banks_on_each(shards)
    pairs = seed(shards, b0) + seed(shards, b1)
    settings = ConsolidatorSettings()
    core = Consolidator(shards, settings=settings, shard_runner=in_turn(shards, settings))
    # When one pass runs
    report = core.run_pass()
    # Then both shards' duplicates were merged, in one report, and the checkpoint moved
    assert report.ok and report.shards == 2
    assert merged_pairs(report) == {frozenset(p) for p in pairs}
    assert {b0, b1} <= set(report.banks)
    for bank in (b0, b1):
        assert all(m.superseded_by is None for m in shards.list(bank=bank).memories)
    for shard in shards.shards:  # sibling state is on every shard
        assert shard.state_get(OWNER, LAST_RUN_KEY)["at"] == report.started_at


def test_a_down_shard_fails_only_its_own_pass(shards: ShardedStoreClient) -> None:
    # Given duplicates on both shards, and shard 1 down
    b0, b1 = banks_on_each(shards)
    pairs0 = seed(shards, b0)
    seed(shards, b1)
    settings = ConsolidatorSettings()
    core = Consolidator(shards, settings=settings, shard_runner=in_turn(shards, settings, down=1))
    # When a pass runs
    report = core.run_pass()
    # Then shard 0's work is done, shard 1's failure is reported by shard, no checkpoint moves
    assert merged_pairs(report) == {frozenset(p) for p in pairs0}
    (lost,) = report.errors
    assert (lost.shard, lost.category) == (1, "source_unavailable") and "shard 1" in lost.message
    assert len(shards.list(bank=b1).memories) == 2 * len(TOPICS)  # untouched
    assert core.last_run() is None


def test_a_shard_pass_leaves_a_leftover_copy_of_a_moved_bank_alone(
    shards: ShardedStoreClient,
) -> None:
    # Given shard 0 holding a bank whose slot now belongs to shard 1 (a copy not yet released)
    b0, _ = banks_on_each(shards)
    seed(shards, b0)
    table = shards.refresh()
    slots = list(table.slots)
    slots[slot_of(b0)] = 1
    shards.shard_routing(
        table.model_copy(update={"version": table.version + 1, "slots": tuple(slots)}).dump()
    )
    assert b0 in shards.shards[0].shard_routing()["banks"]
    # When shard 0's pass runs over what it holds
    report = Consolidator(shards.shards[0]).run_shard(0)
    # Then the foreign copy is not in it (its writes would be refused: not this shard's bank)
    assert report.ok and b0 not in report.banks and report.merged == ()


def test_named_banks_go_to_their_owners_and_the_cap_is_shared() -> None:
    owners = {"a": 1, "b": 0, "c": 1}
    jobs = shard_jobs(3, 10, named=["c", "a", "b"], owner=owners.__getitem__)
    assert jobs == [
        ShardJob(shard=0, banks=("b",), budget=4),
        ShardJob(shard=1, banks=("a", "c"), budget=3),
    ]
    assert split_budget(10, 3) == [4, 3, 3] and sum(split_budget(7, 4)) == 7
    assert [j.banks for j in shard_jobs(2, 5, named=None, owner=owners.__getitem__)] == [
        None,
        None,
    ]


def test_the_cap_holds_across_shards(shards: ShardedStoreClient) -> None:
    # Given three duplicate pairs on each shard and a cap of 2 for the whole pass
    b0, b1 = banks_on_each(shards)
    seed(shards, b0)
    seed(shards, b1)
    settings = ConsolidatorSettings(max_supersedes_per_run=2)
    core = Consolidator(shards, settings=settings, shard_runner=in_turn(shards, settings))
    # When a pass runs
    report = core.run_pass()
    # Then two merges happened in all (one per shard), the rest are capped for the next pass
    assert len(report.merged) == 2 and len(report.capped) == 4
    assert {c.bank for c in report.merged} == {b0, b1}


def test_merge_keeps_every_part() -> None:
    one = Report(started_at=1, duration_ms=5, dry_run=False, banks=("x",), scanned=3)
    two = Report(started_at=2, duration_ms=7, dry_run=False, banks=("w",), scanned=4)
    lost = PassError(bank="", shard=2, category="source_unavailable", message="down")
    report = merge([one, two, lost], started=9, duration_ms=11, dry_run=False)
    assert (report.started_at, report.duration_ms, report.scanned) == (9, 11, 7)
    assert report.banks == ("w", "x") and report.errors == (lost,) and report.shards == 3
    assert not report.ok
