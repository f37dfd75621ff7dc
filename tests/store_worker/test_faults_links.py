"""A bank folder that is a symbolic link (fifth review of durability under faults).

The data dir's lock covers the folders in it, not a folder a link names. A link to another
bank of the same data dir loaded as a second bank over the same log (two RAMs: a slug taken
through one was silently replaced through the other, an acknowledged save lost at the next
open); a link to a bank of another data dir let two stores write one log, each losing the
other's acknowledged saves. Such a folder is not loaded, a write naming it is refused, typed
(nothing written), and doctor names it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import SourceUnavailableError
from store_worker.core import MemoryStore


def texts(store: MemoryStore, bank: str = "main") -> dict[str, str]:
    return {m.id: m.text for m in store.list(bank=bank).memories}


def texts_after_reopen(data_dir: Path, clock: FakeClock) -> dict[str, str]:
    again = MemoryStore(data_dir, clock=clock)
    try:
        return texts(again)
    finally:
        again.close()


def files_problem(store: MemoryStore) -> str:
    check = next(c for c in store.doctor().checks if c.name == "files_readable")
    return check.detail


def test_a_link_to_another_bank_of_the_data_dir_is_not_a_second_bank(
    data_dir: Path, clock: FakeClock
) -> None:
    # Given a bank, and a link to its folder under another bank name
    store = MemoryStore(data_dir, clock=clock)
    store.save("a seed fact", id="seed")
    store.close()
    os.symlink(data_dir / "main", data_dir / "alias")
    log = (data_dir / "main" / "memories.jsonl").read_bytes()
    store = MemoryStore(data_dir, clock=clock)
    try:
        # Then only the bank is listed; a write through the link is refused, writing nothing
        assert [b.name for b in store.bank_list().banks] == ["main"]
        with pytest.raises(SourceUnavailableError, match="link"):
            store.save("alpha fact", id="x", bank="alias")
        assert (data_dir / "main" / "memories.jsonl").read_bytes() == log
        # And a save to the bank itself is kept, across a reopen
        store.save("beta fact", id="x")
        assert "alias" in files_problem(store)
    finally:
        store.close()
    assert texts_after_reopen(data_dir, clock) == {"seed": "a seed fact", "x": "beta fact"}


def test_two_stores_never_write_one_log_through_a_link(tmp_path: Path, clock: FakeClock) -> None:
    # Given two data dirs, the second linking a bank of the first under its own name
    one, two = tmp_path / "one", tmp_path / "two"
    first = MemoryStore(one, clock=clock)
    first.save("a seed fact", id="seed")
    two.mkdir()
    os.symlink(one / "main", two / "team")
    second = MemoryStore(two, clock=clock)
    try:
        # When both stores write, Then the second is refused: only the holder writes
        first.save("from store one", id="y")
        with pytest.raises(SourceUnavailableError, match="link"):
            second.save("from store two", id="y", bank="team")
        assert "team" not in [b.name for b in second.bank_list().banks]
    finally:
        second.close()
        first.close()
    # And every acknowledged save is there after a reopen
    assert texts_after_reopen(one, clock) == {"seed": "a seed fact", "y": "from store one"}
