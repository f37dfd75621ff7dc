"""Scheduling: catch-up on boot from the stored last run; the APScheduler job; no overlap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from consolidate_worker.core import LAST_RUN_KEY, OWNER, Consolidator
from consolidate_worker.schedule import PassScheduler
from consolidate_worker.settings import ConsolidatorSettings
from shared.contract.clock import FakeClock, SystemClock
from store_worker.core import MemoryStore

HOUR_MS = 3_600_000


@pytest.fixture
def clock() -> FakeClock:
    # Real "now": APScheduler fires on the wall clock, so the fake must start there.
    return FakeClock(start_ms=SystemClock().now_ms(), tick=0)


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "data", clock=clock)
    s.save("The user prefers dark mode in the editor")
    s.save("The user prefers dark mode in their editor")
    yield s
    s.close()


def stored_last_run(store: MemoryStore, at: int) -> None:
    store.state_set(OWNER, LAST_RUN_KEY, {"at": at})


def test_no_stored_run_is_due(store: MemoryStore, clock: FakeClock) -> None:
    consolidator = Consolidator(store, clock=clock)
    assert consolidator.last_run() is None
    assert consolidator.due()
    assert consolidator.next_run_at() == clock.ms


def test_an_old_last_run_catches_up_once(store: MemoryStore, clock: FakeClock) -> None:
    # Given a last clean pass 25 hours ago (interval 24 h)
    stored_last_run(store, clock.ms - 25 * HOUR_MS)
    consolidator = Consolidator(store, clock=clock)
    # When the consolidator boots
    report = consolidator.catch_up()
    # Then it runs one pass, and the checkpoint moves to now
    assert report is not None and len(report.merged) == 1
    assert consolidator.last_run() == clock.ms
    # And a second boot right after does not run again
    assert consolidator.catch_up() is None


def test_a_recent_last_run_does_not_catch_up(store: MemoryStore, clock: FakeClock) -> None:
    # Given a last clean pass one hour ago
    last = clock.ms - HOUR_MS
    stored_last_run(store, last)
    consolidator = Consolidator(store, clock=clock)
    # Then nothing runs at boot, and the next pass is one interval after the last
    assert consolidator.catch_up() is None
    assert consolidator.next_run_at() == last + 24 * HOUR_MS
    # When the clock passes the interval, it is due again
    clock.advance(ms=23 * HOUR_MS)
    assert consolidator.due()


def test_a_checkpoint_from_the_future_is_due_now(store: MemoryStore, clock: FakeClock) -> None:
    # Given a checkpoint written while the clock ran ten years ahead, then set back
    stored_last_run(store, clock.ms + 3650 * 24 * HOUR_MS)
    consolidator = Consolidator(store, clock=clock)
    # Then a pass is due now (not in ten years and a day), runs, and its checkpoint is now's
    assert consolidator.due()
    assert consolidator.next_run_at() == clock.ms
    report = consolidator.catch_up()
    assert report is not None and len(report.merged) == 1
    assert consolidator.last_run() == clock.ms
    # And the next one is an interval later
    assert not consolidator.due()
    assert consolidator.next_run_at() == clock.ms + 24 * HOUR_MS


def test_the_scheduler_starts_from_a_checkpoint_from_the_future(
    store: MemoryStore, clock: FakeClock
) -> None:
    # Given a checkpoint from the future
    stored_last_run(store, clock.ms + 3650 * 24 * HOUR_MS)
    scheduler = PassScheduler(Consolidator(store, clock=clock))
    try:
        # When the scheduler starts, Then it catches up at once, as with no checkpoint
        scheduler.start()
        boot = scheduler.wait_boot(timeout=60)
        assert boot is not None and len(boot.merged) == 1
        next_run = scheduler.next_run_ms()
        assert next_run is not None and next_run <= clock.ms + 24 * HOUR_MS
    finally:
        scheduler.shutdown()


def test_run_on_boot_off_never_catches_up(store: MemoryStore, clock: FakeClock) -> None:
    settings = ConsolidatorSettings(run_on_boot=False)
    assert Consolidator(store, clock=clock, settings=settings).catch_up() is None


def test_a_corrupt_checkpoint_counts_as_no_run(store: MemoryStore, clock: FakeClock) -> None:
    store.state_set(OWNER, LAST_RUN_KEY, {"at": "yesterday"})
    assert Consolidator(store, clock=clock).last_run() is None


def test_scheduler_catches_up_at_start(store: MemoryStore, clock: FakeClock) -> None:
    # Given a stale checkpoint and the real APScheduler job
    stored_last_run(store, clock.ms - 48 * HOUR_MS)
    reports = []
    scheduler = PassScheduler(Consolidator(store, clock=clock), on_report=reports.append)
    try:
        # When it starts
        scheduler.start()
        boot = scheduler.wait_boot(timeout=60)
        # Then the boot pass ran once, on the scheduler's thread, and was reported
        assert boot is not None and len(boot.merged) == 1
        assert reports == [boot]
        next_run = scheduler.next_run_ms()
        assert next_run is not None
    finally:
        scheduler.shutdown()


def test_scheduler_waits_an_interval_after_a_recent_run(
    store: MemoryStore, clock: FakeClock
) -> None:
    # Given a checkpoint written an hour ago
    last = clock.ms - HOUR_MS
    stored_last_run(store, last)
    reports = []
    scheduler = PassScheduler(Consolidator(store, clock=clock), on_report=reports.append)
    try:
        scheduler.start()
        # Then no boot pass, and the job is due one interval after the last run
        assert scheduler.wait_boot(timeout=5) is None
        assert scheduler.next_run_ms() == last + 24 * HOUR_MS
        assert reports == []
    finally:
        scheduler.shutdown()


def test_settings_from_env() -> None:
    settings = ConsolidatorSettings.from_env(
        {"MEMORY_CONSOLIDATE_INTERVAL_HOURS": "6", "MEMORY_CONSOLIDATE_BANKS": "a,b"}
    )
    assert settings.interval_ms == 6 * HOUR_MS and settings.banks == ("a", "b")


@pytest.mark.parametrize(
    "env",
    [
        {"MEMORY_CONSOLIDATE_INTERVAL_HOURS": "0"},
        {"MEMORY_CONSOLIDATE_GREY_SCORE": "95"},
        {"MEMORY_CONSOLIDATE_JUDGE_ENABLED": "true"},
        {"MEMORY_CONSOLIDATE_NO_SUCH": "1", "MEMORY_CONSOLIDATE_PAGE_SIZE": "9000"},
    ],
)
def test_bad_settings_are_typed_errors(env: dict[str, str]) -> None:
    from shared.contract.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError):
        ConsolidatorSettings.from_env(env)
