"""Store shards under 8 concurrent callers (docs/SCALING.md, "Measured"): aggregate saves/s and
recall p50.

For 1, 2 and 4 shards: 8 threads save into 64 banks (spread over the shards by the slot
table), then recall from them. ``actor``: each shard a store actor on a throwaway local Ray
cluster, reached through ``ShardedStoreClient`` (one shard: the plain ``StoreClient``, i.e.
today's single store); ``embedded``: the same shards in this process (``open_embedded_shards``).

On this 2-core machine the actors' processes, the 8 callers and Ray's own processes share two
cores: more shards add fsync streams and recall threads, not CPU, so the gain is bounded; the
figures say how much. Reports, never assertions.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench import corpus
from bench.stats import in_threads, local_ray, percentiles

CALLERS = 8
BANKS = 64


def _threads(fn: Callable[[int, int], None], per_caller: int) -> float:
    """``fn(caller, k)`` for k < per_caller in each of CALLERS threads; returns wall seconds."""

    def work(i: int) -> None:
        for k in range(per_caller):
            fn(i, k)

    return in_threads(CALLERS, work)


def measure(
    store: Any, texts: Sequence[str], queries: Sequence[str], per_caller: int
) -> dict[str, Any]:
    """Aggregate saves/s of CALLERS concurrent savers, then recall latency under CALLERS."""
    banks = [f"bench-{b:02d}" for b in range(BANKS)]

    def save(i: int, k: int) -> None:
        n = i * per_caller + k
        store.save(texts[n % len(texts)], bank=banks[n % BANKS])

    wall = _threads(save, per_caller)
    samples: list[float] = []
    lock = threading.Lock()

    def recall(i: int, k: int) -> None:
        n = i * per_caller + k
        started = time.perf_counter()
        store.recall(queries[n % len(queries)], bank=banks[n % BANKS], mode="lexical")
        took = time.perf_counter() - started
        with lock:
            samples.append(took)

    _threads(recall, per_caller)
    saves = CALLERS * per_caller
    return {"saves": saves, "saves_per_s": round(saves / wall, 1), **percentiles(samples)}


def _texts(n: int) -> tuple[list[str], list[str]]:
    records = list(corpus.records(n))
    return [str(r["text"]) for r in records], [q.text for q in corpus.queries(records, 50)]


def embedded(shards: Sequence[int], per_caller: int, workdir: Path) -> dict[str, Any]:
    from shared.client.sharded import open_embedded_shards
    from shared.contract.config import StoreSettings

    texts, queries = _texts(CALLERS * per_caller)
    out = {}
    for n in shards:
        root = workdir / f"shards-embedded-{n}"
        shutil.rmtree(root, ignore_errors=True)
        store = open_embedded_shards(StoreSettings(data_dir=str(root)), n)
        try:
            out[str(n)] = measure(store, texts, queries, per_caller)
        finally:
            store.close()
            shutil.rmtree(root, ignore_errors=True)
    return out


def actors(shards: Sequence[int], per_caller: int, workdir: Path) -> dict[str, Any]:
    """Each shard count on one throwaway local cluster; shard actors named for the bench."""
    texts, queries = _texts(CALLERS * per_caller)
    out = {}
    with local_ray("memory-bench-shards"):
        for n in shards:
            out[str(n)] = _actor_row(n, per_caller, workdir, texts, queries)
    return out


def _actor_row(
    n: int, per_caller: int, workdir: Path, texts: list[str], queries: list[str]
) -> dict[str, Any]:
    import ray

    from shared.client.ray import StoreClient
    from shared.client.rebalance import initial_routing
    from shared.client.sharded import ShardedStoreClient
    from shared.client.shards import shard_dir
    from store_worker.actor import start_shard

    root = workdir / f"shards-actor-{n}"
    shutil.rmtree(root, ignore_errors=True)
    handles, clients = [], []
    for i in range(n):
        name = f"memory-bench-{n}-{i}"
        env = {"MEMORY_DATA_DIR": str(shard_dir(root, i)), "MEMORY_SHARD_INDEX": str(i)}
        handles.append(start_shard(env, i, n, name=name))
        clients.append(StoreClient(handles[-1], actor_name=name, timeout=120))
    try:
        initial_routing(clients)
        store: Any = clients[0] if n == 1 else ShardedStoreClient(clients)
        return measure(store, texts, queries, per_caller)
    finally:
        for handle in handles:
            ray.kill(handle, no_restart=True)
        shutil.rmtree(root, ignore_errors=True)


def compare(per_caller: int, workdir: Path, *, use_ray: bool) -> dict[str, Any]:
    counts = (1, 2, 4)
    row: dict[str, Any] = {
        "callers": CALLERS,
        "banks": BANKS,
        "embedded": embedded(counts, per_caller, workdir),
    }
    row["actor"] = actors(counts, per_caller, workdir) if use_ray else {"skipped": True}
    return row
