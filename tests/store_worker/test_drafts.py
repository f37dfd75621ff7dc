"""Ratification: pending drafts live apart from the append-only log (``storage/drafts.py``)."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from shared.contract import errors
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore
from store_worker.storage.drafts import draft_files


@pytest.fixture
def fresh_store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "data", clock=FakeClock())


@pytest.fixture
def ratifying_store(fresh_store: MemoryStore) -> MemoryStore:
    fresh_store.configure({"ratification": True})
    return fresh_store


def _log_lines(store: MemoryStore, bank: str = "main") -> list[dict[str, object]]:
    path = store.root / bank / "memories.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# -- ratification off ----------------------------------------------------------------------


def test_without_ratification_nothing_is_ever_pending(fresh_store: MemoryStore) -> None:
    auto = fresh_store.save("The user may like chess", confidence="extracted")
    inferred = fresh_store.save("The user may like go", confidence="inferred")
    assert (auto.memory.status, inferred.memory.status) == ("canonical", "canonical")
    assert draft_files(fresh_store.root / "main") == []
    with pytest.raises(errors.RatificationUnsupportedError):
        fresh_store.save("Asked for a draft", status="pending")


@pytest.mark.parametrize("verb", ["approve", "reject"])
def test_approve_and_reject_are_unsupported_without_ratification(
    fresh_store: MemoryStore, verb: str
) -> None:
    saved = fresh_store.save("The user likes rain")
    before = _files(fresh_store.root)
    with pytest.raises(errors.RatificationUnsupportedError):
        getattr(fresh_store, verb)(saved.memory.id)
    assert _files(fresh_store.root) == before


# -- drafts --------------------------------------------------------------------------------


def test_automatic_write_lands_as_a_draft_outside_the_log(ratifying_store: MemoryStore) -> None:
    # Given one explicit and one automatic write
    explicit = ratifying_store.save("The user lives in Porto")
    draft = ratifying_store.save("The user may move to Lisbon", confidence="extracted")
    # Then the explicit one is canonical in the log, the automatic one a draft file only
    assert explicit.memory.status == "canonical"
    assert draft.memory.status == "pending"
    assert [line["id"] for line in _log_lines(ratifying_store)] == [explicit.memory.id]
    files = draft_files(ratifying_store.root / "main")
    assert [f.stem for f in files] == [draft.memory.id]


def test_drafts_are_listable_and_gettable_but_not_recalled_by_default(
    ratifying_store: MemoryStore,
) -> None:
    draft = ratifying_store.save("Lisbon move draft", status="pending")
    assert ratifying_store.get(draft.memory.id).memory.status == "pending"
    listed = ratifying_store.list(status="pending").memories
    assert [m.id for m in listed] == [draft.memory.id]
    assert ratifying_store.recall("Lisbon move").memories == ()
    found = ratifying_store.recall("Lisbon move", include_pending=True).memories
    assert [h.memory.id for h in found] == [draft.memory.id]


def test_reject_discards_a_draft_entirely(ratifying_store: MemoryStore) -> None:
    # Given a canonical record and a draft
    ratifying_store.save("The user owns a bike")
    draft = ratifying_store.save("The user may buy a car", confidence="extracted")
    log_before = (ratifying_store.root / "main" / "memories.jsonl").read_bytes()
    cursor = ratifying_store.events.cursor
    # When the draft is rejected
    done = ratifying_store.reject(draft.memory.id)
    # Then no file, no RAM record, no tombstone: the log is byte-identical
    assert done.deleted is True
    assert draft_files(ratifying_store.root / "main") == []
    assert (ratifying_store.root / "main" / "memories.jsonl").read_bytes() == log_before
    with pytest.raises(errors.NotFoundError):
        ratifying_store.get(draft.memory.id)
    assert ratifying_store.recall("car", include_pending=True).memories == ()
    event = ratifying_store.events_since(cursor).events[-1]
    assert (event.event_type, event.reason) == ("deleted", "rejected")
    # and it stays gone after a reload
    ratifying_store.reload()
    with pytest.raises(errors.NotFoundError):
        ratifying_store.get(draft.memory.id)


def test_approve_moves_a_draft_into_the_log_as_canonical(ratifying_store: MemoryStore) -> None:
    draft = ratifying_store.save("The user adopted a cat", confidence="extracted")
    approved = ratifying_store.approve(draft.memory.id)
    assert approved.memory.status == "canonical"
    assert approved.memory.revision == draft.memory.revision + 1
    assert draft_files(ratifying_store.root / "main") == []
    assert [
        (line["id"], line.get("status", "canonical")) for line in _log_lines(ratifying_store)
    ] == [(draft.memory.id, "canonical")]
    assert [h.memory.id for h in ratifying_store.recall("cat").memories] == [draft.memory.id]
    ratifying_store.reload()
    assert ratifying_store.get(draft.memory.id).memory.status == "canonical"


def test_drafts_survive_a_reload_and_keep_their_ids(ratifying_store: MemoryStore) -> None:
    draft = ratifying_store.save("Garden draft", id="garden", status="pending")
    ratifying_store.reload()
    assert ratifying_store.get("garden").memory == draft.memory
    clash = ratifying_store.save("Garden canonical", id="garden")
    assert clash.memory.id == "garden-2"  # a draft's id is taken, never overwritten


def test_a_crash_between_approve_and_unlink_heals_at_load(ratifying_store: MemoryStore) -> None:
    draft = ratifying_store.save("The user runs marathons", confidence="extracted")
    [path] = draft_files(ratifying_store.root / "main")
    saved = path.read_bytes()
    ratifying_store.approve(draft.memory.id)
    path.write_bytes(saved)  # as if the process died before removing the draft file
    ratifying_store.reload()
    assert ratifying_store.get(draft.memory.id).memory.status == "canonical"
    assert draft_files(ratifying_store.root / "main") == []


def test_an_unreadable_draft_is_skipped(ratifying_store: MemoryStore) -> None:
    ratifying_store.save("A good draft", id="good", status="pending")
    folder = ratifying_store.root / "main" / "drafts"
    (folder / "bad.json").write_text("{not json")
    (folder / "mismatch.json").write_text((folder / "good.json").read_text())
    ratifying_store.reload()
    assert [m.id for m in ratifying_store.drafts()] == ["good"]


def test_update_rewrites_the_draft_and_delete_discards_it(ratifying_store: MemoryStore) -> None:
    draft = ratifying_store.save("The user likes tea", id="tea", status="pending")
    log_before = _log_lines(ratifying_store)
    edited = ratifying_store.update("tea", text="The user likes green tea")
    assert edited.memory.status == "pending"
    assert json.loads((ratifying_store.root / "main/drafts/tea.json").read_text())["text"] == (
        "The user likes green tea"
    )
    ratifying_store.delete("tea")
    assert draft_files(ratifying_store.root / "main") == []
    assert _log_lines(ratifying_store) == log_before == []
    assert draft.memory.id == "tea"


def test_supersede_refuses_drafts(ratifying_store: MemoryStore) -> None:
    canon = ratifying_store.save("The user drinks coffee")
    draft = ratifying_store.save("The user drinks espresso", status="pending")
    with pytest.raises(errors.ConflictError):
        ratifying_store.supersede(draft.memory.id, canon.memory.id)
    with pytest.raises(errors.ConflictError):
        ratifying_store.supersede(canon.memory.id, draft.memory.id)


def test_ratifying_a_canonical_or_unknown_id_is_an_error(ratifying_store: MemoryStore) -> None:
    canon = ratifying_store.save("The user is left-handed")
    with pytest.raises(errors.ConflictError):
        ratifying_store.approve(canon.memory.id)
    with pytest.raises(errors.ConflictError):
        ratifying_store.reject(canon.memory.id)
    with pytest.raises(errors.NotFoundError):
        ratifying_store.approve("no-such-draft")
    with pytest.raises(errors.InvalidArgumentError):
        ratifying_store.reject("Bad Id")
    with pytest.raises(errors.InvalidArgumentError):
        ratifying_store.save("x", status="maybe")


def test_the_log_never_holds_a_pending_line(ratifying_store: MemoryStore) -> None:
    for n in range(4):
        d = ratifying_store.save(f"Draft number {n} about kites", confidence="extracted")
        ratifying_store.update(d.memory.id, tags=["kites"])
        if n % 2:
            ratifying_store.approve(d.memory.id)
        else:
            ratifying_store.reject(d.memory.id)
    assert all(
        line.get("status", "canonical") == "canonical" for line in _log_lines(ratifying_store)
    )
    assert ratifying_store.doctor().ok


def test_ratification_cannot_go_off_while_drafts_wait(
    ratifying_store: MemoryStore, tmp_path: Path
) -> None:
    # Given a draft waiting for review
    draft = ratifying_store.save("The user may move to Porto", status="pending").memory
    before = _files(ratifying_store.root)
    # When ratification is turned off, then the change is refused, naming the drafts
    with pytest.raises(errors.DraftsWaitingError, match=r"1 pending draft\(s\).*'main'"):
        ratifying_store.configure({"ratification": False})
    assert ratifying_store.settings.ratification is True
    assert _files(ratifying_store.root) == before
    # And once the draft is resolved it goes off
    ratifying_store.reject(draft.id)
    ratifying_store.configure({"ratification": False})
    assert ratifying_store.settings.ratification is False


def test_an_approve_the_disk_refuses_leaves_the_draft_pending(
    ratifying_store: MemoryStore, failing_fs: Any
) -> None:
    """The draft file goes only once the approved line is durable: a full disk refuses the
    approve and the draft stays pending, in RAM, on disk and after a reload."""
    draft = ratifying_store.save("The user runs marathons", confidence="extracted").memory
    folder = ratifying_store.root / "main"
    fs = failing_fs(ratifying_store.root, errno.ENOSPC)
    with pytest.raises(errors.SourceUnavailableError):
        ratifying_store.approve(draft.id)
    fs.stop()
    assert len(draft_files(folder)) == 1
    assert ratifying_store.get(draft.id).memory.status == "pending"
    ratifying_store.reload()
    assert ratifying_store.get(draft.id).memory.status == "pending"
    assert ratifying_store.approve(draft.id).memory.status == "canonical"
    assert draft_files(folder) == []
