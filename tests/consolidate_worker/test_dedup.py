"""Pairwise judgement details the golden plans do not spell out: scorers and veto edges."""

from __future__ import annotations

import pytest

from consolidate_worker.dedup import Features, is_duplicate, score, veto
from shared.contract.models import Memory
from shared.text import fingerprint


def feat(text: str, mem_id: str = "a", **kw: object) -> Features:
    return Features(
        Memory(
            id=mem_id,
            fingerprint=fingerprint(text),
            text=text,
            created_at=0,
            updated_at=0,
            stated_at=0,
            **kw,  # type: ignore[arg-type]
        )
    )


def test_a_subset_is_no_duplicate_although_token_set_says_100() -> None:
    s = score(feat("user prefers tabs"), feat("user prefers tabs over spaces in python"))
    assert s.token_set == 100
    assert not is_duplicate(s, threshold=88, min_length_ratio=0.75)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The user doesn't like meetings before ten", "The user does not like meetings before ten"),
        ("The user won’t use tabs", "The user won't use tabs"),  # typographic apostrophe
        ("The user codes in Python daily", "The user codes in python daily"),  # case only
        ("Alice manages Bob", "alice manages bob"),  # same order, different case
        ("Standups are on Mondays", "Standups are on Monday"),  # plural weekday
        ("Never force-push to main", "Don't force-push to main"),  # "never" is a negation
        ("The user never drinks coffee", "The user does not drink coffee"),
        ("The user prefers dark mode in the editor", "The user prefers dark mode in their editor"),
    ],
)
def test_same_meaning_is_not_vetoed(a: str, b: str) -> None:
    assert veto(feat(a), feat(b, "b")) is None


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        ("The user never skips code review", "The user never not skips code review", "polarity"),
        ("The user enabled autosave", "The user disabled autosave", "polarity"),
        ("The user likes dark mode", "The user dislikes dark mode", "polarity"),
        # a negating prefix, an opposed word, a tense change: a correction, not a restatement
        ("The user is available on weekends", "The user is unavailable on weekends", "polarity"),
        ("The user agrees with the plan", "The user disagrees with the plan", "polarity"),
        ("The build uses the min setting", "The build uses the max setting", "polarity"),
        ("The standup moved earlier", "The standup moved later", "polarity"),
        ("The user is vegan", "The user was vegan", "polarity"),
        ("The user has a dog named Rex", "The user had a dog named Rex", "polarity"),
        ("The user works at Google", "The user worked at Google", "polarity"),
        ("The user tries the beta", "The user tried the beta", "polarity"),
        ("Backups run at 02:00", "Backups run at 03:00", "numbers-or-dates"),
        ("The budget is 1,000 euros", "The budget is 1,500 euros", "numbers-or-dates"),
        ("Erin asked Frank to review", "Frank asked Erin to review", "role-swap"),
        ("Grace owns the billing service", "Heidi owns the billing service", "different-entities"),
    ],
)
def test_different_meaning_is_vetoed_both_ways(a: str, b: str, reason: str) -> None:
    assert veto(feat(a), feat(b, "b")) == reason
    assert veto(feat(b, "b"), feat(a)) == reason


def test_entity_handles_count_as_names() -> None:
    # lowercase text, but the record says "acme" and "globex" are entities
    a = feat("acme acquired globex last year", entities=("acme", "globex"))
    b = feat("globex acquired acme last year", "b", entities=("acme", "globex"))
    assert veto(a, b) == "role-swap"
