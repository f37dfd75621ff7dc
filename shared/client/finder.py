"""Finding the store shards that run now, so a long-lived client follows N changing
(docs/SCALING.md: changing N while everything runs).

``ShardedStoreClient`` learns its shards once; a sibling or gateway that lives for weeks must
notice ``memory up --store-shards N+1`` and a rebalance without a restart. A *finder* says how
many shards run now (``count``) and hands a client for shard ``i`` (``client``); the sharded
client asks it again whenever the slot table's version changes or names a shard it does not
reach (``ShardedStoreClient.refresh``).

- ``RayShards``: the named actors ``<base>``, ``<base>-1`` ... in namespace ``memory`` (shard
  ``i`` is ``shared.client.shards.actor_name(i)`` for the default base), counted up to the highest
  one running: shards start in order and stop from the top, but one in the middle may be gone
  (killed, or dead for good) while the ones above it serve. Counting up to the first missing
  name left those out: every bank of shard 2 was unreachable because shard 1 was down. A
  missing shard below the top keeps its place; its client answers, typed, that it is not
  running (``shared.client.ray.get_actor``), naming it.
- ``ListShards``: in-process stores in a list the caller may grow (embedded shards, tests): the
  fake beside the Ray finder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from shared.client.shards import MAX_SHARDS, STORE_ACTOR
from shared.contract.api import StoreAPI


class ShardFinder(Protocol):
    def count(self) -> int:
        """How many shards (0 .. count-1) run now; at least 1."""
        ...

    def client(self, shard: int) -> StoreAPI:
        """A client of shard ``shard`` (< ``count()``)."""
        ...


class RayShards:
    """The store shard actors over Ray (module docstring); ``base`` names shard 0."""

    def __init__(self, *, base: str = STORE_ACTOR, timeout: float | None = None) -> None:
        self.base = base
        self.timeout = timeout

    def name(self, shard: int) -> str:
        return self.base if shard == 0 else f"{self.base}-{shard}"

    def count(self) -> int:
        """One past the highest shard whose actor name is registered (one GCS call)."""
        import ray

        from shared.client.workers import NAMESPACE

        names = {
            entry["name"]
            for entry in ray.util.list_named_actors(all_namespaces=True)
            if entry.get("namespace") == NAMESPACE
        }
        return 1 + max((i for i in range(1, MAX_SHARDS) if self.name(i) in names), default=0)

    def client(self, shard: int) -> StoreAPI:
        from shared.client.ray import DEFAULT_TIMEOUT_S, StoreClient

        wait = DEFAULT_TIMEOUT_S if self.timeout is None else self.timeout
        return StoreClient(actor_name=self.name(shard), timeout=wait)


class ListShards:
    """In-process shards: ``stores[i]`` is shard ``i``; append to add one."""

    def __init__(self, stores: Sequence[StoreAPI]) -> None:
        self.stores = list(stores)

    def count(self) -> int:
        return len(self.stores)

    def client(self, shard: int) -> StoreAPI:
        return self.stores[shard]


__all__ = ["ListShards", "RayShards", "ShardFinder"]
