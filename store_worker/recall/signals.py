"""The match signals recall adds to BM25: entities, synonyms, dates and supersede chains.

- Entities: a query naming a record's entity (a person, a place: its handles as stored)
  scores an exact hit; a word matching one part of a multi-word handle a partial one, and a
  handle's rarity in the bank weighs it.
- Synonyms: a query word no record holds borrows the BM25 of its near neighbours in a
  model's static word table (``synonyms.py``).
- Dates: a query naming a time ("last May") matches records that happened inside that
  window, or whose text names a month inside it.
- Supersede chains: a retired record's match also credits its live successor (``inherit``),
  and in the history view each retired record ranks just below what replaced it (``guard``).

Every step is a numpy pass over index columns or postings; the only Python loops run over a
bounded number of retired candidates (``SUCCESSOR_FANOUT``).
"""

from __future__ import annotations

import itertools
import math
import re
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from shared.text import (
    FIRST_PERSON,
    STOPWORDS,
    DateWindow,
    entity_norm,
    query_tokens,
    words,
)
from store_worker.recall.index import BankIndex

if TYPE_CHECKING:
    from store_worker.recall.scoring import Tuning
    from store_worker.recall.synonyms import SynonymSource
    from store_worker.storage.bank import Bank

DAY_MS = 86_400_000.0
# How many retired candidates (best first) pass their match on to, or are ranked under,
# their successors: bounds the only per-record Python work of a query.
SUCCESSOR_FANOUT = 64
MAX_CHAIN = 32

_SPACE = re.compile(r"\s+")


def entity_candidates(query: str) -> set[str]:
    """Handles a query may name: words, and runs of two or three words joined by '-' or ''."""
    ws = words(query)
    out = {entity_norm(w) for w in ws}
    for n in (2, 3):
        for i in range(len(ws) - n + 1):
            run = ws[i : i + n]
            out.add("-".join(run))
            out.add("".join(run))
            out.add(" ".join(run))
    if any(w in FIRST_PERSON for w in ws):
        out.add("user")
    return out


# Component → full handles, per index. Handles are only ever added to an index (a rebuild makes
# a new index), in dict order, so the table catches up on the new ones only.
_COMPONENTS: weakref.WeakKeyDictionary[BankIndex, tuple[int, int, dict[str, list[str]]]] = (
    weakref.WeakKeyDictionary()
)


def _components(idx: BankIndex) -> dict[str, list[str]]:
    source, seen, table = _COMPONENTS.get(idx, (id(idx.entities), 0, {}))
    if source != id(idx.entities) or seen > len(idx.entities):  # cleared in place: start over
        source, seen, table = id(idx.entities), 0, {}
    if seen == len(idx.entities):
        return table
    for handle in itertools.islice(idx.entities, seen, None):
        parts = handle.split("-")
        if len(parts) > 1:
            for part in set(parts):
                table.setdefault(part, []).append(handle)
    _COMPONENTS[idx] = (source, len(idx.entities), table)
    return table


def _weighted_hits(idx: BankIndex, handles: set[str], weight: float) -> npt.NDArray[np.float64]:
    """Per slot, the sum over carried handles of ``weight`` times the handle's rarity: its
    BM25 IDF relative to a handle only one record carries. A handle on every record of a
    project bank ("kestrel") then says little, as BM25 would say of the word."""
    hits = np.zeros(len(idx.keys), dtype=np.float64)
    alive = idx.col("alive").astype(bool)
    n = max(idx.n_counted, 1)
    top = math.log1p((n - 0.5) / 1.5)
    for handle in handles:
        post = idx.entities.get(handle)
        if post is None:
            continue
        slots = post.view()[0]
        slots = slots[alive[slots]]
        if not len(slots):
            continue
        rarity = math.log1p((n - len(slots) + 0.5) / (len(slots) + 0.5)) / top if top > 0 else 1
        hits[slots] += weight * rarity
    return hits


def entity_scores(bank: Bank, query: str, t: Tuning) -> npt.NDArray[np.float64]:
    """Exact handle hits, plus ``w_partial`` for a query word that is one part of a longer
    handle ("Sofia" → ``sofia-almeida``): people are asked about by first name."""
    idx = bank.index
    cands = entity_candidates(query)
    hits = _weighted_hits(idx, cands, 1.0)
    if t.w_partial > 0:
        table = _components(idx)
        partial = {
            h for w in words(query) if w not in STOPWORDS for h in table.get(entity_norm(w), ())
        }
        partial -= cands
        if partial:
            hits += _weighted_hits(idx, partial, t.w_partial)
    return hits


def synonym_scores(
    bank: Bank, text: str, terms: Sequence[str], synonyms: SynonymSource
) -> npt.NDArray[np.float64]:
    """BM25 of the query words' neighbours (``synonyms.near``) that the bank's index holds
    and the query does not, each weighted by its similarity (a stem reached from two words
    counts once, at the best). Names are not expanded: a word of the query written with a
    capital after its first word, or one the bank holds as an entity handle ("caroline"
    would bring in other first names)."""
    idx = bank.index
    raw = re.findall(r"\w+", text)
    have = set(terms)
    weight: dict[str, float] = {}
    for i, token in enumerate(raw):
        word = token.casefold()
        if word in STOPWORDS or (i > 0 and token[:1].isupper()) or word in idx.entities:
            continue
        for near, sim in synonyms.near(word):
            for stem in query_tokens(near):
                if stem not in have and stem in idx.terms:
                    weight[stem] = max(weight.get(stem, 0.0), sim)
    out = np.zeros(len(idx.keys), dtype=np.float64)
    for stem, sim in sorted(weight.items()):
        out += sim * idx.bm25([stem])
    return out


def content_tokens(text: str, window: DateWindow | None) -> list[str]:
    """Query tokens; once a date phrase is cut out, a rest of bare function words ("what did
    I do") matches nothing rather than everything."""
    if window is None:
        return query_tokens(text)
    ws = words(text)
    if not any(w not in STOPWORDS for w in ws):
        return ["user"] if any(w in FIRST_PERSON for w in ws) else []
    return query_tokens(text)


def date_hits(bank: Bank, window: DateWindow, t: Tuning) -> npt.NDArray[np.float64]:
    """1 where the record's text names a month inside the window or it happened inside it;
    ``w_grace`` where it was stated within the grace days after it; else 0. A record happened
    at its ``occurred_at`` when it has one (exact: no grace), else when it was stated (an
    event is often told a few days later: the grace)."""
    idx = bank.index
    stated = idx.col("stated_at").astype(np.float64)
    occurred = idx.col("occurred_at").astype(np.float64)
    known = occurred >= 0
    when = np.where(known, occurred, stated)
    inside = (when >= window.start_ms) & (when < window.end_ms)
    late = (
        ~known & (stated >= window.end_ms) & (stated < window.end_ms + t.date_grace_days * DAY_MS)
    )
    named = idx.bm25(list(window.months)) > 0
    hits: npt.NDArray[np.float64] = np.maximum(
        (inside | named).astype(np.float64), t.w_grace * late
    )
    return hits


def _successor_slot(bank: Bank, key: str) -> int | None:
    """The index slot of the live record at the end of ``key``'s supersede chain."""
    mem = bank.records.get(key)
    for _ in range(MAX_CHAIN):
        if mem is None or mem.superseded_by is None:
            return None
        mem = bank.records.get(mem.superseded_by)
        if mem is not None and mem.invalid_at is None:
            return bank.index.slot_of.get(mem.id)
    return None


def _retired_best(
    bank: Bank, values: npt.NDArray[np.float64], where: npt.NDArray[np.bool_]
) -> list[int]:
    """The best ``SUCCESSOR_FANOUT`` retired slots among ``where``, best first."""
    idx = bank.index
    slots = np.flatnonzero(where & idx.col("retired").astype(bool) & (values > 0))
    if len(slots) > SUCCESSOR_FANOUT:
        slots = slots[np.argpartition(-values[slots], SUCCESSOR_FANOUT - 1)[:SUCCESSOR_FANOUT]]
    return sorted(slots.tolist(), key=lambda s: -float(values[s]))


def inherit(bank: Bank, match: npt.NDArray[np.float64], t: Tuning) -> npt.NDArray[np.float64]:
    """A retired record's match also credits its live successor (the current statement of
    the same fact): ``match[successor] >= w_inherit · match[retired]``."""
    alive = bank.index.col("alive").astype(bool)
    out = match.copy()
    for slot in _retired_best(bank, match, alive):
        succ = _successor_slot(bank, bank.index.keys[slot])
        if succ is not None:
            out[succ] = max(out[succ], t.w_inherit * match[slot])
    return out


def guard(
    bank: Bank,
    score: npt.NDArray[np.float64],
    mask: npt.NDArray[np.bool_],
    visible: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Rank every retired candidate just below its live successor; a visible successor that
    matched nothing (a date-only match of the old statement) joins the results at the retired
    record's score, so the history view shows what replaced it."""
    out, cand = score.copy(), mask.copy()
    for slot in _retired_best(bank, score, mask):
        succ = _successor_slot(bank, bank.index.keys[slot])
        if succ is None or not visible[succ]:
            continue
        if not cand[succ]:
            cand[succ] = True
            out[succ] = out[slot]
        if out[slot] >= out[succ]:
            out[slot] = math.nextafter(float(out[succ]), -math.inf)
    return out, cand
