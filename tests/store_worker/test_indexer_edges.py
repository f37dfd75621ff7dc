"""The deferred index updates' edges (``Bank.settle``, ``storage/indexer.py``), found by
an adversarial review: an update that fails inside a later write's read, lock-free gauge reads
in the middle of a batch, and an indexer thread that cannot start."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from store_worker.core import MemoryStore
from store_worker.storage.bank import Bank
from tests.store_worker.test_indexer import break_first_upsert

REPO = Path(__file__).resolve().parents[2]
TURN = "01HZX3V7K2M4N6P8Q9R0S1T2V3"  # a ULID
WAIT_S = 10


@pytest.fixture
def ratified(tmp_path: Path) -> Iterator[MemoryStore]:
    store = MemoryStore(
        settings=StoreSettings(data_dir=str(tmp_path / "data"), ratification=True),
        clock=FakeClock(),
    )
    store.save("The user keeps notes in plain files")
    yield store
    store.close()


def _until(cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


class Batch:
    """Holds a group commit open (a first ticket that waits), so the writes queued meanwhile
    commit together, in queue order, as the next batch."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.go = threading.Event()
        self.out: dict[str, Any] = {}
        self.threads: list[threading.Thread] = []
        self._spawn("hold", lambda: store.commits.run(lambda: self.go.wait(WAIT_S)))
        _until(lambda: store.commits._leading)

    def _spawn(self, name: str, fn: Callable[[], Any]) -> None:
        def run() -> None:
            try:
                self.out[name] = fn()
            except Exception as e:
                self.out[name] = e

        t = threading.Thread(target=run, name=name)
        self.threads.append(t)
        t.start()

    def queue(self, name: str, fn: Callable[[], Any]) -> None:
        before = len(self.store.commits._queue)
        self._spawn(name, fn)
        _until(lambda: len(self.store.commits._queue) > before)

    def release(self) -> None:
        self.go.set()
        for t in self.threads:
            t.join(WAIT_S)


def _index_problems(store: MemoryStore) -> list[str]:
    (check,) = [c for c in store.doctor().checks if c.name == "index_consistent"]
    return [] if check.ok else [check.detail]


# -- 1. a settle triggered through the ``index`` property loses the batch's updates ---------


def test_in_batch_index_read_that_fails_does_not_lose_an_acknowledged_write(
    ratified: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Write Y is staged (its index update put off); write Z of the same batch reads the
    index (a ratified extracted save looks for its turn's draft, writes._draft_of_turn), which
    runs Y's update through ``Bank.index``. When that update fails, the index is rebuilt from
    the records (``Bank.settle``): Y, acknowledged and on disk, is still recalled."""
    batch = Batch(ratified)
    batch.queue("y", lambda: ratified.save("The deploy window is Friday afternoon").memory.id)
    batch.queue(
        "z",
        lambda: ratified.save("The user moved to Lyon", confidence="extracted", turn_id=TURN),
    )
    broke = break_first_upsert(monkeypatch)
    batch.release()
    monkeypatch.undo()
    y = batch.out["y"]
    assert isinstance(y, str), y  # Y was answered: its line is on disk
    assert broke == [y]
    assert [m.memory.id for m in ratified.recall("deploy window Friday").memories] == [y]
    assert _index_problems(ratified) == []


# -- 2. a lockless reader settles a bank on its own thread, mid-batch -----------------------


def _gauge_reader() -> Any:
    """The actor's metrics, with a stand-in gauge (no Ray cluster needed)."""
    from store_worker.actor import _Metrics

    class Gauge:
        def __init__(self) -> None:
            self.values: list[float] = []

        def set(self, value: float, tags: dict[str, str]) -> None:
            self.values.append(value)

    metrics = _Metrics.__new__(_Metrics)
    metrics.live = Gauge()
    return metrics


def test_lockless_gauge_refresh_does_not_run_index_updates_mid_batch(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The actor refreshes a bank's gauge after every save without the store lock (by
    design), on one of its threads, and its ``__repr__`` reads the banks the same way: such a
    read made while another caller's batch is staged must not run the batch's index updates
    on its own thread. Only the batch's leader or its indexer settles a bank."""
    store.save("The user keeps notes in plain files")
    settled_on: list[str] = []
    real_settle = Bank.settle

    def settle(bank: Bank) -> None:
        if bank._unindexed:
            settled_on.append(threading.current_thread().name)
        real_settle(bank)

    monkeypatch.setattr(Bank, "settle", settle)
    staged = threading.Event()
    go = threading.Event()

    def write() -> None:
        store.save("The deploy window is Friday afternoon")
        staged.set()  # the batch's next write would run now
        go.wait(WAIT_S)

    leader = threading.Thread(target=lambda: store.commits.run(write), name="leader")
    leader.start()
    assert staged.wait(WAIT_S)
    _gauge_reader().refresh_bank(store, "main")  # what the actor does after its own save
    go.set()
    leader.join(WAIT_S)
    assert settled_on and set(settled_on) <= {"leader", "memory-store-indexer"}, settled_on


def test_lockless_gauge_refresh_cannot_drop_a_batchs_index_update(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same read while an index update would fail: the gauge reads the index as it is
    (``Bank.index_as_is``), runs no update, so it cannot fail on another caller's update nor
    take it from the leader; the batch's write is recalled."""
    store.save("The user keeps notes in plain files")
    staged = threading.Event()
    go = threading.Event()
    out: dict[str, Any] = {}

    def write() -> str:
        mem_id = store.save("The deploy window is Friday afternoon").memory.id
        staged.set()
        go.wait(WAIT_S)
        return mem_id

    def lead() -> None:
        out["id"] = store.commits.run(write)

    leader = threading.Thread(target=lead, name="leader")
    leader.start()
    assert staged.wait(WAIT_S)
    broke = break_first_upsert(monkeypatch)
    try:
        _gauge_reader().refresh_bank(store, "main")
    except RuntimeError as e:
        out["gauge"] = e
    monkeypatch.undo()
    go.set()
    leader.join(WAIT_S)
    assert broke == []  # the gauge read ran none of the batch's index updates
    assert _index_problems(store) == []
    assert [m.memory.id for m in store.recall("deploy window Friday").memories] == [out["id"]]
    assert "gauge" not in out, "a metrics read failed on another caller's index update"


# -- 3. the indexer thread failing to start escapes the group commit ------------------------

_THREAD_START_FAILS = """
import os, sys, threading, time
from pathlib import Path
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore

store = MemoryStore(Path(sys.argv[1]), clock=FakeClock())
store.save("The user keeps notes in plain files")
store.commits.indexer.close()
real_start = threading.Thread.start

def start(self):  # what a pids cgroup / RLIMIT_NPROC at its limit does
    if self.name == "memory-store-indexer":
        raise RuntimeError("can't start new thread")
    return real_start(self)

threading.Thread.start = start
go = threading.Event()
out = {}

def run(name, fn):
    try:
        out[name] = fn()
    except Exception as e:
        out[name] = repr(e)

hold = lambda: store.commits.run(lambda: go.wait(10))
threads = [threading.Thread(target=run, args=("hold", hold))]
threads[0].start()
while not store.commits._leading:
    time.sleep(0.001)
for name, text in [("y", "The deploy window is Friday afternoon"), ("z", "The user lives in Lyon")]:
    n = len(store.commits._queue)
    t = threading.Thread(target=run, args=(name, lambda text=text: store.save(text).created))
    threads.append(t)
    t.start()
    while len(store.commits._queue) == n:
        time.sleep(0.001)
go.set()
for t in threads:
    t.join(5)
log = (Path(sys.argv[1]) / "main" / "memories.jsonl").read_text()
import json
print(json.dumps({"y": out.get("y"), "z": out.get("z"),
                  "hung": [t.name for t in threads if t.is_alive()],
                  "in_log": ["Friday" in log, "Lyon" in log],
                  "empty_batches": store.commits.batches > 1000}), flush=True)
os._exit(0)
"""


def test_indexer_thread_that_cannot_start_does_not_wedge_the_batch(tmp_path: Path) -> None:
    """The indexer thread is started between a batch's write and its fdatasync; when no
    thread can be started (RuntimeError "can't start new thread": a pids cgroup or
    RLIMIT_NPROC at its limit) the leader makes the updates itself, every caller is answered
    and no batch spins."""
    proc = subprocess.run(
        [sys.executable, "-c", _THREAD_START_FAILS, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["in_log"] == [True, True]  # both lines were written (and are replayed)
    assert got == {
        "y": True,
        "z": True,
        "hung": [],
        "in_log": [True, True],
        "empty_batches": False,
    }, got
