"""A scoped token's recall through a real gateway fills its page: where records it may not
see (another principal's session in its lineage) outrank its own, it gets the hits the
admin's recall gives once those are set aside, in the admin's order, with ``limit``,
``token_budget`` and ``min_relevance`` counted over what it sees only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from grpc_gateway.auth import bearer_metadata
from shared.contract import errors
from shared.contract.models import RecallResponse
from shared.proto.memory.v1 import memory_pb2 as pb
from shared.proto.memory.v1 import memory_pb2_grpc as pb_grpc
from tests.grpc_gateway.conftest import LinkedAgent

APP = LinkedAgent.APP
MINE, KERNEL = LinkedAgent.MINE, LinkedAgent.KERNEL  # the agent's, below the admin's
QUERY = "deploy rollout checklist"


class Bank(LinkedAgent):
    """A gateway over a bank where 20 records of the admin's session, which the agent's
    session descends from, outrank the 6 the agent sees (2 global, 2 of its project, 2 of
    its own session)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.hidden = {
            self.admin.save(
                f"Deploy rollout checklist step {i}: deploy rollout checklist item {i}",
                scope="session",
                session_id=KERNEL,
            ).memory.id
            for i in range(20)
        }
        visible = [
            ("Deploy rollout checklist lives in the wiki", {}),
            ("The checklist for a deploy is short", {}),
            ("Rollout of the app goes through staging first", {"project": APP}),
            ("A deploy of the app needs the on-call to agree", {"project": APP}),
            ("Deploy notes for this session: rollout paused", {"session_id": MINE}),
            ("This session's checklist was reviewed", {"session_id": MINE}),
        ]
        self.visible = set()
        for text, where in visible:
            scope = "project" if "project" in where else "session" if where else "global"
            saved = self.agent.save(text, scope=scope, **where)
            self.visible.add(saved.memory.id)

    def ranked(self, **kw: object) -> RecallResponse:
        """The admin's recall in the agent's context, deep enough to hold everything."""
        return self.admin.recall(QUERY, session_id=MINE, project=APP, limit=50, **kw)


@pytest.fixture
def bank(tmp_path: Path) -> Iterator[Bank]:
    made = Bank(tmp_path)
    yield made
    made.close()


def _ids(found: RecallResponse) -> list[str]:
    return [h.memory.id for h in found.memories]


def test_the_bank_ranks_every_hidden_record_above_the_visible_ones(bank: Bank) -> None:
    ranked = _ids(bank.ranked())
    assert set(ranked[:20]) == bank.hidden
    assert set(ranked[20:]) == bank.visible


def test_a_scoped_page_is_full_and_in_the_admins_order(bank: Bank) -> None:
    order = [i for i in _ids(bank.ranked()) if i in bank.visible]
    found = bank.agent.recall(QUERY, session_id=MINE, project=APP, limit=5)
    assert _ids(found) == order[:5]
    admin_scores = {h.memory.id: h.score for h in bank.ranked().memories}
    # the admin's scores (the fake clock moves a little between the two calls)
    expected = [admin_scores[i] for i in order[:5]]
    assert [h.score for h in found.memories] == pytest.approx(expected, rel=1e-6)
    # asked for more than it sees: every visible one, once
    found = bank.agent.recall(QUERY, session_id=MINE, project=APP, limit=40)
    assert _ids(found) == order
    # a page that needed no refill is the store's own answer
    found = bank.agent.recall(QUERY, project=APP, limit=2)
    assert _ids(found) == _ids(bank.admin.recall(QUERY, project=APP, limit=2))


def test_the_token_budget_counts_only_the_visible_hits(bank: Bank) -> None:
    hits = [h for h in bank.ranked().memories if h.memory.id in bank.visible]
    budget = sum(h.memory.tokens for h in hits[:3])
    found = bank.agent.recall(QUERY, session_id=MINE, project=APP, limit=5, token_budget=budget)
    expected, used = [], 0  # the store's fit: top down, a hit that does not fit passed over
    for h in hits:
        if used + h.memory.tokens <= budget:
            expected.append(h.memory.id)
            used += h.memory.tokens
    assert len(expected) >= 3
    assert _ids(found) == expected[:5]
    assert sum(h.memory.tokens for h in found.memories) <= budget
    # a budget no visible hit fits is refused, naming a visible hit's size
    smallest = min(h.memory.tokens for h in hits)
    with pytest.raises(errors.BudgetExceededError, match=f"smallest is {smallest} tokens"):
        bank.agent.recall(QUERY, session_id=MINE, project=APP, limit=5, token_budget=smallest - 1)


def test_min_relevance_is_applied_over_the_visible_page(bank: Bank) -> None:
    hits = [h for h in bank.ranked().memories if h.memory.id in bank.visible]
    floor = sorted(h.relevance_score for h in hits[:5])[1]  # keeps 4 of the first 5
    found = bank.agent.recall(QUERY, session_id=MINE, project=APP, limit=5, min_relevance=floor)
    assert _ids(found) == [h.memory.id for h in hits[:5] if h.relevance_score >= floor]
    with pytest.raises(errors.InvalidArgumentError, match="min_relevance"):
        bank.agent.recall(QUERY, session_id=MINE, project=APP, limit=5, min_relevance=2)


def test_memory_v1_recall_for_a_scoped_token_fills_its_page(bank: Bank) -> None:
    """memory.v1's Recall always runs under a token budget (the default one)."""
    order = [i for i in _ids(bank.ranked()) if i in bank.visible]
    channel = grpc.insecure_channel(bank.address)
    try:
        stub = pb_grpc.MemoryServiceStub(channel)
        request = pb.RecallRequest(query=QUERY, session_id=MINE, working_directory=APP, limit=5)
        answer = stub.Recall(request, metadata=bearer_metadata(bank.token), timeout=10)
    finally:
        channel.close()
    assert [r.id for r in answer.records] == order[:5]
