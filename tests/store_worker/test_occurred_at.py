"""``occurred_at``: when the remembered thing happened or was said.

Optional on every write path (save, save_many, update), validated with typed errors before
anything is written, kept through write → replay, shown in the recalled block, and preferred
by recall when a question names a time. Logs written before the field existed still load.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ulid import ULID

from shared.contract.clock import FakeClock
from shared.contract.errors import InvalidArgumentError
from shared.contract.models import Memory
from store_worker.core import MemoryStore
from store_worker.storage.validate import MAX_FUTURE_MS

Factory = Callable[..., MemoryStore]
DAY = 86_400_000
NOW = 1_767_225_600_000  # 2026-01-01, FakeClock's default start


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def test_save_keeps_occurred_at_and_a_plain_save_has_none(fresh_store: Factory) -> None:
    store = fresh_store()
    dated = store.save("Caroline went to the LGBTQ support group", occurred_at=ms("2023-05-07"))
    plain = store.save("The user drinks green tea")
    assert dated.memory.occurred_at == ms("2023-05-07")
    assert plain.memory.occurred_at is None
    assert store.get(dated.memory.id).memory.occurred_at == ms("2023-05-07")
    # the field is left out of a line that has none: old readers see the same bytes as before
    assert "occurred_at" not in plain.memory.to_line()


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (-1, "negative"),
        (True, "milliseconds"),
        (1.5, "milliseconds"),
        ("2023-05-07", "milliseconds"),
        (float("nan"), "milliseconds"),
        (NOW + MAX_FUTURE_MS + DAY, "100 years"),
        (NOW * 1000, "100 years"),  # microseconds passed as ms
    ],
)
def test_bad_occurred_at_is_refused_and_writes_nothing(
    fresh_store: Factory, value: Any, why: str
) -> None:
    store = fresh_store()
    kept = store.save("The user drinks green tea").memory
    with pytest.raises(InvalidArgumentError, match=why):
        store.save("The user plays chess", occurred_at=value)
    with pytest.raises(InvalidArgumentError, match=why):
        store.update(kept.id, text="The user drinks oolong", occurred_at=value)
    with pytest.raises(InvalidArgumentError):
        store.save_many([{"text": "one"}, {"text": "two", "occurred_at": value}])
    assert [m.id for m in store.list().memories] == [kept.id]
    assert store.get(kept.id).memory == kept


def test_a_planned_event_may_lie_ahead(fresh_store: Factory) -> None:
    store = fresh_store()
    wedding = NOW + 200 * DAY
    assert store.save("The user's wedding", occurred_at=wedding).memory.occurred_at == wedding
    assert store.save("The epoch", occurred_at=0).memory.occurred_at == 0


def test_update_sets_it_and_leaves_it_when_not_given(fresh_store: Factory) -> None:
    store = fresh_store()
    m = store.save("The user ran a charity race").memory
    dated = store.update(m.id, occurred_at=ms("2023-05-20")).memory
    assert dated.occurred_at == ms("2023-05-20") and dated.revision == m.revision + 1
    assert dated.stated_at == m.stated_at  # a date edit does not re-state the fact
    retagged = store.update(m.id, tags=["sport"]).memory
    assert retagged.occurred_at == ms("2023-05-20")


def test_save_many_carries_occurred_at(fresh_store: Factory) -> None:
    store = fresh_store()
    res = store.save_many(
        [
            {"text": "Melanie painted a sunrise", "occurred_at": ms("2023-05-08")},
            {"text": "Melanie ran a race"},
        ]
    )
    assert [r.memory.occurred_at for r in res.results] == [ms("2023-05-08"), None]


def test_reinforcing_keeps_the_first_known_date(fresh_store: Factory) -> None:
    store = fresh_store()
    first = store.save("Melanie ran a race").memory
    again = store.save("Melanie ran a race", occurred_at=ms("2023-05-08")).memory
    assert again.id == first.id and again.occurred_at == ms("2023-05-08")  # filled in
    third = store.save("Melanie ran a race", occurred_at=ms("2024-01-01")).memory
    assert third.occurred_at == ms("2023-05-08")  # a restatement does not move the event


def test_supersede_and_history_are_unchanged(fresh_store: Factory) -> None:
    store = fresh_store()
    old = store.save("The user's phone is a Pixel 7", occurred_at=ms("2023-01-01")).memory
    new = store.save("The user's phone is a Pixel 9", occurred_at=ms("2025-06-01")).memory
    store.supersede(old.id, new.id)
    retired = store.get(old.id).memory
    assert retired.occurred_at == ms("2023-01-01") and retired.superseded_by == new.id
    assert store.get(new.id).memory.occurred_at == ms("2025-06-01")


def test_a_log_written_before_the_field_still_loads(tmp_path: Path) -> None:
    root = tmp_path / "data"
    store = MemoryStore(root, clock=FakeClock())
    m = store.save("The user drinks green tea").memory
    store.close()
    line = json.loads((root / "main" / "memories.jsonl").read_text().splitlines()[0])
    assert "occurred_at" not in line  # exactly the old format
    again = MemoryStore(root, clock=FakeClock())
    assert again.get(m.id).memory.occurred_at is None
    assert again.recall("green tea").memories[0].memory.id == m.id
    again.close()


def test_a_hand_edited_out_of_range_date_is_not_loaded(tmp_path: Path) -> None:
    root = tmp_path / "data"
    store = MemoryStore(root, clock=FakeClock())
    m = store.save("The user drinks green tea").memory
    store.close()
    log = root / "main" / "memories.jsonl"
    bad = json.loads(log.read_text().splitlines()[0]) | {"id": "bad-one", "occurred_at": 10**400}
    with log.open("a") as f:
        f.write(json.dumps(bad) + "\n")
    again = MemoryStore(root, clock=FakeClock())
    assert [x.id for x in again.list().memories] == [m.id]
    assert again.banks["main"].stats.corrupt == 1
    again.close()


dates = st.none() | st.integers(0, NOW + MAX_FUTURE_MS)
words = st.text(alphabet="abcdefghij ", min_size=3, max_size=40).filter(lambda s: s.strip())


@given(items=st.lists(st.tuples(words, dates, dates), min_size=1, max_size=6))
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_occurred_at_survives_write_then_replay(
    items: list[tuple[str, int | None, int | None]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        store = MemoryStore(root, clock=FakeClock())
        saved: dict[str, Memory] = {}
        for text, when, later in items:
            m = store.save(text, occurred_at=when).memory
            if later is not None:
                m = store.update(m.id, occurred_at=later).memory
            saved[m.id] = m
        saved = {k: store.get(k).memory for k in saved}
        store.close()
        again = MemoryStore(root, clock=FakeClock())
        for mem_id, mem in saved.items():
            assert again.get(mem_id).memory == mem
        index = again.banks["main"].index
        col = index.col("occurred_at")
        for mem_id, mem in saved.items():
            want = -1 if mem.occurred_at is None else mem.occurred_at
            assert col[index.slot_of[mem_id]] == want
        again.close()


# -- recall and the recalled block --------------------------------------------------------


def test_a_question_naming_a_month_prefers_what_happened_then(fresh_store: Factory) -> None:
    # Every turn was saved today; only occurred_at tells May from June.
    store = fresh_store()
    may = store.save("Caroline: I went to a pottery class", occurred_at=ms("2023-05-07"))
    june = store.save("Caroline: another pottery class today", occurred_at=ms("2023-06-20"))
    hits = store.recall("What did Caroline do in May 2023 at the pottery class?")
    assert hits.memories[0].memory.id == may.memory.id
    hits = store.recall("pottery class in June 2023")
    assert hits.memories[0].memory.id == june.memory.id


def test_an_undated_record_still_uses_when_it_was_stated(fresh_store: Factory) -> None:
    clock = FakeClock(start_ms=ms("2025-05-10"))
    store = fresh_store(clock=clock)
    undated = store.save("The user bought a kayak").memory
    clock.advance(days=60)
    dated = store.save("The user sold a kayak", occurred_at=ms("2025-07-01")).memory
    assert store.recall("kayak in May 2025").memories[0].memory.id == undated.id
    assert store.recall("kayak in July 2025").memories[0].memory.id == dated.id


def test_the_recalled_block_shows_when_it_happened(fresh_store: Factory) -> None:
    store = fresh_store()
    store.save("The user publishes blog posts on Tuesdays", entities=["user"])
    store.save("The user ran a charity race", entities=["user"], occurred_at=ms("2023-05-20T09:30"))
    res = store.pre_generate("s1", str(ULID()), 0, [{"role": "user", "content": "race? blog?"}])
    (block,) = res.append_messages
    assert "- [2023-05-20] The user ran a charity race" in block["content"]
    assert "- [2026-01-01] The user publishes blog posts on Tuesdays" in block["content"]
