"""Injection for a session a scoped principal owns (``shared.client.scoped``): the session
records a turn is given come from the sessions of its lineage that principal owns, as its
recall shows them (README "Trust model").

``preview`` and ``pre_generate`` answer a block the store signs, so nothing can be taken out
of it afterwards: the op carries ``visible_sessions`` instead, and the store reads the session
records of those sessions of the lineage only (``Injector._recall_block``: the recalled block
and the pinned / always-on floor alike). It is set for a scoped principal's call, and for the
admin's call for a session a scoped principal owns (the block goes into that principal's
prompt); the admin's own sessions, and one no principal owns, keep their whole lineage.

The owners are asked here, not in the store: a sharded store keeps them on its first shard
(``SessionOwner``), and a session's lineage and injection on its bank's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.contract import ops
from shared.contract.principal import ADMIN_NAME, Principal

if TYPE_CHECKING:
    from shared.client.scoped import SessionOwners
    from shared.contract.api import StoreAPI

INJECTS = (ops.PreGenerate, ops.Preview)
Injects = ops.PreGenerate | ops.Preview


def narrowed(store: StoreAPI, op: Injects, caller: Principal, owners: SessionOwners) -> Injects:
    """``op`` reading only the sessions of its lineage its session's owner owns (module
    docstring); as it is when that owner is the admin or nobody."""
    session = op.session_id
    if not isinstance(session, str) or not session:
        return op  # no session: no session record is read (the store checks the rest)
    # an unowned session is the caller's after this call: a write claims what it names (a
    # read names one only while the store does not know it: its lineage is itself)
    claimant = ADMIN_NAME if caller.admin else caller.name

    def owner(session_id: str) -> str:
        found = owners.owner(session_id)
        return claimant if found is None else found

    whose = owner(session)
    if whose == ADMIN_NAME:
        return op
    parent = op.parent_session_id if isinstance(op, ops.PreGenerate) else None
    if isinstance(parent, str) and parent and parent != session:
        chain = (session, *store.session_lineage(parent))  # the lineage this call makes
    else:
        chain = store.session_lineage(session)
    visible = (session, *(s for s in chain[1:] if owner(s) == whose))
    return type(op)(**{**op.args(), "visible_sessions": visible})
