"""A pending draft under faults (fifth review of durability under faults).

A draft is an acknowledged write kept in its own file (``drafts/<id>.json``). One that could
not be read when the store opened (an I/O error, a hand edit fixed since) was not in RAM, so
its id was free: the next save with that slug took it, and at the next open the draft, its
id now in the log, was taken for one whose approval had crashed before its file went, and
deleted. Its id stays its own now, and a draft is removed only for its own approved record.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from store_worker.core import MemoryStore

RATIFY = StoreSettings(ratification=True)


def opened(data_dir: Path, clock: FakeClock) -> MemoryStore:
    return MemoryStore(data_dir, clock=clock, settings=RATIFY)


def test_a_draft_unread_at_open_keeps_its_id_and_is_never_deleted(
    data_dir: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a pending draft
    store = opened(data_dir, clock)
    store.save("deploys on fridays are banned", id="fridays", status="pending")
    store.close()
    draft = data_dir / "main" / "drafts" / "fridays.json"
    # And a store that could not read its file when it opened (EIO)
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == draft:
            raise OSError(errno.EIO, "Input/output error")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    store = opened(data_dir, clock)
    monkeypatch.setattr(Path, "read_bytes", real)
    try:
        # When a memory is saved with the draft's slug, Then it gets another id
        saved = store.save("an unrelated fact", id="fridays").memory
        assert saved.id != "fridays"
    finally:
        store.close()
    # And at the next open the draft is pending, whole, and can be approved
    again = opened(data_dir, clock)
    try:
        assert [m.id for m in again.drafts()] == ["fridays"]
        assert again.approve("fridays").memory.text == "deploys on fridays are banned"
        assert again.get(saved.id).memory.text == "an unrelated fact"
    finally:
        again.close()


def test_a_draft_is_removed_at_open_only_for_its_own_approval(
    data_dir: Path, clock: FakeClock
) -> None:
    # Given a draft file whose id a logged memory of another creation holds (a restore)
    store = opened(data_dir, clock)
    store.save("the old draft's text", id="dup", status="pending")
    store.close()
    draft = data_dir / "main" / "drafts" / "dup.json"
    kept = draft.read_bytes()
    draft.unlink()
    store = opened(data_dir, clock)
    store.save("a logged fact", id="dup")
    store.close()
    draft.write_bytes(kept)
    # When the store opens, Then the draft file is kept (not taken for an approved one)
    again = opened(data_dir, clock)
    try:
        assert again.get("dup").memory.text == "a logged fact"
    finally:
        again.close()
    assert draft.read_bytes() == kept
    # While a draft whose approval crashed before its file went is removed
    store = opened(data_dir, clock)
    store.save("to approve", id="ok", status="pending")
    pending = (data_dir / "main" / "drafts" / "ok.json").read_bytes()
    store.approve("ok")
    store.close()
    (data_dir / "main" / "drafts" / "ok.json").write_bytes(pending)
    again = opened(data_dir, clock)
    try:
        assert again.get("ok").memory.status == "canonical" and not again.drafts()
    finally:
        again.close()
    assert not (data_dir / "main" / "drafts" / "ok.json").exists()
