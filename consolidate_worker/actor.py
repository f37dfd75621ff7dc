"""``memory-consolidator``: the Ray actor around ``Consolidator``.

A thin shell. It holds a ``ShardedStoreClient`` (the store's public API over Ray, following the
store shards as they are added or removed), a ``Consolidator`` and a ``PassScheduler``
(APScheduler 3 ``BackgroundScheduler``; ``schedule.py`` says why a threaded actor). The actor
keeps no state of its own: the last clean pass lives in the store's sibling state, so killing
or removing it loses nothing, and a restart catches up by itself.

Over several store shards a pass is one Ray task per shard, run in parallel (``RayShardRunner``;
``shards.py`` says how they are planned and merged): each task talks only to its own shard, and
a shard that is down fails only its own task, reported in the merged report.

Each report is logged and exported as ``ray.util.metrics`` (``ray_`` prefix on the node's
metrics port). Ray is imported lazily: the ``memory`` CLI loads this module through the worker
entry point on every run.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from consolidate_worker.core import Consolidator
from consolidate_worker.judge import judge_from
from consolidate_worker.report import PassError, Report
from consolidate_worker.schedule import PassScheduler
from consolidate_worker.settings import ConsolidatorSettings
from consolidate_worker.shards import ShardJob, failed, task_name
from consolidate_worker.spec import ACTOR_NAME
from shared.client.ray import STORE_ACTOR
from shared.client.sharded import ShardedStoreClient
from shared.client.workers import sibling_options, start_detached
from shared.contract import errors
from shared.contract.api import StoreAPI

log = logging.getLogger(__name__)

# The actor's retry-safe methods (``shared.client.ray.ActorClient`` re-sends them after a restart).
ACTOR_READS = frozenset({"ping", "status", "wait_boot", "last_report"})


class _Metrics:
    def __init__(self) -> None:
        from ray.util import metrics

        self.passes = metrics.Counter(
            "memory_consolidator_passes",
            description="Consolidation passes finished, by outcome.",
            tag_keys=("outcome",),
        )
        self.merged = metrics.Counter(
            "memory_consolidator_merged",
            description="Memories superseded into a survivor.",
        )
        self.last = metrics.Gauge(
            "memory_consolidator_last_pass",
            description="Figures of the last pass, by field.",
            tag_keys=("field",),
        )

    def record(self, report: Report) -> None:
        outcome = "dry_run" if report.dry_run else ("ok" if report.ok else "error")
        self.passes.inc(tags={"outcome": outcome})
        if report.merged:
            self.merged.inc(len(report.merged))
        for name, value in (
            ("duration_ms", report.duration_ms),
            ("scanned", report.scanned),
            ("groups", len(report.groups)),
            ("merged", len(report.merged)),
            ("skipped_pinned", len(report.skipped_pinned)),
            ("capped", len(report.capped)),
            ("errors", len(report.errors)),
        ):
            self.last.set(value, tags={"field": name})


def shard_pass(
    settings: ConsolidatorSettings, actor_name: str, job: ShardJob, dry_run: bool
) -> Report:
    """The body of one shard's task: a ``Consolidator`` over that shard's actor only."""
    from shared.client.ray import StoreClient

    core = Consolidator(
        StoreClient(actor_name=actor_name), settings=settings, judge=judge_from(settings)
    )
    return core.run_shard(job.shard, banks=job.banks, dry_run=dry_run, budget=job.budget)


def whole_pass(
    settings: ConsolidatorSettings, actor_name: str, banks: Sequence[str] | None, dry_run: bool
) -> Report:
    """The body of an unsharded pass's task: a ``Consolidator`` over the one store actor (it
    checkpoints in the store, as the actor's own pass did)."""
    from shared.client.ray import StoreClient

    core = Consolidator(
        StoreClient(actor_name=actor_name), settings=settings, judge=judge_from(settings)
    )
    return core.run_pass(banks=banks, dry_run=dry_run)


def named_task(body: Callable[..., Any], name: str) -> Any:
    """``body`` as a Ray task called ``name`` in the dashboard's Tasks view (with its duration,
    outcome and logs). No CPU asked (a pass mostly waits on its store), no retries (a failed
    pass is reported, and the next scheduled one redoes it)."""
    import ray

    return ray.remote(num_cpus=0, max_retries=0)(body).options(name=name)


class RayPassRunner:
    """``PassRunner`` over Ray: an unsharded pass as one task, ``consolidate:<banks>`` (or
    ``consolidate:all``), so a pass shows in the Tasks view as a sharded one does."""

    def __init__(self, store: StoreAPI, settings: ConsolidatorSettings) -> None:
        self.store = store
        self.settings = settings

    def __call__(self, banks: Sequence[str] | None, *, dry_run: bool) -> Report:
        import ray

        sharding = self.store.sharding()
        one = sharding.shards[0] if sharding is not None and sharding.shards else self.store
        actor_name = getattr(one, "actor_name", None) or STORE_ACTOR
        task = named_task(whole_pass, task_name(banks))
        try:
            report: Report = ray.get(task.remote(self.settings, actor_name, banks, dry_run))
        except ray.exceptions.RayTaskError as e:
            from shared.client.ray import unwrap

            raise unwrap(e) from None
        except ray.exceptions.RayError as e:  # the task's worker died (its node went)
            raise errors.SourceUnavailableError(f"consolidation pass lost: {e}") from None
        return report


class RayShardRunner:
    """``ShardRunner`` over Ray: one task per shard (``consolidate:shard-<i>``), all sent
    before any is awaited.

    The tasks ask for no CPU (``num_cpus=0``, like the extractor replicas): a pass mostly
    waits on its shard, and a cluster whose CPUs are busy must not queue it behind them.
    No retries: a shard pass that died is reported, and the next scheduled pass redoes it."""

    def __init__(self, store: StoreAPI, settings: ConsolidatorSettings) -> None:
        self.store = store
        self.settings = settings

    def __call__(self, jobs: Sequence[ShardJob], *, dry_run: bool) -> list[Report | PassError]:
        import ray

        sharding = self.store.sharding()
        shards = sharding.shards if sharding is not None else [self.store]
        names = [getattr(shards[job.shard], "actor_name", "") for job in jobs]
        refs = [
            named_task(shard_pass, task_name(job.banks, job.shard)).remote(
                self.settings, name, job, dry_run
            )
            for name, job in zip(names, jobs, strict=True)
        ]
        out: list[Report | PassError] = []
        for job, ref in zip(jobs, refs, strict=True):
            try:
                out.append(ray.get(ref))
            except ray.exceptions.RayTaskError as e:
                from shared.client.ray import unwrap

                out.append(failed(job, unwrap(e)))
            except ray.exceptions.RayError as e:  # the task's worker died (its node went)
                out.append(failed(job, errors.SourceUnavailableError(f"shard pass lost: {e}")))
        return out


def _in_ray() -> bool:
    """Whether this process is a Ray actor (the consolidator's always is; the class built by
    hand in a test's driver is not, and its passes run in place)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return False
    return ray.get_runtime_context().get_actor_id() is not None


def _utc(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ms / 1000))


class ConsolidatorActor:
    """The Ray shell over ``Consolidator``; create it with ``start()``, never directly."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        settings = ConsolidatorSettings.from_env(dict(env or {}))
        # every store shard, as they come and go; a pass runs per shard (RayShardRunner)
        client = ShardedStoreClient.connect(follow=True)
        runner = RayShardRunner(client, settings) if client.sharding() is not None else None
        # every pass a named Ray task: one per shard, or one for the whole pass over one store
        self.core = Consolidator(
            client,
            settings=settings,
            judge=judge_from(settings),
            shard_runner=runner,
            pass_runner=RayPassRunner(client, settings) if _in_ray() else None,
        )
        self.metrics = _Metrics()
        self._last: Report | None = None
        # the last clean pass as the store remembers it (this process may be a restart, and
        # Ray reads the repr once, at start: it said "no pass yet" though a pass had run)
        self._checkpoint = self.core.last_run()
        self.scheduler = PassScheduler(self.core, on_report=self._record)
        self.scheduler.start()

    def _record(self, report: Report) -> None:
        self._last = report
        self.metrics.record(report)

    def ping(self) -> str:
        return "pong"

    def __repr__(self) -> str:
        """What Ray shows in the dashboard's Actors page (Repr) and log prefixes."""
        if "scheduler" not in vars(self):
            return "ConsolidatorActor(starting)"
        last = self._last
        if self.core.running:
            state = "pass running"
        elif last is not None:
            outcome = "dry run" if last.dry_run else ("ok" if last.ok else "errors")
            state = (
                f"last pass {_utc(last.started_at)} {outcome}: {last.scanned} scanned, "
                f"{len(last.merged)} merged in {last.duration_ms} ms"
            )
        elif self._checkpoint is not None:  # before a restart: no figures, only when
            state = f"last clean pass {_utc(self._checkpoint)}"
        else:
            state = "no pass yet"
        nxt = self.scheduler.next_run_ms()
        # with its date: a time alone ("05:29 UTC") read as overdue once past that hour today
        return f"ConsolidatorActor({state}; next pass {_utc(nxt) if nxt else 'none'})"

    def run_now(self, banks: list[str] | None = None, dry_run: bool = False) -> Report:
        """One pass now (``memory consolidate --now``); a running pass answers ConflictError."""
        report = self.core.run_pass(banks=banks, dry_run=dry_run)
        self._record(report)
        return report

    def wait_boot(self, timeout: float | None = None) -> Report | None:
        return self.scheduler.wait_boot(timeout)

    def last_report(self) -> Report | None:
        return self._last

    def status(self) -> dict[str, Any]:
        return {
            "running": self.core.running,
            "last_run": self.core.last_run(),
            "next_run": self.scheduler.next_run_ms(),
            "interval_hours": self.core.settings.interval_hours,
            "last_report": self._last.summary() if self._last else None,
        }

    def shutdown(self) -> None:
        """Stop the schedule (tests; ``ray.kill`` needs nothing from us)."""
        self.scheduler.shutdown()


def start(settings_env: dict[str, str] | None = None, *, name: str = ACTOR_NAME) -> Any:
    """Start (or find) the named detached consolidator and wait until it answers ``ping``.

    The store must be running (its handle is looked up now, so a missing store fails here).
    ``settings_env`` holds ``MEMORY_CONSOLIDATE_*`` variables.
    """
    from shared.client.ray import get_actor

    get_actor("memory-store")  # a missing store fails here, not in the actor
    env = dict(settings_env or {})
    return start_detached(
        ConsolidatorActor,
        env,
        name=name,
        max_restarts=-1,  # a restart re-reads the checkpoint and catches up by itself
        max_task_retries=0,
        max_concurrency=4,  # status answers while a pass runs; the core's lock serialises
        **sibling_options(env),
    )
