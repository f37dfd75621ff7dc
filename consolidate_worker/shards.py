"""One consolidation pass over several store shards: a pass per shard, in parallel
(docs/SCALING.md).

Banks never span shards, and a pass works bank by bank, so a pass over N shards is N
independent passes, each over the banks one shard owns, talking only to that shard. The
consolidator that owns the schedule plans them (``shard_jobs``), hands them to a
``ShardRunner`` (over Ray: one task per shard, ``consolidate_worker.actor.RayShardRunner``;
in process: ``run_in_turn``), and merges what comes back (``merge``) into the one report it
logs, exports and checkpoints. A shard that is down fails only its own pass: it comes back as
a ``PassError`` naming the shard, the others' work stands, and the checkpoint does not move
(the next scheduled pass retries that shard).

Each shard pass gets an even share of ``max_supersedes_per_run`` (the cap bounds what one pass
may change; a share one shard leaves unused is not lent to another). The LLM judge's memo is
kept per shard, in the shard's own sibling state, beside the banks whose pairs it settled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from consolidate_worker.report import PassError, Report
from shared.contract import errors


@dataclass(frozen=True)
class ShardJob:
    """One shard's pass: over ``banks`` (named by the caller) or, None, every bank it owns."""

    shard: int
    banks: tuple[str, ...] | None
    budget: int


class ShardRunner(Protocol):
    def __call__(self, jobs: Sequence[ShardJob], *, dry_run: bool) -> list[Report | PassError]:
        """Each job's report, in order; a shard whose pass failed answers a ``PassError``."""
        ...


class PassRunner(Protocol):
    def __call__(self, banks: Sequence[str] | None, *, dry_run: bool) -> Report:
        """One whole pass over ``banks`` (None: the configured ones, else all), run elsewhere."""
        ...


def task_name(banks: Sequence[str] | None, shard: int | None = None) -> str:
    """What a pass's Ray task is called in the dashboard: ``consolidate:<banks or shard>``."""
    where = ",".join(sorted(set(banks))) if banks else "all"
    if shard is not None:
        where = f"shard-{shard}" + (f":{where}" if banks else "")
    return f"consolidate:{where[:200]}"


def split_budget(total: int, n: int) -> list[int]:
    """``total`` supersedes over ``n`` shard passes, as evenly as whole numbers go."""
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def shard_jobs(
    shards: int, budget: int, *, named: Sequence[str] | None, owner: Callable[[str], int]
) -> list[ShardJob]:
    """Every shard with its whole share; named banks only on the shards that own them."""
    shares = split_budget(budget, shards)
    if not named:
        return [ShardJob(shard=i, banks=None, budget=shares[i]) for i in range(shards)]
    by_shard: dict[int, list[str]] = {}
    for bank in sorted(set(named)):
        by_shard.setdefault(owner(bank), []).append(bank)
    return [
        ShardJob(shard=i, banks=tuple(banks), budget=shares[i])
        for i, banks in sorted(by_shard.items())
    ]


def failed(job: ShardJob, error: errors.MemoryServiceError) -> PassError:
    return PassError(
        bank=",".join(job.banks or ()),
        shard=job.shard,
        category=error.category,
        message=f"store shard {job.shard}: {error.message}",
    )


def run_in_turn(run: Callable[[ShardJob, bool], Report]) -> ShardRunner:
    """A runner that calls ``run(job, dry_run)`` for each job here, one after the other (the
    embedded shards of ``memory --data-dir``, tests): no Ray, the same plan and merge."""

    def runner(jobs: Sequence[ShardJob], *, dry_run: bool) -> list[Report | PassError]:
        out: list[Report | PassError] = []
        for job in jobs:
            try:
                out.append(run(job, dry_run))
            except errors.MemoryServiceError as e:
                out.append(failed(job, e))
        return out

    return runner


def merge(
    parts: Sequence[Report | PassError], *, started: int, duration_ms: int, dry_run: bool
) -> Report:
    """The shards' reports as one; a failed shard's ``PassError`` joins the errors."""
    reports = [p for p in parts if isinstance(p, Report)]
    lost = [p for p in parts if isinstance(p, PassError)]
    phases: dict[str, int] = {}
    vetoed: dict[str, int] = {}
    for r in reports:
        for name, ms in r.phases_ms:
            phases[name] = phases.get(name, 0) + ms
        for reason, count in r.vetoed:
            vetoed[reason] = vetoed.get(reason, 0) + count

    def joined(field: str) -> tuple[object, ...]:
        return tuple(item for r in reports for item in getattr(r, field))

    return Report.model_validate(
        {
            "started_at": started,
            "duration_ms": duration_ms,
            "dry_run": dry_run,
            "banks": tuple(sorted(joined("banks"), key=str)),
            "scanned": sum(r.scanned for r in reports),
            "pairs_scored": sum(r.pairs_scored for r in reports),
            "vetoed": tuple(sorted(vetoed.items())),
            "groups": joined("groups"),
            "merged": joined("merged"),
            "skipped_pinned": joined("skipped_pinned"),
            "capped": joined("capped"),
            "judged": joined("judged"),
            "judge_memo_hits": sum(r.judge_memo_hits for r in reports),
            "promoted": joined("promoted"),
            "errors": (*joined("errors"), *lost),
            "phases_ms": tuple(phases.items()),
            "shards": len(parts),
        }
    )


__all__ = ["ShardJob", "ShardRunner", "failed", "merge", "run_in_turn", "shard_jobs"]
