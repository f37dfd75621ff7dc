"""Promote-to-rule: often re-observed memories become lines of the ``learned`` rule, once."""

from __future__ import annotations

from consolidate_worker.core import Consolidator
from consolidate_worker.settings import ConsolidatorSettings
from store_worker.core import MemoryStore

PROMOTE = ConsolidatorSettings(promote_corroboration_threshold=2)


def observe(store: MemoryStore, text: str, times: int, **kw: str) -> None:
    for _ in range(times):
        store.save(text, **kw)


def learned(store: MemoryStore) -> str:
    rules = {r.name: r.content for r in store.rule_list().rules}
    return rules.get("learned", "")


def test_often_observed_global_memories_are_appended_once(store: MemoryStore) -> None:
    # Given a fact seen three times, one seen once, and a project fact seen three times
    observe(store, "Answer in British English", 3)
    observe(store, "The user likes green tea", 1)
    observe(store, "Run make lint before pushing", 3, scope="project", project="/w/app")
    store.rule_set("learned", "- Keep answers short\n")
    consolidator = Consolidator(store, settings=PROMOTE)
    # When a pass runs
    report = consolidator.run_pass()
    # Then only the global one is appended, after the existing line
    assert [(p.line, p.added) for p in report.promoted] == [("- Answer in British English", True)]
    assert learned(store) == "- Keep answers short\n- Answer in British English\n"
    # And the next pass, reading the rule first, does not add it again
    assert consolidator.run_pass().promoted == ()
    assert learned(store).count("British English") == 1


def test_a_line_already_in_the_rule_is_matched_by_fingerprint(store: MemoryStore) -> None:
    observe(store, "Answer in British English.", 3)
    store.rule_set("learned", "* answer in british english\n")
    assert Consolidator(store, settings=PROMOTE).run_pass().promoted == ()


def test_dry_run_proposes_without_writing(store: MemoryStore) -> None:
    observe(store, "Answer in British English", 3)
    report = Consolidator(store, settings=PROMOTE).run_pass(dry_run=True)
    assert [p.added for p in report.promoted] == [False]
    assert learned(store) == ""


def test_promotion_is_off_by_default(store: MemoryStore) -> None:
    observe(store, "Answer in British English", 5)
    assert Consolidator(store).run_pass().promoted == ()
