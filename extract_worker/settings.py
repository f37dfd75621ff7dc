"""``ExtractorSettings``: everything the extractor reads, built once at start-up (no module
reads the environment later, so a running actor never changes behaviour under its feet).

Every field can be set with ``MEMORY_<FIELD>`` (the same prefix as the store's settings, so one
environment configures the family). Extraction is on only when it is enabled *and* a model is
configured: without a model, extraction is off and ``memory doctor`` says so.

Any OpenAI-compatible server: ``MEMORY_EXTRACTION_API_BASE`` (``memory up
--extraction-api-base``) and the NAME of the variable holding its key,
``MEMORY_EXTRACTION_API_KEY_ENV`` (``shared.llm.endpoint``). ``memory up`` reads the key and
passes it to the actors as ``MEMORY_EXTRACTION_API_KEY``; it is a ``SecretStr``, shown nowhere.

The retry policy is not here: the store owns the outbox, so tries and backoff are the store's
``MEMORY_OUTBOX_MAX_ATTEMPTS``, ``_BACKOFF_MS``, ``_BACKOFF_MAX_MS`` (``StoreSettings``), which
the extractor reads from ``capabilities()["outbox"]``. The extractor's former
``MEMORY_MAX_ATTEMPTS``, ``MEMORY_BACKOFF_MS`` and ``MEMORY_BACKOFF_MAX_MS`` are gone: set, they
change nothing, and ``retired_settings`` names them so the actor warns at start.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

from pydantic import Field, SecretStr

from shared.contract.config import EnvSettings
from shared.llm.endpoint import api_key

if TYPE_CHECKING:
    from shared.llm import LLM

KEY_VARIABLE = "MEMORY_EXTRACTION_API_KEY"


class ExtractorSettings(EnvSettings):
    extraction_enabled: bool = Field(True, description="Run extraction when a model is set.")
    extraction_model: str | None = Field(None, description="litellm model name.")
    extraction_api_base: str | None = Field(
        None,
        description="URL of an OpenAI-compatible server (llama.cpp, Ollama, vLLM) to send the "
        "model's calls to, e.g. http://127.0.0.1:8080/v1.",
    )
    extraction_api_key_env: str | None = Field(
        None,
        description="NAME of the environment variable holding the API key, e.g. OPENAI_API_KEY "
        "(default: litellm's own provider variable).",
    )
    extraction_api_key: SecretStr | None = Field(
        None,
        description="The key itself, as `memory up` hands it to the actors (read from the "
        "variable extraction_api_key_env names; never printed).",
    )
    extraction_window: int = Field(20, ge=1, le=200, description="Newest messages read per turn.")
    extraction_timeout_ms: int = Field(60_000, ge=100, description="One LLM call's timeout.")
    extraction_max_tokens: int = Field(1_024, ge=64, description="Reply token cap.")
    max_memories_per_turn: int = Field(5, ge=0, le=50, description="Memories kept per turn.")
    rule_learning_enabled: bool = Field(True, description="Learn rules.")
    context_memories: int = Field(12, ge=0, le=100, description="Known memories shown.")
    claim_limit: int = Field(8, ge=1, le=500, description="Jobs leased per outbox claim.")
    poll_interval_s: float = Field(2.0, gt=0, description="Idle poll of the outbox (actor).")

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, prefix: str | None = None, **overrides: Any
    ) -> Self:
        """``EnvSettings.from_env``, with the key read as ``shared.llm.endpoint.api_key`` says:
        the variable ``MEMORY_EXTRACTION_API_KEY_ENV`` names, else ``MEMORY_EXTRACTION_API_KEY``."""
        source = os.environ if env is None else env
        overrides.setdefault("extraction_api_key", api_key(source, KEY_VARIABLE))
        return super().from_env(source, prefix=prefix, **overrides)

    @property
    def enabled(self) -> bool:
        return self.extraction_enabled and bool(self.extraction_model)

    def llm(self) -> LLM:
        """The litellm backend these settings point at (``extraction_api_base``, the key)."""
        from shared.llm import create_llm

        key = self.extraction_api_key
        return create_llm(
            api_base=self.extraction_api_base,
            api_key=key.get_secret_value() if key is not None else None,
        )


# The extractor's own retry settings before the store owned the policy → what replaces them.
RETIRED = {
    "MEMORY_MAX_ATTEMPTS": "MEMORY_OUTBOX_MAX_ATTEMPTS",
    "MEMORY_BACKOFF_MS": "MEMORY_OUTBOX_BACKOFF_MS",
    "MEMORY_BACKOFF_MAX_MS": "MEMORY_OUTBOX_BACKOFF_MAX_MS",
}


def retired_settings(env: Mapping[str, str]) -> list[str]:
    """One line per retired variable set in ``env``: what it was, and the store's setting."""
    return [
        f"{old} no longer applies (the store owns the retry policy): set {new} on the store"
        for old, new in RETIRED.items()
        if env.get(old)
    ]
