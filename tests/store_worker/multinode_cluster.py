"""A three-raylet Ray cluster on this machine, run as a child process by ``test_multinode.py``.

Its own process because the test session's driver is already joined to the session cluster
(one driver joins one cluster). It prints one JSON line per finding; the test asserts on them.

    python multinode_cluster.py <work dir>

Head: 1 CPU and ``memory_store_0``; node A: ``memory_store_1`` (removed, then added again).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import ray
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from ulid import ULID

from tests.deploy.ray_child import placed, say, wait_until


def node_of(cluster: Cluster, name: str) -> str:
    return placed(cluster).get(name, "")


def main(work: Path) -> None:
    from extract_worker.actor import ExtractorActor
    from shared.client.ray import StoreClient
    from shared.client.sharded import ShardedStoreClient
    from shared.contract import errors
    from shared.llm import FakeLLM
    from store_worker.actor import start

    head_args = {
        "num_cpus": 1,
        "resources": {"memory_store_0": 1},
        "include_dashboard": False,
        # a removed node is noticed in ~1 s, not Ray's default ~30 s
        "_system_config": {"health_check_period_ms": 300, "health_check_failure_threshold": 3},
    }
    cluster = Cluster(initialize_head=True, head_node_args=head_args)
    node_a = cluster.add_node(num_cpus=1, resources={"memory_store_1": 1})
    ray.init(
        address=cluster.address,
        namespace="memory",
        logging_level=logging.ERROR,
        log_to_driver=False,
    )
    try:
        env = {
            "MEMORY_DATA_DIR": str(work / "data"),
            "MEMORY_STORE_SHARDS": "2",
            "MEMORY_STORE_RESOURCE": "memory_store",
        }
        start(env)
        say(
            "placement",
            {
                "shard0": node_of(cluster, "memory-store") == cluster.head_node.node_id,
                "shard1": node_of(cluster, "memory-store-1") == node_a.node_id,
            },
        )
        client = ShardedStoreClient.connect(timeout=5, freeze_wait_s=0)
        assert isinstance(client, ShardedStoreClient)
        banks = [f"user-{i}" for i in range(12)]
        acked = {b: client.save(f"fact of {b}", bank=b).memory.id for b in banks}
        on1 = [b for b in banks if client.owner(b) == 1]
        on0 = [b for b in banks if client.owner(b) == 0]
        say("spread", {"on0": len(on0), "on1": len(on1)})

        # Node A goes away: only shard 1's banks become unavailable (typed, retryable).
        cluster.remove_node(node_a, allow_graceful=False)
        gone = wait_until(lambda: not node_of(cluster, "memory-store-1"), 30, every=0.2)
        served = all(client.get(acked[b], bank=b).memory.id == acked[b] for b in on0)
        refused = []
        for call in (
            lambda: client.get(acked[on1[0]], bank=on1[0]),  # a read: Ray re-sends it, then no
            lambda: client.save("while its node is gone", bank=on1[1]),  # a write: sent once
        ):
            try:
                call()
                refused.append("served")
            except errors.SourceUnavailableError as e:
                refused.append("retryable" if e.retryable else "final")
        say("node_down", {"noticed": gone, "others_serve": served, "its_banks": refused})

        # It comes back (the same volume: the same folder here): the shard restarts there.
        node_a2 = cluster.add_node(num_cpus=1, resources={"memory_store_1": 1})
        back = wait_until(
            lambda: StoreClient(actor_name="memory-store-1", timeout=5).ping(), 60, every=0.2
        )
        kept = back and all(client.get(acked[b], bank=b).memory.id == acked[b] for b in on1)
        say(
            "node_back",
            {
                "restarted": back,
                "on_its_node": node_of(cluster, "memory-store-1") == node_a2.node_id,
                "all_acked": kept,
            },
        )

        # Two extractor replicas on two nodes drain one shard's outbox: each job once.
        bank = on0[0]
        jobs = 12
        for k in range(jobs):
            session, turn = f"mn-{k}", str(ULID())
            msgs = [{"role": "user", "content": f"I like colour number {k}"}]
            client.pre_generate(session, turn, 0, msgs, {"memory_bank": bank})
            client.turn_completed(session, turn, msgs)

        def reply(messages: list[dict[str, Any]]) -> str:
            said = str(messages[-1]["content"])
            number = said.rsplit("colour number ", 1)[-1].split()[0].strip(".\"'")
            return json.dumps({"memories": [{"text": f"Likes colour {number}"}], "rules": []})

        extractor_env = {"MEMORY_EXTRACTION_MODEL": "fake/x"}
        replicas = []
        for i, node in enumerate((cluster.head_node, node_a2)):
            name = "memory-extractor" if i == 0 else f"memory-extractor-{i}"
            where = NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=False)
            replicas.append(
                ray.remote(ExtractorActor)
                .options(name=name, num_cpus=0, max_concurrency=4, scheduling_strategy=where)
                .remote(extractor_env, FakeLLM.of(reply), name)
            )
        ray.get([r.drain.remote() for r in replicas], timeout=120)  # besides their own loops
        counts = [s["totals"] for s in ray.get([r.stats.remote() for r in replicas], timeout=60)]
        found = client.list(bank=bank, page_size=100).memories
        say(
            "replicas",
            {
                "nodes": len(
                    {node_of(cluster, n) for n in ("memory-extractor", "memory-extractor-1")}
                ),
                "done": sum(c.get("done", 0) for c in counts),
                "per_replica": [c.get("done", 0) for c in counts],
                "memories": len(found),
                "corroboration": sorted({m.corroboration for m in found}),
                "queued": client.outbox_list().queued,
            },
        )
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
