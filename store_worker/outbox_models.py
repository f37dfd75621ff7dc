"""The outbox's values: a queued turn's messages, a job, and the replies of its methods
(``store_worker.outbox`` is the mixin that keeps them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class OutboxMessage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    content: str
    timestamp: int  # ms since epoch: each message keeps its own date (seeds/003 "Time-aware")


class OutboxJob(BaseModel):
    """One queued extraction pass over one finished turn (seeds/003 ``memory::extract-job``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    session_id: str
    turn_id: str | None = None
    bank: str | None = None  # the bank the turn was injected with
    skip: bool = False  # the turn ran without memory: the job only steps past it
    status: str = "completed"
    parent_session_id: str | None = None
    messages: tuple[OutboxMessage, ...] = ()
    enqueued_at: int
    attempts: int = 0
    next_attempt_at: int = 0
    errors: tuple[str, ...] = ()
    dead_at: int | None = None
    redacted: tuple[str, ...] = ()
    # The extractor's validated reply, recorded before it applied any of it: a re-run
    # applies this instead of asking the model again.
    reply: dict[str, Any] | None = None
    # The claim's token (only on a claimed copy, never on disk): ``outbox_note`` checks it.
    lease: str | None = Field(default=None, exclude=True)


class OutboxJobSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    state: Literal["queued", "leased", "waiting", "dead"]
    session_id: str
    turn_id: str | None
    bank: str | None
    messages: int
    attempts: int
    enqueued_at: int
    next_attempt_at: int
    last_error: str | None = None


class OutboxListResponse(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    queued: int
    leased: int
    dead: int
    jobs: tuple[OutboxJobSummary, ...] = Field(default_factory=tuple)


class TurnCompletedResponse(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    queued: bool
    job_id: str | None = None
    reason: str = ""
    redacted: tuple[str, ...] = ()


class OutboxAckResponse(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    job_id: str
    state: Literal["acked", "queued", "dead", "missing"]
    attempts: int = 0
    next_attempt_at: int = 0
