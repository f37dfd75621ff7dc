"""The near-match check before a new memory is created (the memory.v1 conformance matrix:
"memory.remember fuzzy near-match check before creating a new record: MUST"), over ``StoreAPI``
only.

Shared by every front door that offers ``remember``: memory.v1 over gRPC
(``grpc_gateway.tools``) and the MCP server (``integrations.mcp_server``), so both answer the
same candidates for the same text.

Similarity (rapidfuzz): ``token_set_ratio`` scores a subset as 100 ("user
prefers tabs" vs "user prefers tabs over spaces"), so it is discounted by the length ratio and
paired with ``token_sort_ratio``; the larger wins.

Facts that differ where it matters are never near (``distinct``): when each text holds a marked
token the other lacks (a number, a date, a time, an id or timestamp such as a long digit run, a
ULID or a hash, or a name), the second is a different fact, not a restatement: "noted at
1796582674965" vs "noted at 1796582684737" scored 0.95 and asked for a confirmation. One side
adding a detail ("tabs" vs "tabs in Python") is still near, and so is a change of common words
("likes tea" vs "likes coffee").
"""

from __future__ import annotations

import re

from rapidfuzz import fuzz

from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.models import Frozen, Memory
from shared.redact import redact
from shared.text import fingerprint, normalize

NEAR_MATCH = 0.75
CANDIDATE_POOL = 10

# a word, kept whole across inner - : . / ' (2026-12-06, 14:30, v1.2.3, 3f9a2c1e, O'Brien)
_WORD = re.compile(r"[^\W_]+(?:[-:./'][^\W_]+)*")
_DIGIT = re.compile(r"\d")
_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
_HEX_ID = re.compile(r"(?:0x)?[0-9a-f]{8,}")  # a hash or id in hex, even without a digit
# dates in words (capitalised ones are names already); "may" and "march" are common verbs
_DATE_WORDS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february april june "
    "july august september october november december".split()
)


class Candidate(Frozen):
    """A record close to the text being remembered, and how close (0-1)."""

    memory: Memory
    similarity: float


def _marked(text: str) -> tuple[set[str], set[str], set[str]]:
    """(marked tokens, names, every word) of ``text``, casefolded: a marked token holds a digit
    (a number, a date, a time, an id) or is a ULID, a hex id or a date word; a name is a
    word written with a capital."""
    marked, names, words = set(), set(), set()
    for word in _WORD.findall(text):
        folded = word.casefold()
        words.add(folded)
        if (
            _DIGIT.search(word)
            or _ULID.fullmatch(word)
            or _HEX_ID.fullmatch(folded)
            or folded in _DATE_WORDS
        ):
            marked.add(folded)
        elif word[0].isupper():
            names.add(folded)
    return marked, names, words


def distinct(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are different facts whatever their wording: each holds a
    number, date, id or name the other lacks (a name written in lower case on the other side,
    as a sentence's first word may be, is the same word)."""
    ma, na, wa = _marked(a)
    mb, nb, wb = _marked(b)
    only_a = (ma - mb) | (na - wb)
    only_b = (mb - ma) | (nb - wa)
    return bool(only_a and only_b)


def similarity(a: str, b: str) -> float:
    """Near-match score in [0, 1] of two texts, after normalisation; 0 for ``distinct``
    facts (a different number, date, id or name)."""
    na, nb = normalize(a), normalize(b)
    if not na or not nb or distinct(a, b):
        return 0.0
    shorter, longer = sorted((len(na), len(nb)))
    subset = fuzz.token_set_ratio(na, nb) * (0.6 + 0.4 * shorter / longer)
    return max(fuzz.token_sort_ratio(na, nb), subset) / 100.0


def near_matches(
    store: StoreAPI,
    body: str,
    *,
    bank: str | None,
    session_id: str | None,
    project: str | None,
    threshold: float,
    include_pending: bool,
) -> tuple[tuple[Candidate, ...], str]:
    """Visible records within ``threshold`` of ``body``, closest first, and the bank asked."""
    try:
        found = store.recall(
            body,
            bank=bank,
            limit=CANDIDATE_POOL,
            session_id=session_id,
            project=project,
            include_pending=include_pending,
        )
    except errors.NotFoundError:  # a bank that does not exist yet holds no near-match
        return (), ""
    scored = [
        Candidate(memory=h.memory, similarity=similarity(body, h.memory.text))
        for h in found.memories
    ]
    near = [c for c in scored if c.similarity >= threshold]
    near.sort(key=lambda c: (-c.similarity, c.memory.id))
    return tuple(near), found.bank


def restates(near: tuple[Candidate, ...], body: str, scope: str) -> bool:
    """Whether ``body`` is the very same fact as a candidate (same fingerprint and scope):
    not ambiguous, the store's ``save`` reinforces it."""
    fp = fingerprint(redact(body).text)
    return any(c.memory.fingerprint == fp and c.memory.scope == scope for c in near)


def check_threshold(threshold: float) -> float:
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0.0 < threshold <= 1.0  # also refuses NaN
    ):
        raise errors.InvalidArgumentError("threshold must be a number in (0, 1]")
    return float(threshold)
