"""Explicit settings, built once at start-up and passed in (STYLE §8).

``StoreSettings.from_env()`` reads ``MEMORY_*`` variables once; nothing reads the environment at
import time. ``configure`` validates a partial update against the same model, so an unknown or
ill-typed key is an ``InvalidArgumentError`` and changes nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.errors import InvalidArgumentError

DEFAULT_DATA_DIR = "./data/memory"


class StoreSettings(BaseModel):
    """Everything the store actor reads; every field can be set with ``MEMORY_<FIELD>``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: str = Field(
        DEFAULT_DATA_DIR, description="Root folder of banks (the source of truth)."
    )
    default_bank: str = Field("main", description="Bank used when a call names none.")
    recall_limit: int = Field(10, ge=1, le=500, description="Default number of recalled memories.")
    recall_budget_tokens: int = Field(
        1500, ge=0, description="Token budget of a turn's recalled block."
    )
    decay_half_life_days: float = Field(60.0, gt=0, description="Recency half-life (DESIGN §4).")
    max_text_chars: int = Field(16_000, ge=1, description="Largest memory text accepted.")
    ratification: bool = Field(False, description="Automatic writes land as pending drafts.")
    token_model: str | None = Field(None, description="Model whose tokenizer counts tokens.")
    embeddings_enabled: bool = Field(False, description="Turn the semantic arm on.")
    embedding_model: str | None = Field(
        None, description="litellm embedding model, e.g. openai/text-embedding-3-small."
    )
    inject_rules: bool = Field(True, description="Inject the bank's rules into the system prompt.")
    inject_memories: bool = Field(
        True, description="Inject recalled memories on a turn's first step."
    )
    max_rule_chars: int = Field(8_000, ge=100, description="Budget of the injected rules section.")
    ambient_floor: int = Field(
        3, ge=0, description="Top-up of strongest memories in a turn's block."
    )
    event_buffer: int = Field(10_000, ge=100, description="Events kept for the pull cursor.")

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> StoreSettings:
        source = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = source.get(f"MEMORY_{name.upper()}")
            if raw is not None and raw != "":
                values[name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.validated(values)

    @classmethod
    def validated(cls, values: dict[str, Any]) -> StoreSettings:
        try:
            return cls.model_validate(values)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "config"
            raise InvalidArgumentError(f"invalid setting {where}: {err['msg']}") from e

    def merged(self, changes: dict[str, Any]) -> StoreSettings:
        return self.validated({**self.model_dump(), **changes})

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir).expanduser().resolve()
