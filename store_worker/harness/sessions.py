"""Sessions: who is whose parent, and forgetting idle sessions' state.

A sub-session sees its ancestors' session-scoped memories, so the store remembers each
sub-session's parent (``<data_dir>/.state/store/session-parents.json``). Injection and the
outbox keep one small state file per session (``SESSION_STATE_OWNERS``); ``prune`` forgets
those of sessions idle for longer than ``session_state_days``.
"""

from __future__ import annotations

import logging
import time

from shared.contract.config import StoreSettings
from store_worker.storage import validate as v
from store_worker.storage.state import StateStore

log = logging.getLogger(__name__)

# Sibling-state owners whose keys are per session (inject.py, outbox.py): safe to forget.
SESSION_STATE_OWNERS = ("inject", "outbox", "shard-sessions")  # the last: shared.client.sessions
PRUNE_EVERY_S = 86_400.0
MAX_LINEAGE = 64


class Sessions:
    """Session lineage (persisted) and the pruning of idle sessions' state files."""

    def __init__(self, state: StateStore, settings: StoreSettings) -> None:
        self.state = state
        self.settings = settings
        parents = state.get("store", "session-parents")
        self.parents: dict[str, str] = dict(parents) if isinstance(parents, dict) else {}
        self._pruned_at = 0.0

    def link(self, session_id: str, parent_session_id: str | None) -> None:
        """Record a sub-session's parent, so it sees its ancestors' session memories."""
        session_id = v.no_credential(v.optional_str(session_id, "session_id"), "session_id") or ""
        parent_session_id = v.optional_str(parent_session_id, "parent_session_id")
        v.no_credential(parent_session_id, "parent_session_id")
        if not session_id or not parent_session_id or parent_session_id == session_id:
            return
        if self.parents.get(session_id) == parent_session_id:
            return
        parents = {**self.parents, session_id: parent_session_id}
        self.state.set("store", "session-parents", parents)  # disk first: a refusal keeps RAM
        self.parents = parents

    def lineage(self, session_id: str | None) -> tuple[str, ...]:
        """The session, its parent, its grandparent ... (cycles and depth bounded)."""
        session_id = v.optional_str(session_id, "session_id")
        out: list[str] = []
        while session_id and session_id not in out and len(out) < MAX_LINEAGE:
            out.append(session_id)
            session_id = self.parents.get(session_id)
        return tuple(out)

    def prune(self, *, force: bool = True) -> int:
        """Forget the per-session injection and outbox state of sessions idle for longer than
        ``session_state_days`` (their files' mtime, wall clock). Runs at open and at most once
        a day from ``pre_generate``/``turn_completed``; returns how many files went. A session
        that comes back after that starts afresh: its rules section is sent whole again, and a
        whole-window caller's old messages are queued again (restatements only reinforce)."""
        days = self.settings.session_state_days
        now = time.time()
        if days <= 0 or (not force and now - self._pruned_at < PRUNE_EVERY_S):
            return 0
        self._pruned_at = now
        cutoff = now - days * 86_400
        gone = sum(self.state.prune(owner, cutoff) for owner in SESSION_STATE_OWNERS)
        if gone:
            log.info("pruned the state of %d idle session file(s)", gone)
        return gone
