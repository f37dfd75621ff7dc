"""What the MCP tools do, over ``StoreAPI`` and without MCP: each returns a JSON-able dict.

``integrations.mcp_server`` wires these into the MCP server (schemas, hints, errors as tool
results); this module holds the behaviour a tool call has, so it reads without the SDK.

Scope: the id tools (``forget``, ``supersede``, ``pin``, ``remember`` with ``update_id``) reach
what ``recall`` shows this agent: a global memory, one of this server's project, or one of the
``session_id`` the call gives (or an ancestor session); any other id is ``not_found``, so an id
alone never retires, rewrites or reads another project's or session's memory.

Pinned: a pinned memory is a person's (``shared.contract.pinned``): ``forget``, ``supersede`` (of
it), ``pin`` with ``pinned=false`` and ``remember`` with its ``update_id`` are refused
(``permission_denied``, nothing written); pinning, and superseding another memory in favour of
a pinned one (which leaves the pinned one as it is), stay allowed.
"""

from __future__ import annotations

import json
import os
from typing import Any

from integrations.store import RunningStore
from shared.client.nearmatch import NEAR_MATCH, check_threshold, near_matches, restates
from shared.client.scoped import CURRENT, Scoped, SessionOwners
from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.models import Memory, MemoryResponse
from shared.contract.pinned import refuse_if_pinned
from shared.contract.principal import Principal, digest
from shared.format import date, folder, jsonable
from shared.text import iso_ms

LEARNED_RULE = "learned"  # the store's learned rule: proposed lines, approved by a person

RECORDED_BY = "mcp.remember"


def _why(why: Any) -> dict[str, Any]:
    """What matched, without the empty parts (``shared.contract.models.Why``)."""
    if why is None:
        return {}
    shown = why.model_dump()
    return {k: v for k, v in shown.items() if v not in ((), [], None, False) or k == "pinned"}


def _brief(mem: Memory) -> dict[str, Any]:
    """What an agent needs of a memory: no index internals. Its dates as the CLI and the
    recalled block show them: ``occurred`` (when it happened, ``null`` when unknown) and
    ``stated`` (when it was last said)."""
    return {
        "id": mem.id,
        "text": mem.text,
        "title": mem.title,
        "type": mem.type,
        "scope": mem.scope,
        "tags": list(mem.tags),
        "pinned": mem.pinned,
        "status": mem.status,
        "occurred": None if mem.occurred_at is None else date(mem.occurred_at),
        "stated": date(mem.stated_at),
    }


def _superseded(bank: str, old: Memory, by: Memory, *, already: bool = False) -> dict[str, Any]:
    """The brief form every tool answers with, not two whole records; ``already``: a repeat
    of a supersede that was done before (nothing written)."""
    answer = {"action": "superseded", "bank": bank, "memory": _brief(old), "by": _brief(by)}
    return {**answer, "already": True} if already else answer


def _redacted(kinds: tuple[str, ...]) -> dict[str, Any]:
    """``{"redacted": [kinds]}`` when the store redacted something (README "Secrets": every
    response that redacted names the kinds), so the agent knows the text it sent was changed
    and does not retry it or work around the redaction."""
    return {"redacted": list(kinds)} if kinds else {}


class MemoryTools:
    """The tools' behaviour over ``StoreAPI``, without MCP (each returns a JSON-able dict).

    ``store``: a store, or the ``RunningStore`` that finds the running one when a call needs
    it (the server starts and answers ``source_unavailable`` until ``memory up``).
    ``project``: the folder a project-scoped memory is filed under and recalled for when a
    call names none (the server's working folder, as ``memory save --scope project`` and
    ``memory recall`` use theirs). ``token``: a scoped token whose principal this server acts
    as on an embedded store (over the running store, ``MEMORY_TOKEN`` makes the gateway do
    it); a request over HTTP acts as its own bearer token's principal."""

    def __init__(
        self,
        store: StoreAPI | RunningStore,
        *,
        allow_rule_edits: bool = False,
        project: str | None = None,
        token: str | None = None,
    ) -> None:
        self._source = store
        self._owners: SessionOwners | None = None
        self.token = token
        self._principal: Principal | None = None
        self.allow_rule_edits = allow_rule_edits
        self.project = project

    @property
    def store(self) -> StoreAPI:
        """The store as the principal of the request being served may use it (over HTTP, its
        bearer token's: ``integrations.serve.BearerGate``; ``shared.client.scoped``); the
        store itself when no principal is set (stdio, in-process)."""
        source = self._source
        store = source.get() if isinstance(source, RunningStore) else source
        principal = CURRENT.get() or self._own_principal(store)
        if principal is None:
            return store
        if self._owners is None or self._owners.store is not store:
            self._owners = SessionOwners(store)  # who owns each session, remembered
        return Scoped(store, principal, self._owners)

    def _own_principal(self, store: StoreAPI) -> Principal | None:
        """The principal of this server's own scoped ``token`` (``memory mcp
        --scoped-token-file`` on an embedded store), looked up once."""
        if self.token is None:
            return None
        if self._principal is None:
            found = store.token_resolve(digest(self.token))
            if not found:
                raise errors.UnknownError("unauthenticated: the token is unknown or revoked")
            self._principal = Principal.from_dict(found)
        return self._principal

    def _folder(self, project: str | None) -> str | None:
        """The project a call names, a relative one (``.``, ``src``) taken in this server's
        folder as a shell would (the store refuses what is not absolute); else that folder."""
        return folder(project, self.project) or self.project

    def reachable(
        self, id: str, *, bank: str | None, session_id: str | None = None
    ) -> MemoryResponse:
        """The memory ``id`` if this agent may act on it, as ``recall`` would show it: a
        global one, one of this server's project (its folder), or one of ``session_id`` or an
        ancestor session. Any other is ``not_found``: an id alone (slugs derive from the text,
        so they can be guessed) must not retire, pin, rewrite or read another project's or
        session's memory."""
        found = self.store.get(id, bank=bank)
        mem = found.memory
        project = os.path.normpath(self.project) if self.project else None
        lineage = (lambda: self.store.session_lineage(session_id)) if session_id else tuple
        if mem.seen_from(project, lineage):
            return found
        where = "project" if mem.scope == "project" else "session"
        raise errors.NotFoundError(
            f"no memory {id!r} in bank {found.bank!r} for this {where}"
            + ("" if session_id or mem.scope == "project" else " (give its session_id)")
        )

    @property
    def finds_store(self) -> bool:
        """The store is the running one, looked for again after ``unreachable``."""
        return isinstance(self._source, RunningStore)

    def unreachable(self) -> None:
        """A call found the store unreachable: look for it again at the next call."""
        if isinstance(self._source, RunningStore):
            self._source.lost()

    def remember(
        self,
        text: str,
        *,
        bank: str | None = None,
        title: str | None = None,
        type: str = "user",
        scope: str = "global",
        project: str | None = None,
        session_id: str | None = None,
        update_id: str | None = None,
        confirm_new: bool = False,
        threshold: float = NEAR_MATCH,
        occurred_at: str | None = None,
    ) -> dict[str, Any]:
        """Create, reinforce, update ``update_id``, or (near-match found) write nothing and
        return the candidates for the agent to choose from."""
        if not text.strip():
            raise errors.InvalidArgumentError("text is empty: nothing to remember")
        if scope == "session" and not session_id and update_id is None:
            # refused before the near-match check: it answered `needs_confirmation`, and the
            # confirmed call was then refused
            raise errors.InvalidScopeError("scope 'session' needs a session_id")
        check_threshold(threshold)
        happened = None if occurred_at is None else iso_ms(occurred_at)  # refused before a write
        here = self._folder(project)  # as `memory save --scope project` / `recall` use cwd
        if update_id is not None:
            current = self.reachable(update_id, bank=bank, session_id=session_id).memory
            refuse_if_pinned(current, "rewrite")
            done = self.store.update(  # at the revision checked: pinned since, a conflict
                update_id,
                bank=bank,
                text=text,
                title=title,
                occurred_at=happened,
                revision=current.revision,
            )
            return {
                "action": "updated",
                "bank": done.bank,
                "memory": _brief(done.memory),
                **_redacted(done.redacted),
            }
        if not confirm_new:
            near, bank_name = near_matches(
                self.store,
                text,
                bank=bank,
                session_id=session_id,
                project=here,
                threshold=threshold,
                # drafts count as near-matches while ratification is on (as memory.v1's)
                include_pending=bool(self.store.capabilities()["ratification_supported"]),
            )
            if near and not restates(near, text, scope):
                return {
                    "action": "needs_confirmation",
                    "bank": bank_name,
                    "hint": "a close memory exists: call remember again with update_id=<id> "
                    "to revise it, or confirm_new=true to save a separate memory"
                    + (
                        " (a pinned candidate is a person's: it cannot be revised)"
                        if any(c.memory.pinned for c in near)
                        else ""
                    ),
                    "candidates": [
                        {"similarity": round(c.similarity, 3), **_brief(c.memory)} for c in near
                    ],
                }
        saved = self.store.save(
            text,
            bank=bank,
            title=title,
            type=type,
            scope=scope,
            project=here if scope == "project" else project,
            session_id=session_id,
            recorded_by=RECORDED_BY,
            occurred_at=happened,
        )
        action = "created" if saved.created else "reinforced"
        return {
            "action": action,
            "bank": saved.bank,
            "memory": _brief(saved.memory),
            **_redacted(saved.redacted),
        }

    def recall(
        self,
        query: str,
        *,
        bank: str | None = None,
        limit: int | None = None,
        mode: str = "hybrid",
        tag: str | None = None,
        session_id: str | None = None,
        project: str | None = None,
        min_relevance: float | None = None,
    ) -> dict[str, Any]:
        if not query.strip():
            raise errors.InvalidArgumentError("query is empty: recall needs words")
        found = self.store.recall(
            query,
            bank=bank,
            limit=limit,
            mode=mode,
            tag=tag,
            session_id=session_id,
            project=self._folder(project),
            min_relevance=min_relevance,
        )
        out: dict[str, Any] = {
            "bank": found.bank,
            "memories": [
                {
                    "score": round(h.score, 4),
                    "relevance": round(h.relevance_score, 4),
                    **_brief(h.memory),
                    "why": _why(h.why),
                }
                for h in found.memories
            ],
        }
        if found.read_as is not None:  # a misspelt word read as one the bank holds
            out["read_as"] = found.read_as
        return out

    def forget(
        self,
        id: str,
        *,
        bank: str | None = None,
        reason: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        current = self.reachable(id, bank=bank, session_id=session_id).memory
        refuse_if_pinned(current, "forget")
        if current.invalid_at is not None:  # forgetting twice is not a silent no-op
            raise errors.NotFoundError(f"no live memory {id!r}: it is already retired")
        done = self.store.delete(id, bank=bank, reason=reason or "mcp.forget")
        return {"action": "forgotten", "bank": done.bank, "id": done.memory.id}

    def supersede(
        self,
        id: str,
        by: str,
        *,
        bank: str | None = None,
        reason: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Retire ``id`` in favour of ``by``; the same call again (a retry after a lost
        answer) answers the same and writes nothing, as the tool's idempotent hint says."""
        current = self.reachable(id, bank=bank, session_id=session_id).memory
        refuse_if_pinned(current, "supersede")
        self.reachable(by, bank=bank, session_id=session_id)
        try:  # at the revision checked: a memory pinned since is a conflict, not retired
            done = self.store.supersede(id, by, bank=bank, reason=reason, revision=current.revision)
        except errors.ConflictError:
            already = self.store.get(id, bank=bank)
            if already.memory.superseded_by != by:
                raise  # retired some other way: the store's refusal says how
            survivor = self.store.get(by, bank=bank).memory
            return _superseded(already.bank, already.memory, survivor, already=True)
        return {**_superseded(done.bank, done.memory, done.survivor), **_redacted(done.redacted)}

    def pin(
        self,
        id: str,
        *,
        pinned: bool = True,
        bank: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        current = self.reachable(id, bank=bank, session_id=session_id).memory
        if pinned:  # pinning only adds protection
            done = self.store.pin(id, True, bank=bank)
        else:  # unpinning is a person's; at the revision checked, so a pin since is a conflict
            refuse_if_pinned(current, "unpin")
            done = self.store.update(id, bank=bank, pinned=False, revision=current.revision)
        return {"bank": done.bank, "memory": _brief(done.memory)}

    def list_rules(self, *, bank: str | None = None) -> dict[str, Any]:
        found = self.store.rule_list(bank=bank)
        rules = [{"name": r.name, "content": r.content, "learned": r.learned} for r in found.rules]
        return {"bank": found.bank, "rules": rules}

    def set_rule(self, name: str, content: str, *, bank: str | None = None) -> dict[str, Any]:
        if not self.allow_rule_edits:
            raise errors.InvalidArgumentError(
                "rule editing is off: rules are human-owned (start `memory mcp "
                "--allow-rule-edits` to let agents edit them)"
            )
        if name == LEARNED_RULE:  # its lines are proposed and a person approves them
            raise errors.InvalidArgumentError(
                "rule `learned` holds the learned rules a person approved; an agent cannot "
                "write it (see `memory rule pending`)"
            )
        if not content.strip():
            self.store.rule_get(name, bank=bank)  # removing a rule that is not there: not_found
        done = self.store.rule_set(name, content, bank=bank)
        return jsonable(done)  # type: ignore[no-any-return]

    # -- resources -----------------------------------------------------------------------------

    def banks_text(self) -> str:
        rows = [
            {"bank": b.name, "rules": f"memory://banks/{b.name}/rules"}
            for b in self.store.bank_list().banks
        ]
        return json.dumps(rows, indent=2)

    def rules_text(self, bank: str) -> str:
        found = self.store.rule_list(bank=bank)
        if not found.rules:
            return f"(bank {found.bank!r} has no rules)\n"
        return "".join(f"## {r.name}\n\n{r.content.rstrip()}\n\n" for r in found.rules)

    def preview_text(self, bank: str, query: str) -> str:
        shown = self.store.preview(query, bank=bank)
        parts = [shown.system_prompt_section.strip(), (shown.message or "").strip()]
        return "\n\n".join(p for p in parts if p) + "\n"
