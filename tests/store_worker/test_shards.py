"""A store as one shard of several (``storage/shards.py``): a frozen bank is never written.

While a bank's slot moves to another shard its owner reads it but refuses every write, so the
copy the move takes is the bank: a write accepted after the copy would be lost with the old
folder (an acknowledged draft gone, a purged secret back on the new shard).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.client.shards import Routing, slot_of
from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from shared.contract.errors import SourceUnavailableError
from store_worker.core import MemoryStore

SNAPSHOT = Callable[[Path], dict[str, bytes | None]]

VERBS: dict[str, Callable[[MemoryStore], Any]] = {
    "save": lambda s: s.save("a new canonical fact"),
    "save_pending": lambda s: s.save("a new draft", status="pending"),
    "save_many": lambda s: s.save_many([{"text": "one more fact"}]),
    "update": lambda s: s.update("fact", text="the fact, edited"),
    "update_draft": lambda s: s.update("draft", text="the draft, edited"),
    "delete_draft": lambda s: s.delete("draft"),
    "approve": lambda s: s.approve("draft"),
    "reject": lambda s: s.reject("draft"),
    "purge": lambda s: s.purge("fact"),
    "purge_draft": lambda s: s.purge("draft"),
    "rescan": lambda s: s.redact_rescan(bank="main"),
    "rescan_purge": lambda s: s.redact_rescan(purge=True),
    "rule_set": lambda s: s.rule_set("style", "tabs"),
    "bank_describe": lambda s: s.bank_create("main", "a new description"),
}


@pytest.fixture
def frozen(data_dir: Path) -> Iterator[MemoryStore]:
    """A store whose bank ``main`` holds a fact, a draft and a secret, its slot mid-move."""
    store = MemoryStore(
        settings=StoreSettings(data_dir=str(data_dir), ratification=True), clock=FakeClock()
    )
    store.save("the fact", id="fact")
    store.save("the draft", id="draft", status="pending")
    store.rule_set("style", "spaces")
    # a secret today's catalogue finds in the log (written as if redaction had missed it)
    leaked = store.get("fact").memory.model_copy(
        update={"id": "leak", "text": "the wifi password is hunter22", "revision": 1}
    )
    with open(data_dir / "main" / "memories.jsonl", "ab") as fh:
        fh.write(leaked.to_line().encode() + b"\n")
    store.reload()
    store.shard_routing(Routing().start_move(slot_of("main"), 1).dump())
    yield store
    store.close()


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_frozen_bank_refuses_every_write_and_changes_nothing(
    frozen: MemoryStore, data_dir: Path, dir_bytes: SNAPSHOT, verb: str
) -> None:
    # Given a bank whose slot is being moved to another shard
    before = dir_bytes(data_dir)
    records = dict(frozen.banks["main"].records)
    # When a write reaches it, Then it is refused, retryably, and nothing changed
    with pytest.raises(SourceUnavailableError, match=r"\[moving\]") as refused:
        VERBS[verb](frozen)
    assert refused.value.retryable
    assert dir_bytes(data_dir) == before
    assert frozen.banks["main"].records == records
