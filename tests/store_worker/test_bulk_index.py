"""The bulk index build (boot, reload, compaction) equals indexing each record in turn.

``Bank.reindex`` builds the index with ``BankIndex.bulk_load`` (vectorised); ``Bank._index``
is the incremental path every write takes. Both must leave the same slots, postings,
statistics, columns and fingerprint map — and an index built in bulk must keep behaving like
an incremental one when later writes replace or retire its records.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from shared.contract.models import Memory
from shared.text import query_tokens
from store_worker.recall import index as index_mod
from store_worker.recall.index import BankIndex
from store_worker.storage.bank import Bank

SameIndex = Callable[[BankIndex, BankIndex], None]  # the conftest fixture assert_same_index
WORDS = [f"w{i}" for i in range(300)] + ["user", "prefers", "tabs", "running", "runs", "café"]


def make_records(seed: int, n: int = 400) -> dict[str, Memory]:
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(WORDS))]
    out: dict[str, Memory] = {}
    for i in range(n):
        text = " ".join(rng.choices(WORDS, weights, k=rng.randint(1, 30)))
        scope = rng.choice(["global", "global", "project", "session"])
        out[f"m{i}"] = Memory(
            id=f"m{i}",
            fingerprint=f"fp{rng.randrange(n // 2):016x}",  # shared prints: last one wins
            type=rng.choice(["user", "feedback", "project", "reference"]),
            scope=scope,
            project=f"/p{rng.randrange(3)}" if scope == "project" else None,
            session_id=f"s{rng.randrange(4)}" if scope == "session" else None,
            title=rng.choice(["", "A title w1"]),
            text=text,
            tags=tuple(rng.sample(["a", "b", "c"], rng.randint(0, 2))),
            entities=tuple(rng.sample(["kestrel", "ana", "w3"], rng.randint(0, 2))),
            pinned=rng.random() < 0.1,
            status="pending" if rng.random() < 0.1 else "canonical",
            corroboration=rng.randrange(4),
            created_at=rng.randrange(50),  # many ties: slot order falls back to id
            updated_at=100,
            stated_at=rng.randrange(1000),
            invalid_at=100 if rng.random() < 0.15 else None,
            tokens=rng.randrange(40),
        )
    return out


def incremental(bank: Bank) -> BankIndex:
    """The pre-bulk reindex: each record's fingerprint maps and index update in
    (created_at, id) order."""
    bank.index = BankIndex()
    bank.by_fp = {}
    bank.fp_more = {}
    for mem in sorted(bank.records.values(), key=lambda m: (m.created_at, m.id)):
        bank._hold_print(mem)
        bank._index_one(mem)
    return bank.index


def bank_with(tmp_path: Path, records: dict[str, Memory]) -> Bank:
    bank = Bank(tmp_path, "main")
    bank.records = dict(records)
    return bank


@pytest.mark.parametrize(("seed", "chunk"), [(1, 32_768), (2, 7), (3, 1)])
def test_bulk_build_equals_incremental(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    chunk: int,
    assert_same_index: SameIndex,
) -> None:
    monkeypatch.setattr(index_mod, "BULK_CHUNK", chunk)  # token lists consumed in chunks
    bank = bank_with(tmp_path, make_records(seed))
    bank.reindex()
    bulk, bulk_fp, bulk_more = bank.index, bank.by_fp, bank.fp_more
    ref = incremental(bank)
    assert bulk_fp == bank.by_fp
    assert bulk_more == bank.fp_more
    assert_same_index(bulk, ref)


def test_writes_after_a_bulk_build_match_incremental(
    tmp_path: Path, assert_same_index: SameIndex
) -> None:
    records = make_records(7)
    rng = random.Random(7)
    a = bank_with(tmp_path / "a", records)
    a.reindex()
    b = bank_with(tmp_path / "b", records)
    incremental(b)
    live = [m for m in records.values() if m.invalid_at is None]
    for mem in rng.sample(live, 60):  # retire some, revise others, in both banks
        if rng.random() < 0.5:
            new = mem.model_copy(update={"invalid_at": 200, "revision": mem.revision + 1})
        else:
            new = mem.model_copy(update={"text": mem.text + " w5 w5", "revision": 1})
        for bank in (a, b):
            bank.records[new.id] = new
            bank._hold_print(new)
            bank._index_one(new)
    a.index.remove("m3")
    b.index.remove("m3")
    assert_same_index(a.index, b.index)
    for q in ["w0 w1", "w5", "user prefers tabs", "w299 w12 w12", "nothing"]:
        toks = query_tokens(q)
        np.testing.assert_allclose(a.index.bm25(toks), b.index.bm25(toks), rtol=0, atol=1e-12)


def test_bulk_load_of_nothing_and_refusal_on_a_used_index(tmp_path: Path) -> None:
    bank = bank_with(tmp_path, {})
    bank.reindex()
    assert bank.index.capacity == 0 and bank.index.live_count == 0
    assert bank.index.bm25(["w1"]).shape == (0,)
    used = BankIndex()
    used.upsert("x", ["a"])
    with pytest.raises(ValueError):
        used.bulk_load(["y"], [["a"]], entities=[()], tags=[()], counted=np.ones(1, bool), attrs={})
