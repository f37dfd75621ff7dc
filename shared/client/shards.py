"""Which store shard owns a bank: hash slots and a slot table (docs/SCALING.md).

A bank's slot is a stable hash of its name (``slot_of``: BLAKE2b, 1024 slots); the slot table
(``Routing.slots``) says which shard owns each slot. Hash slots with a table, not rendezvous
hashing, because a move must be an explicit, recorded step: the table says at every moment
who owns a bank, a rebalance changes one slot at a time (freeze, copy, switch, release), and an
interrupted rebalance resumes from the table instead of from a guess. Moving from N to N+1
shards (``plan_slots``) takes slots only from the shards above their fair share, so about
1/(N+1) of the slots, and of the banks, move.

Where the table lives: shard 0's durable state (``state_get/state_set("shards", "routing")``,
a file under shard 0's ``.state``), which every caller reads through its client; each shard
also keeps the copy it was last given (``shard_routing``) and refuses banks it does not own,
so a caller with a stale table gets a retryable ``source_unavailable`` and re-reads it.
No table at all means one shard owns everything: today's single store, unchanged on disk.

Shard ``i`` is the actor ``memory-store`` for ``i == 0`` (so every existing caller, data dir
and deployment keeps working) and ``memory-store-<i>`` otherwise; its data dir is the data dir
itself for shard 0 and ``<data_dir>/.shard-<i>`` otherwise on one machine (a dot-folder, which
shard 0's bank scan skips), or its own volume on a cluster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared.client.workers import flag_count
from shared.contract.errors import InvalidArgumentError, SourceUnavailableError

SLOTS = 1024
STATE_OWNER = "shards"
STATE_KEY = "routing"
STORE_ACTOR = "memory-store"
MAX_SHARDS = 64
MOVED_MARK = "[moved]"  # in the message of a shard's refusal: the caller re-reads the table
FROZEN_MARK = "[moving]"  # in the message of a frozen bank's refusal: the caller waits, retries


def slot_of(bank: str) -> int:
    """The bank's hash slot: the same on every caller and every Python (no ``hash()``)."""
    digest = hashlib.blake2b(bank.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % SLOTS


def actor_name(shard: int) -> str:
    return STORE_ACTOR if shard == 0 else f"{STORE_ACTOR}-{shard}"


def shard_dir(data_dir: Path, shard: int) -> Path:
    return data_dir if shard == 0 else data_dir / f".shard-{shard}"


def shard_count(value: object) -> int:
    """A shard count from a flag or ``MEMORY_STORE_SHARDS``, or ``InvalidArgumentError``."""
    return flag_count(value, MAX_SHARDS, "store shards")


class Routing(BaseModel):
    """The slot table: ``slots[s]`` owns slot ``s``; ``moving[s]`` is where it is going."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(0, ge=0)
    slots: tuple[int, ...] = Field(default=(0,) * SLOTS, min_length=SLOTS, max_length=SLOTS)
    moving: dict[int, int] = Field(default_factory=dict)

    @classmethod
    def parse(cls, raw: object) -> Routing:
        """A stored table, or the single-shard default when there is none."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise InvalidArgumentError("routing table must be a mapping")
        try:
            return cls.model_validate({**raw, "moving": _int_keys(raw.get("moving", {}))})
        except ValidationError as e:
            raise InvalidArgumentError(f"invalid routing table: {e.errors()[0]['msg']}") from e

    @field_validator("slots")
    @classmethod
    def _owners_are_shards(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(not 0 <= owner < MAX_SHARDS for owner in value):
            raise ValueError(f"slot owners must be shard numbers 0..{MAX_SHARDS - 1}")
        return value

    @field_validator("moving")
    @classmethod
    def _moves_are_slots(cls, value: dict[int, int]) -> dict[int, int]:
        if any(not 0 <= s < SLOTS or not 0 <= t < MAX_SHARDS for s, t in value.items()):
            raise ValueError("moving maps slot numbers to shard numbers")
        return value

    def dump(self) -> dict[str, Any]:
        """JSON-ready (the state store keeps JSON: slot keys as strings)."""
        return {
            "version": self.version,
            "slots": list(self.slots),
            "moving": {str(k): v for k, v in self.moving.items()},
        }

    @property
    def shards(self) -> int:
        """How many shards own at least one slot (the highest owner + 1)."""
        return max(self.slots) + 1

    def owner(self, bank: str) -> int:
        return self.slots[slot_of(bank)]

    def frozen(self, bank: str) -> bool:
        """Whether the bank's slot is being moved (its owner refuses writes)."""
        return slot_of(bank) in self.moving

    def start_move(self, slot: int, target: int) -> Routing:
        return self.model_copy(
            update={"version": self.version + 1, "moving": {**self.moving, slot: target}}
        )

    def finish_move(self, slot: int) -> Routing:
        target = self.moving[slot]
        slots = list(self.slots)
        slots[slot] = target
        moving = {k: v for k, v in self.moving.items() if k != slot}
        return self.model_copy(
            update={"version": self.version + 1, "slots": tuple(slots), "moving": moving}
        )


def _int_keys(raw: object) -> dict[int, int]:
    if not isinstance(raw, Mapping):
        raise InvalidArgumentError("routing table: moving must be a mapping")
    try:
        return {int(k): int(v) for k, v in raw.items()}
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError("routing table: moving maps slot numbers to shards") from e


def plan_slots(current: tuple[int, ...], n: int) -> tuple[int, ...]:
    """The slot table for ``n`` shards that moves the fewest slots from ``current``.

    Each shard's fair share is ``SLOTS // n`` (the first ``SLOTS % n`` shards one more). A
    shard keeps up to its share of the slots it has (its lowest-numbered ones); the rest, and
    every slot of a shard beyond ``n``, go to the shards below their share, lowest first.
    Deterministic: every caller that plans from the same table plans the same moves.
    """
    n = shard_count(n)
    share = [SLOTS // n + (1 if i < SLOTS % n else 0) for i in range(n)]
    kept = [0] * n
    slots = list(current)
    free: list[int] = []
    for slot, owner in enumerate(current):
        if owner < n and kept[owner] < share[owner]:
            kept[owner] += 1
        else:
            free.append(slot)
    for slot in free:
        owner = next(i for i in range(n) if kept[i] < share[i])
        slots[slot] = owner
        kept[owner] += 1
    return tuple(slots)


def moved_error(bank: str, owner: int, version: int) -> SourceUnavailableError:
    """A shard's refusal of a bank it does not own: retryable, and marked for the client."""
    return SourceUnavailableError(
        f"{MOVED_MARK} bank {bank!r} is served by store shard {owner} (routing v{version})"
    )


def frozen_error(bank: str) -> SourceUnavailableError:
    return SourceUnavailableError(
        f"{FROZEN_MARK} bank {bank!r} is being moved to another shard; retry shortly"
    )
