"""Misspelt query words.

People type fast: "torunament", "recieved", "funraiser". A query word that no memory of the
bank holds matches nothing in BM25, however close it is to a word the bank does hold.
``spelling_scores`` gives such a word the BM25 of the bank's word it most likely stands for:

- a query word that is no word of the dictionary (the installed model's word table,
  ``synonyms.py``) is read as the nearest dictionary word whose stem the bank holds, or else
  as the nearest term of the bank that is no word either (the question's "Xenoblade" for the
  turn's "Xeonoblade", a name misspelt in one of them);
- a word of the dictionary is never read as anything: "write" is not "white", "mother" not
  "other", and a real word a bank of code lacks ("group") is not one of its identifiers
  ("grous"). So a query spelt right is scored exactly as before.

Near: one edit (optimal string alignment: two swapped letters count as one) for words of 5-9
letters, two from ten letters on; shorter words and anything but letters are left alone (too
many neighbours to guess right). Among equally near candidates a pure swap of letters wins,
then the one the bank holds most often. At most ``MAX_READINGS`` words of one query are read.
``respelt`` gives the embedding model the query with its slips spelt as read.
"""

from __future__ import annotations

import bisect
import itertools
import re
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from rapidfuzz import process
from rapidfuzz.distance import OSA

from shared.text import STOPWORDS, query_tokens, words

if TYPE_CHECKING:
    from store_worker.recall.index import BankIndex
    from store_worker.recall.synonyms import SynonymSource
    from store_worker.storage.bank import Bank

_WORD = re.compile(r"[^\W\d_]+")  # a run of letters (what ``respelt`` may rewrite)
MIN_LEN = 5  # shorter words: too many one-edit neighbours ("cat": bat, car, cut, ...)
LONG = 10  # from this length on, two edits
_CACHED_WORDS = 8192
MAX_READINGS = 8  # words of one query a reading is sought for (``_unheld``)


def max_edits(word: str) -> int:
    """How many edits a word of this shape may be from the word it misspells (0: none)."""
    if len(word) < MIN_LEN or not word.isalpha():
        return 0
    return 2 if len(word) >= LONG else 1


class _Lengths:
    """Strings bucketed by length and first letter, and by length and last letter. One edit
    never changes both ends of a word of four letters or more, so the strings one edit away
    from a word all sit in the buckets of its first or its last letter: a lookup reads those
    only (about a tenth of the vocabulary), exactly. Two edits (long words) read the same
    buckets: a slip at both ends of one word is rare enough to leave."""

    def __init__(self, items: Iterable[str] = ()) -> None:
        self.first: dict[tuple[int, str], list[str]] = defaultdict(list)
        self.last: dict[tuple[int, str], list[str]] = defaultdict(list)
        self.add(items)

    def add(self, items: Iterable[str]) -> None:
        for item in items:
            if len(item) >= MIN_LEN - 2 and item.isalpha():
                self.first[len(item), item[0]].append(item)
                self.last[len(item), item[-1]].append(item)

    def near(self, word: str, edits: int) -> list[tuple[str, int]]:
        """(item, distance) within ``edits`` of ``word``."""
        pool: dict[str, None] = {}
        for n in range(len(word) - edits, len(word) + edits + 1):
            pool.update(dict.fromkeys(self.first.get((n, word[0]), ())))
            pool.update(dict.fromkeys(self.last.get((n, word[-1]), ())))
        found = process.extract(
            word, list(pool), scorer=OSA.distance, score_cutoff=edits, limit=None
        )
        return [(t, int(d)) for t, d, _ in found]


def _stem(word: str) -> str | None:
    toks = query_tokens(word)
    return toks[0] if len(toks) == 1 else None


class Dictionary:
    """The words of a word table, their stems, and their buckets."""

    def __init__(self, vocabulary: Sequence[str]) -> None:
        self.words = frozenset(vocabulary)
        self.lengths = _Lengths(self.words)
        self.sorted = sorted(self.words)
        self._stem_known: dict[str, bool] = {}
        self._near: dict[tuple[str, int], list[tuple[str, int]]] = {}

    def knows(self, word: str) -> bool:
        return word in STOPWORDS or word in self.words

    def knows_stem(self, stem: str) -> bool:
        """Whether ``stem`` is the stem of a dictionary word: the words sharing its head (a
        stem is its word's beginning but for its last letter: "happi" of "happy") are
        stemmed on demand, instead of stemming the whole table (~60 ms) up front."""
        if stem in STOPWORDS:
            return True
        found = self._stem_known.get(stem)
        if found is None:
            head = stem[: max(len(stem) - 1, 1)]
            i = bisect.bisect_left(self.sorted, head)
            found = False
            while i < len(self.sorted) and self.sorted[i].startswith(head):
                if _stem(self.sorted[i]) == stem:
                    found = True
                    break
                i += 1
            if len(self._stem_known) >= _CACHED_WORDS:
                self._stem_known.clear()
            self._stem_known[stem] = found
        return found

    def near(self, word: str, edits: int) -> list[tuple[str, int]]:
        key = (word, edits)
        found = self._near.get(key)
        if found is None:
            if len(self._near) >= _CACHED_WORDS:
                self._near.clear()
            found = self._near[key] = self.lengths.near(word, edits)
        return found


# one per word table (``_table`` shares a table's list between the stores of a process)
_DICTIONARIES: dict[int, tuple[Sequence[str], Dictionary]] = {}


def dictionary(source: SynonymSource) -> Dictionary:
    """The dictionary of a word source's vocabulary, built once per vocabulary."""
    vocabulary = source.vocabulary()
    held = _DICTIONARIES.get(id(vocabulary))
    if held is None or held[0] is not vocabulary:
        if len(_DICTIONARIES) >= 4:
            _DICTIONARIES.clear()
        held = _DICTIONARIES[id(vocabulary)] = (vocabulary, Dictionary(vocabulary))
    return held[1]


class _BankTerms:
    """A bank index's terms bucketed by length. An index only ever gains terms (in order:
    ``terms`` is a dict), so a grown index adds its new ones. The readings are dropped at any
    change of the index (a new term may be a nearer reading, a count may break a tie), so a
    reading never depends on which queries came before."""

    def __init__(self) -> None:
        self.version: tuple[int, int, int] = (0, 0, 0)  # (terms, slots, counted records)
        self.lengths = _Lengths()
        # query word → its reading in this bank: (term, the dictionary word read, if any)
        self.seen: dict[str, tuple[str, str | None] | None] = {}

    def update(self, idx: BankIndex) -> None:
        version = (len(idx.terms), len(idx.keys), idx.n_counted)
        if version != self.version:
            if version[0] > self.version[0]:  # new terms: only those are bucketed
                self.lengths.add(itertools.islice(idx.terms, self.version[0], None))
            self.version = version
            self.seen.clear()


_TERMS: weakref.WeakKeyDictionary[BankIndex, _BankTerms] = weakref.WeakKeyDictionary()


def _terms(idx: BankIndex) -> _BankTerms:
    terms = _TERMS.get(idx)
    if terms is None:
        terms = _TERMS[idx] = _BankTerms()
    terms.update(idx)
    return terms


def _best(
    found: Sequence[tuple[str, int, str]], word: str, df: Callable[[str], int]
) -> tuple[str, str]:
    """(bank stem, candidate) of the nearest candidate; ties: a pure swap of ``word``'s
    letters, then the bank's most frequent (then the stem, for a stable answer). ``found``:
    (candidate compared with ``word``, distance, its stem in the bank)."""
    letters = sorted(word)
    best = min(d for _, d, _ in found)
    c, s = max(
        ((c, s) for c, d, s in found if d == best),
        key=lambda cs: (sorted(cs[0]) == letters, df(cs[1]), cs[1]),
    )
    return s, c


def correction(idx: BankIndex, word: str, lexicon: Dictionary) -> str | None:
    """The bank term the casefolded query ``word`` most likely stands for, or None (the bank
    holds the word, it is short, nothing is near enough)."""
    reading = _reading(idx, word, lexicon)
    return None if reading is None else reading[0]


def _reading(idx: BankIndex, word: str, lexicon: Dictionary) -> tuple[str, str | None] | None:
    """(the bank term, the dictionary word it was read through, if any) for ``word``."""
    stem = _stem(word)
    if not max_edits(word) or stem is None or idx.df.get(stem, 0) > 0:
        return None
    terms = _terms(idx)
    if word in terms.seen:
        return terms.seen[word]

    def df(term: str) -> int:
        return idx.df.get(term, 0)

    if lexicon.knows(word):  # a word, spelt right: never read as another
        terms.seen[word] = None
        return None
    found: list[tuple[str, int, str]] = []
    against, through_word = word, True
    for w, d in lexicon.near(word, max_edits(word)):  # the nearest word the bank holds
        s = _stem(w)
        if s is not None and df(s):
            found.append((w, d, s))
    if not found and max_edits(stem):
        against, through_word = stem, False
        # no word near: a name or a slip the memories share ("Xenoblade" / "Xeonoblade"),
        # so only a term that is no word either
        found = [
            (t, d, t)
            for t, d in terms.lengths.near(stem, max_edits(stem))
            if df(t) and not lexicon.knows_stem(t)
        ]
    if not found:
        terms.seen[word] = None
    else:
        term, spelt = _best(found, against, df)
        terms.seen[word] = (term, spelt if through_word else None)
    return terms.seen[word]


def _unheld(idx: BankIndex, text: str, lexicon: Dictionary) -> list[str]:
    """The query's words a reading is sought for: the first ``MAX_READINGS`` distinct ones
    long enough to read that are no dictionary word and that the bank does not hold. A slip
    matters in a question; a pasted page of code has hundreds of identifiers no bank holds,
    each a lookup (a 40-line snippet took ~0.1-0.3 s more on its first recall at 10k memories
    without the cap)."""
    out: list[str] = []
    for w in dict.fromkeys(words(text)):
        if (
            max_edits(w)
            and not lexicon.knows(w)
            and (stem := _stem(w)) is not None
            and not idx.df.get(stem, 0)
        ):
            out.append(w)
            if len(out) == MAX_READINGS:
                break
    return out


def respelt(bank: Bank, text: str, source: SynonymSource) -> str:
    """``text`` with each misspelt word that was read as a dictionary word written as that
    word ("Which torunament …" → "Which tournament …"): what the embedding model is given,
    as it cuts a misspelt word into word pieces that mean nothing."""
    idx = bank.index
    lexicon = dictionary(source)
    spelt: dict[str, str] = {}
    for w in _unheld(idx, text, lexicon):
        reading = _reading(idx, w, lexicon)
        if reading is not None and reading[1] is not None:
            spelt[w] = reading[1]
    if not spelt:
        return text
    return _WORD.sub(lambda m: spelt.get(m.group().casefold(), m.group()), text)


def spelling_scores(bank: Bank, text: str, source: SynonymSource) -> npt.NDArray[np.float64]:
    """BM25 of the readings of the query's words the bank does not hold (0 where none)."""
    idx = bank.index
    lexicon = dictionary(source)
    fixed = {c for w in _unheld(idx, text, lexicon) if (c := correction(idx, w, lexicon))}
    if not fixed:
        return np.zeros(len(idx.keys), dtype=np.float64)
    return idx.bm25(sorted(fixed))
