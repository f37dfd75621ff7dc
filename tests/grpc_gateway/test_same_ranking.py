"""The same query over the same files ranks the same wherever it enters (a ranking that
depended on the door would make every figure door-specific): the
embedded store's ``recall``, a second store opened on a copy of the data dir from the index
snapshot (plus a log tail written after it), a third that replays the log, and the gateway's
``Search`` and ``Recall`` over a real gRPC channel.

Why a side-by-side run once agreed on only 89.5 % (10k) / 82.5 % (100k) of top-1s: the two
sides ranked at different instants. The embedded store ran on the bench corpus's clock
(2026-01-01), the actor and gateway on the wall clock, and recency decay is a function of
"now" (``decay = max(0.5^(age / half_life), floor)``: at the wall clock every bench record sat
on the floor, at the corpus's clock they did not). Snapshot vs replay, tie-breaking and the
query-vector cache changed nothing (measured: 100 % top-10 agreement at one instant); the
gateway's Recall did differ for a second reason, its own scorer, now gone (``views.py``). So
every comparison here runs at one instant, and ``recall(..., as_of=...)`` lets a process on
the wall clock rank as of another's instant.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import corpus
from shared.contract.clock import FakeClock, SystemClock
from shared.proto.memory.v1 import memory_pb2 as pb
from store_worker.core import MemoryStore
from store_worker.storage import bank as bank_mod
from store_worker.storage import snapshot

N_RECORDS = 1_500
N_QUERIES = 60
LIMIT = 10
BIG_BUDGET = 1_000_000


def _still() -> FakeClock:
    return FakeClock(start_ms=corpus.NOW_MS, tick=0)


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, MemoryStore]:
    """``replayed`` (the original, booted from the log), ``snapshot`` (a copy booted from the
    index snapshot and a tail), ``rebuilt`` (a copy with the snapshot removed)."""
    monkeypatch.setattr(bank_mod, "SNAPSHOT_MIN_LINES", 1)  # a small bank writes one too
    root = tmp_path / "original"
    corpus.write_jsonl(root / "main" / "memories.jsonl", N_RECORDS)
    replayed = MemoryStore(root, clock=_still())
    writer = replayed.banks["main"].snapshot_writer
    assert writer is not None
    writer.join()
    for text in ("The user deploys kestrel on Fridays", "Kestrel billing runs nightly"):
        replayed.save(text)  # the tail: log lines after the snapshot
    from_snapshot = tmp_path / "from-snapshot"
    shutil.copytree(root, from_snapshot)
    rebuilt = tmp_path / "rebuilt"
    shutil.copytree(root, rebuilt)
    (rebuilt / "main" / snapshot.SNAPSHOT).unlink()
    out = {
        "replayed": replayed,
        "snapshot": MemoryStore(from_snapshot, clock=_still()),
        "rebuilt": MemoryStore(rebuilt, clock=_still()),
    }
    assert replayed.banks["main"].booted_from == "rebuilt"
    assert out["snapshot"].banks["main"].booted_from == "snapshot"
    assert out["rebuilt"].banks["main"].booted_from == "rebuilt"
    return out


def _queries() -> list[str]:
    recs = list(corpus.records(N_RECORDS))
    return [q.text for q in corpus.queries(recs, N_QUERIES)] + ["kestrel", ""]


def _relevance(store: MemoryStore, query: str, **kw: Any) -> list[tuple[str, float]]:
    found = store.recall(query, limit=LIMIT, **kw)
    return [(h.memory.id, h.relevance_score) for h in found.memories]


def _ranked(store: MemoryStore, query: str, **kw: Any) -> list[tuple[str, float]]:
    found = store.recall(query, limit=LIMIT, **kw)
    return [(h.memory.id, h.score) for h in found.memories]


def test_replayed_and_snapshot_stores_rank_identically(stores: dict[str, MemoryStore]) -> None:
    for query in _queries():
        expected = _ranked(stores["replayed"], query)
        assert expected or not query.strip() or query == "kestrel"
        assert _ranked(stores["snapshot"], query) == expected, query
        assert _ranked(stores["rebuilt"], query) == expected, query


def test_gateway_search_and_recall_rank_like_the_embedded_store(
    stores: dict[str, MemoryStore], make_gateway: Callable[..., Any]
) -> None:
    # Given a gateway over the snapshot-booted copy, on a real channel
    gw = make_gateway(store=stores["snapshot"])
    embedded = stores["replayed"]
    for query in _queries():
        # When the same query enters through the embedded store, Search and Recall
        expected = _ranked(embedded, query, token_budget=BIG_BUDGET)
        recall = gw.memory.Recall(
            pb.RecallRequest(query=query, limit=LIMIT, token_budget=BIG_BUDGET)
        )
        # Then the ids and the relevance of every rank agree (the calibrated relevance)
        want = _relevance(embedded, query, token_budget=BIG_BUDGET)
        assert [m for m, _ in want] == [m for m, _ in expected]
        assert [(r.id, r.relevance_score) for r in recall.records] == want, query
        if query.strip():
            search = gw.tools.Search(pb.SearchRequest(query=query, limit=LIMIT))
            assert [(r.id, r.relevance_score) for r in search.records] == _relevance(
                embedded, query
            ), query


def test_as_of_makes_a_wall_clock_store_rank_like_the_corpus_clock(
    stores: dict[str, MemoryStore], tmp_path: Path
) -> None:
    # Given a store on the wall clock over a copy of the same files (as the actor runs)
    copy = tmp_path / "wall-clock"
    shutil.copytree(stores["replayed"].root, copy)
    wall = MemoryStore(copy, clock=SystemClock())
    embedded = stores["replayed"]
    queries = [q for q in _queries() if q.strip()]
    # When both rank as of the embedded store's instant, they agree on every rank
    for query in queries:
        assert _ranked(wall, query, as_of=corpus.NOW_MS) == _ranked(embedded, query), query
    # And at their own instants they do not: the cause of the side-by-side disagreement
    differ = sum(_ranked(wall, q) != _ranked(embedded, q) for q in queries)
    assert differ > 0


@pytest.mark.ray
def test_the_actor_ranks_like_an_embedded_store_on_a_copy_of_its_files(
    store_actor: Any, unique_bank: str, tmp_path: Path
) -> None:
    # Given a bank written through the actor (StoreClient), and a copy of its files
    for rec in corpus.records(120):
        store_actor.save(str(rec["text"]), bank=unique_bank, pinned=bool(rec.get("pinned")))
    for text in ("The user deploys kestrel on Fridays",) * 2:
        store_actor.save(text, bank=unique_bank)  # a corroborated record
    source = Path(store_actor.describe()["data_dir"]) / unique_bank
    copy = tmp_path / "copy"
    shutil.copytree(source, copy / unique_bank)
    embedded = MemoryStore(copy, clock=SystemClock())
    at = embedded.now()
    # When the same queries are ranked by the actor and the embedded store at one instant
    for query in [q.text for q in corpus.queries(list(corpus.records(120)), 30)] + ["", "kestrel"]:
        remote = store_actor.recall(query, bank=unique_bank, limit=LIMIT, as_of=at)
        local = embedded.recall(query, bank=unique_bank, limit=LIMIT, as_of=at)
        # Then every rank and score agrees
        assert [(h.memory.id, h.score) for h in remote.memories] == [
            (h.memory.id, h.score) for h in local.memories
        ], query
