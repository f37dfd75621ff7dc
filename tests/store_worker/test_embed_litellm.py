"""The litellm embedding backend through the real ``litellm.embedding`` path, answered by
litellm's own mock provider (``mock_response``): no network, no key."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable

import pytest

from shared.contract.errors import SourceUnavailableError
from store_worker.core import MemoryStore
from store_worker.recall.embed import LiteLLMEmbedder
from store_worker.storage.files import VECTORS

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import

MODEL = "openai/text-embedding-3-small"


def mocked(vector: list[float] | str) -> LiteLLMEmbedder:
    return LiteLLMEmbedder(MODEL, embedding_kwargs={"mock_response": vector})


def test_a_reply_becomes_a_unit_vector() -> None:
    [vec] = mocked([3.0, 4.0, 0.0]).embed(["The user lives in Lisbon"])
    assert vec == pytest.approx([0.6, 0.8, 0.0])
    assert math.isclose(sum(x * x for x in vec), 1.0)


def test_a_provider_failure_is_source_unavailable() -> None:
    with pytest.raises(SourceUnavailableError) as err:
        mocked("error").embed(["anything"])
    assert MODEL in err.value.message and err.value.retryable


def test_a_reply_with_the_wrong_number_of_vectors_is_refused() -> None:
    # litellm's mock answers one vector whatever it is sent: a provider that drops rows
    with pytest.raises(SourceUnavailableError) as err:
        mocked([1.0, 0.0]).embed(["first text", "second text"])
    assert "1 vectors for 2 texts" in err.value.message


def test_a_store_saves_and_recalls_through_litellm(
    fresh_store: Callable[..., MemoryStore],
) -> None:
    # Given a store whose embedder is the litellm backend (mock provider)
    store = fresh_store(embedder=mocked([0.0, 1.0, 0.0]))
    saved = store.save("The user has been vegetarian since January 2023.").memory
    # Then the vector landed in the sidecar under the model's name
    lines = (store.root / store.settings.default_bank / VECTORS).read_text()
    row = json.loads(lines.splitlines()[-1])
    assert row["id"] == saved.id and row["model"] == MODEL and row["v"] == [0.0, 1.0, 0.0]
    # And recall used the semantic arm
    got = store.recall("does the user eat meat?")
    assert got.retrieval != "lexical" and got.memories[0].memory.id == saved.id
    assert store.recall("does the user eat meat?", mode="semantic").retrieval == "semantic"
