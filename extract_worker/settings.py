"""``ExtractorSettings``: everything the extractor reads, built once at start-up (STYLE §8).

Every field can be set with ``MEMORY_<FIELD>`` (the same prefix as the store's settings, so one
environment configures the family). Extraction is on only when it is enabled *and* a model is
configured (DESIGN §6: "Without an LLM configured, extraction is off and doctor says so").
"""

from __future__ import annotations

from pydantic import Field

from shared.config import EnvSettings


class ExtractorSettings(EnvSettings):
    extraction_enabled: bool = Field(True, description="Run extraction when a model is set.")
    extraction_model: str | None = Field(None, description="litellm model name.")
    extraction_window: int = Field(20, ge=1, le=200, description="Newest messages read per turn.")
    extraction_timeout_ms: int = Field(60_000, ge=100, description="One LLM call's timeout.")
    extraction_max_tokens: int = Field(1_024, ge=64, description="Reply token cap.")
    max_memories_per_turn: int = Field(5, ge=0, le=50, description="Memories kept per turn.")
    rule_learning_enabled: bool = Field(True, description="Learn rules.")
    context_memories: int = Field(12, ge=0, le=100, description="Known memories shown.")
    max_attempts: int = Field(5, ge=1, le=50, description="Tries before a job is dead-lettered.")
    backoff_ms: int = Field(2_000, ge=0, description="First retry delay; doubles per attempt.")
    backoff_max_ms: int = Field(300_000, ge=0, description="Longest retry delay.")
    claim_limit: int = Field(8, ge=1, le=500, description="Jobs leased per outbox claim.")
    poll_interval_s: float = Field(2.0, gt=0, description="Idle poll of the outbox (actor).")

    @property
    def enabled(self) -> bool:
        return self.extraction_enabled and bool(self.extraction_model)

    def backoff(self, attempt: int) -> int:
        """Delay before retry ``attempt + 1``: exponential, capped."""
        return int(min(self.backoff_ms * 2 ** max(attempt - 1, 0), self.backoff_max_ms))
