"""One consolidation pass over an embedded store: writes, checkpoint, errors, crash, overlap."""

from __future__ import annotations

import pickle
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from consolidate_worker.core import LAST_RUN_KEY, OWNER, Consolidator
from consolidate_worker.report import Report
from consolidate_worker.settings import ConsolidatorSettings
from shared.contract.clock import FakeClock
from shared.contract.errors import ConflictError
from store_worker.core import MemoryStore

TOPICS = ("dark mode", "vim keybindings", "large fonts", "soft wraps", "tab indentation", "rulers")


def seed_pairs(store: MemoryStore, bank: str = "main") -> list[tuple[str, str]]:
    """Six near-duplicate pairs; the second of each is newer, so it survives."""
    out = []
    for topic in TOPICS:
        old = store.save(f"The user prefers {topic} in the editor", bank=bank).memory
        new = store.save(f"The user prefers {topic} in their editor", bank=bank).memory
        out.append((old.id, new.id))
    store.save("The team standup happens in the small meeting room", bank=bank)
    return out


def live_ids(store: MemoryStore, bank: str = "main") -> set[str]:
    return {m.id for m in store.list(bank=bank, page_size=500).memories}


def test_a_pass_supersedes_into_the_newest_with_reinforce(store: MemoryStore) -> None:
    # Given six duplicate pairs
    pairs = seed_pairs(store)
    cursor = store.events.cursor
    # When a pass runs
    report = Consolidator(store).run_pass()
    # Then each older one is retired into the newer, which absorbed its observation
    assert sorted((c.id, c.survivor) for c in report.merged) == sorted(pairs)
    for old, new in pairs:
        assert store.get(old).memory.superseded_by == new
        assert store.get(new).memory.corroboration == 1
    events = store.events_since(cursor).events
    kinds = sorted({(e.event_type, e.reason is not None) for e in events})
    assert kinds == [("superseded", True), ("updated", True)]
    assert report.ok and report.scanned == 13 and len(report.groups) == 6


def test_a_second_pass_finds_nothing(store: MemoryStore) -> None:
    seed_pairs(store)
    consolidator = Consolidator(store)
    consolidator.run_pass()
    again = consolidator.run_pass()
    assert again.groups == () and again.merged == ()


def test_dry_run_writes_nothing_and_keeps_the_checkpoint(
    store: MemoryStore, data_dir: Path
) -> None:
    # Given duplicates on disk
    seed_pairs(store)
    log = data_dir / "main" / "memories.jsonl"
    before = log.read_bytes()
    # When a dry run plans a pass
    report = Consolidator(store).run_pass(dry_run=True)
    # Then it reports the plan and nothing moved: no line, no checkpoint, no event
    assert len(report.groups) == 6 and report.merged == ()
    assert log.read_bytes() == before
    assert store.state_get(OWNER, LAST_RUN_KEY) is None


def test_the_checkpoint_moves_only_after_a_clean_full_pass(
    store: MemoryStore, clock: FakeClock
) -> None:
    seed_pairs(store)
    consolidator = Consolidator(store, clock=clock)
    # A single-bank pass is not "the" pass: the schedule still owes a full one
    consolidator.run_pass(banks=["main"])
    assert consolidator.last_run() is None
    # A full clean pass moves it to the pass's start
    report = consolidator.run_pass()
    assert consolidator.last_run() == report.started_at


class PinBeforeSupersede:
    """A store whose records get pinned by "someone else" just before the consolidator's
    supersede reaches them (a race with a user): the store refuses with ConflictError. It
    notes each write call and how many merges it carried."""

    def __init__(self, store: MemoryStore, victim: str) -> None:
        self.store = store
        self.victim = victim
        self.calls: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def supersede(self, id: str, superseded_by: str, **kw: Any) -> Any:
        self.calls.append(("supersede", 1))
        if id == self.victim:
            self.store.pin(id, True)
        return self.store.supersede(id, superseded_by, **kw)

    def supersede_many(self, items: list[dict[str, Any]]) -> Any:
        self.calls.append(("supersede_many", len(items)))
        if any(item["id"] == self.victim for item in items):
            self.store.pin(self.victim, True)
        return self.store.supersede_many(items)


def test_a_pass_sends_its_merges_together(store: MemoryStore) -> None:
    # Given six duplicate pairs in a bank
    seed_pairs(store)
    watched = PinBeforeSupersede(store, victim="none")
    fsyncs = store.commits.fsyncs
    # When a pass runs
    report = Consolidator(watched).run_pass()  # type: ignore[arg-type]
    # Then its six merges went to the store as one call, made durable by one fsync
    assert len(report.merged) == 6 and report.ok
    assert watched.calls == [("supersede_many", 6)]
    assert store.commits.fsyncs == fsyncs + 1


def test_a_refused_supersede_is_reported_and_holds_the_checkpoint(store: MemoryStore) -> None:
    # Given a duplicate that a user pins while the pass runs
    pairs = seed_pairs(store)
    victim = pairs[0][0]
    watched = PinBeforeSupersede(store, victim)
    consolidator = Consolidator(watched)  # type: ignore[arg-type]
    # When the pass runs
    report = consolidator.run_pass()
    # Then the pinned record stays, the others merged, and the error keeps the checkpoint
    assert [(e.id, e.category) for e in report.errors] == [(victim, "invalid_argument")]
    assert len(report.merged) == 5
    assert store.get(victim).memory.live
    assert consolidator.last_run() is None
    # The refused call wrote nothing; its merges went again one by one, each with its answer
    assert watched.calls == [("supersede_many", 6)] + [("supersede", 1)] * 6


class CrashAfter:
    """Kills the pass (a non-service exception) after ``k`` calls that write, like a stopped
    actor: the ``k + 1``-th never reaches the store."""

    def __init__(self, store: MemoryStore, k: int) -> None:
        self.store = store
        self.k = k
        self.done = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def _count(self) -> None:
        if self.done == self.k:
            raise RuntimeError("consolidator stopped")
        self.done += 1

    def supersede(self, *args: Any, **kw: Any) -> Any:
        self._count()
        return self.store.supersede(*args, **kw)

    def supersede_many(self, items: list[dict[str, Any]]) -> Any:
        self._count()
        return self.store.supersede_many(items)


def assert_consistent(store: MemoryStore, bank: str = "main") -> None:
    """Every retired record points at a live survivor, and the index matches the files."""
    everything = store.list(bank=bank, include_superseded=True, page_size=500).memories
    by_id = {m.id: m for m in everything}
    for m in everything:
        if m.superseded_by is not None:
            assert m.invalid_at is not None
            assert by_id[m.superseded_by].live
    checks = {c.name: c.ok for c in store.doctor().checks}
    assert checks.get("index_consistent", True)


def test_a_pass_stopped_midway_leaves_banks_consistent_and_the_next_finishes(
    store: MemoryStore, data_dir: Path, clock: FakeClock, tmp_path: Path
) -> None:
    # Given duplicates in two banks, and a copy of the data for an uninterrupted reference run
    seed_pairs(store, "alpha")
    seed_pairs(store, "beta")
    shutil.copytree(data_dir, tmp_path / "copy")
    # When the pass is killed after its first bank's merges (one call per bank)
    with pytest.raises(RuntimeError):
        Consolidator(CrashAfter(store, 1), clock=clock).run_pass()  # type: ignore[arg-type]
    # Then, replayed from disk, the banks are consistent and the checkpoint did not move
    store.close()
    reopened = MemoryStore(data_dir, clock=clock)
    for bank in ("alpha", "beta"):
        assert_consistent(reopened, bank)
    assert (len(live_ids(reopened, "alpha")), len(live_ids(reopened, "beta"))) == (7, 13)
    fresh = Consolidator(reopened, clock=clock)
    assert fresh.last_run() is None
    # When the next pass runs, it finishes the job
    report = fresh.run_pass()
    assert report.ok and len(report.merged) == 6
    # Then the banks equal an uninterrupted pass over the same data
    reference = MemoryStore(tmp_path / "copy", clock=FakeClock())
    Consolidator(reference).run_pass()
    for bank in ("alpha", "beta"):
        assert live_ids(reopened, bank) == live_ids(reference, bank)
        assert_consistent(reopened, bank)
    reopened.close()
    reference.close()


class Gate:
    """A store whose ``list`` blocks until released, to hold a pass open without sleeping."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.entered = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def list(self, **kw: Any) -> Any:
        self.entered.set()
        assert self.release.wait(30)
        return self.store.list(**kw)


def test_passes_never_overlap(store: MemoryStore) -> None:
    # Given a pass held open inside its first read
    seed_pairs(store)
    gate = Gate(store)
    consolidator = Consolidator(gate)  # type: ignore[arg-type]
    results: list[Report] = []
    worker = threading.Thread(target=lambda: results.append(consolidator.run_pass()))
    worker.start()
    assert gate.entered.wait(30)
    # When a second pass is asked for
    # Then it is refused, not queued or run alongside
    assert consolidator.running
    with pytest.raises(ConflictError):
        consolidator.run_pass()
    gate.release.set()
    worker.join(30)
    assert len(results) == 1 and len(results[0].merged) == 6
    assert not consolidator.running


def test_cap_leaves_the_rest_for_the_next_pass(store: MemoryStore) -> None:
    seed_pairs(store)
    consolidator = Consolidator(store, settings=ConsolidatorSettings(max_supersedes_per_run=4))
    first = consolidator.run_pass()
    assert len(first.merged) == 4 and len(first.capped) == 2
    second = consolidator.run_pass()
    assert len(second.merged) == 2 and second.capped == ()


def test_scoped_duplicates_are_found_where_they_are_visible(store: MemoryStore) -> None:
    # Given near-duplicates inside one session and inside one project
    store.save("The user is debugging the login flow", scope="session", session_id="s1")
    store.save("The user is debugging the login flows", scope="session", session_id="s1")
    store.save("The build uses the make targets in the repo", scope="project", project="/w/a")
    store.save("The build uses the make targets in this repo", scope="project", project="/w/a")
    # When a pass runs
    report = Consolidator(store).run_pass()
    # Then both pairs were found through recall run in their own session and project
    assert len(report.merged) == 2


def test_the_report_survives_pickle_and_json(store: MemoryStore) -> None:
    seed_pairs(store)
    report = Consolidator(store).run_pass(dry_run=True)
    assert pickle.loads(pickle.dumps(report)) == report
    assert Report.model_validate_json(report.model_dump_json()) == report
    assert "groups=6" in report.summary()


class BankVanishes:
    """A bank that ``bank_list`` names but that is trashed before the pass reads it."""

    def __init__(self, store: MemoryStore, gone: str) -> None:
        self.store = store
        self.gone = gone

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def list(self, **kw: Any) -> Any:
        if kw.get("bank") == self.gone:
            self.store.bank_delete(self.gone)
        return self.store.list(**kw)


def test_a_bank_trashed_mid_pass_is_skipped_not_an_error(store: MemoryStore) -> None:
    seed_pairs(store)
    seed_pairs(store, bank="doomed")
    consolidator = Consolidator(BankVanishes(store, "doomed"))  # type: ignore[arg-type]
    report = consolidator.run_pass()
    assert report.ok and len(report.merged) == 6
    assert consolidator.last_run() == report.started_at


def test_the_report_is_logged(store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    seed_pairs(store)
    caplog.set_level("INFO", logger="consolidate_worker.core")
    Consolidator(store).run_pass()
    assert "consolidation pass over 1 bank(s): scanned=13 groups=6 merged=6" in caplog.text


def test_a_memory_edited_during_a_pass_is_not_retired_for_its_old_text(
    store: MemoryStore,
) -> None:
    # Given duplicate pairs, and a pass that has read the bank and planned its merges
    pairs = seed_pairs(store)
    old, new = pairs[0]
    consolidator = Consolidator(store)
    planned = consolidator._apply_groups

    def edit_then_apply(*args: Any, **kwargs: Any) -> None:
        # a user rewrites the memory the plan retires, between the pass's read and its write
        store.update(old, text="The user now wants light mode everywhere, not dark mode")
        planned(*args, **kwargs)

    consolidator._apply_groups = edit_then_apply  # type: ignore[method-assign]
    report = consolidator.run_pass()
    # Then the edited memory stays live (the store refused the stale supersede), the rest merge
    edited = store.get(old).memory
    assert edited.superseded_by is None and "light mode" in edited.text
    assert [(e.id, "changed since it was read" in e.message) for e in report.errors] == [
        (old, True)
    ]
    assert {c.id for c in report.merged} == {a for a, _ in pairs[1:]}
    assert not report.ok  # the checkpoint waits: the next pass plans from the new text
    assert new in live_ids(store)


def test_supersede_with_a_stale_revision_is_refused_and_writes_nothing(
    store: MemoryStore,
) -> None:
    a = store.save("The user likes green tea").memory
    b = store.save("The user likes green tea in the morning").memory
    before = store.get(a.id).memory
    store.update(a.id, text="The user likes black coffee")
    with pytest.raises(ConflictError, match="changed since it was read"):
        store.supersede(a.id, b.id, revision=before.revision)
    with pytest.raises(ConflictError):
        store.supersede_many([{"id": a.id, "superseded_by": b.id, "revision": before.revision}])
    assert store.get(a.id).memory.superseded_by is None
    now = store.get(a.id).memory
    done = store.supersede(a.id, b.id, revision=now.revision)  # the current one: as before
    assert done.memory.superseded_by == b.id
