"""Which bank, and so which store shard, a session's calls go to, across processes
(docs/SCALING.md: sessions across processes).

A session is bound to a bank by its metadata (``memory_bank`` for one turn,
``session.memory_bank`` for the session, else its parent's bank, else the default bank), and the
store remembers that binding where its ``pre_generate`` ran: on the bank's shard. A later call
that names no bank (``turn_completed``, a step without metadata, ``link_session``) must go to
that same shard, or the shard it reaches resolves the session afresh and files the turn under
the default bank. The caller of ``pre_generate`` and of ``turn_completed`` is often not one
process: a coding-agent hook runs a fresh process per event, and gateways are stateless and
may be several.

So ``ShardedStoreClient`` keeps the binding where every client finds it: in shard 0's sibling
state (owner ``shard-sessions``, one key per session: the same hashed key the store uses for
its own per-session state), written only when it changes, cached per process. No entry means
"the default bank" (a session that never names another bank costs no write at all). Shard 0
already holds the slot table; the store prunes idle sessions' entries with its other
per-session state (``store_worker.harness.sessions.SESSION_STATE_OWNERS``). While shard 0 is down, a
session's calls route as if it had no entry (the default bank's shard), as before this module.

Known limit: a process that cached a session's binding does not see another process re-bind
that session to another bank; its ``turn_completed`` for that session follows the old bank.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from shared.contract.api import StoreAPI
from shared.contract.errors import SourceUnavailableError

OWNER = "shard-sessions"
MAX_CACHED = 10_000


def session_key(session_id: str) -> str:
    """A file-safe key per session (``store_worker.harness.messages.session_key``'s scheme)."""
    return "s" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]


class Binding(BaseModel):
    """What routes a session: its own bank (``session.memory_bank``), the bank its last step
    went to (``last``; None: the default bank) and its parent session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bank: str | None = None
    last: str | None = None
    parent: str | None = None


NONE = Binding()


class SessionRoutes:
    """Session → ``Binding``, kept in ``home()`` (shard 0) and cached here."""

    def __init__(self, home: Callable[[], StoreAPI]) -> None:
        self._home = home
        self._cache: dict[str, Binding] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str) -> Binding:
        if not isinstance(session_id, str) or not session_id:
            return NONE  # the store refuses it (typed); nothing to look up
        with self._lock:
            known = self._cache.get(session_id)
        if known is not None:
            return known
        try:
            raw = self._home().state_get(OWNER, session_key(session_id))
            found = Binding.model_validate(raw) if isinstance(raw, Mapping) else NONE
        except (SourceUnavailableError, ValidationError):
            return NONE  # shard 0 away, or an entry edited by hand: route as the default
        self._keep(session_id, found)
        return found

    def put(self, session_id: str, binding: Binding) -> None:
        """Record ``binding`` when it differs from what is known (shard 0 first, then here)."""
        if not isinstance(session_id, str) or not session_id or self.get(session_id) == binding:
            return
        try:
            self._home().state_set(OWNER, session_key(session_id), binding.model_dump())
        except SourceUnavailableError:
            return  # not recorded: later calls from other processes route as the default
        self._keep(session_id, binding)

    def _keep(self, session_id: str, binding: Binding) -> None:
        with self._lock:
            if len(self._cache) >= MAX_CACHED:
                self._cache.pop(next(iter(self._cache)))
            self._cache[session_id] = binding

    # -- the rules: the store's own resolution (store_worker.harness.inject), as far as
    # routing needs --

    def step(
        self, session_id: str, metadata: Mapping[str, Any] | None, parent: str | None
    ) -> tuple[str | None, Binding]:
        """The bank a ``pre_generate`` routes by, and the session's binding after it."""
        meta = metadata if isinstance(metadata, Mapping) else {}  # the store refuses bad ones
        known = self.get(session_id)
        session_meta = meta.get("session")
        bank = known.bank
        if isinstance(session_meta, Mapping) and "memory_bank" in session_meta:
            bank = _bank(session_meta["memory_bank"])
        parent = parent if isinstance(parent, str) and parent else known.parent
        turn = meta.get("memory_bank")
        if isinstance(turn, str) and turn:
            routed: str | None = turn
        elif bank is not None:
            routed = bank
        else:
            routed = self._inherited(parent)
        return routed, Binding(bank=bank, last=routed, parent=parent)

    def completed(self, session_id: str, parent: str | None) -> str | None:
        """The bank a ``turn_completed`` (or a lineage call) routes by."""
        known = self.get(session_id)
        if known != NONE:
            return known.last
        return self._inherited(parent)

    def link(self, session_id: str, parent: str | None) -> tuple[str | None, Binding | None]:
        """The bank a call linking ``session_id`` to ``parent`` routes by, and the binding to
        record after it (None: nothing to record; a default-bank lineage needs no entry)."""
        known = self.get(session_id)
        if not isinstance(parent, str) or not parent:
            return known.last, None
        if known != NONE:
            return known.last, known.model_copy(update={"parent": parent})
        bank = self._inherited(parent)
        return bank, Binding(last=bank, parent=parent) if bank is not None else None

    def _inherited(self, parent: str | None) -> str | None:
        if not isinstance(parent, str) or not parent:
            return None
        up = self.get(parent)
        return up.bank if up.bank is not None else up.last


def _bank(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


__all__ = ["OWNER", "Binding", "SessionRoutes", "session_key"]
