"""Date phrases in queries and dated mentions in stored text (shared/text/__init__.py): a
question about last May reaches the memory dated then."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.text import date_tokens, query_dates, query_tokens, tokenize

NOW = int(datetime(2026, 11, 20, 12, tzinfo=UTC).timestamp() * 1000)


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).date().isoformat()


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did I do last May?", "2026-05-01", "2026-06-01"),
        ("what happened last november", "2025-11-01", "2025-12-01"),  # "last" = before now
        ("what happened in november", "2026-11-01", "2026-12-01"),
        ("Which race did I run in March 2025?", "2025-03-01", "2025-04-01"),
        ("What went wrong on 18 March 2025?", "2025-03-18", "2025-03-19"),
        ("How did my marathon go this month?", "2026-11-01", "2026-12-01"),
        ("anything from last year", "2025-01-01", "2026-01-01"),
        ("what did we ship in 2025", "2025-01-01", "2026-01-01"),
        ("last summer", "2026-06-01", "2026-09-01"),
        ("last winter", "2025-12-01", "2026-03-01"),
        ("O que aconteceu em junho de 2026?", "2026-06-01", "2026-07-01"),
        ("o que fiz no mês passado", "2026-10-01", "2026-11-01"),
        ("May 12, 2025", "2025-05-12", "2025-05-13"),
    ],
)
def test_query_dates_windows(query: str, start: str, end: str) -> None:
    window = query_dates(query, NOW)
    assert window is not None
    assert (_day(window.start_ms), _day(window.end_ms)) == (start, end)


def test_query_dates_months_and_rest() -> None:
    window = query_dates("Where did I travel in August 2025?", NOW)
    assert window is not None
    assert window.months == ("ym202508",)
    assert "august" not in window.rest and "travel" in window.rest
    summer = query_dates("summer 2025", NOW)
    assert summer is not None and summer.months == ("ym202506", "ym202507", "ym202508")


@pytest.mark.parametrize("query", ["May I ask something?", "we march on", "what is my name", ""])
def test_query_dates_ignores_non_dates(query: str) -> None:
    assert query_dates(query, NOW) is None


def test_date_tokens_need_a_year() -> None:
    assert date_tokens("We went to Japan from 2 to 16 May 2026.") == ["ym202605"]
    assert date_tokens("deployed 2025-03-18") == ["ym202503"]
    assert date_tokens("A festa é a 15 de agosto de 2025.") == ["ym202508"]
    assert date_tokens("Her birthday is 3 April.") == []
    assert "ym202605" in tokenize("The trip started on 2 May 2026")


def test_irregular_past_forms_meet_their_base() -> None:
    assert tokenize("The user ran a race") == tokenize("The user run a race")
    assert query_tokens("what did I sell") == ["sell", "user"]
    assert tokenize("left knee") == ["left", "knee"]  # ambiguous forms stay as they are
