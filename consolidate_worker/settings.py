"""The consolidator's settings: one explicit model, built once at start-up.

``ConsolidatorSettings.from_env()`` reads ``MEMORY_CONSOLIDATE_<FIELD>`` once; nothing reads the
environment at import time. The similarity thresholds are on rapidfuzz's 0-100 scale.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, SecretStr, model_validator

from shared.contract.config import EnvSettings
from shared.llm.endpoint import api_key

ENV_PREFIX = "MEMORY_CONSOLIDATE_"
KEY_VARIABLE = "MEMORY_CONSOLIDATE_JUDGE_API_KEY"


class ConsolidatorSettings(EnvSettings):
    """Everything a pass and its schedule read."""

    env_prefix: ClassVar[str] = ENV_PREFIX
    error_label: ClassVar[str] = "consolidator setting"
    error_root: ClassVar[str] = "settings"

    interval_hours: float = Field(24.0, gt=0, description="Hours between scheduled passes.")
    run_on_boot: bool = Field(True, description="Catch up at boot when the last pass is stale.")
    banks: tuple[str, ...] = Field((), description="Banks to consolidate; empty means all.")
    max_supersedes_per_run: int = Field(500, ge=0, description="Cap of supersedes in one pass.")
    candidates_per_memory: int = Field(
        10, ge=1, le=100, description="Lexical (and semantic) neighbours scored per memory."
    )
    candidate_source: Literal["auto", "recall", "local"] = Field(
        "auto",
        description="recall: recall() per memory; local: rare-token blocking over the listed "
        "bank; auto: both up to recall_max_bank memories, local only above (candidates.py).",
    )
    recall_max_bank: int = Field(
        20_000, ge=0, description="Largest bank whose memories each get a recall() query."
    )
    semantic_candidates: bool = Field(
        True, description="Also ask recall(mode=semantic) when the store can embed."
    )
    page_size: int = Field(500, ge=1, le=500, description="list() page size while reading.")
    duplicate_score: float = Field(
        88.0, ge=0, le=100, description="Combined score at or above which two memories merge."
    )
    grey_score: float = Field(
        72.0, ge=0, le=100, description="Lower edge of the ambiguous band sent to the judge."
    )
    min_length_ratio: float = Field(
        0.75, ge=0, le=1, description="Shorter/longer word count below which it is no duplicate."
    )
    max_group_size: int = Field(50, ge=2, description="A group never grows past this size.")
    judge_enabled: bool = Field(False, description="Turn the optional LLM judge tier on.")
    judge_model: str | None = Field(None, description="litellm model of the judge tier.")
    judge_api_base: str | None = Field(
        None,
        description="URL of an OpenAI-compatible server (llama.cpp, Ollama, vLLM) to send the "
        "judge's calls to, e.g. http://127.0.0.1:8080/v1.",
    )
    judge_api_key_env: str | None = Field(
        None,
        description="NAME of the environment variable holding the judge's API key, e.g. "
        "OPENAI_API_KEY (default: litellm's own provider variable).",
    )
    judge_api_key: SecretStr | None = Field(
        None,
        description="The judge's key itself, as `memory up` hands it to the actors (read from "
        "the variable judge_api_key_env names; never printed).",
    )
    judge_max_calls: int = Field(50, ge=0, description="Judge calls allowed in one pass.")
    judge_semantic_min: float = Field(
        0.6,
        ge=0,
        le=1,
        description="Cosine at or above which a semantic neighbour pair the deterministic tier "
        "did not merge goes to the judge as a possible paraphrase (model-dependent: 0.6 suits "
        "all-MiniLM-L6-v2; see tests/recall_quality/HISTORY.md).",
    )
    judge_memo_size: int = Field(
        20_000, ge=0, description="Judged pairs remembered across passes, so none is re-asked."
    )
    judge_timeout_s: float = Field(30.0, gt=0, description="Timeout of one judge call.")
    promote_corroboration_threshold: int = Field(
        0, ge=0, description="Corroboration that proposes a memory as a learned rule (0 = off)."
    )

    @model_validator(mode="after")
    def _bands(self) -> ConsolidatorSettings:
        if self.grey_score > self.duplicate_score:
            raise ValueError("grey_score must not exceed duplicate_score")
        if self.judge_enabled and not self.judge_model:
            raise ValueError("judge_enabled needs judge_model")
        return self

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, prefix: str | None = None, **overrides: Any
    ) -> Self:
        """``EnvSettings.from_env``, with the judge's key read as ``shared.llm.endpoint.api_key``
        says: the variable ``MEMORY_CONSOLIDATE_JUDGE_API_KEY_ENV`` names, else
        ``MEMORY_CONSOLIDATE_JUDGE_API_KEY``."""
        source = os.environ if env is None else env
        overrides.setdefault("judge_api_key", api_key(source, KEY_VARIABLE))
        return super().from_env(source, prefix=prefix, **overrides)

    def judge_key(self) -> str | None:
        """The judge's API key (``None``: litellm's own provider variable)."""
        return self.judge_api_key.get_secret_value() if self.judge_api_key is not None else None

    @classmethod
    def parse_env(cls, name: str, raw: str) -> Any:
        # MEMORY_CONSOLIDATE_BANKS=a,b: a comma-separated list; empty items are dropped.
        return tuple(b for b in raw.split(",") if b) if name == "banks" else raw

    @property
    def interval_ms(self) -> int:
        return int(self.interval_hours * 3_600_000)
