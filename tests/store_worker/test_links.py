"""``[[slug]]`` links: accepted even when dangling, and queryable (store_worker/recall/links.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.contract import errors
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore


@pytest.fixture
def fresh_store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "data", clock=FakeClock())


def test_a_forward_reference_is_accepted_and_listed_as_dangling(fresh_store: MemoryStore) -> None:
    saved = fresh_store.save("Waiting on [[db-migration]] and [[Release Plan]]", id="waiting")
    assert saved.memory.links == ("db-migration", "release-plan")
    dangling = fresh_store.dangling().links
    assert [(d.source, d.target, d.reason) for d in dangling] == [
        ("waiting", "db-migration", "missing"),
        ("waiting", "release-plan", "missing"),
    ]
    fresh_store.save("The migration is done", id="db-migration")
    assert [d.target for d in fresh_store.dangling().links] == ["release-plan"]


def test_a_link_to_a_retired_record_dangles_with_where_it_went(fresh_store: MemoryStore) -> None:
    fresh_store.save("Old runbook", id="runbook")
    fresh_store.save("New runbook", id="runbook-v2")
    fresh_store.save("See [[runbook]]", id="pointer")
    fresh_store.save("Also [[gone]]", id="pointer-2")
    fresh_store.save("Soon gone", id="gone")
    fresh_store.supersede("runbook", "runbook-v2")
    fresh_store.delete("gone")
    found = {d.source: d for d in fresh_store.dangling().links}
    assert (found["pointer"].reason, found["pointer"].superseded_by) == ("retired", "runbook-v2")
    assert (found["pointer-2"].reason, found["pointer-2"].superseded_by) == ("retired", None)


def test_retired_sources_do_not_dangle(fresh_store: MemoryStore) -> None:
    fresh_store.save("Points at [[nowhere]]", id="source")
    fresh_store.delete("source")
    assert fresh_store.dangling().links == ()


def test_backlinks_list_live_records_naming_an_id(fresh_store: MemoryStore) -> None:
    fresh_store.save("First mentions [[target]]", id="first")
    fresh_store.save("Second mentions [[target]] too", id="second")
    fresh_store.save("Unrelated", id="third")
    fresh_store.save("Retired mention of [[target]]", id="fourth")
    fresh_store.delete("fourth")
    before = fresh_store.backlinks("target")
    assert [m.id for m in before.memories] == ["second", "first"]
    assert before.exists is False
    fresh_store.save("Here it is", id="target")
    assert fresh_store.backlinks("target").exists is True


def test_editing_text_re_parses_links(fresh_store: MemoryStore) -> None:
    fresh_store.save("See [[alpha]]", id="note")
    fresh_store.update("note", text="See [[beta]] instead")
    assert fresh_store.get("note").memory.links == ("beta",)
    assert fresh_store.backlinks("alpha").memories == ()
    assert [m.id for m in fresh_store.backlinks("beta").memories] == ["note"]


def test_a_pending_draft_is_an_existing_target(fresh_store: MemoryStore) -> None:
    fresh_store.configure({"ratification": True})
    fresh_store.save("Draft target", id="drafted", status="pending")
    fresh_store.save("Points at [[drafted]]", id="pointer")
    assert fresh_store.dangling().links == ()


def test_bad_ids_and_banks_are_typed_errors(fresh_store: MemoryStore) -> None:
    with pytest.raises(errors.InvalidArgumentError):
        fresh_store.backlinks("Not A Slug")
    with pytest.raises(errors.NotFoundError):
        fresh_store.dangling(bank="nope")
