"""The semantic arm's outside dependency behind a small interface (STYLE §9).

``Embedder.embed(texts)`` returns one unit vector per text. Two backends ship:
``LiteLLMEmbedder`` (any provider litellm knows, imported lazily on first use because importing
litellm costs ~6 s; FACTS.md) and ``FakeEmbedder``, a deterministic feature-hashing embedder
for tests that makes texts sharing words (or word stems) land close together.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

import numpy as np

from shared.errors import SourceUnavailableError
from shared.text import tokenize


class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def _unit(vec: np.ndarray[Any, np.dtype[np.float64]]) -> list[float]:
    norm = float(np.linalg.norm(vec))
    return [float(x) for x in (vec / norm if norm > 0 else vec)]


class FakeEmbedder:
    """Feature hashing of stemmed tokens and character trigrams into ``dim`` buckets."""

    def __init__(self, dim: int = 64, *, fail: bool = False) -> None:
        self.dim = dim
        self.fail = fail
        self.name = f"fake-{dim}"
        self.calls = 0

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if (value >> 40) & 1 else -1.0)

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.fail:
            raise SourceUnavailableError("fake embedder is set to fail")
        out = []
        for text in texts:
            vec = np.zeros(self.dim)
            for tok in tokenize(text):
                idx, sign = self._bucket(tok)
                vec[idx] += sign
                for i in range(max(len(tok) - 2, 0)):
                    idx, sign = self._bucket("#" + tok[i : i + 3])
                    vec[idx] += 0.3 * sign
            out.append(_unit(vec))
        return out


class LiteLLMEmbedder:
    """Embeddings through ``litellm.embedding`` for whatever model the user configures."""

    def __init__(self, model: str, *, timeout: float = 30.0) -> None:
        self.model = model
        self.name = model
        self.timeout = timeout

    def embed(self, texts: list[str]) -> list[list[float]]:
        try:
            import litellm  # lazy: ~6 s and ~200 MB, paid only when embeddings are on

            reply = litellm.embedding(model=self.model, input=texts, timeout=self.timeout)
        except Exception as e:  # any provider failure means the arm is unavailable now
            raise SourceUnavailableError(f"embedding model {self.model} failed: {e}") from e
        rows = sorted(reply.data, key=lambda item: item["index"])
        return [_unit(np.asarray(row["embedding"], dtype=np.float64)) for row in rows]
