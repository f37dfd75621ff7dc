"""Moving banks between store shards (docs/SCALING.md): ``rebalance`` and the first slot table.

``rebalance(shards, n)`` spreads the slots over ``n`` shards (``shared.client.shards.plan_slots``)
and moves each bank whose owner changes, one slot at a time: **freeze** (the slot is marked
moving; its owner refuses writes with a retryable ``[moving]``), **copy** (``bank_copy`` →
``bank_place`` on the new owner, staged and renamed into place), **switch** (the new table to
shard 0 first, the commit point, then the new owner, then the rest), **release** (the old copy
to ``.trash``). Slots holding no bank switch together. A kill at any step leaves every
acknowledged write in exactly one live bank; running ``rebalance`` again finishes the move
(``tests/shared/test_sharded.py`` kills it at each step). The store's side of each step, and
what it refuses, is ``store_worker/storage/shards.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shared.client.shards import STATE_KEY, STATE_OWNER, Routing, plan_slots, slot_of
from shared.contract.api import StoreAPI
from shared.contract.errors import InvalidArgumentError


def initial_routing(shards: Sequence[StoreAPI]) -> Routing | None:
    """Spread the slots evenly when no shard holds a bank and no table was ever written;
    otherwise leave the table alone (``rebalance`` moves existing banks)."""
    table = Routing.parse(shards[0].state_get(STATE_OWNER, STATE_KEY))
    if table.version > 0 or any(_holdings(shards)) or len(shards) == 1:
        return None
    fresh = Routing(version=1, slots=plan_slots(table.slots, len(shards)))
    publish(shards, fresh)
    return fresh


Step = Callable[[str, int], object]
"""``step(name, slot)`` before each step of a move: "freeze", "copy", "switch", "release"
(tests raise there to kill the move at that point)."""


@dataclass
class RebalanceReport:
    shards: int
    slots_moved: int = 0
    banks_moved: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    version: int = 0


def publish(shards: Sequence[StoreAPI], table: Routing, first: int | None = None) -> None:
    """Shard 0 takes the table first (the commit point), then ``first``, then the rest."""
    order = [0] + ([first] if first not in (None, 0) else [])
    order += [i for i in range(len(shards)) if i not in order]
    for i in order:
        shards[i].shard_routing(table.dump())


def rebalance(
    shards: Sequence[StoreAPI], n: int | None = None, *, step: Step | None = None
) -> RebalanceReport:
    """Move every bank whose owner changes when ``n`` shards (default: all of ``shards``)
    share the slots; resumes an interrupted run (see ``store_worker.storage.shards``)."""
    n = len(shards) if n is None else n
    if n > len(shards):
        raise InvalidArgumentError(f"{n} shards asked for, {len(shards)} reachable")
    note = step or (lambda _name, _slot: None)
    report = RebalanceReport(shards=n)
    table = Routing.parse(shards[0].state_get(STATE_OWNER, STATE_KEY))
    publish(shards, table)  # a shard that missed the last switch catches up
    _release_leftovers(shards, table, report)
    for slot, target in sorted(table.moving.items()):  # a move a kill interrupted
        table = _move_slot(shards, table, slot, target, note, report)
    plan = plan_slots(table.slots, n)
    moves = {s: plan[s] for s in range(len(plan)) if plan[s] != table.slots[s]}
    table = _switch_empty(shards, table, moves, report)
    for slot in sorted(moves):
        if table.slots[slot] != moves[slot]:
            table = _move_slot(shards, table, slot, moves[slot], note, report)
    report.version = table.version
    return report


def _holdings(shards: Sequence[StoreAPI]) -> list[list[str]]:
    return [list(s.shard_routing()["banks"]) for s in shards]


def _switch_empty(
    shards: Sequence[StoreAPI], table: Routing, moves: dict[int, int], report: RebalanceReport
) -> Routing:
    """Slots that hold no bank switch together: frozen first (no bank can be created in them
    meanwhile), checked empty again, then handed over in one table."""
    held = {slot_of(b) for banks in _holdings(shards) for b in banks}
    empty = [s for s in moves if s not in held]
    if not empty:
        return table
    frozen = table.model_copy(
        update={
            "version": table.version + 1,
            "moving": {**table.moving, **{s: moves[s] for s in empty}},
        }
    )
    publish(shards, frozen)
    held = {slot_of(b) for banks in _holdings(shards) for b in banks}
    slots = list(frozen.slots)
    for s in empty:
        if s not in held:
            slots[s] = moves[s]
            report.slots_moved += 1
    done = frozen.model_copy(
        update={
            "version": frozen.version + 1,
            "slots": tuple(slots),
            "moving": {k: v for k, v in frozen.moving.items() if k not in empty or k in held},
        }
    )
    publish(shards, done)
    return done


def _move_slot(
    shards: Sequence[StoreAPI],
    table: Routing,
    slot: int,
    target: int,
    note: Step,
    report: RebalanceReport,
) -> Routing:
    """Freeze the slot on its owner, copy its banks, switch the table, release the old copies."""
    source = table.slots[slot]
    if slot not in table.moving:
        note("freeze", slot)
        table = table.start_move(slot, target)
        publish(shards, table, first=source)
    banks = [b for b in shards[source].shard_routing()["banks"] if slot_of(b) == slot]
    for bank in banks:
        note("copy", slot)
        shards[target].bank_place(bank, shards[source].bank_copy(bank))
    note("switch", slot)
    table = table.finish_move(slot)
    publish(shards, table, first=target)
    report.slots_moved += 1
    report.banks_moved.extend(banks)
    for bank in banks:
        note("release", slot)
        shards[source].bank_release(bank)
        report.released.append(bank)
    return table


def _release_leftovers(shards: Sequence[StoreAPI], table: Routing, report: RebalanceReport) -> None:
    """Copies a kill left behind after a switch: trashed where the owner holds the bank;
    a copy the owner lacks is reported as an orphan and left alone."""
    held = _holdings(shards)
    for i, banks in enumerate(held):
        for bank in banks:
            owner = table.owner(bank)
            if owner == i or slot_of(bank) in table.moving:
                continue
            if owner < len(shards) and bank in held[owner]:
                shards[i].bank_release(bank)
                report.released.append(bank)
            else:
                report.orphans.append(f"{bank}@shard{i}")
