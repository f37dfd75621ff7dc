"""A following ``ShardedStoreClient`` notices shards added and removed (siblings and
gateways that found their shards only at start missed a shard added later; docs/SCALING.md:
changing N while everything runs).

In-process shards behind ``ListShards`` (the fake finder): the sibling's client is made while
one shard runs; a second shard starts and a rebalance moves banks to it, with the sibling still
running; the sibling's extractor then drains the new shard's outbox.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from extract_worker.core import Extractor
from extract_worker.settings import ExtractorSettings
from shared.client.finder import ListShards
from shared.client.rebalance import rebalance
from shared.client.sharded import ShardedStoreClient
from shared.client.shards import shard_dir
from shared.contract import errors
from shared.contract.config import StoreSettings
from shared.llm import FakeLLM
from store_worker.core import MemoryStore

Opener = Callable[[int], MemoryStore]


@pytest.fixture
def open_shard(tmp_path: Path) -> Iterator[Opener]:
    """``open_shard(i)``: store shard ``i`` on ``tmp_path/data`` (closed after the test)."""
    opened: list[MemoryStore] = []

    def open_(i: int) -> MemoryStore:
        settings = StoreSettings(data_dir=str(shard_dir(tmp_path / "data", i)), shard_index=i)
        opened.append(MemoryStore(settings=settings))
        return opened[-1]

    yield open_
    for store in opened:
        store.close()


def remembers(messages: list[dict[str, Any]]) -> str:
    said = str(messages[-1]["content"]).rsplit("number ", 1)[-1].split()[0].strip(".")
    return json.dumps({"memories": [{"text": f"The user likes number {said}"}], "rules": []})


def test_a_sibling_follows_a_new_shard_and_drains_its_outbox(open_shard: Opener) -> None:
    # Given one shard, a bank on it, and a running sibling whose client follows the shards
    finder = ListShards([open_shard(0)])
    sibling = ShardedStoreClient(finder.stores, finder=finder, follow_s=0)
    extractor = Extractor(
        sibling, FakeLLM.of(remembers), ExtractorSettings(extraction_model="fake/x")
    )
    banks = [f"user-{i:02d}" for i in range(12)]
    for bank in banks:
        sibling.save(f"first fact of {bank}", bank=bank)
    sibling.state_set("extractor", "status", {"enabled": True})
    assert len(sibling.shards) == 1

    # When a second shard starts and the banks are rebalanced over both, the sibling running
    finder.stores.append(open_shard(1))
    moved = rebalance(finder.stores, 2)
    assert moved.banks_moved  # some banks now live on shard 1

    # Then the sibling reaches the new shard without a restart, and told it what it told shard 0
    on_new = [b for b in banks if b in moved.banks_moved]
    said = [{"role": "user", "content": "first fact"}]
    injected = sibling.pre_generate("g", None, 0, said, {"memory_bank": on_new[0]})
    assert [m.memory.text for m in injected.memories] == [f"first fact of {on_new[0]}"]
    assert {b.name for b in sibling.bank_list().banks} - {"main"} == set(banks)
    assert len(sibling.shards) == 2 and sibling.owner(on_new[0]) == 1
    assert finder.stores[1].state_get("extractor", "status") == {"enabled": True}

    # And turns completed in a new shard's bank (by another process's client) are extracted
    harness = ShardedStoreClient(list(finder.stores))
    for k, bank in enumerate(on_new):
        session, turn = f"s-{k}", str(ULID())
        said = [{"role": "user", "content": f"I like number {k}"}]
        harness.pre_generate(session, turn, 0, said, {"memory_bank": bank})
        assert harness.turn_completed(session, turn, said).queued
    assert finder.stores[1].outbox_list().queued == len(on_new)
    assert extractor.drain().done == len(on_new)
    assert finder.stores[1].outbox_list().queued == 0
    for k, bank in enumerate(on_new):
        texts = {m.text for m in sibling.list(bank=bank).memories}
        assert f"The user likes number {k}" in texts


def test_a_stopped_top_shard_is_dropped_and_its_banks_are_unavailable(
    open_shard: Opener,
) -> None:
    # Given two shards sharing the banks, and a following client over both
    finder = ListShards([open_shard(0), open_shard(1)])
    assert rebalance(finder.stores, 2).version > 0
    client = ShardedStoreClient(finder.stores, finder=finder, follow_s=0)
    on1 = next(f"b{i}" for i in range(100) if client.owner(f"b{i}") == 1)
    on0 = next(f"b{i}" for i in range(100) if client.owner(f"b{i}") == 0)
    client.save("kept", bank=on0)
    # When shard 1 stops (its actor name is gone, as after `memory stop store`)
    finder.stores.pop()
    # Then fan-outs leave it out, shard 0's banks serve, its own banks are retryably refused
    assert {b.name for b in client.bank_list().banks} - {"main"} == {on0}
    assert len(client.shards) == 1
    with pytest.raises(errors.SourceUnavailableError, match="does not reach") as refused:
        client.save("lost?", bank=on1)
    assert refused.value.retryable


def test_a_fixed_client_does_not_look_for_shards(open_shard: Opener) -> None:
    # Given a client without a finder (the CLI's: it lives for one command)
    stores = [open_shard(0)]
    client = ShardedStoreClient(stores)
    client.bank_list()
    # When another shard appears in the list it was made from, it is not picked up
    stores.append(open_shard(1))
    client.refresh()
    assert len(client.shards) == 1


@pytest.mark.ray
def test_over_ray_a_started_shard_is_found_by_name_and_drained(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """``RayShards``: the same, with shard actors of their own in the session cluster."""
    from shared.client.finder import RayShards
    from shared.client.ray import StoreClient
    from store_worker.actor import start_shard

    finder = RayShards(base="memory-follow-shard", timeout=60)

    def start(i: int) -> StoreClient:
        env = {"MEMORY_DATA_DIR": str(shard_dir(tmp_path, i)), "MEMORY_SHARD_INDEX": str(i)}
        start_shard(env, i, 2, name=finder.name(i))
        return StoreClient(actor_name=finder.name(i), timeout=60)

    # Given one shard actor, and a sibling's client following the shards by name
    first = start(0)
    try:
        sibling = ShardedStoreClient([first], finder=finder, follow_s=0)
        extractor = Extractor(
            sibling, FakeLLM.of(remembers), ExtractorSettings(extraction_model="fake/x")
        )
        banks = [f"ray-user-{i:02d}" for i in range(8)]
        for bank in banks:
            sibling.save(f"first fact of {bank}", bank=bank)
        # When a second shard actor starts and a rebalance moves banks to it
        second = start(1)
        moved = rebalance([first, second], 2)
        on_new = [b for b in banks if b in moved.banks_moved]
        assert on_new
        harness = ShardedStoreClient([first, second])
        for k, bank in enumerate(on_new):
            said = [{"role": "user", "content": f"I like number {k}"}]
            harness.pre_generate(f"r-{k}", None, 0, said, {"memory_bank": bank})
            harness.turn_completed(f"r-{k}", None, said)
        # Then the sibling's extractor finds the new shard and drains its outbox
        assert extractor.drain().done == len(on_new)
        assert len(sibling.shards) == 2 and second.outbox_list().queued == 0
    finally:
        for i in range(2):
            with contextlib.suppress(ValueError):
                ray_cluster.kill(ray_cluster.get_actor(finder.name(i)), no_restart=True)


class _Down:
    """A shard whose actor is gone: every call is refused as the Ray client refuses it."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*_args: Any, **_kwargs: Any) -> Any:
            raise errors.SourceUnavailableError("memory-store-1 is not running")

        return refuse


def test_a_shard_down_does_not_stop_claims_or_the_doctor_on_the_others(
    open_shard: Opener,
) -> None:
    # Given three shards sharing the banks, a turn queued in a bank of shard 0 and of shard 2
    stores = [open_shard(i) for i in range(3)]
    assert rebalance(stores, 3).version > 0
    client = ShardedStoreClient(stores)
    banks = {client.owner(f"b{i}"): f"b{i}" for i in range(100)}
    for shard in (0, 2):
        said = [{"role": "user", "content": f"I like number {shard}"}]
        client.pre_generate(f"s{shard}", None, 0, said, {"memory_bank": banks[shard]})
        assert client.turn_completed(f"s{shard}", None, said).queued
    # When shard 1 goes down
    client.shards[1] = _Down()  # type: ignore[call-overload]
    # Then the extractor's claims still reach shards 0 and 2 (from every start shard)
    for _ in range(3):
        jobs = client.outbox_claim(8)
        assert sorted(j.session_id for j in jobs) == ["s0", "s2"]
        for job in jobs:
            client.outbox_fail(job.job_id, "again", retry_after_ms=0)
    # and the doctor reports the others' checks, with shard 1 as a failed check naming it
    report = client.doctor()
    down = [c for c in report.checks if c.name == "store@shard1"]
    assert not report.ok and len(down) == 1 and "memory-store-1" in down[0].detail
    assert any(c.name.endswith("@shard2") and c.ok for c in report.checks)
    # and with every shard down, a claim is refused, typed
    client.shards = [_Down()] * 3  # type: ignore[list-item]
    with pytest.raises(errors.SourceUnavailableError, match="not running"):
        client.outbox_claim(8)


@pytest.mark.ray
def test_over_ray_a_dead_shard_in_the_middle_leaves_the_ones_above_it_serving(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """Shards were counted up to the first missing name: shard 1 gone hid shard 2 too."""
    from shared.client.finder import RayShards
    from shared.client.ray import StoreClient
    from shared.client.rebalance import initial_routing
    from store_worker.actor import start_shard

    finder = RayShards(base="memory-gap-shard", timeout=60)
    clients = []
    for i in range(3):
        env = {"MEMORY_DATA_DIR": str(shard_dir(tmp_path, i)), "MEMORY_SHARD_INDEX": str(i)}
        start_shard(env, i, 3, name=finder.name(i))
        clients.append(StoreClient(actor_name=finder.name(i), timeout=60))
    try:
        assert initial_routing(clients) is not None
        # Given three shard actors, and shard 1 killed for good (its name freed)
        ray_cluster.kill(clients[1].handle, no_restart=True)
        _wait_gone(ray_cluster, finder.name(1))
        # When a client counts the shards afresh (a CLI, a restarted sibling or gateway)
        assert finder.count() == 3
        client = ShardedStoreClient(
            [finder.client(i) for i in range(finder.count())], finder=finder, follow_s=0
        )
        on = {client.owner(f"g{i}"): f"g{i}" for i in range(100)}
        # Then shards 0 and 2 serve their banks; shard 1's are refused, typed, naming it
        for shard in (0, 2):
            assert client.save(f"kept on {shard}", bank=on[shard]).created
        with pytest.raises(errors.SourceUnavailableError, match="memory-gap-shard-1") as e:
            client.save("lost?", bank=on[1])
        assert e.value.retryable
        assert len(client.shards) == 3  # a fan-out's re-count keeps shard 2
    finally:
        for i in range(3):
            with contextlib.suppress(ValueError):
                ray_cluster.kill(ray_cluster.get_actor(finder.name(i)), no_restart=True)


def _wait_gone(ray: Any, name: str) -> None:
    """``ray.kill`` is asynchronous: look the name up until it is freed."""
    for _ in range(600):
        try:
            ray.get_actor(name)
        except ValueError:
            return
        ray.util.list_named_actors()  # a GCS round trip between looks, no sleep
    pytest.fail(f"{name} is still registered after ray.kill")
