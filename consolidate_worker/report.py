"""The pass report: immutable values returned, logged and exported as metrics, so an operator sees
what a pass did.

``Report`` says what a pass saw (banks, memories scanned, pairs scored, vetoes by reason), what
it planned (``groups``), and what it did (``merged``), left alone (``skipped_pinned``), left for
the next pass (``capped``) and failed to do (``errors``). A dry run fills ``groups``,
``skipped_pinned`` and ``capped`` exactly as a real pass would, and leaves ``merged`` empty.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

GroupReason = Literal["exact", "near-duplicate", "judge-duplicate"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PairScore(Frozen):
    """One member's similarity to its group's survivor (rapidfuzz, 0-100; length 0-1)."""

    id: str
    combined: float
    token_set: float
    token_sort: float
    ratio: float
    length_ratio: float


class Group(Frozen):
    """Duplicates of one fact: the survivor keeps it, ``retire`` are superseded into it."""

    bank: str
    survivor: str
    members: tuple[str, ...]
    retire: tuple[str, ...]
    pinned_kept: tuple[str, ...] = ()
    reason: GroupReason
    scores: tuple[PairScore, ...] = ()


class Change(Frozen):
    """One supersede, done (``merged``), refused for a pinned loser, or left by the cap."""

    bank: str
    id: str
    survivor: str
    reason: str
    # the revision of ``id`` the pass planned from: the store refuses the supersede once the
    # memory changed since (an edit between the pass's read and its write)
    revision: int | None = None


class PassError(Frozen):
    bank: str
    id: str | None = None
    shard: int | None = None  # a store shard whose whole pass failed (consolidate_worker.shards)
    category: str
    message: str


class JudgeDecision(Frozen):
    """What the LLM judge said about one ambiguous, contradicting or paraphrase pair."""

    bank: str
    pair: tuple[str, str]
    kind: Literal["ambiguous", "contradiction", "paraphrase"]
    decision: Literal["duplicate", "contradiction", "distinct"]
    keep: str | None = None
    reason: str = ""


class Promotion(Frozen):
    """A memory re-observed often enough to be proposed as a learned rule."""

    bank: str
    id: str
    corroboration: int
    line: str
    added: bool  # a line of ``learned`` now
    queued: bool = False  # waiting for a person (``memory rule pending``)


class Report(Frozen):
    started_at: int
    duration_ms: int
    dry_run: bool
    banks: tuple[str, ...]
    scanned: int = 0
    pairs_scored: int = 0
    vetoed: tuple[tuple[str, int], ...] = ()
    groups: tuple[Group, ...] = ()
    merged: tuple[Change, ...] = ()
    skipped_pinned: tuple[Change, ...] = ()
    capped: tuple[Change, ...] = ()
    judged: tuple[JudgeDecision, ...] = ()
    judge_memo_hits: int = 0  # pairs not re-asked: a past pass's verdict on the same texts
    promoted: tuple[Promotion, ...] = ()
    errors: tuple[PassError, ...] = ()
    phases_ms: tuple[tuple[str, int], ...] = ()  # read, candidates, plan, apply, judge, promote
    shards: int = 1  # store shards the pass ran over, one pass each (consolidate_worker.shards)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        """One log line."""
        return (
            f"consolidation {'dry run' if self.dry_run else 'pass'} over {len(self.banks)} "
            f"bank(s): scanned={self.scanned} groups={len(self.groups)} "
            f"merged={len(self.merged)} skipped_pinned={len(self.skipped_pinned)} "
            f"capped={len(self.capped)} judged={len(self.judged)} "
            f"judge_memo_hits={self.judge_memo_hits} "
            f"promoted={len(self.promoted)} errors={len(self.errors)} "
            f"{f'shards={self.shards} ' if self.shards > 1 else ''}"
            f"duration_ms={self.duration_ms}"
        )
