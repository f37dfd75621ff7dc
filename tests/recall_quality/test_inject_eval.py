"""The injection eval's scoring and its run on a tiny conversation built here; the real data
set is never read by the tests."""

from __future__ import annotations

from tests.recall_quality import inject as I
from tests.recall_quality import locomo as L
from tests.recall_quality.test_locomo_metrics import tiny_doc


def test_judge_counts_precision_and_coverage_and_nothing_as_zero() -> None:
    owners = {"a": ["D1:1"], "b": ["D1:2"], "c": ["D1:3", "D2:1"]}
    assert I.judge([], owners, ["D1:1"]) == (0.0, 0.0)
    assert I.judge(["a", "b"], owners, ["D1:1", "D2:1"]) == (0.5, 0.5)
    assert I.judge(["c"], owners, ["D1:3", "D2:1"]) == (1.0, 1.0)


def test_the_ordinary_prompts_are_many_and_distinct() -> None:
    prompts = I.ordinary_prompts()
    assert len(prompts) >= 100
    assert len(set(prompts)) == len(prompts)


def test_a_run_reports_every_part_and_marks_the_default() -> None:
    conv = L.parse_conversation("tiny", tiny_doc())
    other = L.parse_conversation("other", {**tiny_doc(), "speaker_a": "Cy"})
    report = I.evaluate([conv, other], ["How do I reverse a linked list in Python?"])
    assert report["on_topic"]["n"] == 2 * len(conv.questions)
    assert 0.0 <= report["on_topic"]["precision"] <= 1.0
    assert report["ordinary_prompts"]["memories_per_turn"] == 0.0
    assert sum(pt["default"] for pt in report["curve"]) == 1.0
    off = next(pt for pt in report["curve"] if pt["min_relevance"] == 0.0)
    assert off["memories_per_turn"] >= report["on_topic"]["memories_per_turn"]
