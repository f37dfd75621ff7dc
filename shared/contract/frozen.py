"""``Frozen``: the base of every answer model (``shared.contract.models`` and the modules it
re-exports)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    # defer_build: a model's validator is built on its first use, not at import (a CLI call
    # that validates one response type should not build forty)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
