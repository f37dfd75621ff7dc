"""Fault suite: the memory log under faults the write path does not name (session 7 review).

- a log replaced or removed by hand while the store runs (an editor's save-by-rename): the
  next acknowledged write must land in the file the path names, not in the old inode;
- a refused append whose cut-back also fails (a failed ``fdatasync`` then an ``ftruncate``
  on a file system gone read-only): the lines past the cut were acknowledged to nobody and
  may live only in the page cache (fsyncgate), so nothing reads them and nothing is appended
  after them until they are cut; that mark measures one file: a log put in its place since (a
  restore) is read, appended to and rewritten whole;
- a fault between the write and the sync that is not an ``OSError`` (the indexer's start):
  the lines are cut back, the caller gets a typed error, nobody waits forever;
- a bank that cannot be read back after a failed flush: its calls fail typed, never
  ``not_found``, and it is loaded again at its next use;
- a reload refused half way (a bank it cannot read, a part that refuses its state): the store
  goes on with one set of parts, and its group commit writes through the same banks as they.
"""

from __future__ import annotations

import errno
import itertools
import os
import threading
from pathlib import Path

import pytest

from shared.client.shards import STATE_KEY, STATE_OWNER
from shared.contract.clock import FakeClock
from shared.contract.errors import InvalidArgumentError, NotFoundError, SourceUnavailableError
from shared.contract.models import Memory
from shared.redact import Redaction
from store_worker.core import MemoryStore
from store_worker.storage import files, writes
from store_worker.storage import log as applog
from store_worker.storage.bank import Bank
from store_worker.storage.indexer import Indexer


def reopen(data_dir: Path) -> MemoryStore:
    return MemoryStore(data_dir, clock=FakeClock())


def texts(store: MemoryStore, bank: str | None = None) -> set[str]:
    return {m.text for m in store.list(bank=bank, page_size=500).memories}


def log_of(data_dir: Path, bank: str = "main") -> Path:
    return data_dir / bank / files.MEMORIES


def fail(code: int) -> object:
    def failing(*_: object) -> None:
        raise OSError(code, os.strerror(code))

    return failing


def refuse_an_uncut_append(store: MemoryStore) -> None:
    """A save refused by a failed sync whose cut-back the file system refuses too (remounted
    read-only): its line stays in the file, past the log's mark (``good_size``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(applog, "_datasync", fail(errno.EIO))
        patch.setattr(os, "ftruncate", fail(errno.EROFS))
        with pytest.raises(SourceUnavailableError):
            store.save("refused: its sync failed")


def one_acknowledged(
    data_dir: Path, text: str = "acknowledged before the disk failed"
) -> tuple[MemoryStore, Memory, bytes]:
    """A running store with one acknowledged memory in ``main``, and its log's bytes then."""
    store = reopen(data_dir)
    kept = store.save(text).memory
    return store, kept, log_of(data_dir).read_bytes()


def save_by_hand(log: Path, data: bytes) -> None:
    """Replace the log as an editor or a restore does: a new file renamed over it."""
    copy = log.with_name("edited.jsonl")
    copy.write_bytes(data)
    os.replace(copy, log)


@pytest.mark.parametrize("edit", ["replaced", "removed"])
def test_a_log_replaced_by_hand_while_running_gets_the_next_write(
    data_dir: Path, edit: str
) -> None:
    # Given a running store whose log an editor saves over (write a copy, rename it in)
    store = reopen(data_dir)
    first = store.save("the user keeps the lanterns in the shed").memory
    log = log_of(data_dir)
    if edit == "replaced":
        save_by_hand(log, log.read_bytes())
    else:
        log.unlink()
    # When the store acknowledges another write
    second = store.save("the user waters the ferns on sundays").memory
    store.close()
    # Then that write is in the file the path names, and survives a reopen
    assert second.id in log.read_text()
    again = reopen(data_dir)
    expected = {first.text, second.text} if edit == "replaced" else {second.text}
    assert texts(again) == expected
    again.close()


def test_a_line_appended_by_hand_without_a_newline_while_running_is_not_glued_to(
    data_dir: Path,
) -> None:
    # Given a running store, and a hand edit that appends a line without its final newline
    store = reopen(data_dir)
    store.save("the user prefers green tea")
    hand = store.get(store.list().memories[0].id).memory.model_copy(
        update={"id": "by-hand", "revision": 1}
    )
    with open(log_of(data_dir), "ab") as fh:
        fh.write(hand.to_line().encode())
    # When the store appends its next line
    store.save("the user drinks it without sugar")
    store.close()
    # Then both lines replay: the store started its own on a fresh line
    again = reopen(data_dir)
    assert {m.id for m in again.list(page_size=50).memories} >= {"by-hand"}
    assert len(again.list(page_size=50).memories) == 3
    assert again.reload().corrupt_lines == 0
    again.close()


def test_a_refused_append_that_cannot_be_cut_back_is_never_read_nor_built_on(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a store with one acknowledged memory
    store, kept, before = one_acknowledged(data_dir)
    log = log_of(data_dir)
    # When the sync fails and the file system refuses the cut-back too (remounted read-only)
    refuse_an_uncut_append(store)
    # Then the refused line, still in the file, is not in RAM
    assert log.read_bytes() != before  # the cut could not be made
    assert texts(store) == {kept.text}
    assert all(r.memory.id == kept.id for r in store.recall("refused sync").memories)
    # and while the cut still cannot be made, nothing is appended after it
    monkeypatch.setattr(os, "ftruncate", fail(errno.EROFS))
    with pytest.raises(SourceUnavailableError):
        store.save("refused: the failed lines are still there")
    # When the disk recovers, the next write cuts them first
    monkeypatch.undo()
    after = store.save("acknowledged after the disk recovered").memory
    assert texts(store) == {kept.text, after.text}
    assert log.read_bytes().startswith(before)
    assert b"refused" not in log.read_bytes()
    store.close()
    assert texts(reopen(data_dir)) == {kept.text, after.text}


def test_a_failed_cut_back_is_remembered_across_a_reload(data_dir: Path) -> None:
    # Given a refused append that could not be cut back
    store, kept, _ = one_acknowledged(data_dir)
    refuse_an_uncut_append(store)
    # When the store is reloaded (reading every bank from its files again)
    store.reload()
    # Then the refused line is still not read
    assert texts(store) == {kept.text}
    store.close()


def test_a_fault_between_write_and_sync_cuts_the_lines_back(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a store whose indexer cannot be started (a fault that is not an OSError)
    store, kept, before = one_acknowledged(data_dir, "acknowledged before the fault")
    log = log_of(data_dir)

    def broken(self: Indexer, work: object) -> object:
        raise ValueError("no indexer")

    monkeypatch.setattr(Indexer, "start", broken)
    # When a write reaches the point between its write and its sync
    with pytest.raises(SourceUnavailableError):
        store.save("refused between write and sync")
    # Then its lines are cut back and RAM matches the files
    assert log.read_bytes() == before
    assert texts(store) == {kept.text}
    monkeypatch.undo()
    assert store.save("written once the fault is gone").created
    store.close()


def test_a_bank_that_cannot_be_read_back_is_loaded_at_its_next_use(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a memory acknowledged in a second bank
    store = reopen(data_dir)
    kept = store.save("the garden gate sticks in winter", bank="home").memory
    real_load = Bank.load

    def unreadable(self: Bank) -> None:
        raise OSError(errno.EIO, "Input/output error")

    # When a flush fails and reading the bank back fails too
    monkeypatch.setattr(applog, "_datasync", fail(errno.EIO))
    monkeypatch.setattr(Bank, "load", unreadable)
    with pytest.raises(SourceUnavailableError):
        store.save("refused: its sync failed", bank="home")
    monkeypatch.setattr(applog, "_datasync", os.fsync)
    # Then, while it still cannot be read, its calls fail typed (not "no such bank")
    with pytest.raises(SourceUnavailableError):
        store.get(kept.id, bank="home")
    # and once it can, the next call loads it and answers from the files
    monkeypatch.setattr(Bank, "load", real_load)
    assert store.get(kept.id, bank="home").memory == kept
    assert texts(store, "home") == {kept.text}
    store.close()


def _fail_sync_in(bank: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = applog._datasync

    def sync(fd: int) -> None:
        if f"/{bank}/" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(applog, "_datasync", sync)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors via /proc")
def test_save_many_over_two_banks_is_all_or_nothing_when_one_bank_fails(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two banks, the second on a disk that is full
    store = reopen(data_dir)
    a = store.save("seed of alpha", bank="alpha").memory
    b = store.save("seed of beta", bank="beta").memory
    before = {name: log_of(data_dir, name).read_bytes() for name in ("alpha", "beta")}
    _fail_sync_in("beta", monkeypatch)
    # When one save_many writes into both
    with pytest.raises(SourceUnavailableError):
        store.save_many(
            [
                {"text": "one item for alpha", "bank": "alpha"},
                {"text": "one item for beta", "bank": "beta"},
            ]
        )
    monkeypatch.undo()
    # Then nothing of it is anywhere: not in alpha's file (flushed first), not in RAM
    assert {name: log_of(data_dir, name).read_bytes() for name in before} == before
    assert texts(store, "alpha") == {a.text}
    assert texts(store, "beta") == {b.text}
    store.close()
    again = reopen(data_dir)
    assert texts(again, "alpha") == {a.text}
    again.close()


def test_eight_writers_under_failing_syncs_and_cuts_leave_exactly_what_was_acknowledged(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a disk where every 4th sync fails with EIO and every 5th cut-back is refused
    store = reopen(data_dir)
    real_sync, real_cut = applog._datasync, os.ftruncate
    calls = itertools.count()
    guard = threading.Lock()

    def nth() -> int:
        with guard:
            return next(calls)

    def sync(fd: int) -> None:
        if nth() % 4 == 3:
            raise OSError(errno.EIO, "Input/output error")
        real_sync(fd)

    def cut(fd: int, size: int) -> None:
        if nth() % 5 == 0:
            raise OSError(errno.EROFS, "Read-only file system")
        real_cut(fd, size)

    monkeypatch.setattr(applog, "_datasync", sync)
    monkeypatch.setattr(os, "ftruncate", cut)
    acked: set[str] = set()

    def writer(i: int) -> None:
        for j in range(12):
            try:
                if j % 3 == 0:  # all-or-nothing over two banks
                    done = store.save_many(
                        [
                            {"text": f"writer {i} burst {j} for alpha", "bank": "alpha"},
                            {"text": f"writer {i} burst {j} for beta", "bank": "beta"},
                        ]
                    )
                    acked.update(r.memory.text for r in done.results)
                else:
                    bank = "alpha" if j % 2 else "beta"
                    acked.add(store.save(f"writer {i} fact {j} in {bank}", bank=bank).memory.text)
            except SourceUnavailableError:
                pass

    # When eight writers save at once
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monkeypatch.undo()
    # Then RAM holds exactly the acknowledged writes, and so do the files after a reopen
    assert texts(store, "alpha") | texts(store, "beta") == acked
    store.save("a write once the disk is well", bank="alpha")  # cuts what is left over
    store.save("a write once the disk is well", bank="beta")
    store.close()
    again = reopen(data_dir)
    on_disk = texts(again, "alpha") | texts(again, "beta")
    assert on_disk - {"a write once the disk is well"} == acked
    again.close()


def test_a_purge_rewrite_after_an_uncut_refused_append_loses_nothing(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a memory stored with a secret the catalogue of its day missed (redaction off)
    store = reopen(data_dir)
    kept = store.save("acknowledged before everything").memory
    monkeypatch.setattr(writes, "redact", lambda text: Redaction(text, ()))
    monkeypatch.setattr(writes, "redact_many", lambda texts: [Redaction(t, ()) for t in texts])
    leaked = store.save("the wifi password is hunter22").memory
    monkeypatch.undo()
    # And a refused append that could not be cut back (its mark hides the bytes past it)
    refuse_an_uncut_append(store)
    # When the log is rewritten with the secret redacted: a longer line than the secret's
    report = store.redact_rescan(purge=True)
    assert report.banks and store.get(leaked.id).memory.text.endswith("[REDACTED:password]")
    # Then the rewritten log is read whole, and the next save cuts nothing of it
    after = store.save("acknowledged after the rewrite").memory
    want = {kept.text, store.get(leaked.id).memory.text, after.text}
    assert texts(store) == want
    store.close()
    again = reopen(data_dir)
    assert texts(again) == want and again.reload().corrupt_lines == 0
    again.close()


@pytest.mark.parametrize("then", ["save", "reload", "purge"])
def test_a_log_replaced_after_an_uncut_refused_append_is_read_and_kept_whole(
    data_dir: Path, then: str
) -> None:
    # Given a refused append that could not be cut back (its mark hides the bytes past it)
    store, kept, backup = one_acknowledged(data_dir)
    log = log_of(data_dir)
    refuse_an_uncut_append(store)
    # When the log is replaced by hand with a longer one (a restore holding more lines)
    restored = [
        kept.model_copy(update={"id": f"restored-{i}", "text": f"restored fact {i}"})
        for i in range(4)
    ]
    save_by_hand(log, backup + b"".join(m.to_line().encode() + b"\n" for m in restored))
    if then == "save":
        store.save("acknowledged after the restore")
    elif then == "reload":
        store.reload()
    else:
        store.purge(kept.id)
    # Then the mark measured the old file only: every restored line is read and kept
    want = {m.text for m in restored}
    store.reload()  # a hand edit reaches RAM at reload (the files are the truth)
    assert want <= texts(store)
    store.close()
    assert want <= texts(reopen(data_dir))


def test_a_reload_that_cannot_read_a_bank_leaves_writes_all_or_nothing(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a reload refused because one bank cannot be read (an I/O error)
    store = reopen(data_dir)
    one = store.save("the first fact about the roof").memory
    two = store.save("the second fact about the gutters").memory
    store.save("a fact in another bank", bank="other")
    real_load = Bank.load

    def load(self: Bank) -> None:
        if self.name == "other":
            raise OSError(errno.EIO, "Input/output error")
        real_load(self)

    monkeypatch.setattr(Bank, "load", load)
    with pytest.raises(SourceUnavailableError):
        store.reload()
    monkeypatch.undo()
    before = log_of(data_dir).read_bytes()
    # When an all-or-nothing write is refused for its second item
    with pytest.raises(NotFoundError):
        store.supersede_many(
            [
                {"id": one.id, "superseded_by": two.id},
                {"id": "no-such-memory", "superseded_by": two.id},
            ]
        )
    # Then nothing of it was written, nor kept in RAM
    assert log_of(data_dir).read_bytes() == before
    assert store.get(one.id).memory == one
    store.close()


def test_a_reload_refused_by_a_part_keeps_the_store_as_it_was(data_dir: Path) -> None:
    # Given a store with two banks, and its shard routing state edited by hand into nonsense
    store = reopen(data_dir)
    kept = store.save("a fact in the other bank", bank="other").memory
    store.save("a fact in the main bank")
    routing = data_dir / ".state" / STATE_OWNER / f"{STATE_KEY}.json"
    routing.parent.mkdir(parents=True, exist_ok=True)
    routing.write_text('{"version": 1, "slots": [0, 1]}')
    # When a reload is refused for it
    with pytest.raises(InvalidArgumentError):
        store.reload()
    # Then the store goes on as before the reload: every bank listed, read and written
    assert sorted(b.name for b in store.bank_list().banks) == ["main", "other"]
    assert store.get(kept.id, bank="other").memory == kept
    store.save("written after the refused reload", bank="other")
    assert len(texts(store, "other")) == 2
    store.close()
