"""The pass schedule: one APScheduler 3 interval job, with catch-up decided from the store.

Why ``BackgroundScheduler`` in a threaded actor rather than ``AsyncIOScheduler`` in an async
one: a pass is synchronous, blocking work (the Ray ``StoreClient`` waits on ``ray.get`` for
every call, and rapidfuzz scoring is CPU-bound); on an actor's event loop it would stall every
other call (``status``, ``run_now``) for the whole pass. A background thread runs it instead,
and the actor's own threads stay free to answer.

Passes never overlap: the job has ``max_instances=1`` and ``coalesce=True`` (a backlog of missed
runs becomes one run), and every pass, scheduled or ``run_now``, takes ``Consolidator``'s lock.

Catch-up: re-adding a job resets its schedule and skips missed runs (APScheduler's behaviour), so
the first run time is computed from the stored last clean pass (``Consolidator.next_run_at``):
now when it is older than the interval (or missing), else one interval after it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from consolidate_worker.core import Consolidator
from consolidate_worker.report import Report
from shared.contract import errors

log = logging.getLogger(__name__)

JOB_ID = "consolidate"


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


class PassScheduler:
    """Runs ``core.run_pass`` every ``interval_hours``, catching up once at start."""

    def __init__(
        self,
        core: Consolidator,
        *,
        on_report: Callable[[Report], None] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        from apscheduler.schedulers.background import BackgroundScheduler

        self.core = core
        self.on_report = on_report
        self.on_failure = on_failure
        self.scheduler: Any = BackgroundScheduler(timezone=UTC)
        self.boot_report: Report | None = None
        self._boot_pending = False
        self._boot_done = threading.Event()

    def start(self) -> None:
        settings = self.core.settings
        now = self.core.clock.now_ms()
        first = self.core.next_run_at(now)
        self._boot_pending = first <= now and settings.run_on_boot
        if first <= now and not settings.run_on_boot:
            first = now + settings.interval_ms
        self.scheduler.add_job(
            self._job,
            trigger="interval",
            seconds=settings.interval_hours * 3600,
            next_run_time=_at(first),
            id=JOB_ID,
            replace_existing=True,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=None,  # a late run is still a run (a suspended laptop)
        )
        if not self._boot_pending:
            self._boot_done.set()
        self.scheduler.start()
        log.info("consolidation scheduled; first pass at %s", _at(first).isoformat())

    def wait_boot(self, timeout: float | None = None) -> Report | None:
        """Block until the boot catch-up (if any) has finished; its report, or None."""
        if not self._boot_done.wait(timeout):
            raise errors.SourceUnavailableError("boot catch-up still running", retryable=True)
        return self.boot_report

    def next_run_ms(self) -> int | None:
        job = self.scheduler.get_job(JOB_ID)
        when = getattr(job, "next_run_time", None) if job is not None else None
        return int(when.timestamp() * 1000) if when is not None else None

    def shutdown(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    def _job(self) -> None:
        report: Report | None = None
        try:
            report = self.core.run_pass()
        except errors.ConflictError:
            log.info("scheduled consolidation skipped: a pass is already running")
        except Exception as e:  # a failed pass must not kill the schedule; next interval retries
            log.exception("scheduled consolidation failed")
            if self.on_failure is not None:
                self.on_failure(e)
        finally:
            if self._boot_pending:  # the report is in place before a waiter wakes
                self.boot_report = report
                self._boot_pending = False
            self._boot_done.set()
        if report is not None and self.on_report is not None:
            self.on_report(report)
