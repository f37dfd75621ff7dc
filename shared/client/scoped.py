"""A store as one principal may use it: the one rule every surface applies (README "Trust
model"; the rule itself is ``shared.contract.principal``).

``Scoped(store, principal, owners)`` is a transport over another store: before an op reaches
the store it is checked, and refused with nothing written when the principal may not make it:

- an admin op (``permission_for``), or a write with a read-only token:
  ``PermissionDeniedError`` naming the missing permission;
- a bank not among its banks, a project outside its folders, a session another principal
  owns (a graft onto one included): ``PermissionDeniedError``;
- an id it may not see (``Principal.sees``: ``Memory.seen_from`` with its context):
  ``NotFoundError``, worded as for an id that does not exist.

A call that names no bank gets the principal's first bank. Listings (banks, memories, drafts,
recall, dangling links, tags, describe's banks) keep only what it sees; a filtered listing's
``total`` counts its own page. A recall's page, ``limit``, ``token_budget`` and
``min_relevance`` are filled and counted over what it sees (``scoped_recall``); what
``preview`` and ``pre_generate`` inject for a session it owns, the admin's call for it
included, reads only the sessions of its lineage it owns (``scoped_inject``). A write that
names a session makes the principal its owner when it has none (the first use; the admin too,
so a kernel's sessions are its own), once the store took the write: a refused one claims
nothing (two principals' first writes to one new session at the same instant both land, and
the first claim stands). A session the store knew before any principal claimed it (a
kernel's, used through the store itself) is the admin's.
``PerCall`` picks the principal per call from
``CURRENT`` (the gateway and the MCP server over HTTP set it for each request).
"""

from __future__ import annotations

import contextlib
import posixpath
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar, cast

from shared.client import scoped_inject, scoped_recall
from shared.contract import errors, ops
from shared.contract.api import StoreAPI
from shared.contract.links import dangling_link
from shared.contract.models import TagCount
from shared.contract.op import Op, Read
from shared.contract.principal import ADMIN, WHOAMI, OwnedSessions, Principal, permission_for

R = TypeVar("R")


CURRENT: ContextVar[Principal | None] = ContextVar("memory_principal", default=None)
"""The principal of the call being served (``PerCall``); unset outside a call."""

BY_ID = (ops.Get, ops.History, ops.Backlinks, ops.Update, ops.Pin, ops.Delete, ops.Approve,
         ops.Reject, ops.Supersede)  # fmt: skip


@contextlib.contextmanager
def acting_as(principal: Principal) -> Iterator[None]:
    """Serve the calls made inside as ``principal``'s."""
    token = CURRENT.set(principal)
    try:
        yield
    finally:
        CURRENT.reset(token)


class SessionOwners:
    """Who owns each session, asked of the store (``session_owner``) and remembered: an
    owner never changes, so a known one is never asked again."""

    def __init__(self, store: StoreAPI) -> None:
        self.store = store
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    def owner(self, session_id: str) -> str | None:
        with self._lock:
            known = self._known.get(session_id)
        if known is not None:
            return known
        found = self.store.session_owner(session_id)
        if found is not None and found != ADMIN.name:
            # the admin's may be the store's inference for a session nobody claimed, which
            # the admin's first write through here records (``claim`` trusts what is kept)
            with self._lock:
                self._known[session_id] = found
        return found

    def claim(self, session_id: str, name: str) -> str | None:
        """Make ``name`` the owner unless the session has one; the owner either way (asked
        of the store with the claim: after the claimant's own write the store knows the session,
        and a bare ask would answer the admin's)."""
        with self._lock:
            known = self._known.get(session_id)
        if known is not None:
            return known
        found = self.store.session_owner(session_id, claim=name)
        if found is not None:
            with self._lock:
                self._known[session_id] = found
        return found


class Scoped(StoreAPI):
    """``store`` as ``principal`` may use it (module docstring)."""

    def __init__(self, store: StoreAPI, principal: Principal, owners: SessionOwners) -> None:
        self.inner = store
        self.principal = principal
        self.owners = owners
        self._sessions = OwnedSessions(principal.name, owners.owner)

    def call(self, op: Op[R]) -> R:
        p = self.principal
        named = _sessions_named(op)
        if not p.admin:
            op = self._checked(op, named)
            if isinstance(op, ops.List):
                return cast(R, self._list(op))
            if isinstance(op, ops.Recall):  # a page of what it sees (scoped_recall)
                return cast(R, scoped_recall.recall(self.inner, op, self._seen))
        if isinstance(op, scoped_inject.INJECTS):  # its owner's sessions only (scoped_inject)
            op = cast(Op[R], scoped_inject.narrowed(self.inner, op, p, self.owners))
        value = self.inner.call(op)
        if not isinstance(op, Read):
            # a write's first use makes a session its principal's (the admin's too): after
            # the store took it, so a refused call claims nothing either
            for session_id in named:
                self.owners.claim(session_id, p.name)
        return value if p.admin else self._filtered(op, value)

    # -- before: may it, and on what ----------------------------------------------------------

    def _checked(self, op: Op[R], named: list[str]) -> Op[R]:
        p = self.principal
        need = permission_for(op)
        if need == "admin":
            raise p.refuse("admin", f"{op.method} is an administrator's operation")
        if need == "write" and p.read_only:
            raise p.refuse("write", f"{op.method} writes, and the token is read-only")
        op = self._in_bank(op)
        project = getattr(op, "project", None)
        if isinstance(op, ops.PreGenerate) and isinstance(op.metadata, dict):
            project = op.metadata.get("project") or op.metadata.get("cwd")  # the turn's folder
        self._project_ok(project)
        for session_id in named:
            if self.owners.owner(session_id) not in (None, p.name):
                raise self._not_yours(session_id)
        if isinstance(op, BY_ID):
            bank = getattr(op, "bank", None)
            self._visible(op.id, bank)
            if isinstance(op, ops.Supersede):
                self._visible(op.superseded_by, bank)
        return op

    def _in_bank(self, op: Op[R]) -> Op[R]:
        """``op`` on one of the principal's banks: its first when it names none."""
        p = self.principal
        if isinstance(op, ops.BankCreate):
            self._bank_ok(op.name)
            return cast(Op[R], op)
        if isinstance(op, ops.PreGenerate):
            return cast(Op[R], self._turn_bank(op))
        if "bank" not in op.args():
            return op
        bank = getattr(op, "bank", None)
        if bank is None:
            if p.banks is None:
                return op
            return type(op)(**{**op.args(), "bank": p.banks[0]})
        self._bank_ok(bank)
        return op

    def _project_ok(self, project: object) -> None:
        if isinstance(project, str) and project.strip():
            # a folder as the store normalises it; one of another form (a Windows path) is
            # under none of a principal's folders
            raw = project.strip()
            normal = posixpath.normpath(raw) if raw.startswith("/") else raw
            if not self.principal.covers(normal) or not (
                raw.startswith("/") or self.principal.projects is None
            ):
                raise self.principal.refuse(
                    "project", f"project {normal!r} is outside the token's projects"
                )

    def _bank_ok(self, bank: object) -> None:
        if not isinstance(bank, str) or not self.principal.may_bank(bank):
            raise self.principal.refuse("bank", f"bank {bank!r} is not among the token's banks")

    def _turn_bank(self, op: ops.PreGenerate) -> ops.PreGenerate:
        """A turn's bank comes from its metadata: a named one must be the principal's, and a
        turn that names none is given the principal's first."""
        meta = dict(op.metadata or {}) if isinstance(op.metadata, dict) else op.metadata
        if not isinstance(meta, dict):
            return op  # the store refuses it
        session = meta.get("session")
        for bank in (meta.get("memory_bank"), (session or {}).get("memory_bank")
                     if isinstance(session, dict) else None):  # fmt: skip
            if bank is not None:
                self._bank_ok(bank)
        if meta.get("memory_bank") is None and self.principal.banks is not None:
            meta["memory_bank"] = self.principal.banks[0]
            return ops.PreGenerate(**{**op.args(), "metadata": meta})
        return op

    def _visible(self, id: str, bank: str | None) -> None:
        found = self.inner.get(id, bank=bank)
        if not self.principal.sees(found.memory, found.bank, lambda: self._sessions):
            raise errors.NotFoundError(f"no memory {id!r} in bank {found.bank!r}")

    def _not_yours(self, session_id: str) -> errors.PermissionDeniedError:
        return self.principal.refuse(
            "session", f"session {session_id!r} belongs to another principal"
        )

    # -- after: only what it sees ------------------------------------------------------------

    def _seen(self, mem: Any, bank: str) -> bool:
        return self.principal.sees(mem, bank, lambda: self._sessions)

    def _filtered(self, op: Op[R], value: R) -> R:
        p = self.principal
        seen: Callable[[Any, str], bool] = lambda m, bank: p.sees(m, bank, lambda: self._sessions)  # noqa: E731
        out: Any = value
        if isinstance(op, ops.BankList):
            out = out.model_copy(
                update={"banks": tuple(b for b in out.banks if p.may_bank(b.name))}
            )
        elif isinstance(op, ops.Backlinks):  # the records that link here: those it sees
            kept = tuple(m for m in out.memories if seen(m, out.bank))
            out = out.model_copy(update={"memories": kept})
        elif isinstance(op, ops.Drafts):
            out = tuple(m for m in out if seen(m, op.bank or ""))
        elif isinstance(op, ops.Dangling):
            out = self._dangling(out, seen)
        elif isinstance(op, ops.Tags):
            out = self._tags(out, seen)
        elif isinstance(op, ops.Describe):
            out = {**out, "banks": [b for b in out.get("banks", ()) if p.may_bank(b)]}
        elif isinstance(op, ops.Get):
            out = out.model_copy(update={"memory": self._unlinked(out.memory, out.bank, seen)})
        elif isinstance(op, ops.History):  # the chain's links it may see, no others
            out = out.model_copy(
                update={
                    "revisions": tuple(self._unlinked(m, out.bank, seen) for m in out.revisions),
                    "supersedes": tuple(
                        i for i in out.supersedes if self._seen_id(i, out.bank, seen)
                    ),
                    "superseded_by": self._seen_or_none(out.superseded_by, out.bank, seen),
                }
            )
        return cast(R, out)

    def _seen_or_none(
        self, id: str | None, bank: str, seen: Callable[[Any, str], bool]
    ) -> str | None:
        return id if id is not None and self._seen_id(id, bank, seen) else None

    def _unlinked(self, mem: Any, bank: str, seen: Callable[[Any, str], bool]) -> Any:
        """``mem`` with its successor's id only when it sees that successor."""
        if mem.superseded_by is None or self._seen_id(mem.superseded_by, bank, seen):
            return mem
        return mem.model_copy(update={"superseded_by": None})

    def _list(self, op: ops.List) -> Any:
        """A page of what it sees, read from as many of the store's pages as fill it. Its
        cursor names the last record it returns (one it sees): the store's cursor for a page
        ending on a hidden record would carry that record's id."""
        p = self.principal
        seen: Callable[[Any, str], bool] = lambda m, bank: p.sees(m, bank, lambda: self._sessions)  # noqa: E731
        kept: list[tuple[Any, str | None, int]] = []  # a record, its page's cursor, its place
        size, page = op.page_size, op.page_token
        while True:
            listed = self.inner.call(ops.List(**{**op.args(), "page_token": page}))
            if size is None and listed.next_page_token:
                size = len(listed.memories)  # the store's default page
            kept += [(m, page, i) for i, m in enumerate(listed.memories) if seen(m, listed.bank)]
            if not listed.next_page_token or (size is not None and len(kept) > size):
                break
            page = listed.next_page_token
        cursor = None
        if size is not None and len(kept) > size:  # one it sees is left: a cursor after the last
            kept = kept[:size]
            _, start, place = kept[-1]
            ending = ops.List(**{**op.args(), "page_token": start, "page_size": place + 1})
            cursor = self.inner.call(ending).next_page_token
        memories = tuple(m for m, _, _ in kept)
        return listed.model_copy(
            update={"memories": memories, "next_page_token": cursor, "total": len(memories)}
        )

    def _seen_id(self, id: str, bank: str, seen: Callable[[Any, str], bool]) -> bool:
        try:
            return seen(self.inner.get(id, bank=bank).memory, bank)
        except errors.NotFoundError:
            return False

    def _dangling(self, out: Any, seen: Callable[[Any, str], bool]) -> Any:
        """The dangling links of the live records it sees, found again: a link to a record it
        cannot see (live or retired) reads as one to a missing record, so neither a hidden
        record's existence nor its successor is revealed."""
        kept = []
        for mem in sorted(self._live_seen(out.bank, seen), key=lambda m: m.id):
            for target in mem.links:
                try:
                    found = self.inner.get(target, bank=out.bank).memory
                except errors.NotFoundError:
                    found = None
                if found is not None and not seen(found, out.bank):
                    found = None
                link = dangling_link(mem.id, target, found)
                if link is not None:
                    kept.append(link)
        return out.model_copy(update={"links": tuple(kept)})

    def _live_seen(self, bank: str, seen: Callable[[Any, str], bool]) -> Iterator[Any]:
        """The live records of ``bank`` it sees, every page."""
        page: str | None = None
        while True:
            listed = self.inner.call(ops.List(bank=bank, include_superseded=False, page_token=page))
            yield from (m for m in listed.memories if seen(m, bank))
            page = listed.next_page_token
            if not page:
                return

    def _tags(self, out: Any, seen: Callable[[Any, str], bool]) -> Any:
        """The tags of the live records it sees, counted again (most used first)."""
        counts = Counter(t for m in self._live_seen(out.bank, seen) for t in m.tags)
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return out.model_copy(update={"tags": tuple(TagCount(tag=t, count=c) for t, c in ordered)})


def _sessions_named(op: Op[Any]) -> list[str]:
    """The sessions ``op`` uses or extends: its own and any parent it declares."""
    if isinstance(op, ops.SessionOwner):
        return []
    out: list[str] = []
    for field in ("session_id", "parent_session_id", "parent"):
        value = getattr(op, field, None)
        if isinstance(value, str) and value and value not in out:
            out.append(value)
    return out


def as_token(store: StoreAPI, token: str) -> StoreAPI:
    """``store`` (one this process holds as the admin: embedded, or the admin's gateway
    client) as the principal of the scoped ``token`` (``memory token create``); an unknown
    or revoked token is refused as a gateway refuses it."""
    from shared.contract.principal import digest

    found = store.token_resolve(digest(token))
    if not found:
        raise errors.UnknownError("unauthenticated: the token is unknown or revoked")
    return Scoped(store, Principal.from_dict(found), SessionOwners(store))


class PerCall(StoreAPI):
    """``store`` as the principal of the call being served (``CURRENT``); a call made with no
    principal set is refused (a server that forgot to set one fails closed)."""

    def __init__(self, store: StoreAPI) -> None:
        self.inner = store
        self.owners = SessionOwners(store)

    def call(self, op: Op[R]) -> R:
        principal = CURRENT.get()
        if principal is None:
            raise errors.UnknownError("unauthenticated: no principal for this call")
        return Scoped(self.inner, principal, self.owners).call(op)

    def close(self) -> None:
        self.inner.close()


__all__ = [
    "ADMIN",
    "CURRENT",
    "WHOAMI",
    "PerCall",
    "Scoped",
    "SessionOwners",
    "acting_as",
    "as_token",
]
