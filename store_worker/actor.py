"""``memory-store``: the Ray actor around ``MemoryStore``.

A thin shell: every public store method is a delegate with the core's own name, signature and
docstring (``functools.wraps``), so the actor and the embedded library cannot drift apart.
The shell adds only what needs Ray:

- the named detached actor (``memory-store`` in namespace ``memory``), restartable: Ray re-runs
  ``__init__`` after a crash and ``__init__`` replays the files, so every acknowledged write is
  back (the files are the truth: docs/ARCHITECTURE.md);
- push events to sibling actors (``subscribe(name, handle, banks)`` → ``handle.on_event``);
- the doctor's sibling probe (are the installed siblings' actors alive?);
- ``ray.util.metrics``: recall latency, writes by method, live memories per bank.

Ray is imported lazily: the embedded mode (``memory --data-dir``) opens the store through this
module (``store_worker.spec``'s ``WORKER.open_embedded(settings)`` calls ``open_embedded``
here) and must not pay for ``import ray``. ``open_embedded`` returns a plain ``MemoryStore``
typed as ``shared.contract.api.StoreAPI``, so mypy checks that the store implements the contract.

Retries (``max_task_retries=0``): a call in flight when the actor dies is *not* re-run after the
restart. ``save`` is not idempotent (a re-run of an acknowledged-but-unanswered save would
reinforce, i.e. count one observation twice), and neither are ``delete``/``supersede`` (a re-run
would answer ``ConflictError`` for a call that succeeded). The caller instead gets a retryable
``SourceUnavailableError`` from ``shared.client.ray`` and decides; the client itself retries only
read-only ops (``shared.contract.Read``), once.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from shared.client.shards import actor_name as shard_actor
from shared.client.shards import shard_count, shard_dir
from shared.client.workers import NAMESPACE, discover, start_detached
from shared.contract.api import StoreAPI
from shared.contract.config import StoreSettings
from shared.contract.errors import InvalidArgumentError, MemoryServiceError
from shared.contract.models import DoctorResponse, Event, SaveManyResponse, SupersedeManyResponse
from shared.contract.op import REGISTRY as OPS
from shared.contract.op import Op
from shared.contract.ops import Doctor, Ping, Subscribe, Unsubscribe
from shared.format import counted
from store_worker.core import MemoryStore
from store_worker.spec import ACTOR_NAME

log = logging.getLogger(__name__)

STORE_CONCURRENCY = 32  # calls served at once (threads); writes among them commit together

# Every public method of the core is delegated by name too (tests and benchmarks call the actor
# directly), except what only makes sense in-process. An op is counted as a write unless it
# is a read (shared.contract.ops).
NOT_DELEGATED = frozenset({"call", "close", "now", "purge_trash", "trash_dir"})
READS = frozenset(name for name, op in OPS.items() if op.retry)
WRITES_EXCEPT = READS | {"doctor"}  # doctor's scratch bank is not a user's write
# Writes that change one bank's memories and nothing of the outbox (their gauge: refresh_bank)
MEMORY_WRITES = frozenset({"save", "update", "pin", "delete", "supersede", "approve", "reject"})


def _public_methods() -> list[str]:
    return sorted(
        name
        for name, value in inspect.getmembers(MemoryStore, callable)
        if not name.startswith("_") and name not in NOT_DELEGATED
    )


# Histogram buckets for recall latency in ms: in-core recall is ~0.2-10 ms.
LATENCY_BOUNDARIES_MS = [0.5, 1, 2, 5, 10, 20, 50, 100, 250, 1000]


class _Metrics:
    """``ray.util.metrics`` exported on the node's metrics port with a ``ray_`` prefix."""

    def __init__(self) -> None:
        from ray.util import metrics

        self.recall_ms = metrics.Histogram(
            "memory_store_recall_latency_ms",
            description="Recall latency inside the store actor, in milliseconds.",
            boundaries=LATENCY_BOUNDARIES_MS,
            tag_keys=("bank",),
        )
        self.writes = metrics.Counter(
            "memory_store_writes",
            description="Mutating calls served, by method.",
            tag_keys=("method",),
        )
        self.live = metrics.Gauge(
            "memory_store_live_memories",
            description="Live canonical memories per bank.",
            tag_keys=("bank",),
        )
        self.outbox = metrics.Gauge(
            "memory_store_outbox_depth",
            description="Extraction jobs in the outbox, by state (queued, leased, dead).",
            tag_keys=("state",),
        )

    def refresh(self, store: MemoryStore, bank: str | None = None) -> None:
        with store.lock:  # the actor is threaded: read the banks between commits
            names = [bank] if bank else list(store.banks)
            counts = {}
            for name in names:
                found = store.banks.get(name)
                # index.live_count is O(1); Bank.counts() walks every record.
                counts[name] = found.index.live_count if found else 0
            depth = store.outbox.depth()
        for name, live in counts.items():
            self.live.set(live, tags={"bank": name})
        for state, jobs in depth.items():
            self.outbox.set(jobs, tags={"state": state})

    def refresh_bank(self, store: MemoryStore, bank: str) -> None:
        """After a memory write: only its bank's gauge, read without the store lock (an int,
        at most one batch old), so the caller's answer never waits for the next group
        commit (the lock is held through a batch's fsync)."""
        found = store.banks.get(bank)
        self.live.set(found.index_as_is.live_count if found else 0, tags={"bank": bank})


class _Push:
    """A fire-and-forget ``on_event`` call per event, whose failures still get noticed.

    ``handle.on_event.remote`` never raises for a dead subscriber; the error sits in the ref.
    Finished refs are reaped on the next event and a failed one is raised here, so
    ``EventBus`` counts it and drops the subscriber after three failures in a row.
    """

    MAX_PENDING = 1000

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.pending: list[Any] = []

    def __call__(self, event: Event) -> None:
        import ray

        self.pending.append(self.handle.on_event.remote(event))
        ready, self.pending = ray.wait(self.pending, num_returns=len(self.pending), timeout=0)
        for ref in ready:
            ray.get(ref)  # raises the subscriber's failure
        if len(self.pending) > self.MAX_PENDING:  # a stuck subscriber must not grow RAM
            raise RuntimeError(f"subscriber has {len(self.pending)} undelivered events")


class StoreActor:
    """The Ray shell over ``MemoryStore``; create it with ``start()``, never directly."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = dict(env or {})
        self.boot_error: MemoryServiceError | None = None
        self._opening = threading.Lock()
        self._open()

    def _open(self) -> None:
        """Open the store (replaying the files: restart-safe). A refusal is kept as
        ``boot_error``: raising here would only make Ray retry forever (max_restarts=-1)
        with the reason buried in a log; ``ping()`` hands it to ``start()``."""
        try:
            settings = StoreSettings.from_env(self.env)
            store = MemoryStore(settings=settings)
        except MemoryServiceError as e:
            self.boot_error = e
            return
        self.store = store
        self.metrics = _Metrics()
        self.metrics.refresh(self.store)
        self._restore_subscriptions()
        self._warm_embedder()
        self.boot_error = None  # last: a call sees the store serving only once it is whole
        log.info(
            "memory-store up on %s (%s)", self.store.root, counted(len(self.store.banks), "bank")
        )

    def _serving(self) -> None:
        """Raise the boot error, once the open was tried again and still fails.

        A restart (after a kill, a node's return) may meet a data dir another process holds
        for a moment (an embedded ``memory --data-dir`` call) or a volume not yet writable:
        the store kept refusing every call with that first error, naming a holder long gone,
        until someone stopped and started it by hand. Each call while not serving tries the
        open again (one attempt at a time; a held lock is refused at once)."""
        if self.boot_error is None:
            return
        with self._opening:
            if self.boot_error is not None:
                self._open()
        if self.boot_error is not None:
            raise self.boot_error

    def __repr__(self) -> str:
        """What Ray shows in the dashboard's Actors page (Repr) and log prefixes."""
        if self.boot_error is not None:
            return f"StoreActor(not serving: {self.boot_error.message})"
        if "store" not in vars(self):
            return "StoreActor(starting)"
        banks = list(self.store.banks.values())  # a snapshot: no lock, repr must not wait
        live = sum(b.index_as_is.live_count for b in banks)
        held = f"{counted(live, 'live memory')} in {counted(len(banks), 'bank')}"
        return f"StoreActor({self.store.root}: {held})"

    def _warm_embedder(self) -> None:
        """Load a local embedding model in the background (torch's import costs ~4 s), so
        the first recall after a start does not pay for it; a failure is logged, and the
        embedder reports it again on use."""
        load = getattr(self.store.embedder, "load", None)
        if load is None:
            return

        def warm() -> None:
            try:
                load()
            except MemoryServiceError as e:
                log.warning("embedding model did not load: %s", e)

        threading.Thread(target=warm, name="embedder-warm-up", daemon=True).start()

    # -- calls -----------------------------------------------------------------------------

    def _call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self._serving()
        method: Callable[..., Any] = getattr(self.store, name)
        if name == "recall":
            started = time.perf_counter()
            result = method(*args, **kwargs)
            elapsed = (time.perf_counter() - started) * 1000
            self.metrics.recall_ms.observe(elapsed, tags={"bank": result.bank})
            return result
        result = method(*args, **kwargs)
        if name not in WRITES_EXCEPT:
            # An idle worker's poll (a claim that got no job) is not a write; it still
            # refreshes the gauges below (a claim may have requeued expired leases)
            if not (name == "outbox_claim" and not result):
                self.metrics.writes.inc(tags={"method": name})
            bank = getattr(result, "bank", None)
            if name in MEMORY_WRITES and isinstance(bank, str):
                self.metrics.refresh_bank(self.store, bank)
            elif isinstance(result, SaveManyResponse | SupersedeManyResponse):
                for each in sorted({r.bank for r in result.results}):
                    self.metrics.refresh_bank(self.store, each)
            else:  # the outbox, banks, rules, a reload...: every gauge, between commits
                self.metrics.refresh(self.store, bank if isinstance(bank, str) else None)
        return result

    def call(self, op: Op[Any]) -> Any:
        """The one entry of ``shared.client.ray.StoreClient``: an op, served by the core (or, for
        the few that need Ray, by this shell: ``_OWN``)."""
        if not isinstance(op, Op):
            raise InvalidArgumentError(f"{type(op).__name__} is not a store operation")
        own = _OWN.get(type(op))
        if own is not None:
            return own(self, *op.args().values())
        return self._call(op.method, (), op.args())

    def ping(self) -> str:
        self._serving()
        return "pong"

    def doctor(self) -> DoctorResponse:
        self.ping()
        return self.store.doctor(siblings=_probe_siblings)

    # -- events ----------------------------------------------------------------------------

    def subscribe(self, name: str, actor_handle: Any, banks: Iterable[str] | None = None) -> None:
        """Push every matching event to ``actor_handle.on_event(event)``, fire-and-forget.

        Name the subscription after the subscriber's actor (``memory-extractor``): after a
        store restart it is re-attached by looking that name up in the namespace.
        """
        self.ping()
        wanted = sorted(set(banks)) if banks else None
        with self.store.lock:  # threaded actor: one read-modify-write of the saved list
            self.store.subscribe(name, _Push(actor_handle), wanted)
            saved = self._saved_subscriptions()
            saved[name] = wanted
            self.store.state.set("store", "subscribers", saved)

    def unsubscribe(self, name: str) -> bool:
        self.ping()
        with self.store.lock:
            saved = self._saved_subscriptions()
            if saved.pop(name, "missing") != "missing":
                self.store.state.set("store", "subscribers", saved)
            return self.store.unsubscribe(name)

    def _saved_subscriptions(self) -> dict[str, list[str] | None]:
        raw = self.store.state.get("store", "subscribers")
        return dict(raw) if isinstance(raw, dict) else {}

    def _restore_subscriptions(self) -> None:
        import ray

        for name, banks in self._saved_subscriptions().items():
            try:
                handle = ray.get_actor(name, namespace=NAMESPACE)
            except ValueError:  # that sibling is not running; it subscribes again when it starts
                continue
            self.store.subscribe(name, _Push(handle), banks)


def _delegate(name: str) -> Callable[..., Any]:
    core = getattr(MemoryStore, name)

    @functools.wraps(core)  # Ray checks call signatures against the core's own
    def method(self: StoreActor, *args: Any, **kwargs: Any) -> Any:
        return self._call(name, args, kwargs)

    return method


_OWN: dict[type[Op[Any]], Callable[..., Any]] = {
    Ping: StoreActor.ping,
    Doctor: StoreActor.doctor,
    Subscribe: StoreActor.subscribe,
    Unsubscribe: StoreActor.unsubscribe,
}
"""Ops whose serving needs Ray: the boot error, the siblings' probe, push subscribers."""

for _name in _public_methods():
    if _name not in StoreActor.__dict__:  # ping, doctor, subscribe, unsubscribe are our own
        setattr(StoreActor, _name, _delegate(_name))


def _probe_siblings() -> dict[str, bool]:
    """Advisory: is each installed sibling's actor alive in the namespace?

    Opt-in workers (``default_on=False``, e.g. the gRPC gateway) count only when running,
    so a bare ``memory up`` does not warn about what it was never asked to start.
    """
    import ray

    status: dict[str, bool] = {}
    for spec in discover():
        if spec.actor_name == ACTOR_NAME:
            continue
        try:
            ray.get_actor(spec.actor_name, namespace=NAMESPACE)
            status[spec.actor_name] = True
        except ValueError:
            if spec.default_on:
                status[spec.actor_name] = False
    return status


def start(settings_env: dict[str, str] | None = None, *, name: str = ACTOR_NAME) -> Any:
    """Start (or find) the store: ``MEMORY_STORE_SHARDS`` shards (default 1), each a named
    detached actor (``shared.client.shards.actor_name``) on its own data dir; returns shard 0.

    ``settings_env`` holds ``MEMORY_*`` variables; ``MEMORY_DATA_DIR`` should be absolute,
    because the actor's working directory is not the caller's. A running actor is returned
    as it is (``get_if_exists``): its settings do not change. Fresh shards (no bank anywhere,
    no slot table yet) get an even slot table; otherwise ``memory shards rebalance`` moves.
    """
    env = dict(settings_env or {})
    n = shard_count(env.get("MEMORY_STORE_SHARDS") or 1)
    if n == 1:
        return start_shard(env, 0, 1, name=name)
    root = StoreSettings.from_env(env).data_path
    handles = []
    for i in range(n):
        shard_env = {
            **env,
            "MEMORY_DATA_DIR": str(shard_dir(root, i)),
            "MEMORY_SHARD_INDEX": str(i),
        }
        handles.append(start_shard(shard_env, i, n, name=shard_actor(i) if i else name))
    from shared.client.ray import StoreClient
    from shared.client.rebalance import initial_routing

    initial_routing([StoreClient(h, actor_name=shard_actor(i)) for i, h in enumerate(handles)])
    return handles[0]


def shard_resource(value: str | None, shard: int, n: int) -> str | None:
    """The custom resource a shard asks for: ``MEMORY_STORE_RESOURCE`` with
    ``{i}`` replaced by the shard's number, or with ``_<i>`` appended when there are several
    shards (``memory_store`` → ``memory_store_0``, ``memory_store_1`` ...)."""
    if not value:
        return None
    if "{i}" in value:
        return value.replace("{i}", str(shard))
    return f"{value}_{shard}" if n > 1 else value


def start_shard(env: dict[str, str], shard: int, n: int, *, name: str) -> Any:
    """One store actor; on a multi-node cluster it runs where its data volume is: that node
    declares the shard's custom resource (deploy/raycluster.yaml), so a restart lands there too."""
    node = shard_resource(env.get("MEMORY_STORE_RESOURCE"), shard, n)
    return start_detached(
        StoreActor,
        env,
        name=name,
        max_restarts=-1,
        max_task_retries=0,  # see the module docstring: writes are at-most-once
        # A threaded actor: MemoryStore is thread-safe, and concurrent callers' saves share
        # fsyncs (group commit, store_worker/storage/commit.py); reads wait for at most one batch.
        max_concurrency=STORE_CONCURRENCY,
        resources={node: 1} if node else None,
        release_on_error=True,  # the store could not open its data dir: free the name
    )


def open_embedded(settings: StoreSettings, *, one_shot: bool = False) -> StoreAPI:
    """The store in this process, without Ray (``memory --data-dir``, the gateway's embedded
    mode, the chat example); the caller closes it (``MemoryStore.close``). ``one_shot``: a
    single-threaded caller that runs one command and ends (the CLI) gets the lazy boot
    (``store_worker/storage/records.py``)."""
    return MemoryStore(settings=settings, lazy_records=one_shot)
