"""Outbox crash tests: SIGKILL the store mid-turn; nothing acknowledged is lost.

Mirrors ``test_crash.py``. A child process runs a plain ``MemoryStore`` and prints a line
*before* each call (``queuing``/``acking``: the call may or may not have happened when the kill
lands) and one *after* it returned (``queued``/``acked``: acknowledged). The parent reads a few
hundred acknowledgements, SIGKILLs the child mid-stream and opens the store on what it left:

- every acknowledged turn is a job, once, with its messages, in turn order per session; the only
  other job allowed is the one turn whose call was in flight;
- no acknowledged ack comes back, and every job not acked (leased by the dead child or never
  claimed) is claimable again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ulid import ULID

from shared.contract.clock import FakeClock
from shared.contract.models import OutboxJob
from store_worker.core import MemoryStore
from store_worker.harness.outbox import OUTBOX_DIR

# Not marked slow: three child processes, yet ~2.5 s and ~1 s per test here (under the 5 s line).

SESSIONS = 4
BASE_MS = 1_767_225_600_000  # 2026-01-01: message dates are the caller's, not the clock's
PAD = " the quick brown fox jumps over the lazy dog" * 20  # ~0.9 kB per message

COMMON = f"""
import sys
from ulid import ULID
from store_worker.core import MemoryStore

PAD = {PAD!r}

def messages(i):
    at = {BASE_MS} + 2000 * i
    return [
        {{"role": "user", "content": f"user turn {{i}}{{PAD}}", "timestamp": at}},
        {{"role": "assistant", "content": f"reply {{i}}{{PAD}}", "timestamp": at + 1000}},
    ]

def enqueue(store, i, session):
    turn = str(ULID())
    print("queuing", i, turn, flush=True)
    res = store.turn_completed(session, turn, messages(i), "completed")
    assert res.queued, res
    print("queued", i, turn, res.job_id, flush=True)
    return res.job_id

store = MemoryStore(sys.argv[1])
start = int(sys.argv[2])
"""

# Turns round-robin over a few sessions, forever.
TURNS_CHILD = (
    COMMON
    + f"""
i = start
while True:
    enqueue(store, i, f"s{{i % {SESSIONS}}}")
    i += 1
"""
)

# Two turns in, one claimed: a backlog of never-claimed jobs grows. Of the claimed ones a third
# stay leased by this process (never acked), the rest are acked.
DRAIN_CHILD = (
    COMMON
    + """
index = {}
i = start
while True:
    for _ in range(2):
        index[enqueue(store, i, f"c{i}")] = i
        i += 1
    for job in store.outbox_claim(1):
        print("claimed", job.job_id, flush=True)
        if index[job.job_id] % 3 == 0:
            continue
        print("acking", job.job_id, flush=True)
        store.outbox_ack(job.job_id)
        print("acked", job.job_id, flush=True)
"""
)


@dataclass
class Log:
    """What the child said: acknowledged calls and the (at most one) call in flight."""

    queued: dict[str, tuple[int, str]] = field(default_factory=dict)  # turn_id -> (i, job_id)
    queuing: dict[str, int] = field(default_factory=dict)  # turn_id -> i, not yet returned
    inflight: dict[str, int] = field(default_factory=dict)  # earlier rounds' unreturned turns
    claimed: list[str] = field(default_factory=list)
    acked: list[str] = field(default_factory=list)
    acking: set[str] = field(default_factory=set)

    def read(self, line: str) -> None:
        match line.split():
            case ["queuing", i, turn]:
                self.queuing[turn] = int(i)
            case ["queued", i, turn, job_id]:
                del self.queuing[turn]
                self.queued[turn] = (int(i), job_id)
            case ["claimed", job_id]:
                self.claimed.append(job_id)
            case ["acking", job_id]:
                self.acking.add(job_id)
            case ["acked", job_id]:
                self.acking.remove(job_id)
                self.acked.append(job_id)
            case _:
                raise AssertionError(f"unexpected child output {line!r}")


def run_and_kill(
    sigkill_child: Callable[..., None],
    script: str,
    data_dir: Path,
    *,
    start: int,
    acks: int,
    log: Log,
) -> None:
    """Run ``script`` until it has printed ``acks`` acknowledgements, then SIGKILL it."""

    def on_line(line: str, whole: bool) -> bool:
        if not whole:  # a line the kill cut short was never said whole
            return False
        log.read(line)
        return line.startswith(("queued", "acked"))

    sigkill_child(script, [str(data_dir), str(start)], acks=acks, on_line=on_line)
    assert len(log.queuing) <= 1 and len(log.acking) <= 1  # one call at a time was in flight
    log.inflight.update(log.queuing)
    log.queuing.clear()


def all_jobs(store: MemoryStore) -> list[OutboxJob]:
    rows = store.outbox_list(limit=100_000).jobs
    assert all(r.state != "dead" for r in rows)
    return [store.outbox_job(r.job_id) for r in rows]


def drain(store: MemoryStore) -> list[OutboxJob]:
    """Claim and ack everything, in the order the outbox hands it out."""
    out: list[OutboxJob] = []
    while batch := store.outbox_claim(500):
        for job in batch:
            assert job.attempts == 1  # a lease never survives a restart as an attempt
            store.outbox_ack(job.job_id)
        out += batch
    assert store.outbox_list().queued == 0
    return out


def assert_turns(jobs: list[OutboxJob], log: Log) -> None:
    """Every acknowledged turn once, intact, in turn order per session; nothing else but the
    turn in flight at the kill."""
    turns = [j.turn_id for j in jobs]
    assert len(turns) == len(set(turns)), "a turn was queued twice"
    got = {j.turn_id: j for j in jobs}
    missing = [t for t in log.queued if t not in got]
    assert not missing, f"{len(missing)} acknowledged turns lost, e.g. {missing[:3]}"
    extra = set(got) - set(log.queued)
    assert extra <= set(log.inflight), f"jobs nobody queued: {extra}"
    index = {**log.inflight, **{t: i for t, (i, _) in log.queued.items()}}
    for turn, (_, job_id) in log.queued.items():
        assert got[turn].job_id == job_id
    for job in jobs:
        i = index[str(job.turn_id)]
        assert [(m.role, m.content, m.timestamp) for m in job.messages] == [
            ("user", f"user turn {i}{PAD}", BASE_MS + 2000 * i),
            ("assistant", f"reply {i}{PAD}", BASE_MS + 2000 * i + 1000),
        ]
    per_session: dict[str, list[int]] = defaultdict(list)
    for job in jobs:
        per_session[job.session_id].append(index[str(job.turn_id)])
    assert sorted(per_session) == [f"s{n}" for n in range(SESSIONS)]
    for session, order in per_session.items():
        assert order == sorted(order), f"{session} out of turn order"


def assert_clean(store: MemoryStore) -> None:
    """No job file was torn (a torn one would be set aside as .bad) and the store is healthy."""
    queue = store.root / OUTBOX_DIR / "queue"
    assert list(queue.glob("*.bad")) == []
    assert len(list(queue.glob("*.json"))) == store.outbox_list().queued
    report = store.doctor()
    assert report.ok, report
    assert {c.name: c for c in report.checks}["outbox"].ok


def test_every_acknowledged_turn_survives_sigkill(
    tmp_path: Path, sigkill_child: Callable[..., None]
) -> None:
    data_dir = tmp_path / "data"
    log = Log()
    # Round 1: given a child that was queuing turns when it got SIGKILL
    run_and_kill(sigkill_child, TURNS_CHILD, data_dir, start=0, acks=250, log=log)
    # When the store opens on what it left
    store = MemoryStore(data_dir, clock=FakeClock())
    # Then every acknowledged turn is queued, once, in order (read without claiming)
    assert_turns(all_jobs(store), log)
    assert_clean(store)
    store.close()
    # Round 2: a second child appends after whatever the first one left mid-write
    run_and_kill(sigkill_child, TURNS_CHILD, data_dir, start=100_000, acks=250, log=log)
    store = MemoryStore(data_dir, clock=FakeClock())
    listed = all_jobs(store)
    # Then draining hands out every turn of both rounds, each session strictly in turn order
    drained = drain(store)
    assert sorted(j.job_id for j in drained) == [j.job_id for j in listed]
    assert len(log.queued) >= 500
    assert_turns(drained, log)
    assert_clean(store)
    # and the outbox keeps working after the crash
    after = store.turn_completed("s0", str(ULID()), [{"role": "user", "content": "after"}])
    store.close()
    reopened = MemoryStore(data_dir, clock=FakeClock())
    assert [j.job_id for j in reopened.outbox_claim(5)] == [after.job_id]
    reopened.close()


def test_acked_jobs_stay_gone_unacked_ones_come_back_after_sigkill(
    tmp_path: Path, sigkill_child: Callable[..., None]
) -> None:
    data_dir = tmp_path / "data"
    log = Log()
    # Given a child that was queuing, claiming and acking when it got SIGKILL
    run_and_kill(sigkill_child, DRAIN_CHILD, data_dir, start=0, acks=300, log=log)
    queued = {job_id for _, job_id in log.queued.values()}
    acked = set(log.acked)
    leased = set(log.claimed) - acked - log.acking
    never_claimed = queued - set(log.claimed)
    # the child left all three kinds behind
    assert len(acked) >= 50 and len(leased) >= 20 and len(never_claimed) >= 20
    # When the store opens on what it left
    store = MemoryStore(data_dir, clock=FakeClock())
    assert_clean(store)
    jobs = drain(store)
    got = {j.job_id for j in jobs}
    # Then no acknowledged ack comes back
    assert not got & acked, f"acked jobs came back: {sorted(got & acked)[:3]}"
    # and every job not acked, leased by the dead child or never claimed, is claimable again
    lost = (queued - acked - log.acking) - got
    assert not lost, f"{len(lost)} unacked jobs lost, e.g. {sorted(lost)[:3]}"
    # nothing else: at most the ack in flight (done or not) and the turn in flight
    in_flight_turn = {j.job_id for j in jobs if j.turn_id in log.inflight}
    assert got <= (queued - acked) | in_flight_turn
    assert len(jobs) == len(got)
    store.close()
    reopened = MemoryStore(data_dir, clock=FakeClock())
    assert reopened.outbox_claim(5) == []
    reopened.close()
