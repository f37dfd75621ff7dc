"""Principals: who a bearer token speaks for, and what it may do (README "Trust model").

A principal names its ``banks`` (``None``: every bank), its ``projects`` (``None``: every project;
else absolute folders, each covering itself and every folder under it, matched at a ``/``
boundary: ``/srv/app`` covers ``/srv/app/web`` and not ``/srv/apple``), whether it is
``read_only``, and whether it is the ``admin``: configure, purge, bank delete, rule edits, token
management, the sibling plumbing (outbox, events, state) and every batch write. The admin sees
everything (the enumeration and audit path of memory.v1); the token a gateway is started with
is the admin's.

What a scoped principal sees of a record is ``Memory.seen_from``, the rule recall and the MCP
tools apply, with its context: a global record of one of its banks, a project record under one
of its folders, a session record of a session it owns (``OwnedSessions``). A session belongs to
the principal whose write first named it (``pre_generate``, ``turn_completed``,
``link_session``, a save); only that principal (or the admin) may use it or extend its lineage.

This module is pure: the checks are ``Principal`` methods and ``permission_for`` (which
permission an op needs); ``shared.client.scoped`` applies them to a store.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.contract import errors, ops
from shared.contract.op import Op

WHOAMI = "gateway.whoami"
"""The gateway's own memory.store.v1 call that answers the principal the call's token names
(here, not beside the enforcement layer: the gRPC client names it and must stay lean)."""

if TYPE_CHECKING:
    from shared.contract.models import Memory

ADMIN_NAME = "admin"
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


def digest(token: str) -> str:
    """How a token is kept and looked up: its SHA-256, hex (a token is 32 random bytes, so a
    plain hash cannot be reversed by guessing)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who a token speaks for (module docstring)."""

    name: str
    banks: tuple[str, ...] | None = None
    projects: tuple[str, ...] | None = None
    read_only: bool = False
    admin: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "banks": None if self.banks is None else list(self.banks),
            "projects": None if self.projects is None else list(self.projects),
            "read_only": self.read_only,
            "admin": self.admin,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Principal:
        banks, projects = data.get("banks"), data.get("projects")
        return cls(
            name=str(data["name"]),
            banks=None if banks is None else tuple(str(b) for b in banks),
            projects=None if projects is None else tuple(str(p) for p in projects),
            read_only=bool(data.get("read_only", False)),
            admin=bool(data.get("admin", False)),
        )

    def describe(self) -> str:
        """One line for ``memory status`` and ``memory token list``."""
        if self.admin:
            return f"{self.name} (admin: every bank, project and session)"
        banks = "every bank" if self.banks is None else "bank " + ", ".join(self.banks)
        where = "every project" if self.projects is None else "project " + ", ".join(self.projects)
        mode = "read-only" if self.read_only else "read-write"
        return f"{self.name} ({mode}; {banks}; {where})"

    # -- the checks ------------------------------------------------------------------------

    def may_bank(self, bank: str) -> bool:
        return self.admin or self.banks is None or bank in self.banks

    def covers(self, project: str) -> bool:
        """Whether ``project`` is one of this principal's folders or under one."""
        if self.admin or self.projects is None:
            return True
        return any(project == p or project.startswith(p.rstrip("/") + "/") for p in self.projects)

    def sees(self, mem: Memory, bank: str, sessions: Callable[[], Collection[str]]) -> bool:
        """Whether this principal sees ``mem`` of ``bank``: ``Memory.seen_from`` with its
        context (the record's project when one of its folders covers it; its sessions)."""
        if self.admin:
            return True
        if not self.may_bank(bank):
            return False
        project = mem.project if mem.project is not None and self.covers(mem.project) else None
        return mem.seen_from(project, sessions)

    def refuse(self, missing: str, detail: str) -> errors.PermissionDeniedError:
        return errors.PermissionDeniedError(
            f"permission denied: token {self.name!r} lacks the {missing!r} permission ({detail})"
        )


ADMIN = Principal(ADMIN_NAME, admin=True)


def check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise errors.InvalidArgumentError(f"a token name must match {NAME.pattern} (got {name!r})")
    if name == ADMIN_NAME:
        raise errors.InvalidArgumentError(f"{ADMIN_NAME!r} is the gateway token's principal")
    return name


# -- which permission each op needs ----------------------------------------------------------

READ_OPS: frozenset[type[Op[Any]]] = frozenset(
    {
        ops.Ping,
        ops.BankList,
        ops.Get,
        ops.List,
        ops.History,
        ops.Tags,
        ops.Recall,
        ops.Backlinks,
        ops.Dangling,
        ops.Drafts,
        ops.RuleList,
        ops.RuleGet,
        ops.Preview,
        ops.SessionLineage,
        ops.Capabilities,
        ops.Describe,
    }
)
"""What a read-only principal may call (its banks, projects and sessions only)."""

WRITE_OPS: frozenset[type[Op[Any]]] = frozenset(
    {
        ops.BankCreate,
        ops.Save,
        ops.Update,
        ops.Pin,
        ops.Delete,
        ops.Supersede,
        ops.Approve,
        ops.Reject,
        ops.PreGenerate,
        ops.TurnCompleted,
        ops.LinkSession,
    }
)
"""What a read-write principal may call besides the reads; every other op is the admin's."""


def permission_for(op: Op[Any]) -> str:
    """``"read"``, ``"write"`` or ``"admin"``: what ``op`` needs (an op this module does not
    name, a new one included, is the admin's until it is placed here)."""
    kind = type(op)
    if kind in READ_OPS:
        return "read"
    if kind in WRITE_OPS:
        return "write"
    return "admin"


class OwnedSessions(Collection[str]):
    """The sessions a principal owns, asked one at a time (``seen_from`` asks ``in``)."""

    def __init__(self, name: str, owner: Callable[[str], str | None]) -> None:
        self.name = name
        self._owner = owner

    def __contains__(self, session_id: object) -> bool:
        return isinstance(session_id, str) and self._owner(session_id) == self.name

    def __iter__(self) -> Iterator[str]:  # never listed: only asked
        return iter(())

    def __len__(self) -> int:
        return 0
