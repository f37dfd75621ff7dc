"""``memory stop <worker>`` stops the worker's actor and its numbered siblings (store shards
``memory-store-<i>``, extractor replicas ``memory-extractor-<i>``), nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from shared.cli.cluster import stop_worker, worker_actor_names
from shared.client.workers import NAMESPACE, WorkerSpec


def spec(actor_name: str) -> WorkerSpec:
    return WorkerSpec(name="probe", actor_name=actor_name, start=lambda env: None)


def test_names_are_the_actor_and_its_numbered_siblings_in_our_namespace() -> None:
    named = [
        {"name": "memory-store-2", "namespace": NAMESPACE},
        {"name": "memory-store", "namespace": NAMESPACE},
        {"name": "memory-store-1", "namespace": NAMESPACE},
        {"name": "memory-store-bench", "namespace": NAMESPACE},  # not a shard: a name of its own
        {"name": "memory-store-1", "namespace": "someone-else"},
        {"name": "memory-store-10", "namespace": NAMESPACE},
        {"name": "memory-storeX-1", "namespace": NAMESPACE},
    ]
    assert worker_actor_names(spec("memory-store"), named) == [
        "memory-store",
        "memory-store-1",
        "memory-store-2",
        "memory-store-10",
    ]
    assert worker_actor_names(spec("memory-extractor"), named) == []


@pytest.mark.ray
def test_stop_kills_the_worker_and_its_siblings_only(ray_cluster: Any) -> None:
    ray = ray_cluster

    @ray.remote(num_cpus=0)
    class Probe:
        def ping(self) -> str:
            return "pong"

    names = ["memory-stop-probe", "memory-stop-probe-1", "memory-stop-probe-keep"]
    handles = [Probe.options(name=n, namespace=NAMESPACE).remote() for n in names]  # type: ignore[attr-defined]
    ray.get([h.ping.remote() for h in handles])
    # When the worker is stopped
    assert stop_worker(spec("memory-stop-probe")) == names[:2]
    # Then it and its numbered sibling are gone, the other name survives
    for gone in handles[:2]:
        assert_dies(ray, gone)
    assert ray.get(ray.get_actor(names[2], namespace=NAMESPACE).ping.remote()) == "pong"
    ray.kill(handles[2], no_restart=True)
    assert_dies(ray, handles[2])
    assert stop_worker(spec("memory-stop-probe")) == []  # nothing left to stop


def assert_dies(ray: Any, handle: Any, calls: int = 2000) -> None:
    """``ray.kill`` is asynchronous: a call sent just after it may still be served. Call until
    one fails as a dead actor's does (bounded; no sleeping)."""
    for _ in range(calls):
        try:
            ray.get(handle.ping.remote(), timeout=60)
        except ray.exceptions.RayActorError:
            return
    raise AssertionError(f"actor still answers after {calls} calls")
