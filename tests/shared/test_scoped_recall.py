"""A scoped recall's refill over a real store, in process: how many calls it makes and what
it asks for stay bounded however many hidden records outrank the visible ones, and a page
no hidden record reaches is the store's own answer, budget included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from shared.client.scoped import ADMIN, Scoped, SessionOwners
from shared.contract import ops
from shared.contract.api import StoreAPI
from shared.contract.clock import FakeClock
from shared.contract.op import Op
from shared.contract.principal import Principal
from store_worker.core import MemoryStore

R = TypeVar("R")
QUERY = "deploy rollout checklist"


class Counted(StoreAPI):
    """The store, with the recalls made of it kept."""

    def __init__(self, store: StoreAPI) -> None:
        self.inner = store
        self.recalls: list[ops.Recall] = []

    def call(self, op: Op[R]) -> R:
        if isinstance(op, ops.Recall):
            self.recalls.append(op)
        return self.inner.call(op)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    opened = MemoryStore(tmp_path / "data", clock=FakeClock())
    yield opened
    opened.close()


def _principals(store: MemoryStore) -> tuple[Scoped, Scoped, Counted]:
    owners = SessionOwners(store)
    counted = Counted(store)
    agent = Scoped(counted, Principal("agent", banks=("main",)), owners)
    admin = Scoped(store, ADMIN, owners)
    agent.pre_generate("sess-agent")
    admin.pre_generate("sess-kernel")
    admin.link_session("sess-agent", "sess-kernel")
    return agent, admin, counted


def _hidden(admin: Any, n: int) -> None:
    items = [
        {"text": f"Deploy rollout checklist {i}: deploy rollout checklist", "scope": "session",
         "session_id": "sess-kernel"}
        for i in range(n)
    ]  # fmt: skip
    admin.save_many(items)


def test_the_refill_is_bounded_by_the_stores_cap(store: MemoryStore) -> None:
    agent, admin, counted = _principals(store)
    _hidden(admin, 620)
    agent.save("A deploy needs a checklist")
    counted.recalls.clear()
    found = agent.recall(QUERY, session_id="sess-agent", limit=5, token_budget=10_000)
    # 620 hidden records outrank the one it sees: past the cap of 500 the page stays short
    assert found.memories == ()
    assert len(counted.recalls) <= 10
    assert max(r.limit or 0 for r in counted.recalls) == 500


def test_a_page_no_hidden_record_reaches_is_the_stores_answer(tmp_path: Path) -> None:
    """Under budget pressure the store weighs project records toward recency: a page it cut
    short with no hidden record in reach is kept as it answered it."""
    clock = FakeClock()
    store = MemoryStore(tmp_path / "data", clock=clock)
    try:
        agent, admin, counted = _principals(store)
        for i in range(4):
            admin.save(f"Deploy rollout checklist {i} for the release", type="project")
        clock.advance(days=120)
        for i in range(4):
            admin.save(f"The deploy checklist {i} was calm")
        admin.save_many([{"text": f"The weather on day {i} was fine"} for i in range(40)])
        _hidden(admin, 20)
        plain = _ids(admin.recall(QUERY, limit=5))
        budget = sum(h.memory.tokens for h in admin.recall(QUERY, limit=2).memories)
        pressed = _ids(admin.recall(QUERY, limit=5, token_budget=budget))
        assert pressed != plain[: len(pressed)]  # the store re-weighed under pressure
        assert len(pressed) < 5
        # no session named: the kernel's records are out of the store's own reach
        assert _ids(agent.recall(QUERY, limit=5, token_budget=budget)) == pressed
        counted.recalls.clear()
        # the kernel's records outrank: refilled, the same visible records in the same order
        mine = agent.recall(QUERY, session_id="sess-agent", limit=5)
        assert _ids(mine) == plain
        assert len(counted.recalls) >= 2
    finally:
        store.close()


def _ids(found: Any) -> list[str]:
    return [h.memory.id for h in found.memories]
