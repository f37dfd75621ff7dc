"""Start the memory workers on an existing Ray cluster — the ``memory up`` code path, minus
starting a cluster. Run it as a Ray job; the detached actors outlive the job (FACTS "Ray")::

    ray job submit --address http://<head>:8265 --working-dir . \\
        --runtime-env-json '{"env_vars": {"MEMORY_DATA_DIR": "/data/memory",
                                          "MEMORY_STORE_RESOURCE": "memory_store"}}' \\
        -- python -m deploy.bootstrap            # every default-on worker
        -- python -m deploy.bootstrap store      # or a subset
        -- python -m deploy.bootstrap --store-shards 2 --extractor-replicas 2   # issue 16

The image must have the package installed (``deploy/Dockerfile``): workers are found through
its entry points, exactly as ``memory up`` finds them. Exit code 0 when every worker answers;
2 with a one-line ``error: <category>: <message>`` otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from shared import cluster
from shared.client import StoreClient, join_cluster
from shared.errors import MemoryServiceError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deploy.bootstrap",
        description="Start (or find) the memory workers' detached actors on this Ray cluster.",
    )
    parser.add_argument("workers", nargs="*", help="workers to start (default: default-on ones)")
    parser.add_argument("--store-shards", type=int, help="store shards (as `memory up`)")
    parser.add_argument("--extractor-replicas", type=int, help="extractors (as `memory up`)")
    args = parser.parse_args(argv)
    env = cluster.settings_env()
    if args.store_shards is not None:
        env["MEMORY_STORE_SHARDS"] = str(args.store_shards)
    if args.extractor_replicas is not None:
        env["MEMORY_EXTRACTOR_REPLICAS"] = str(args.extractor_replicas)
    try:
        join_cluster()  # inside a job RAY_ADDRESS names the cluster; never starts a new one
        specs = cluster.select_workers(args.workers)
        for spec, _ in cluster.start_workers(specs, env):
            print(f"started {spec.name} ({spec.actor_name})")
        described = StoreClient().describe()
    except MemoryServiceError as e:
        print(f"error: {e.category}: {e.message}", file=sys.stderr)
        return 2
    print(f"store data dir: {described['data_dir']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
