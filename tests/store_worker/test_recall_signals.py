"""Recall's time and supersede signals (``recall/signals.py``): dated questions,
successors that answer for their predecessors, and superseded records never ranked above
what replaced them. The golden eval measures these; these tests pin the behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore
from store_worker.recall import scoring as recall_mod


def _ms(day: str) -> int:
    return int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start_ms=_ms("2025-01-01"), tick=0)


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path, clock=clock)
    yield s
    s.close()


def _save(store: MemoryStore, clock: FakeClock, day: str, text: str, **kw: object) -> str:
    clock.ms = _ms(day)
    return store.save(text, **kw).memory.id  # type: ignore[arg-type]


def _ids(store: MemoryStore, query: str, **kw: object) -> list[str]:
    return [h.memory.id for h in store.recall(query, **kw).memories]  # type: ignore[arg-type]


def test_a_dated_question_reaches_the_memory_stated_then(
    store: MemoryStore, clock: FakeClock
) -> None:
    trip = _save(store, clock, "2026-05-20", "The user travelled around Japan with Sofia.")
    _save(store, clock, "2026-10-02", "The user travelled to Porto for a wedding.")
    _save(store, clock, "2026-11-10", "The user bought new running shoes.")
    clock.ms = _ms("2026-11-20")
    assert _ids(store, "What did I do last May?")[0] == trip
    assert _ids(store, "where did I travel in May 2026")[0] == trip


def test_a_text_date_counts_even_when_stated_later(store: MemoryStore, clock: FakeClock) -> None:
    told = _save(
        store, clock, "2026-09-01", "The user ran the Lisbon half marathon on 16 March 2025."
    )
    _save(store, clock, "2025-03-02", "The user runs every Sunday morning.")
    clock.ms = _ms("2026-11-20")
    assert _ids(store, "which race did I run in March 2025")[0] == told


def test_superseded_never_ranks_above_its_successor(store: MemoryStore, clock: FakeClock) -> None:
    old = _save(store, clock, "2025-01-05", "The user's phone is a Google Pixel 7 phone.")
    new = _save(store, clock, "2025-11-28", "The user switched to an iPhone 15.")
    store.supersede(old, new)
    clock.ms = _ms("2026-11-20")
    current = _ids(store, "which phone do I have")
    assert current[0] == new and old not in current  # the old wording reaches the successor
    history = _ids(store, "which phone do I have", include_superseded=True)
    assert history.index(new) < history.index(old)


def test_the_guard_lifts_a_successor_that_matched_nothing(
    store: MemoryStore, clock: FakeClock
) -> None:
    old = _save(store, clock, "2025-07-01", "The user is reading Project Hail Mary.")
    new = _save(store, clock, "2026-09-14", "Currently on The Ministry for the Future.")
    store.supersede(old, new)
    clock.ms = _ms("2026-11-20")
    history = _ids(store, "what was I doing in July 2025", include_superseded=True)
    assert history.index(new) < history.index(old)
    for mode in ("lexical", "hybrid"):
        ranked = _ids(store, "Project Hail Mary", include_superseded=True, mode=mode)
        assert ranked.index(new) < ranked.index(old)


def test_a_first_name_matches_a_full_name_entity(store: MemoryStore, clock: FakeClock) -> None:
    sofia = _save(
        store, clock, "2025-01-02", "Loves architecture books.", entities=["sofia-almeida"]
    )
    _save(store, clock, "2025-01-03", "The user likes books about trains.")
    assert _ids(store, "what books does Sofia like")[0] == sofia


def test_tuning_is_passed_to_the_store_not_patched(tmp_path: Path, clock: FakeClock) -> None:
    """The eval's --set knobs reach recall through ``MemoryStore(recall_tuning=...)``: with no
    weight on dates, a date-only question finds nothing; the default store is untouched."""
    tuned = MemoryStore(
        tmp_path / "tuned", clock=clock, recall_tuning=recall_mod.Tuning(w_date=0.0)
    )
    plain = MemoryStore(tmp_path / "plain", clock=clock)
    for store in (tuned, plain):
        _save(store, clock, "2026-05-20", "The user travelled around Japan with Sofia.")
    clock.ms = _ms("2026-11-20")
    assert _ids(plain, "what did we do last May")
    assert _ids(tuned, "what did we do last May") == []
