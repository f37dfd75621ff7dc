"""Neighbouring dialog turns of one session as context at recall.

A conversation saved turn by turn leaves short turns that say little alone: "Three years now!"
answers "How long have you had your turtles?", the turn before it. Recall lends each
candidate part of the score of its neighbours, the turns saved just before (``W_BEFORE``) and
after it (``W_AFTER``) in the same source session, so the answer ranks beside the question
that names its subject. A turn that asks (its text ends in "?") is context rather than a
fact: the turn after it gains ``W_QUESTION`` of its score, and its own score is multiplied by
``QUESTION_DAMP``. A neighbour lifted this way becomes a candidate; nothing propagates
further than one turn. The lexical score (boosts and decay applied) is what propagates, before
the cosine is fused in: lending the cosine too was measured and lost (HISTORY.md §12).

Only dialog turns are chained: live memories with a ``provenance.source_session_id`` whose
text opens with a speaker label (``entities.speaker_of``: "Caroline: ..."). A bare explicit
save and an extracted fact ("The user keeps two turtles.", which carries its session too) have
no neighbours and are scored as before.

``context_coverage``: a short turn is read with its neighbours as context. "Three years now!"
matches "How long have you had the turtles" on nothing of its own: a candidate dialog turn's
lexical score is multiplied by ``1 + W_COVERAGE·c``, where ``c`` is the IDF-weighted share of
the query's distinct terms that the turn or its neighbouring turns (the one before and the one
after, same session) contain: the passage around the turn answers more of the question. It
runs before the lending above. Measured variants (HISTORY.md §14): the neighbours alone
(without the turn), after the lending, short turns only, unweighted shares: all lost.

``session_focus``: the best few results say which conversations the question is about; the
other candidate turns of those sessions grow by ``W_SESSION`` (capped just below the best
result, so the first hit stays first). Evidence for one question tends to sit in one or two
sessions; the cosine arm spreads its scores over all of them (HISTORY.md §14).

``named_speakers``: a question naming a speaker of those turns ("What did Melanie paint?") is
about what that speaker said, so their candidate turns' scores grow by ``SPEAKER_BOOST``.

``prefer_timed`` (any memory, not only dialog turns): a question asking when
(``query.asks_when``) multiplies its candidates that name a time (``query.names_a_time``: a
weekday, a month, a year, "yesterday", "last week", "three years ago") by ``1 + W_WHEN``; only
the best ``WHEN_POOL`` candidates are read, and whether a memory names a time is read once
per index slot and cached (a slot never changes record).

Order within a session is ``(created_at, id)``, which survives a reload (index slots do not).
The chains are derived from the bank's records and cached per index; a recall after new saves
extends them in place when every new turn is the newest of its session (turns saved as they
happen) and rebuilds them (one pass over the bank's records) otherwise.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from shared.text import entity_norm, words
from store_worker.recall.index import BankIndex
from store_worker.recall.query import asks_when, names_a_time
from store_worker.storage.bank import Bank

# The share of a neighbour's score a turn gains: from the turn before it and the turn after it
# (measured on the LoCoMo eval, tests/recall_quality/HISTORY.md §12).
W_BEFORE = 0.3
W_AFTER = 0.3
# After a turn that asks, the answer gains more of its score, and the question is damped.
W_QUESTION = 0.8
QUESTION_DAMP = 0.7
# A question naming a speaker prefers that speaker's turns by this factor, plus one.
SPEAKER_BOOST = 0.5
# The other candidate turns of the sessions of the best FOCUS_TOP results grow by this share.
W_SESSION = 0.2
FOCUS_TOP = 3
# A candidate turn's score grows by this factor times the IDF-weighted share of the query's
# terms that it and its neighbouring turns hold (HISTORY.md §14).
W_COVERAGE = 2.0

# The factor a "when" question's candidates that name a time gain, minus one (HISTORY.md §16).
W_WHEN = 0.5
# Only this many of the best candidates are read for a time (a one-shot CLI recall decodes
# each record it reads from the snapshot: a broad match must not decode thousands).
WHEN_POOL = 256
# Per index: -1 not read yet, else whether the memory in that slot names a time.
_TIMED: weakref.WeakKeyDictionary[BankIndex, npt.NDArray[np.int8]] = weakref.WeakKeyDictionary()

I64 = npt.NDArray[np.int64]


@dataclass
class _Chains:
    """``prev[slot]`` / ``next[slot]``: the neighbouring slot in the same session, or -1."""

    seen: int = 0  # index slots accounted for
    prev: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    next: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    tail: dict[str, tuple[float, str, int]] = field(default_factory=dict)  # session → newest
    any_link: bool = False
    asks: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    speaker: dict[str, list[int]] = field(default_factory=dict)  # speaker handle → its slots
    session: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # slot → code
    codes: dict[str, int] = field(default_factory=dict)  # source session → its code


_CHAINS: weakref.WeakKeyDictionary[BankIndex, _Chains] = weakref.WeakKeyDictionary()


def _session_order(
    bank: Bank, slot: int, created_at: float
) -> tuple[str, float, str, bool, str] | None:
    """(session, created_at, id, asks, speaker) of the dialog turn in ``slot`` (the caller
    reads ``created_at`` off the index's column, once per pass)."""
    found = bank.turn_at(slot)
    if found is None:
        return None
    session, asks, speaker = found
    return session, created_at, bank.index.keys[slot], asks, speaker


def _rebuild(bank: Bank) -> _Chains:
    idx = bank.index
    size = len(idx.keys)
    alive = idx.col("alive").astype(bool)
    by_session: dict[str, list[tuple[float, str, int]]] = {}
    asks = np.zeros(size, dtype=bool)
    speakers: dict[str, list[int]] = {}
    created_col = idx.col("created_at").tolist()
    for slot in np.flatnonzero(alive).tolist():
        found = _session_order(bank, slot, created_col[slot])
        if found is not None:
            by_session.setdefault(found[0], []).append((found[1], found[2], slot))
            asks[slot] = found[3]
            speakers.setdefault(entity_norm(found[4]), []).append(slot)
    chains = _Chains(
        seen=size,
        prev=np.full(size, -1, dtype=np.int64),
        next=np.full(size, -1, dtype=np.int64),
        asks=asks,
        speaker=speakers,
        session=np.full(size, -1, dtype=np.int64),
    )
    for session, rows in by_session.items():
        rows.sort()
        slots = [s for _, _, s in rows]
        chains.session[slots] = chains.codes.setdefault(session, len(chains.codes))
        if len(slots) > 1:
            chains.any_link = True
            chains.prev[slots[1:]] = slots[:-1]
            chains.next[slots[:-1]] = slots[1:]
        chains.tail[session] = rows[-1]
    return chains


def _extend(bank: Bank, chains: _Chains) -> bool:
    """Append the slots indexed since ``chains.seen``; False when one is not the newest of
    its session or replaced a record already chained (then the caller rebuilds)."""
    idx = bank.index
    size = len(idx.keys)
    alive = idx.col("alive").astype(bool)
    # a slot that died since (an update, a supersede, a delete) breaks the chain it was in
    known = chains.prev[: chains.seen]
    if (known >= 0).any() or (chains.next[: chains.seen] >= 0).any():
        linked = (known >= 0) | (chains.next[: chains.seen] >= 0)
        if (linked & ~alive[: chains.seen]).any():
            return False
    prev = np.concatenate([chains.prev, np.full(size - chains.seen, -1, dtype=np.int64)])
    nxt = np.concatenate([chains.next, np.full(size - chains.seen, -1, dtype=np.int64)])
    asks = np.concatenate([chains.asks, np.zeros(size - chains.seen, dtype=bool)])
    sess = np.concatenate([chains.session, np.full(size - chains.seen, -1, dtype=np.int64)])
    codes = dict(chains.codes)
    tail = dict(chains.tail)
    speakers = {k: list(v) for k, v in chains.speaker.items()}
    created_col = idx.col("created_at")
    for slot in range(chains.seen, size):
        if not alive[slot]:
            continue
        found = _session_order(bank, slot, float(created_col[slot]))
        if found is None:
            continue
        session, created, mem_id, asks[slot], speaker = found
        speakers.setdefault(entity_norm(speaker), []).append(slot)
        sess[slot] = codes.setdefault(session, len(codes))
        last = tail.get(session)
        if last is not None:
            if (created, mem_id) < last[:2] or not alive[last[2]]:
                return False
            prev[slot] = last[2]
            nxt[last[2]] = slot
            chains.any_link = True
        tail[session] = (created, mem_id, slot)
    chains.prev, chains.next, chains.tail, chains.seen = prev, nxt, tail, size
    chains.asks, chains.speaker = asks, speakers
    chains.session, chains.codes = sess, codes
    return True


def chains(bank: Bank) -> _Chains:
    """The bank's session chains, brought up to date with its index."""
    idx = bank.index
    cached = _CHAINS.get(idx)
    size = len(idx.keys)
    if cached is None or cached.seen > size or (cached.seen < size and not _extend(bank, cached)):
        cached = _rebuild(bank)
        _CHAINS[idx] = cached
    return cached


def with_neighbours(
    bank: Bank,
    score: npt.NDArray[np.float64],
    cand: npt.NDArray[np.bool_],
    visible: npt.NDArray[np.bool_],
    *,
    w_before: float = W_BEFORE,
    w_after: float = W_AFTER,
    w_question: float = W_QUESTION,
    question_damp: float = QUESTION_DAMP,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Each visible memory gains ``w_before`` times its predecessor's score and ``w_after``
    times its successor's (scores of candidates only); a visible neighbour of a candidate
    becomes a candidate. Returns new arrays; with no session chains, the inputs unchanged."""
    ch = chains(bank)
    if not ch.any_link or (w_before <= 0 and w_after <= 0):
        return score, cand
    base = np.where(cand, score, 0.0)
    out = score.copy()
    for links, w, w_q in ((ch.prev, w_before, w_question), (ch.next, w_after, w_after)):
        if w <= 0 and w_q <= 0:
            continue
        has = links >= 0
        gain = np.zeros_like(base)
        gain[has] = base[links[has]] * np.where(ch.asks[links[has]], w_q, w)
        out += gain
    if question_damp != 1.0:
        out = np.where(ch.asks & cand, out * question_damp, out)
    new_cand = cand | (visible & (out > 0))
    out = np.where(new_cand, out, score)
    return out, new_cand


def named_speakers(
    bank: Bank,
    score: npt.NDArray[np.float64],
    cand: npt.NDArray[np.bool_],
    query: str,
    *,
    boost: float = SPEAKER_BOOST,
) -> npt.NDArray[np.float64]:
    """A question that names a speaker of the bank's dialog turns ("What did Melanie paint?")
    is about what that speaker said: their candidate turns' scores are multiplied by
    ``1 + boost``. A speaker is named by their whole handle or its first part."""
    if boost <= 0:
        return score
    ch = chains(bank)
    if not ch.speaker:
        return score
    ws = [entity_norm(w) for w in words(query)]
    said = set(ws) | {"-".join(ws[i : i + 2]) for i in range(len(ws) - 1)}
    slots = [
        s
        for handle, held in ch.speaker.items()
        if handle in said or handle.split("-")[0] in said
        for s in held
    ]
    if not slots:
        return score
    out = score.copy()
    picked = np.asarray(slots, dtype=np.int64)
    picked = picked[cand[picked]]  # chains() is up to date: every slot is in range
    out[picked] *= 1.0 + boost
    return out


def context_coverage(
    bank: Bank,
    score: npt.NDArray[np.float64],
    cand: npt.NDArray[np.bool_],
    terms: list[str],
    *,
    weight: float = W_COVERAGE,
) -> npt.NDArray[np.float64]:
    """Each candidate dialog turn's score times ``1 + weight·c``, ``c`` the IDF-weighted share
    of the distinct ``terms`` (query tokens) held by the turn or by the turn before or after
    it in its session. Returns a new array; with no chains, no terms or no weight, ``score``
    unchanged."""
    distinct = sorted(set(terms))
    if weight <= 0 or not distinct:
        return score
    ch = chains(bank)
    if not ch.any_link:
        return score
    idx = bank.index
    size = len(idx.keys)
    has_prev, has_next = ch.prev >= 0, ch.next >= 0
    linked = cand & (has_prev | has_next)
    total = sum(idx.idf(term) for term in distinct)
    if not linked.any() or total <= 0:
        return score
    covered = np.zeros(size, dtype=np.float64)
    for term in distinct:
        post = idx.terms.get(term)
        if post is None:
            continue
        holds = np.zeros(size, dtype=bool)
        holds[post.view()[0]] = True
        near = holds.copy()
        near[has_prev] |= holds[ch.prev[has_prev]]
        near[has_next] |= holds[ch.next[has_next]]
        covered[near] += idx.idf(term)
    out = score.copy()
    out[linked] *= 1.0 + weight * covered[linked] / total
    return out


def session_focus(
    bank: Bank,
    score: npt.NDArray[np.float64],
    cand: npt.NDArray[np.bool_],
    *,
    weight: float = W_SESSION,
    top: int = FOCUS_TOP,
) -> npt.NDArray[np.float64]:
    """The other candidate dialog turns of the sessions of the ``top`` best candidates gain
    ``weight`` of their score, never reaching the best candidate's score. Returns a new array;
    with no chains or no weight, ``score`` unchanged."""
    if weight <= 0 or top <= 0:
        return score
    ch = chains(bank)
    if not ch.any_link:
        return score
    slots = np.flatnonzero(cand & (ch.session >= 0))
    if not len(slots):
        return score
    every = np.flatnonzero(cand)
    order = every[np.lexsort((every, -score[every]))]  # best first, ties by slot
    best = order[:top]
    sessions = ch.session[best]
    sessions = sessions[sessions >= 0]
    if not len(sessions):
        return score
    lifted = slots[np.isin(ch.session[slots], sessions) & ~np.isin(slots, best)]
    if not len(lifted):
        return score
    out = score.copy()
    ceiling = float(np.nextafter(score[order[0]], -np.inf))
    out[lifted] = np.maximum(score[lifted], np.minimum(score[lifted] * (1.0 + weight), ceiling))
    return out


def _timed(bank: Bank, slots: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    idx = bank.index
    flags = _TIMED.get(idx)
    size = len(idx.keys)
    if flags is None or len(flags) < size:
        grown = np.full(max(size, 64), -1, dtype=np.int8)
        if flags is not None:
            grown[: len(flags)] = flags
        flags = _TIMED[idx] = grown
    for slot in slots[flags[slots] < 0].tolist():
        mem = bank.records.get(idx.keys[slot])
        flags[slot] = mem is not None and names_a_time(mem.text)
    return flags[slots] > 0


def prefer_timed(
    bank: Bank,
    score: npt.NDArray[np.float64],
    cand: npt.NDArray[np.bool_],
    query: str,
    *,
    weight: float = W_WHEN,
) -> npt.NDArray[np.float64]:
    """A "when" question's candidates that name a time, their scores × ``1 + weight``."""
    if weight <= 0 or not asks_when(query):
        return score
    slots = np.flatnonzero(cand)
    if len(slots) > WHEN_POOL:
        slots = slots[np.argpartition(-score[slots], WHEN_POOL)[:WHEN_POOL]]
    picked = slots[_timed(bank, slots)]
    if not len(picked):
        return score
    out = score.copy()
    out[picked] *= 1.0 + weight
    return out
