"""The mutable tally of one pass.

The consolidator is typed against the store's one contract, ``shared.contract.api.StoreAPI``, so the
same code runs over the embedded store and over the Ray ``shared.client.ray.StoreClient``;
nothing here imports another worker
(docs/ARCHITECTURE.md#the-siblings-reach-the-store-only-through-its-contract).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from consolidate_worker.report import Change, Group, JudgeDecision, PassError, Promotion


class PassTally:
    """The mutable tally of one pass; frozen into a ``Report`` at the end."""

    def __init__(self, budget: int, dry_run: bool) -> None:
        self.budget = budget
        self.dry_run = dry_run
        self.scanned = 0
        self.pairs_scored = 0
        self.vetoed: Counter[str] = Counter()
        self.groups: list[Group] = []
        self.merged: list[Change] = []
        self.skipped_pinned: list[Change] = []
        self.capped: list[Change] = []
        self.errors: list[PassError] = []
        self.retired: set[tuple[str, str]] = set()  # (bank, id) retired or planned to be
        self.judged: list[JudgeDecision] = []
        self.promoted: list[Promotion] = []
        self.judge_calls = 0
        self.judge_memo: dict[str, str] = {}  # memo_key -> decision, across passes
        self.judge_memo_hits = 0
        self.judge_memo_dirty = False
        self.phases: dict[str, float] = {}  # seconds per phase, summed over banks

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - started

    def remember_verdict(self, key: str, decision: str) -> None:
        self.judge_memo.pop(key, None)  # re-inserted last: the memo drops its oldest first
        self.judge_memo[key] = decision
        self.judge_memo_dirty = True

    def recall_verdict(self, key: str) -> bool:
        """Whether this question was settled before; a hit counts as recently used."""
        decision = self.judge_memo.get(key)
        if decision is None:
            return False
        self.remember_verdict(key, decision)
        self.judge_memo_hits += 1
        return True

    def take_budget(self) -> bool:
        if self.budget <= 0:
            return False
        self.budget -= 1
        return True
