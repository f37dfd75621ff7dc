"""Candidate pairs without a store call: rare-token blocking over the memories a pass listed.

Why, beside ``recall(mode=lexical)``: the store's recall costs O(bank size) per query (dense
score and filter arrays over every slot), so one query per memory makes a pass O(N²): on this
machine ~1-3 ms per query at 10k records but ~20 ms at 100k, i.e. over half an hour for a 100k
bank. Blocking (Christen, "A Survey of Indexing Techniques for Scalable Record Linkage and
Deduplication", IEEE TKDE 2012) makes it near-linear: each memory is keyed by its
``keys_per_memory`` rarest words (document frequency counted over the listed bank); two memories
are candidates when they share at least two keys (one for very short texts). The work is the
sum of squared posting lengths, so words in more than ``max_postings`` memories are no keys.
A near-duplicate edit touches one or two words, so most keys survive it; a typo adds a unique
word, which only displaces one key. Keys are limited to one (type, scope, project, session)
place, since the vetoes forbid grouping across places anyway.

The pass reads nothing extra: the memories come from ``list``, so the consolidator still talks
to the store only through its public API.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain

from consolidate_worker.dedup import Features


class RareTokenBlocker:
    def __init__(
        self, *, keys_per_memory: int = 4, max_candidates: int = 20, max_postings: int = 1_000
    ) -> None:
        self.keys_per_memory = keys_per_memory
        self.max_candidates = max_candidates
        # A word in more memories than this blocks nothing useful and costs postings² work;
        # a memory made only of such words gets no blocking candidates (recall covers it in
        # banks up to ``recall_max_bank``).
        self.max_postings = max_postings

    def neighbours(self, feats: Iterable[Features]) -> dict[str, list[str]]:
        """Candidate ids per memory id; symmetric pairs may appear on one side only."""
        ordered = sorted(feats, key=lambda f: f.id)
        df = Counter(chain.from_iterable(f.word_set for f in ordered))
        keys: list[tuple[str, ...]] = []
        postings: dict[tuple[object, str], list[str]] = defaultdict(list)
        for f in ordered:
            mine = self._keys(f.word_set, df)
            keys.append(mine)
            where = _place(f)
            for key in mine:
                postings[(where, key)].append(f.id)
        return {
            f.id: self._candidates(f.id, mine, _place(f), postings)
            for f, mine in zip(ordered, keys, strict=True)
        }

    def _keys(self, toks: frozenset[str], df: Mapping[str, int]) -> tuple[str, ...]:
        usable = sorted((df[t], t) for t in toks if df[t] <= self.max_postings)
        return tuple(t for _, t in usable[: self.keys_per_memory])

    def _candidates(
        self,
        mem_id: str,
        mine: Sequence[str],
        where: object,
        postings: Mapping[tuple[object, str], Sequence[str]],
    ) -> list[str]:
        shared: Counter[str] = Counter()
        for key in mine:
            shared.update(postings[(where, key)])
        shared.pop(mem_id, None)
        need = 1 if len(mine) < 3 else 2
        ranked = sorted((-n, other) for other, n in shared.items() if n >= need)
        return [other for _, other in ranked[: self.max_candidates]]


def _place(f: Features) -> tuple[str, str, str | None, str | None]:
    m = f.memory
    return (m.type, m.scope, m.project, m.session_id)
