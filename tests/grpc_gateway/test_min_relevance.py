"""memory.v1 Recall's ``min_relevance`` (an extension, RecallRequest field 12) over a real gRPC
channel: unset keeps the answer Recall gave before the field existed, a threshold keeps exactly
what the store's own ``recall(..., min_relevance=...)`` keeps, and 0 is a threshold (it keeps
everything), not "unset". Out-of-range values are in ``test_bad_input.py``'s cases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shared.proto.memory.v1 import memory_pb2 as pb
from tests.grpc_gateway.conftest import Gateway

TEXTS = (
    "The user deploys the billing service with the kestrel tool on Fridays",
    "The kestrel tool needs a VPN to reach staging",
    "Billing invoices are sent on the first of the month",
    "The user prefers green tea in the afternoon",
    "Staging deploys run nightly from the main branch",
    "The kestrel dashboard lives at the ops wiki",
)
QUERY = "kestrel tool"
BUDGET = 100_000

Hits = list[tuple[str, float]]


@pytest.fixture
def seeded(make_gateway: Callable[..., Gateway]) -> Gateway:
    """A gateway whose store holds TEXTS, its clock stopped: recency decay makes a ranking a
    function of "now", so the gateway and the store must rank at one instant."""
    gw = make_gateway()
    for text in TEXTS:
        gw.memory.Record(
            pb.RecordRequest(
                type=pb.MEMORY_TYPE_USER,
                scope=pb.MEMORY_SCOPE_GLOBAL,
                content=[pb.ContentBlock(text=text)],
            ),
            timeout=10,
        )
    gw.clock.tick = 0
    return gw


def _recall(gw: Gateway, **fields: Any) -> Hits:
    request = pb.RecallRequest(query=QUERY, token_budget=BUDGET, **fields)
    return [(r.id, r.relevance_score) for r in gw.memory.Recall(request, timeout=10).records]


def _store_recall(gw: Gateway, **kw: Any) -> Hits:
    found = gw.store.recall(QUERY, token_budget=BUDGET, **kw)
    return [(h.memory.id, h.relevance_score) for h in found.memories]


def test_unset_min_relevance_gives_every_hit_as_before(seeded: Gateway) -> None:
    # Given a query some records answer well and one only in passing
    request = pb.RecallRequest(query=QUERY, token_budget=BUDGET)
    assert not request.HasField("min_relevance")
    # When Recall is sent without min_relevance
    hits = _recall(seeded)
    # Then it is the store's recall with no threshold: hits under 0.5 and over it alike
    assert hits == _store_recall(seeded)
    assert [s for _, s in hits if s < 0.5] and [s for _, s in hits if s >= 0.5]


def test_min_relevance_half_drops_the_hits_under_half(seeded: Gateway) -> None:
    # Given the unthresholded answer
    everything = _recall(seeded)
    # When Recall asks for min_relevance 0.5
    kept = _recall(seeded, min_relevance=0.5)
    # Then it keeps what the store's own recall keeps at 0.5, in the same order: every hit at
    # or above 0.5, none under
    assert kept == _store_recall(seeded, min_relevance=0.5)
    assert kept == [(i, s) for i, s in everything if s >= 0.5]
    assert 0 < len(kept) < len(everything)


@pytest.mark.parametrize("threshold", [0.0, 1.0])
def test_the_range_ends_are_accepted_and_zero_is_no_cut(seeded: Gateway, threshold: float) -> None:
    # When Recall asks for a threshold at either end of [0, 1]
    kept = _recall(seeded, min_relevance=threshold)
    # Then it is served like the store's recall at that threshold, never refused; 0 keeps
    # every hit
    assert kept == _store_recall(seeded, min_relevance=threshold)
    if threshold == 0.0:
        assert kept == _recall(seeded)


def test_min_relevance_applies_to_a_recall_without_a_query(seeded: Gateway) -> None:
    # Given Recall as context assembly: no query, ranked by standing strength (no message to
    # be relevant to: every record's relevance is 0)
    request = pb.RecallRequest(token_budget=BUDGET, files_touched=["tools/kestrel.py"])
    ambient = seeded.memory.Recall(request, timeout=10).records
    assert ambient and {r.relevance_score for r in ambient} == {0.0}
    # When the same request asks for a threshold above 0
    request.min_relevance = 0.3
    # Then nothing meets it, as in the store's own recall
    assert list(seeded.memory.Recall(request, timeout=10).records) == []
    assert seeded.store.recall("", hint="tools kestrel", min_relevance=0.3).memories == ()
