"""``ExtractorSettings``: everything the extractor reads, built once at start-up (no module
reads the environment later, so a running actor never changes behaviour under its feet).

Every field can be set with ``MEMORY_<FIELD>`` (the same prefix as the store's settings, so one
environment configures the family). Extraction is on only when it is enabled *and* a model is
configured: without a model, extraction is off and ``memory doctor`` says so.

The retry policy is not here: the store owns the outbox, so tries and backoff are the store's
``MEMORY_OUTBOX_MAX_ATTEMPTS``, ``_BACKOFF_MS``, ``_BACKOFF_MAX_MS`` (``StoreSettings``), which
the extractor reads from ``capabilities()["outbox"]``. The extractor's former
``MEMORY_MAX_ATTEMPTS``, ``MEMORY_BACKOFF_MS`` and ``MEMORY_BACKOFF_MAX_MS`` are gone: set, they
change nothing, and ``retired_settings`` names them so the actor warns at start.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from shared.contract.config import EnvSettings


class ExtractorSettings(EnvSettings):
    extraction_enabled: bool = Field(True, description="Run extraction when a model is set.")
    extraction_model: str | None = Field(None, description="litellm model name.")
    extraction_api_base: str | None = Field(
        None, description="URL of an OpenAI-compatible server to send the model's calls to."
    )
    extraction_window: int = Field(20, ge=1, le=200, description="Newest messages read per turn.")
    extraction_timeout_ms: int = Field(60_000, ge=100, description="One LLM call's timeout.")
    extraction_max_tokens: int = Field(1_024, ge=64, description="Reply token cap.")
    max_memories_per_turn: int = Field(5, ge=0, le=50, description="Memories kept per turn.")
    rule_learning_enabled: bool = Field(True, description="Learn rules.")
    context_memories: int = Field(12, ge=0, le=100, description="Known memories shown.")
    claim_limit: int = Field(8, ge=1, le=500, description="Jobs leased per outbox claim.")
    poll_interval_s: float = Field(2.0, gt=0, description="Idle poll of the outbox (actor).")

    @property
    def enabled(self) -> bool:
        return self.extraction_enabled and bool(self.extraction_model)


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
