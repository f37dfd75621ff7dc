"""Golden dedup fixtures (a plan is data, so a change to it shows in review): memories in → expected
plan, in any input order.

Each ``golden/*.json`` holds memories (text, type, scope, project, session, pinned,
corroboration, stated day) and the expected groups, supersedes, pinned skips, capped changes,
vetoes and grey-band pairs. They run twice: through the ``Planner`` alone with every pair as a
candidate (shuffled five ways: the plan must not depend on order), and end to end through a
``Consolidator`` over an embedded ``MemoryStore`` with real ``recall(mode=lexical)`` candidates,
first as a dry run (nothing written) and then for real. Regenerate only on purpose.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consolidate_worker.core import Consolidator
from consolidate_worker.dedup import Features, veto
from consolidate_worker.plan import Planner
from consolidate_worker.report import Group
from consolidate_worker.settings import ConsolidatorSettings
from shared.contract.clock import FakeClock
from shared.contract.models import Memory
from shared.text import fingerprint
from store_worker.core import MemoryStore

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))
BASE_MS = 1_767_225_600_000
DAY_MS = 86_400_000
BANK = "golden"


def load(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return case


def settings_of(case: dict[str, Any]) -> ConsolidatorSettings:
    return ConsolidatorSettings(**case.get("settings", {}))


def memory_of(spec: dict[str, Any]) -> Memory:
    at = BASE_MS + spec.get("stated_day", 0) * DAY_MS
    return Memory(
        id=spec["id"],
        fingerprint=fingerprint(spec["text"]),
        text=spec["text"],
        type=spec.get("type", "user"),
        scope=spec.get("scope", "global"),
        project=spec.get("project"),
        session_id=spec.get("session_id"),
        pinned=spec.get("pinned", False),
        corroboration=spec.get("corroboration", 0),
        created_at=at,
        updated_at=at,
        stated_at=at,
    )


def view(group: Group) -> dict[str, Any]:
    return {
        "survivor": group.survivor,
        "members": list(group.members),
        "retire": list(group.retire),
        "pinned_kept": list(group.pinned_kept),
        "reason": group.reason,
    }


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_plan_matches_golden_in_any_order(path: Path) -> None:
    case = load(path)
    memories = [memory_of(m) for m in case["memories"]]
    planner = Planner(settings_of(case))
    plans = []
    for seed in range(5):
        # Given the memories and every pair as a candidate, in a shuffled order
        rng = random.Random(seed)
        order = memories[:]
        rng.shuffle(order)
        neighbours = {}
        for m in order:
            others = [o.id for o in order if o.id != m.id]
            rng.shuffle(others)
            neighbours[m.id] = others
        # When the planner groups them
        plan = planner.plan(BANK, [Features(m) for m in order], neighbours)
        plans.append(plan.groups)
        # Then the groups and the grey-band pairs are the golden ones
        assert [view(g) for g in plan.groups] == case["expected"]["groups"]
        assert [[e.a, e.b] for e in plan.ambiguous] == case["expected"]["ambiguous"]
    assert all(p == plans[0] for p in plans)  # scores included: order never matters


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_vetoes_match_golden_both_ways(path: Path) -> None:
    case = load(path)
    feats = {m["id"]: Features(memory_of(m)) for m in case["memories"]}
    for a, b, reason in case["expected"]["vetoes"]:
        assert veto(feats[a], feats[b]) == reason, (a, b)
        assert veto(feats[b], feats[a]) == reason, (b, a)


def seed_store(store: MemoryStore, clock: FakeClock, case: dict[str, Any]) -> None:
    """Save each memory at its stated day. A placeholder text first, then ``update`` to the
    real text, so records sharing a fingerprint stay separate (``save`` would reinforce)."""
    for spec in case["memories"]:
        clock.ms = BASE_MS + spec.get("stated_day", 0) * DAY_MS
        place = {
            "type": spec.get("type", "user"),
            "scope": spec.get("scope", "global"),
            "project": spec.get("project"),
            "session_id": spec.get("session_id"),
        }
        store.save(f"placeholder {spec['id']}", bank=BANK, id=spec["id"], **place)
        store.update(spec["id"], bank=BANK, text=spec["text"], pinned=spec.get("pinned", False))
        for _ in range(spec.get("corroboration", 0)):
            assert not store.save(spec["text"], bank=BANK, **place).created


@pytest.fixture
def fresh_store(tmp_path: Path) -> Iterator[tuple[MemoryStore, FakeClock]]:
    clock = FakeClock(tick=0)
    store = MemoryStore(tmp_path / "data", clock=clock)
    yield store, clock
    store.close()


def pairs(changes: Any) -> list[list[str]]:
    return sorted([c.id, c.survivor] for c in changes)


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_pass_over_a_store_matches_golden(
    path: Path, fresh_store: tuple[MemoryStore, FakeClock], tmp_path: Path
) -> None:
    # Given a store seeded with the golden memories
    case = load(path)
    expected = case["expected"]
    store, clock = fresh_store
    seed_store(store, clock, case)
    log = tmp_path / "data" / BANK / "memories.jsonl"
    before, cursor = log.read_bytes(), store.events.cursor
    consolidator = Consolidator(store, settings=settings_of(case), clock=clock)

    # When a dry run plans the pass
    dry = consolidator.run_pass(banks=[BANK], dry_run=True)
    # Then the plan is the golden one and nothing was written
    assert [view(g) for g in dry.groups] == expected["groups"]
    assert dry.merged == ()
    assert pairs(dry.capped) == expected["capped"]
    assert log.read_bytes() == before
    assert store.events_since(cursor).events == ()

    # When the pass runs for real
    report = consolidator.run_pass(banks=[BANK])
    # Then exactly the golden supersedes happened, each with its reason on an event
    assert report.ok, report.errors
    assert pairs(report.merged) == expected["merged"]
    assert pairs(report.skipped_pinned) == expected["skipped_pinned"]
    assert pairs(report.capped) == expected["capped"]
    for loser, survivor in expected["merged"]:
        assert store.get(loser, bank=BANK).memory.superseded_by == survivor
        assert store.get(survivor, bank=BANK).memory.live
    retired = {
        e.memory.id: e.reason
        for e in store.events_since(cursor).events
        if e.event_type == "superseded" and e.memory is not None
    }
    assert sorted(retired) == sorted(loser for loser, _ in expected["merged"])
    assert all(r is not None and r.startswith("consolidator:") for r in retired.values())
