"""``Consolidator``: one consolidation pass over the store's public API: near-duplicates
merged, contradictions resolved, corroborated facts promoted.

The consolidator never opens the data dir. It reads through ``bank_list``, ``list`` and
``recall(mode=lexical|semantic)``, writes only through ``supersede_many`` (a bank's planned
merges as one call; a refused call is sent again merge by merge), ``supersede`` (the judge's
verdicts, one at a time) and ``rule_set`` (the optional promote-to-rule path), and keeps
its checkpoint in the store's sibling state (``state_get/state_set("consolidator",
"last-run")``), so the worker itself is stateless.
It is written against ``shared.contract.api.StoreAPI`` and so runs over the embedded store or the
Ray ``StoreClient`` alike.

A pass: for each bank, read → candidates → plan (``plan.Planner``) → optional judge → apply.
Each supersede (and each ``supersede_many``) is atomic in the store, so a pass killed half-way
leaves every bank consistent
and the next pass (which re-reads everything) finishes the job. The checkpoint moves only after
a full, written pass without errors.

Over several store shards (a ``ShardedStoreClient`` reaching more than one, and a
``ShardRunner``), a pass is one pass per shard run in parallel, each over the banks its shard
owns through that shard's own client (``run_shard``); ``shards.py`` plans and merges them.
Over one store, a ``PassRunner`` may run the whole pass elsewhere (the actor's: a named Ray
task, so the dashboard's Tasks view shows every pass).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from consolidate_worker.api import PassTally
from consolidate_worker.candidates import RareTokenBlocker
from consolidate_worker.dedup import Features
from consolidate_worker.judge import Judge
from consolidate_worker.plan import BankPlan, Planner, pair_key
from consolidate_worker.promote import promote
from consolidate_worker.report import Change, Group, PassError, Report
from consolidate_worker.settings import ConsolidatorSettings
from consolidate_worker.shards import PassRunner, ShardRunner, merge, shard_jobs
from consolidate_worker.tiers import JudgeTier
from shared.client.shards import Routing
from shared.contract import errors
from shared.contract.api import Sharding, StoreAPI
from shared.contract.clock import Clock, SystemClock
from shared.contract.models import KEYED, MAX_SAVE_ITEMS, Memory, RecallResponse

log = logging.getLogger(__name__)

OWNER = "consolidator"
LAST_RUN_KEY = "last-run"
JUDGE_MEMO_KEY = "judged"


@dataclass
class Candidates:
    """Candidate ids per memory id, and the cosine of each pair the semantic arm proposed
    (keyed by the sorted id pair)."""

    ids: dict[str, list[str]]
    cosines: dict[tuple[str, str], float] = field(default_factory=dict)


class Consolidator:
    """Scheduled hygiene for every bank: dedup and supersede, never a direct data access."""

    def __init__(
        self,
        store: StoreAPI,
        *,
        settings: ConsolidatorSettings | None = None,
        clock: Clock | None = None,
        judge: Judge | None = None,
        shard_runner: ShardRunner | None = None,
        pass_runner: PassRunner | None = None,
    ) -> None:
        self.store = store
        self.shard_runner = shard_runner
        self.pass_runner = pass_runner
        self.settings = settings or ConsolidatorSettings()
        self.clock = clock or SystemClock()
        self.planner = Planner(self.settings)
        self.blocker = RareTokenBlocker(max_candidates=2 * self.settings.candidates_per_memory)
        self.judge_tier = JudgeTier(judge, self.settings) if judge is not None else None
        self._lock = threading.Lock()

    # -- schedule ----------------------------------------------------------------------------

    def last_run(self) -> int | None:
        """When the last clean pass started (ms), from the store's sibling state."""
        value = self.store.state_get(OWNER, LAST_RUN_KEY)
        if isinstance(value, dict):
            value = value.get("at")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def due(self, now_ms: int | None = None) -> bool:
        now = self.clock.now_ms() if now_ms is None else now_ms
        last = self._last_run_by(now)
        return last is None or now - last >= self.settings.interval_ms

    def next_run_at(self, now_ms: int | None = None) -> int:
        """Now when a pass is due (catch-up), else one interval after the last clean pass."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        last = self._last_run_by(now)
        if last is None or now - last >= self.settings.interval_ms:
            return now
        return last + self.settings.interval_ms

    def _last_run_by(self, now: int) -> int | None:
        """The last clean pass as seen from ``now``: a checkpoint later than now (written
        while the clock ran ahead, then set back: a laptop's clock before NTP, a VM restored)
        counts as none, as an unreadable one does: a pass runs now and its checkpoint takes
        the place of that one. Taken as written, no pass was due before it plus an interval:
        years without consolidation, the scheduler's first run set that far ahead."""
        last = self.last_run()
        return None if last is None or last > now else last

    def catch_up(self) -> Report | None:
        """Run one pass if the last clean one is older than the interval (boot catch-up)."""
        if not self.settings.run_on_boot or not self.due():
            return None
        return self.run_pass()

    @property
    def running(self) -> bool:
        return self._lock.locked()

    # -- a pass ------------------------------------------------------------------------------

    def run_pass(self, *, banks: Sequence[str] | None = None, dry_run: bool = False) -> Report:
        """One pass over ``banks`` (default: the configured ones, else all). Passes never
        overlap: a second caller gets a ``ConflictError`` instead of waiting."""
        if not self._lock.acquire(blocking=False):
            raise errors.ConflictError("a consolidation pass is already running")
        try:
            sharded = self._sharded()
            if sharded is not None:
                return self._run_sharded(sharded, banks, dry_run)
            if self.pass_runner is not None:  # the whole pass elsewhere (a named Ray task)
                return self.pass_runner(banks, dry_run=dry_run)
            names = self._bank_names(banks)
            return self._run(names, named=bool(banks), dry_run=dry_run, checkpoint=not banks)
        finally:
            self._lock.release()

    def run_shard(
        self,
        shard: int,
        *,
        banks: Sequence[str] | None = None,
        dry_run: bool = False,
        budget: int | None = None,
    ) -> Report:
        """One shard's part of a sharded pass; ``self.store`` is that shard's own client.
        Over ``banks``, else every bank the shard owns by its copy of the slot table (a
        leftover copy of a moved bank is not its to change). No checkpoint: the pass that
        scheduled it moves one when every shard came back clean."""
        if banks:
            names = tuple(sorted(set(banks)))
        else:
            table = Routing.parse(self.store.shard_routing()["routing"])
            owned = (b.name for b in self.store.bank_list().banks if table.owner(b.name) == shard)
            names = tuple(sorted(owned))
        return self._run(names, named=bool(banks), dry_run=dry_run, checkpoint=False, budget=budget)

    def _sharded(self) -> Sharding | None:
        sharding = self.store.sharding()
        if self.shard_runner is None or sharding is None:
            return None
        sharding.refresh()  # a following client picks up shards started since the last pass
        return sharding if len(sharding.shards) > 1 else None

    def _run_sharded(self, store: Sharding, banks: Sequence[str] | None, dry_run: bool) -> Report:
        runner = self.shard_runner
        assert runner is not None
        started = self.clock.now_ms()
        t0 = time.perf_counter()
        named = tuple(banks or self.settings.banks)
        jobs = shard_jobs(
            len(store.shards), self.settings.max_supersedes_per_run, named=named, owner=store.owner
        )
        parts = runner(jobs, dry_run=dry_run)
        duration = int((time.perf_counter() - t0) * 1000)
        report = merge(parts, started=started, duration_ms=duration, dry_run=dry_run)
        if report.ok and not dry_run and not banks:
            self._checkpoint(report)
        log.info("%s", report.summary())
        return report

    def _run(
        self,
        names: tuple[str, ...],
        *,
        named: bool,
        dry_run: bool,
        checkpoint: bool,
        budget: int | None = None,
    ) -> Report:
        started = self.clock.now_ms()
        t0 = time.perf_counter()
        cap = self.settings.max_supersedes_per_run if budget is None else budget
        tally = PassTally(cap, dry_run)
        if self.judge_tier is not None:
            tally.judge_memo = self._load_judge_memo()
        for name in names:
            try:
                self._consolidate_bank(name, tally)
            except errors.NotFoundError as e:
                if named:  # asked for by name: say so
                    tally.errors.append(PassError(bank=name, category=e.category, message=str(e)))
                else:  # listed, then deleted (trashed) during the pass: nothing left to do
                    log.info("bank %s vanished during the pass: %s", name, e)
            except errors.MemoryServiceError as e:
                tally.errors.append(PassError(bank=name, category=e.category, message=e.message))
        if tally.judge_memo_dirty and not dry_run:
            self._save_judge_memo(tally.judge_memo)
        report = _report(tally, names, started, int((time.perf_counter() - t0) * 1000))
        if report.ok and not dry_run and checkpoint:
            self._checkpoint(report)
        log.info("%s", report.summary())
        return report

    def _bank_names(self, banks: Sequence[str] | None) -> tuple[str, ...]:
        wanted = tuple(banks or self.settings.banks)
        if wanted:
            return tuple(sorted(set(wanted)))
        return tuple(sorted(b.name for b in self.store.bank_list().banks))

    def _checkpoint(self, report: Report) -> None:
        self.store.state_set(
            OWNER,
            LAST_RUN_KEY,
            {
                "at": report.started_at,
                "duration_ms": report.duration_ms,
                "merged": len(report.merged),
                "capped": len(report.capped),
            },
        )

    def _load_judge_memo(self) -> dict[str, str]:
        """The settled verdicts, oldest first (kept as a list of pairs: a JSON object's keys
        would come back sorted, and the memo drops its least recently used first)."""
        value = self.store.state_get(OWNER, JUDGE_MEMO_KEY)
        if not isinstance(value, list):
            return {}
        return {
            row[0]: row[1]
            for row in value
            if isinstance(row, list) and len(row) == 2 and all(isinstance(x, str) for x in row)
        }

    def _save_judge_memo(self, memo: dict[str, str]) -> None:
        """Keep the newest ``judge_memo_size`` verdicts (a dropped one is only asked again)."""
        keep = self.settings.judge_memo_size
        items = list(memo.items())[-keep:] if keep else []
        try:
            self.store.state_set(OWNER, JUDGE_MEMO_KEY, [list(item) for item in items])
        except errors.MemoryServiceError as e:  # a lost memo costs judge calls, not data
            log.warning("could not keep the judge's verdicts: %s", e)

    def _consolidate_bank(self, bank: str, tally: PassTally) -> None:
        with tally.phase("read"):
            # an application's keyed items are its data: never merged, retired or promoted
            memories = [m for m in self.read_bank(bank) if KEYED not in m.tags]
            feats = [Features(m) for m in memories]
        tally.scanned += len(memories)
        with tally.phase("candidates"):
            found = self.neighbours(bank, feats)
        with tally.phase("plan"):
            plan = self.planner.plan(bank, feats, found.ids, found.cosines)
        tally.pairs_scored += plan.pairs_scored
        tally.vetoed.update(plan.vetoed)
        tally.groups.extend(plan.groups)
        by_id = {m.id: m for m in memories}  # what the plan was made from
        with tally.phase("apply"):
            self._apply_groups(plan.groups, tally, by_id)
        if self.judge_tier is not None:
            with tally.phase("judge"):
                self.judge_tier.run(plan, by_id, tally, self._supersede)
        if self.settings.promote_corroboration_threshold > 0:
            with tally.phase("promote"):
                tally.promoted.extend(promote(self.store, bank, memories, self.settings, tally))

    # -- reads -------------------------------------------------------------------------------

    def read_bank(self, bank: str) -> list[Memory]:
        """Every live canonical memory of a bank, page by page."""
        out: list[Memory] = []
        token: str | None = None
        while True:
            page = self.store.list(
                bank=bank, status="canonical", page_size=self.settings.page_size, page_token=token
            )
            out.extend(page.memories)
            token = page.next_page_token
            if not token:
                return out

    def neighbours(self, bank: str, feats: Sequence[Features]) -> Candidates:
        """Candidate ids per memory, from ``recall`` and/or rare-token blocking (see
        ``candidates.py`` for why both, and when each), plus the semantic arm's cosine of each
        pair it proposed."""
        s = self.settings
        small = len(feats) <= s.recall_max_bank
        out = Candidates({f.id: [] for f in feats})
        if s.candidate_source == "local" or (s.candidate_source == "auto" and feats):
            out.ids = self.blocker.neighbours(feats)
        if s.candidate_source == "recall" or (s.candidate_source == "auto" and small):
            recalled = self._recalled(bank, [f.memory for f in feats])
            for f_id, found in recalled.ids.items():
                out.ids[f_id] = list(dict.fromkeys([*out.ids.get(f_id, []), *found]))
            out.cosines = recalled.cosines
        return out

    def _recalled(self, bank: str, memories: Sequence[Memory]) -> Candidates:
        """Each memory's own text as a lexical (and semantic) recall query, restricted to its
        type and scope and run where it is visible (its project, its session)."""
        modes = ["lexical"]
        if self.settings.semantic_candidates and memories and self._can_embed(bank, memories[0]):
            modes.append("semantic")
        out = Candidates({})
        for m in memories:
            found: dict[str, None] = {}
            for mode in modes:
                for hit in self._recall(bank, m, mode).memories:
                    found.setdefault(hit.memory.id, None)
                    if mode == "semantic" and hit.memory.id != m.id:
                        key = pair_key(m.id, hit.memory.id)
                        out.cosines[key] = max(out.cosines.get(key, 0.0), hit.score)
            found.pop(m.id, None)
            out.ids[m.id] = list(found)
        return out

    def _recall(self, bank: str, m: Memory, mode: str) -> RecallResponse:
        return self.store.recall(
            m.text,
            bank=bank,
            limit=self.settings.candidates_per_memory + 1,
            mode=mode,
            session_id=m.session_id,
            project=m.project,
            type_filter=[m.type],
            scope_filter=[m.scope],
        )

    def _can_embed(self, bank: str, probe: Memory) -> bool:
        try:
            return self._recall(bank, probe, "semantic").retrieval == "semantic"
        except errors.SourceUnavailableError:
            return False  # no embedder configured or reachable: lexical candidates only

    # -- writes ------------------------------------------------------------------------------

    def _apply_groups(
        self, groups: Sequence[Group], tally: PassTally, by_id: Mapping[str, Memory]
    ) -> None:
        """Every planned merge of a bank, sent as few ``supersede_many`` calls: a pass's hundreds of
        merges are one store call and one fsync each, not one of each per merge (an fsync per merge
        would dominate the pass). A refused call wrote nothing; its merges go again one by one, so
        each gets its own answer, as ``_supersede`` gives it."""
        changes: list[Change] = []
        for group in groups:
            top = max((s.combined for s in group.scores), default=100.0)
            reason = f"consolidator: {group.reason} of {group.survivor} (score {top:g})"
            for pinned in group.pinned_kept:
                tally.skipped_pinned.append(
                    Change(bank=group.bank, id=pinned, survivor=group.survivor, reason="pinned")
                )
            for loser in group.retire:
                change = Change(
                    bank=group.bank,
                    id=loser,
                    survivor=group.survivor,
                    reason=reason,
                    revision=by_id[loser].revision if loser in by_id else None,
                )
                if self._admit(tally, change):
                    changes.append(change)
        for start in range(0, len(changes), MAX_SAVE_ITEMS):
            self._supersede_together(tally, changes[start : start + MAX_SAVE_ITEMS])

    def _supersede_together(self, tally: PassTally, changes: list[Change]) -> None:
        items = [
            {
                "id": c.id,
                "superseded_by": c.survivor,
                "bank": c.bank,
                "reason": c.reason,
                "reinforce": True,
                "revision": c.revision,
            }
            for c in changes
        ]
        try:
            self.store.supersede_many(items)
        except errors.REFUSALS:  # nothing was written: each merge alone gets its own answer
            for change in changes:
                self._supersede_one(tally, change, reinforce=True)
            return
        except errors.MemoryServiceError as e:  # an outcome nobody knows: never re-sent
            tally.errors.extend(
                PassError(bank=c.bank, id=c.id, category=e.category, message=e.message)
                for c in changes
            )
            return
        tally.merged.extend(changes)

    @staticmethod
    def _admit(tally: PassTally, change: Change) -> bool:
        """Whether ``change`` is to be written now: not retired already, within the pass's cap
        (a capped one is reported), and not a dry run."""
        if (change.bank, change.id) in tally.retired:
            return False
        if not tally.take_budget():
            tally.capped.append(change)
            return False
        tally.retired.add((change.bank, change.id))
        return not tally.dry_run

    def _supersede(self, tally: PassTally, change: Change, *, reinforce: bool) -> None:
        """One supersede through the store, within the pass's cap; errors are reported."""
        if self._admit(tally, change):
            self._supersede_one(tally, change, reinforce=reinforce)

    def _supersede_one(self, tally: PassTally, change: Change, *, reinforce: bool) -> None:
        try:
            self.store.supersede(
                change.id,
                change.survivor,
                bank=change.bank,
                reason=change.reason,
                reinforce=reinforce,
                revision=change.revision,
            )
        except errors.MemoryServiceError as e:
            tally.errors.append(
                PassError(bank=change.bank, id=change.id, category=e.category, message=e.message)
            )
            return
        tally.merged.append(change)


def _report(tally: PassTally, banks: tuple[str, ...], started: int, duration_ms: int) -> Report:
    return Report(
        started_at=started,
        duration_ms=duration_ms,
        dry_run=tally.dry_run,
        banks=banks,
        scanned=tally.scanned,
        pairs_scored=tally.pairs_scored,
        vetoed=tuple(sorted(tally.vetoed.items())),
        groups=tuple(tally.groups),
        merged=tuple(tally.merged),
        skipped_pinned=tuple(tally.skipped_pinned),
        capped=tuple(tally.capped),
        judged=tuple(tally.judged),
        judge_memo_hits=tally.judge_memo_hits,
        phases_ms=tuple((k, int(v * 1000)) for k, v in tally.phases.items()),
        promoted=tuple(tally.promoted),
        errors=tuple(tally.errors),
    )


__all__ = ["LAST_RUN_KEY", "OWNER", "BankPlan", "Consolidator", "StoreAPI"]
