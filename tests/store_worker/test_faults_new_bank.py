"""A refused write that made a bank leaves no bank behind (fifth review of faults).

A save, a draft or a rule naming a bank that does not exist yet creates it first (its folder,
``bank.yaml``, ``rules/``), then writes. When that write was refused (a full disk at the
log's append or its sync, a draft or rule file that could not be written), the bank stayed:
listed, and listed again after a restart, though the caller was told nothing was written.
Each case faults the k-th file call of the verb, for every k: a refused call leaves no new
bank (in RAM nor after a reopen); an acknowledged one leaves it, with what was written.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from shared.contract.errors import MemoryServiceError
from store_worker.core import MemoryStore
from tests.store_worker.test_faults_each_call import FailAt

# the file calls faulted in turn (not rmdir: taking a bank back is the step under test)
CALLS = ("write", "fsync", "fdatasync", "replace", "rename", "unlink", "ftruncate", "mkdir")


# verb -> (the call, the banks it creates)
VERBS: dict[str, tuple[Callable[[MemoryStore], Any], tuple[str, ...]]] = {
    "save": (lambda s: s.save("a fact for a new bank", bank="fresh"), ("fresh",)),
    "save_pending": (
        lambda s: s.save("a draft for a new bank", bank="fresh", status="pending"),
        ("fresh",),
    ),
    "save_many": (
        lambda s: s.save_many(
            [{"text": "one fact", "bank": "fresh"}, {"text": "two fact", "bank": "other"}]
        ),
        ("fresh", "other"),
    ),
    "rule_set": (lambda s: s.rule_set("style", "tabs", bank="fresh"), ("fresh",)),
}


def opened(data_dir: Path) -> MemoryStore:
    return MemoryStore(data_dir, clock=FakeClock(), settings=StoreSettings(ratification=True))


def banks(store: MemoryStore) -> set[str]:
    return {b.name for b in store.bank_list().banks}


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_refused_write_leaves_no_new_bank_even_after_a_restart(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, verb: str, code: int
) -> None:
    run, made = VERBS[verb]
    refused = 0
    for k in range(1, 60):
        # Given a store with one bank, fresh for each k
        shutil.rmtree(data_dir, ignore_errors=True)
        store = opened(data_dir)
        store.save("a seed fact")
        # When the k-th file call of a write naming new banks fails
        with monkeypatch.context() as patch:
            fault = FailAt(patch, k, code, CALLS)
            try:
                run(store)
                acked = True
            except MemoryServiceError:
                acked = False
        listed = banks(store)
        store.close()
        again = opened(data_dir)
        after = banks(again)
        empty = {b.name for b in again.bank_list().banks if not b.memories and not b.rules} - {
            "main"
        }
        empty -= {n for n in after if again.drafts(bank=n)}
        leftovers = sorted(p.name for p in data_dir.iterdir() if p.name.startswith(".creating"))
        again.close()
        if not fault.hit:
            assert acked and k > 1
            assert refused, "no call of the verb was refused"
            return
        # Then a refused write shows no new bank, now or after a restart (unless the fault
        # came past its rename, the folder's sync: what it wrote is in place, and shown)
        assert listed == after, f"{verb}: fault at call {k}"
        assert not empty, f"{verb}: fault at call {k} left an empty new bank"
        assert not leftovers
        if not acked:
            refused += after == {"main"}
        else:  # an acknowledged one shows every bank it wrote to
            assert set(made) <= after, f"{verb}: fault at call {k}"
    raise AssertionError("more calls than expected")


def _eio(fd: int) -> None:
    raise OSError(errno.EIO, "EIO")


def test_a_bank_another_write_filled_is_kept(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a new bank made by a write, then a rule written to it
    store = opened(data_dir)
    store.rule_set("style", "tabs", bank="fresh")
    # When a later save to it is refused at the sync, Then the bank and its rule stay
    with monkeypatch.context() as patch:
        patch.setattr(os, "fdatasync", _eio)
        with pytest.raises(MemoryServiceError):
            store.save("a fact", bank="fresh")
    assert "fresh" in banks(store)
    store.close()
    again = opened(data_dir)
    assert again.rule_get("style", bank="fresh").content == "tabs"
    again.close()


def test_a_folder_made_by_hand_is_never_taken_back(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a bank folder made by hand after the store opened (adopted by the next write)
    store = opened(data_dir)
    (data_dir / "hand").mkdir()
    # When the write that adopts it is refused
    with monkeypatch.context() as patch:
        patch.setattr(os, "fdatasync", _eio)
        with pytest.raises(MemoryServiceError):
            store.save("a fact", bank="hand")
    # Then its folder stays: the store did not make it
    assert (data_dir / "hand").is_dir()
    store.close()
