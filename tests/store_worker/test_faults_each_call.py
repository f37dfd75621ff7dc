"""Fault suite: one fault at each file call of a verb in turn (session 7 review, part 2).

``test_faults_disk`` fails every call under the data dir; here only the k-th mutating call
fails, for each k, so the fault lands mid-verb too: past a rename or an unlink, in the
folder's fsync that makes it durable, or in a write (of a log line, a draft, a rule, a job)
that a nearly full disk takes in part before it refuses (a short write, then the error).
The caller is told it failed, yet the change may be in place and the next boot reads it: RAM
must follow the files (purge must never keep a purged record in RAM, a rule or a draft the
reopen would show must be shown, an outbox job must be in one state, the one its file says).
Each case: the error is typed, RAM equals a reopen.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from shared.contract.errors import MemoryServiceError
from store_worker.core import MemoryStore

CALLS = (
    "write",
    "fsync",
    "fdatasync",
    "replace",
    "rename",
    "unlink",
    "ftruncate",
    "rmdir",
    "mkdir",
)
MSGS = [{"role": "user", "content": "I always deploy on Fridays"}]


class FailAt:
    """Fails the ``k``-th call of ``calls`` (1-based) with ``code``; counts them all."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, k: int, code: int, calls: tuple[str, ...] = CALLS
    ) -> None:
        self.k, self.code, self.calls, self.hit = k, code, 0, False
        for name in calls:
            monkeypatch.setattr(os, name, self._wrap(getattr(os, name)))

    def _wrap(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == self.k:
                self.hit = True
                if real.__name__ == "write":  # half of it reaches the file first
                    fd, data = args
                    real(fd, bytes(data)[: len(data) // 2])
                raise OSError(self.code, os.strerror(self.code))
            return real(*args, **kwargs)

        return call


def seed(store: MemoryStore) -> str:
    store.save("alpha fact about the build", id="alpha")
    store.save("beta fact about the deploy", id="beta")
    store.save("a draft fact", id="d1", status="pending")
    store.rule_set("style", "spaces, not tabs")
    store.bank_create("work", "reviews")
    job = store.turn_completed("session-1", messages=MSGS).job_id
    assert job is not None
    store.reload()
    return job


def claimed(store: MemoryStore, job: str) -> str:
    store.outbox_claim(8)
    return job


def dead(store: MemoryStore, job: str) -> str:
    store.outbox_claim(8)
    store.outbox_fail(job, "boom", dead_letter=True)
    return job


def secret_description(store: MemoryStore, job: str) -> str:
    """A description with a credential in it, put there by hand (``redact_rescan`` finds it)."""
    meta = store.banks["work"].files.dir / "bank.yaml"
    meta.write_text("created_at: 5\ndescription: key AKIAIOSFODNN7EXAMPLE\n")
    store.reload()
    return job


VERBS: dict[str, tuple[Callable[[MemoryStore, str], Any], Callable[[MemoryStore, str], str]]] = {
    "save": (lambda s, j: s.save("gamma fact about the tests"), lambda s, j: j),
    "save_many": (
        lambda s, j: s.save_many(
            [{"text": "a burst fact for main"}, {"text": "a burst fact for work", "bank": "work"}]
        ),
        lambda s, j: j,
    ),
    "approve": (lambda s, j: s.approve("d1"), lambda s, j: j),
    "purge": (lambda s, j: s.purge("alpha"), lambda s, j: j),
    "purge_draft": (lambda s, j: s.purge("d1"), lambda s, j: j),
    "rule_set": (lambda s, j: s.rule_set("style", "tabs"), lambda s, j: j),
    "rule_remove": (lambda s, j: s.rule_set("style", ""), lambda s, j: j),
    "save_pending": (lambda s, j: s.save("new draft", id="d2", status="pending"), lambda s, j: j),
    "reject": (lambda s, j: s.reject("d1"), lambda s, j: j),
    "bank_create": (lambda s, j: s.bank_create("fresh", "new"), lambda s, j: j),
    "bank_describe": (lambda s, j: s.bank_create("work", "new words"), lambda s, j: j),
    "redact_rescan": (lambda s, j: s.redact_rescan(bank="work"), secret_description),
    "bank_delete": (lambda s, j: s.bank_delete("work"), lambda s, j: j),
    "turn_completed": (lambda s, j: s.turn_completed("session-2", messages=MSGS), lambda s, j: j),
    "outbox_ack": (lambda s, j: s.outbox_ack(j), claimed),
    "outbox_fail": (lambda s, j: s.outbox_fail(j, "err"), claimed),
    "outbox_dead_letter": (lambda s, j: s.outbox_fail(j, "err", dead_letter=True), claimed),
    "outbox_requeue": (lambda s, j: s.outbox_requeue(j), dead),
}


def view(store: MemoryStore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for info in store.bank_list().banks:
        bank = store.banks[info.name]
        records = sorted(m.model_dump_json() for m in bank.records.values())
        out[info.name] = (info.description, records, sorted(bank.rules.items()))
    out["queue"] = sorted((j.job_id, j.attempts, j.errors) for j in store.outbox._jobs.values())
    out["dead"] = sorted((j.job_id, j.attempts, j.errors) for j in store.outbox._dead.values())
    return out


@pytest.fixture
def opened(data_dir: Path) -> Iterator[Callable[[], MemoryStore]]:
    made: list[MemoryStore] = []

    def open_() -> MemoryStore:
        store = MemoryStore(data_dir, clock=FakeClock(), settings=StoreSettings(ratification=True))
        made.append(store)
        return store

    yield open_
    for store in made:
        store.close()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS], ids=["ENOSPC", "EROFS"])
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_fault_at_any_one_call_leaves_ram_as_the_files_say(
    opened: Callable[[], MemoryStore],
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    verb: str,
    code: int,
) -> None:
    run, prepare = VERBS[verb]
    for k in range(1, 40):
        # Given a seeded store, fresh for each k
        shutil.rmtree(data_dir, ignore_errors=True)
        store = opened()
        job = prepare(store, seed(store))
        # When the k-th file call of the verb fails
        with monkeypatch.context() as patch:
            fault = FailAt(patch, k, code)
            try:
                run(store, job)
            except MemoryServiceError:
                pass  # typed: anything else fails the test
        if not fault.hit:
            assert k > 1, "the verb made no file call"
            store.close()
            return
        # Then RAM shows what a reopen reads
        ram = view(store)
        store.close()
        again = opened()
        assert view(again) == ram, f"{verb}: fault at call {k}"
        again.close()
    raise AssertionError("more calls than expected")


def test_a_dead_lettering_stopped_before_its_rename_is_finished_at_open(
    opened: Callable[[], MemoryStore], data_dir: Path
) -> None:
    # Given a store killed between rewriting a job as dead and moving it to dead/
    store = opened()
    job = claimed(store, seed(store))
    queued = data_dir / ".outbox" / "queue" / f"{job}.json"
    marked = store.outbox._jobs[job].model_copy(update={"dead_at": 1, "attempts": 1})
    store.close()
    queued.write_text(marked.model_dump_json())
    # When it opens again, Then the job is a dead letter, in one place, and can be requeued
    again = opened()
    assert job in again.outbox._dead and job not in again.outbox._jobs
    assert not queued.exists()
    again.outbox_requeue(job)
    assert job in again.outbox._jobs and queued.exists()
