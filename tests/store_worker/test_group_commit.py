"""Group commit (``storage/commit.py``): concurrent writes share one fsync per
bank; a caller is answered only after the fsync that covers its line; a failed write or a
failed flush leaves RAM exactly as the files say; ``save_many`` is all-or-nothing."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from shared.contract.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    NotFoundError,
    SourceUnavailableError,
)
from shared.contract.models import SaveRequest, SupersedeRequest
from store_worker.core import MemoryStore
from store_worker.storage.log import AppendLog

WRITERS = 8


def reopen(data_dir: Path) -> MemoryStore:
    return MemoryStore(data_dir, clock=FakeClock())


def live_ids(store: MemoryStore, bank: str | None = None) -> set[str]:
    return {m.id for m in store.list(bank=bank, page_size=500).memories}


class HeldFsync:
    """Holds the first log append until ``WRITERS - 1`` other writes are queued behind it,
    so the next batch certainly carries several writes (no sleeping, no timing)."""

    def __init__(self, store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.store = store
        self.calls: list[int] = []
        real = AppendLog.append_many
        held = self

        def append_many(log: AppendLog, lines: list[str], **kw: Any) -> None:
            if not held.calls:
                held.wait_for_queue(WRITERS - 1)
            held.calls.append(len(lines))
            real(log, lines, **kw)

        monkeypatch.setattr(AppendLog, "append_many", append_many)

    def wait_for_queue(self, n: int) -> None:
        cv = self.store.commits._cv
        with cv:
            cv.wait_for(lambda: len(self.store.commits._queue) >= n, timeout=30)


def run_threads(n: int, target: Any) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            target(i)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def notify_on_queue(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Wake ``HeldFsync.wait_for_queue`` whenever a write joins the queue."""
    commits = store.commits
    real = commits._wait

    def wait(ticket: Any) -> None:
        with commits._cv:
            commits._cv.notify_all()
        real(ticket)

    monkeypatch.setattr(commits, "_wait", wait)


def test_concurrent_saves_share_fsyncs_and_all_survive(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an embedded store and eight threads saving at once
    store = reopen(data_dir)
    held = HeldFsync(store, monkeypatch)
    notify_on_queue(store, monkeypatch)
    acked: list[str] = []

    def writer(i: int) -> None:
        for j in range(20):
            acked.append(store.save(f"thread {i} writes fact number {j}").memory.id)

    # When they all save
    errors = run_threads(WRITERS, writer)
    # Then every save was acknowledged, visible at once, and fewer fsyncs than saves were paid
    assert not errors
    assert len(acked) == WRITERS * 20 == len(set(acked))
    assert live_ids(store) == set(acked)
    assert max(held.calls) >= WRITERS - 1  # one batch carried the queued writes together
    assert store.commits.batches < store.commits.writes
    store.close()
    # and replay agrees with what was acknowledged
    assert live_ids(reopen(data_dir)) == set(acked)


def test_ids_stay_unique_within_one_batch(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given eight writers saving different texts that slug to the same id in one batch
    store = reopen(data_dir)
    HeldFsync(store, monkeypatch)
    notify_on_queue(store, monkeypatch)

    def writer(i: int) -> None:
        store.save(f"Deploy window is Friday afternoon {i}", id="deploy-window")

    # When they commit together
    assert not run_threads(WRITERS, writer)
    # Then each got its own id (a suffix), none overwrote another
    ids = live_ids(store)
    assert len(ids) == WRITERS and "deploy-window" in ids
    store.close()
    assert live_ids(reopen(data_dir)) == ids


def test_a_refused_write_in_a_batch_changes_nothing_and_others_land(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = reopen(data_dir)
    first = store.save("the first fact").memory
    HeldFsync(store, monkeypatch)
    notify_on_queue(store, monkeypatch)
    outcomes: dict[int, object] = {}

    def writer(i: int) -> None:
        try:
            if i == 3:
                store.update(first.id, type="project")  # immutable type: refused
            else:
                outcomes[i] = store.save(f"batched fact {i}").memory.id
        except InvalidTypeError as e:
            outcomes[i] = e

    assert not run_threads(WRITERS, writer)
    assert isinstance(outcomes[3], InvalidTypeError)
    saved = {v for k, v in outcomes.items() if k != 3}
    assert live_ids(store) == {first.id, *saved}  # type: ignore[arg-type]
    assert store.get(first.id).memory == first
    store.close()
    assert live_ids(reopen(data_dir)) == {first.id, *saved}  # type: ignore[arg-type]


def test_a_failed_flush_fails_its_batch_and_ram_matches_the_files(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a store with one memory and a disk that fills up
    store = reopen(data_dir)
    kept = store.save("kept before the disk filled").memory
    log = data_dir / "main" / "memories.jsonl"
    before = log.read_bytes()
    cursor = store.events_since(0).cursor

    def full(*_: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    # When several saves are refused
    errors = run_threads(4, lambda i: store.save(f"lost to a full disk {i}"))
    monkeypatch.undo()
    # Then each caller got a retryable typed error, and nothing changed: files, RAM, events
    assert len(errors) == 4 and all(isinstance(e, SourceUnavailableError) for e in errors)
    assert all(e.retryable for e in errors if isinstance(e, SourceUnavailableError))
    assert log.read_bytes() == before
    assert live_ids(store) == {kept.id}
    assert store.recall("disk").memories[0].memory.id == kept.id
    assert store.events_since(0).cursor == cursor
    # and the store writes again once there is room
    assert store.save("written after space came back").created


def test_events_are_emitted_after_the_commit_only(data_dir: Path) -> None:
    store = reopen(data_dir)
    seen: list[tuple[str, bool]] = []

    def on_event(event: Any) -> None:  # the line is on disk when the subscriber hears of it
        text = (data_dir / "main" / "memories.jsonl").read_text()
        seen.append((event.memory.id, event.memory.id in text))

    store.subscribe("probe", on_event)
    mem = store.save("an event after the fsync").memory
    assert seen == [(mem.id, True)]


def test_save_many_commits_all_or_nothing(data_dir: Path) -> None:
    store = reopen(data_dir)
    # Given a batch with one refused item (an unknown type)
    bad = [{"text": "first of a batch"}, {"text": "second", "type": "nonsense"}]
    log = data_dir / "main" / "memories.jsonl"
    with pytest.raises(InvalidTypeError):
        store.save_many(bad)
    # Then nothing of it was written
    assert live_ids(store) == set()
    assert not log.exists() or log.read_bytes() == b""
    # When a good batch goes through, every item is saved, in order, and a re-save reinforces
    res = store.save_many(
        [
            SaveRequest(text="The user likes tea", tags=("drink",)),
            {"text": "The user lives in Lyon", "entities": ["lyon"]},
            {"text": "The user likes tea"},
        ]
    )
    assert [r.created for r in res.results] == [True, True, False]
    assert res.created == 2
    assert res.results[2].memory.corroboration == res.results[0].memory.corroboration + 1
    store.close()
    assert len(live_ids(reopen(data_dir))) == 2


TOKEN = "ghp_" + "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8"  # shaped as a GitHub token


@pytest.mark.parametrize(
    "last",
    [
        {"text": "into a bank no name allows", "bank": "Not A Name"},
        {"text": "into a new bank named like a credential", "bank": TOKEN},
        {"text": "with a status nobody knows", "status": "bogus"},
    ],
    ids=["bank-name", "credential-bank", "status"],
)
def test_a_save_many_refused_for_its_last_item_writes_no_draft_and_no_bank(
    data_dir: Path, dir_bytes: Any, last: dict[str, Any]
) -> None:
    """Items are checked before any is written: a draft's file and a new bank's folder are
    written as the item runs, so an item refused after them would leave them behind."""
    # Given a store reviewing drafts
    store = MemoryStore(data_dir, clock=FakeClock(), settings=StoreSettings(ratification=True))
    store.save("a fact already there")
    before = dir_bytes(data_dir)
    # When a burst of a draft, a save into a new bank and a refused item comes in
    items = [
        {"text": "a draft of the burst", "status": "pending"},
        {"text": "a fact for a bank not made yet", "bank": "fresh"},
        last,
    ]
    with pytest.raises(InvalidArgumentError):
        store.save_many(items)
    # Then nothing of it is anywhere
    assert dir_bytes(data_dir) == before
    assert "fresh" not in store.banks
    assert [m.text for m in store.list(status="pending").memories] == []
    store.close()


@pytest.mark.parametrize(
    "items",
    [
        "not a list",
        [5],
        [{"text": 5}],
        [{"text": "ok", "tags": 5}],
        [{"text": "ok", "unknown_field": 1}],
    ],
)
def test_save_many_refuses_bad_shapes(data_dir: Path, items: Any) -> None:
    store = reopen(data_dir)
    with pytest.raises(InvalidArgumentError):
        store.save_many(items)
    assert live_ids(store) == set()


def test_supersede_many_commits_all_or_nothing_in_one_batch(data_dir: Path) -> None:
    store = reopen(data_dir)
    tea, green, lyon = (
        store.save(t).memory.id
        for t in ("The user likes tea", "The user likes green tea", "The user lives in Lyon")
    )
    old, new = (store.save(t, bank="notes").memory.id for t in ("Draft one", "Draft two"))
    # Given a batch whose last item is refused (its survivor does not exist)
    bad = [{"id": tea, "superseded_by": green}, {"id": lyon, "superseded_by": "no-such-memory"}]
    with pytest.raises(NotFoundError):
        store.supersede_many(bad)
    # Then nothing of it was written: the first item's retirement is gone too
    assert live_ids(store) == {tea, green, lyon}
    # When a good batch goes through: two banks, an item that sees the one before it
    batches, fsyncs = store.commits.batches, store.commits.fsyncs
    res = store.supersede_many(
        [
            SupersedeRequest(id=tea, superseded_by=green, reinforce=True),
            {"id": green, "superseded_by": lyon, "reason": "token ghp_" + "a" * 36},
            {"id": old, "superseded_by": new, "bank": "notes"},
        ]
    )
    # Then each item has its answer, in order, from one batch: one fsync per bank
    got = [(r.memory.id, r.survivor.id, r.bank) for r in res.results]
    assert got == [(tea, green, "main"), (green, lyon, "main"), (old, new, "notes")]
    assert res.results[0].reinforced and not res.results[1].reinforced
    assert res.results[1].redacted == ("github_token",)
    assert (store.commits.batches, store.commits.fsyncs) == (batches + 1, fsyncs + 2)
    store.close()
    again = reopen(data_dir)
    assert live_ids(again) == {lyon} and live_ids(again, "notes") == {new}
    assert again.get(green).memory.superseded_by == lyon


@pytest.mark.parametrize(
    "items",
    [
        "not a list",
        [5],
        [{"id": "a"}],
        [{"id": "a", "superseded_by": "b", "unknown_field": 1}],
        [{"id": "a", "superseded_by": "b"}] * 1001,
    ],
)
def test_supersede_many_refuses_bad_shapes(data_dir: Path, items: Any) -> None:
    store = reopen(data_dir)
    with pytest.raises(InvalidArgumentError):
        store.supersede_many(items)


def test_a_subscriber_that_saves_does_not_deadlock_the_commit(data_dir: Path) -> None:
    # Given an in-process subscriber that writes when it hears of a write
    store = reopen(data_dir)
    heard: list[str] = []

    def echo(event: Any) -> None:
        if event.memory is not None and not event.memory.text.startswith("echo"):
            heard.append(store.save(f"echo of {event.memory.text}").memory.id)

    store.subscribe("echo", echo)
    # When a save commits, the subscriber's own save runs (on its own fsync) and returns
    mem = store.save("the original fact").memory
    # Then both are durable and visible
    assert heard and live_ids(store) == {mem.id, heard[0]}
    store.close()
    assert live_ids(reopen(data_dir)) == {mem.id, heard[0]}
