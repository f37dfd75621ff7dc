"""The store worker's verbs for sharding: ``memory up --store-shards N`` and ``memory shards``.

``--store-shards N`` becomes ``MEMORY_STORE_SHARDS`` for the store's ``start`` (the same
variable a Ray job or a deployment sets). ``memory shards status`` prints the slot table and
where each bank lives; ``memory shards rebalance [--shards N]`` moves the banks whose owner
changes (``shared.client.sharded.rebalance``: freeze, copy, switch, release; rerun it after a kill).
Both act on the running cluster's shards, or with ``--data-dir D`` (the embedded mode) on the
``MEMORY_STORE_SHARDS`` shards on D in this process, as every embedded verb opens them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from shared.client.workers import add_up_setting, lazy

if TYPE_CHECKING:
    from shared.contract.api import StoreAPI


def add_cli(sub: Any) -> None:
    add_up_setting(
        sub,
        "--store-shards",
        metavar="N",
        env="MEMORY_STORE_SHARDS",
        check=lazy("shared.client.shards:shard_count"),  # pydantic only once the flag is given
        help="run N store shards (memory-store, memory-store-1 ...); default 1. On a "
        "running cluster it starts the missing ones; `memory shards rebalance` then moves "
        "banks to them (the running siblings and gateway follow without a restart)",
    )
    parser = sub.add_parser(
        "shards",
        help="Store shards: show the slot table, rebalance banks after N changed.",
        description="Inspect the store shards' slot table, or move the banks whose owner "
        "changed after the number of shards did (safe to rerun after an interruption).",
    )
    verbs = parser.add_subparsers(dest="shards_verb", required=True)
    status = verbs.add_parser("status", help="Show the slot table and the banks of each shard.")
    _options(status)
    status.set_defaults(handler=_status)
    move = verbs.add_parser("rebalance", help="Move the banks whose owner changed.")
    move.add_argument("--shards", type=int, default=None, help="spread over N (default: all)")
    _options(move)
    move.set_defaults(handler=_rebalance)


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS,  # keeps `memory --data-dir D shards ...`'s value
        help="embedded mode: the shards on this data dir (MEMORY_STORE_SHARDS of them), "
        "in-process, without Ray",
    )


@contextmanager
def _shards(args: argparse.Namespace) -> Iterator[list[StoreAPI]]:
    """Every store shard: the embedded ones on ``--data-dir`` (it was ignored: the verbs
    showed and moved the running cluster's), else the running cluster's."""
    from shared.client.sharded import ShardedStoreClient

    data_dir = getattr(args, "data_dir", None)
    if data_dir:
        from shared.client import connect

        store = connect(f"file:{data_dir}")
    else:
        from shared.client.ray import join_cluster

        join_cluster()
        store = ShardedStoreClient.connect()
    try:
        sharding = store.sharding()
        yield list(sharding.shards) if sharding is not None else [store]
    finally:
        if data_dir:
            store.close()  # the data dir's lock and log files


def _status(args: argparse.Namespace) -> int:
    from shared.client.shards import Routing

    with _shards(args) as shards:
        views = [s.shard_routing() for s in shards]
    table = Routing.parse(views[0]["routing"])
    out = {
        "version": table.version,
        "slots_per_shard": dict(sorted(Counter(table.slots).items())),
        "moving": table.moving,
        "banks": {i: v["banks"] for i, v in enumerate(views)},
    }
    _emit(args, out)
    return 0


def _rebalance(args: argparse.Namespace) -> int:
    from shared.client.rebalance import rebalance

    with _shards(args) as shards:
        report = rebalance(shards, args.shards)
    _emit(args, vars(report))
    return 1 if report.orphans else 0


def _emit(args: argparse.Namespace, value: dict[str, Any]) -> None:
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")
        return
    for key, item in value.items():
        sys.stdout.write(f"{key}: {item}\n")
