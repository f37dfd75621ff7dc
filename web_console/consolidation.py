"""Consolidation from the console: the consolidator's dry run shown side by side, then applied
exactly as shown.

The dry run is the consolidator's own public verb: the running ``memory-consolidator``
actor's ``run_now(dry_run=True)``, or, where none runs (``memory console --data-dir``, a
cluster started without it), the same ``Consolidator.run_pass(dry_run=True)`` over the
console's store, as ``memory consolidate --now --dry-run`` runs it. A dry run writes nothing.

What is shown is a ``Plan``: each merge group's survivor and the memories it retires, with the
revision each was read at. The page carries the plan back signed (the console's key), so
"apply" sends exactly those merges and nothing else: one ``supersede_many`` (all or nothing),
each loser guarded by the revision shown. A survivor or loser changed, retired or gone since
is ``StalePlan``: nothing is written, and the page offers a fresh dry run.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.models import Memory

CONSOLIDATOR = "memory-consolidator"


class StalePlan(errors.ConflictError):
    """The store changed since the plan was shown: nothing was applied."""


@dataclass(frozen=True)
class Merge:
    """One group of the plan: ``survivor`` keeps the fact, ``retire`` are superseded into it."""

    bank: str
    reason: str
    score: float
    survivor: Memory
    retire: tuple[Memory, ...]
    pinned_kept: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    banks: tuple[str, ...]
    merges: tuple[Merge, ...]
    summary: str
    scanned: int = 0
    errors: tuple[str, ...] = field(default=())

    def payload(self) -> bytes:
        """What "apply" is allowed to do, as the page carries it back (then signed)."""
        body = [
            {
                "bank": m.bank,
                "reason": m.reason,
                "score": m.score,
                "survivor": [m.survivor.id, m.survivor.revision],
                "retire": [[r.id, r.revision] for r in m.retire],
            }
            for m in self.merges
        ]
        return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode())


def dry_run(store: StoreAPI, banks: list[str] | None) -> Plan:
    """Ask the consolidator for a dry run and read what it plans to merge."""
    report = _report(store, banks)
    merges = []
    capped = {(c["bank"], c["id"]) for c in report.get("capped", ())}
    for group in report.get("groups", ()):
        bank = group["bank"]
        retire_ids = [i for i in group["retire"] if (bank, i) not in capped]
        if not retire_ids:
            continue
        top = max((s["combined"] for s in group.get("scores", ())), default=100.0)
        merges.append(
            Merge(
                bank=bank,
                reason=group["reason"],
                score=float(top),
                survivor=store.get(group["survivor"], bank=bank).memory,
                retire=tuple(store.get(i, bank=bank).memory for i in retire_ids),
                pinned_kept=tuple(group.get("pinned_kept", ())),
            )
        )
    return Plan(
        banks=tuple(report.get("banks", ())),
        merges=tuple(merges),
        summary=str(report.get("summary", "")),
        scanned=int(report.get("scanned", 0)),
        errors=tuple(
            f"{e['category']}: {e['message']}" for e in report.get("errors", ()) if e.get("message")
        ),
    )


def apply(store: StoreAPI, payload: bytes) -> int:
    """Apply a shown plan (its ``payload``, already checked as signed): one ``supersede_many``.
    How many memories were retired; ``StalePlan`` when the store changed since."""
    try:
        body = json.loads(base64.urlsafe_b64decode(payload))
    except ValueError as e:
        raise errors.InvalidArgumentError("the plan is not readable; run a fresh dry run") from e
    items: list[dict[str, Any]] = []
    for merge in body:
        bank, (survivor, at) = merge["bank"], merge["survivor"]
        _unchanged(store, bank, survivor, at)
        for loser, revision in merge["retire"]:
            items.append(
                {
                    "id": loser,
                    "superseded_by": survivor,
                    "bank": bank,
                    "reason": f"consolidator (applied from the console): {merge['reason']} of "
                    f"{survivor} (score {merge['score']:g})",
                    "reinforce": True,
                    "revision": revision,
                }
            )
    if not items:
        return 0
    try:
        store.supersede_many(items)
    except (errors.ConflictError, errors.NotFoundError) as e:
        raise StalePlan(f"the store changed since this plan was shown ({e.message})") from e
    return len(items)


def _unchanged(store: StoreAPI, bank: str, id: str, revision: int) -> None:
    try:
        now = store.get(id, bank=bank).memory
    except errors.NotFoundError as e:
        raise StalePlan(f"the store changed since this plan was shown: {id} is gone") from e
    if now.revision != revision or not now.live:
        raise StalePlan(
            f"the store changed since this plan was shown: {id} is at revision {now.revision}, "
            f"not {revision}"
        )


def _report(store: StoreAPI, banks: list[str] | None) -> dict[str, Any]:
    """The dry run's report as plain data (the consolidator's ``Report``, dumped)."""
    report = _from_actor(banks)
    if report is None:
        report = _here(store, banks)
    out: dict[str, Any] = report.model_dump(mode="json")
    out["summary"] = report.summary()
    return out


def _from_actor(banks: list[str] | None) -> Any:
    """The running consolidator's dry run, or None when this process has no Ray or no
    consolidator runs."""
    import sys

    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    from shared.client.ray import ActorClient

    actor = ActorClient(actor_name=CONSOLIDATOR, timeout=None)
    try:
        actor.handle  # noqa: B018 - looks the actor up; raises when it is not running
    except errors.SourceUnavailableError:
        return None
    return actor.call("run_now", banks=banks, dry_run=True)


def _here(store: StoreAPI, banks: list[str] | None) -> Any:
    """The same pass in this process over the console's store (``memory consolidate --now
    --dry-run --data-dir``'s path), shard by shard when the store has several."""
    from consolidate_worker.core import Consolidator
    from consolidate_worker.judge import judge_from
    from consolidate_worker.settings import ConsolidatorSettings
    from consolidate_worker.shards import run_in_turn

    settings = ConsolidatorSettings.from_env()

    def make(over: StoreAPI, runner: Any = None) -> Consolidator:
        return Consolidator(
            over, settings=settings, judge=judge_from(settings), shard_runner=runner
        )

    sharding = store.sharding()
    runner = None
    if sharding is not None:
        shards = sharding.shards
        runner = run_in_turn(
            lambda job, dry: make(shards[job.shard]).run_shard(
                job.shard, banks=job.banks, dry_run=dry, budget=job.budget
            )
        )
    return make(store, runner).run_pass(banks=banks, dry_run=True)
