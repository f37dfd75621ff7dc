"""``memory-extractor``: the Ray shell around ``Extractor``.

It holds a ``StoreClient``, an LLM backend and a background thread that drains the store's
outbox: woken by the store after each ``turn_completed`` (``outbox_watch``) and otherwise every
``poll_interval_s``, so a missed wake-up only delays a job. Everything durable lives in the
store: killing this actor mid-job leaves the job leased, and the lease expires (or the store
restarts) and the next extractor runs it again, applying the reply the first run recorded in
the job (``Extractor`` docstring: effectively exactly-once).

Metrics (``ray.util.metrics``, ``ray_`` prefix on the node's metrics port): jobs by outcome
(done / skipped / retry / dead / lost: another claim took the job), LLM latency, tokens per job.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from typing import Any

from extract_worker.core import DrainStats, Extractor, JobResult
from extract_worker.settings import ExtractorSettings, retired_settings
from extract_worker.spec import ACTOR_NAME, replica_count, replica_name
from shared.client.workers import NAMESPACE, sibling_options, start_detached
from shared.llm import LLM

log = logging.getLogger(__name__)

LATENCY_BOUNDARIES_MS = [50.0, 100.0, 250.0, 500.0, 1e3, 2.5e3, 5e3, 1e4, 3e4, 6e4]
TOKEN_BOUNDARIES = [100.0, 250.0, 500.0, 1e3, 2e3, 4e3, 8e3, 1.6e4]


class _Metrics:
    def __init__(self) -> None:
        from ray.util import metrics

        self.jobs = metrics.Counter(
            "memory_extractor_jobs",
            description="Extraction jobs by outcome (done, skipped, retry, dead, lost).",
            tag_keys=("outcome",),
        )
        self.llm_ms = metrics.Histogram(
            "memory_extractor_llm_latency_ms",
            description="Latency of one extraction LLM call, in milliseconds.",
            boundaries=LATENCY_BOUNDARIES_MS,
        )
        self.tokens = metrics.Histogram(
            "memory_extractor_tokens_per_job",
            description="Prompt + completion tokens of one extraction job.",
            boundaries=TOKEN_BOUNDARIES,
        )
        self.totals: Counter[str] = Counter()
        self.last: JobResult | None = None
        self.last_at = 0.0

    def observe(self, result: JobResult) -> None:
        self.last, self.last_at = result, time.time()
        self.jobs.inc(tags={"outcome": result.outcome})
        self.totals[result.outcome] += 1
        if result.tokens:
            self.tokens.observe(result.tokens)
            self.totals["tokens"] += result.tokens
        if result.llm_ms:
            self.llm_ms.observe(result.llm_ms)


class Wake:
    """Picklable callback the store calls after an enqueue: ``notify`` this actor."""

    def __init__(self, actor_name: str = ACTOR_NAME) -> None:
        self.actor_name = actor_name

    def __call__(self) -> None:
        import ray

        ray.get_actor(self.actor_name, namespace=NAMESPACE).notify.remote()


class ExtractorActor:
    """Create it with ``start()``; ``llm`` replaces the litellm backend (tests, custom); the
    litellm backend calls ``MEMORY_EXTRACTION_API_BASE`` when that is set, with the key ``env``
    holds (``MEMORY_EXTRACTION_API_KEY``, which ``memory up`` reads from the variable
    ``MEMORY_EXTRACTION_API_KEY_ENV`` names): nothing comes from this process's environment."""

    def __init__(
        self, env: dict[str, str] | None = None, llm: LLM | None = None, name: str = ACTOR_NAME
    ) -> None:
        from shared.client.sharded import ShardedStoreClient

        self.name = name  # a replica's own actor name: its wake-ups come here
        self.settings = ExtractorSettings.from_env(dict(env or {}))
        for line in retired_settings(dict(env or {})):
            log.warning("%s", line)
        self.store = ShardedStoreClient.connect(follow=True)  # every shard's outbox, as N changes
        self.metrics = _Metrics()
        self.outbox = (0, 0, 0)  # queued, leased, dead at the last drain
        backend = llm
        if backend is None and self.settings.enabled:
            backend = self.settings.llm()
        self.core = Extractor(self.store, backend, self.settings, on_result=self.metrics.observe)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._hello()
        self._thread = threading.Thread(target=self._loop, name="extract-drain", daemon=True)
        self._thread.start()

    def _hello(self) -> bool:
        """Report status and ask for wake-ups; the store may not be up yet (retried)."""
        try:
            self.core.publish_status()
            self.store.outbox_watch(self.name, Wake(self.name))
            return True
        except Exception as e:
            log.info("store not reachable yet (%s); polling", e)
            return False

    def _loop(self) -> None:
        greeted = True
        while not self._stop.is_set():
            try:
                greeted = greeted or self._hello()
                self._drain(10_000)
            except Exception as e:  # the store restarting: try again on the next tick
                greeted = False
                log.info("extraction drain interrupted: %s", e)
            self._wake.wait(self.settings.poll_interval_s)
            self._wake.clear()

    def _drain(self, max_jobs: int) -> DrainStats:
        with self._lock:
            stats = self.core.drain(max_jobs=max_jobs)
        with contextlib.suppress(Exception):  # the repr's figure only; the store may be away
            listing = self.store.outbox_list(include_dead=True, limit=0)
            self.outbox = (listing.queued, listing.leased, listing.dead)
        return stats

    def __repr__(self) -> str:
        """What Ray shows in the dashboard's Actors page (Repr) and log prefixes."""
        if "core" not in vars(self):
            return "ExtractorActor(starting)"
        if not self.core.enabled:
            state = "extraction off (no extraction model)"
        else:
            state = f"on ({self.settings.extraction_model})"
        queued, leased, dead = self.outbox
        outbox = f"outbox {queued} queued, {leased} leased, {dead} dead"
        last = self.metrics.last
        if last is None:
            job = "no job yet"
        else:
            when = time.strftime("%H:%M:%S", time.gmtime(self.metrics.last_at))
            job = f"last job {last.job_id} {last.outcome} at {when} UTC"
        return f"ExtractorActor({state}; {outbox}; {job})"

    # -- remote methods --------------------------------------------------------------------

    def ping(self) -> str:
        return "pong"

    def notify(self) -> None:
        self._wake.set()

    def drain(self, max_jobs: int = 10_000) -> dict[str, int]:
        """Drain now (tests, ``memory extract``); returns this call's counts."""
        stats = self._drain(max_jobs)
        return {
            "done": stats.done,
            "skipped": stats.skipped,
            "retry": stats.retried,
            "dead": stats.dead,
        }

    def stats(self) -> dict[str, Any]:
        return {
            "enabled": self.core.enabled,
            "model": self.settings.extraction_model,
            "totals": dict(self.metrics.totals),
        }

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()


def start(
    settings_env: dict[str, str] | None = None,
    *,
    name: str = ACTOR_NAME,
    llm: LLM | None = None,
) -> Any:
    """Start (or find) the named detached extractor and its ``MEMORY_EXTRACTOR_REPLICAS - 1``
    siblings (``<name>-1`` ...; docs/SCALING.md "Replicas"): every replica claims from every
    store shard's outbox, and the store's leases hand each job to one claimer at a time.
    Returns the first."""
    env = dict(settings_env or {})
    replicas = replica_count(env.get("MEMORY_EXTRACTOR_REPLICAS") or 1)
    handles = [
        start_detached(
            ExtractorActor,
            env,
            llm,
            replica_name(name, i),
            name=replica_name(name, i),
            max_restarts=-1,
            max_task_retries=0,
            max_concurrency=4,  # notify/stats answer while a drain runs
            **sibling_options(env, num_cpus=0),
        )
        for i in range(replicas)
    ]
    return handles[0]
