"""Every consolidation pass runs as a Ray task named for what it does, so the Ray dashboard's
Tasks view lists each run with its duration, outcome and logs: ``consolidate:<banks>`` (or
``consolidate:all``) over one store, ``consolidate:shard-<i>`` per shard."""

from __future__ import annotations

from typing import Any

import pytest

from consolidate_worker.actor import RayPassRunner, named_task
from consolidate_worker.core import LAST_RUN_KEY, OWNER, Consolidator
from consolidate_worker.settings import ConsolidatorSettings
from consolidate_worker.shards import task_name
from shared.contract import errors


@pytest.mark.parametrize(
    ("banks", "shard", "name"),
    [
        (None, None, "consolidate:all"),
        (["work", "home", "work"], None, "consolidate:home,work"),
        (None, 1, "consolidate:shard-1"),
        (["b"], 0, "consolidate:shard-0:b"),
    ],
)
def test_a_pass_is_named_for_its_banks_or_shard(
    banks: list[str] | None, shard: int | None, name: str
) -> None:
    assert task_name(banks, shard) == name


def test_a_long_bank_list_keeps_the_name_bounded() -> None:
    assert len(task_name([f"bank-{i:03d}" for i in range(100)])) <= len("consolidate:") + 200


def _my_task_name() -> str:
    import ray

    return str(ray.get_runtime_context().get_task_name())


@pytest.mark.ray
def test_a_named_task_carries_its_name_into_ray(ray_cluster: Any) -> None:
    # the name Ray records for the task, as the dashboard's Tasks view shows it
    ref = named_task(_my_task_name, "consolidate:work").remote()
    assert ray_cluster.get(ref, timeout=60) == "consolidate:work"


@pytest.mark.ray
def test_an_unsharded_pass_runs_as_one_task_and_checkpoints(
    store_actor: Any, unique_bank: str
) -> None:
    settings = ConsolidatorSettings()
    core = Consolidator(
        store_actor, settings=settings, pass_runner=RayPassRunner(store_actor, settings)
    )
    # Given a near-duplicate pair in a bank of the session's store actor
    old = store_actor.save("The user prefers dark mode in the editor", bank=unique_bank).memory
    new = store_actor.save("The user prefers dark mode in their editor", bank=unique_bank).memory
    # When a pass over that bank runs through the runner (its own Ray task)
    report = core.run_pass(banks=[unique_bank])
    # Then the task did the pass: the pair merged, reported back to the caller
    assert report.ok, report.errors
    assert {frozenset((c.id, c.survivor)) for c in report.merged} == {frozenset((old.id, new.id))}
    # and a dry run over every bank goes the same way and writes no checkpoint
    before = store_actor.state_get(OWNER, LAST_RUN_KEY)
    assert core.run_pass(dry_run=True).dry_run
    assert store_actor.state_get(OWNER, LAST_RUN_KEY) == before


@pytest.mark.ray
def test_a_pass_task_whose_store_is_gone_is_a_typed_error(ray_cluster: Any) -> None:
    from shared.client.ray import StoreClient

    settings = ConsolidatorSettings()
    gone = StoreClient(actor_name="memory-store-that-never-was", timeout=5)
    runner = RayPassRunner(gone, settings)
    with pytest.raises(errors.MemoryServiceError):
        runner(None, dry_run=True)
