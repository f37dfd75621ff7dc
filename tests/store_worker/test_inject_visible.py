"""``visible_sessions`` on ``preview`` and ``pre_generate``: the session records of a lineage are
read only from the sessions it names (the recalled block and the pinned floor alike); left
out, the whole lineage is read as before; a malformed one is refused and writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared.contract.errors import InvalidArgumentError
from store_worker.core import MemoryStore

QUERY = "deploy rollout checklist"


@pytest.fixture
def linked(fresh_store: Callable[..., MemoryStore]) -> MemoryStore:
    store = fresh_store()
    store.link_session("sess-child", "sess-parent")
    store.save("Deploy rollout checklist of the parent", scope="session", session_id="sess-parent")
    store.pin(store.save("The parent's pager rota", scope="session", session_id="sess-parent")
              .memory.id)  # fmt: skip
    store.save("Deploy rollout checklist of the child", scope="session", session_id="sess-child")
    store.save("The deploy rollout checklist lives in the wiki")
    return store


def _texts(answer: Any) -> set[str]:
    return {m.memory.text for m in answer.memories}


def test_the_whole_lineage_is_read_when_none_is_named(linked: MemoryStore) -> None:
    shown = _texts(linked.preview(QUERY, session_id="sess-child"))
    assert {
        "Deploy rollout checklist of the parent",
        "The parent's pager rota",
        "Deploy rollout checklist of the child",
        "The deploy rollout checklist lives in the wiki",
    } <= shown


def test_only_the_named_sessions_of_the_lineage_are_read(linked: MemoryStore) -> None:
    expected = {
        "Deploy rollout checklist of the child",
        "The deploy rollout checklist lives in the wiki",
    }
    shown = linked.preview(QUERY, session_id="sess-child", visible_sessions=["sess-child"])
    assert _texts(shown) == expected
    given = linked.pre_generate(
        "sess-child",
        messages=[{"role": "user", "content": QUERY}],
        visible_sessions=("sess-child",),
    )
    assert _texts(given) == expected
    # a session outside the lineage adds nothing: it narrows, never widens
    shown = linked.preview(
        QUERY, session_id="sess-child", visible_sessions=["sess-child", "sess-other"]
    )
    assert _texts(shown) == expected


@pytest.mark.parametrize("bad", ["sess-child", [1], [None, {"a": 1}], {"sess-child": 1}])
def test_a_malformed_list_is_refused_and_writes_nothing(
    linked: MemoryStore, bad: Any, dir_bytes: Callable[[Path], dict[str, bytes | None]]
) -> None:
    with pytest.raises(InvalidArgumentError, match="visible_sessions"):
        linked.preview(QUERY, session_id="sess-child", visible_sessions=bad)
    before = dir_bytes(linked.root)
    with pytest.raises(InvalidArgumentError, match="visible_sessions"):
        linked.pre_generate("sess-new", visible_sessions=bad)
    assert dir_bytes(linked.root) == before
