"""``Extractor`` over a plain ``MemoryStore``: retries, dead letters, crashes, settings."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from ulid import ULID

from extract_worker.core import Extractor, JobResult
from extract_worker.parse import parse_reply
from extract_worker.settings import ExtractorSettings, retired_settings
from shared.contract.clock import FakeClock
from shared.contract.errors import (
    ConflictError,
    InvalidArgumentError,
    SourceUnavailableError,
    UnknownError,
)
from shared.contract.models import OutboxPolicy
from shared.llm import FakeLLM
from store_worker.core import MemoryStore

Factory = Callable[..., MemoryStore]
TUE = {"memories": [{"text": "The user publishes blog posts on Tuesdays."}], "rules": []}


def turn(text: str = "I publish on Tuesdays") -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]


def make(store: MemoryStore, llm: FakeLLM | None, clock: FakeClock, **settings: Any) -> Extractor:
    base: dict[str, Any] = {"extraction_model": "fake/x"}
    return Extractor(store, llm, ExtractorSettings(**{**base, **settings}), clock=clock)


def live_texts(store: MemoryStore) -> list[str]:
    return sorted(m.text for m in store.list().memories)


def test_transient_llm_errors_retry_with_backoff_then_succeed(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock, outbox_backoff_ms=1_000)  # the store's policy applies
    llm = FakeLLM.of(SourceUnavailableError("rate limited"), json.dumps(TUE))
    ex = make(store, llm, clock)
    store.turn_completed("s1", str(ULID()), turn())
    # first attempt fails: the job waits out its backoff
    stats = ex.drain()
    assert (stats.retried, stats.done) == (1, 0)
    waiting = store.outbox_list().jobs[0]
    assert waiting.state == "waiting" and waiting.next_attempt_at >= clock.ms + 900
    assert ex.drain().results == []  # not due yet: nothing claimed, no LLM call
    assert len(llm.calls) == 1
    clock.advance(ms=1_001)
    assert ex.drain().done == 1
    assert live_texts(store) == ["The user publishes blog posts on Tuesdays."]
    assert store.outbox_list().queued == 0


def test_a_job_that_keeps_failing_is_dead_lettered_visibly(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock, outbox_max_attempts=3)
    seen: list[JobResult] = []
    ex = make(store, FakeLLM.of("no json here"), clock)
    ex.on_result = seen.append
    store.turn_completed("s1", str(ULID()), turn())
    for _ in range(3):
        ex.drain()
        clock.advance(ms=store.settings.outbox_backoff_max_ms)
    assert [r.outcome for r in seen] == ["retry", "retry", "dead"]
    listing = store.outbox_list()
    assert listing.dead == 1 and "ReplyError" in (listing.jobs[0].last_error or "")
    assert live_texts(store) == []


def test_a_permanent_error_dead_letters_at_once(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    ex = make(store, FakeLLM.of(UnknownError("bad request", False)), clock)
    store.turn_completed("s1", str(ULID()), turn())
    assert ex.drain().dead == 1


@pytest.mark.parametrize(
    ("name", "outcome"), [("RateLimitError", "retry"), ("AuthenticationError", "dead")]
)
def test_the_adapter_policy_decides_retry_or_dead_letter(
    fresh_store: Factory, name: str, outcome: str
) -> None:
    # Given the real litellm backend, whose provider raises ``name`` (litellm's mock provider)
    import litellm

    from shared.llm import LiteLLMBackend

    clock = FakeClock()
    store = fresh_store(clock=clock)
    failure = getattr(litellm, name)("you said sk-proj-xyz", "openai", "gpt-4o-mini")
    ex = make(store, LiteLLMBackend(mock_response=failure), clock, extraction_model="openai/x")
    store.turn_completed("s1", str(ULID()), turn())
    # When the job runs: a rate limit waits out its backoff, a refused key is a dead letter
    (result,) = ex.drain().results
    assert result.outcome == outcome and name in (result.error or "")
    assert "sk-proj" not in (store.outbox_list().jobs[0].last_error or "")


class Killed(BaseException):
    """The extractor process dying: nothing in the extractor catches it."""


class Dying:
    """The store, as seen by an extractor that dies before its ``writes``-th write returns
    (``outbox_note`` does not count: the reply is recorded before any write)."""

    WRITES = ("save", "save_many", "supersede", "supersede_many", "rule_propose", "outbox_ack")

    def __init__(self, store: MemoryStore, writes: int) -> None:
        self.store, self.left = store, writes

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, name)
        if name not in self.WRITES:
            return method

        def write(*args: Any, **kwargs: Any) -> Any:
            if self.left == 0:
                raise Killed
            self.left -= 1
            return method(*args, **kwargs)

        return write


# Every kind of write: a correction (save + supersede), a reinforcement, a new fact twice, a
# rule, then the ack. The four saves go as one save_many: four writes, so crash points 0..3.
MIXED = {
    "memories": [
        {"text": "The user publishes on Wednesdays.", "supersedes": "tue"},
        {"text": "The user likes green tea a lot.", "reinforces": "tea"},
        {"text": "The user lives in Lisbon."},
        {"text": "The user lives in Lisbon."},  # restated within the turn: counted once
    ],
    "rules": ["Answer in British English."],
}


def seeded(store: MemoryStore) -> str:
    store.save("The user publishes on Tuesdays.", id="tue")
    store.save("The user likes green tea.", id="tea")
    said = "actually Wednesdays, and answer in British English"  # the rule is the user's
    return store.turn_completed("s1", str(ULID()), turn(said)).job_id or ""


def state(store: MemoryStore) -> list[tuple[Any, ...]]:
    mems = store.list(include_superseded=True).memories
    rows = [(m.id, m.text, m.corroboration, m.revision, m.superseded_by) for m in mems]
    return sorted(rows) + [(r.name, r.content) for r in store.rule_list().rules]


@pytest.mark.parametrize("crash_after", range(4))
def test_a_job_killed_mid_apply_is_replayed_exactly_once(
    fresh_store: Factory, crash_after: int
) -> None:
    # Given a clean single run of the job, for reference
    clean_store = fresh_store(clock=FakeClock())
    seeded(clean_store)
    assert make(clean_store, FakeLLM.of(json.dumps(MIXED)), FakeClock()).drain().done == 1
    # And an extractor killed after ``crash_after`` of its writes
    clock = FakeClock()
    store = fresh_store(clock=clock)
    job_id = seeded(store)
    first_llm = FakeLLM.of(json.dumps(MIXED))
    doomed = make(store, first_llm, clock)
    doomed.store = Dying(store, crash_after)
    with pytest.raises(Killed):
        doomed.drain()
    # When the store restarts and a new extractor, whose model would answer otherwise, drains
    store.close()
    store = MemoryStore(store.root, clock=clock)
    second_llm = FakeLLM.of(json.dumps({"memories": [{"text": "Something else."}]}))
    assert make(store, second_llm, clock).drain().done == 1
    # Then the model was asked once in all, and the bank is what one clean run leaves
    assert (len(first_llm.calls), len(second_llm.calls)) == (1, 0)
    assert state(store) == state(clean_store)
    assert store.get("tea").memory.corroboration == 1
    assert store.get("tue").memory.superseded_by is not None
    assert store.outbox_list().queued == 0
    assert job_id not in {j.job_id for j in store.outbox_list().jobs}
    store.close()


def die_after_the_save_then_replay(store: MemoryStore, clock: FakeClock) -> None:
    """An extractor killed right after its first write (before the ack), then, once the lease
    ran out, a second one that replays the job from its recorded reply."""
    doomed = make(store, FakeLLM.of(json.dumps(TUE)), clock)
    doomed.store = Dying(store, 1)
    with pytest.raises(Killed):
        doomed.drain()
    clock.advance(ms=store.settings.outbox_lease_ms + 1)
    assert make(store, FakeLLM.of("never asked"), clock).drain().done == 1


class Calls:
    """The store, noting each write call by name (and how many saves a ``save_many`` held)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, name)
        if name not in Dying.WRITES:
            return method

        def write(*args: Any, **kwargs: Any) -> Any:
            held = len(args[0]) if name.endswith("_many") else None
            self.calls.append(name if held is None else f"{name}:{held}")
            return method(*args, **kwargs)

        return write


def test_a_replys_saves_go_to_the_store_as_one_call(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    seeded(store)
    ex = make(store, FakeLLM.of(json.dumps(MIXED)), clock)
    watched = Calls(store)
    ex.store = watched  # type: ignore[assignment]
    result = ex.drain().results[0]
    assert watched.calls == ["save_many:4", "supersede", "rule_propose", "outbox_ack"]
    assert (result.saved, result.reinforced, result.superseded) == (2, 2, 1)


class Refusing(Calls):
    """A store that refuses one text for its input, alone or inside a ``save_many`` (which
    then writes nothing), as it refuses an argument it cannot take."""

    BAD = "The user collects stamps."

    def __getattr__(self, name: str) -> Any:
        write = super().__getattr__(name)
        if name not in ("save", "save_many"):
            return write

        def refusing(*args: Any, **kwargs: Any) -> Any:
            texts = [i["text"] for i in args[0]] if name == "save_many" else [kwargs["text"]]
            if self.BAD in texts:
                self.calls.append(f"{name}:{len(texts)}" if name == "save_many" else name)
                raise InvalidArgumentError("refused for its input")
            return write(*args, **kwargs)

        return refusing


def test_a_refused_item_keeps_the_good_ones_and_fails_the_job(fresh_store: Factory) -> None:
    # Given a reply whose second memory the store refuses
    clock = FakeClock()
    store = fresh_store(clock=clock)
    texts = ["The user lives in Lisbon.", Refusing.BAD, "The user drinks oolong."]
    reply = {"memories": [{"text": t} for t in texts]}
    ex = make(store, FakeLLM.of(json.dumps(reply)), clock)
    watched = Refusing(store)
    ex.store = watched  # type: ignore[assignment]
    store.turn_completed("s1", str(ULID()), turn())
    # When it is applied, the refused call wrote nothing and its saves went again one by one
    stats = ex.drain()
    assert watched.calls == ["save_many:3", "save", "save"]
    # Then the memory before the refused one is kept, and the job fails as before batching
    assert live_texts(store) == ["The user lives in Lisbon."]
    assert stats.done == 0 and store.outbox_list().jobs[0].attempts == 1


def test_a_turn_without_an_id_replays_by_its_job_id(fresh_store: Factory) -> None:
    # Given a turn the harness sent without a turn id, killed before its ack
    clock = FakeClock()
    store = fresh_store(clock=clock)
    job_id = store.turn_completed("s1", None, turn()).job_id
    # When the lease runs out and it is replayed
    die_after_the_save_then_replay(store, clock)
    # Then the memory was counted once, keyed by the job
    (mem,) = store.list().memories
    assert mem.corroboration == 0 and mem.provenance.source_turn_id == job_id


def test_a_stale_extractor_walks_away_without_a_write(fresh_store: Factory) -> None:
    # Given an extractor whose model call outlives its lease, and another claim takes the job
    clock = FakeClock()
    store = fresh_store(clock=clock)
    store.turn_completed("s1", str(ULID()), turn())

    def slow(messages: Any) -> str:
        clock.advance(ms=store.settings.outbox_lease_ms + 1)
        assert len(store.outbox_claim(5)) == 1  # the new holder
        return json.dumps(TUE)

    seen: list[JobResult] = []
    ex = make(store, FakeLLM.of(slow), clock)
    ex.on_result = seen.append
    # When its reply comes back
    stats = ex.drain(max_jobs=1)
    # Then it records nothing, writes nothing and leaves the job to the new holder
    assert [r.outcome for r in seen] == ["lost"] and stats.retried == 1
    assert store.list().total == 0
    (row,) = store.outbox_list().jobs
    assert row.state == "leased" and row.attempts == 0 and row.last_error is None
    assert store.outbox_job(row.job_id).reply is None


def test_an_unreadable_recorded_reply_dead_letters(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    job_id = store.turn_completed("s1", str(ULID()), turn()).job_id or ""
    (job,) = store.outbox_claim(5)
    store.outbox_note(job_id, {"memories": "not a list", "extra": 1}, lease=job.lease or "")
    clock.advance(ms=store.settings.outbox_lease_ms + 1)
    llm = FakeLLM.of(json.dumps(TUE))
    assert make(store, llm, clock).drain().dead == 1
    assert llm.calls == [] and "recorded reply" in (store.outbox_list().jobs[0].last_error or "")


def test_stopped_extractor_catches_up(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    for text in ("I publish on Tuesdays", "I drink green tea", "I live in Lisbon"):
        store.turn_completed("s1", str(ULID()), turn(text))
    replies = [
        json.dumps({"memories": [{"text": t}]})
        for t in (
            "The user publishes on Tuesdays.",
            "The user drinks green tea.",
            "The user lives in Lisbon.",
        )
    ]
    ex = make(store, FakeLLM.of(*replies), clock)
    assert ex.drain().done == 3
    assert len(live_texts(store)) == 3


def test_the_stores_retry_policy_above_five_is_the_extractors(fresh_store: Factory) -> None:
    # Given a store whose policy allows 8 tries (the old hard cap was 5), backoff 1 s doubling
    clock = FakeClock()
    store = fresh_store(clock=clock, outbox_max_attempts=8, outbox_backoff_ms=1_000)
    seen: list[JobResult] = []
    llm = FakeLLM.of(*["no json here"] * 20)
    ex = make(store, llm, clock)
    ex.on_result = seen.append
    ex.publish_status()  # reads the policy at start
    assert ex.policy is not None and ex.policy.max_attempts == 8
    status = store.state_get("extractor", "status")
    assert isinstance(status, dict) and status["max_attempts"] == 8
    job_id = store.turn_completed("s1", str(ULID()), turn()).job_id
    assert job_id is not None
    # When the job fails every time, waiting out each backoff the store scheduled
    for _ in range(12):
        if not ex.drain().results:
            break
        if store.outbox_list().dead == 0:
            waiting = store.outbox_job(job_id)
            # the store schedules the backoff the extractor asked for (the fake clock ticks
            # a millisecond per reading, hence the slack)
            wait = waiting.next_attempt_at - clock.ms
            assert 0 <= ex.policy.backoff(waiting.attempts) - wait < 50
            clock.advance(ms=waiting.next_attempt_at - clock.ms)
    # Then it was tried exactly 8 times: 7 retries, and "dead" when the store dead-lettered it
    assert [r.outcome for r in seen] == ["retry"] * 7 + ["dead"]
    assert len(llm.calls) == 8
    dead = store.outbox_job(job_id)
    assert dead.dead_at is not None and dead.attempts == 8
    assert ex.drain().results == []  # nothing left to claim


def test_a_policy_changed_on_the_store_reaches_the_next_drain(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock, outbox_max_attempts=8)
    seen: list[JobResult] = []
    ex = make(store, FakeLLM.of(*["no json here"] * 5), clock)
    ex.on_result = seen.append
    ex.publish_status()
    store.turn_completed("s1", str(ULID()), turn())
    ex.drain()
    store.configure({"outbox_max_attempts": 2})  # the operator lowers it on the store
    clock.advance(ms=store.settings.outbox_backoff_max_ms)
    ex.drain()
    assert [r.outcome for r in seen] == ["retry", "dead"]
    assert ex.policy is not None and ex.policy.max_attempts == 2
    assert store.outbox_list().dead == 1


def test_the_retired_retry_settings_are_named_not_applied() -> None:
    env = {"MEMORY_EXTRACTION_MODEL": "stub/x", "MEMORY_MAX_ATTEMPTS": "10"}
    settings = ExtractorSettings.from_env(env)  # accepted, and changes nothing
    assert not hasattr(settings, "max_attempts")
    assert retired_settings(env) == [
        "MEMORY_MAX_ATTEMPTS no longer applies (the store owns the retry policy): "
        "set MEMORY_OUTBOX_MAX_ATTEMPTS on the store"
    ]
    assert retired_settings({"MEMORY_EXTRACTION_MODEL": "stub/x"}) == []


def test_a_store_without_a_retry_policy_is_an_unknown_error() -> None:
    with pytest.raises(UnknownError):
        OutboxPolicy.of({"recall_modes": ["lexical"]})
    with pytest.raises(UnknownError):
        OutboxPolicy.of({"outbox": {"max_attempts": 0}})
    policy = OutboxPolicy.of(
        {"outbox": {"max_attempts": 3, "lease_ms": 1, "backoff_ms": 100, "backoff_max_ms": 250}}
    )
    assert [policy.backoff(n) for n in (1, 2, 3)] == [100, 200, 250]
    assert [policy.is_last(n) for n in (2, 3)] == [False, True]


def test_without_a_model_extraction_is_off_and_doctor_says_so(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    ex = Extractor(store, None, ExtractorSettings(), clock=clock)
    ex.publish_status()
    store.turn_completed("s1", str(ULID()), turn())
    assert not ex.enabled and ex.drain().results == []
    assert store.outbox_list().queued == 1  # kept for when a model is configured
    check = {c.name: c for c in store.doctor().checks}["extraction"]
    assert not check.ok and not check.required and "extraction is off" in check.detail
    assert store.save("explicit saves still work").created
    on = make(store, FakeLLM.of(json.dumps(TUE)), clock)
    on.publish_status()
    assert {c.name: c for c in store.doctor().checks}["extraction"].ok
    assert on.drain().done == 1


def test_skip_jobs_are_acked_without_an_llm_call(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    t = str(ULID())
    store.pre_generate("s1", t, 0, turn(), {"memory_bank": "Bad Name"})
    store.turn_completed("s1", t, turn())
    llm = FakeLLM.of(json.dumps(TUE))
    assert make(store, llm, clock).drain().skipped == 1
    assert llm.calls == [] and store.outbox_list().queued == 0


def test_extraction_writes_into_the_turns_bank_and_creates_it(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    ex = make(store, FakeLLM.of(json.dumps(TUE)), clock)
    ex.publish_status()
    t = str(ULID())
    assert store.pre_generate("s1", t, 0, turn(), {"memory_bank": "blog"}).bank == "blog"
    store.turn_completed("s1", t, turn())
    assert ex.drain().done == 1
    assert [m.text for m in store.list(bank="blog").memories] == [TUE["memories"][0]["text"]]
    (mem,) = store.list(bank="blog").memories
    assert mem.provenance.source_session_id == "s1" and mem.provenance.source_turn_id == t
    assert mem.confidence == "extracted"


def test_window_is_capped_to_the_newest_messages(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    llm = FakeLLM.of('{"memories": []}')
    msgs = [{"role": "user", "content": f"message number {i}"} for i in range(10)]
    store.turn_completed("s1", str(ULID()), msgs)
    make(store, llm, clock, extraction_window=3).drain()
    prompt = llm.calls[0][1]["content"]
    assert "message number 9" in prompt and "message number 7" in prompt
    assert "message number 6" not in prompt


def test_ratification_leaves_corrections_pending(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock, ratification=True)
    store.save("The user publishes on Tuesdays", id="tue")
    reply = {"memories": [{"text": "The user publishes on Wednesdays", "supersedes": "tue"}]}
    store.turn_completed("s1", str(ULID()), turn("actually Wednesdays"))
    assert make(store, FakeLLM.of(json.dumps(reply)), clock).drain().done == 1
    pending = store.list(status="pending").memories
    assert [m.text for m in pending] == ["The user publishes on Wednesdays"]
    assert store.get("tue").memory.invalid_at is None  # waits for approval


def test_settings_from_env_and_bad_values() -> None:
    s = ExtractorSettings.from_env({"MEMORY_EXTRACTION_MODEL": "stub/x"})
    assert s.enabled
    assert not ExtractorSettings.from_env({}).enabled
    with pytest.raises(InvalidArgumentError):
        ExtractorSettings.from_env({"MEMORY_EXTRACTION_WINDOW": "0"})


@pytest.mark.parametrize(
    ("reply", "texts", "rules"),
    [
        ('{"memories": [{"text": "A"}], "rules": ["R"]}', ["A"], ["R"]),
        ('noise ```json\n[{"text": "A"}]\n``` noise', ["A"], []),
        ('{"text": "A", "type": "project"}', ["A"], []),
        ('prefix [1, 2] then {"memories": [{"text": "B"}]}', [], []),
        ('{"rules": "Always cite sources."}', [], ["Always cite sources."]),
    ],
)
def test_parse_reply_shapes(reply: str, texts: list[str], rules: list[str]) -> None:
    parsed = parse_reply(reply)
    assert [m.text for m in parsed.memories] == texts
    assert list(parsed.rules) == rules


@pytest.mark.parametrize("reply", ["", "   ", "no json", '{"memories": [', "```json\n```"])
def test_parse_reply_without_json_is_a_retryable_error(reply: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_reply(reply)
    assert info.value.retryable


def test_a_replay_under_ratification_files_the_draft_once(fresh_store: Any) -> None:
    # Given ratification on, and an extractor killed after its save landed (before the ack)
    clock = FakeClock()
    store = fresh_store(clock=clock, ratification=True)
    store.turn_completed("s1", str(ULID()), turn())
    # When the job is replayed
    die_after_the_save_then_replay(store, clock)
    # Then the turn's draft exists once
    assert len(store.list(status="pending").memories) == 1


def test_a_memory_happened_when_its_turn_was_said(fresh_store: Factory) -> None:
    """``turn_completed`` timestamps (ISO or ms) become the extracted memory's occurred_at:
    the newest user message's date, not the extraction's."""
    clock = FakeClock()
    store = fresh_store(clock=clock)
    msgs = [
        {"role": "user", "content": "hi", "timestamp": "2023-05-07T13:00:00Z"},
        {"role": "assistant", "content": "Hello", "timestamp": "2023-05-08T09:00:00Z"},
        {"role": "user", "content": "I publish on Tuesdays", "timestamp": "2023-05-07T13:56Z"},
    ]
    store.turn_completed("s1", str(ULID()), msgs)
    clock.advance(days=30)
    assert make(store, FakeLLM.of(json.dumps(TUE)), clock).drain().done == 1
    (mem,) = store.list().memories
    assert mem.occurred_at == 1_683_467_760_000  # 2023-05-07 13:56 UTC
    assert mem.stated_at >= 1_767_225_600_000 + 30 * 86_400_000  # saved at extraction time


def test_known_memories_and_learned_rules_reach_the_prompt_redacted(fresh_store: Factory) -> None:
    """What the bank holds reaches the extraction prompt redacted again, as the turn does: a
    log line or the learned rules edited by hand never went through a write's redaction."""
    token = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
    clock = FakeClock()
    store = fresh_store(clock=clock)
    store.save("I publish on Tuesdays at noon")
    line = {"id": "ci-token", "fingerprint": "fp0000000000000001", "tokens": 10,
            "text": f"I publish with the token {token}", "created_at": clock.ms,
            "updated_at": clock.ms, "stated_at": clock.ms}  # fmt: skip
    with (store.root / "main" / "memories.jsonl").open("a") as fh:
        fh.write(json.dumps(line) + "\n")
    (store.root / "main" / "rules" / "learned.md").write_text(f"- publish with {token}\n")
    store.reload()
    llm = FakeLLM.of(json.dumps({"memories": [], "rules": []}))
    ex = make(store, llm, clock)

    store.turn_completed("s1", str(ULID()), turn("I publish on Tuesdays"))
    ex.drain()

    sent = json.dumps(llm.calls)
    assert "ci-token" in sent and "ghp_" not in sent


@pytest.mark.parametrize("error", [UnknownError("bad request", False), SourceUnavailableError("x")])
def test_a_stale_extractors_failure_leaves_the_new_holders_job_alone(
    fresh_store: Factory, error: Exception
) -> None:
    # Given an extractor whose model call outlives its lease and then fails, while another
    # claim has taken the job over
    clock = FakeClock()
    store = fresh_store(clock=clock)
    store.turn_completed("s1", str(ULID()), turn())
    taken: list[Any] = []

    def slow_then_fails(messages: Any) -> str:
        clock.advance(ms=store.settings.outbox_lease_ms + 1)
        taken.extend(store.outbox_claim(5))
        raise error

    stale = make(store, FakeLLM.of(slow_then_fails), clock)
    # When the stale one reports its failure
    assert [r.outcome for r in stale.drain(max_jobs=1).results] == ["lost"]
    # Then the job is neither dead-lettered nor backed off, and the new holder finishes it
    (row,) = store.outbox_list().jobs
    assert row.state == "leased" and row.attempts == 0 and row.last_error is None
    (job,) = taken
    assert make(store, FakeLLM.of(json.dumps(TUE)), clock).run_job(job).outcome == "done"
    assert live_texts(store) == ["The user publishes blog posts on Tuesdays."]
    assert store.outbox_list().jobs == ()


def retire_by_merge(store: MemoryStore, id: str) -> None:
    """What a consolidation pass does to a near-duplicate: supersede it, reinforcing."""
    store.save("The user publishes blog posts each Tuesday.", id="keeper")
    store.supersede(id, "keeper", reinforce=True, reason="consolidator: near-duplicate")


@pytest.mark.parametrize("retire", ["merged", "deleted"])
def test_a_replay_does_not_bring_back_what_was_retired_since_the_first_attempt(
    fresh_store: Factory, retire: str
) -> None:
    # Given a job killed after its save, before its ack
    clock = FakeClock()
    store = fresh_store(clock=clock)
    store.turn_completed("s1", str(ULID()), turn())
    doomed = make(store, FakeLLM.of(json.dumps(TUE)), clock)
    doomed.store = Dying(store, 1)
    with pytest.raises(Killed):
        doomed.drain()
    (saved,) = store.list().memories
    # And the memory it wrote retired meanwhile (a consolidation pass, a delete by hand)
    if retire == "merged":
        retire_by_merge(store, saved.id)
    else:
        store.delete(saved.id)
    before = state(store)
    # When the lease runs out and the job is replayed from its recorded reply
    clock.advance(ms=store.settings.outbox_lease_ms + 1)
    assert make(store, FakeLLM.of("never asked"), clock).drain().done == 1
    # Then nothing is written again: no second copy of the fact, no deleted fact brought back
    assert state(store) == before
    assert [m.id for m in store.list().memories] == (["keeper"] if retire == "merged" else [])


def test_a_replayed_reinforcement_of_a_memory_merged_since_saves_no_rewording(
    fresh_store: Factory,
) -> None:
    # Given the mixed reply killed before its ack (every save and correction written)
    clock = FakeClock()
    store = fresh_store(clock=clock)
    seeded(store)
    doomed = make(store, FakeLLM.of(json.dumps(MIXED)), clock)
    doomed.store = Dying(store, 3)
    with pytest.raises(Killed):
        doomed.drain()
    # And the memory it reinforced merged into another since
    store.save("The user loves green tea.", id="tea-keeper")
    store.supersede("tea", "tea-keeper", reinforce=True, reason="consolidator: duplicate")
    before = state(store)
    # When the job is replayed
    clock.advance(ms=store.settings.outbox_lease_ms + 1)
    assert make(store, FakeLLM.of("never asked"), clock).drain().done == 1
    # Then the reinforcement's rewording is not saved as a new memory: nothing changed
    assert state(store) == before


def test_a_replay_makes_the_correction_a_crash_cut_off_against_the_merged_survivor(
    fresh_store: Factory,
) -> None:
    # Given a correction whose save was written, killed before its supersede
    clock = FakeClock()
    store = fresh_store(clock=clock)
    store.save("The user publishes on Tuesdays.", id="tue")
    store.turn_completed("s1", str(ULID()), turn("actually Wednesdays"))
    reply = {"memories": [{"text": "The user publishes on Wednesdays.", "supersedes": "tue"}]}
    doomed = make(store, FakeLLM.of(json.dumps(reply)), clock)
    doomed.store = Dying(store, 1)
    with pytest.raises(Killed):
        doomed.drain()
    new = next(m for m in store.list().memories if m.id != "tue")
    # And the corrected memory merged since into a near-duplicate
    store.save("The user publishes every Wednesday.", id="wed")
    store.supersede(new.id, "wed", reinforce=True, reason="consolidator: near-duplicate")
    # When the job is replayed
    clock.advance(ms=store.settings.outbox_lease_ms + 1)
    assert make(store, FakeLLM.of("never asked"), clock).drain().done == 1
    # Then the old fact is retired in favour of the survivor, and no copy came back
    assert store.get("tue").memory.superseded_by == "wed"
    assert [m.id for m in store.list().memories] == ["wed"]


def test_two_extractors_extending_learned_at_once_keep_both_lines(fresh_store: Factory) -> None:
    """``learned`` is extended by the store, under its lock, from what it holds when the
    proposal arrives: a second writer that changed it after this extractor read it for its
    prompt (another extractor replica) must not have its line dropped."""
    clock = FakeClock()
    store = fresh_store(clock=clock)
    store.rule_set("learned", "- Use metric units.\n")
    reply = {"memories": [], "rules": ["Never start replies with Certainly."]}
    ex = make(store, FakeLLM.of(json.dumps(reply)), clock)
    original = store.rule_propose
    raced: list[str] = []

    def racing_propose(rules: Any, **kwargs: Any) -> Any:
        if not raced:  # the other replica writes between this one's read and its proposal
            raced.append("learned")
            store.rule_set("learned", "- Use metric units.\n- Answer in British English.\n")
        return original(rules, **kwargs)

    store.rule_propose = racing_propose  # type: ignore[method-assign]
    store.turn_completed("s1", str(ULID()), turn("Never start with Certainly"))
    assert ex.drain().done == 1
    learned = store.rule_get("learned").content
    assert raced and "British English" in learned
    assert "Certainly" in learned and "metric" in learned


def test_a_rule_written_only_while_it_holds_what_was_read(fresh_store: Factory) -> None:
    store = fresh_store()
    store.rule_set("style", "- Be brief.\n", expect="")  # "": the rule is absent
    with pytest.raises(ConflictError, match="changed since it was read"):
        store.rule_set("style", "- Be formal.\n", expect="")
    with pytest.raises(ConflictError):
        store.rule_set("style", "", expect="- Be long.\n")  # a removal too
    assert store.rule_get("style").content == "- Be brief.\n"
    store.rule_set("style", "- Be formal.\n", expect="- Be brief.\n")
    assert store.rule_get("style").content == "- Be formal.\n"


# -- scope isolation (an adversarial review of isolation and injection) -----------------------


def test_a_turn_never_sees_or_touches_another_project_or_session_memory(
    fresh_store: Factory,
) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    store.save(
        "Project A deploys with the kestrel pipeline",
        id="kestrel",
        scope="project",
        project="/work/a",
    )
    store.save("Session S has a budget of 40k", id="budget", scope="session", session_id="S")
    # the model names both by id (a replayed reply, a hallucination, or an injected turn)
    reply = {
        "memories": [
            {"text": "The pipeline is kestrel.", "reinforces": "kestrel"},
            {"text": "The budget is 50k.", "supersedes": "budget"},
        ],
        "rules": [],
    }
    llm = FakeLLM.of(json.dumps(reply))
    store.turn_completed("T", str(ULID()), turn("What is our deploy pipeline and budget?"))
    assert make(store, llm, clock).drain().done == 1
    # neither text reached this session's prompt
    prompt = json.dumps(llm.calls)
    assert "kestrel pipeline" not in prompt and "40k" not in prompt
    # neither record was retired, and A's text was not copied into a global memory
    everything = store.list(include_superseded=True).memories
    assert {m.id: m.invalid_at for m in everything}["budget"] is None
    assert [m.id for m in everything if "Project A" in m.text] == ["kestrel"]
    found = store.recall("kestrel pipeline", project="/work/b").memories
    assert all("Project A" not in h.memory.text for h in found)


def test_reinforcing_a_session_memory_keeps_it_in_its_session(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    store.save("Session S has a budget of 40k", id="budget", scope="session", session_id="S")
    reply = {"memories": [{"text": "S's budget: 40k.", "reinforces": "budget"}], "rules": []}
    store.turn_completed("S", str(ULID()), turn("Remember, the budget is 40k"))
    assert make(store, FakeLLM.of(json.dumps(reply)), clock).drain().done == 1
    (only,) = store.list().memories  # reinforced in place, not copied out as a global memory
    assert (only.id, only.scope, only.session_id, only.corroboration) == (
        "budget",
        "session",
        "S",
        1,
    )
    assert store.recall("budget 40k", session_id="T").memories == ()
