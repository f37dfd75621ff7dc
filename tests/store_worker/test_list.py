"""list: newest first, opaque page tokens, filters, total, stable under inserts."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import InvalidArgumentError, InvalidScopeError, InvalidTypeError
from store_worker.core import MemoryStore


def all_pages(store: MemoryStore, *, page_token: str | None = None, **kw: object) -> list[str]:
    ids: list[str] = []
    token = page_token
    for _ in range(1000):
        page = store.list(page_token=token, **kw)  # type: ignore[arg-type]
        ids += [m.id for m in page.memories]
        token = page.next_page_token
        if token is None:
            return ids
    raise AssertionError("paging never ended")


def test_newest_first(store: MemoryStore) -> None:
    ids = [store.save(f"fact number {i}").memory.id for i in range(5)]
    page = store.list()
    assert [m.id for m in page.memories] == ids[::-1]
    assert page.total == 5 and page.next_page_token is None and page.bank == "main"


def test_pages_cover_everything_once(store: MemoryStore) -> None:
    ids = [store.save(f"fact number {i}").memory.id for i in range(23)]
    first = store.list(page_size=10)
    assert len(first.memories) == 10 and first.total == 23
    assert first.next_page_token is not None
    assert all_pages(store, page_size=10) == ids[::-1]
    assert all_pages(store, page_size=1) == ids[::-1]
    assert all_pages(store, page_size=23) == ids[::-1]


def test_exact_page_boundary_has_no_dangling_token(store: MemoryStore) -> None:
    for i in range(10):
        store.save(f"fact {i} here")
    assert store.list(page_size=10).next_page_token is None
    assert store.list(page_size=5).next_page_token is not None


def test_token_is_opaque(store: MemoryStore) -> None:
    for i in range(3):
        store.save(f"fact {i} here")
    token = store.list(page_size=1).next_page_token
    assert token is not None
    assert all(c.isalnum() or c in "-_" for c in token)  # url-safe, no padding


def test_stable_under_concurrent_inserts(store: MemoryStore) -> None:
    # Given a paging client halfway through
    old = [store.save(f"old fact {i}").memory.id for i in range(12)]
    first = store.list(page_size=5)
    # When new memories arrive between its pages
    new = [store.save(f"new fact {i}").memory.id for i in range(7)]
    seen = [m.id for m in first.memories]
    token = first.next_page_token
    while token:
        page = store.list(page_size=5, page_token=token)
        seen += [m.id for m in page.memories]
        token = page.next_page_token
        store.save(f"more arrivals {len(seen)}")
    # Then it sees every old record exactly once, in order, and none of the new ones
    assert seen == old[::-1]
    assert not set(seen) & set(new)


def test_stable_when_the_boundary_record_is_deleted(store: MemoryStore) -> None:
    ids = [store.save(f"fact number {i}").memory.id for i in range(9)]
    first = store.list(page_size=3)
    store.delete(first.memories[-1].id)  # the record the token points at
    store.delete(ids[5])  # and the next one in line
    rest = all_pages(store, page_size=3, page_token=first.next_page_token)
    assert rest == [i for i in ids[::-1][3:] if i != ids[5]]


def test_stable_when_records_share_a_timestamp(tmp_path: Path) -> None:
    s = MemoryStore(tmp_path / "d", clock=FakeClock(tick=0))
    ids = [s.save(f"same ms {i}").memory.id for i in range(9)]
    assert sorted(all_pages(s, page_size=2)) == sorted(ids)
    assert len(all_pages(s, page_size=2)) == 9
    s.close()


def test_filters_and_total(store: MemoryStore) -> None:
    a = store.save("alpha", tags=["x"], type="feedback").memory
    b = store.save("beta", tags=["x", "y"], type="project", scope="project", project="/p").memory
    c = store.save("gamma", tags=["y"], scope="session", session_id="s1").memory
    d = store.save("delta", tags=["x"]).memory
    store.delete(d.id)
    assert {m.id for m in store.list(tag="x").memories} == {a.id, b.id}
    assert store.list(tag="X").total == 2  # tags normalise like on save
    assert [m.id for m in store.list(type="project").memories] == [b.id]
    assert [m.id for m in store.list(scope="session").memories] == [c.id]
    assert store.list(status="canonical").total == 3
    assert store.list(status="pending").total == 0
    assert store.list(tag="x", include_superseded=True).total == 3
    assert store.list(include_superseded=True).memories[0].id == d.id
    assert store.list(tag="nothing").total == 0


def test_total_counts_all_pages(store: MemoryStore) -> None:
    for i in range(7):
        store.save(f"tagged {i}", tags=["t"] if i % 2 else [])
    page = store.list(tag="t", page_size=2)
    assert page.total == 3 and len(page.memories) == 2


@pytest.mark.parametrize("size", [0, -1, 501, True, 2.5, "3"])
def test_bad_page_size(store: MemoryStore, size: object) -> None:
    with pytest.raises(InvalidArgumentError):
        store.list(page_size=size)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "token",
    ["!!!", "bm90IGpzb24", base64.urlsafe_b64encode(b'{"a": 1}').decode(), "W10", "WzEsMiwzXQ"],
)
def test_foreign_page_token(store: MemoryStore, token: str) -> None:
    store.save("x")
    with pytest.raises(InvalidArgumentError):
        store.list(page_token=token)


def test_bad_filters(store: MemoryStore) -> None:
    with pytest.raises(InvalidTypeError):
        store.list(type="opinion")
    with pytest.raises(InvalidScopeError):
        store.list(scope="planet")
    with pytest.raises(InvalidArgumentError):
        store.list(status="maybe")


def test_list_other_bank(store: MemoryStore) -> None:
    store.save("in main")
    w = store.save("in work", bank="work").memory
    page = store.list(bank="work")
    assert page.bank == "work" and [m.id for m in page.memories] == [w.id]
