"""Sibling workers' checkpoints: the extractor's and the consolidator's own state, kept by the
store under ``.state/<owner>/<key>.json`` (``state_get`` / ``state_set``).

A sibling keeps its state under its own name. The store's own state lives in the same folder
(session lineage and subscribers, each session's injection state and outbox tail), so those
owners are refused here: through ``state_set`` a caller could re-parent a session into
another's (and see its session memories) or replace the rules section a session is given with
any text, and ``state_get`` would read other sessions'. The slot table a shard serves by is
read here but changes only through ``shard_routing``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.client.shards import STATE_KEY, STATE_OWNER
from shared.contract import errors
from shared.redact import redact_json
from store_worker.harness.inject import STATE_OWNER as INJECT_OWNER
from store_worker.storage import validate as v

if TYPE_CHECKING:
    from store_worker.storage.shards import ShardGuard
    from store_worker.storage.state import StateStore

# The store's own owners under ``.state/`` (see the module doc): not a sibling's checkpoint.
STORE_STATE_OWNERS = frozenset({"store", INJECT_OWNER, "outbox"})


def get(state: StateStore, shard: ShardGuard, owner: str, key: str) -> object | None:
    """A sibling's value, or None when never written; the slot table when asked for it."""
    owner, key = _sibling_owner(owner), v.rule_name(key)
    if (owner, key) == (STATE_OWNER, STATE_KEY):  # the table this shard serves by
        return shard.describe()["routing"] if shard.routing.version else None
    return state.get(owner, key)


def put(state: StateStore, owner: str, key: str, value: object) -> None:
    """Write a sibling's value: redacted, like everything else the store writes to disk."""
    v.json_value(value, "state value")
    owner = v.no_credential(_sibling_owner(owner), "state owner") or owner
    key = v.no_credential(v.rule_name(key), "state key") or key
    if (owner, key) == (STATE_OWNER, STATE_KEY):  # the next open would serve by it
        raise errors.InvalidArgumentError("the slot table changes only through shard_routing")
    state.set(owner, key, redact_json(value))


def _sibling_owner(owner: object) -> str:
    name = v.rule_name(owner)
    if name in STORE_STATE_OWNERS:
        raise errors.InvalidArgumentError(
            f"state owner {name!r} is the store's own; siblings keep their state under their "
            "own name (extractor, consolidator ...)"
        )
    return name
