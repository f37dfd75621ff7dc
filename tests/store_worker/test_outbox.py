"""The durable extraction outbox: finished turns queued, redacted, for the extractor."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from shared.contract.clock import FakeClock
from shared.contract.errors import ConflictError, InvalidArgumentError, NotFoundError
from store_worker.core import MemoryStore
from store_worker.harness.outbox import OUTBOX_DIR

SECRET = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
Factory = Callable[..., MemoryStore]


def turn(text: str = "I publish on Tuesdays", reply: str = "Noted.") -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]


def tid() -> str:
    return str(ULID())


def reopen(store: MemoryStore) -> MemoryStore:
    """A store restart: a new object over the same files (leases were only in RAM)."""
    store.close()
    return MemoryStore(store.root, clock=store.clock)


def queue_files(store: MemoryStore, sub: str = "queue") -> list[Path]:
    return sorted((store.root / OUTBOX_DIR / sub).glob("*.json"))


def test_turn_completed_writes_one_redacted_job(fresh_store: Factory) -> None:
    # Given a store
    store = fresh_store()
    # When a turn with a secret completes
    res = store.turn_completed("s1", tid(), turn(f"my key is {SECRET}", "ok"), "completed")
    # Then one job file holds the redacted turn
    assert res.queued and res.redacted == ("openai_key",)
    files = queue_files(store)
    assert len(files) == 1
    raw = files[0].read_text()
    assert SECRET not in raw and "[REDACTED:openai_key]" in raw
    (job,) = store.outbox_claim(10)
    assert [m.role for m in job.messages] == ["user", "assistant"]
    assert job.bank == "main" and not job.skip and job.attempts == 1


@pytest.mark.parametrize("at", [-20, -1, 0, 1])
def test_a_secret_across_the_message_cut_is_redacted_whole(fresh_store: Factory, at: int) -> None:
    """A long message is cut to MAX_MESSAGE_CHARS after redaction, never before: no part of
    a secret the cut would halve reaches the job file (nor the extractor's prompt)."""
    from store_worker.harness.outbox import MAX_ERROR_CHARS
    from store_worker.harness.turns import MAX_MESSAGE_CHARS

    store = fresh_store()
    lead = "w" * (MAX_MESSAGE_CHARS + at - 1) + " "
    res = store.turn_completed("s1", tid(), turn(lead + SECRET + " tail"), "completed")

    assert res.redacted == ("openai_key",)
    raw = queue_files(store)[0].read_text()
    assert SECRET[:12] not in raw
    (job,) = store.outbox_claim(10)
    assert len(job.messages[0].content) <= MAX_MESSAGE_CHARS
    # the same holds for an error cut to MAX_ERROR_CHARS
    store.outbox_fail(job.job_id, "e" * (MAX_ERROR_CHARS + at - 1) + " " + SECRET, dead_letter=True)
    assert not any(SECRET[:12] in p.read_text() for p in queue_files(store, "dead"))


@pytest.mark.parametrize(
    ("messages", "value"),
    [
        (["what's the db password?", "the db password is", "Blu3Moon_0qDIt"], "Blu3Moon_0qDIt"),
        (["here is the password for the staging box", "Tr0ub4dor-Z0mGU"], "Tr0ub4dor-Z0mGU"),
        (["I'll paste the api token next", "58eYq0m7Aj2gG9UB91fWlRS7gxtcYqp6"], "58eYq0m7Aj2gG9UB"),
    ],
)
def test_a_secret_split_over_two_messages_is_redacted(
    fresh_store: Factory, messages: list[str], value: str
) -> None:
    # Given a turn whose secret is announced in one message and sent alone in the next
    store = fresh_store()
    roles = ["user", "assistant"]
    msgs = [{"role": roles[i % 2], "content": text} for i, text in enumerate(messages)]
    # When it completes
    res = store.turn_completed("s1", tid(), msgs, "completed")
    # Then the value never reaches the job file (nor, so, the extractor's prompt)
    assert res.redacted
    assert value not in queue_files(store)[0].read_text()


def test_acked_turn_survives_a_store_restart(fresh_store: Factory) -> None:
    store = fresh_store()
    job_id = store.turn_completed("s1", tid(), turn()).job_id
    # When the store process dies and comes back
    store = reopen(store)
    # Then the turn is still queued and claimable
    listing = store.outbox_list()
    assert (listing.queued, listing.leased, listing.dead) == (1, 0, 0)
    assert [j.job_id for j in store.outbox_claim(5)] == [job_id]
    store.close()


def test_claimed_but_unacked_job_returns_after_restart_or_lease(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    job_id = store.turn_completed("s1", tid(), turn()).job_id
    assert [j.job_id for j in store.outbox_claim(5)] == [job_id]
    # While leased, nobody else gets it
    assert store.outbox_claim(5) == []
    assert store.outbox_list().jobs[0].state == "leased"
    # After the lease expires (the extractor was killed mid-job), it is claimable again
    clock.advance(ms=store.settings.outbox_lease_ms + 1)
    assert [j.job_id for j in store.outbox_claim(5)] == [job_id]
    # And a store restart drops every lease at once
    store = reopen(store)
    assert [j.job_id for j in store.outbox_claim(5)] == [job_id]
    store.outbox_ack(job_id)
    assert queue_files(store) == []
    store = reopen(store)
    assert store.outbox_claim(5) == []
    store.close()


def test_fail_backs_off_then_dead_letters_visibly(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    job_id = store.turn_completed("s1", tid(), turn()).job_id
    for attempt in range(1, store.settings.outbox_max_attempts):
        (job,) = store.outbox_claim(1)
        assert job.attempts == attempt
        res = store.outbox_fail(job_id, f"boom {attempt} password=hunter2xyz")
        assert res.state == "queued" and res.attempts == attempt
        # backing off: not due yet
        assert store.outbox_claim(1) == []
        assert store.outbox_list().jobs[0].state == "waiting"
        clock.advance(ms=res.next_attempt_at - clock.ms)
    store.outbox_claim(1)
    res = store.outbox_fail(job_id, "boom last")
    assert res.state == "dead"
    listing = store.outbox_list()
    assert (listing.queued, listing.dead) == (0, 1)
    assert listing.jobs[0].state == "dead" and listing.jobs[0].last_error == "boom last"
    dead = store.outbox_job(job_id)
    assert all("hunter2xyz" not in e for e in dead.errors)  # errors are redacted too
    assert store.outbox_claim(5) == []
    # the dead letter survives a restart and shows in doctor
    store = reopen(store)
    assert store.outbox_list().dead == 1
    check = {c.name: c for c in store.doctor().checks}["outbox"]
    assert not check.ok and not check.required and "1 dead-lettered" in check.detail
    # requeued by hand, it runs again
    store.outbox_requeue(job_id)
    assert [j.job_id for j in store.outbox_claim(5)] == [job_id]
    store.close()


def test_explicit_retry_delay_and_immediate_dead_letter(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    a = store.turn_completed("s1", tid(), turn()).job_id
    b = store.turn_completed("s2", tid(), turn()).job_id
    store.outbox_claim(5)
    assert store.outbox_fail(a, "later", retry_after_ms=10_000).next_attempt_at >= clock.ms + 9_000
    assert store.outbox_fail(b, "hopeless", dead_letter=True).state == "dead"
    clock.advance(ms=10_001)
    assert [j.job_id for j in store.outbox_claim(5)] == [a]


def test_one_session_is_extracted_in_order(fresh_store: Factory) -> None:
    # A correction must never be extracted before the statement it corrects.
    clock = FakeClock()
    store = fresh_store(clock=clock)
    first = store.turn_completed("s1", tid(), turn("I publish on Tuesdays")).job_id
    second = store.turn_completed("s1", tid(), turn("actually, Wednesdays")).job_id
    other = store.turn_completed("s2", tid(), turn("I like tea")).job_id
    assert [j.job_id for j in store.outbox_claim(10)] == [first, other]
    store.outbox_ack(other)
    store.outbox_fail(first, "transient")  # backing off still holds the session's later turn
    assert store.outbox_claim(10) == []
    clock.advance(ms=store.settings.outbox_backoff_max_ms)
    assert [j.job_id for j in store.outbox_claim(10)] == [first]
    store.outbox_ack(first)
    assert [j.job_id for j in store.outbox_claim(10)] == [second]


def test_sub_agent_turns_are_not_queued_failed_turns_are(fresh_store: Factory) -> None:
    store = fresh_store()
    assert not store.turn_completed("child", tid(), turn(), parent="parent").queued
    assert store.turn_completed("s1", tid(), turn(), "failed").queued
    assert store.turn_completed("s2", tid(), turn(), "cancelled").queued
    spawn = store.turn_completed("s3", tid(), turn(), parent_session_id="s1")
    assert spawn.queued
    assert [j.status for j in store.outbox_claim(10)] == ["failed", "cancelled", "completed"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"session_id": ""},
        {"status": "exploded"},
        {"turn_id": "not-a-ulid"},
        {"messages": "hello"},
        {"messages": [["user", "hi"]]},
        {"messages": [{"role": "user", "content": "hi", "timestamp": "yesterday"}]},
    ],
)
def test_bad_input_writes_nothing(fresh_store: Factory, kwargs: dict[str, Any]) -> None:
    store = fresh_store()
    call = {"session_id": "s1", "turn_id": tid(), "messages": turn(), "status": "completed"}
    with pytest.raises(InvalidArgumentError):
        store.turn_completed(**{**call, **kwargs})
    assert queue_files(store) == []
    assert store.outbox_list().queued == 0


def test_only_new_conversation_messages_are_queued(fresh_store: Factory) -> None:
    store = fresh_store()
    window = [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": "I publish on Tuesdays", "timestamp": 1_767_225_600_000},
        {"role": "user", "content": '<memory bank="main" recalled="2026-01-01">\n- x\n</memory>'},
        {"role": "tool", "content": "tool output"},
        {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
    ]
    store.turn_completed("s1", tid(), window)
    # a harness that sends the whole transcript again gets only the new messages queued
    window += [
        {"role": "user", "content": "and I blog about tea", "timestamp": "2026-01-02T10:00Z"}
    ]
    store.turn_completed("s1", tid(), window)
    # nothing new: nothing queued
    assert not store.turn_completed("s1", tid(), window).queued
    first, second = (store.outbox_job(j.job_id) for j in store.outbox_list().jobs)
    assert [(m.role, m.content) for m in first.messages] == [
        ("user", "I publish on Tuesdays"),
        ("assistant", "Noted."),
    ]
    assert [m.content for m in second.messages] == ["and I blog about tea"]
    assert second.messages[0].timestamp == 1_767_348_000_000  # each message keeps its own date


def test_deleted_bank_jobs_are_skipped_never_recreate_it(fresh_store: Factory) -> None:
    store = fresh_store()
    store.bank_create("blog")
    store.pre_generate("s1", (t := tid()), 0, turn(), {"memory_bank": "blog"})
    store.turn_completed("s1", t, turn())
    store.bank_delete("blog")
    (job,) = store.outbox_claim(5)
    assert job.bank == "blog" and job.skip
    # a turn that ran without memory (invalid bank) is queued as a skip
    store.pre_generate("s2", (t2 := tid()), 0, turn(), {"memory_bank": "Not A Bank"})
    store.turn_completed("s2", t2, turn())
    (job2,) = store.outbox_claim(5)
    assert job2.bank is None and job2.skip


def test_watchers_are_woken_and_a_broken_one_is_dropped(fresh_store: Factory) -> None:
    store = fresh_store()
    calls: list[str] = []

    def broken() -> None:
        raise RuntimeError("extractor is gone")

    store.outbox_watch("good", lambda: calls.append("wake"))
    store.outbox_watch("bad", broken)
    store.turn_completed("s1", tid(), turn())
    store.turn_completed("s2", tid(), turn())
    assert calls == ["wake", "wake"]
    assert sorted(store.outbox.watchers) == ["good"]


def test_unreadable_job_file_is_set_aside_boot_continues(fresh_store: Factory) -> None:
    store = fresh_store()
    store.turn_completed("s1", tid(), turn())
    bad = store.root / OUTBOX_DIR / "queue" / f"{ULID()}.json"
    bad.write_text('{"job_id": "torn')
    store = reopen(store)
    assert store.outbox_list().queued == 1
    assert bad.with_suffix(".bad").exists()
    store.close()


def test_ack_and_fail_of_unknown_jobs(fresh_store: Factory) -> None:
    store = fresh_store()
    assert store.outbox_ack(str(ULID())).state == "missing"
    assert store.outbox_fail(str(ULID()), "x").state == "missing"
    with pytest.raises(InvalidArgumentError):
        store.outbox_ack("../../etc/passwd")
    with pytest.raises(NotFoundError):
        store.outbox_requeue(str(ULID()))
    with pytest.raises(InvalidArgumentError):
        store.outbox_claim(0)


def test_a_temp_file_left_by_a_killed_write_is_swept_at_open(tmp_path: Path) -> None:
    # Given a queue folder holding the temp file of a job write that was killed mid-way
    MemoryStore(tmp_path).close()
    queue = tmp_path / OUTBOX_DIR / "queue"
    leftover = queue / ".01J0000000000000000000000.json.abc123.tmp"
    leftover.write_text("{half a job")
    # When the store opens again
    store = MemoryStore(tmp_path)
    # Then the leftover is gone and the queue is empty
    assert not leftover.exists()
    assert store.outbox_claim(10) == []
    store.close()


REPLY = {"memories": [{"text": "The user publishes on Tuesdays."}], "rules": []}


def test_a_noted_reply_comes_back_with_every_later_claim(fresh_store: Factory) -> None:
    # Given a claimed job whose holder recorded the model's reply
    clock = FakeClock()
    store = fresh_store(clock=clock)
    job_id = store.turn_completed("s1", tid(), turn()).job_id
    (job,) = store.outbox_claim(5)
    assert job.reply is None and job.lease
    noted = store.outbox_note(job_id, REPLY, lease=job.lease)
    assert noted.reply == REPLY
    # When the holder dies and its lease runs out
    clock.advance(ms=store.settings.outbox_lease_ms + 1)
    (again,) = store.outbox_claim(5)
    # Then the next claim carries the reply, under a new lease
    assert again.reply == REPLY and again.lease != job.lease
    # And so do a store restart, a failed attempt and a dead letter brought back
    store = reopen(store)
    (after,) = store.outbox_claim(5)
    assert after.reply == REPLY
    assert "lease" not in queue_files(store)[0].read_text()  # a token never reaches disk
    store.outbox_fail(job_id, "boom", dead_letter=True)
    store.outbox_requeue(job_id)
    (requeued,) = store.outbox_claim(5)
    assert requeued.reply == REPLY
    # Unless it is requeued fresh: then the model will be asked again
    store.outbox_fail(job_id, "the reply itself keeps failing", dead_letter=True)
    store.outbox_requeue(job_id, fresh=True)
    assert store.outbox_claim(5)[0].reply is None
    store.close()


def test_only_the_lease_holder_notes_once(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    job_id = store.turn_completed("s1", tid(), turn()).job_id
    before = queue_files(store)[0].read_bytes()
    # Given a job claimed by A, whose lease ran out and was taken over by B
    (a,) = store.outbox_claim(5)
    clock.advance(ms=store.settings.outbox_lease_ms + 1)
    (b,) = store.outbox_claim(5)
    # When A (stale), a stranger and an unknown job try to note
    with pytest.raises(ConflictError):
        store.outbox_note(job_id, REPLY, lease=a.lease or "")
    with pytest.raises(ConflictError):
        store.outbox_note(job_id, REPLY, lease="not-a-token")
    with pytest.raises(NotFoundError):
        store.outbox_note(tid(), REPLY, lease=b.lease or "")
    with pytest.raises(InvalidArgumentError):
        store.outbox_note(job_id, ["not", "an", "object"], lease=b.lease or "")  # type: ignore[arg-type]
    # Then nothing was written
    assert queue_files(store)[0].read_bytes() == before
    # And B notes once; a second note never replaces the first
    store.outbox_note(job_id, REPLY, lease=b.lease or "")
    with pytest.raises(ConflictError):
        store.outbox_note(job_id, {"memories": []}, lease=b.lease or "")
    assert store.outbox_job(job_id).reply == REPLY
    # And once acked the job is gone for a note too
    store.outbox_ack(job_id)
    with pytest.raises(NotFoundError):
        store.outbox_note(job_id, REPLY, lease=b.lease or "")


def test_a_note_renews_an_expired_lease_nobody_took_and_is_redacted(
    fresh_store: Factory,
) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    job_id = store.turn_completed("s1", tid(), turn()).job_id
    (job,) = store.outbox_claim(5)
    # Given a slow model call: the lease ran out, but no other claim took the job
    clock.advance(ms=store.settings.outbox_lease_ms + 1)
    # When the holder notes a reply that quotes a secret
    reply = {"memories": [{"text": f"key {SECRET}"}], "rules": []}
    store.outbox_note(job_id, reply, lease=job.lease or "")
    # Then the note is kept (redacted on disk) and the lease is the holder's again
    raw = queue_files(store)[0].read_text()
    assert SECRET not in raw and "[REDACTED:openai_key]" in raw
    assert store.outbox_claim(5) == []


@pytest.mark.parametrize("stamp", [float("nan"), float("inf"), -1, 10**40, "9999-01-01T00:00:00"])
def test_a_message_time_no_calendar_prints_is_refused_and_nothing_queued(
    fresh_store: Factory, stamp: object
) -> None:
    store = fresh_store()
    with pytest.raises(InvalidArgumentError, match="timestamp"):
        store.turn_completed("s1", tid(), [{"role": "user", "content": "hi", "timestamp": stamp}])
    assert queue_files(store) == []


def test_a_queued_turn_is_answered_queued_when_its_bookkeeping_write_fails(
    fresh_store: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job file is the turn's durable record; the note of which messages were queued (for
    a caller that sends the whole window each turn) is bookkeeping. A refused note must not
    turn a queued turn into an error, or the harness sends it again as a second job."""
    from shared.contract.errors import SourceUnavailableError

    store = fresh_store()
    real_set = store.state.set

    def refuse_outbox(owner: str, key: str, value: object) -> None:
        if owner == "outbox":
            raise SourceUnavailableError("cannot write the state: disk full")
        real_set(owner, key, value)

    monkeypatch.setattr(store.state, "set", refuse_outbox)
    res = store.turn_completed("s1", tid(), turn())
    assert res.queued and res.job_id is not None
    assert len(queue_files(store)) == 1
    assert [j.job_id for j in store.outbox_claim(5)] == [res.job_id]
