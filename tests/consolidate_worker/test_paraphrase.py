"""The judge's paraphrase tier and its memo: pairs close by meaning, far apart in wording.

The store's semantic arm here is the deterministic ``FakeEmbedder`` with a low cosine floor, so
these tests pin the tier's mechanics; the recall eval (``hybrid-consolidated``) runs the same
tier over a real model's vectors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from consolidate_worker.core import JUDGE_MEMO_KEY, OWNER, Consolidator
from consolidate_worker.judge import LLMJudge
from consolidate_worker.settings import ConsolidatorSettings
from shared.llm import LiteLLMBackend
from store_worker.core import MemoryStore
from store_worker.recall.embed import FakeEmbedder

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import

MODEL = "openai/gpt-4o-mini"
ON = ConsolidatorSettings(judge_enabled=True, judge_model=MODEL, judge_semantic_min=0.4)
OLD = "The user has been vegetarian since January 2023."
NEW = "The user does not eat meat and has been vegetarian for years."


def judge(reply: dict[str, Any]) -> LLMJudge:
    return LLMJudge(MODEL, llm=LiteLLMBackend(mock_response=json.dumps(reply)))


@pytest.fixture
def embedded(fresh_store: Callable[..., MemoryStore]) -> MemoryStore:
    return fresh_store(embedder=FakeEmbedder(dim=256))


def pair(store: MemoryStore, **kwargs: Any) -> tuple[str, str]:
    old = store.save(OLD, **kwargs).memory.id
    new = store.save(NEW, **kwargs).memory.id
    return old, new


def test_a_paraphrase_pair_reaches_the_judge_and_merges(embedded: MemoryStore) -> None:
    # Given two statements of one fact that share little wording (vetoed for polarity and a
    # date: the deterministic tier alone leaves them both)
    old, new = pair(embedded)
    assert Consolidator(embedded).run_pass().merged == ()
    # When a pass runs with the judge on, the judge keeping the older, dated statement
    verdict = {"decision": "duplicate", "keep": old, "reason": "same diet, the older is dated"}
    report = Consolidator(embedded, settings=ON, judge=judge(verdict)).run_pass()
    # Then the judge was asked about that pair as a paraphrase and the newer one is retired
    assert [(d.kind, d.decision) for d in report.judged] == [("paraphrase", "duplicate")]
    assert [(c.id, c.survivor) for c in report.merged] == [(new, old)]
    assert embedded.get(new).memory.superseded_by == old
    assert embedded.get(old).memory.corroboration == 1  # a restatement reinforces


def test_a_distinct_paraphrase_verdict_is_asked_once(embedded: MemoryStore) -> None:
    # Given a pair the judge calls distinct
    pair(embedded)
    distinct = judge({"decision": "distinct", "reason": "no"})
    first = Consolidator(embedded, settings=ON, judge=distinct).run_pass()
    assert [d.decision for d in first.judged] == ["distinct"] and first.judge_memo_hits == 0
    # When later passes run (a new consolidator: the memo lives in the store's sibling state)
    again = Consolidator(embedded, settings=ON, judge=distinct).run_pass()
    # Then the pair is not asked again
    assert again.judged == () and again.judge_memo_hits == 1
    assert len(embedded.state_get(OWNER, JUDGE_MEMO_KEY) or {}) == 1


def test_an_edited_text_is_asked_again(embedded: MemoryStore) -> None:
    old, _ = pair(embedded)
    distinct = judge({"decision": "distinct", "reason": "no"})
    Consolidator(embedded, settings=ON, judge=distinct).run_pass()
    embedded.update(old, text="The user has been a vegetarian since January 2023.")
    report = Consolidator(embedded, settings=ON, judge=distinct).run_pass()
    assert [d.kind for d in report.judged] == ["paraphrase"] and report.judge_memo_hits == 0


def test_a_dry_run_keeps_no_verdict(embedded: MemoryStore) -> None:
    pair(embedded)
    distinct = judge({"decision": "distinct", "reason": "no"})
    dry = Consolidator(embedded, settings=ON, judge=distinct).run_pass(dry_run=True)
    assert len(dry.judged) == 1
    assert embedded.state_get(OWNER, JUDGE_MEMO_KEY) is None


def test_the_memo_is_bounded(embedded: MemoryStore) -> None:
    pair(embedded)
    settings = ON.model_copy(update={"judge_memo_size": 0})
    distinct = judge({"decision": "distinct", "reason": "no"})
    Consolidator(embedded, settings=settings, judge=distinct).run_pass()
    assert embedded.state_get(OWNER, JUDGE_MEMO_KEY) == []


def test_below_the_cosine_floor_nothing_is_asked(embedded: MemoryStore) -> None:
    pair(embedded)
    settings = ON.model_copy(update={"judge_semantic_min": 0.95})
    dup = judge({"decision": "duplicate", "keep": None, "reason": "same"})
    assert Consolidator(embedded, settings=settings, judge=dup).run_pass().judged == ()


def test_without_an_embedder_there_are_no_paraphrase_asks(store: MemoryStore) -> None:
    pair(store)
    dup = judge({"decision": "duplicate", "keep": None, "reason": "same"})
    assert Consolidator(store, settings=ON, judge=dup).run_pass().judged == ()


def test_places_still_veto_a_paraphrase(embedded: MemoryStore) -> None:
    # Given the same two texts, but one a project fact and the other about the user
    embedded.save(OLD, type="user")
    embedded.save(NEW, type="project")
    dup = judge({"decision": "duplicate", "keep": None, "reason": "same"})
    # Then the judge is never asked: a type is a place, not a wording
    assert Consolidator(embedded, settings=ON, judge=dup).run_pass().judged == ()


def test_judge_calls_stay_capped_with_paraphrases(embedded: MemoryStore) -> None:
    pair(embedded)
    embedded.save("The user has eaten no meat since 2023 and is vegetarian.")
    settings = ON.model_copy(update={"judge_max_calls": 1})
    distinct = judge({"decision": "distinct", "reason": "no"})
    report = Consolidator(embedded, settings=settings, judge=distinct).run_pass()
    assert len(report.judged) == 1
