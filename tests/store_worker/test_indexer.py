"""A group commit's index updates run on the indexer thread while the leader fsyncs
(``store_worker/storage/indexer.py``, ``commit.py``): the fsync and the updates overlap, no reader
gets in before both are done, and a failure of either leaves RAM exactly as the files say."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import SourceUnavailableError
from store_worker.core import MemoryStore
from store_worker.recall.index import BankIndex
from store_worker.storage.bank import Bank
from store_worker.storage.indexer import Indexer, Job

TURN = "01HZX3V7K2M4N6P8Q9R0S1T2V3"  # a ULID
WAIT_S = 30  # a bound on waits for another thread, never reached when the code is right


def reopen(data_dir: Path) -> MemoryStore:
    return MemoryStore(data_dir, clock=FakeClock())


def ram_view(bank: Bank) -> dict[str, Any]:
    """What a bank's RAM says, independent of slot order: records and the index's live state."""
    idx = bank.index
    alive = [key for key, slot in idx.slot_of.items() if idx.col("alive")[slot]]
    return {
        "records": {i: (m.revision, m.invalid_at) for i, m in bank.records.items()},
        "alive": sorted(alive),
        "counted": idx.n_counted,
        "total_len": idx.total_len,
        "df": dict(idx.df),
        "terms": {key: sorted(idx._terms_of(idx.slot_of[key])) for key in alive},
    }


def assert_ram_matches_files(store: MemoryStore, data_dir: Path, bank: str = "main") -> None:
    in_ram = ram_view(store.banks.resolve(bank))
    store.close()
    again = reopen(data_dir)
    try:
        assert ram_view(again.banks.resolve(bank)) == in_ram
    finally:
        again.close()


class SyncProbe:
    """Wraps the log's ``fdatasync``: inside it, waits for the batch's index updates to end
    on the indexer thread (so they certainly ran during the sync), notes whether another
    thread could take the store lock, then syncs or fails as told."""

    def __init__(
        self, store: MemoryStore, monkeypatch: pytest.MonkeyPatch, *, fail: bool = False
    ) -> None:
        self.settled = threading.Event()
        self.settle_threads: list[str] = []
        self.lock_free: list[bool] = []
        self.synced = False
        real_sync, real_settle = os.fdatasync, Bank.settle
        probe = self

        def settle(bank: Bank) -> None:
            real_settle(bank)
            probe.settle_threads.append(threading.current_thread().name)
            probe.settled.set()

        def fdatasync(fd: int) -> None:
            assert probe.settled.wait(WAIT_S), "the index updates did not run during the sync"
            probe.lock_free.append(_lock_free_elsewhere(store.lock))
            if fail:
                raise OSError(errno.ENOSPC, "No space left on device")
            real_sync(fd)
            probe.synced = True

        monkeypatch.setattr(Bank, "settle", settle)
        monkeypatch.setattr(os, "fdatasync", fdatasync)


def _lock_free_elsewhere(lock: threading.RLock) -> bool:
    """Whether a thread other than this one (a reader) could take ``lock`` now."""
    got: list[bool] = []

    def try_it() -> None:
        took = lock.acquire(blocking=False)
        got.append(took)
        if took:
            lock.release()

    reader = threading.Thread(target=try_it)
    reader.start()
    reader.join()
    return got[0]


@pytest.fixture
def warm_store(data_dir: Path) -> Iterator[MemoryStore]:
    """A store whose default bank exists (its first save made the folder)."""
    store = reopen(data_dir)
    store.save("The user keeps notes in plain files")
    yield store
    store.close()


def test_index_updates_run_on_the_indexer_during_the_fsync(
    warm_store: MemoryStore, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a sync that waits for the batch's index updates before it completes
    probe = SyncProbe(warm_store, monkeypatch)
    # When a save commits
    mem = warm_store.save("The deploy window is Friday afternoon").memory
    # Then its index update ran on the indexer thread while the leader was in the sync,
    # with the store lock held against readers, and the save is visible once answered
    assert probe.synced
    assert probe.settle_threads == ["memory-store-indexer"]
    assert probe.lock_free == [False]
    assert warm_store.recall("deploy window").memories[0].memory.id == mem.id
    monkeypatch.undo()
    assert_ram_matches_files(warm_store, data_dir)


def test_a_reader_never_sees_an_unflushed_write(
    warm_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a reader that starts while a save's fsync is under way
    probe = SyncProbe(warm_store, monkeypatch)
    seen: list[tuple[bool, bool]] = []
    readers: list[threading.Thread] = []
    real_sync = os.fdatasync

    def read() -> None:
        found = warm_store.list(page_size=50).memories
        seen.append((probe.synced, any("Lyon" in m.text for m in found)))

    def sync_with_reader(fd: int) -> None:
        reader = threading.Thread(target=read)
        readers.append(reader)
        reader.start()
        real_sync(fd)

    monkeypatch.setattr(os, "fdatasync", sync_with_reader)
    # When the save commits
    warm_store.save("The user lives in Lyon")
    for reader in readers:
        reader.join()
    # Then the reader got in only after the fsync, and saw the write then
    assert seen == [(True, True)]


def test_a_flush_that_fails_while_the_index_updates_leaves_ram_equal_to_the_files(
    warm_store: MemoryStore, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a disk that fills up while the batch's index updates run beside its fsync
    log = data_dir / "main" / "memories.jsonl"
    before = log.read_bytes()
    probe = SyncProbe(warm_store, monkeypatch, fail=True)
    # When a save commits
    with pytest.raises(SourceUnavailableError):
        warm_store.save("The user's cat is called Miso")
    # Then the update had run, the log was cut back, and RAM is the files' again
    assert probe.settle_threads == ["memory-store-indexer"]
    monkeypatch.undo()
    assert log.read_bytes() == before
    assert not warm_store.recall("cat Miso").memories
    assert warm_store.save("written once there is room again").created
    assert_ram_matches_files(warm_store, data_dir)


def break_first_upsert(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Makes the next index update fail once; returns the keys it failed for."""
    real_upsert = BankIndex.upsert
    broke: list[str] = []

    def upsert(index: BankIndex, key: str, *args: Any, **kw: Any) -> int:
        if not broke:
            broke.append(key)
            raise RuntimeError("index update failed")
        return real_upsert(index, key, *args, **kw)

    monkeypatch.setattr(BankIndex, "upsert", upsert)
    return broke


def test_an_index_update_that_fails_rebuilds_the_index_and_answers_the_caller(
    warm_store: MemoryStore, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an index update that breaks once (its line is flushed beside it)
    broke = break_first_upsert(monkeypatch)
    # When a save commits
    mem = warm_store.save("The user prefers green tea").memory
    monkeypatch.undo()
    # Then the line is on disk, so the caller was answered; the index was rebuilt from RAM
    assert broke == [mem.id]
    assert warm_store.recall("green tea").memories[0].memory.id == mem.id
    assert_ram_matches_files(warm_store, data_dir)


def test_later_writes_of_a_batch_read_an_up_to_date_index(
    fresh_store: Callable[..., MemoryStore],
) -> None:
    # Given a batch whose later items read the index (a replayed turn finds its draft there)
    store = fresh_store(ratification=True)
    items: list[dict[str, Any]] = [
        {"text": "The user likes tea"},
        {"text": "The user moved to Lyon", "confidence": "extracted", "turn_id": TURN},
        {"text": "The user moved to Lyon", "confidence": "extracted", "turn_id": TURN},
        {"text": "The user likes tea"},
    ]
    # When it commits
    res = store.save_many(items)
    # Then the draft was found rather than filed twice, the re-save reinforced, and RAM
    # matches the files
    assert [r.created for r in res.results] == [True, True, False, False]
    assert res.results[2].memory.id == res.results[1].memory.id
    assert res.results[3].memory.corroboration == res.results[0].memory.corroboration + 1
    assert_ram_matches_files(store, Path(store.settings.data_dir))


def test_concurrent_saves_keep_the_index_equal_to_the_files(data_dir: Path) -> None:
    # Given eight threads saving, some of them the same texts (reinforcements)
    store = reopen(data_dir)
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            for j in range(25):
                store.save(f"fact {j % 10} told by writer {i % 4}")
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then every batch's index updates landed, as a replay of the file rebuilds them
    assert not errors
    assert len(store.banks.resolve("main").records) == 40
    assert_ram_matches_files(store, data_dir)


# -- the thread ------------------------------------------------------------------------


def run_on_indexer(indexer: Indexer, work: Callable[[], None]) -> Job:
    """Start ``work`` and wait until the indexer thread has run it (not the joining thread)."""
    done = threading.Event()

    def then_signal() -> None:
        try:
            work()
        finally:
            done.set()

    job = indexer.start(then_signal)
    assert done.wait(WAIT_S)
    return job


def test_jobs_run_in_turn_and_their_errors_come_back_at_join() -> None:
    indexer = Indexer()
    ran: list[str] = []
    run_on_indexer(indexer, lambda: ran.append(threading.current_thread().name)).join()
    failing = run_on_indexer(indexer, lambda: 1 / 0 and None)
    with pytest.raises(ZeroDivisionError):
        failing.join()
    run_on_indexer(indexer, lambda: ran.append("again")).join()
    assert ran == ["memory-store-indexer", "again"]
    indexer.close()


def test_an_idle_thread_ends_and_the_next_job_starts_another() -> None:
    # Given an indexer whose thread ends as soon as it has nothing to do
    indexer = Indexer(idle_s=0)
    threads: list[threading.Thread] = []
    for _ in range(3):
        # When jobs come one after another, each joined before the next
        run_on_indexer(indexer, lambda: threads.append(threading.current_thread())).join()
    # Then every one ran on an indexer thread, and close ends whatever thread is left
    assert [t.name for t in threads] == ["memory-store-indexer"] * 3
    indexer.close()
    for t in threads:
        t.join(WAIT_S)
        assert not t.is_alive()


def test_closing_the_store_ends_its_indexer(warm_store: MemoryStore) -> None:
    warm_store.save("one more fact")
    thread = warm_store.commits.indexer._thread
    warm_store.close()
    assert thread is None or not thread.is_alive()


def test_a_job_not_yet_begun_runs_on_the_joining_thread() -> None:
    # Given a job the indexer thread has not picked up (no thread runs it here)
    ran: list[str] = []
    job = Job(lambda: ran.append(threading.current_thread().name))
    # When the leader joins it, it runs the job itself; the indexer's late run does nothing
    job.join()
    job.run()
    assert ran == [threading.current_thread().name]
