"""A sharded consolidation pass as Ray tasks, one per store shard actor
(docs/SCALING.md#how-it-works).

Two shard actors of their own in the session cluster (not ``memory-store``: the session's
single store stays what other tests find); the pass's tasks each talk to their own shard.
"""

from __future__ import annotations

from typing import Any

import pytest

from consolidate_worker.actor import RayShardRunner
from consolidate_worker.core import LAST_RUN_KEY, OWNER, Consolidator
from consolidate_worker.settings import ConsolidatorSettings
from shared.client.sharded import ShardedStoreClient

pytestmark = pytest.mark.ray

TOPICS = ("dark mode", "vim keybindings")


@pytest.fixture(scope="module")
def shard_actors(ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from shared.client.ray import StoreClient
    from shared.client.rebalance import initial_routing
    from shared.client.shards import shard_dir
    from store_worker.actor import start_shard

    root = tmp_path_factory.mktemp("consolidate-shards")
    clients = []
    for i in range(2):
        name = "memory-consolidate-shard" + (f"-{i}" if i else "")
        env = {"MEMORY_DATA_DIR": str(shard_dir(root, i)), "MEMORY_SHARD_INDEX": str(i)}
        clients.append(StoreClient(start_shard(env, i, 2, name=name), actor_name=name, timeout=60))
    assert initial_routing(clients) is not None
    yield ShardedStoreClient(clients, freeze_wait_s=0)
    for client in clients:
        ray_cluster.kill(client.handle, no_restart=True)


def seed(store: ShardedStoreClient, bank: str) -> set[frozenset[str]]:
    pairs = set()
    for topic in TOPICS:
        old = store.save(f"The user prefers {topic} in the editor", bank=bank).memory
        new = store.save(f"The user prefers {topic} in their editor", bank=bank).memory
        pairs.add(frozenset((old.id, new.id)))
    return pairs


def test_each_shard_passes_in_its_own_task_and_a_dead_one_fails_alone(
    ray_cluster: Any, shard_actors: ShardedStoreClient
) -> None:
    store = shard_actors
    names = [f"ray-user-{i}" for i in range(50)]
    b0, b1 = (next(b for b in names if store.owner(b) == i) for i in (0, 1))
    settings = ConsolidatorSettings()
    core = Consolidator(store, settings=settings, shard_runner=RayShardRunner(store, settings))

    # Given duplicates in a bank on each shard
    pairs = seed(store, b0) | seed(store, b1)
    # When a pass runs: one Ray task per shard
    report = core.run_pass()
    # Then both shards' duplicates merged, and the checkpoint moved on both shards
    assert report.ok and report.shards == 2, report.errors
    assert {frozenset((c.id, c.survivor)) for c in report.merged} == pairs
    assert {b0, b1} <= set(report.banks)
    for shard in store.shards:
        assert shard.state_get(OWNER, LAST_RUN_KEY)["at"] == report.started_at

    # Given new duplicates on shard 0, and shard 1's actor gone for good
    again = seed(store, b0)
    ray_cluster.kill(store.shards[1].handle, no_restart=True)  # type: ignore[attr-defined]
    # When the next pass runs
    report2 = core.run_pass()
    # Then shard 0's task did its work, shard 1's task failed alone, typed and retryable
    assert {frozenset((c.id, c.survivor)) for c in report2.merged} == again
    (lost,) = report2.errors
    assert (lost.shard, lost.category) == (1, "source_unavailable")
    assert core.last_run() == report.started_at  # the checkpoint waits for a clean pass
