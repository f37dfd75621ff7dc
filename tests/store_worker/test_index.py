"""BankIndex.bm25 against the rank-bm25 oracle with the same IDF (index.py docstring).

rank-bm25's ``BM25Okapi`` floors negative IDFs to an epsilon; our index uses Lucene's
non-negative ``ln(1 + (N - df + 0.5) / (df + 0.5))`` with k1 = 1.2, b = 0.75. The oracle below
subclasses BM25Okapi with that IDF, so scores must agree and rankings (ties by key) must be
equal — including after removals, replacements and uncounted (retired) records, where only live
counted records make the statistics.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from store_worker.recall.index import K1, B, BankIndex


class LuceneIdfBM25(BM25Okapi):
    """rank-bm25's Okapi scorer with Lucene's IDF: the test oracle."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, df in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - df + 0.5) / (df + 0.5))


def oracle(docs: dict[str, list[str]]) -> tuple[list[str], LuceneIdfBM25]:
    keys = sorted(docs)
    return keys, LuceneIdfBM25([docs[k] for k in keys], k1=K1, b=B)


def make_corpus(seed: int, n_docs: int = 500, vocab: int = 400) -> dict[str, list[str]]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    weights = [1.0 / (i + 1) ** 1.05 for i in range(vocab)]  # Zipf-like: some words everywhere
    docs: dict[str, list[str]] = {}
    for i in range(n_docs):
        length = rng.randint(0 if i % 97 == 0 else 3, 40)
        docs[f"d{i:04d}"] = rng.choices(words, weights, k=length)
    return docs


def make_queries(seed: int, n: int = 50, vocab: int = 420) -> list[list[str]]:
    rng = random.Random(seed + 1)
    out = []
    for _ in range(n):
        q = [f"w{int(rng.paretovariate(0.8)) % vocab}" for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.2:
            q.append(q[0])  # a repeated query term counts again, as in rank-bm25
        out.append(q)
    out += [["w0"], ["w0", "w1", "w2"], ["w419"], ["nothing-like-it"]]
    return out


def build(docs: dict[str, list[str]]) -> BankIndex:
    idx = BankIndex()
    for key, toks in docs.items():
        idx.upsert(key, toks)
    return idx


def ours(idx: BankIndex, query: Sequence[str], keys: Sequence[str]) -> dict[str, float]:
    scores = idx.bm25(query)
    return {k: float(scores[idx.slot_of[k]]) for k in keys}


def theirs(keys: list[str], bm: LuceneIdfBM25, query: Sequence[str]) -> dict[str, float]:
    return dict(zip(keys, (float(s) for s in bm.get_scores(list(query))), strict=True))


def ranking(scores: dict[str, float], k: int = 20) -> list[str]:
    hits = [(key, s) for key, s in scores.items() if s > 0]
    return [key for key, _ in sorted(hits, key=lambda kv: (-kv[1], kv[0]))][:k]


def assert_equivalent(idx: BankIndex, docs: dict[str, list[str]], queries: list[list[str]]) -> None:
    keys, bm = oracle(docs)
    for query in queries:
        mine, ref = ours(idx, query, keys), theirs(keys, bm, query)
        for key in keys:
            assert mine[key] == pytest.approx(ref[key], rel=1e-5, abs=1e-6), (query, key)
        assert ranking(mine) == ranking(ref), query
        assert ranking(mine, k=len(keys)) == ranking(ref, k=len(keys)), query


CORPUS = make_corpus(seed=20260101)
QUERIES = make_queries(seed=20260101)


def test_oracle_really_differs_from_stock_rank_bm25() -> None:
    # the point of the subclass: stock Okapi floors a common word's IDF, Lucene's stays positive
    keys, bm = oracle(CORPUS)
    stock = BM25Okapi([CORPUS[k] for k in keys], k1=K1, b=B)
    df_w0 = sum("w0" in toks for toks in CORPUS.values())
    assert df_w0 > len(CORPUS) / 2
    assert bm.idf["w0"] > 0
    assert stock.idf["w0"] != pytest.approx(bm.idf["w0"])


def test_statistics_match() -> None:
    idx = build(CORPUS)
    _, bm = oracle(CORPUS)
    assert idx.n_counted == bm.corpus_size == 500
    assert idx.total_len / idx.n_counted == pytest.approx(bm.avgdl)
    for term, value in bm.idf.items():
        assert idx.idf(term) == pytest.approx(value, rel=1e-12)
        assert idx.idf(term) > 0


def test_scores_and_ranking_match_rank_bm25() -> None:
    assert_equivalent(build(CORPUS), CORPUS, QUERIES)


def test_equivalence_holds_after_removals_and_replacements() -> None:
    # Given an index that lived through removals, replacements and new records
    rng = random.Random(99)
    docs = dict(CORPUS)
    idx = build(docs)
    for key in rng.sample(sorted(docs), 60):
        idx.remove(key)
        del docs[key]
    extra = make_corpus(seed=5, n_docs=70)
    for i, key in enumerate(rng.sample(sorted(docs), 40)):  # a new revision of a live record
        docs[key] = extra[f"d{i:04d}"]
        idx.upsert(key, docs[key])
    for i in range(40, 70):
        docs[f"n{i:04d}"] = extra[f"d{i:04d}"]
        idx.upsert(f"n{i:04d}", docs[f"n{i:04d}"])
    idx.remove("never-there")  # harmless
    # Then it scores exactly like a fresh oracle over the live records
    assert_equivalent(idx, docs, QUERIES)
    assert idx.n_counted == len(docs)


def test_uncounted_records_are_scored_with_live_statistics_only() -> None:
    # Given retired (uncounted) records next to the live ones
    docs = dict(CORPUS)
    idx = build(docs)
    retired = make_corpus(seed=11, n_docs=25)
    for key, toks in retired.items():
        idx.upsert(f"r-{key}", toks, counted=False)
    # Then the live ranking is exactly the oracle's over live records only
    assert_equivalent(idx, docs, QUERIES)
    # and a retired record scores as if it were scored against the live statistics
    _, bm = oracle(docs)
    avgdl = bm.avgdl
    for query in QUERIES[:10]:
        scores = idx.bm25(query)
        for key, toks in retired.items():
            expect = 0.0
            for term in query:
                tf = toks.count(term)
                idf = bm.idf.get(term, 0.0)
                expect += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(toks) / avgdl))
            got = float(scores[idx.slot_of[f"r-{key}"]])
            assert got == pytest.approx(expect, rel=1e-5, abs=1e-6)


def test_removed_and_replaced_slots_score_zero() -> None:
    idx = build({"a": ["x", "y"], "b": ["x"], "c": ["z"]})
    old_slot = idx.slot_of["a"]
    idx.upsert("a", ["z"])
    idx.remove("b")
    scores = idx.bm25(["x"])
    assert scores[old_slot] == 0.0
    assert not np.any(scores > 0)  # nothing live holds "x" any more
    assert idx.bm25(["z"])[idx.slot_of["a"]] > 0
    assert idx.n_counted == 2 and idx.df["x"] == 0 and "x" not in idx.df


def test_empty_and_unknown_queries() -> None:
    idx = build({"a": ["x"], "b": ["y"]})
    assert not idx.bm25([]).any()
    assert not idx.bm25(["unknown"]).any()
    assert not BankIndex().bm25(["x"]).any()


def test_entity_and_tag_postings() -> None:
    idx = BankIndex()
    idx.upsert("a", ["t"], entities=["alice", "bob"], tags=["x"])
    idx.upsert("b", ["t"], entities=["bob"], tags=["x", "y"])
    hits = idx.entity_hits(["alice", "bob", "carol"])
    assert hits[idx.slot_of["a"]] == 2 and hits[idx.slot_of["b"]] == 1
    mask = idx.tag_mask("y")
    assert not mask[idx.slot_of["a"]] and mask[idx.slot_of["b"]]
