"""Start the memory workers on an existing Ray cluster — the ``memory up`` code path, minus
starting a cluster. Idempotent: a worker already running is found, not started again (its
actor is named and detached), so running it twice starts only what is missing.

On KubeRay it runs twice over (docs/SCALING.md "Deploy on KubeRay"):

- by itself on every start of the head container (``deploy/raycluster.yaml``: the head's
  command runs ``python -m deploy.bootstrap --wait-s 900`` in the background before
  ``ray start``), so a head that restarts without GCS fault tolerance gets its workers back;
- by hand, as a Ray job, to change what runs (``--store-shards``, ``--extractor-replicas``)::

      export RAY_ADDRESS=http://127.0.0.1:8265     # kubectl port-forward svc/memory-head-svc
      ray job submit -- python -m deploy.bootstrap

The settings (``MEMORY_*``: data dir, the store's and the siblings' custom resources, the
gateway's host and token) come from the environment, i.e. the head container's. The image has
the project installed (``deploy/Dockerfile``), so no ``--working-dir`` is uploaded: an uploaded
copy of part of the code beside the installed copy mixed two versions in one process. Exit
code 0 when every worker answers; 2 with a one-line ``error: <category>: <message>`` otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from shared.cli import cluster
from shared.client.ray import StoreClient, join_cluster
from shared.contract.errors import MemoryServiceError

RETRY_S = 5.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deploy.bootstrap",
        description="Start (or find) the memory workers' detached actors on this Ray cluster.",
    )
    parser.add_argument("workers", nargs="*", help="workers to start (default: default-on ones)")
    parser.add_argument("--store-shards", type=int, help="store shards (as `memory up`)")
    parser.add_argument("--extractor-replicas", type=int, help="extractors (as `memory up`)")
    parser.add_argument(
        "--wait-s",
        type=float,
        default=0.0,
        metavar="S",
        help="keep retrying for S seconds while the cluster or a worker is not there yet "
        "(a head that is still starting, a store whose node has not joined); default 0",
    )
    args = parser.parse_args(argv)
    env = cluster.settings_env()
    if args.store_shards is not None:
        env["MEMORY_STORE_SHARDS"] = str(args.store_shards)
    if args.extractor_replicas is not None:
        env["MEMORY_EXTRACTOR_REPLICAS"] = str(args.extractor_replicas)
    deadline = time.monotonic() + args.wait_s
    while True:
        try:
            return _bootstrap(args.workers, env)
        except MemoryServiceError as e:
            if time.monotonic() + RETRY_S > deadline:
                print(f"error: {e.category}: {e.message}", file=sys.stderr)
                return 2
            print(f"waiting: {e.category}: {e.message}", file=sys.stderr, flush=True)
        time.sleep(RETRY_S)  # a head still starting: nothing to wait on but time


def _bootstrap(workers: Sequence[str], env: dict[str, str]) -> int:
    join_cluster()  # inside a job RAY_ADDRESS names the cluster; never starts a new one
    specs = cluster.select_workers(workers)
    for spec, _ in cluster.start_workers(specs, env):
        print(f"started {spec.name} ({spec.actor_name})", flush=True)
    described = StoreClient().describe()
    print(f"store data dir: {described['data_dir']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
