"""The near-match check's notion of "the same fact" (shared/client/nearmatch.py): a different
number, date, id or name is a different fact, never a near-duplicate; a restatement still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.client.nearmatch import NEAR_MATCH, distinct, near_matches, similarity
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore

DIFFERENT = {
    # the report: a timestamp changed, 0.95 and a confirmation asked
    "timestamp": ("noted at 1796582674965", "noted at 1796582684737"),
    "number": ("The team has 5 engineers on call", "The team has 6 engineers on call"),
    "version": ("The service runs Python 3.11", "The service runs Python 3.12"),
    "date": ("The release is planned for 2026-12-06", "The release is planned for 2026-12-13"),
    "time": ("The standup starts at 09:30 every day", "The standup starts at 10:15 every day"),
    "weekday": ("deploys are frozen on friday", "deploys are frozen on monday"),
    "month": ("The audit happens every January", "The audit happens every October"),
    "name": ("Alice owns the billing service", "Bob owns the billing service"),
    "place": ("The user lives in Lisbon", "The user lives in Porto"),
    "ulid": (
        "job 01KDVDNA051FYCMTE6FKTCCB70 finished cleanly",
        "job 01KDVDQ7ZX9M3RTB2K5W8HJN4P finished cleanly",
    ),
    "hex hash": ("deployed commit 3f9a2c1e to staging", "deployed commit 8b7e6d0a to staging"),
    "hex without a digit": ("build deadbeef passed", "build cafebabe passed"),
    "uuid": (
        "request 123e4567-e89b-12d3-a456-426614174000 timed out",
        "request 9b2f6c1e-0d4a-4f7e-8c3b-5a6d7e8f9a0b timed out",
    ),
}

SAME = {
    "restated": ("The user prefers tabs", "the user prefers tabs."),
    "a detail added": (
        "The user prefers tabs over spaces",
        "The user prefers tabs over spaces in Python",
    ),
    "a word changed": ("The user likes tea", "The user likes coffee"),  # a change of mind
    "same numbers": ("The team has 5 engineers", "The team now has 5 engineers"),
    "same names": ("Alice owns the billing service", "Alice owns the billing services"),
    "a word added": (
        "The user prefers dark mode in the editor",
        "The user prefers dark mode in the code editor",
    ),
}


@pytest.mark.parametrize(("a", "b"), DIFFERENT.values(), ids=DIFFERENT.keys())
def test_a_different_number_date_id_or_name_is_never_near(a: str, b: str) -> None:
    assert distinct(a, b) and distinct(b, a)
    assert similarity(a, b) < NEAR_MATCH and similarity(b, a) < NEAR_MATCH


@pytest.mark.parametrize(("a", "b"), SAME.values(), ids=SAME.keys())
def test_a_true_near_duplicate_is_still_caught(a: str, b: str) -> None:
    assert not distinct(a, b)
    assert similarity(a, b) >= NEAR_MATCH


def test_near_matches_skips_a_record_that_differs_only_in_a_timestamp(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "data", clock=FakeClock())
    store.save("noted at 1796582674965")
    kept = store.save("The user prefers tabs over spaces").memory

    def near(text: str) -> list[str]:
        found, _ = near_matches(
            store, text, bank=None, session_id=None, project=None,
            threshold=NEAR_MATCH, include_pending=False,
        )  # fmt: skip
        return [c.memory.id for c in found]

    assert near("noted at 1796582684737") == []
    assert near("The user prefers tabs over spaces in Python") == [kept.id]
