"""A consolidation pass over store shards (docs/SCALING.md#how-it-works):
``python -m bench.shard_passes``.

Two (``--shards``) store shard actors on a throwaway local Ray cluster hold ``--banks`` banks
of ``--per-bank`` memories each, a fifth of them planted near-duplicates. The same pass runs
two ways and the wall time of each is reported:

- ``bank_by_bank``: one ``Consolidator`` over ``ShardedStoreClient``, every bank in turn
  (what the consolidator did before per-shard passes);
- ``per_shard_tasks``: one Ray task per shard (``RayShardRunner``), all running at once.

Each way gets shards of its own, seeded the same way (the corpus is deterministic).
On this 2-core machine the shards, the tasks and Ray share two cores, so the gain is bounded
by CPU, not by the number of shards; a report, never an assertion.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import records
from bench.stats import local_ray


def _seed(store: Any, banks: list[str], per_bank: int) -> int:
    texts = [str(r["text"]) for r in records(per_bank)]
    planted = 0
    for bank in banks:
        items = [{"text": t, "bank": bank} for t in texts]
        for t in texts[: per_bank // 5]:
            items.append({"text": t.replace(" ", "  ", 1) + " indeed", "bank": bank})
            planted += 1
        for at in range(0, len(items), 500):  # save_many takes up to 1000 at once
            store.save_many(items[at : at + 500])
    return planted


def _timed_pass(store: Any, runner: Any) -> dict[str, Any]:
    from consolidate_worker.core import Consolidator
    from consolidate_worker.settings import ConsolidatorSettings

    settings = ConsolidatorSettings(max_supersedes_per_run=100_000)
    core = Consolidator(store, settings=settings, shard_runner=runner)
    started = time.perf_counter()
    report = core.run_pass()
    return {
        "wall_s": round(time.perf_counter() - started, 2),
        "scanned": report.scanned,
        "merged": len(report.merged),
        "errors": len(report.errors),
    }


def run(shards: int, banks: int, per_bank: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="shard-passes-"))
    out: dict[str, Any] = {"shards": shards, "banks": banks, "per_bank": per_bank}
    try:
        with local_ray("memory-bench-passes") as ray:
            # the imports load Ray: after local_ray has set up its environment
            from consolidate_worker.actor import RayShardRunner
            from consolidate_worker.settings import ConsolidatorSettings
            from shared.client.ray import StoreClient
            from shared.client.rebalance import initial_routing
            from shared.client.sharded import ShardedStoreClient
            from shared.client.shards import shard_dir
            from store_worker.actor import start_shard

            for way in ("bank_by_bank", "per_shard_tasks"):
                root = work / way
                clients = []
                for i in range(shards):
                    name = f"memory-bench-pass-{way}-{i}"
                    env = {"MEMORY_DATA_DIR": str(shard_dir(root, i)), "MEMORY_SHARD_INDEX": str(i)}
                    handle = start_shard(env, i, shards, name=name)
                    clients.append(StoreClient(handle, actor_name=name))
                initial_routing(clients)
                store = ShardedStoreClient(clients)
                names = [f"bench-{b:03d}" for b in range(banks)]
                out["planted"] = _seed(store, names, per_bank)
                tasks = way == "per_shard_tasks"
                runner = RayShardRunner(store, ConsolidatorSettings()) if tasks else None
                out[way] = _timed_pass(store, runner)
                for client in clients:
                    ray.kill(client.handle, no_restart=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.shard_passes", description=__doc__)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--banks", type=int, default=8)
    p.add_argument("--per-bank", type=int, default=1000)
    args = p.parse_args(argv)
    sys.stdout.write(json.dumps(run(args.shards, args.banks, args.per_bank), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
