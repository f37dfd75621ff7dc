"""The optional LLM judge tier through the real ``litellm.completion`` path (``mock_response``),
by way of the ``shared.llm`` adapter."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from consolidate_worker.core import Consolidator
from consolidate_worker.judge import LLMJudge, _pair_prompt, judge_from
from consolidate_worker.settings import ConsolidatorSettings
from shared.contract.clock import FakeClock
from shared.contract.errors import UnknownError
from shared.llm import FakeLLM, LiteLLMBackend
from store_worker.core import MemoryStore

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import

MODEL = "openai/gpt-4o-mini"
ON = ConsolidatorSettings(judge_enabled=True, judge_model=MODEL)


def judge(reply: dict[str, Any] | str) -> LLMJudge:
    content = reply if isinstance(reply, str) else json.dumps(reply)
    return LLMJudge(MODEL, llm=LiteLLMBackend(mock_response=content))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(tick=1000)


def grey_pair(store: MemoryStore) -> tuple[str, str]:
    a = store.save("Use pytest fixtures instead of setUp methods in tests").memory
    b = store.save("Use pytest fixtures rather than setUp methods in tests").memory
    return a.id, b.id


def office_pair(store: MemoryStore) -> tuple[str, str]:
    old = store.save("The user's office is in room 12 on the third floor").memory
    new = store.save("The user's office is in room 14 on the third floor").memory
    return old.id, new.id


def test_without_the_judge_the_grey_band_is_left_alone(store: MemoryStore) -> None:
    grey_pair(store)
    report = Consolidator(store).run_pass()
    assert report.merged == () and report.judged == ()


def test_a_judged_duplicate_merges_with_reinforce(store: MemoryStore) -> None:
    # Given a pair in the grey band and a judge that calls it a duplicate
    old, new = grey_pair(store)
    cursor = store.events.cursor
    verdict = {"decision": "duplicate", "keep": None, "reason": "same advice"}
    # When a pass runs with the judge on
    report = Consolidator(store, settings=ON, judge=judge(verdict)).run_pass()
    # Then, the judge keeping neither, the usual survivor rule applies (newest), as a
    # reinforcing merge with its reason
    assert [(c.id, c.survivor) for c in report.merged] == [(old, new)]
    assert [(d.kind, d.decision) for d in report.judged] == [("ambiguous", "duplicate")]
    assert store.get(new).memory.corroboration == 1
    reasons = [e.reason for e in store.events_since(cursor).events if e.event_type == "superseded"]
    assert reasons == [f"consolidator: judge duplicate (ambiguous), kept {new}: same advice"]
    assert [g.reason for g in report.groups] == ["judge-duplicate"]


def test_the_judge_picks_the_survivor_of_a_duplicate_unless_one_is_pinned(
    store: MemoryStore,
) -> None:
    # Given a grey pair judged a duplicate, the judge keeping the older (fuller) statement
    old, new = grey_pair(store)
    verdict = {"decision": "duplicate", "keep": old, "reason": "the older says more"}
    report = Consolidator(store, settings=ON, judge=judge(verdict)).run_pass()
    # Then the older one survives (the default survivor rule alone would keep the newer)
    assert [(c.id, c.survivor) for c in report.merged] == [(new, old)]


def test_a_pinned_record_survives_a_duplicate_whatever_the_judge_keeps(
    store: MemoryStore,
) -> None:
    old, new = grey_pair(store)
    store.pin(old, True)
    verdict = {"decision": "duplicate", "keep": new, "reason": "newer"}
    report = Consolidator(store, settings=ON, judge=judge(verdict)).run_pass()
    assert [(c.id, c.survivor) for c in report.merged] == [(new, old)]


def test_a_judged_contradiction_retires_the_older_statement(store: MemoryStore) -> None:
    # Given a newer statement that corrects an older one (a number veto: never a duplicate)
    old, new = office_pair(store)
    verdict = {"decision": "contradiction", "keep": new, "reason": "the user moved"}
    # When the judge sees it
    report = Consolidator(store, settings=ON, judge=judge(verdict)).run_pass()
    # Then the older one is superseded, without counting as a re-observation
    assert [(c.id, c.survivor) for c in report.merged] == [(old, new)]
    assert [d.kind for d in report.judged] == ["contradiction"]
    assert store.get(old).memory.superseded_by == new
    assert store.get(new).memory.corroboration == 0


def test_a_duplicate_verdict_never_merges_a_vetoed_pair(store: MemoryStore) -> None:
    old, new = office_pair(store)
    verdict = {"decision": "duplicate", "keep": new, "reason": "close enough"}
    report = Consolidator(store, settings=ON, judge=judge(verdict)).run_pass()
    assert report.merged == () and len(report.judged) == 1
    assert store.get(old).memory.live and store.get(new).memory.live


def test_distinct_changes_nothing(store: MemoryStore) -> None:
    grey_pair(store)
    report = Consolidator(
        store, settings=ON, judge=judge({"decision": "distinct", "reason": "no"})
    ).run_pass()
    assert report.merged == () and [d.decision for d in report.judged] == ["distinct"]


def test_a_pinned_loser_is_only_reported(store: MemoryStore) -> None:
    old, new = office_pair(store)
    store.pin(old, True)
    verdict = {"decision": "contradiction", "keep": new, "reason": "moved"}
    report = Consolidator(store, settings=ON, judge=judge(verdict)).run_pass()
    assert report.merged == ()
    assert [(c.id, c.reason) for c in report.skipped_pinned] == [(old, "pinned")]
    assert store.get(old).memory.live


def test_a_bad_reply_is_an_error_and_holds_the_checkpoint(store: MemoryStore) -> None:
    # Given a judge that answers prose, then a contradiction naming an unknown id
    grey_pair(store)
    for reply in ("I think they are the same.", {"decision": "contradiction", "keep": "x"}):
        consolidator = Consolidator(store, settings=ON, judge=judge(reply))
        # When a pass runs
        report = consolidator.run_pass()
        # Then nothing was written, the error is reported and the checkpoint stays
        assert report.merged == () and [e.category for e in report.errors] == ["unknown"]
        assert consolidator.last_run() is None


def test_judge_calls_are_capped_per_pass(store: MemoryStore) -> None:
    grey_pair(store)
    office_pair(store)
    settings = ON.model_copy(update={"judge_max_calls": 1})
    report = Consolidator(
        store, settings=settings, judge=judge({"decision": "distinct"})
    ).run_pass()
    assert len(report.judged) == 1


def test_the_prompt_orders_the_pair_by_statement_date(store: MemoryStore) -> None:
    old, new = office_pair(store)
    a, b = store.get(new).memory, store.get(old).memory
    payload = json.loads(_pair_prompt("contradiction", a, b))
    assert payload["older"]["id"] == old and payload["newer"]["id"] == new


def test_a_provider_failure_is_source_unavailable(store: MemoryStore) -> None:
    # litellm raises on a mock_response that is an exception; the judge types it
    grey_pair(store)
    failing = LLMJudge(MODEL, llm=LiteLLMBackend(mock_response=Exception("boom")))
    report = Consolidator(store, settings=ON, judge=failing).run_pass()
    assert [e.category for e in report.errors] == ["source_unavailable"]


def test_a_refused_call_is_reported_as_unknown(store: MemoryStore) -> None:
    # Given a judge whose provider refuses the call (a bad key: asking again cannot help)
    import litellm

    grey_pair(store)
    refused = litellm.AuthenticationError("bad key sk-proj-xyz", "openai", "gpt-4o-mini")
    failing = LLMJudge(MODEL, llm=LiteLLMBackend(mock_response=refused))
    # When a pass runs, the pair is reported, by class and status, and left for the next pass
    report = Consolidator(store, settings=ON, judge=failing).run_pass()
    assert [e.category for e in report.errors] == ["unknown"]
    assert "AuthenticationError (HTTP 401)" in report.errors[0].message
    assert "sk-proj" not in report.errors[0].message and report.merged == ()


def test_the_judge_asks_for_json_within_its_timeout(store: MemoryStore) -> None:
    grey_pair(store)
    llm = FakeLLM.of(json.dumps({"decision": "distinct", "reason": "no"}))
    Consolidator(store, settings=ON, judge=LLMJudge(MODEL, llm=llm, timeout_s=7.5)).run_pass()
    (options,) = llm.options
    assert options["json_object"] and options["timeout_s"] == 7.5
    assert options["model"] == MODEL and options["temperature"] == 0.0


def test_the_settings_point_the_judge_at_a_server() -> None:
    url = "http://127.0.0.1:8080/v1"
    judge = judge_from(ON.model_copy(update={"judge_api_base": url}))
    assert judge is not None and isinstance(judge.llm, LiteLLMBackend)
    assert judge.llm.api_base == url and judge.timeout_s == ON.judge_timeout_s
    assert judge_from(ConsolidatorSettings()) is None


def test_validation_rejects_an_unknown_decision() -> None:
    from consolidate_worker.judge import _validated
    from shared.contract.models import Memory

    m = Memory(id="a", fingerprint="fp0", text="x", created_at=0, updated_at=0, stated_at=0)
    n = m.model_copy(update={"id": "b"})
    with pytest.raises(ValueError):
        _validated('{"decision": "merge"}', m, n)
    assert _validated('```json\n{"decision": "duplicate", "keep": "zz"}\n```', m, n).keep is None
    with pytest.raises(UnknownError):
        LLMJudge(MODEL, retries=0, llm=LiteLLMBackend(mock_response="{}")).decide("ambiguous", m, n)


def test_a_merge_the_cap_stopped_is_asked_again_and_applied(store: MemoryStore) -> None:
    # Given a grey pair judged a duplicate in a pass with no supersede budget left
    old, new = grey_pair(store)
    dup = judge({"decision": "duplicate", "keep": None, "reason": "same"})
    capped = ON.model_copy(update={"max_supersedes_per_run": 0})
    first = Consolidator(store, settings=capped, judge=dup).run_pass()
    assert len(first.capped) == 1 and first.merged == ()
    # When the next pass has budget
    again = Consolidator(store, settings=ON, judge=dup).run_pass()
    # Then the pair is asked again (the verdict was not settled) and merged
    assert again.judge_memo_hits == 0
    assert [(c.id, c.survivor) for c in again.merged] == [(old, new)]


def test_the_same_texts_in_the_other_order_are_a_new_question(store: MemoryStore) -> None:
    # Given room 12 corrected to room 14 by the judge
    old, new = office_pair(store)
    moved = judge({"decision": "contradiction", "keep": new, "reason": "moved"})
    first = Consolidator(store, settings=ON, judge=moved).run_pass()
    assert [(c.id, c.survivor) for c in first.merged] == [(old, new)]
    # When the user moves back (room 12 is stated again, now the newer statement)
    back = store.save("The user's office is in room 12 on the third floor").memory.id
    back_again = judge({"decision": "contradiction", "keep": back, "reason": "moved back"})
    again = Consolidator(store, settings=ON, judge=back_again).run_pass()
    # Then the judge is asked, and room 14 is retired
    assert [d.pair for d in again.judged] and again.judge_memo_hits == 0
    assert store.get(new).memory.superseded_by == back


def test_a_verdict_settled_in_one_bank_is_asked_in_another(store: MemoryStore) -> None:
    grey_pair(store)
    store.save("Use pytest fixtures instead of setUp methods in tests", bank="other")
    store.save("Use pytest fixtures rather than setUp methods in tests", bank="other")
    distinct = judge({"decision": "distinct", "reason": "no"})
    report = Consolidator(store, settings=ON, judge=distinct).run_pass()
    assert sorted(d.bank for d in report.judged) == ["main", "other"]
