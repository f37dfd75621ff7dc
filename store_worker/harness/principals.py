"""Scoped tokens and session owners: the store's side of ``shared.contract.principal``.

Tokens live in ``<data_dir>/.state/store/tokens.json``, written atomically and mode 0600 (as
every state file: a temp file from ``mkstemp``, renamed), as their SHA-256 only: the token
itself is answered once, by ``create``, and never kept. A revoked token stays listed, marked,
so its name (which owns sessions) is never given to another principal.

Session owners live in ``<data_dir>/.state/store/session-owners.json``: a session is owned by
the principal whose write first named it; an owner never changes. A session the store knew
before any principal claimed it (its records, lineage or turn state were written through the
store itself: a kernel's, or one from before tokens) is the admin's, so the first scoped caller
to name it cannot take it (and its session memories with it).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from shared.contract import errors
from shared.contract.principal import ADMIN_NAME, Principal, check_name, digest
from store_worker.storage import validate as v
from store_worker.storage.state import StateStore

if TYPE_CHECKING:
    from shared.contract.principal_ops import TokenCreate

OWNER = "store"
TOKEN_BYTES = 32


class Principals:
    """The scoped tokens (by hash) and which principal owns each session."""

    def __init__(self, state: StateStore, known: Callable[[str], bool] | None = None) -> None:
        self.state = state
        self._known = known  # whether the store already holds anything of a session
        tokens = state.get(OWNER, "tokens")
        self.tokens: dict[str, dict[str, Any]] = dict(tokens) if isinstance(tokens, dict) else {}
        owners = state.get(OWNER, "session-owners")
        self.owners: dict[str, str] = dict(owners) if isinstance(owners, dict) else {}

    # -- tokens ------------------------------------------------------------------------------

    def create(self, op: TokenCreate) -> dict[str, Any]:
        """A new scoped token, answered once and kept as its hash only."""
        banks, projects, read_only = op.banks, op.projects, op.read_only
        name = check_name(op.name)
        if not isinstance(read_only, bool):
            raise errors.InvalidArgumentError(f"read_only is true or false, not {read_only!r}")
        if name in self.tokens:
            raise errors.ConflictError(
                f"a token named {name!r} exists (or was revoked: names are never reused)"
            )
        principal = Principal(
            name,
            banks=None if banks is None else tuple(v.bank_name(b) for b in _listed(banks)),
            projects=None if projects is None else tuple(_folder(p) for p in _listed(projects)),
            read_only=read_only,
        )
        if principal.banks == () or principal.projects == ():
            raise errors.InvalidArgumentError("a token needs at least one bank and project")
        token = secrets.token_urlsafe(TOKEN_BYTES)
        entry = {"digest": digest(token), "principal": principal.to_dict(), "revoked": False}
        tokens = {**self.tokens, name: entry}
        self.state.set(OWNER, "tokens", tokens)  # disk first: a refusal keeps RAM
        self.tokens = tokens
        return {"token": token, "principal": principal.to_dict()}

    def list(self) -> list[dict[str, Any]]:
        return [
            {**e["principal"], "revoked": bool(e.get("revoked"))}
            for _, e in sorted(self.tokens.items())
        ]

    def revoke(self, name: str) -> dict[str, Any]:
        entry = self.tokens.get(name) if isinstance(name, str) else None
        if entry is None or entry.get("revoked"):
            raise errors.NotFoundError(f"no live token named {name!r}")
        tokens = {**self.tokens, name: {**entry, "revoked": True}}
        self.state.set(OWNER, "tokens", tokens)
        self.tokens = tokens
        return {**entry["principal"], "revoked": True}

    def resolve(self, token_digest: str) -> dict[str, Any] | None:
        if not isinstance(token_digest, str):
            raise errors.InvalidArgumentError("digest must be a string")
        for entry in self.tokens.values():
            if not entry.get("revoked") and secrets.compare_digest(
                str(entry.get("digest", "")), token_digest
            ):
                return dict(entry["principal"])
        return None

    # -- session owners ----------------------------------------------------------------------

    def session_owner(self, session_id: str, claim: str | None = None) -> str | None:
        session_id = v.no_credential(v.optional_str(session_id, "session_id"), "session_id") or ""
        if not session_id:
            raise errors.InvalidArgumentError("session_id is empty")
        owner = self.owners.get(session_id)
        if owner is not None:
            return owner
        if claim is None:  # asked, not claimed: a session the store knew unclaimed is the admin's
            return ADMIN_NAME if self._known is not None and self._known(session_id) else None
        owners = {**self.owners, session_id: str(claim)}
        self.state.set(OWNER, "session-owners", owners)
        self.owners = owners
        return str(claim)


def session_known(
    parents: Callable[[], dict[str, str]],
    turn_state: Callable[[str], object],
    records: Callable[[], Iterable[Any]],
) -> Callable[[str], bool]:
    """Whether the store holds anything of a session: a lineage link naming it, its turn state,
    or a record of it (its own session memory, or one its turns wrote)."""

    def known(session_id: str) -> bool:
        links = parents()
        if session_id in links or session_id in links.values():
            return True
        if turn_state(session_id) is not None:
            return True
        return any(
            m.session_id == session_id or m.provenance.source_session_id == session_id
            for m in records()
        )

    return known


def _listed(values: Iterable[str]) -> list[str]:
    if isinstance(values, str):
        return [values]
    if not isinstance(values, (list, tuple, set, frozenset)):
        raise errors.InvalidArgumentError(
            f"a token's banks and projects are a list of names, not {type(values).__name__}"
        )
    return list(values)


def _folder(project: str) -> str:
    """A token's project: an absolute folder, normalised as a record's project is."""
    if isinstance(project, str) and not project.strip().startswith("/"):
        raise errors.InvalidArgumentError(
            f"a token's project must be an absolute folder, not {project!r}"
        )
    return v.project_path(project, catalogue=True)
