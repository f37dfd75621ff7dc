"""Injection for a scoped token through a real gateway follows its recall: when the admin hangs
the agent's session below one of its own (``link_session``), the agent's ``preview`` and
``pre_generate`` are given none of the admin's session records (recalled or pinned), and still
their own session's and the global ones; the admin's own session keeps its whole lineage."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.grpc_gateway.conftest import LinkedAgent

APP = LinkedAgent.APP
MINE, KERNEL = LinkedAgent.MINE, LinkedAgent.KERNEL  # the agent's, below the admin's
QUERY = "deploy rollout checklist"


class Linked(LinkedAgent):
    """A gateway over a bank where 12 session records of the admin's session, which the
    agent's session descends from, match the query as the agent's own do; one more of each
    session is pinned (the ambient floor)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.hidden = {
            self.admin.save(
                f"Deploy rollout checklist step {i}: deploy rollout checklist item {i}",
                scope="session",
                session_id=KERNEL,
            ).memory.id
            for i in range(12)
        }
        pinned = self.admin.save("The kernel's pager rota", scope="session", session_id=KERNEL)
        self.admin.pin(pinned.memory.id)
        self.hidden.add(pinned.memory.id)
        self.own = self.agent.save(
            "Deploy notes for this session: rollout checklist paused",
            scope="session",
            session_id=MINE,
        ).memory.id
        self.common = self.agent.save("The deploy rollout checklist lives in the wiki").memory.id
        rota = self.agent.save("This session's pager rota", scope="session", session_id=MINE)
        self.agent.pin(rota.memory.id)
        self.own_pinned = rota.memory.id


@pytest.fixture
def linked(tmp_path: Path) -> Iterator[Linked]:
    made = Linked(tmp_path)
    yield made
    made.close()


def _ids(answer: Any) -> set[str]:
    return {m.memory.id for m in answer.memories}


def _turn(turn: str) -> dict[str, Any]:
    return {
        "turn_id": turn,
        "messages": [{"role": "user", "content": f"What is on the {QUERY}?"}],
        "metadata": {"memory_bank": "main", "project": APP},
    }


def test_the_admins_own_session_is_given_its_session_records(linked: Linked) -> None:
    shown = linked.admin.preview(QUERY, bank="main", session_id=KERNEL)
    assert len(_ids(shown) & linked.hidden) >= 10


def test_the_agents_preview_reads_none_of_the_admins_session_records(linked: Linked) -> None:
    shown = linked.agent.preview(QUERY, bank="main", session_id=MINE)
    assert _ids(shown) & linked.hidden == set()
    assert {linked.own, linked.common, linked.own_pinned} <= _ids(shown)
    assert shown.message is not None
    assert not any(f"#{i}" in shown.message for i in linked.hidden)


def test_the_agents_pre_generate_reads_none_of_the_admins_session_records(
    linked: Linked,
) -> None:
    given = linked.agent.pre_generate(MINE, **_turn("01JEXAMP1E0000000000000002"))
    assert _ids(given) & linked.hidden == set()
    assert {linked.own, linked.common} <= _ids(given)
    block = "\n".join(m["content"] for m in given.append_messages)
    assert not any(f"#{i}" in block for i in linked.hidden)


def test_a_new_sub_session_of_the_agents_reads_none_on_its_first_turn(linked: Linked) -> None:
    """Below the linked session, before its first write makes it the agent's."""
    child = linked.agent.pre_generate(
        "sess-agent-child", parent_session_id=MINE, **_turn("01JEXAMP1E0000000000000001")
    )
    assert _ids(child) & linked.hidden == set()
    assert {linked.own, linked.common} <= _ids(child)


def test_injection_agrees_with_the_agents_recall(linked: Linked) -> None:
    recalled = linked.agent.recall(QUERY, session_id=MINE, project=APP, limit=50)
    assert _ids(recalled) & linked.hidden == set()
    shown = linked.agent.preview(QUERY, bank="main", session_id=MINE)
    matched = {m.memory.id for m in shown.memories if m.why is None or not m.why.ambient}
    assert matched <= _ids(recalled)
    for id in _ids(shown):  # the floor's pinned ones too: each one it may read
        assert linked.agent.get(id, bank="main").memory.id == id


def test_the_admins_injection_for_the_agents_session_is_the_agents(linked: Linked) -> None:
    """The block lands in the agent's prompt, whoever asks for it."""
    shown = linked.admin.preview(QUERY, bank="main", session_id=MINE)
    assert _ids(shown) & linked.hidden == set()
    assert {linked.own, linked.common} <= _ids(shown)
    # the admin's recall still sees everything
    recalled = linked.admin.recall(QUERY, session_id=MINE, project=APP, limit=50)
    assert len(_ids(recalled) & linked.hidden) >= 10


def test_the_admins_first_write_through_the_gateway_still_claims_a_known_session(
    linked: Linked,
) -> None:
    """A session the store knew unclaimed (the kernel's, in process) is recorded as the
    admin's at its first write through the gateway, as before injection asked its owner."""
    linked.store.pre_generate("sess-in-process")
    assert linked.store.principals.owners.get("sess-in-process") is None
    linked.admin.pre_generate("sess-in-process", **_turn("01JEXAMP1E0000000000000003"))
    assert linked.store.principals.owners.get("sess-in-process") == "admin"
