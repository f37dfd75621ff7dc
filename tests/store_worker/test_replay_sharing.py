"""Replay shares equal immutable parts of records (``bank._Sharer``) without changing them.

Records loaded from ``memories.jsonl`` share their pydantic fields-set and ``Provenance``
objects to save RAM; every record must still equal a fresh parse of its line, keep its own
``model_fields_set``, and a ``model_copy`` of one must never leak into another.
"""

from __future__ import annotations

from pathlib import Path

from shared.contract.models import Memory, Provenance
from store_worker.storage.bank import Bank


def mem(i: int, **kw: object) -> Memory:
    base: dict[str, object] = {
        "id": f"m{i}",
        "fingerprint": f"fp{i:016x}",
        "text": f"fact number {i}",
        "created_at": i,
        "updated_at": i,
        "stated_at": i,
        "provenance": Provenance(recorded_by="test", source_session_id=f"s{i % 2}"),
    }
    base.update(kw)
    return Memory.model_validate(base)


def loaded(tmp_path: Path, mems: list[Memory]) -> Bank:
    writer = Bank(tmp_path, "main")
    writer.files.create("", 0)
    writer.apply_many(mems)
    writer.files.log.close()
    bank = Bank(tmp_path, "main")
    bank.load()
    return bank


def test_replayed_records_equal_a_fresh_parse(tmp_path: Path) -> None:
    mems = [mem(i) for i in range(6)] + [mem(6, pinned=True, tags=("a",))]
    bank = loaded(tmp_path, mems)
    lines = (tmp_path / "main" / "memories.jsonl").read_bytes().splitlines()
    for line in lines:
        fresh = Memory.from_line(line)
        got = bank.records[fresh.id]
        assert got == fresh
        assert got.model_fields_set == fresh.model_fields_set
        assert got.model_dump(exclude_unset=True) == fresh.model_dump(exclude_unset=True)
        assert got.to_line() == fresh.to_line()


def test_equal_parts_are_shared_and_copies_do_not_leak(tmp_path: Path) -> None:
    bank = loaded(tmp_path, [mem(i) for i in range(4)] + [mem(9, pinned=True)])
    r0, r2, r1 = bank.records["m0"], bank.records["m2"], bank.records["m1"]
    assert r0.provenance is r2.provenance  # same session, same recorder
    assert r0.provenance is not r1.provenance  # another session
    assert r0.__pydantic_fields_set__ is r1.__pydantic_fields_set__
    assert bank.records["m9"].model_fields_set == r0.model_fields_set | {"pinned"}
    before = set(r1.model_fields_set)
    revised = r0.model_copy(update={"pinned": True, "revision": 1})
    assert "pinned" in revised.model_fields_set
    assert r0.model_fields_set == before and r1.model_fields_set == before
    bank.apply(revised)  # a write after a shared replay keeps the old revision intact
    assert bank.records["m0"].pinned and not r1.pinned and r1.model_fields_set == before
