"""The near-match check before a new memory is created (the memory.v1 conformance matrix:
"memory.remember fuzzy near-match check before creating a new record: MUST"), over ``StoreAPI``
only.

Shared by every front door that offers ``remember``: memory.v1 over gRPC
(``grpc_gateway.tools``) and the MCP server (``integrations.mcp_server``), so both answer the
same candidates for the same text.

Similarity (rapidfuzz): ``token_set_ratio`` scores a subset as 100 ("user
prefers tabs" vs "user prefers tabs over spaces"), so it is discounted by the length ratio and
paired with ``token_sort_ratio``; the larger wins.
"""

from __future__ import annotations

from rapidfuzz import fuzz

from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.models import Frozen, Memory
from shared.redact import redact
from shared.text import fingerprint, normalize

NEAR_MATCH = 0.75
CANDIDATE_POOL = 10


class Candidate(Frozen):
    """A record close to the text being remembered, and how close (0-1)."""

    memory: Memory
    similarity: float


def similarity(a: str, b: str) -> float:
    """Near-match score in [0, 1] of two texts, after normalisation."""
    na, nb = normalize(a), normalize(b)
    if not na or not nb:
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
